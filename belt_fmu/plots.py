"""Figures of a layout and of a results table (matplotlib, Agg backend, no display needed).

The CLI imports this module only when a plot is asked for. Each function returns the figure;
:func:`save_figure` writes it atomically.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import numpy as np  # noqa: E402

from .files import atomic_write  # noqa: E402
from .model.geometry import BeltPath  # noqa: E402
from .model.outputs import pulley_output_name, span_output_name, spans, statistic_name  # noqa: E402

#: figure formats :func:`save_figure` writes, by file suffix
FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}

_RIBBED = {"facecolor": "#c6dbef", "edgecolor": "#08519c", "linestyle": "-"}
_BACK = {"facecolor": "#fdd0a2", "edgecolor": "#a63603", "linestyle": "--"}


def save_figure(fig, path) -> Path:
    """Write ``fig`` to ``path`` (format from its suffix, see :data:`FORMATS`) and close it.

    The figure goes to a temporary file in the same directory first and is then renamed over
    ``path``, so an interrupted write never leaves a truncated file.
    """
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"{path}: unsupported figure format; use one of {', '.join(FORMATS)}")
    try:
        with atomic_write(path, "wb") as f:
            fig.savefig(f, format=fmt, dpi=120)
    finally:
        plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------


def plot_layout(layout):
    """The drive as drawn in its layout frame: pulleys (ribbed side solid blue, back side
    dashed orange), the tensioner arm and pivot, and the belt's cord line with its travel
    direction. Equal aspect, axes in m."""
    from matplotlib.patches import Circle, Patch

    path = BeltPath.from_layout(layout)
    fig, ax = plt.subplots(figsize=(7.0, 7.0))
    for j, pulley in enumerate(layout.pulleys):
        style = _RIBBED if pulley.side == "ribbed" else _BACK
        ax.add_patch(Circle(pulley.center_m, pulley.radius_m, linewidth=1.5, zorder=1, **style))
        ax.plot(*pulley.center_m, "+", color="k", markersize=6, zorder=3)
        label = pulley.name if pulley.role == pulley.name else f"{pulley.name}\n({pulley.role})"
        ax.annotate(label, pulley.center_m, xytext=(0, -14),
                    textcoords="offset points", ha="center", va="top", fontsize=8, zorder=4)
    if layout.tensioner is not None:
        pivot = np.array(layout.tensioner.pivot_m)
        centre = np.array(layout.pulleys[layout.tensioner_index].center_m)
        ax.plot(*np.column_stack([pivot, centre]), "-", color="0.3", linewidth=4, solid_capstyle="round",
                zorder=2, label="tensioner arm")
        ax.plot(*pivot, "o", color="k", markersize=7, zorder=3, label="arm pivot")
    cord = path.sample()
    ax.plot(cord[:, 0], cord[:, 1], "-", color="k", linewidth=1.2, zorder=2, label="belt (cord line)")
    if path.span_length[0] > 0.0:  # travel direction: arrow halfway along the first span
        start, stop = path.departure_point(0), path.arrival_point(1 % path.n_pulleys)
        mid = 0.5 * (start + stop)
        ax.annotate("", mid + 0.05 * (stop - start), mid - 0.05 * (stop - start), zorder=4,
                    arrowprops={"arrowstyle": "-|>", "color": "k", "linewidth": 1.2, "mutation_scale": 20})
    handles, _ = ax.get_legend_handles_labels()
    handles += [Patch(label="ribbed side on pulley", linewidth=1.5, **_RIBBED),
                Patch(label="back side on pulley", linewidth=1.5, **_BACK)]
    ax.legend(handles=handles, loc="best", fontsize=8)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.margins(0.08)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(f"{layout.drive.name}: belt length {path.length:.4f} m, crank {layout.drive.crank_rotation}")
    ax.grid(True, linewidth=0.3)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


#: line styles cycled with the colours, so that the traces of a panel (7 spans of the built-in
#: drive, more than a colour cycle tells apart at a glance) stay distinguishable in print
LINE_STYLES = ("-", "--", "-.", ":")


#: the tensioner panel spans at least this much [deg] around its mean: a steady arm drifting by
#: a thousandth of a degree would otherwise fill the panel and read as motion
TENSIONER_MIN_SPAN_DEG = 1.0
#: free spans in a row whose mean tensions differ by less than this fraction share one trace
#: and one legend entry (spans separated by an idler carry the same tension but for its
#: bearing friction: seven traces on three levels cannot be told apart)
EQUAL_TENSION = 0.01


def crank_name(layout) -> str:
    return layout.pulleys[layout.crank_index].name


def operating_point_text(results, layout, model: str) -> str:
    """"crank 800 rpm, water-pump torque 2 N.m, discretized model" of a run: the crank's
    speed (its range where it varied by more than 1 %) and the water-pump torque input (its
    range where it varied) over the run."""
    from .units import RPM

    rpm = np.abs(results[pulley_output_name("speed", crank_name(layout))]) / RPM
    low, high = float(rpm.min()), float(rpm.max())
    speed = f"crank {np.mean(rpm):.0f} rpm" if high - low <= 0.01 * max(high, 1.0) else f"crank {low:.0f}-{high:.0f} rpm"
    torque = results["water_pump_torque_input"]
    low, high = float(torque.min()), float(torque.max())
    pump = f"water-pump torque {low:.3g} N.m" if high == low else f"water-pump torque {low:.3g} to {high:.3g} N.m"
    return f"{speed}, {pump}, {model} model"


def _polygon_filtered(results, layout, column):
    """``column`` low-pass filtered at half the polygon frequency of the run's mean crank
    speed (belt_fmu.postprocess.polygon_filter), NaN within the filter's settling time of
    either end (where its end effects would draw spikes the drive does not have), or None if
    the samples cannot resolve that cutoff (sampled slower than the polygon frequency, or
    too short a record to keep anything)."""
    from .postprocess import drive_polygon_frequency, filter_settling_time, polygon_filter

    t = results["time"]
    if len(t) < 16:
        return None
    interval = float(t[1] - t[0])
    speed = float(np.mean(np.abs(results[pulley_output_name("speed", crank_name(layout))])))
    if speed <= 0.0:
        return None
    polygon_hz = drive_polygon_frequency(layout, speed)
    if not 0.0 < 0.5 * polygon_hz < 0.5 / interval:
        return None
    settle = filter_settling_time(0.5 * polygon_hz)
    inside = (t >= t[0] + settle) & (t <= t[-1] - settle)
    if inside.sum() < 2:
        return None
    try:
        smooth = polygon_filter(results[column], interval, polygon_hz)
    except ValueError:  # a record too short for the filter's padding
        return None
    return np.where(inside, smooth, np.nan)


def span_groups(results, layout) -> list[tuple[str, str]]:
    """The free spans in belt travel order, those in a row with equal mean tension (within
    :data:`EQUAL_TENSION`) grouped: (legend label "a -> b -> c", the first span's column)."""
    names = [p.name for p in layout.pulleys]
    groups = []
    for a, b in spans(names):
        column = span_output_name("span_tension", a, b)
        mean = float(np.mean(results[column]))
        if groups and abs(mean - groups[-1][2]) <= EQUAL_TENSION * max(abs(groups[-1][2]), 1.0):
            groups[-1][0].append(b)
        else:
            groups.append(([a, b], column, mean))
    return [(" -> ".join(path), column) for path, column, _ in groups]


def plot_results(results, layout, raw: bool = True, model: str | None = None):
    """Four panels over time: tensioner arm angle from its installed position [deg], hub-force
    magnitude per pulley, span tensions, pulley speeds [rpm]. ``results`` is a
    :class:`~belt_fmu.simulate.Results` of a drive built from ``layout``, run by ``model``
    (default: the layout's ``[drive] model``); the title gives the drive, the operating point
    and the model.

    The discretized model's forces are drawn polygon-filtered (low-pass at half the polygon
    frequency, the discretization's ripple removed, [Scania thesis] section 7; the filter's
    settling time cut from both ends), the raw signal faint behind them when ``raw``; the
    lumped model has no polygon ripple and is drawn as computed. Spans in a row with equal
    tension share a trace (:func:`span_groups`); each trace has its own colour and line
    style. The tensioner panel spans at least :data:`TENSIONER_MIN_SPAN_DEG`."""
    from .units import RPM

    model = model or layout.drive.model
    t = results["time"]
    pulley_names = [p.name for p in layout.pulleys]
    fig, axes = plt.subplots(4, 1, figsize=(9.0, 11.0), sharex=True)
    ax = axes[0]
    angle = np.degrees(results["tensioner_angle_rel"])
    ax.plot(t, angle, color="k")
    ax.set_ylabel("tensioner arm angle\nfrom installed [deg]")
    middle, half = 0.5 * (float(angle.max()) + float(angle.min())), 0.5 * float(angle.max() - angle.min())
    if half < 0.5 * TENSIONER_MIN_SPAN_DEG:
        ax.set_ylim(middle - 0.5 * TENSIONER_MIN_SPAN_DEG, middle + 0.5 * TENSIONER_MIN_SPAN_DEG)
    if layout.tensioner is None:
        ax.text(0.5, 0.5, "no tensioner", transform=ax.transAxes, ha="center", va="center")
    filtered_any = False
    panels = [
        (axes[1], [(name, pulley_output_name("hub_force", name)) for name in pulley_names], "hub force |F| [N]", True),
        (axes[2], span_groups(results, layout), "span tension [N]\n(equal spans in a row: one trace)", True),
        (axes[3], [(name, pulley_output_name("speed", name)) for name in pulley_names], "pulley speed [rpm]", False),
    ]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, lines, label, force in panels:
        for k, (name, column) in enumerate(lines):
            style = {"color": colors[k % len(colors)], "linestyle": LINE_STYLES[(k // len(colors) + k) % len(LINE_STYLES)]}
            values = results[column] if force else results[column] / RPM
            smooth = _polygon_filtered(results, layout, column) if force and model == "discretized" else None
            if smooth is None:
                ax.plot(t, values, label=name, linewidth=1.0, **style)
                continue
            filtered_any = True
            if raw:
                ax.plot(t, values, linewidth=0.5, alpha=0.2, color=style["color"])
            ax.plot(t, smooth, label=name, linewidth=1.2, **style)
        ax.set_ylabel(label)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if filtered_any:
        axes[1].set_title("forces polygon-filtered (below half the polygon frequency; the filter's settling "
                          "time left out at both ends)" + (", raw signal faint" if raw else ""), fontsize=8)
    for ax in axes:
        ax.grid(True, linewidth=0.3)
    axes[-1].set_xlabel("time [s]")
    axes[0].set_title(f"{layout.drive.name}\n{operating_point_text(results, layout, model)}", fontsize=10)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Engine-speed sweep
# ---------------------------------------------------------------------------------------------


def excitation_text(table) -> str:
    """The excitation of a sweep's runs, from its table, on two lines: "order 2 speed
    irregularity +-40 rpm," and "water-pump load 0.2 N.m + 1.2e-05 N.m.s2 w^2"; a setting the
    study varies reads "varied"."""
    from .sweep.planning import SETTING_COLUMNS

    def value(setting):
        cells = {row[SETTING_COLUMNS[setting]] for row in table.rows}
        if len(cells) != 1:
            return "varied"
        cell = cells.pop()
        try:
            return f"{float(cell):g}"
        except ValueError:
            return cell

    scaling = value("irregularity_scaling")
    amplitude = f"+-{value('irregularity_rpm')} rpm" + (f" at {value('idle_rpm')} rpm, scaled with 1/rpm"
                                                         if scaling == "inverse" else "")
    return (f"order {value('order')} speed irregularity {amplitude},\nwater-pump load "
            f"{value('water_pump_torque_Nm')} N.m + {value('water_pump_quadratic_Nms2')} N.m.s2 w^2")


def plot_sweep(table, layout):
    """Four panels over crank speed, as [Scania thesis] Figs. 5.4-5.5: tensioner angular amplitude,
    the headline pulley's bearing force max (solid) and min (dashed) after the polygon filter,
    span tensions and mean slips. ``table`` is a :class:`~belt_fmu.sweep.SweepTable` of a
    drive built from ``layout``; one colour per study variant. With one variant, every span's
    max and min tension and every driven pulley's slip are drawn; with several, the tightest
    span's max, the slackest span's min and the most slipping pulley (over the whole table).
    Failed runs are marked with red crosses."""
    cases = table.cases()
    names = [p.name for p in layout.pulleys]
    free_spans = [(span_output_name("span_tension", a, b), f"{a} -> {b}") for a, b in spans(names)]
    pulleys = [p.name for p in layout.pulleys if p.role != "crankshaft"]

    def tension(rows, span, statistic):
        return table.metric(rows, statistic_name(span, statistic))

    def slip(rows, pulley):
        return 100.0 * table.metric(rows, statistic_name(pulley_output_name("slip", pulley), "mean"))

    fig, axes = plt.subplots(4, 1, figsize=(9.0, 11.0), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ok = [row for row in table.rows if row["status"] == "ok"]
    if len(cases) > 1 and ok:
        tight = max(free_spans, key=lambda s: tension(ok, s[0], "max").max())
        slack = min(free_spans, key=lambda s: tension(ok, s[0], "min").min())
        slipping = max(pulleys, key=lambda p: np.abs(slip(ok, p)).max())
    failed = [row for row in table.rows if row["status"] != "ok"]
    if failed:
        axes[0].plot(table.number(failed, "rpm"), np.zeros(len(failed)), "x", color="red", markersize=9,
                     label="failed run", clip_on=False)
    for k, (label, rows) in enumerate(cases):
        rows = [row for row in rows if row["status"] == "ok"]
        if not rows:
            continue
        color = colors[k % len(colors)]
        rpm = table.number(rows, "rpm")
        if layout.tensioner is not None:
            axes[0].plot(rpm, table.metric(rows, "tensioner_amplitude_deg"), "o-", color=color, label=label or None)
        axes[1].plot(rpm, table.metric(rows, statistic_name("bearing_force", "max")), "o-", color=color,
                     label=f"{label}: max" if label else "max")
        axes[1].plot(rpm, table.metric(rows, statistic_name("bearing_force", "min")), "s--", color=color,
                     label=f"{label}: min" if label else "min")
        if len(cases) == 1:
            for j, (span, name) in enumerate(free_spans):
                c = colors[j % len(colors)]
                axes[2].plot(rpm, tension(rows, span, "max"), "-", color=c, label=name)
                axes[2].plot(rpm, tension(rows, span, "min"), "--", color=c)
            for j, pulley in enumerate(pulleys):
                axes[3].plot(rpm, slip(rows, pulley), "o-", color=colors[j % len(colors)], label=pulley)
        else:
            axes[2].plot(rpm, tension(rows, tight[0], "max"), "o-", color=color, label=f"{label}: max, {tight[1]}")
            axes[2].plot(rpm, tension(rows, slack[0], "min"), "s--", color=color, label=f"{label}: min, {slack[1]}")
            axes[3].plot(rpm, slip(rows, slipping), "o-", color=color, label=f"{label}: {slipping}")
    labels = [
        "tensioner amplitude\n(half peak-to-peak) [deg]",
        "bearing force [N]\n(max solid, min dashed)",
        "span tension [N]\n(max solid, min dashed)",
        "mean slip [%]",
    ]
    for ax, ylabel in zip(axes, labels):
        ax.set_ylabel(ylabel)
        ax.grid(True, linewidth=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if layout.tensioner is None:
        axes[0].text(0.5, 0.5, "no tensioner", transform=axes[0].transAxes, ha="center", va="center")
    axes[-1].set_xlabel("crank speed [rpm]")
    axes[0].set_title(f"{layout.drive.name}, {layout.drive.model} model, bearing force of "
                      f"{layout.headline_pulley_name}\n{excitation_text(table)}", fontsize=10)
    fig.tight_layout()
    return fig
