"""Figures of the linear analysis: mode shapes drawn on the drive, the Campbell diagram
(matplotlib, Agg backend; :func:`belt_fmu.plots.save_figure` writes them)."""
from __future__ import annotations

import math

import numpy as np

from ..plots import plt  # the Agg backend, chosen there
from .modes import AXIAL, HEAVY_DAMPING, ROTATIONAL, WRAP

#: the largest node displacement of a drawn mode, as a fraction of the drive's size
SHAPE_SCALE = 0.06
#: the largest pulley or arm rotation of a drawn mode [rad]
ROTATION_SCALE = 0.6


def rotations(result, mode):
    """(names, signed modal motions) of the pulleys and the arm in ``mode``: each pulley's
    rotation times its radius, the arm's times its length [m per unit shape], signed by their
    phase against the largest (in phase +, in opposition -), scaled to a largest of 1; a
    speed-driven crank does not move."""
    drive = result.point.drive
    layout = drive.layout
    n = drive.parameters.belt[0]["n_nodes"]
    radii = drive.parameters.pulleys["radius"]
    coordinate = {int(d): k for k, d in enumerate(result.coordinates)}
    names, motion = [], []
    for j, pulley in enumerate(layout.pulleys):
        k = coordinate.get(3 * n + j)
        names.append(pulley.name)
        motion.append(radii[j] * mode.shape[k] if k is not None else 0.0)
    k = coordinate.get(3 * n + len(layout.pulleys))
    if k is not None:
        names.append("tensioner arm")
        motion.append(drive.parameters.tensioner[0]["arm_length"] * mode.shape[k])
    motion = np.asarray(motion, dtype=complex)
    largest = motion[np.argmax(np.abs(motion))] if np.abs(motion).max() > 0 else 1.0
    signed = (motion * np.conj(largest)).real / max(abs(largest) ** 2, 1e-300)
    return names, signed


def plot_modes(result, count: int = 6):
    """The first ``count`` modes of ``result`` (:class:`belt_fmu.analysis.modes.Modes`), one
    row each: left, the undeformed drive (grey) and the belt, arm and pulley marks displaced by
    the mode shape at its instant of largest node displacement (colour); right, each pulley's
    and the arm's modal motion as a named bar (:func:`rotations`), so that which pulleys and
    the arm swing, and against which, can be read."""
    from matplotlib.patches import Circle

    drive = result.point.drive
    layout = drive.layout
    shown = result.modes[:count]
    rows = max(1, len(shown))
    fig, axes = plt.subplots(rows, 2, figsize=(11.0, 4.4 * rows), squeeze=False,
                             gridspec_kw={"width_ratios": [1.4, 1.0]})
    q = drive.views.q[:, :2]
    n = q.shape[0]
    centers = drive.arrays.centers
    radii = drive.parameters.pulleys["radius"]
    size = float(np.ptp(q, axis=0).max())
    coordinate = {int(d): k for k, d in enumerate(result.coordinates)}
    t = layout.tensioner_index
    pivot = np.array(layout.tensioner.pivot_m) if layout.tensioner is not None else None
    for (ax, bars), (k, mode) in zip(axes, enumerate(shown)):
        shape = mode.shape.real
        xy = shape[:3 * n].reshape(n, 3)[:, :2]
        displaced = q + SHAPE_SCALE * size * xy / max(np.abs(xy).max(), 1e-300)
        rotations_ = shape[3 * n:]
        turn = ROTATION_SCALE / max(np.abs(rotations_).max(), 1e-300) if len(rotations_) else 0.0
        loop = np.vstack([q, q[:1]])
        ax.plot(loop[:, 0], loop[:, 1], "-", color="0.7", linewidth=1.0)
        moved = np.vstack([displaced, displaced[:1]])
        ax.plot(moved[:, 0], moved[:, 1], "-", color="C3", linewidth=1.3)
        for j, pulley in enumerate(layout.pulleys):
            ax.add_patch(Circle(centers[j], radii[j], fill=False, color="0.6", linewidth=0.8))
            d = coordinate.get(3 * n + j)
            angle = turn * shape[d] if d is not None else 0.0
            mark = centers[j] + radii[j] * np.array([math.cos(math.pi / 2 + angle), math.sin(math.pi / 2 + angle)])
            ax.plot(*np.column_stack([centers[j], mark]), "-", color="C0", linewidth=1.5)
            ax.annotate(pulley.name, centers[j], fontsize=6, ha="center", va="center", color="0.3")
        if pivot is not None:
            arm = centers[t] - pivot
            d = coordinate.get(3 * n + len(layout.pulleys))
            a = turn * shape[d] if d is not None else 0.0
            rotated = pivot + np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]) @ arm
            ax.plot(*np.column_stack([pivot, centers[t]]), "-", color="0.6", linewidth=3)
            ax.plot(*np.column_stack([pivot, rotated]), "-", color="C2", linewidth=2)
            ax.plot(*pivot, "o", color="k", markersize=4)
        ax.set_aspect("equal")
        heavy = " (heavily damped)" if mode.heavily_damped else ""
        ax.set_title(f"mode {k + 1}: {mode.frequency:.1f} Hz, damping {100 * mode.damping_ratio:.1f} %{heavy}\n"
                     f"{mode.classification}", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(True, linewidth=0.3)
        names, motion = rotations(result, mode)
        colors = ["C2" if name == "tensioner arm" else "C0" for name in names]
        bars.barh(range(len(names)), motion, color=colors)
        bars.set_yticks(range(len(names)), names, fontsize=7)
        bars.invert_yaxis()
        bars.axvline(0.0, color="k", linewidth=0.6)
        bars.set_xlim(-1.1, 1.1)
        bars.set_xlabel("modal motion at pulley surface / arm tip (largest 1; sign: phase)", fontsize=7)
        bars.tick_params(labelsize=7)
        bars.grid(True, axis="x", linewidth=0.3)
    point = result.point
    fig.suptitle(f"{layout.drive.name}: modes at crank {point.rpm:g} rpm, water-pump torque "
                 f"{point.water_pump_torque:g} N.m, discretized model linearized\n(belt red, pulley marks blue, arm "
                 f"green; arm friction {_friction(result.arm_friction)})", fontsize=10)
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 1.0 - 0.3 / rows))
    return fig


def _friction(arm_friction) -> str:
    return arm_friction if isinstance(arm_friction, str) else f"{arm_friction:.3g} N.m.s/rad equivalent"


def _color(classification: str, spans: list[str]):
    """Rotational blue, belt axial orange, wrap brown, each span its own colour, mixed grey."""
    if classification == ROTATIONAL:
        return "C0"
    if classification == AXIAL:
        return "C1"
    if classification == WRAP:
        return "C5"
    if classification in spans:
        return plt.cm.tab20((4 + 2 * spans.index(classification)) % 20 / 20.0 + 0.025)
    return "0.5"


def plot_campbell(result, layout, water_pump_torque: float | None = None):
    """Natural frequencies over crank speed, each mode's curve (:func:`belt_fmu.analysis.
    campbell.branches`) a line coloured by its classification (:func:`_color`; heavily damped
    stretches dashed and light), the engine-order lines (black, dashed) and their crossings
    (circles, labelled with their rpm); the title names the water-pump torque the modes were
    computed at, if given."""
    from .campbell import branches
    from .modes import span_label

    names = [p.name for p in layout.pulleys]
    spans = [span_label(names[j], names[(j + 1) % len(names)]) for j in range(len(names))]
    fig, ax = plt.subplots(figsize=(10.0, 6.5))
    seen = set()
    top = 0.0
    for branch in branches(result.speeds):
        c = branch.classification
        color = _color(c, spans)
        label = c if not isinstance(color, str) or color != "0.5" else "mixed"
        rpm, f, heavy = branch.rpm, branch.frequency, branch.damping_ratio > HEAVY_DAMPING
        for k in range(max(1, len(f) - 1)):
            part = slice(k, k + 2)
            light = bool(np.all(heavy[part]))
            ax.plot(rpm[part], f[part], "--" if light else "-", color=color, linewidth=1.2,
                    alpha=0.35 if light else 1.0, label=None if label in seen else label)
            seen.add(label)
        ax.scatter(rpm, f, s=6, color=color, alpha=np.where(heavy, 0.35, 1.0))
        top = max(top, float(f.max()))
    rpms = np.array([s.rpm for s in result.speeds])
    if len(rpms):
        grid = np.linspace(0.0, rpms.max(), 50)
        for q in result.orders:
            ax.plot(grid, q * grid / 60.0, "--", color="k", linewidth=0.8)
            end = min(rpms.max(), 60.0 * top / q) if top > 0 else rpms.max()
            ax.annotate(f"{q:g}x", (end, q * end / 60.0), fontsize=8, xytext=(3, 0), textcoords="offset points")
    for c in result.crossings:
        ax.plot(c.rpm, c.frequency, "o", markerfacecolor="none", markeredgecolor="k", markersize=8,
                alpha=0.4 if c.damping_ratio > HEAVY_DAMPING else 1.0)
        ax.annotate(f"{c.rpm:.0f}", (c.rpm, c.frequency), xytext=(4, -10), textcoords="offset points", fontsize=7)
    ax.set_xlim(left=0.0)
    ax.set_ylim(0.0, 1.05 * top if top > 0 else 1.0)
    ax.set_xlabel("crank speed [rpm]")
    ax.set_ylabel("natural frequency [Hz]")
    ax.set_title(f"{layout.drive.name}: Campbell diagram (orders {', '.join(f'{q:g}' for q in result.orders)}; "
                 f"dashed and light: damping above {100 * HEAVY_DAMPING:g} %), {layout.drive.model} model linearized"
                 + (f"\nat water-pump torque {water_pump_torque:g} N.m" if water_pump_torque is not None else ""),
                 fontsize=10)
    ax.grid(True, linewidth=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_response(result):
    """The harmonic response over crank speed (:class:`belt_fmu.analysis.response.Response`):
    the tensioner arm amplitude [deg] (top: half its peak-to-peak, the sweep's measure, and
    dashed its first harmonic), each pulley's hub load amplitude [N] (middle), each
    pulley's slip utilisation (bottom, the limit 1 dashed)."""
    layout = result.layout
    rpm = np.array([s.rpm for s in result.speeds])
    fig, axes = plt.subplots(3, 1, figsize=(9.0, 9.5), sharex=True)
    if layout.tensioner is not None:
        axes[0].plot(rpm, np.degrees([s.arm_amplitude for s in result.speeds]), "-", color="C0",
                     label="half the peak-to-peak (as the sweep)")
        axes[0].plot(rpm, np.degrees([s.arm_first_harmonic for s in result.speeds]), "--", color="C0",
                     label="first harmonic")
        axes[0].legend(fontsize=7, loc="upper left")
        peak = result.peak
        axes[0].plot(peak.rpm, math.degrees(peak.arm_amplitude), "o", color="C3")
        axes[0].annotate(f"{math.degrees(peak.arm_amplitude):.3g} deg at {peak.rpm:.0f} rpm",
                         (peak.rpm, math.degrees(peak.arm_amplitude)), xytext=(6, -12), textcoords="offset points",
                         fontsize=8)
    axes[0].set_ylabel("tensioner arm amplitude [deg]")
    for j, pulley in enumerate(layout.pulleys):
        axes[1].plot(rpm, [s.hub_force[j] for s in result.speeds], "-", color=f"C{j % 10}", label=pulley.name)
        axes[2].plot(rpm, [s.slip_utilisation[j] for s in result.speeds], "-", color=f"C{j % 10}", label=pulley.name)
    axes[1].set_ylabel("hub load amplitude [N]")
    axes[2].axhline(1.0, color="k", linestyle="--", linewidth=0.8)
    axes[2].set_ylabel("slip utilisation [-]")
    axes[2].set_xlabel("crank speed [rpm]")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for ax in axes:
        ax.grid(True, linewidth=0.3)
    fig.suptitle(f"{layout.drive.name}: harmonic response, {result.excitation.describe()}", fontsize=10)
    fig.tight_layout()
    return fig
