"""Engine-speed sweeps and parameter studies of a drive, on the local cores or a Dask cluster.

Seed 000's main result (section 5.2, Figs. 5.4-5.5) is the tensioner angular amplitude and
the first idler's bearing force, max and min, over engine speed, 500-2300 rpm; calibrating a
drive to measurements (its section 9) takes many such runs. A sweep is the cartesian product
of study variants (:func:`parse_variation`: layout keys such as ``belt.pretension_N``, or
run settings such as ``irregularity_rpm``) and crank speeds: :func:`plan` turns it into
:class:`Run` s, :func:`sweep` runs them and keeps the results table.

One run, :func:`run_point`, is a pure function of the run's layout and parameters (the model
is deterministic), so every executor gives the same floats:

- crank speed ``w(t) = w_m + dw sin(q w_m t)``: mean speed w_m and a speed irregularity of
  engine order q and amplitude dw (REFERENCES.md section 8), see :class:`RunSettings`;
- water-pump load ``T0 + k w_p^2`` at the pump's mean speed w_p, constant over the run;
- the drive starts from its steady running state at w_m (``BeltDrive.reset``), runs
  ``settle_cycles`` engine cycles (two crank revolutions each) to reach a periodic state,
  then ``cycles`` evaluated cycles and a margin for the filter;
- the metrics over the evaluated cycles, every signal low-pass filtered at half the polygon
  frequency (seed 000 section 7): :func:`belt_fmu.postprocess.cycle_metrics`.

The results table (CSV) has one row per run, keyed by the run's parameters and appended as
the runs finish, so an interrupted sweep loses nothing done; started again with ``resume``
it skips the runs already in the table. A failed run is a row with status "failed" and its
error message; the others carry on.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import difflib
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .files import atomic_write
from .layout import TABLES, Layout, load_layout_data
from .model.geometry import cord_radius
from .units import RPM

#: crank revolutions per engine cycle (4-stroke)
CYCLE_REVOLUTIONS = 2
#: a run is sampled at least this often per polygon period, so the polygon tone is resolved
#: and does not alias below the filter cutoff
SAMPLES_PER_POLYGON_PERIOD = 4
#: how the irregularity amplitude changes with speed (:class:`RunSettings`)
SCALINGS = ("constant", "inverse")
OK, FAILED = "ok", "failed"


def _postprocess():
    """:mod:`belt_fmu.postprocess`, imported on first use: it loads scipy.signal (about 1 s),
    which the command line must not pay for on every command (its parser reads
    :class:`RunSettings`)."""
    from . import postprocess

    return postprocess


def _is_real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


@dataclass(frozen=True)
class RunSettings:
    """Parameters shared by the runs of a sweep; a study may vary any of them by name.

    Crank speed irregularity (REFERENCES.md section 8; seed 000 section 4.4 imported measured
    crank speeds): engine ``order`` q, the firing frequency per crank revolution (2 for a
    4-cylinder, 3 for a 6-cylinder 4-stroke engine; a multiple of 1/2, so an engine cycle
    holds whole periods), amplitude ``irregularity_rpm`` [rpm], either the same at every speed
    (``irregularity_scaling = "constant"``, the default) or given at ``idle_rpm`` and scaled
    by ``idle_rpm / rpm`` ("inverse": the speed response of the crank inertia J to a gas-torque
    ripple T_q of fixed size, dw = T_q / (J q w)). The default, 2nd order +-40 rpm, is a
    4-cylinder engine at idle, a diesel at the low end.

    Water-pump load ``water_pump_torque_Nm + water_pump_quadratic_Nms2 * w_p^2`` [N m]
    (REFERENCES.md section 8: T0 + k w^2) at the pump's mean speed w_p, the mean crank speed
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


#: run settings, by name: the table's parameter columns and the names a study may vary
SETTINGS = tuple(f.name for f in dataclasses.fields(RunSettings))


def crank_speed_signal(rpm: float, amplitude_rpm: float, order: float) -> Callable[[float], float]:
    """Crank speed [rad/s] over time t [s]: ``w_m + dw sin(q w_m t)``, mean ``rpm``, amplitude
    ``amplitude_rpm``, engine order q (q periods per crank revolution at the mean speed)."""
    mean, amplitude, frequency = rpm * RPM, amplitude_rpm * RPM, order * rpm * RPM
    return lambda t: mean + amplitude * math.sin(frequency * t)


@dataclass(frozen=True)
class Run:
    """One run of a sweep: mean crank speed ``rpm``, its settings, and the study ``variant``
    it belongs to, as (name, value) pairs of the varied layout keys and settings. ``layout``
    is the drive with the variant's layout edits applied."""

    rpm: float
    settings: RunSettings
    variant: tuple[tuple[str, object], ...]
    layout: Layout = field(compare=False, repr=False)

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
        """Polygon frequency [Hz] at the mean crank speed (seed 000 eq. 4.14)."""
        return _postprocess().drive_polygon_frequency(self.layout, self.rpm * RPM)

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
        return math.ceil(_postprocess().filter_settling_time(0.5 * self.polygon_frequency) / self.output_interval)

    @property
    def irregularity_amplitude(self) -> float:
        """Crank speed irregularity amplitude of this run [rpm]."""
        return self.settings.irregularity_at(self.rpm)

    @property
    def water_pump_torque(self) -> float:
        """Water-pump load torque of this run [N m], at the pump's mean speed."""
        pump = self.layout.water_pump_index
        if pump is None:
            return 0.0
        speed = self.rpm * RPM * cord_radius(self.layout, self.layout.crank_index) / cord_radius(self.layout, pump)
        return self.settings.water_pump_torque_Nm + self.settings.water_pump_quadratic_Nms2 * speed ** 2

    @property
    def simulated_time(self) -> float:
        """Simulated time of the run [s]: settling, evaluated cycles and filter margin (the
        drive's reset settles another ``BeltDrive.reset`` 0.15 s at the mean speed first)."""
        s = self.settings
        return ((s.settle_cycles + s.cycles) * self.cycle_samples + self.margin_samples) * self.output_interval


def run_point(run: Run) -> dict[str, float]:
    """Simulate one run and return its metrics by name
    (:func:`belt_fmu.postprocess.cycle_metric_specs` lists them with their units).

    Outputs are sampled every :attr:`Run.output_interval` (the crank speed held over each
    interval, as a co-simulation master holds an input over a step); the evaluated cycles
    follow ``settle_cycles`` engine cycles and are followed by :attr:`Run.margin_samples`.
    Raises what the model raises (DivergenceError, InitializationError, ValueError).
    """
    from .simulation import simulate

    s = run.settings
    samples = run.cycle_samples
    start = s.settle_cycles * samples
    crank = crank_speed_signal(run.rpm, run.irregularity_amplitude, s.order)
    results = simulate(run.layout, crank_speed=crank, water_pump_torque=run.water_pump_torque,
                       t_end=run.simulated_time, output_interval=run.output_interval)
    return _postprocess().cycle_metrics(results, run.layout, run.rpm * RPM, start, samples, s.cycles)


def _outcome(run: Run) -> dict:
    """What a worker returns for a run: status, error message, wall time [s] and metrics.
    Any exception is caught here, so a failed run is a result like any other."""
    start = time.perf_counter()
    try:
        metrics = run_point(run)
    except Exception as err:  # recorded with the run's parameters; the sweep carries on
        message = f"{type(err).__name__}: {err}".replace("\n", " | ")
        return {"status": FAILED, "error": message, "wall_time": time.perf_counter() - start}
    return {"status": OK, "error": "", "wall_time": time.perf_counter() - start, **metrics}


# ---------------------------------------------------------------------------------------------
# Planning: variants x speeds
# ---------------------------------------------------------------------------------------------


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

    @property
    def metrics(self):
        """The metrics of each run (:func:`belt_fmu.postprocess.cycle_metric_specs`)."""
        return _postprocess().cycle_metric_specs(self.layout)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The columns that identify a run: its parameters and the layout's digest."""
        return ("rpm", *self.edit_paths, *SETTINGS, "layout_sha256")

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
        """The table row of ``run`` with ``outcome`` (what :func:`_outcome` returns), as text."""
        edits = dict(run.variant)
        row = {"rpm": run.rpm, **{path: edits[path] for path in self.edit_paths},
               **{name: getattr(run.settings, name) for name in SETTINGS},
               "layout_sha256": self.digest, "layout": self.layout.source,
               "irregularity_amplitude [rpm]": run.irregularity_amplitude,
               "water_pump_torque [N.m]": run.water_pump_torque, "output_interval [s]": run.output_interval,
               "status": outcome.get("status", ""), "error": outcome.get("error", ""),
               "wall_time [s]": outcome.get("wall_time", "")}
        row.update({f"{m.name} [{m.unit}]": outcome.get(m.name, "") for m in self.metrics})
        return {column: _text(value) for column, value in row.items()}


def _text(value) -> str:
    """A table cell: floats in full precision (repr reads back exactly), others as str."""
    return repr(float(value)) if isinstance(value, float) else str(value)


def plan(layout: Layout, rpms, settings: RunSettings = RunSettings(), variations=()) -> Plan:
    """The runs of a sweep over the speeds ``rpms`` [rpm] for every combination of the
    ``variations`` (:class:`Variation`, cartesian product), variants in the order given.

    Every variant layout is validated as a layout file is (LayoutError), the settings and the
    speeds checked (ValueError naming what is wrong) before anything runs. Varying a key that
    changes the drive's outputs (pulley names, the headline pulley, the tensioner) is refused.
    """
    problems = settings.problems()
    rpms = [_coerce(x, 0.0) for x in rpms]
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
    specs = _postprocess().cycle_metric_specs(layout)
    runs = []
    for values in itertools.product(*(v.values for v in variations)):
        variant = tuple((name, _coerce(value, targets[name])) for name, value in zip(names, values))
        label = ", ".join(f"{name}={value}" for name, value in variant)
        variant_settings = dataclasses.replace(settings, **{n: v for n, v in variant if "." not in n})
        if variant_settings.problems():
            raise ValueError(f"variant {label}: " + "; ".join(variant_settings.problems()))
        variant_layout = _edited(layout, [(n, v) for n, v in variant if "." in n])
        if _postprocess().cycle_metric_specs(variant_layout) != specs:
            raise ValueError(f"variant {label}: changes the drive's outputs (pulleys, headline pulley or "
                             "tensioner); vary it in separate sweeps")
        for rpm in sorted(set(rpms)):
            amplitude = variant_settings.irregularity_at(rpm)
            if amplitude >= rpm:
                raise ValueError(f"rpm={rpm:g}{', ' + label if label else ''}: the irregularity "
                                 f"+-{amplitude:g} rpm would stop the crank")
            runs.append(Run(rpm, variant_settings, variant, variant_layout))
    return Plan(layout, tuple(runs), tuple(n for n in names if "." in n), layout_digest(layout))


# ---------------------------------------------------------------------------------------------
# The results table
# ---------------------------------------------------------------------------------------------


@dataclass
class SweepTable:
    """A sweep's results table: the CSV header and the rows as text, numbers in full
    precision. The key columns (a run's parameters and the layout digest) come first and end
    before the column ``layout``."""

    columns: list[str]
    rows: list[dict[str, str]]

    @classmethod
    def read(cls, path) -> "SweepTable":
        """Read a results CSV. A last row cut short (the sweep was killed while writing it) is
        left out. Raises ValueError if the file is not a sweep table."""
        text = Path(path).read_text(encoding="utf-8")
        if text and not text.endswith("\n"):  # cut short while written: drop the partial row
            text = text[:text.rfind("\n") + 1]
        lines = list(csv.reader(text.splitlines(keepends=True)))
        if not lines or "layout" not in lines[0] or "status" not in lines[0]:
            raise ValueError(f"{path}: not a belt-fmu sweep table (no header with 'layout' and 'status')")
        columns = lines[0]
        rows = [dict(zip(columns, line)) for line in lines[1:] if len(line) == len(columns)]
        return cls(columns, rows)

    def write(self, path) -> Path:
        """Write the table to ``path`` atomically (a temporary file renamed over it)."""
        path = Path(path)
        with atomic_write(path, newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, self.columns, lineterminator="\n")
            writer.writeheader()
            writer.writerows(self.rows)
        return path

    @property
    def key_columns(self) -> list[str]:
        return self.columns[:self.columns.index("layout")]

    def key(self, row: dict[str, str]) -> tuple[str, ...]:
        return tuple(row[c] for c in self.key_columns)

    def sorted(self) -> "SweepTable":
        """The rows in order of their key, speed last; the last row of a key wins (a run
        done again on resume replaces its earlier row)."""
        columns = [c for c in self.key_columns if c != "rpm"] + ["rpm"]
        latest = {self.key(row): row for row in self.rows}
        order = sorted(latest.values(), key=lambda row: tuple(_sortable(row[c]) for c in columns))
        return SweepTable(self.columns, order)

    def number(self, rows: list[dict[str, str]], column: str) -> np.ndarray:
        """Column ``column`` of ``rows`` as floats (NaN where empty)."""
        return np.array([float(row[column]) if row[column] else math.nan for row in rows])

    def metric(self, rows: list[dict[str, str]], name: str) -> np.ndarray:
        """The metric ``name`` (its column ``name [unit]``) of ``rows`` as floats."""
        column = next((c for c in self.columns if c.rpartition(" [")[0] == name), None)
        if column is None:
            raise KeyError(f"no metric {name!r} in the table")
        return self.number(rows, column)

    def cases(self) -> list[tuple[str, list[dict[str, str]]]]:
        """The rows grouped by study variant, each group sorted by speed, with its label:
        "name=value, ..." of the parameters other than rpm that differ between rows ("" if
        none do)."""
        rows = self.sorted().rows
        varied = [c for c in self.key_columns if c != "rpm" and len({row[c] for row in rows}) > 1]
        groups: dict[tuple, list] = {}
        for row in rows:
            groups.setdefault(tuple(row[c] for c in varied), []).append(row)
        return [(", ".join(f"{c}={_short(v)}" for c, v in zip(varied, values)), group)
                for values, group in groups.items()]


def _sortable(text: str):
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def _short(text: str) -> str:
    try:
        return f"{float(text):g}"
    except ValueError:
        return text


# ---------------------------------------------------------------------------------------------
# Executors
# ---------------------------------------------------------------------------------------------


def default_workers() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _collected(future) -> dict:
    """A future's outcome; a worker lost (killed process, lost cluster node) is a failed run."""
    try:
        return future.result()
    except Exception as err:
        return {"status": FAILED, "error": f"{type(err).__name__}: {err}".replace("\n", " | "), "wall_time": ""}


@contextlib.contextmanager
def _executor(workers: int, scheduler: str | None):
    """Yields ``run_all(runs)``, an iterator of (run, outcome) in the order the runs finish:
    on the Dask scheduler at ``scheduler`` if given, else on ``workers`` local processes
    ('forkserver' start method where available, else 'spawn'; each worker loads the model's
    compiled kernels from numba's disk cache), or in this process if ``workers`` is 1."""
    if scheduler is not None:
        from distributed import Client
        from distributed import as_completed as dask_completed

        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as err:
            raise ConnectionError(f"cannot connect to the Dask scheduler at {scheduler}: {err}") from None

        def run_all(runs):
            futures = {client.submit(_outcome, run, pure=False): run for run in runs}
            for future in dask_completed(list(futures)):
                yield futures[future], _collected(future)

        try:
            yield run_all
        finally:
            client.close()
    elif workers > 1:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if context.get_start_method() == "forkserver":
            context.set_forkserver_preload([f"{__package__}.simulation"])  # workers fork with the model loaded
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)

        def run_all(runs):
            futures = {pool.submit(_outcome, run): run for run in runs}
            for future in as_completed(futures):
                yield futures[future], _collected(future)

        try:
            yield run_all
        finally:
            pool.shutdown(cancel_futures=True)
    else:
        yield lambda runs: ((run, _outcome(run)) for run in runs)


# ---------------------------------------------------------------------------------------------
# Running a sweep
# ---------------------------------------------------------------------------------------------


@dataclass
class SweepResult:
    """What :func:`sweep` did: the whole table (earlier rows of a resumed table included),
    how many runs it ran and skipped (already in the table), the failures ("run LABEL:
    ERROR" lines) and the wall time [s]."""

    table: SweepTable
    ran: int
    skipped: int
    failures: list[str]
    wall_time: float


def sweep(plan: Plan, out=None, *, mode: str = "new", workers: int | None = None, scheduler: str | None = None,
          progress: bool = False, log: Callable[[str], None] | None = None) -> SweepResult:
    """Run the plan's runs and keep their rows in the results table ``out`` (CSV; None keeps
    them in memory only).

    ``mode`` says what to do with an existing ``out``: "new" refuses it (FileExistsError),
    "resume" keeps its rows and skips the runs whose row is there with status "ok" (failed
    runs run again; the table must be of the same layout and columns, else ValueError), and
    "overwrite" replaces it. Each finished run's row is appended at once; at the end the
    table is rewritten sorted (by variant, then speed), atomically.

    Runs go to the Dask scheduler at ``scheduler`` if given, else to ``workers`` local
    processes (default: the cores available; 1 runs them in this process), longest first.
    ``progress`` draws a progress bar (tqdm) on stderr; ``log(line)`` is called for each
    failed run.
    """
    if mode not in ("new", "resume", "overwrite"):
        raise ValueError(f"mode must be 'new', 'resume' or 'overwrite', got {mode!r}")
    columns = list(plan.columns)
    earlier = SweepTable(columns, [])
    if out is not None and Path(out).exists():
        if mode == "new":
            raise FileExistsError(f"{out} exists; resume it or overwrite it")
        if mode == "resume":
            earlier = _resumable(SweepTable.read(out), columns, plan.digest, out)
    done = {earlier.key(row) for row in earlier.rows if row["status"] == OK}
    todo = sorted((run for run in plan.runs if plan.key(run) not in done), key=lambda run: -run.simulated_time)
    workers = default_workers() if workers is None else workers
    start = time.perf_counter()
    rows, failures = [], []
    with _executor(min(workers, len(todo)) if todo else 1, scheduler) as run_all:
        if out is not None:
            earlier.write(out)  # the header, and a clean end to append to
        bar = _progress_bar(len(todo)) if progress else None
        try:
            for run, outcome in run_all(todo):
                row = plan.row(run, outcome)
                if out is not None:
                    _append(out, columns, row)
                rows.append(row)
                if outcome["status"] == FAILED:
                    failures.append(f"run {run.label}: {outcome['error']}")
                    if log is not None:
                        with bar.external_write_mode() if bar is not None else contextlib.nullcontext():
                            log(failures[-1])
                if bar is not None:
                    bar.set_postfix(failed=len(failures), refresh=False)
                    bar.update()
        finally:
            if bar is not None:
                bar.close()
    table = SweepTable(columns, earlier.rows + rows).sorted()
    if out is not None:
        table.write(out)
    return SweepResult(table, len(todo), len(plan.runs) - len(todo), failures, time.perf_counter() - start)


def _resumable(table: SweepTable, columns: list[str], digest: str, path) -> SweepTable:
    """``table`` if a sweep with these ``columns`` and layout digest may add to it."""
    if table.columns != columns:
        missing = [c for c in columns if c not in table.columns]
        extra = [c for c in table.columns if c not in columns]
        raise ValueError(f"{path}: its columns differ from this sweep's (missing: {', '.join(missing) or '-'}; "
                         f"not in this sweep: {', '.join(extra) or '-'}); resume with the same layout and "
                         "varied layout keys, or write to another file")
    other = sorted({row["layout_sha256"] for row in table.rows} - {digest})
    if other:
        raise ValueError(f"{path}: made with another layout (layout_sha256 {', '.join(other)}, this one "
                         f"{digest}); resume with the same layout, or write to another file")
    return table


def _append(path, columns: list[str], row: dict[str, str]) -> None:
    """Append one row and push it to the disk, so a killed sweep keeps it."""
    with open(path, "a", newline="", encoding="utf-8") as f:
        csv.DictWriter(f, columns, lineterminator="\n").writerow(row)
        f.flush()
        os.fsync(f.fileno())


def _progress_bar(total: int):
    from tqdm import tqdm

    return tqdm(total=total, desc="sweep", unit="run", file=sys.stderr, leave=False)
