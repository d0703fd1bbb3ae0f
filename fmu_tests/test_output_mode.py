"""Averaged outputs (``[drive] output_mode = "average"``): each output the mean over the last
communication interval, a running time-integral by the trapezoidal rule over the internal
steps (belt_fmu.model.integrator.advance_averaged, belt_fmu.model.lumped.run).
"""

import numpy as np
import pytest

from belt_fmu import load_layout
from belt_fmu.model.outputs import pulley_output_name
from belt_fmu.model.system import internal_steps, make_drive
from belt_fmu.units import RPM

CRANK = 2000 * RPM
PUMP = 2.0
INTERVAL = 1e-3


def drive_of(model: str, output_mode: str, settle_time: float = 0.02):
    layout = load_layout()
    layout = layout.with_drive(model=model, output_mode=output_mode)
    drive = make_drive(layout)
    drive.reset(CRANK, PUMP, settle_time=settle_time)
    return drive


@pytest.mark.parametrize("model", ["discretized", "lumped"])
def test_averaged_crank_angle_is_the_mean_of_the_uniform_rotation(model):
    """The crank turns at the input speed, so its angle is linear in time and its mean over
    an interval (t - h, t) is exactly theta(t0) + omega (t - t0 - h / 2): the trapezoidal rule
    is exact for it, so the averaged output equals it to round-off (1e-12 relative; the angle
    is a sum of at most 100 steps of omega dt per interval). A rule using one end of each
    step would be omega dt / 2 off (about 1e-3 rad here, 1e-2 relative), and the sample
    (the angle at t) omega h / 2 (0.1 rad)."""
    drive = drive_of(model, "average")
    assert drive.output_mode == "average"
    name = pulley_output_name("angle", drive.pulley_names[drive.geometry.crank])
    start = drive.outputs()[name]  # no interval yet: sampled
    for k in range(1, 4):
        drive.advance(INTERVAL, CRANK, PUMP)
        expected = start + CRANK * (k * INTERVAL - 0.5 * INTERVAL)
        assert drive.outputs()[name] == pytest.approx(expected, rel=1e-12, abs=1e-12)
        # and not the angle at the interval's end
        assert abs(drive.outputs()[name] - (start + CRANK * k * INTERVAL)) > 0.4 * CRANK * INTERVAL


@pytest.mark.parametrize("model", ["discretized", "lumped"])
def test_averaging_changes_no_state_and_restores_exactly(model):
    """Averaging only reads the steps: the drive's state after a run is the sampled run's,
    bit for bit; get_state holds the running integral, so a restored drive reports the same
    averaged outputs and continues with the same ones, bit for bit."""
    sampled, averaged = drive_of(model, "sample"), drive_of(model, "average")
    for drive in (sampled, averaged):
        for _ in range(3):
            drive.advance(INTERVAL, CRANK, PUMP)
    assert np.array_equal(sampled.y, averaged.y)
    assert not np.array_equal(sampled.output_values, averaged.output_values)
    saved, reported = averaged.get_state(), averaged.output_values.copy()
    rows = []
    for _ in range(2):
        averaged.advance(INTERVAL, CRANK + 1.0, PUMP)
        rows.append(averaged.output_values.copy())
    averaged.set_state(saved)
    assert np.array_equal(averaged.output_values, reported)
    for row in rows:
        averaged.advance(INTERVAL, CRANK + 1.0, PUMP)
        assert np.array_equal(averaged.output_values, row)


def _bearing_force_samples(step: float, count: int) -> np.ndarray:
    """The sampled bearing force every ``step`` [s], ``count`` + 1 values from the start."""
    drive = drive_of("discretized", "sample")
    values = [drive.outputs()["bearing_force"]]
    for _ in range(count):
        drive.advance(step, CRANK, PUMP)
        values.append(drive.outputs()["bearing_force"])
    return np.array(values)


def test_averaged_bearing_force_is_the_mean_of_the_finely_sampled_one():
    """Discretized belt at 2000 rpm, 1 ms intervals (the polygon ripple is about 2 kHz: sampled
    at 1 kHz it aliases). Sampled at every internal step instead (the same steps: an interval
    of one internal step is one step of that length, and reading the outputs changes no
    state), the trapezoidal rule over each interval's samples is the averaged output to
    round-off (1e-9 relative; the samples are the values the averaging adds, summed in
    another order). The ripple is there (its range over the run is more than a third of the
    mean force), so the comparison can fail. Samples every 0.1 ms would not do as the
    reference: at 5 per polygon period the ripple's 5th harmonic aliases onto their mean
    (measured: their 10-sample means up to 25 % off the averaged force)."""
    intervals = 8
    drive = drive_of("discretized", "average")
    averaged = []
    for _ in range(intervals):
        drive.advance(INTERVAL, CRANK, PUMP)
        averaged.append(drive.outputs()["bearing_force"])
    averaged = np.array(averaged)

    n, dt = internal_steps(INTERVAL, drive.dt)
    fine = _bearing_force_samples(dt, n * intervals)
    trapezoid = [np.trapezoid(fine[k * n:(k + 1) * n + 1], dx=dt) / INTERVAL for k in range(intervals)]
    # from the second interval: the sample at the start reports the forces of a step as long
    # as the settling's steps, the averaging those of the interval's steps
    assert averaged[1:] == pytest.approx(trapezoid[1:], rel=1e-9)
    assert np.ptp(fine) > 0.35 * fine.mean()
