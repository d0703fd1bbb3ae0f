"""Data-sheet forms of a layout (docs/layout-format.md, "Data-sheet forms";
belt_fmu.model.datasheet): pulley diameters, the belt's pitch-line offsets, the tensioner's
maker's angles and torques, power loads; each converted exactly to the model's keys.

References are hand calculations written out in each test. The conversions are closed forms
evaluated in floating point, so their tolerance is 1e-12 relative (rounding of a few
operations), except where a test says otherwise."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from belt_fmu.cli import main
from belt_fmu.layout import LayoutError, load_layout, load_layout_text
from belt_fmu.model import datasheet
from belt_fmu.model.geometry import BeltPath, cord_radius

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "datasheet" / "drive.toml"
EXACT = 1e-12
NOMINAL = "nominal_arm_angle_deg = 25.0       # installed (optional: else where the spring holds the pretension)\n"


def example_text() -> str:
    return EXAMPLE.read_text()


def test_the_example_converts_to_the_hand_calculated_radii():
    """crank: effective 160 mm -> radius 80 mm, cord 80 + 1.2 = 81.2 mm; tensioner and idler:
    outside 70 mm -> radius 35 mm, cord 35 + 1.1 (back to cord) = 36.1 mm; compressor:
    pitch 122.4 mm -> cord 61.2 mm, radius 61.2 - 1.2 = 60.0 mm."""
    layout = load_layout(EXAMPLE)
    expected = {"crank": (0.080, 0.0812), "tensioner": (0.035, 0.0361), "ac_compressor": (0.060, 0.0612),
                "idler": (0.035, 0.0361)}
    for j, pulley in enumerate(layout.pulleys):
        radius, cord = expected[pulley.name]
        assert pulley.radius_m == pytest.approx(radius, rel=EXACT)
        assert cord_radius(layout, j) == pytest.approx(cord, rel=EXACT)
    assert layout.warnings == ()


def test_the_example_converts_to_the_hand_calculated_tensioner():
    """Data sheet: free arm 0 deg at 5.5 N m, installed 25 deg, load stop 45 deg, 0.5 N m/deg.
    Rate 0.5 * 180 / pi = 28.6479 N m/rad; preload 5.5 + 0.5 * 25 = 18.0 N m. The belt
    pushes the pulley (below the belt, arm pointing left from the pivot) down, so the spring
    turns the arm clockwise (up, into the belt): the free-arm stop is the lower one, 25 deg
    below the installed angle, the load stop 45 - 25 = 20 deg above."""
    tensioner = load_layout(EXAMPLE).tensioner
    assert tensioner.spring_rate_Nm_per_rad == pytest.approx(0.5 * 180.0 / math.pi, rel=EXACT)
    assert tensioner.preload_Nm == pytest.approx(18.0, rel=EXACT)
    assert tensioner.stop_min_rad == pytest.approx(-math.radians(25.0), rel=EXACT)
    assert tensioner.stop_max_rad == pytest.approx(math.radians(20.0), rel=EXACT)
    for key in datasheet.TENSIONER_DATASHEET_KEYS:
        assert getattr(tensioner, key) is None  # converted: the layout holds the model's keys


def test_the_converted_spring_sense_is_the_models():
    """The stops' orientation uses the spring sense the model derives (parameters)."""
    from belt_fmu.model.parameters import translate
    parameters, _ = translate(load_layout(EXAMPLE))
    assert parameters.tensioner[0]["spring_sense"] == -1.0


def test_a_scale_counted_the_other_way_gives_the_same_tensioner():
    """Angles counted from the free arm in the opposite sense (free 45, nominal 20, stop 0)
    are the same tensioner."""
    text = example_text()
    turned = (text.replace("free_arm_angle_deg = 0.0", "free_arm_angle_deg = 45.0")
              .replace("nominal_arm_angle_deg = 25.0", "nominal_arm_angle_deg = 20.0")
              .replace("load_stop_angle_deg = 45.0", "load_stop_angle_deg = 0.0"))
    assert turned != text
    assert load_layout_text(turned) == load_layout(EXAMPLE)


def test_pitch_effective_and_radius_forms_are_one_layout():
    """A ribbed pulley by effective diameter 0.120 m, by pitch diameter 0.120 + 2 h_b, or by
    radius 0.060 m; a back-side pulley by outside diameter 0.070 m, by pitch diameter
    0.070 + 2 b or by radius 0.035 m: the same layout."""
    text = example_text()
    pitch = text.replace("pitch_diameter_m = 0.1224", "effective_diameter_m = 0.120")
    radius = text.replace("pitch_diameter_m = 0.1224", "radius_m = 0.06")
    back_pitch = text.replace("outside_diameter_m = 0.070         # flat pulley on the belt's back",
                              "pitch_diameter_m = 0.0722")
    layouts = [load_layout_text(t) for t in (text, pitch, radius, back_pitch)]
    for layout in layouts[1:]:
        for p, q in zip(layout.pulleys, layouts[0].pulleys):
            assert p.radius_m == pytest.approx(q.radius_m, rel=EXACT)


def test_back_side_cord_radius_is_outside_radius_plus_back_to_cord_distance():
    """The reported 2.2 mm: with thickness 4.5 mm and cord offset 1.2 mm the back-side cord
    sits 3.3 mm outside the pulley; a belt whose cord lies 1.1 mm under its back puts it at
    35 + 1.1 = 36.1 mm, not 38.3 mm."""
    text = example_text()
    old = load_layout_text(text.replace("back_cord_distance_m = 1.1e-3", ""))
    new = load_layout_text(text)
    t = new.tensioner_index
    assert cord_radius(new, t) == pytest.approx(0.0361, rel=EXACT)
    assert cord_radius(old, t) - cord_radius(new, t) == pytest.approx(0.0022, rel=1e-9)


@pytest.mark.parametrize("edit, field, words", [
    # mixing the tensioner's forms names both fields
    (("spring_rate_Nm_per_deg = 0.5", "spring_rate_Nm_per_deg = 0.5\nspring_rate_Nm_per_rad = 30.0"),
     "tensioner.spring_rate_Nm_per_rad", "conflicts with the data-sheet form's free_arm_angle_deg"),
    (("free_arm_torque_Nm = 5.5", "free_arm_torque_Nm = 5.5\nstop_min_rad = -0.3"),
     "tensioner.stop_min_rad", "free_arm_angle_deg"),
    (("load_stop_angle_deg = 45.0", ""), "tensioner.load_stop_angle_deg", "missing; required in the data-sheet form"),
    (("nominal_arm_angle_deg = 25.0", "nominal_arm_angle_deg = 50.0"), "tensioner.nominal_arm_angle_deg",
     "50.0 must lie strictly between free_arm_angle_deg (0.0) and load_stop_angle_deg (45.0)"),
    (("arm_length_m = 0.080", "arm_length_m = 0.085"), "tensioner.arm_length_m",
     "must equal the drawing's arm length"),
    (("effective_diameter_m = 0.160", "effective_diameter_m = 0.160\nradius_m = 0.08"), "pulleys.crank.effective_diameter_m",
     "0.16 conflicts with radius_m = 0.08"),
    (("effective_diameter_m = 0.160", "outside_diameter_m = 0.160"), "pulleys.crank.outside_diameter_m",
     "is for a pulley with side = 'back'"),
    (("effective_diameter_m = 0.160", ""), "pulleys.crank.radius_m", "missing; give exactly one of radius_m"),
    (("pitch_diameter_m = 0.1224", "pitch_diameter_m = 0.002"), "pulleys.ac_compressor.pitch_diameter_m",
     "gives the pulley radius -0.0002 m"),
    (("power_table_kW = [1.0, 2.5, 3.5]", "power_table_kW = [1.0, 2.5]"), "pulleys.ac_compressor.power_table_kW",
     "must have as many entries as power_table_speed_rad_per_s (3)"),
    (("power_table_kW = [1.0, 2.5, 3.5]", "power_table_kW = [1.0, 2.5, 3.5]\ntorque_table_Nm = [1.0]"),
     "pulleys.ac_compressor.power_table_speed_rad_per_s", "conflicts with torque_table_Nm"),
    (("power_table_speed_rad_per_s = [100.0, 300.0, 600.0]", "power_table_speed_rad_per_s = [0.0, 300.0, 600.0]"),
     "pulleys.ac_compressor.power_table_speed_rad_per_s", "must be an array of at least 1 numbers > 0"),
    (("length_tolerance_m = 0.004", ""), "belt.length_tolerance_m", "missing; required with length_m"),
])
def test_bad_data_sheet_input_is_named(edit, field, words):
    """Each message names the field, the value and what is allowed."""
    text = example_text()
    assert edit[0] in text
    with pytest.raises(LayoutError) as err:
        load_layout_text(text.replace(edit[0], edit[1]), "drive.toml")
    lines = [line for line in err.value.problems if line.startswith(f"drive.toml: {field}:")]
    assert lines and words in lines[0], err.value.problems


def test_power_table_is_power_over_speed_without_division_by_zero():
    """At the table's speeds T = P / w exactly (1 kW at 100 rad/s: 10 N m; 3.5 kW at 600
    rad/s: 5.833 N m); in between within 0.06 % of P(w) / w (P linear between the speeds); at
    and below the lowest speed 10 N m; beyond the last, constant power 3.5 kW."""
    speeds, torques = datasheet.power_torque_table([100.0, 300.0, 600.0], [1.0, 2.5, 3.5])
    assert speeds[0] == 100.0 and speeds[-1] == datasheet.POWER_TOP_SPEED
    assert np.all(np.diff(speeds) > 0.0)
    for w, p in ((100.0, 1e3), (300.0, 2.5e3), (600.0, 3.5e3)):
        assert np.interp(w, speeds, torques) == pytest.approx(p / w, rel=EXACT)
    for w in np.linspace(100.0, 9000.0, 997):
        exact = np.interp(w, [100.0, 300.0, 600.0], [1e3, 2.5e3, 3.5e3]) / w
        assert np.interp(w, speeds, torques) == pytest.approx(exact, rel=6e-4)
    assert np.interp(0.0, speeds, torques) == pytest.approx(10.0, rel=EXACT)
    assert np.all(np.isfinite(torques))


def test_the_example_compressor_load_reaches_the_model_as_torque():
    """The example's compressor at 300 rad/s draws 2.5 kW: 8.333 N m in the layout's table."""
    pulley = load_layout(EXAMPLE).pulley("ac_compressor")
    assert pulley.power_table_kW is None
    torque = np.interp(300.0, pulley.torque_table_speed_rad_per_s, pulley.torque_table_Nm)
    assert torque == pytest.approx(2500.0 / 300.0, rel=EXACT)


def test_declared_length_is_checked_against_the_geometry():
    """The example's effective length by hand: the cord path L at 500 N unstretched by
    1 + 500 / 2e5, less h_b times the net wrap (ribbed wraps minus back-side wraps, 2 pi for a
    closed loop with its ribs inside): L / 1.0025 - 1.2e-3 * 2 pi. A declared length 10 mm
    off (tolerance 4 mm) is a warning naming belt.length_m; within it, none."""
    from belt_fmu.model.layout_checks import effective_length
    layout = load_layout(EXAMPLE)
    path = BeltPath.from_layout(layout)
    hand = path.length / (1.0 + 500.0 / 2.0e5) - 1.2e-3 * 2.0 * math.pi
    assert effective_length(layout) == pytest.approx(hand, rel=1e-12)
    assert abs(hand - 0.968) < 0.004
    off = load_layout_text(example_text().replace("length_m = 0.968", f"length_m = {hand + 0.010:.6f}"), "d.toml")
    assert len(off.warnings) == 1 and off.warnings[0].startswith("d.toml: belt.length_m:")
    assert "+10 mm" in off.warnings[0]


def test_cli_layout_and_build_print_a_warning_and_exit_0(tmp_path, capsys, monkeypatch):
    """The reversed travel order (crank turning the other way) is a valid drive with the
    tensioner on the tight side: `belt-fmu layout` prints `warning: ...` on stderr, exit 0, and
    so does `belt-fmu build` before it builds (the builder stubbed here: building is not the
    point)."""
    from belt_fmu.layout import load_layout as load
    layout = load()
    text = layout.to_toml().replace('crank_rotation = "ccw"', 'crank_rotation = "cw"')
    blocks = text.split("[[pulleys]]\n")
    head, pulleys = blocks[0], blocks[1:]
    last, tensioner = pulleys[-1].split("[tensioner]\n")
    pulleys[-1] = last
    order = [pulleys[0]] + pulleys[1:][::-1]
    path = tmp_path / "reversed.toml"
    path.write_text(head + "".join("[[pulleys]]\n" + p for p in order) + "[tensioner]\n" + tensioner)
    assert main(["layout", str(path)]) == 0
    err = capsys.readouterr().err
    assert "warning: " in err and "tight side" in err and "pulleys.tensioner" in err
    import belt_fmu.build

    def stub(layout_path, output, **_):
        Path(output).write_bytes(b"stub")
        return Path(output)

    monkeypatch.setattr(belt_fmu.build, "build_fmu", stub)
    assert main(["build", str(path), "-o", str(tmp_path / "d.fmu")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: ") and "tight side" in err


def test_without_a_nominal_angle_the_spring_balances_the_pretension():
    """Without nominal_arm_angle_deg the arm is installed where the spring holds the 500 N
    pretension: preload = 500 N times the moment of unit span tensions' hub load about the
    pivot, which by hand is r x (u_in + u_out) with r = (-0.08, 0) m (the arm pointing left)
    and u the unit vectors along the two spans from the tensioner's contact points; the
    nominal angle then (preload - 5.5) / 0.5 deg. The model's own balancing preload
    (parameters, without preload_Nm) agrees within 0.5 %: it takes the path with the belt
    sunk into the pulleys at 500 N (0.035 mm on the tensioner pulley), which turns the spans'
    tangents by about 0.035 mm / 0.1 m against a half wrap of 0.23 rad (measured 0.21 %)."""
    from belt_fmu.model.parameters import translate
    text = example_text().replace(NOMINAL, "")
    assert "nominal_arm_angle_deg" not in text
    layout = load_layout_text(text)
    path = BeltPath.from_layout(layout)
    t = layout.tensioner_index
    u_in = path.departure_point(t - 1) - path.arrival_point(t)
    u_out = path.arrival_point(t + 1) - path.departure_point(t)
    force = u_in / np.hypot(*u_in) + u_out / np.hypot(*u_out)
    r = np.array([-0.08, 0.0])
    preload = 500.0 * abs(r[0] * force[1] - r[1] * force[0])
    assert layout.tensioner.preload_Nm == pytest.approx(preload, rel=1e-9)  # the drawing's arm: 80 mm within 1e-9
    nominal = (preload - 5.5) / 0.5
    assert layout.tensioner.stop_min_rad == pytest.approx(-math.radians(nominal), rel=EXACT)
    assert layout.tensioner.stop_max_rad == pytest.approx(math.radians(45.0 - nominal), rel=EXACT)
    unbalanced = dataclasses.replace(layout, tensioner=dataclasses.replace(layout.tensioner, preload_Nm=None))
    parameters, _ = translate(unbalanced)
    assert parameters.tensioner[0]["spring_preload"] == pytest.approx(preload, rel=5e-3)


def test_a_pretension_the_spring_cannot_hold_between_the_stops_is_named():
    """3000 N needs about 109 N m (6 times the 18 N m of 500 N): on this spring 207 deg, past
    the load stop at 45 deg."""
    text = example_text().replace(NOMINAL, "")
    with pytest.raises(LayoutError) as err:
        load_layout_text(text.replace("pretension_N = 500.0", "pretension_N = 3000.0"), "drive.toml")
    (line,) = [p for p in err.value.problems if p.startswith("drive.toml: belt.pretension_N: 3000.0 puts the")]
    assert "outside free_arm_angle_deg (0.0) to load_stop_angle_deg (45.0)" in line


def test_unstretched_length_with_the_data_sheet_tensioner():
    """The data-sheet form gives the preload, so an unstretched length needs no preload_Nm;
    without a pretension the nominal angle is required."""
    text = example_text().replace("pretension_N = 500.0", "unstretched_length_m = 0.975")
    assert load_layout_text(text).tensioner.preload_Nm == pytest.approx(18.0, rel=EXACT)
    with pytest.raises(LayoutError) as err:
        load_layout_text(text.replace(NOMINAL, ""), "drive.toml")
    assert any(p.startswith("drive.toml: tensioner.nominal_arm_angle_deg: missing; required in the data-sheet")
               for p in err.value.problems), err.value.problems


def test_the_fmu_logs_the_layouts_warnings_when_it_starts(tmp_path):
    """An FMU of a layout with warnings says them to its host, at warning level, when its
    model starts (here: the declared belt length 10 mm off the layout's own, 0.968 m, and
    9.6 mm off the geometry's)."""
    from belt_fmu.build import build_fmu
    from belt_fmu.cosim import FmuInstance

    hand = load_layout(EXAMPLE).belt.length_m
    path = tmp_path / "off.toml"
    path.write_text(example_text().replace("length_m = 0.968", f"length_m = {hand + 0.010:.6f}"))
    fmu = build_fmu(path, tmp_path / "Off.fmu")
    inst = FmuInstance(fmu, instance_name="off")
    try:
        inst.initialize({"model": "lumped", "crank_speed": 80.0})
        warnings = [text for level, text in inst.messages if level == "WARNING"]
        assert len(warnings) == 1 and warnings[0].startswith("layout: belt.length_m: 0.978 m differs from the "
                                                             "effective length the geometry implies")
    finally:
        inst.close()
