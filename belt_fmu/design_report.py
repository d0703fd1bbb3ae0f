"""``belt-fmu report``: the drive's design report as one self-contained HTML file.

Sections (docs/design-report.md says what each means): geometry (drawing, spans, wraps,
belt length), the tensioner position table, per duty point the static span tensions, hub
loads and slip safety in both conventions (:mod:`belt_fmu.analysis.design`), the dynamic
results under the engine order from the linearized discretized model
(:mod:`belt_fmu.analysis.response`), the belt's fatigue life over the duty cycle
(:mod:`belt_fmu.analysis.fatigue`), the natural frequencies and Campbell crossings, and
pass/fail checks against the limits of the layout's ``[design_limits]`` (defaults:
:data:`DESIGN_LIMITS`). Figures are embedded as base64 PNG.
"""
from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field

import numpy as np

from .analysis import design, fatigue
from .duty import DutyCycle, DutyError, DutyPoint, loaded_layout

#: the checks' limits where ``[design_limits]`` gives none; None: not checked
DESIGN_LIMITS = {
    "min_slip_safety": 1.5,  # Q_max / |Q| of every torque-carrying pulley, static (elastic) and dynamic
    "max_hub_load_N": None,  # peak hub load of any pulley; a number, or a table pulley -> N
    # fatigue life over the duty cycle: checked only where given, since the default fatigue
    # constants are not the belt's (belt_fmu.analysis.fatigue)
    "min_belt_life_h": None,
    "max_tensioner_amplitude_deg": 3.0,  # tensioner arm amplitude under the engine order
    "fatigue_K_N": fatigue.K,
    "fatigue_b": fatigue.EXPONENT,
    "fatigue_Kb_Nm": fatigue.K_B,
}
#: engine order and crank speed irregularity of the dynamic results (the sweep's defaults)
ORDER = 2.0
IRREGULARITY_RPM = 40.0
#: speeds of the Campbell diagram, over the duty cycle's speed range
CAMPBELL_SPEEDS = 6
CAMPBELL_ORDERS = (2.0, 4.0)
MODE_COUNT = 6
#: the default duty cycle without one: the built-in layout's loads at these speeds
DEFAULT_SPEEDS = (800.0, 1500.0, 2300.0)


def _positive_number(value) -> bool:
    """A finite number > 0 as TOML gives one (a boolean is not a number here)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def design_limits(layout) -> dict:
    """:data:`DESIGN_LIMITS` with the layout's ``[design_limits]`` (DutyError for a bad key or value)."""
    given = layout.design.get("design_limits", {})
    source = f"{layout.source}: design_limits"
    if not isinstance(given, dict):
        raise DutyError(f"{source}: must be a table ([design_limits])")
    limits = dict(DESIGN_LIMITS)
    names = [p.name for p in layout.pulleys]
    for key, value in given.items():
        if key not in DESIGN_LIMITS:
            raise DutyError(f"{source}.{key}: unknown key; allowed keys: {', '.join(DESIGN_LIMITS)}")
        if key == "max_hub_load_N" and isinstance(value, dict):
            for name, v in value.items():
                if name not in names:
                    raise DutyError(f"{source}.{key}.{name}: no such pulley; pulleys: {', '.join(names)}")
                if not _positive_number(v):
                    raise DutyError(f"{source}.{key}.{name}: {v!r} must be a number > 0 [N]")
            limits[key] = {name: float(v) for name, v in value.items()}
            continue
        if not _positive_number(value):
            raise DutyError(f"{source}.{key}: {value!r} must be a number > 0")
        limits[key] = float(value)
    return limits


@dataclass
class DutyResult:
    point: DutyPoint
    static: dict  # convention -> StaticPoint
    mean_hub: np.ndarray | None = None  # (p,) [N] discretized model, mean over a polygon period
    response: object = None  # SpeedResponse, or None
    error: str = ""


@dataclass
class DesignReport:
    layout: object
    duty: DutyCycle
    limits: dict
    positions: list
    results: list
    life_hours: float = math.nan
    life_passes: float = math.nan
    modes: object = None
    modes_rpm: float = math.nan
    campbell: object = None
    checks: list = field(default_factory=list)  # (check, value, limit, passed)
    notes: list = field(default_factory=list)
    fatigue_rows: list = field(default_factory=list)  # (point, largest peak [N], its pulley, damage share)
    default_fatigue: bool = True  # the fatigue constants are the module's defaults, not the belt's


def default_duty(layout) -> DutyCycle:
    """Without a duty cycle: the layout's own loads at :data:`DEFAULT_SPEEDS`, equal shares."""
    points = tuple(DutyPoint(f"{rpm:g} rpm", rpm, 1.0 / len(DEFAULT_SPEEDS), {}, {}) for rpm in DEFAULT_SPEEDS)
    return DutyCycle(points, "the layout's loads at " + ", ".join(f"{r:g}" for r in DEFAULT_SPEEDS) + " rpm")


def build(layout, duty: DutyCycle | None = None, dynamics: bool = True, campbell_speeds: int | None = None,
          progress=None) -> DesignReport:
    """Compute every section of the report of ``layout`` over ``duty`` (None: the layout's
    ``[[duty_points]]``, else :func:`default_duty`)."""
    from .duty import layout_duty
    from .model.geometry import cord_radius

    if duty is None:
        duty = layout_duty(layout) or default_duty(layout)
    limits = design_limits(layout)
    report = DesignReport(layout, duty, limits, design.tensioner_positions(layout), [])
    for k, point in enumerate(duty.points):
        loaded = loaded_layout(layout, point)
        result = DutyResult(point, design.static_points(loaded, point.crank_speed))
        if dynamics:
            _dynamics(loaded, result)
        report.results.append(result)
        if progress is not None:
            progress(k + 1, len(duty.points))
    given = (limits["fatigue_K_N"], limits["fatigue_b"], limits["fatigue_Kb_Nm"])
    report.default_fatigue = given == (fatigue.K, fatigue.EXPONENT, fatigue.K_B)
    constants = fatigue.FatigueConstants(*given, fatigue.FatigueConstants.source if report.default_fatigue
                                         else "the layout's [design_limits]")
    diameters = 2.0 * np.array([cord_radius(layout, j) for j in range(len(layout.pulleys))])
    cycle = []
    for r in report.results:
        s = r.static[design.ELASTIC]
        amplitude = r.response.span_tension if r.response is not None else np.zeros(len(diameters))
        speed = r.point.crank_speed * cord_radius(layout, layout.crank_index)
        cycle.append((r.point.time_share, speed, fatigue.peak_forces(s.span_tension, amplitude, diameters,
                                                                      constants)))
    length = report.results[0].static[design.ELASTIC].belt_length
    report.life_hours, report.life_passes = fatigue.life_hours(cycle, length, constants)
    damage = [share * speed / length * fatigue.damage_per_pass(peaks, constants) for share, speed, peaks in cycle]
    total = sum(damage)
    names = [p.name for p in layout.pulleys]
    for r, (_, _, peaks), d in zip(report.results, cycle, damage):
        j = int(np.argmax(peaks))
        report.fatigue_rows.append((r.point.name, float(peaks[j]), names[j], d / total if total > 0 else math.nan))
    report.notes.append(f"fatigue constants: {constants.source}")
    if dynamics and not layout.torque_driven_crank:
        _modes(layout, report, CAMPBELL_SPEEDS if campbell_speeds is None else campbell_speeds)
    report.checks = _checks(report)
    return report


def _dynamics(loaded, result: DutyResult) -> None:
    """The discretized model's operating point (means) and its linear forced response."""
    from .analysis.linearization import linearization_layout
    from .analysis.operating_point import operating_point
    from .analysis.response import Anchor, Excitation
    from .model.initialization import InitializationError
    from .model.outputs import pulley_output_name
    from .model.system import BeltDrive, DivergenceError
    from .sweep import RunSettings

    if loaded.torque_driven_crank:
        result.error = "torque-driven crank: dynamic results need a crank speed excitation"
        return
    if result.point.engine_speed_rpm <= 0.0:
        result.error = "engine stopped: no engine-order excitation"
        return
    try:
        linearized = linearization_layout(loaded)
        point = operating_point(linearized, result.point.engine_speed_rpm, 0.0, drive=BeltDrive(linearized))
        result.mean_hub = np.array([point.mean(pulley_output_name("hub_force", p.name)) for p in loaded.pulleys])
        excitation = Excitation(RunSettings(order=ORDER, irregularity_rpm=IRREGULARITY_RPM))
        result.response = Anchor(point).respond(result.point.engine_speed_rpm, excitation)
    except (InitializationError, DivergenceError, ValueError) as err:
        result.error = f"{type(err).__name__}: {err}"


def _modes(layout, report: DesignReport, speeds: int) -> None:
    from .analysis.campbell import campbell
    from .analysis.linearization import linearization_layout
    from .analysis.modes import modes
    from .analysis.operating_point import operating_point

    running = sorted((r.point for r in report.results if r.point.engine_speed_rpm > 0),
                     key=lambda p: p.engine_speed_rpm)
    if not running:
        return
    rpms = [p.engine_speed_rpm for p in running]
    report.modes_rpm = rpms[0]
    report.modes = modes(operating_point(linearization_layout(loaded_layout(layout, running[0])), rpms[0], 0.0,
                                         statistics=False), MODE_COUNT)
    low, high = rpms[0], max(rpms[-1], rpms[0] + 100.0)
    report.campbell = campbell(layout, np.linspace(low, high, speeds), CAMPBELL_ORDERS, MODE_COUNT)


def _checks(report: DesignReport) -> list:
    limits = report.limits
    names = [p.name for p in report.layout.pulleys]
    checks = []
    safety = math.inf
    where = ""
    for r in report.results:
        s = r.static[design.ELASTIC]
        for j, value in enumerate(s.slip_safety):
            if value < safety:
                safety, where = value, f"{names[j]} at {r.point.name} (static, elastic)"
        if r.response is not None:
            dynamic = 1.0 / np.maximum(r.response.slip_utilisation, 1e-300)
            for j, value in enumerate(dynamic):
                if abs(s.torque[j]) > 1e-9 and value < safety:
                    safety, where = value, f"{names[j]} at {r.point.name} (with the dynamic torque)"
    checks.append((f"least slip safety: {where}", safety, limits["min_slip_safety"], safety >= limits["min_slip_safety"]))
    hub = limits["max_hub_load_N"]
    if hub is not None:
        for j, name in enumerate(names):
            limit = hub.get(name) if isinstance(hub, dict) else hub
            if limit is None:
                continue
            peak = max(_peak_hub(r, j) for r in report.results)
            checks.append((f"peak hub load {name}", peak, limit, peak <= limit))
    life = report.life_hours
    if limits["min_belt_life_h"] is not None:
        checks.append(("belt fatigue life [h] over the duty cycle", life, limits["min_belt_life_h"],
                       life >= limits["min_belt_life_h"]))
    amplitudes = [math.degrees(r.response.arm_amplitude) for r in report.results if r.response is not None]
    if amplitudes and report.layout.tensioner is not None:
        worst = max(amplitudes)
        checks.append(("largest tensioner amplitude [deg]", worst, limits["max_tensioner_amplitude_deg"],
                       worst <= limits["max_tensioner_amplitude_deg"]))
    return checks


def _peak_hub(result: DutyResult, j: int) -> float:
    """[N] mean + amplitude (dynamic), else the elastic static hub load."""
    static = float(result.static[design.ELASTIC].hub_magnitude[j])
    if result.response is None or result.mean_hub is None:
        return static
    return float(result.mean_hub[j] + result.response.hub_force[j])


# ------------------------------------------------------------------------------ HTML
def _figure_png(fig) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _table(header, rows, cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _f(x, digits: str = ".1f") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return format(x, digits)


def _safety(x: float) -> str:
    return "-" if not math.isfinite(x) else (">100" if x > 100 else f"{x:.2f}")


def _hub_figure(report: DesignReport):
    """Hub load of every pulley over the duty points: static nominal and elastic, dynamic peak."""
    import matplotlib.pyplot as plt

    names = [p.name for p in report.layout.pulleys]
    labels = [r.point.name for r in report.results]
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(9.0, 4.5))
    for j, name in enumerate(names):
        line, = ax.plot(x, [r.static[design.ELASTIC].hub_magnitude[j] for r in report.results], "o-", label=name)
        ax.plot(x, [r.static[design.NOMINAL].hub_magnitude[j] for r in report.results], ":", color=line.get_color())
        if all(r.response is not None for r in report.results):
            ax.plot(x, [_peak_hub(r, j) for r in report.results], "^--", color=line.get_color(), markersize=4)
    ax.set_xticks(x, labels, rotation=20, ha="right")
    ax.set_ylabel("hub load [N]")
    ax.set_title("hub loads: elastic (solid), nominal (dotted), dynamic peak (dashed)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return fig


def render(report: DesignReport) -> str:
    """The report as an HTML document (module docstring)."""
    from .model.geometry import BeltPath, cord_radius, small_wraps_note
    from .model.outputs import spans
    from .plots import plot_layout

    layout = report.layout
    names = [p.name for p in layout.pulleys]
    path = BeltPath.from_layout(layout)
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Design report: {html.escape(layout.drive.name)}"
           "</title><style>body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse;"
           "margin:0.5em 0}td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}td:first-child{text-align:"
           "left}.fail{color:#b00;font-weight:bold}.pass{color:#070}</style></head><body>",
           f"<h1>Design report: {html.escape(layout.drive.name)}</h1>",
           f"<p>Layout: {html.escape(str(layout.source))}. Duty cycle: {html.escape(report.duty.source)} "
           f"({len(report.duty.points)} points). Conventions, sources and limits: docs/design-report.md.</p>"]
    # checks first: what an engineer looks for
    out.append('<h2 id="checks">Checks</h2>')
    rows = [[c, _f(v, ".3g"), _f(lim, ".3g"), "PASS" if ok else "FAIL"] for c, v, lim, ok in report.checks]
    out.append(_table(["check", "value", "limit", "result"], rows, "checks"))
    out.append('<h2 id="geometry">Geometry</h2>')
    out.append(f"<p>Belt length (cord line, installed): {path.length * 1e3:.1f} mm; belt speed ratio from the "
               f"crank by cord radii.</p>")
    out.append(f'<img alt="drive layout" src="{_figure_png(plot_layout(layout))}" width="480">')
    nodes = path.wrap_nodes(layout.belt.n_elements)
    out.append(_table(["pulley", "role", "side", "cord radius [mm]", "wrap [deg]", "belt nodes on wrap"],
                      [[p.name, p.role, p.side, f"{cord_radius(layout, j) * 1e3:.2f}",
                        f"{math.degrees(path.wrap_angle[j]):.1f}", f"{nodes[j]:.1f}"]
                       for j, p in enumerate(layout.pulleys)]))
    note = small_wraps_note(layout, path)
    if note:
        out.append(f'<p class="note">{html.escape(" ".join(note.split()))}</p>')
    out.append(_table(["span", "length [mm]"], [[f"{a} -> {b}", f"{path.span_length[j] * 1e3:.1f}"]
                                                for j, (a, b) in enumerate(spans(names))]))
    out.append('<h2 id="tensioner">Tensioner position table</h2>')
    if report.positions:
        out.append("<p>Static, belt at rest and unloaded; angles from the installed position, CCW positive; "
                   "hub load direction: polar angle of the belt's force on the tensioner pulley.</p>")
        out.append(_table(["position", "arm angle [deg]", "spring torque [N m]", "span tension [N]", "hub load [N]",
                           "hub direction [deg]", "wrap [deg]", "belt length [mm]", "note"],
                          [[r.label, _f(math.degrees(r.arm_angle_rel), ".2f"), _f(r.spring_torque, ".2f"),
                            _f(r.span_tension), _f(r.hub_magnitude), _f(math.degrees(r.hub_direction)),
                            _f(math.degrees(r.wrap_angle)), _f(r.belt_length * 1e3), r.note]
                           for r in report.positions]))
    else:
        out.append("<p>No tensioner.</p>")
    out.append('<h2 id="duty">Duty cycle</h2>')
    out.append(_table(["point", "engine speed [rpm]", "time share", "loads"],
                      [[r.point.name, f"{r.point.engine_speed_rpm:g}", f"{r.point.time_share:.3f}",
                        ", ".join([f"{n} {v / 1e3:g} kW" for n, v in r.point.power.items()]
                                  + [f"{n} {v:g} N m" for n, v in r.point.torque.items()]) or "the layout's"]
                       for r in report.results]))
    out.append('<h2 id="static">Static span tensions, hub loads and slip safety</h2>')
    out.append("<p><b>nominal</b>: tensioner arm at its installed angle, belt inextensible; <b>elastic</b>: the "
               "arm where the loaded, stretching belt puts it (lumped model's steady state). Hub load: force of "
               "the belt on the pulley, direction its polar angle in the drawing. Slip safety: largest "
               "transmittable torque (capstan limit) over the transmitted torque.</p>")
    for r in report.results:
        out.append(f'<h3 class="duty-point">{html.escape(r.point.name)}: {r.point.engine_speed_rpm:g} rpm</h3>')
        n, e = r.static[design.NOMINAL], r.static[design.ELASTIC]
        if layout.tensioner is not None:
            out.append(f"<p>Tensioner arm: nominal 0 deg, elastic {math.degrees(e.arm_angle_rel):+.2f} deg from "
                       f"installed; centrifugal tension m'v^2 {e.centrifugal_tension:.1f} N.</p>")
        out.append(_table(["span", "tension nominal [N]", "tension elastic [N]"],
                          [[f"{a} -> {b}", f"{n.span_tension[j]:.1f}", f"{e.span_tension[j]:.1f}"]
                           for j, (a, b) in enumerate(spans(names))]))
        out.append(_table(["pulley", "torque [N m]", "hub nominal [N]", "dir nominal [deg]", "hub elastic [N]",
                           "dir elastic [deg]", "slip safety nominal", "slip safety elastic",
                           "tension ratio elastic", "capstan limit e^(mu theta)"],
                          [[name, f"{e.torque[j]:.2f}", f"{n.hub_magnitude[j]:.1f}",
                            f"{math.degrees(n.hub_direction[j]):.1f}", f"{e.hub_magnitude[j]:.1f}",
                            f"{math.degrees(e.hub_direction[j]):.1f}", _safety(n.slip_safety[j]),
                            _safety(e.slip_safety[j]), _f(e.tension_ratio[j], ".3f"), f"{e.capstan_limit[j]:.3g}"]
                           for j, name in enumerate(names)]))
    out.append(f'<img alt="hub loads per duty point" src="{_figure_png(_hub_figure(report))}" width="720">')
    out.append('<h2 id="dynamics">Dynamic results under the engine order</h2>')
    out.append(f"<p>From the linearized discretized model about each duty point's operating point (belt_fmu "
               f"response): crank speed irregularity +-{IRREGULARITY_RPM:g} rpm at engine order {ORDER:g}. Hub "
               "load mean: the discretized model's mean over one polygon period; peak: mean + amplitude. Slip "
               "utilisation: (steady + dynamic torque) / capacity, beyond 1 the belt slips.</p>")
    for r in report.results:
        out.append(f'<h3 class="dynamic-point">{html.escape(r.point.name)}</h3>')
        if r.response is None:
            out.append(f"<p>not computed: {html.escape(r.error or 'dynamics off')}</p>")
            continue
        s = r.response
        out.append(f"<p>tensioner amplitude {math.degrees(s.arm_amplitude):.3f} deg at "
                   f"{s.frequency:.1f} Hz</p>")
        out.append(_table(["pulley", "hub mean [N]", "hub amplitude [N]", "hub peak [N]", "slip utilisation"],
                          [[name, f"{r.mean_hub[j]:.1f}", f"{s.hub_force[j]:.1f}",
                            f"{r.mean_hub[j] + s.hub_force[j]:.1f}", f"{s.slip_utilisation[j]:.3f}"]
                           for j, name in enumerate(names)]))
    out.append('<h2 id="fatigue">Belt fatigue life</h2>')
    out.append(f"<p>Peak-force model of Oliver, Johnson and Breig (1976) as in Shigley's Mechanical Engineering "
               f"Design (2011) section 17-3, Miner's rule over the duty cycle: life {_f(report.life_hours, '.4g')} h "
               f"({_f(report.life_passes, '.3g')} belt passes). {html.escape(report.notes[0])}"
               + ("; these constants are a classical V-belt section's, not this belt's: read the figure as a "
                  "comparison between duty cycles and layouts" if report.default_fatigue else "")
               + f". Shigley's constants hold for {fatigue.VALID_PEAKS[0]:.0e} to {fatigue.VALID_PEAKS[1]:.0e} passes"
               + ("" if fatigue.VALID_PEAKS[0] <= report.life_passes <= fatigue.VALID_PEAKS[1]
                  else ": this life lies outside, extrapolated") + ".</p>")
    out.append(_table(["point", "largest peak force [N]", "at pulley", "share of the damage"],
                      [[name, f"{peak:.0f}", pulley, f"{100 * share:.1f} %"]
                       for name, peak, pulley, share in report.fatigue_rows]))
    out.append('<h2 id="modes">Natural frequencies and Campbell crossings</h2>')
    if report.modes is not None:
        out.append(f"<p>Lowest modes of the linearized discretized model at the slowest duty point, "
                   f"{report.modes_rpm:g} rpm, with its loads (arm friction stuck).</p>")
        out.append(_table(["mode", "frequency [Hz]", "damping ratio", "class"],
                          [[k + 1, f"{m.frequency:.2f}", f"{m.damping_ratio:.3f}", m.classification]
                           for k, m in enumerate(report.modes.modes)]))
    if report.campbell is not None:
        out.append("<p>Campbell crossings of engine orders " + " and ".join(f"{q:g}" for q in CAMPBELL_ORDERS)
                   + f" ({len(report.campbell.speeds)} speeds over the duty cycle's range, the layout's own "
                   "loads):</p>")
        out.append(_table(["rpm", "order", "mode", "class", "frequency [Hz]", "damping ratio"],
                          [[f"{c.rpm:.0f}", f"{c.order:g}", c.mode, c.classification, f"{c.frequency:.1f}",
                            f"{c.damping_ratio:.3f}"] for c in report.campbell.crossings] or [["none", "", "", "", "", ""]]))
    if report.modes is None and report.campbell is None:
        out.append("<p>not computed.</p>")
    out.append("</body></html>")
    return "\n".join(out)


