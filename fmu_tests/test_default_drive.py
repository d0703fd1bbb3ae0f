"""The built-in drive is credible (docs/default-drive.md): it starts steady, and at idle
with the default crank speed irregularity the tensioner swings by a few degrees at most and
no pulley slips beyond creep.

The references here are the model's own settled state (steady start) and physical limits of
a production 6PK drive (a tensioner amplitude of a few degrees, creep slip below about 1 %:
Gates, "Belt drive design manual"; docs/default-drive.md), not numbers of the layout."""
from __future__ import annotations

import numpy as np
import pytest

from belt_fmu import load_layout, simulate
from belt_fmu.sweep import RunSettings, plan
from belt_fmu.sweep.executors import run_point

#: [deg] the README's promise: the mean tensioner angle over any 0.1 s window of the first
#: second lies within this of its settled value
STEADY_START_DEG = 0.05
#: [deg] "a few degrees at most": a production tensioner's arm swings by 1-3 deg at idle
MAX_AMPLITUDE_DEG = 3.0
#: creep slip of a poly-V belt stays within about 1 %; gross slip (squeal) starts beyond
MAX_MEAN_SLIP = 0.005


@pytest.mark.parametrize("rpm", [800.0, 2000.0])
def test_the_start_is_steady_for_the_tensioner_angle(rpm):
    """The mean arm angle over each 0.1 s window of the first second is within 0.05 deg of
    its settled value, the mean over 2.5-3 s (the slow drift of an arm whose friction the
    start ignored took 6 s to settle at 800 rpm and moved it by 0.5 deg)."""
    results = simulate(load_layout(), rpm=rpm, t_end=3.0, output_interval=1e-3)
    angle = np.degrees(results["tensioner_angle_rel"])
    t = results["time"]
    settled = angle[t >= 2.5].mean()
    windows = angle[1:1001].reshape(10, 100).mean(axis=1)
    assert np.abs(windows - settled).max() < STEADY_START_DEG


@pytest.mark.parametrize("rpm", [800.0, 1200.0])
def test_idle_and_the_first_resonance_swing_a_few_degrees_without_gross_slip(rpm):
    """At idle (800 rpm) and at the drive's first rotational resonance (about 1200 rpm with
    the 2nd-order irregularity, docs/default-drive.md), +-40 rpm: tensioner amplitude below
    3 deg and every pulley's mean slip within 0.5 %."""
    layout = load_layout()
    (run,) = plan(layout, [rpm], RunSettings()).runs
    metrics = run_point(run)
    assert metrics["tensioner_amplitude_deg"] < MAX_AMPLITUDE_DEG
    slips = {name: value for name, value in metrics.items() if name.startswith("slip_") and name.endswith("_mean")}
    assert slips and all(abs(value) < MAX_MEAN_SLIP for value in slips.values()), slips
