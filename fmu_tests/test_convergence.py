"""Mesh and step convergence of the discretized model on the built-in drive.

The belt's axial, bending and shear forces are made stable at any step
(belt_fmu.model.belt.implicit_belt_correction: backward Euler on the axial forces, a
stiffness-proportional mass on the bending and shear) wherever the explicit bending would
limit the step (integrator.choose_bending_scheme: above about 155 elements on the built-in
drive; at 150 only the axial forces are implicit), so the model takes the same step, 2e-5 s
(stability.MAX_STEP: the contact spring, not the element length, is the explicit limit), at
150, 300 and 600 elements; before, 600 elements needed 1.1e-6 s. These tests refine the
built-in drive at that step and check that the mean loads converge and that the step is
not what sets them.

Observed (800 rpm, water pump 2 N m, means over 0.05 s after the default reset; 2026-11-24):
the hub loads and span tensions change by 1.1-2.7 % from 150 elements (explicit bending) to
300 and by 0.003-0.27 % (0.02-1.6 N) from 300 to 600, an observed order log2(d1 / d2) of
2.5-8.4 (median 3.4); the tensioner angle by 3.5e-3 rad, then 6e-5 rad. The mean crank
torque, the power the drive takes, converges more slowly: 17.029, 16.932, 16.869 N m
(-0.57 %, then -0.37 %: order 0.6; 1000 and 2000 elements: 16.857 and 16.852). A quarter of
the step at 600 elements moves the loads by at most 0.062 % (0.34 N), the crank torque by
0.02 % and the tensioner angle by 7e-5 rad. The block solve at 150 elements gives the
explicit bending's loads within 0.95 % (the tensioner's hub load; the others within 0.43 %)
and its crank torque within 0.003 %.

Before the stiffness-proportional mass (2026-11-24) the block solve put backward Euler on the
bending, whose numerical damping dt EI is four times the belt's own c_b at 2e-5 s: a
quarter of the step then moved the crank torque by 0.59 % at 600 elements (and the loads by
0.11 %), and at 150 elements the block solve's crank torque was 1.2 % above the explicit
bending's, its loads 0.4-2.2 % lower; the tolerances on the crank torque below would fail.
"""
from __future__ import annotations

import dataclasses
import math

import pytest

from belt_fmu import BeltDrive, load_layout

RPM = 2.0 * math.pi / 60.0
SPEED = 800.0 * RPM  # [rad/s]
TORQUE = 2.0  # water-pump load [N m]
WINDOW = 0.05  # [s] the outputs are averaged over this run after the reset
CHUNK = 1e-3  # [s] communication step of the averaging


def mean_loads(elements: int, step_fraction: float = 1.0, implicit_bending: int | None = None) -> tuple[dict, float]:
    """Means over :data:`WINDOW` of the hub-load magnitudes, span tensions [N], tensioner
    angle [rad] and crank torque [N m] of the built-in drive with ``elements`` belt elements, at ``step_fraction``
    times the step the model chooses, with the bending scheme it chooses unless
    ``implicit_bending`` (0 or 1) says; and that step [s]."""
    layout = load_layout()
    layout = dataclasses.replace(layout, belt=dataclasses.replace(layout.belt, n_elements=elements))
    drive = BeltDrive(layout)
    drive.dt *= step_fraction
    if implicit_bending is not None:
        drive.parameters.belt[0]["implicit_bending"] = implicit_bending
    drive.reset(SPEED, TORQUE)
    chunks = round(WINDOW / CHUNK)
    means: dict[str, float] = {}
    for _ in range(chunks):
        drive.advance(CHUNK, SPEED, TORQUE)
        for key, value in drive.outputs().items():
            pulley_load = key.startswith("hub_force_") and not key.startswith(("hub_force_x_", "hub_force_y_"))
            span = key.startswith("span_tension_") and not key.endswith(("_min", "_max"))
            if pulley_load or span or key in ("tensioner_angle", "crank_torque"):
                means[key] = means.get(key, 0.0) + value / chunks
    return means, drive.dt


@pytest.fixture(scope="module")
def refinement():
    """{elements: (means, step)} at 150, 300 and 600 elements, at the model's step."""
    return {n: mean_loads(n) for n in (150, 300, 600)}


def test_the_step_does_not_depend_on_the_element_length(refinement):
    """The step is the contact's (stability.MAX_STEP on the built-in drive) at every mesh."""
    steps = [step for _, step in refinement.values()]
    assert steps == [steps[0]] * 3 and steps[0] == pytest.approx(2e-5)


def test_mean_loads_converge_under_refinement(refinement):
    """Halving the elements twice: each mean load's change from 300 to 600 elements is at most
    a quarter of its change from 150 to 300 (an observed order of at least 2; observed 2.5-8.4,
    module docstring; second order is what the polygonal wrap, chord sag ~ l0^2 / R, gives),
    and at most 0.5 % (forces) or 1e-3 rad (tensioner angle) (observed 0.27 % and 6e-5 rad):
    300 elements resolve the built-in drive's mean loads to well under the 1-3 % that 150
    elements, the default, are off. Every mean load, the hub loads of the seven pulleys, the
    seven span tensions and the tensioner angle, is checked. The crank torque converges
    slowly (observed order 0.6) but monotonically: its second change is smaller than the
    first, in the same direction, and at most 0.5 % (observed 0.37 %)."""
    coarse, medium, fine = (refinement[n][0] for n in (150, 300, 600))
    assert len(coarse) == 16
    for key in coarse:
        first, second = medium[key] - coarse[key], fine[key] - medium[key]
        if key == "crank_torque":
            assert first * second > 0.0 and abs(second) < abs(first), key
        else:
            assert abs(second) <= 0.25 * abs(first), key
        if key == "tensioner_angle":
            assert abs(second) <= 1e-3, key
        else:
            assert abs(second) <= 5e-3 * abs(fine[key]), key


def test_a_larger_step_does_not_change_the_mean_loads(refinement):
    """600 elements at the model's step (2e-5 s, 18 times what the explicit bending needed)
    against a quarter of it: the mean loads agree within 0.5 %, the tensioner angle within
    1e-3 rad (observed 0.062 % and 7e-5 rad) and the crank torque within 0.2 % (observed
    0.02 %; with backward Euler on the bending, 0.59 %, module docstring). The scheme is first
    order, so the step's own error is about 4/3 of this difference; 0.5 % keeps it well below
    the 1-3 % mesh error of the default 150 elements, with room for the window's transient,
    and 0.2 % on the crank torque, the drive's losses, keeps it below their 300 to 600-element
    mesh change."""
    coarse_step, step = refinement[600]
    fine_step, small = mean_loads(600, 0.25)
    assert small == pytest.approx(0.25 * step)
    for key in coarse_step:
        if key == "tensioner_angle":
            assert fine_step[key] == pytest.approx(coarse_step[key], abs=1e-3), key
        elif key == "crank_torque":
            assert fine_step[key] == pytest.approx(coarse_step[key], rel=2e-3), key
        else:
            assert fine_step[key] == pytest.approx(coarse_step[key], rel=5e-3), key


def test_implicit_and_explicit_bending_agree_within_the_mesh_error(refinement):
    """At 150 elements, where the explicit bending is stable at the step and the model keeps
    it, the block solve (stiffness-proportional mass on the bending) gives mean loads that
    differ from it by less than half of what refining to 300 elements changes them, each
    load (observed at most 0.35 of it: the tensioner's hub load 0.95 % lower where refining
    raises it 2.7 %; the tensioner angle 5e-5 rad off, refining: 3.5e-3 rad), and the same
    crank torque within 0.1 % (observed 0.003 %; backward Euler on the bending gave 1.2 %
    more, module docstring). So the 300 and 600-element results come from a scheme that
    agrees with the explicit one to well within the 150-element mesh error."""
    explicit, step = refinement[150]
    medium = refinement[300][0]
    implicit, same_step = mean_loads(150, implicit_bending=1)
    assert same_step == step
    for key in explicit:
        mesh = abs(medium[key] - explicit[key])
        assert abs(implicit[key] - explicit[key]) < 0.5 * mesh, key
    assert implicit["crank_torque"] == pytest.approx(explicit["crank_torque"], rel=1e-3)
