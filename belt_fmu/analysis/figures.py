"""Figures of the linear analysis: mode shapes drawn on the drive, the Campbell diagram
(matplotlib, Agg backend; :func:`belt_fmu.plots.save_figure` writes them)."""
from __future__ import annotations

import math

import numpy as np

from ..plots import plt  # the Agg backend, chosen there
from .modes import ROTATIONAL

#: the largest node displacement of a drawn mode, as a fraction of the drive's size
SHAPE_SCALE = 0.06
#: the largest pulley or arm rotation of a drawn mode [rad]
ROTATION_SCALE = 0.6


def plot_modes(result, count: int = 6):
    """The first ``count`` modes of ``result`` (:class:`belt_fmu.analysis.modes.Modes`), one
    panel each: the undeformed drive (grey) and the belt, arm and pulley marks displaced by
    the mode shape at its instant of largest node displacement (colour)."""
    from matplotlib.patches import Circle

    drive = result.point.drive
    layout = drive.layout
    shown = result.modes[:count]
    columns = 2 if len(shown) > 1 else 1
    rows = max(1, math.ceil(len(shown) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(6.0 * columns, 5.6 * rows), squeeze=False)
    q = drive.views.q[:, :2]
    n = q.shape[0]
    centers = drive.arrays.centers
    radii = drive.parameters.pulleys["radius"]
    size = float(np.ptp(q, axis=0).max())
    coordinate = {int(d): k for k, d in enumerate(result.coordinates)}
    crank = layout.crank_index
    t = layout.tensioner_index
    pivot = np.array(layout.tensioner.pivot_m) if layout.tensioner is not None else None
    for ax, (k, mode) in zip(axes.flat, enumerate(shown)):
        shape = mode.shape.real
        xy = shape[:3 * n].reshape(n, 3)[:, :2]
        displaced = q + SHAPE_SCALE * size * xy / max(np.abs(xy).max(), 1e-300)
        rotations = shape[3 * n:]
        turn = ROTATION_SCALE / max(np.abs(rotations).max(), 1e-300) if len(rotations) else 0.0
        loop = np.vstack([q, q[:1]])
        ax.plot(loop[:, 0], loop[:, 1], "-", color="0.7", linewidth=1.0)
        moved = np.vstack([displaced, displaced[:1]])
        ax.plot(moved[:, 0], moved[:, 1], "-", color="C3", linewidth=1.3)
        for j, pulley in enumerate(layout.pulleys):
            ax.add_patch(Circle(centers[j], radii[j], fill=False, color="0.6", linewidth=0.8))
            angle = 0.0
            d = coordinate.get(3 * n + j)
            if d is not None and j != crank:
                angle = turn * shape[d]
            mark = centers[j] + radii[j] * np.array([math.cos(math.pi / 2 + angle), math.sin(math.pi / 2 + angle)])
            ax.plot(*np.column_stack([centers[j], mark]), "-", color="C0", linewidth=1.5)
        if pivot is not None:
            arm = centers[t] - pivot
            d = coordinate.get(3 * n + len(layout.pulleys))
            a = turn * shape[d] if d is not None else 0.0
            rotated = pivot + np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]) @ arm
            ax.plot(*np.column_stack([pivot, centers[t]]), "-", color="0.6", linewidth=3)
            ax.plot(*np.column_stack([pivot, rotated]), "-", color="C2", linewidth=2)
            ax.plot(*pivot, "o", color="k", markersize=4)
        ax.set_aspect("equal")
        ax.set_title(f"mode {k + 1}: {mode.frequency:.1f} Hz, damping {100 * mode.damping_ratio:.1f} %\n"
                     f"{mode.classification}", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(True, linewidth=0.3)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    point = result.point
    fig.suptitle(f"{layout.drive.name}: modes at crank {point.rpm:g} rpm, water-pump torque "
                 f"{point.water_pump_torque:g} N.m, discretized model linearized\n(belt red, pulley marks blue, arm "
                 f"green; arm friction {result.arm_friction})", fontsize=10)
    fig.tight_layout()
    return fig


def _color(classification: str, spans: list[str]) -> str:
    if classification == ROTATIONAL:
        return "C0"
    if classification in spans:
        return f"C{2 + spans.index(classification) % 8}"
    return "0.5"


def plot_campbell(result, layout, water_pump_torque: float | None = None):
    """Natural frequencies over crank speed, coloured by classification (rotational blue, each
    span its colour, mixed and others grey), the engine-order lines (dashed) and their
    crossings (circles); the title names the water-pump torque the modes were computed at,
    if given."""
    from .modes import span_label

    names = [p.name for p in layout.pulleys]
    spans = [span_label(names[j], names[(j + 1) % len(names)]) for j in range(len(names))]
    fig, ax = plt.subplots(figsize=(9.0, 6.5))
    seen = set()
    top = 0.0
    for s in result.speeds:
        for f, c in zip(s.frequencies, s.classifications):
            color = _color(c, spans)
            label = c if color != "0.5" else "mixed / other"
            ax.plot(s.rpm, f, "o", color=color, markersize=3.5, label=None if label in seen else label)
            seen.add(label)
            top = max(top, f)
    rpms = np.array([s.rpm for s in result.speeds])
    if len(rpms):
        grid = np.linspace(0.0, rpms.max(), 50)
        for q in result.orders:
            ax.plot(grid, q * grid / 60.0, "--", color="k", linewidth=0.8)
            end = min(rpms.max(), 60.0 * top / q) if top > 0 else rpms.max()
            ax.annotate(f"{q:g}x", (end, q * end / 60.0), fontsize=8, xytext=(3, 0), textcoords="offset points")
    for c in result.crossings:
        ax.plot(c.rpm, c.frequency, "o", markerfacecolor="none", markeredgecolor="k", markersize=8)
    ax.set_xlim(left=0.0)
    ax.set_ylim(0.0, 1.05 * top if top > 0 else 1.0)
    ax.set_xlabel("crank speed [rpm]")
    ax.set_ylabel("natural frequency [Hz]")
    ax.set_title(f"{layout.drive.name}: Campbell diagram (orders {', '.join(f'{q:g}' for q in result.orders)}), "
                 "discretized model linearized"
                 + (f"\nat water-pump torque {water_pump_torque:g} N.m" if water_pump_torque is not None else ""))
    ax.grid(True, linewidth=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
