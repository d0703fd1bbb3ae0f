"""Coulomb bearing drag (``bearing_friction_torque_Nm``) on every pulley, idlers and the
tensioner pulley included, in both models.

Reference: torque balance. In steady running the tension rises by load torque / cord radius
across each driven pulley (Euler-Eytelwein with the belt's torque balance, docs/references.md
R4), and the crank carries the whole rise times its cord radius: a drag T_c,i on pulley i
adds T_c,i r_crank / r_i to the crank's mean torque, exactly, whatever the friction law."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from belt_fmu import load_layout, simulate
from belt_fmu.model.geometry import BeltPath

DRAG_NM = 0.1  # on each pulley but the crank: 0.1 N m, a sealed rolling bearing's drag
RPM = 800.0
T_END = 0.4  # [s] the run starts steady (its steady loads include the drag); mean over the last half


def with_drag(layout, drag):
    pulleys = tuple(p if p.role == "crankshaft" else dataclasses.replace(p, bearing_friction_torque_Nm=drag)
                    for p in layout.pulleys)
    return dataclasses.replace(layout, pulleys=pulleys)


def expected_rise(layout) -> float:
    """sum over the dragged pulleys of T_c r_crank / r_i [N m] (cord radii)."""
    radii = BeltPath.from_layout(layout).radii
    crank = layout.crank_index
    return sum(DRAG_NM * radii[crank] / radii[j] for j in range(len(radii)) if j != crank)


@pytest.mark.parametrize("model, tolerance", [
    # the lumped model's steady state is the torque balance up to creep: the belt runs over a
    # pulley up to 0.5 % slower than r w, and the crank torque carries the effective lever
    # ratios (measured: -0.08 %)
    ("lumped", 0.005),
    # the discretized belt's mean over 0.2 s also carries what the polygon effect's ripple
    # (+-1.4 N m at 800 Hz) leaves of 160 periods, and the belt sinks into each pulley by the
    # contact's compliance, which moves the levers (measured: +0.5 %)
    ("discretized", 0.02),
])
def test_bearing_drag_raises_the_crank_torque_by_the_torque_balance(model, tolerance):
    """Mean crank torque with 0.1 N m of drag on each of the built-in drive's 6 driven pulleys
    minus without: within 0.5 % (lumped) / 2 % (discretized) of sum(T_c r_crank / r_i) = 1.434 N m."""
    base = load_layout().with_drive(model=model)
    means = []
    for layout in (base, with_drag(base, DRAG_NM)):
        results = simulate(layout, rpm=RPM, t_end=T_END, output_interval=1e-3)
        late = results["time"] > 0.5 * T_END
        means.append(float(np.mean(results["crank_torque"][late])))
    rise = expected_rise(base)
    # by hand: cord radii crank 85 + 1.2 mm, back-side 35 + (4.5 - 1.2) mm (3 pulleys),
    # alternators 28 + 1.2 mm (2), water pump 50 + 1.2 mm
    assert rise == pytest.approx(DRAG_NM * 0.0862 * (3 / 0.0383 + 2 / 0.0292 + 1 / 0.0512), rel=1e-12)
    assert means[1] - means[0] == pytest.approx(rise, rel=tolerance), (means, rise)
