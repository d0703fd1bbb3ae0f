"""Static equilibrium of the automatic tensioner (docs/references.md R7, [Scania thesis] 4.3).

The default drive at rest, with the arm's Coulomb friction removed (it could hold the arm
anywhere within its band) and a preload that does not match the pretension, started with the
arm 10 mrad off: the dynamic model must come to rest where the spring torque (preload + rate
x deflection) balances the moment of the tensioner pulley's hub load about the pivot, and
that hub load must be the vector sum of the two span tensions along the spans.
"""
import dataclasses

import numpy as np
import pytest

from belt_fmu import load_layout
from belt_fmu.model.outputs import span_elements
from belt_fmu.model.system import BeltDrive


def test_arm_comes_to_rest_in_torque_balance():
    layout = load_layout()
    tensioner = dataclasses.replace(layout.tensioner, friction_torque_Nm=0.0, friction_torque_return_Nm=0.0,
                                    preload_Nm=20.0)
    drive = BeltDrive(dataclasses.replace(layout, tensioner=tensioner))
    drive.reset(0.0, 0.0, settle_time=0.0)
    drive.views.arm[0] += 0.01
    drive.advance(0.6, 0.0, 0.0)
    tensioner = drive.parameters.tensioner[0]
    psi, rate = drive.views.arm
    assert abs(rate) < 1e-3  # at rest

    t = drive.parameters.roles[0]["tensioner"]
    arm = drive.arrays.centers[t] - np.array([tensioner["pivot_x"], tensioner["pivot_y"]])
    hub = drive.arrays.hub_force[t]
    belt_moment = arm[0] * hub[1] - arm[1] * hub[0]
    # preload + rate x deflection, written out here as an independent check of the kernel's
    deflection = psi - tensioner["installed_angle"]
    spring = tensioner["spring_sense"] * tensioner["spring_preload"] - tensioner["spring_rate"] * deflection
    assert abs(spring) == pytest.approx(20.0, rel=0.1)  # the spring is really loaded
    assert belt_moment == pytest.approx(-spring, rel=0.01)

    # hub load = span tensions along the spans (static: no centrifugal term), the span
    # directions taken from the belt itself: with two nodes on this small pulley the polygon
    # tilts the spans by about a degree from the ideal tangents
    out = drive.outputs()
    spans = span_elements(drive.views.q, drive.current_path())
    direction = drive.arrays.element_direction
    along_in = direction[spans[t - 1]].mean(axis=0)  # travel direction of the arriving span
    along_out = direction[spans[t]].mean(axis=0)
    expected = (-out["span_tension_crank_tensioner"] * along_in / np.hypot(*along_in)
                + out["span_tension_tensioner_alternator1"] * along_out / np.hypot(*along_out))
    assert np.hypot(*(hub - expected)) < 0.01 * np.hypot(*expected)
