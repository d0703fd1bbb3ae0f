"""Campbell diagram: the drive's natural frequencies against engine speed, with the engine
orders that excite them.

At each crank speed the drive is linearized about its own operating point
(:mod:`belt_fmu.analysis.modes`): span tensions, the tensioner's position and the belt speed
change with speed, and with them the frequencies (the transverse ones fall as the belt runs
faster, Wickert and Mote 1990). An engine order q excites at ``f = q n / 60`` [Hz] at crank
speed n [rpm]; where a mode's frequency curve crosses an order line that mode can resonate.
Crossings are found between neighbouring speeds by linear interpolation of
``f(n) - q n / 60`` along each mode's curve (:func:`branches` says how modes are followed
from speed to speed).

The speeds run on the local cores as the sweep's do (:mod:`belt_fmu.sweep.executors`):
'forkserver' worker processes that load the compiled kernels from numba's disk cache.
"""
from __future__ import annotations

import csv
import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..files import atomic_write

#: a mode's curve continues to the next speed only if its frequency changes by less than this
#: fraction (else it is another mode of the same class)
MAX_STEP_CHANGE = 0.15
#: a worker's drive, reused across the speeds it computes (building one solves the belt's
#: rest length): keyed by the layout, which is hashable and compares by value
_DRIVES: dict = {}


@dataclass(frozen=True)
class SpeedModes:
    """The modes found at one crank speed, or the error that stopped them."""

    rpm: float
    frequencies: np.ndarray  # [Hz], ascending
    damping_ratios: np.ndarray  # [-]
    classifications: tuple[str, ...]
    error: str = ""


@dataclass(frozen=True)
class Crossing:
    rpm: float
    order: float
    mode: int  # 1-based index at that speed
    classification: str
    frequency: float  # [Hz]
    damping_ratio: float  # [-] of the mode at the nearer speed


@dataclass(frozen=True)
class Campbell:
    speeds: tuple[SpeedModes, ...]
    orders: tuple[float, ...]
    crossings: tuple[Crossing, ...]

    @property
    def failures(self) -> list[SpeedModes]:
        return [s for s in self.speeds if s.error]


def speed_modes(layout, rpm: float, count: int, water_pump_torque: float, arm_friction: str,
                settle_time: float | None, excitation=None) -> SpeedModes:
    """The ``count`` lowest modes at ``rpm``; an expected failure (no steady running state,
    divergence) is returned as the error, so one bad speed does not stop the diagram.
    ``arm_friction`` "excited": the equivalent damping of the arm friction under
    ``excitation`` (:func:`belt_fmu.analysis.response.excited_arm_friction`) at this speed."""
    from ..model.initialization import InitializationError
    from ..model.system import DivergenceError, make_drive
    from .linearization import linearization_layout
    from .modes import modes
    from .operating_point import operating_point
    from .response import excited_arm_friction

    layout = linearization_layout(layout)
    try:
        drive = _DRIVES.get(layout)
        if drive is None:
            drive = _DRIVES.setdefault(layout, make_drive(layout))
        if layout.drive.model == "lumped":  # the lumped model's own modes
            from .lumped_linearization import lumped_modes

            _, found = lumped_modes(drive, rpm, water_pump_torque, count, arm_friction, excitation)
        else:
            point = operating_point(layout, rpm, water_pump_torque, settle_time, drive=drive, statistics=False)
            if arm_friction == "excited":
                arm_friction = excited_arm_friction(point, excitation)
            found = modes(point, count, arm_friction)
    except (InitializationError, DivergenceError, ValueError) as err:
        return SpeedModes(rpm, np.zeros(0), np.zeros(0), (), f"{type(err).__name__}: {err}")
    return SpeedModes(rpm, found.frequencies, np.array([m.damping_ratio for m in found.modes]),
                      tuple(m.classification for m in found.modes))


def _speed_modes(args):
    return speed_modes(*args)


def campbell(layout, rpms, orders, count: int = 12, water_pump_torque: float = 0.0, arm_friction: str = "stuck",
             settle_time: float | None = None, workers: int = 1, progress=None, excitation=None) -> Campbell:
    """The Campbell diagram of ``layout`` over crank speeds ``rpms`` [rpm] with the engine
    ``orders``: the ``count`` lowest modes at each speed, on ``workers`` local processes;
    ``progress(done, total)`` is called as speeds finish. ``arm_friction``: stuck, sliding, or
    excited by ``excitation`` (:func:`speed_modes`)."""
    rpms = [float(r) for r in rpms]
    jobs = [(layout, rpm, count, water_pump_torque, arm_friction, settle_time, excitation) for rpm in rpms]
    results = []
    if workers > 1 and len(jobs) > 1:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if context.get_start_method() == "forkserver":
            context.set_forkserver_preload(["belt_fmu.analysis.modes", "belt_fmu.model.system"])
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            # contiguous blocks of speeds per worker: each worker's drive starts near its last state
            chunk = max(1, math.ceil(len(jobs) / workers))
            for result in pool.map(_speed_modes, jobs, chunksize=chunk):
                results.append(result)
                if progress is not None:
                    progress(len(results), len(jobs))
    else:
        for job in jobs:
            results.append(speed_modes(*job))
            if progress is not None:
                progress(len(results), len(jobs))
    results.sort(key=lambda r: r.rpm)
    return Campbell(tuple(results), tuple(float(q) for q in orders), tuple(crossings(results, orders)))


@dataclass(frozen=True)
class Branch:
    """One mode followed over speed: at each of its speeds, the index among that speed's
    modes (ascending rpm)."""

    classification: str
    points: tuple[tuple[SpeedModes, int], ...]

    @property
    def rpm(self) -> np.ndarray:
        return np.array([s.rpm for s, _ in self.points])

    @property
    def frequency(self) -> np.ndarray:
        return np.array([s.frequencies[k] for s, k in self.points])

    @property
    def damping_ratio(self) -> np.ndarray:
        return np.array([s.damping_ratios[k] for s, k in self.points])


def branches(speeds) -> list[Branch]:
    """The modes' curves over speed: from one speed to the next, each mode continues as the
    mode of the same classification nearest in frequency, if within :data:`MAX_STEP_CHANGE` of
    it and not taken by a nearer one; a mode without a continuation ends its curve, one
    without a predecessor starts one (where a mode changes class, or two of a class meet)."""
    good = [s for s in speeds if not s.error]
    done, open_ = [], {}
    for lo, hi in zip([None, *good], good):
        pairs = []
        if lo is not None:
            for k_lo, (f_lo, c) in enumerate(zip(lo.frequencies, lo.classifications)):
                for k_hi, (f_hi, c_hi) in enumerate(zip(hi.frequencies, hi.classifications)):
                    if c_hi == c and abs(f_hi - f_lo) <= MAX_STEP_CHANGE * f_lo:
                        pairs.append((abs(f_hi - f_lo), k_lo, k_hi))
        following = {}
        for _, k_lo, k_hi in sorted(pairs):
            if k_lo in open_ and k_lo not in following and k_hi not in following.values():
                following[k_lo] = k_hi
        continued = {}
        for k_lo, points in open_.items():
            if k_lo in following:
                continued[following[k_lo]] = points + [(hi, following[k_lo])]
            else:
                done.append(points)
        for k_hi in range(len(hi.frequencies)):
            continued.setdefault(k_hi, [(hi, k_hi)])
        open_ = continued
    done.extend(open_.values())
    return [Branch(points[0][0].classifications[points[0][1]], tuple(points)) for points in done]


def crossings(speeds, orders) -> list[Crossing]:
    """Where a mode's curve (:func:`branches`) meets an order line between neighbouring
    speeds (module docstring); ``mode`` is its index among all modes at the nearer speed."""
    found = []
    for q in orders:
        for branch in branches(speeds):
            for (lo, k_lo), (hi, k_hi) in zip(branch.points, branch.points[1:]):
                a = lo.frequencies[k_lo] - q * lo.rpm / 60.0
                b = hi.frequencies[k_hi] - q * hi.rpm / 60.0
                if a == 0.0 or a * b < 0.0:
                    t = a / (a - b)
                    rpm = lo.rpm + t * (hi.rpm - lo.rpm)
                    nearer, k = (lo, k_lo) if t < 0.5 else (hi, k_hi)
                    found.append(Crossing(float(rpm), float(q), k + 1, branch.classification, q * rpm / 60.0,
                                          float(nearer.damping_ratios[k])))
    return sorted(found, key=lambda c: (c.rpm, c.order))


def write_csv(result: Campbell, path) -> None:
    """One row per speed and mode: rpm, mode, frequency [Hz], damping ratio, classification."""
    with atomic_write(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["rpm", "mode", "frequency [Hz]", "damping ratio [1]", "classification", "error"])
        for s in result.speeds:
            if s.error:
                writer.writerow([f"{s.rpm:g}", "", "", "", "", s.error])
            for k, (f_, z, c) in enumerate(zip(s.frequencies, s.damping_ratios, s.classifications)):
                writer.writerow([f"{s.rpm:g}", k + 1, f"{f_:.6g}", f"{z:.4g}", c, ""])
