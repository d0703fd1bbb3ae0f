"""The one translation from a layout to the kernels' records (belt_fmu.model.parameters):
per-node scaling, effective friction coefficients, roles, arm geometry and spring."""
import dataclasses
import math

import numpy as np
import pytest

from belt_fmu import BeltDrive, load_layout
from belt_fmu.layout import load_layout_text
from belt_fmu.model.friction import LAW_CODES
from belt_fmu.model.geometry import cord_radius
from belt_fmu.model.parameters import LOAD_SPEED_THRESHOLD, translate
from belt_fmu.model.tensioner import spring_torque

from conftest import two_pulley_text


@pytest.fixture(scope="module")
def default():
    layout = load_layout()
    return (layout, *translate(layout))


def test_per_length_values_become_per_node_values(two_pulley_layout):
    """A node carries one unstretched element length l0 of the belt: mass, transverse damping
    and contact coefficients are the layout's per-length values times l0; EA, EI and their
    damping are properties of the section and stay as they are."""
    layout = dataclasses.replace(two_pulley_layout(n=100), belt=dataclasses.replace(
        two_pulley_layout(n=100).belt, pretension_N=None, unstretched_length_m=1.3))
    p, _ = translate(layout)
    belt, contact = p.belt[0], p.contact[0]
    l0 = 1.3 / 100  # given the unstretched length: l0 = L / n
    assert belt["rest_length"] == pytest.approx(l0, rel=1e-15)
    assert belt["n_nodes"] == 100
    assert belt["node_mass"] == pytest.approx(0.12 * l0)
    assert belt["node_inertia"] == pytest.approx(0.12 * l0 * (l0 ** 2 + 4.5e-3 ** 2) / 12)
    assert belt["transverse_damping"] == pytest.approx(layout.belt.transverse_damping_Ns_per_m2 * l0)
    assert (belt["axial_stiffness"], belt["bending_stiffness"]) == (1.2e5, 0.02)
    assert contact["stiffness_linear"] == pytest.approx(2.0e9 * l0)
    assert contact["damping"] == pytest.approx(6.0e3 * l0)
    assert contact["stiffness_quadratic"] == 0.0


def test_pretension_sets_the_rest_length_so_that_the_belt_closes(default):
    """At uniform pretension T, n chords of l0 (1 + T/EA) laid along the installed cord path
    close the loop (Scania thesis (Vahedi 2012) eq. 12.22 for the discretized belt): l0 lies
    below installed length / n by T/EA and the chords' shortcut over the wraps."""
    layout, p, geometry = default
    belt, l0 = layout.belt, p.belt[0]["rest_length"]
    tension = np.full(7, belt.pretension_N)
    assert abs(geometry.closure(geometry.arm_installed, tension, 0.0, l0)[0]) < 1e-9
    installed = geometry.loaded_path(geometry.arm_installed, tension, 0.0).length
    assert l0 * (1.0 + belt.pretension_N / belt.axial_stiffness_N) < installed / belt.n_elements


def test_effective_friction_coefficient_by_side(default):
    """Ribbed side: mu / sin(phi/2), the wedge of the poly-V ribs; back side: back_side_mu."""
    layout, p, _ = default
    for pulley, record in zip(layout.pulleys, p.pulleys):
        if pulley.side == "ribbed":
            assert record["effective_mu"] == pytest.approx(0.4 / math.sin(0.5 * layout.belt.groove_angle_rad))
        else:
            assert record["effective_mu"] == layout.friction.mu_back


def test_pulley_rows_and_roles(default):
    layout, p, _ = default
    names = [q.name for q in layout.pulleys]
    roles = p.roles[0]
    assert names[roles["crank"]] == "crank" and roles["crank_sense"] == 1.0
    assert names[roles["tensioner"]] == "tensioner" and names[roles["headline"]] == layout.headline_pulley_name
    assert layout.pulleys[roles["water_pump"]].role == "water_pump"
    for j, (pulley, record) in enumerate(zip(layout.pulleys, p.pulleys)):
        assert (record["x"], record["y"]) == pulley.center_m
        assert record["radius"] == cord_radius(layout, j)
        assert record["sense"] == (1.0 if pulley.side == "ribbed" else -1.0)  # the crank turns CCW
    assert p.friction[0]["law"] == LAW_CODES[layout.friction.law]
    assert p.load_friction[0]["velocity_threshold"] == LOAD_SPEED_THRESHOLD


def test_arm_geometry_and_a_spring_that_balances_the_pretension(default):
    """The arm reaches from the pivot to the tensioner pulley's installed centre; without a
    given preload the spring balances the pretension's hub load at the installed angle
    (Scania thesis (Vahedi 2012) eqs. 12.23-12.24), pushing the pulley into the belt."""
    layout, p, geometry = default
    arm, t = p.tensioner[0], p.roles[0]["tensioner"]
    offset = np.array(layout.pulleys[t].center_m) - np.array(layout.tensioner.pivot_m)
    assert arm["arm_length"] == pytest.approx(np.hypot(*offset), rel=1e-15)
    assert arm["installed_angle"] == pytest.approx(np.arctan2(offset[1], offset[0]), rel=1e-15)
    assert arm["stop_max"] - arm["installed_angle"] == pytest.approx(layout.tensioner.stop_max_rad)
    hub = geometry.hub_moment(arm["installed_angle"], np.full(7, layout.belt.pretension_N), 0.0)
    assert spring_torque(arm, arm["installed_angle"]) == pytest.approx(-hub, rel=1e-12)
    assert arm["spring_sense"] * hub < 0.0
    # a given preload is taken as it is
    given = dataclasses.replace(layout, tensioner=dataclasses.replace(layout.tensioner, preload_Nm=12.5))
    assert translate(given)[0].tensioner[0]["spring_preload"] == 12.5


def test_drive_without_tensioner_has_no_arm():
    p, geometry = translate(load_layout_text(two_pulley_text()))
    assert p.roles[0]["tensioner"] == -1 and geometry.tensioner == -1
    assert (p.tensioner[0]["stop_min"], p.tensioner[0]["stop_max"]) == (-np.inf, np.inf)


def test_the_drive_keeps_the_records_it_was_built_from():
    """BeltDrive builds no record of its own."""
    drive = BeltDrive(load_layout())
    assert drive.rest_length == drive.parameters.belt[0]["rest_length"]
    assert drive.geometry.pulleys is drive.parameters.pulleys
