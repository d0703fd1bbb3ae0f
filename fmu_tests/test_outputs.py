"""The output registry (belt_fmu.model.outputs): names, units and positions generated from one
table, and the span and slip measures on small inputs."""
import dataclasses

import numpy as np
import pytest

from belt_fmu import BeltDrive, load_layout
from belt_fmu.model import outputs
from belt_fmu.model.outputs import (DRIVE_OUTPUTS, PULLEY_OUTPUTS, SPAN_OUTPUTS, effective_radius, fmu_output_specs,
                                    output_specs, span_end_points, span_tension, statistic_name)

NAMES = ["crank", "pump", "idler"]


def test_names_units_and_positions_come_from_the_registry():
    """The output vector: the drive outputs, a block per pulley, a block per span (a -> b in
    travel order), each spec at its own position; the kernel's constants point at the
    outputs they are named for."""
    specs = output_specs(NAMES, "idler")
    assert len(specs) == len(DRIVE_OUTPUTS) + 3 * len(PULLEY_OUTPUTS) + 3 * len(SPAN_OUTPUTS)
    assert [s.index for s in specs] == list(range(len(specs)))
    assert len({s.name for s in specs}) == len(specs)
    by_name = {s.name: s for s in specs}
    assert by_name["bearing_force"].index == outputs.BEARING_FORCE
    assert "'idler'" in by_name["bearing_force"].description
    assert specs[outputs.TENSIONER_ANGLE].name == "tensioner_angle"
    assert specs[outputs.CRANK_TORQUE].unit == "N.m"
    pump = outputs.PULLEY_BLOCK + 1 * outputs.PULLEY_STRIDE
    assert specs[pump + outputs.SLIP].name == "slip_pump" and specs[pump + outputs.SLIP].unit == "1"
    assert specs[pump + outputs.HUB_FORCE_Y].name == "hub_force_y_pump"
    last_span = outputs.PULLEY_BLOCK + 3 * outputs.PULLEY_STRIDE + 2 * outputs.SPAN_STRIDE + outputs.SPAN_TENSION
    assert specs[last_span].name == "span_tension_idler_crank" and specs[last_span].span == ("idler", "crank")
    assert specs[last_span].description == "belt tension in the free span idler -> crank"


def test_fmu_outputs_add_the_water_pump_speed_as_a_second_name():
    specs = fmu_output_specs(NAMES, "idler", water_pump="pump")
    alias = specs[-1]
    assert alias.name == "water_pump_speed" and alias.unit == "rad/s"
    assert specs[alias.index].name == "speed_pump"
    assert [s.name for s in fmu_output_specs(NAMES, "idler", None)] == [s.name for s in output_specs(NAMES, "idler")]


def test_statistics_name_the_sweep_metrics():
    assert statistic_name("span_tension_crank_pump", "max") == "span_tension_crank_pump_max"
    declared = {o.key: o.statistics for o in DRIVE_OUTPUTS + PULLEY_OUTPUTS + SPAN_OUTPUTS if o.statistics}
    assert declared == {"bearing_force": ("max", "min", "mean"), "crank_torque": ("mean", "min", "max"),
                        "slip": ("mean", "max"), "span_tension": ("min", "max")}


def test_the_kernel_writes_every_output():
    drive = BeltDrive(load_layout())
    drive.reset(80.0, 1.0, settle_time=1e-3)
    drive.output_values[:] = np.nan
    values = drive.evaluate_outputs()
    assert np.all(np.isfinite(values))
    out = drive.outputs()
    assert out["hub_force_crank"] == pytest.approx(np.hypot(out["hub_force_x_crank"], out["hub_force_y_crank"]))
    assert out["slip_crank"] == 0.0  # the reference of the slips


def test_effective_radius_of_a_polygon_belt():
    """Chords l on a circle R advance l per 2 asin(l / 2R) of rotation: a little under R,
    R (1 - l^2 / 24 R^2) for short chords."""
    assert effective_radius(0.03, 0.009) == pytest.approx(0.009 / (2 * np.arcsin(0.15)), rel=1e-15)
    assert effective_radius(0.03, 1e-4) == pytest.approx(0.03 * (1 - 1e-8 / (24 * 0.03 ** 2)), rel=1e-12)


def test_span_end_points_of_open_and_crossed_spans():
    """Two circles of radius 1 at (0, 0) and (4, 0): the open span (both CCW) runs along
    y = -1 from (0, -1) to (4, -1); the crossed one (CCW to CW) through the middle, leaving at
    the polar angle -acos(1/2) and arriving diametrically opposite on the second circle."""
    centers = np.array([[0.0, 0.0], [4.0, 0.0]])
    radii = np.array([1.0, 1.0])
    assert span_end_points(centers, radii, np.array([1.0, 1.0]), 0, 1) == pytest.approx((0.0, -1.0, 4.0, -1.0))
    x0, y0, x1, y1 = span_end_points(centers, radii, np.array([1.0, -1.0]), 0, 1)
    angle = -np.arccos(0.5)
    assert (x0, y0) == pytest.approx((np.cos(angle), np.sin(angle)))
    assert (x1, y1) == pytest.approx((4.0 - np.cos(angle), -np.sin(angle)))


def test_span_tension_is_the_mean_over_the_middle_of_the_span():
    """A closed belt of 22 elements: 10 along a span from x = 0 to 10, the others returning
    3 m above it. The elements whose midpoints lie in the span's middle half (x strictly
    between 2.5 and 7.5: elements 3-6) and near its line are averaged; lifting nodes 4 and 5
    far off the line takes elements 3-5 out. The search walks the belt from where the span's
    middle began when last measured (``first_member``): wherever it starts, it finds the same
    elements, summed in the same order, and keeps where they begin."""
    q = np.zeros((22, 3))
    q[:11, 0] = np.arange(11.0)
    q[11:, 0] = np.arange(10.0, -1.0, -1.0)
    q[11:, 1] = 3.0
    axial = np.arange(22.0) * 10.0
    members = np.empty(22, dtype=np.int64)
    for start in range(22):
        first_member = np.array([7, start])
        tension, count = span_tension(q, axial, 0.0, 0.0, 10.0, 0.0, members, first_member, 1)
        assert list(members[:count]) == [3, 4, 5, 6] and tension == 45.0
        assert list(first_member) == [7, 3]
    q[4:6, 1] = 2.0
    for start in range(22):
        first_member = np.array([start])
        tension, count = span_tension(q, axial, 0.0, 0.0, 10.0, 0.0, members, first_member, 0)
        assert list(members[:count]) == [6] and tension == 60.0


def test_reading_outputs_does_not_change_the_run():
    """The outputs' trial step is taken as the next run's first step when the state, inputs
    and step length are those it was taken with (integrator.run): a run that reads every
    output after every 1e-4 s communication step must follow the very same states as one
    that reads none, bit for bit (exact equality: the same compiled step on the same
    numbers), also across a change of inputs, a restored state and an impulse applied
    after a read (which the trial must not swallow). Dahl: friction states are state too."""
    layout = load_layout()
    layout = dataclasses.replace(layout, friction=dataclasses.replace(layout.friction, law="dahl"))
    reading, silent = BeltDrive(layout), BeltDrive(layout)
    for drive in (reading, silent):
        drive.reset(83.8, 2.0, settle_time=0.01)
    saved = None
    for k in range(40):
        crank = 83.8 if k < 20 else 85.0
        for drive in (reading, silent):
            if k == 30:
                drive.apply_velocity([5, 6], [0.0, 0.01])
            drive.advance(1e-4, crank, 2.0)
        reading.output_values
        if k == 10:
            saved = (reading.get_state(), silent.get_state())
        assert np.array_equal(reading.y, silent.y), k
    for drive, state in zip((reading, silent), saved):
        drive.set_state(state)
        drive.advance(1e-4, 83.8, 2.0)
    reading.output_values
    reading.advance(1e-4, 83.8, 2.0)
    silent.advance(1e-4, 83.8, 2.0)
    assert np.array_equal(reading.y, silent.y)
    assert np.array_equal(reading.output_values, silent.output_values)
