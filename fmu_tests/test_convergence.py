"""Mesh and step convergence of the discretized model on the built-in drive.

The belt's axial, bending and shear forces are linearly implicit
(belt_fmu.model.belt.implicit_belt_correction) wherever the explicit bending would limit the
step (integrator.choose_bending_scheme: above about 155 elements on the built-in drive; at
150 only the axial forces are implicit), so the model takes the same step, 2e-5 s
(stability.MAX_STEP: the contact spring, not the element length, is the explicit limit), at
150, 300 and 600 elements; before, 600 elements needed 1.1e-6 s. These tests refine the
built-in drive at that step and check that the mean loads converge and that the step is
not what sets them.

Observed (800 rpm, water pump 2 N m, means over 0.05 s after the default reset; 2026-11-23):
the hub loads and span tensions change by 1.3-2.6 % from 150 elements (explicit bending) to
300 and by 0.08-0.19 % (0.16-1.4 N) from 300 to 600, an observed order log2(d1 / d2) of
about 3-4 (the tensioner angle: 3.6e-3 rad, then 2e-6 rad; with the implicit bending at 150
too, 1.0-4.7 % and an order of 3.2-5.6, median 3.9); a quarter of the step at 600
elements moves them by at most 0.11 % (0.7 N) and the tensioner angle by 1.6e-4 rad. With
only the axial part implicit (600 elements at 1.1e-6 s) the 600-element means were within
0.12 % (0.8 N) and 2e-4 rad of these.
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
    """Means over :data:`WINDOW` of the hub-load magnitudes, span tensions [N] and tensioner
    angle [rad] of the built-in drive with ``elements`` belt elements, at ``step_fraction``
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
            if pulley_load or span or key == "tensioner_angle":
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
    a quarter of its change from 150 to 300 (an observed order of at least 2; observed 3.2-5.6,
    module docstring; second order is what the polygonal wrap, chord sag ~ l0^2 / R, gives),
    and at most 0.5 % (forces) or 1e-3 rad (tensioner angle) (observed 0.19 % and 2e-6 rad):
    300 elements resolve the built-in drive's mean loads to well under the 1-5 % that 150
    elements, the default, are off. Every mean load, the hub loads of the seven pulleys, the
    seven span tensions and the tensioner angle, is checked."""
    coarse, medium, fine = (refinement[n][0] for n in (150, 300, 600))
    assert len(coarse) == 15
    for key in coarse:
        first, second = medium[key] - coarse[key], fine[key] - medium[key]
        assert abs(second) <= 0.25 * abs(first), key
        if key == "tensioner_angle":
            assert abs(second) <= 1e-3, key
        else:
            assert abs(second) <= 5e-3 * abs(fine[key]), key


def test_a_larger_step_does_not_change_the_mean_loads(refinement):
    """600 elements at the model's step (2e-5 s, 18 times what the explicit bending needed)
    against a quarter of it: the mean loads agree within 0.5 % and the tensioner angle within
    1e-3 rad (observed 0.11 % and 1.6e-4 rad). The scheme is first order, so the step's own
    error is about 4/3 of this difference; 0.5 % keeps it well below the 1-5 % mesh error of
    the default 150 elements, with room for the window's transient."""
    coarse_step, step = refinement[600]
    fine_step, small = mean_loads(600, 0.25)
    assert small == pytest.approx(0.25 * step)
    for key in coarse_step:
        if key == "tensioner_angle":
            assert fine_step[key] == pytest.approx(coarse_step[key], abs=1e-3), key
        else:
            assert fine_step[key] == pytest.approx(coarse_step[key], rel=5e-3), key


def test_implicit_and_explicit_bending_agree_within_the_mesh_error(refinement):
    """At 150 elements, where the explicit bending is stable at the step and the model keeps
    it, the implicit block solve gives mean loads that differ from it by less than refining to
    300 elements changes them, each load: observed, the implicit scheme's loads 0.4-2.2 %
    lower (the tensioner's hub load 2.2 %) but for the first idler's (+0.3 %), where refining
    raises them all by 1.3-2.6 %, so 14 of the 15 lie further from the refined ones; the
    tensioner angle 0.9 mrad off (refining: 3.6 mrad). Backward
    Euler adds the numerical bending damping dt EI to the belt, four times its c_b here,
    which shifts the polygon's loads on a coarse belt; that is why the model uses it only where
    the explicit bending would limit the step. So the 300 and 600-element results come from a
    scheme that agrees with the explicit one to within the 150-element mesh error."""
    explicit, step = refinement[150]
    medium = refinement[300][0]
    implicit, same_step = mean_loads(150, implicit_bending=1)
    assert same_step == step
    for key in explicit:
        mesh = abs(medium[key] - explicit[key])
        assert abs(implicit[key] - explicit[key]) < mesh, key
