"""Planning a sweep: the run settings, the study's variations, and the runs they make.

A sweep is the cartesian product of study variants (:func:`parse_variation`: layout keys such
as ``belt.pretension_N``, or run settings such as ``irregularity_rpm``) and crank speeds:
:func:`plan` turns it into the :class:`Run` s of a :class:`Plan`, checking every variant's
layout and settings before anything runs.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field

import numpy as np

from ..layout import TABLES, Layout, load_layout_data
from ..model.geometry import cord_radius
from ..units import RPM
from .table import cell

#: crank revolutions per engine cycle (4-stroke)
CYCLE_REVOLUTIONS = 2
#: a run is sampled at least this often per polygon period, so the polygon tone is resolved
#: and does not alias below the filter cutoff
SAMPLES_PER_POLYGON_PERIOD = 4
#: how the irregularity amplitude changes with speed (:class:`RunSettings`)
SCALINGS = ("constant", "inverse")


def postprocessing():
    """:mod:`belt_fmu.postprocess`, imported on first use: it loads scipy.signal (about 1 s),
    which the command line must not pay for on every command (its parser reads
    :class:`RunSettings`)."""
    from .. import postprocess

    return postprocess


def _is_real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


@dataclass(frozen=True)
class RunSettings:
    """Parameters shared by the runs of a sweep; a study may vary any of them by name.

    Crank speed irregularity (docs/references.md R8; [Scania thesis] section 4.4 imported measured
    crank speeds): engine ``order`` q, the firing frequency per crank revolution (2 for a
    4-cylinder, 3 for a 6-cylinder 4-stroke engine; a multiple of 1/2, so an engine cycle
    holds whole periods), amplitude ``irregularity_rpm`` [rpm], either the same at every speed
    (``irregularity_scaling = "constant"``, the default) or given at ``idle_rpm`` and scaled
    by ``idle_rpm / rpm`` ("inverse": the speed response of the crank inertia J to a gas-torque
    ripple T_q of fixed size, dw = T_q / (J q w)). The default, 2nd order +-40 rpm, is a
    4-cylinder engine at idle, a diesel at the low end.

    Water-pump load ``water_pump_torque_Nm + water_pump_quadratic_Nms2 * w_p^2`` [N m]
    (docs/references.md R8: T0 + k w^2) at the pump's mean speed w_p, the mean crank speed
    by the cord-radius ratio, held constant over the run (following the pump's speed ripple
    would change the belt tensions by under 1 % of the ripple the accessories' inertias cause). The defaults give
    0.29 N m at 500 rpm and 2.2 N m (0.9 kW) at 2300 rpm on the built-in drive. A drive
    without a water pump gets no pump load.

    Each run settles ``settle_cycles`` engine cycles (>= 2: the first cycle after the
    excitation starts is a transient, and the periodicity check compares the last evaluated
    cycle with the one before) and is evaluated over ``cycles`` engine cycles, sampled every
    ``max_output_interval_s`` [s] or finer (a whole number of samples per engine cycle, and
    at least :data:`SAMPLES_PER_POLYGON_PERIOD` per polygon period).
    """

    order: float = 2.0
    irregularity_rpm: float = 40.0
    irregularity_scaling: str = "constant"
    idle_rpm: float = 500.0
    water_pump_torque_Nm: float = 0.2
    water_pump_quadratic_Nms2: float = 1.2e-5
    settle_cycles: int = 4
    cycles: int = 2
    max_output_interval_s: float = 1e-4

    def problems(self) -> list[str]:
        """Every setting that is not allowed, one line each: name, value and what is allowed."""
        rules = [
            ("order", lambda x: _is_real(x) and x > 0 and (2 * x).is_integer(),
             "a multiple of 0.5 > 0 (an engine order of a 4-stroke engine)"),
            ("irregularity_rpm", lambda x: _is_real(x) and x >= 0, "a finite number >= 0 [rpm]"),
            ("irregularity_scaling", lambda x: x in SCALINGS, "one of " + ", ".join(map(repr, SCALINGS))),
            ("idle_rpm", lambda x: _is_real(x) and x > 0, "a finite number > 0 [rpm]"),
            ("water_pump_torque_Nm", _is_real, "a finite number [N m]"),
            ("water_pump_quadratic_Nms2", lambda x: _is_real(x) and x >= 0, "a finite number >= 0 [N m s^2]"),
            ("settle_cycles", lambda x: _is_count(x, 2), "an integer >= 2"),
            ("cycles", lambda x: _is_count(x, 1), "an integer >= 1"),
            ("max_output_interval_s", lambda x: _is_real(x) and x > 0, "a finite number > 0 [s]"),
        ]
        return [f"{name}: {getattr(self, name)!r} must be {allowed}"
                for name, ok, allowed in rules if not ok(getattr(self, name))]

    def irregularity_at(self, rpm: float) -> float:
        """Crank speed irregularity amplitude [rpm] at mean speed ``rpm``."""
        if self.irregularity_scaling == "inverse":
            return self.irregularity_rpm * self.idle_rpm / rpm
        return self.irregularity_rpm


#: run settings, by name: the names a study may vary (``--vary``)
SETTINGS = tuple(f.name for f in dataclasses.fields(RunSettings))
#: each run setting's column in the results table, ``name [unit]`` as every other column with a
#: unit (the unit in brackets, not in the name); a setting without a unit keeps its name
SETTING_COLUMNS = {
    "order": "order [1]",
    "irregularity_rpm": "irregularity [rpm]",
    "irregularity_scaling": "irregularity_scaling",
    "idle_rpm": "idle_speed [rpm]",
    "water_pump_torque_Nm": "water_pump_torque_static [N.m]",
    "water_pump_quadratic_Nms2": "water_pump_torque_quadratic [N.m.s2]",
    "settle_cycles": "settle_cycles [1]",
    "cycles": "cycles [1]",
    "max_output_interval_s": "max_output_interval [s]",
}
assert tuple(SETTING_COLUMNS) == SETTINGS, "a column for every run setting"


@dataclass(frozen=True)
class CrankSpeed:
    """Crank speed [rad/s] over time t [s]: ``w_m + dw sin(w t)``; called with a time, or
    :meth:`samples` at many at once."""

    mean: float  # w_m [rad/s]
    amplitude: float  # dw [rad/s]
    frequency: float  # w [rad/s]

    def __call__(self, t: float) -> float:
        return self.mean + self.amplitude * math.sin(self.frequency * t)

    def samples(self, times: np.ndarray) -> np.ndarray:
        return self.mean + self.amplitude * np.sin(self.frequency * times)


def crank_speed_signal(rpm: float, amplitude_rpm: float, order: float) -> CrankSpeed:
    """Crank speed [rad/s] over time t [s]: ``w_m + dw sin(q w_m t)``, mean ``rpm``, amplitude
    ``amplitude_rpm``, engine order q (q periods per crank revolution at the mean speed)."""
    return CrankSpeed(rpm * RPM, amplitude_rpm * RPM, order * rpm * RPM)


@dataclass(frozen=True)
class Run:
    """One run of a sweep: mean crank speed ``rpm``, its settings, and the study ``variant``
    it belongs to, as (name, value) pairs of the varied layout keys and settings. ``layout``
    is the drive with the variant's layout edits applied."""

    rpm: float
    settings: RunSettings
    variant: tuple[tuple[str, object], ...]
    layout: Layout = field(compare=False, repr=False)
    # a duty point's run: its layout carries the duty's loads (belt_fmu.duty.loaded_layout);
    # a pump the point loads takes no load from the settings on top
    duty_loads_pump: bool = field(default=False, compare=False, repr=False)

    @property
    def label(self) -> str:
        """The run's speed and variant, for messages: "rpm=800, belt.pretension_N=350.0"."""
        return ", ".join(f"{name}={value}" for name, value in [("rpm", self.rpm), *self.variant])

    @property
    def cycle_time(self) -> float:
        """Length of one engine cycle [s], two crank revolutions."""
        return CYCLE_REVOLUTIONS * 60.0 / self.rpm

    @property
    def polygon_frequency(self) -> float:
        """Polygon frequency [Hz] at the mean crank speed ([Scania thesis] eq. 4.14)."""
        return postprocessing().drive_polygon_frequency(self.layout, self.rpm * RPM)

    @property
    def cycle_samples(self) -> int:
        """Output samples per engine cycle."""
        finest = min(self.settings.max_output_interval_s, 1.0 / (SAMPLES_PER_POLYGON_PERIOD * self.polygon_frequency))
        return math.ceil(self.cycle_time / finest - 1e-9)

    @property
    def output_interval(self) -> float:
        """Output sampling interval [s]; the crank speed is held over each one."""
        return self.cycle_time / self.cycle_samples

    @property
    def margin_samples(self) -> int:
        """Samples run beyond the evaluated cycles so the filter has settled at their end."""
        return math.ceil(postprocessing().filter_settling_time(0.5 * self.polygon_frequency) / self.output_interval)

    @property
    def irregularity_amplitude(self) -> float:
        """Crank speed irregularity amplitude of this run [rpm]."""
        return self.settings.irregularity_at(self.rpm)

    @property
    def water_pump_torque(self) -> float:
        """Water-pump load torque of this run [N m], at the pump's mean speed."""
        pump = self.layout.water_pump_index
        if pump is None or self.duty_loads_pump:
            return 0.0
        speed = self.rpm * RPM * cord_radius(self.layout, self.layout.crank_index) / cord_radius(self.layout, pump)
        return self.settings.water_pump_torque_Nm + self.settings.water_pump_quadratic_Nms2 * speed ** 2

    @property
    def simulated_time(self) -> float:
        """Simulated time of the run [s]: settling, evaluated cycles and filter margin (the
        drive's reset settles another ``BeltDrive.reset`` 0.15 s at the mean speed first)."""
        s = self.settings
        return ((s.settle_cycles + s.cycles) * self.cycle_samples + self.margin_samples) * self.output_interval


@dataclass(frozen=True)
class Variation:
    """One varied parameter of a study: a layout key ``table.key`` (``pulleys.NAME.key`` for
    a pulley) or a :class:`RunSettings` name, and its values."""

    name: str
    values: tuple


def parse_values(text: str) -> tuple:
    """Values of ``START:STOP:COUNT`` (COUNT evenly spaced numbers, both ends included) or of
    a comma-separated list (numbers stay text here; :func:`plan` converts them to the type of
    the parameter they set). Raises ValueError saying what is allowed."""
    if ":" in text:
        parts = text.split(":")
        try:
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
            if len(parts) != 3 or count < 1 or not math.isfinite(start + stop) or (count == 1 and start != stop):
                raise ValueError
        except (ValueError, IndexError):
            raise ValueError(f"{text!r}: give START:STOP:COUNT (COUNT >= 1 numbers from START to STOP) "
                             "or a comma-separated list") from None
        return tuple(float(f"{x:.12g}") for x in np.linspace(start, stop, count))
    items = tuple(item.strip() for item in text.split(","))
    if not all(items):
        raise ValueError(f"{text!r}: empty value in the list")
    return items


def parse_variation(text: str) -> Variation:
    """``NAME=VALUES`` (see :func:`parse_values`), e.g. ``belt.pretension_N=350:550:3``,
    ``friction.law=tanh,creep_polynomial`` or ``irregularity_rpm=20,40``."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"{text!r}: give NAME=VALUES, e.g. belt.pretension_N=350:550:3")
    return Variation(name.strip(), parse_values(values))


def _coerce(value, current):
    """``value`` (text or number) as the type of the parameter's ``current`` value: text for
    text, an int for an integer if it is one, else a float if it is a number. Anything else is
    passed on as it is, for the layout's or the settings' checks to name."""
    if isinstance(current, str):
        return str(value)
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if isinstance(current, int) and number.is_integer() else number


def _layout_target(layout: Layout, path: str):
    """The current value of layout key ``path``; ValueError naming the allowed keys if there is none."""
    parts = path.split(".")
    if parts[0] == "pulleys" and len(parts) == 3:
        try:
            table = layout.pulley(parts[1])
        except KeyError as err:
            raise ValueError(f"{path}: {err.args[0]}") from None
    elif parts[0] in TABLES and parts[0] != "pulleys" and len(parts) == 2:
        table = getattr(layout, parts[0])
        if table is None:
            raise ValueError(f"{path}: the layout has no [{parts[0]}] table")
    else:
        raise ValueError(f"{path}: unknown parameter; vary a layout key as TABLE.KEY (tables: "
                         + ", ".join(t for t in TABLES if t != "pulleys")
                         + "), a pulley's as pulleys.NAME.KEY, or a run setting: " + ", ".join(SETTINGS))
    keys = [f.name for f in dataclasses.fields(table)]
    if parts[-1] not in keys:
        close = difflib.get_close_matches(parts[-1], keys, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"{path}: unknown key; {hint}keys: {', '.join(keys)}")
    current = getattr(table, parts[-1])
    if isinstance(current, tuple):
        raise ValueError(f"{path}: an array; only single values can be varied")
    return current


def _edited(layout: Layout, edits: list[tuple[str, object]]) -> Layout:
    """``layout`` with the layout keys ``edits`` changed, validated as a layout file is
    (LayoutError names the variant, the key, the value and what is allowed)."""
    if not edits:
        return layout
    data = layout.to_data()
    for path, value in edits:
        parts = path.split(".")
        if parts[0] == "pulleys":
            table = next(p for p in data["pulleys"] if p["name"] == parts[1])
        else:
            table = data[parts[0]]
        table[parts[-1]] = value
    label = ", ".join(f"{path}={value}" for path, value in edits)
    return load_layout_data(data, f"{layout.source} with {label}")


def layout_digest(layout: Layout) -> str:
    """A short SHA-256 of the layout's data: a results table belongs to one layout."""
    text = json.dumps(layout.to_data(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Plan:
    """The runs of a sweep of ``layout`` and the results table's columns."""

    layout: Layout
    runs: tuple[Run, ...]
    edit_paths: tuple[str, ...]  # the varied layout keys, one column each
    digest: str  # layout_digest(layout)
    duty: bool = False  # the runs are a duty cycle's points

    @property
    def metrics(self):
        """The metrics of each run (:func:`belt_fmu.postprocess.cycle_metric_specs`)."""
        return postprocessing().cycle_metric_specs(self.layout)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The columns that identify a run: its parameters (a duty point's name, DUTY_COLUMN,
        for a sweep over a duty cycle) and the layout's digest."""
        duty = (DUTY_COLUMN,) if self.duty else ()
        return ("rpm", *duty, *self.edit_paths, *SETTING_COLUMNS.values(), "layout_sha256")

    @property
    def columns(self) -> tuple[str, ...]:
        """The table's header: the key columns, then ``layout`` (the layout file; where the key
        ends), the run's derived inputs, its status, and the metrics as ``name [unit]``."""
        return (*self.key_columns, "layout", "irregularity_amplitude [rpm]", "water_pump_torque [N.m]",
                "output_interval [s]", "status", "error", "wall_time [s]",
                *(f"{m.name} [{m.unit}]" for m in self.metrics))

    def key(self, run: Run) -> tuple[str, ...]:
        row = self.row(run, {})
        return tuple(row[c] for c in self.key_columns)

    def row(self, run: Run, outcome: dict) -> dict[str, str]:
        """The table row of ``run`` with ``outcome`` (what :func:`belt_fmu.sweep.executors.outcome`
        returns), as text."""
        edits = dict(run.variant)
        row = {"rpm": run.rpm, **({DUTY_COLUMN: edits[DUTY_COLUMN]} if self.duty else {}),
               **{path: edits[path] for path in self.edit_paths},
               **{column: getattr(run.settings, name) for name, column in SETTING_COLUMNS.items()},
               "layout_sha256": self.digest, "layout": self.layout.source,
               "irregularity_amplitude [rpm]": run.irregularity_amplitude,
               "water_pump_torque [N.m]": run.water_pump_torque, "output_interval [s]": run.output_interval,
               "status": outcome.get("status", ""), "error": outcome.get("error", ""),
               "wall_time [s]": outcome.get("wall_time", "")}
        row.update({f"{m.name} [{m.unit}]": outcome.get(m.name, "") for m in self.metrics})
        return {column: cell(value) for column, value in row.items()}


#: the results table's column of a duty point's name (a sweep over a duty cycle)
DUTY_COLUMN = "duty_point"


def plan(layout: Layout, rpms, settings: RunSettings = RunSettings(), variations=(), duty=None) -> Plan:
    """The runs of a sweep over the speeds ``rpms`` [rpm] for every combination of the
    ``variations`` (:class:`Variation`, cartesian product), variants in the order given.
    ``duty`` (a :class:`belt_fmu.duty.DutyCycle`) replaces the speeds: one run per duty point
    at its speed with its loads.

    Every variant layout is validated as a layout file is (LayoutError), the settings and the
    speeds checked (ValueError naming what is wrong) before anything runs. Varying a key that
    changes the drive's outputs (pulley names, the headline pulley, the tensioner) is refused.
    """
    problems = settings.problems()
    rpms = [_coerce(x, 0.0) for x in rpms] if duty is None else [p.engine_speed_rpm for p in duty.points]
    if not rpms:
        problems.append("rpm: no speed given")
    problems += [f"rpm: {x!r} must be a finite speed > 0 [rpm]" for x in rpms if not (_is_real(x) and x > 0)]
    names = [v.name for v in variations]
    problems += [f"{name}: varied twice" for name in sorted({n for n in names if names.count(n) > 1})]
    if problems:
        raise ValueError("; ".join(problems))
    targets = {}
    for name in names:
        if name == "rpm":
            raise ValueError("rpm: give the speeds with --rpm (rpms), not as a variation")
        if "." in name:
            targets[name] = _layout_target(layout, name)
        elif name in SETTINGS:
            targets[name] = getattr(settings, name)
        else:
            close = difflib.get_close_matches(name, SETTINGS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"{name}: unknown run setting; {hint}settings: {', '.join(SETTINGS)}; "
                             "a layout key is TABLE.KEY")
    specs = postprocessing().cycle_metric_specs(layout)
    runs = []
    for values in itertools.product(*(v.values for v in variations)):
        variant = tuple((name, _coerce(value, targets[name])) for name, value in zip(names, values))
        label = ", ".join(f"{name}={value}" for name, value in variant)
        variant_settings = dataclasses.replace(settings, **{n: v for n, v in variant if "." not in n})
        if variant_settings.problems():
            raise ValueError(f"variant {label}: " + "; ".join(variant_settings.problems()))
        variant_layout = _edited(layout, [(n, v) for n, v in variant if "." in n])
        if postprocessing().cycle_metric_specs(variant_layout) != specs:
            raise ValueError(f"variant {label}: changes the drive's outputs (pulleys, headline pulley or "
                             "tensioner); vary it in separate sweeps")
        for rpm, point in _speeds(rpms, duty):
            amplitude = variant_settings.irregularity_at(rpm)
            if amplitude >= rpm:
                raise ValueError(f"rpm={rpm:g}{', ' + label if label else ''}: the irregularity "
                                 f"+-{amplitude:g} rpm would stop the crank")
            if point is None:
                runs.append(Run(rpm, variant_settings, variant, variant_layout))
                continue
            from ..duty import loaded_layout

            pump = variant_layout.water_pump_index
            loads_pump = pump is not None and variant_layout.pulleys[pump].name in point.load_torques(variant_layout)
            runs.append(Run(rpm, variant_settings, ((DUTY_COLUMN, point.name), *variant),
                            loaded_layout(variant_layout, point), loads_pump))
    return Plan(layout, tuple(runs), tuple(n for n in names if "." in n), layout_digest(layout), duty is not None)


def _speeds(rpms, duty):
    """(rpm, duty point or None) of each run of a variant: the sorted speeds, or the duty's points."""
    if duty is None:
        return [(rpm, None) for rpm in sorted(set(rpms))]
    return [(p.engine_speed_rpm, p) for p in duty.points]
