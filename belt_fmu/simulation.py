"""Run a drive over time and collect its outputs in a results table.

``simulate`` is the standalone counterpart of the FMU: same model, same outputs, inputs given
as constants or functions of time, held constant over each output interval (as a
co-simulation master holds them over a communication step).
"""
from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Union

import numpy as np

from .files import atomic_write
from .layout import Layout, load_layout
from .model.system import BeltDrive, make_drive
from .units import RPM

Signal = Union[float, Callable[[float], float]]
#: the inputs' columns of a results table: name, unit, description (a drive with more inputs
#: than these, belt_fmu.model.inputs, has one column per input: :func:`input_columns`)
INPUT_COLUMNS = (("crank_speed_input", "rad/s", "crank speed input"),
                 ("water_pump_torque_input", "N.m", "water-pump load torque input"))


#: the most a run's results table may take [bytes]: a run holds it in memory (a command its
#: summary's and plot's copies besides), and a request beyond it is refused up front rather
#: than met with an allocation failure or a machine that swaps
MAX_TABLE_BYTES = 2 ** 30


def table_problem(t_end: float, output_interval: float, columns: int) -> str | None:
    """Why a results table of ``columns`` columns, sampled every ``output_interval`` [s] up to
    ``t_end`` [s], is too large to hold (:data:`MAX_TABLE_BYTES`), with the interval and the
    run length that would fit; None if it fits."""
    rows = t_end / output_interval + 1.0
    size = 8.0 * rows * columns
    if size <= MAX_TABLE_BYTES:
        return None
    fitting_rows = MAX_TABLE_BYTES / (8.0 * columns) - 1.0
    return (f"{t_end:g} s sampled every {output_interval:g} s makes {rows:.3g} rows of {columns} columns "
            f"({size / 1e9:.3g} GB), beyond the {MAX_TABLE_BYTES / 2 ** 30:g} GiB a run's results may take in "
            f"memory: sample every {t_end / fitting_rows:.3g} s or more, or run {fitting_rows * output_interval:.4g} s "
            "or less")


def table_columns(layout: Layout) -> int:
    """The columns of a results table of ``layout``'s drive: the time, one per input, one per
    output (:attr:`BeltDrive.inputs`, :attr:`BeltDrive.specs`)."""
    from .model.inputs import input_specs
    from .model.outputs import output_specs

    return 1 + len(input_specs(layout)) + len(output_specs([p.name for p in layout.pulleys],
                                                           layout.headline_pulley_name))


def input_columns(inputs) -> tuple:
    """The input columns of a drive's results table, one per input of ``inputs``
    (:attr:`BeltDrive.inputs`): ``{input}_input``; the two of :data:`INPUT_COLUMNS` as named
    there."""
    known = {name.removesuffix("_input"): (name, unit, description) for name, unit, description in INPUT_COLUMNS}
    return tuple(known.get(spec.name, (f"{spec.name}_input", spec.unit, f"{spec.description} (input)"))
                 for spec in inputs)


@dataclass
class Results:
    """Output time series: ``columns[name]`` is an array over ``columns["time"]``."""

    columns: dict
    units: dict
    descriptions: dict = field(default_factory=dict)
    wall_time: float = 0.0  # [s] spent integrating (reset excluded)

    @classmethod
    def from_samples(cls, times, inputs, specs, values, wall_time: float = 0.0,
                     time_description: str = "simulation time", columns=INPUT_COLUMNS) -> "Results":
        """The table of a run: ``time`` [s] (``times``, (m,)), the inputs it was driven with
        (``inputs``, (m, len(columns)): by default crank speed [rad/s], water-pump torque
        [N m]; ``columns`` names them, :func:`input_columns`) and one column per output of
        ``specs`` (objects with ``name``, ``unit``, ``description``, as
        :func:`belt_fmu.model.outputs.output_specs` gives) from ``values`` (m, len(specs))."""
        input_names = columns
        inputs = np.asarray(inputs)
        values = np.asarray(values)
        columns = {"time": np.asarray(times)}
        units = {"time": "s"}
        descriptions = {"time": time_description}
        for k, (name, unit, description) in enumerate(input_names):
            columns[name], units[name], descriptions[name] = inputs[:, k], unit, description
        for i, spec in enumerate(specs):
            columns[spec.name], units[spec.name], descriptions[spec.name] = values[:, i], spec.unit, spec.description
        return cls(columns, units, descriptions, wall_time)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    @property
    def real_time_factor(self) -> float:
        """Simulated time per wall-clock time (> 1: faster than real time)."""
        t = self.columns["time"]
        span = float(t[-1] - t[0]) if len(t) > 1 else 0.0
        return span / self.wall_time if self.wall_time > 0.0 else math.inf

    def to_csv(self, path) -> Path:
        """Write the table as CSV with a ``name [unit]`` header; written to a temporary file
        first and renamed, so an interrupted write never leaves a truncated file."""
        path = Path(path)
        header = ",".join(f"{n} [{self.units[n]}]" for n in self.columns)
        data = np.column_stack([self.columns[n] for n in self.columns])
        with atomic_write(path) as f:
            np.savetxt(f, data, delimiter=",", header=header, comments="", fmt="%.9g")
        return path


    def to_mat(self, path) -> Path:
        """Write the table as a MATLAB v5 MAT-file (``scipy.io.savemat``): one variable per
        column (a column vector, SI units), and the structs ``units`` and ``descriptions``
        with one field per column. Written atomically, like :meth:`to_csv`."""
        from scipy.io import savemat

        path = Path(path)
        for name in self.columns:
            if not MAT_NAME.fullmatch(name):
                raise ValueError(f"column {name!r} is not a valid MATLAB variable name (at most 63 characters, "
                                 "a letter first, then letters, digits and underscores)")
        data = {name: np.asarray(values, dtype=float).reshape(-1, 1) for name, values in self.columns.items()}
        data["units"] = {name: self.units[name] for name in self.columns}
        data["descriptions"] = {name: self.descriptions.get(name, "") for name in self.columns}
        with atomic_write(path, "wb") as f:
            savemat(f, data, format="5", long_field_names=True, do_compression=True, oned_as="column")
        return path

    def write(self, path) -> Path:
        """Write the table in the format of ``path``'s extension, one of :data:`TABLE_FORMATS`
        (.csv: :meth:`to_csv`, .mat: :meth:`to_mat`); ValueError for any other."""
        suffix = Path(path).suffix.lower()
        if suffix not in TABLE_FORMATS:
            raise ValueError(f"{path}: unknown table format {suffix or '(no extension)'!r}; use one of "
                             + ", ".join(TABLE_FORMATS))
        return getattr(self, TABLE_FORMATS[suffix])(path)


#: results-table formats by file extension: the :class:`Results` method that writes each
TABLE_FORMATS = {".csv": "to_csv", ".mat": "to_mat"}
#: a MATLAB variable or struct field name
MAT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,62}")


#: [s] the wall time between progress reports a run aims at: it calls the model with as many
#: samples at once as fit (the lumped model runs them in one compiled call)
PROGRESS_PERIOD = 0.05


class _Constant:
    """A constant input [its SI unit] as a function of time; its samples are filled at once."""

    def __init__(self, value: float):
        self.value = float(value)

    def __call__(self, t: float) -> float:
        return self.value

    def samples(self, times: np.ndarray) -> np.ndarray:
        return np.full(times.shape, self.value)


_zero = _Constant(0.0)


def _signal(value: Signal, name: str) -> Callable[[float], float]:
    if callable(value):
        return value
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number or a function of time, got {value!r}")
    return _Constant(value)


def simulate(layout: Layout | str | os.PathLike | None = None, *, crank_speed: Signal | None = None,
             rpm: float | None = None, water_pump_torque: Signal = 0.0, inputs: Mapping[str, Signal] | None = None,
             t_end: float = 1.0, output_interval: float = 1e-3, settle_time: float | None = None,
             progress: Callable[[float], None] | None = None, drive: BeltDrive | None = None) -> Results:
    """Simulate a drive from its steady running state.

    Give the crank speed either as ``crank_speed`` [rad/s] (number or function of time t [s])
    or as constant ``rpm``. ``water_pump_torque`` [N m] likewise. ``inputs`` gives the
    layout's other inputs by name (:mod:`belt_fmu.model.inputs`: ``{pulley}_torque`` of the
    accessories with ``load = "input"``, ``engine_torque`` of a torque-driven crank), each a
    number or a function of time, 0 where not given (a function with a ``samples(times)``
    method, as :func:`belt_fmu.sweep.crank_speed_signal` gives, is evaluated at every sample
    time in one call). A torque-driven crank starts at
    ``crank_speed`` or ``rpm`` if given (numbers), else at the layout's
    ``initial_crank_speed_rad_per_s``. Outputs are sampled every ``output_interval`` [s] up
    to ``t_end`` [s]; ``progress(t)`` is called after each. ``drive`` reuses an already built
    :class:`BeltDrive` of the same layout. The layout's
    ``[drive] model`` selects the model (:func:`belt_fmu.model.system.make_drive`).
    """
    if drive is None:
        if not isinstance(layout, Layout):
            layout = load_layout(layout)
        drive = make_drive(layout)
    if crank_speed is not None and rpm is not None or (crank_speed is None and rpm is None
                                                       and not drive.torque_driven_crank):
        raise ValueError("give exactly one of crank_speed [rad/s] and rpm")
    if rpm is not None:
        if not isinstance(rpm, (int, float)) or not math.isfinite(rpm):
            raise ValueError(f"rpm must be a finite number, got {rpm!r}")
        crank_speed = rpm * RPM
    if drive.torque_driven_crank and callable(crank_speed):
        raise ValueError("crank_speed of a torque-driven crank is its start speed, a number [rad/s]; its speed "
                         "follows from the engine_torque input")
    crank = _signal(0.0 if crank_speed is None else crank_speed, "crank_speed")
    torque = _signal(water_pump_torque, "water_pump_torque")
    signals = {name: _signal(value, name) for name, value in (inputs or {}).items()}
    if not (t_end > 0.0 and math.isfinite(t_end)):
        raise ValueError(f"t_end must be a finite time > 0 s, got {t_end!r}")
    if not (0.0 < output_interval <= t_end):
        raise ValueError(f"output_interval must be in (0, t_end], got {output_interval!r}")
    if (problem := table_problem(t_end, output_interval, table_columns(drive.layout))) is not None:
        raise ValueError(problem)
    kwargs = {} if settle_time is None else {"settle_time": settle_time}
    drive.reset(None if crank_speed is None else crank(0.0), torque(0.0), **kwargs,
                **{name: f(0.0) for name, f in signals.items()})

    def signal(j, spec):
        if j == 0 and not drive.torque_driven_crank:
            return crank
        return torque if j == 1 else signals.get(spec.name, _zero)

    n_out = int(round(t_end / output_interval))
    # the output interval itself where it divides t_end, as a master's fixed step would be
    interval = output_interval if abs(n_out * output_interval - t_end) <= 1e-9 * t_end else t_end / n_out
    times = np.arange(n_out + 1) * interval
    # the inputs at every sample time; sample k's interval runs at those of its start
    samples = np.empty((n_out + 1, len(drive.inputs)))
    for j, spec in enumerate(drive.inputs):
        f = signal(j, spec)
        # a signal with a ``samples(times)`` method evaluates them at once (the sweep's crank
        # speed: one call per sample took an eighth of a lumped sweep)
        samples[:, j] = f.samples(times) if hasattr(f, "samples") else [f(t) for t in times]
    table = np.empty((n_out + 1, len(drive.specs)))  # in the order of drive.specs
    table[0] = drive.output_values
    wall = 0.0
    done = 0
    chunk = 1  # samples per call: doubled while a call takes less than PROGRESS_PERIOD
    while done < n_out:
        stop = min(n_out, done + chunk)
        start = time.perf_counter()
        drive.advance_sampled(interval, samples[done:stop], table[done + 1:stop + 1])
        elapsed = time.perf_counter() - start
        wall += elapsed
        done = stop
        if elapsed < PROGRESS_PERIOD:
            chunk *= 2
        if progress is not None:
            progress(times[done])
    return Results.from_samples(times, samples, drive.specs, table, wall, columns=input_columns(drive.inputs))
