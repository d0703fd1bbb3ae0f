"""Run a drive over time and collect its outputs in a results table.

``simulate`` is the standalone counterpart of the FMU: same model, same outputs, inputs given
as constants or functions of time, held constant over each output interval (as a
co-simulation master holds them over a communication step).
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Union

import numpy as np

from .files import atomic_write
from .layout import Layout, load_layout
from .model.system import BeltDrive, make_drive
from .units import RPM

Signal = Union[float, Callable[[float], float]]
#: the inputs' columns of a results table: name, unit, description
INPUT_COLUMNS = (("crank_speed_input", "rad/s", "crank speed input"),
                 ("water_pump_torque_input", "N.m", "water-pump load torque input"))


@dataclass
class Results:
    """Output time series: ``columns[name]`` is an array over ``columns["time"]``."""

    columns: dict
    units: dict
    descriptions: dict = field(default_factory=dict)
    wall_time: float = 0.0  # [s] spent integrating (reset excluded)

    @classmethod
    def from_samples(cls, times, inputs, specs, values, wall_time: float = 0.0,
                     time_description: str = "simulation time") -> "Results":
        """The table of a run: ``time`` [s] (``times``, (m,)), the inputs it was driven with
        (``inputs``, (m, 2): crank speed [rad/s], water-pump torque [N m]) and one column per
        output of ``specs`` (objects with ``name``, ``unit``, ``description``, as
        :func:`belt_fmu.model.outputs.output_specs` gives) from ``values`` (m, len(specs))."""
        inputs = np.asarray(inputs)
        values = np.asarray(values)
        columns = {"time": np.asarray(times)}
        units = {"time": "s"}
        descriptions = {"time": time_description}
        for k, (name, unit, description) in enumerate(INPUT_COLUMNS):
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


def _signal(value: Signal, name: str) -> Callable[[float], float]:
    if callable(value):
        return value
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number or a function of time, got {value!r}")
    return lambda t: float(value)


def simulate(layout: Layout | str | os.PathLike | None = None, *, crank_speed: Signal | None = None,
             rpm: float | None = None, water_pump_torque: Signal = 0.0, t_end: float = 1.0,
             output_interval: float = 1e-3, settle_time: float | None = None,
             progress: Callable[[float], None] | None = None, drive: BeltDrive | None = None) -> Results:
    """Simulate a drive from its steady running state.

    Give the crank speed either as ``crank_speed`` [rad/s] (number or function of time t [s])
    or as constant ``rpm``. ``water_pump_torque`` [N m] likewise. Outputs are sampled every
    ``output_interval`` [s] up to ``t_end`` [s]; ``progress(t)`` is called after each.
    ``drive`` reuses an already built :class:`BeltDrive` of the same layout. The layout's
    ``[drive] model`` selects the model (:func:`belt_fmu.model.system.make_drive`).
    """
    if (crank_speed is None) == (rpm is None):
        raise ValueError("give exactly one of crank_speed [rad/s] and rpm")
    if rpm is not None:
        if not isinstance(rpm, (int, float)) or not math.isfinite(rpm):
            raise ValueError(f"rpm must be a finite number, got {rpm!r}")
        crank_speed = rpm * RPM
    crank = _signal(crank_speed, "crank_speed")
    torque = _signal(water_pump_torque, "water_pump_torque")
    if not (t_end > 0.0 and math.isfinite(t_end)):
        raise ValueError(f"t_end must be a finite time > 0 s, got {t_end!r}")
    if not (0.0 < output_interval <= t_end):
        raise ValueError(f"output_interval must be in (0, t_end], got {output_interval!r}")
    if drive is None:
        if not isinstance(layout, Layout):
            layout = load_layout(layout)
        drive = make_drive(layout)
    kwargs = {} if settle_time is None else {"settle_time": settle_time}
    drive.reset(crank(0.0), torque(0.0), **kwargs)

    n_out = int(round(t_end / output_interval))
    times = np.arange(n_out + 1) * (t_end / n_out)
    specs = drive.specs
    table = np.empty((n_out + 1, len(specs)))
    inputs = np.empty((n_out + 1, 2))
    wall = 0.0
    for k, t in enumerate(times):
        if k > 0:
            start = time.perf_counter()
            drive.advance(t - times[k - 1], crank(times[k - 1]), torque(times[k - 1]))
            wall += time.perf_counter() - start
            if progress is not None:
                progress(t)
        table[k] = drive.output_values  # in the order of drive.specs
        inputs[k] = (crank(t), torque(t))
    return Results.from_samples(times, inputs, specs, table, wall)
