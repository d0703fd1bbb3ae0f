"""Post-processing of results as [Scania thesis] (section 7) prescribes, and the per-run metrics of an
engine-speed sweep (section 5.2, Figs. 5.4-5.5).

A belt of n elements meets a pulley like a chain: its speed and forces are modulated at the
polygon frequency ``f = R w n / l`` ([Scania thesis] eq. 4.14; docs/references.md R6), an artefact
of the discretization, not of the drive. Force signals are therefore low-pass filtered with a
cutoff of half that frequency before they are compared or reported.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .model.geometry import drive_polygon_frequency, polygon_frequency  # noqa: F401 (re-exported: read with the filter)
from .model.outputs import output_specs, statistic_name


def lowpass(signal, sample_interval_s: float, cutoff_hz: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass of ``signal`` sampled every ``sample_interval_s`` (a
    2-D ``signal``: each column)."""
    signal = np.asarray(signal, dtype=float)
    nyquist = 0.5 / sample_interval_s
    if not 0.0 < cutoff_hz < nyquist:
        raise ValueError(f"cutoff {cutoff_hz:.4g} Hz must lie between 0 and the Nyquist frequency "
                         f"{nyquist:.4g} Hz of the samples")
    from scipy.signal import sosfiltfilt  # here: scipy.signal takes 0.4 s to import, and most runs do not filter

    return sosfiltfilt(_butterworth(order, cutoff_hz / nyquist), signal, axis=0)


@functools.lru_cache(maxsize=64)
def _butterworth(order: int, cutoff: float) -> np.ndarray:
    """The low-pass's second-order sections at ``cutoff`` (a fraction of the Nyquist
    frequency): designed once, as a sweep's run filters every output alike (the design took
    half of a lumped run's filtering). scipy's filters take it writable and do not write it."""
    from scipy.signal import butter

    return butter(order, cutoff, output="sos")


def polygon_filter(signal, sample_interval_s: float, polygon_hz: float) -> np.ndarray:
    """Remove the polygon effect: low-pass at half the polygon frequency ([Scania thesis] section 7)."""
    return lowpass(signal, sample_interval_s, 0.5 * polygon_hz)


# ---------------------------------------------------------------------------------------------
# Metrics of a run over whole engine cycles ([Scania thesis] section 5.2, Figs. 5.4-5.5)
# ---------------------------------------------------------------------------------------------

#: a filtered signal is read at least this many cutoff periods away from the record's ends,
#: where the zero-phase filter's start and end transients have decayed (a 4th-order
#: Butterworth's impulse response decays by e per 1 / (2 pi fc sin(pi/8)) = 0.42 / fc, so 10
#: periods leave e^-24 ~ 4e-11 of an edge error)
FILTER_SETTLING_PERIODS = 10.0


@dataclass(frozen=True)
class Metric:
    """One per-run result: its name, unit and meaning."""

    name: str
    unit: str
    description: str


def filter_settling_time(cutoff_hz: float) -> float:
    """Time [s] a record must extend beyond the window read from the filtered signal."""
    return FILTER_SETTLING_PERIODS / cutoff_hz


#: the statistics a sweep reports of an output (the registry's ``Output.statistics``): how a
#: metric's description starts, and how it is computed from the filtered signal
STATISTICS = {"min": ("smallest", np.min), "max": ("largest", np.max), "mean": ("mean", np.mean)}


def _statistics(layout) -> list[tuple[Metric, str, str]]:
    """(metric, output name, statistic) of every output statistic a sweep reports, from the
    output registry (:mod:`belt_fmu.model.outputs`): the drive outputs', the spans' and the
    driven pulleys' (the crankshaft's speed is the input and its slip the reference)."""
    names = [p.name for p in layout.pulleys]
    specs = output_specs(names, layout.headline_pulley_name)
    driven = {p.name for p in layout.pulleys if p.role != "crankshaft"}
    # drive outputs, then spans, then pulleys: the table's column order
    order = [spec for spec in specs if spec.pulley is None and spec.span is None]
    order += [spec for spec in specs if spec.span is not None]
    order += [spec for spec in specs if spec.pulley in driven]
    return [(Metric(statistic_name(spec.name, stat), spec.unit, f"{STATISTICS[stat][0]} {spec.description}"),
             spec.name, stat)
            for spec in order for stat in spec.output.statistics]


def cycle_metric_specs(layout) -> list[Metric]:
    """The metrics :func:`cycle_metrics` reports for a drive of this layout, in table order:
    the polygon frequency and filter cutoff, the tensioner's (left out without a tensioner),
    then the statistics the output registry asks for."""
    specs = [
        Metric("polygon_frequency", "Hz", "polygon-effect frequency R w n / l at the mean crank speed "
                                          "([Scania thesis] eq. 4.14)"),
        Metric("filter_cutoff", "Hz", "low-pass cutoff applied to every signal: half the polygon frequency "
                                      "([Scania thesis] section 7)"),
    ]
    if layout.tensioner is not None:
        specs += [
            Metric("tensioner_amplitude", "rad", "tensioner arm angular amplitude: half the peak-to-peak "
                                                 "arm angle"),
            Metric("tensioner_amplitude_deg", "deg", "tensioner arm angular amplitude in degrees"),
            Metric("tensioner_angle_rel_mean", "rad", "mean arm angle from the installed position, CCW"),
            Metric("tensioner_cycle_change", "1", "largest change of the arm angle from one engine cycle to "
                                                  "the next over the last cycle, relative to its peak-to-peak "
                                                  "(small: the run reached a periodic state)"),
        ]
    return specs + [metric for metric, _, _ in _statistics(layout)]


def cycle_metrics(results, layout, crank_speed_rad_per_s: float, start: int, cycle_samples: int,
                  cycles: int) -> dict[str, float]:
    """Metrics of :func:`cycle_metric_specs` over ``cycles`` whole engine cycles of a run.

    ``results`` is a :class:`~belt_fmu.simulation.Results` sampled at a constant interval;
    the evaluation window is samples ``start`` to ``start + cycles * cycle_samples``
    (excluded), each cycle ``cycle_samples`` long. Every signal is first low-pass filtered at
    half the polygon frequency of the mean crank speed ``crank_speed_rad_per_s`` ([Scania thesis]
    section 7, :func:`polygon_filter`), forces as the thesis prescribes and the arm angle and
    slips alike (the engine orders lie far below the cutoff). The record must extend
    :func:`filter_settling_time` beyond the window at both ends. Amplitudes are half the
    peak-to-peak over the window; means are over whole cycles, so every crank angle counts once.
    """
    time = results["time"]
    interval = float(time[1] - time[0])
    stop = start + cycles * cycle_samples
    # the tensioner's cycle change compares the last cycle with the one before it
    first = min(start, stop - 2 * cycle_samples) if layout.tensioner is not None else start
    polygon_hz = drive_polygon_frequency(layout, crank_speed_rad_per_s)
    cutoff = 0.5 * polygon_hz
    margin = filter_settling_time(cutoff)
    if first < 0 or time[first] - time[0] < margin - 1e-12 or time[-1] - time[stop - 1] < margin - 1e-12:
        raise ValueError(f"the record, t = {time[0]:.4g} to {time[-1]:.4g} s, must extend {margin:.4g} s "
                         f"(filter settling) beyond t = {time[max(first, 0)]:.4g} to {time[stop - 1]:.4g} s")

    # every signal at once: filtered one by one, scipy's per-call set-up took as long as the
    # lumped model's run
    names = list(dict.fromkeys((["tensioner_angle", "tensioner_angle_rel"] if layout.tensioner is not None else [])
                               + [output for _, output, _ in _statistics(layout)]))
    columns = polygon_filter(np.column_stack([results[name] for name in names]), interval, polygon_hz)

    def filtered(name: str) -> np.ndarray:
        return columns[:, names.index(name)]

    metrics = {"polygon_frequency": polygon_hz, "filter_cutoff": cutoff}
    if layout.tensioner is not None:
        angle = filtered("tensioner_angle")
        amplitude = 0.5 * float(np.ptp(angle[start:stop]))
        change = np.abs(angle[stop - cycle_samples:stop] - angle[stop - 2 * cycle_samples:stop - cycle_samples])
        metrics.update(tensioner_amplitude=amplitude, tensioner_amplitude_deg=math.degrees(amplitude),
                       tensioner_angle_rel_mean=float(filtered("tensioner_angle_rel")[start:stop].mean()),
                       tensioner_cycle_change=float(change.max() / (2.0 * amplitude)) if amplitude > 0.0 else 0.0)
    signals = {}
    for metric, output, statistic in _statistics(layout):
        if output not in signals:
            signals[output] = filtered(output)[start:stop]
        metrics[metric.name] = float(STATISTICS[statistic][1](signals[output]))
    return metrics


# ---------------------------------------------------------------------------------------------
# Gross slip: a pulley the belt no longer drives
# ---------------------------------------------------------------------------------------------

#: a pulley whose slip, averaged over :data:`GROSS_SLIP_WINDOW`, exceeds this in magnitude
#: slips grossly: the belt slides on it instead of creeping. A poly-V drive's creep slip stays
#: within about 1-2 % (Gates, "Belt drive design manual"; the creep law's peak lies at 1 %,
#: Scania thesis (Vahedi 2012) section 5.2), and the friction laws saturate at 5 %.
GROSS_SLIP = 0.05
#: [s] averaging window of the gross-slip check: longer than the polygon ripple (~1 ms) and a
#: firing period at idle (~40 ms at 800 rpm, 4 cylinders) would make a squeal too short to see
GROSS_SLIP_WINDOW = 0.01


@dataclass(frozen=True)
class GrossSlip:
    """A pulley that slipped grossly during a run: when it started, the largest and the mean
    window-averaged slip (fractions; negative: the pulley overruns the belt)."""

    pulley: str
    start_s: float
    peak: float
    mean: float

    def __str__(self) -> str:
        return (f"gross slip of pulley {self.pulley}: from t = {self.start_s:.4g} s, up to {100 * self.peak:.3g} % "
                f"(mean over the run {100 * self.mean:.3g} %; beyond +-{100 * GROSS_SLIP:g} % the belt slides on "
                f"the pulley instead of driving it: its load torque is more than the belt can carry, or the drive "
                f"resonates)")


def gross_slips(results, layout, threshold: float = GROSS_SLIP, window_s: float = GROSS_SLIP_WINDOW) -> list[GrossSlip]:
    """The pulleys whose slip, averaged over ``window_s`` [s], exceeds ``threshold`` in
    magnitude at some time of ``results`` (a :class:`~belt_fmu.simulation.Results`)."""
    from .model.outputs import pulley_output_name

    time = np.asarray(results["time"])
    if len(time) < 2:
        return []
    width = max(1, min(len(time), int(round(window_s / float(time[1] - time[0])))))
    found = []
    for pulley in layout.pulleys:
        if pulley.role == "crankshaft":
            continue
        slip = np.asarray(results[pulley_output_name("slip", pulley.name)], dtype=float)
        averaged = np.convolve(slip, np.full(width, 1.0 / width), mode="valid")
        beyond = np.flatnonzero(~(np.abs(averaged) <= threshold))  # NaN counts as beyond
        if beyond.size:
            peak = averaged[np.nanargmax(np.abs(averaged))] if np.isfinite(averaged).any() else math.nan
            found.append(GrossSlip(pulley.name, float(time[beyond[0]]), float(peak), float(np.mean(slip))))
    return found
