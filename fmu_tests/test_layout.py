"""Layout files: loading, defaults, round trip through TOML, and readable problems for bad files."""
import dataclasses
import math

import pytest

from belt_fmu.layout import Bounds, Layout, LayoutError, field_bounds, load_layout, load_layout_text, validate

# Crank at the origin, alternator to the right, a back-side tensioner pushing on the upper span.
VALID = """\
[drive]
name = "three-pulley test drive"

[belt]
mass_per_length_kg_per_m = 0.115
axial_stiffness_N = 1.5e5
bending_stiffness_Nm2 = 0.02
thickness_m = 4.5e-3
n_elements = 60
pretension_N = 400.0

[contact]
stiffness_linear_N_per_m2 = 2.0e8

[friction]
mu = 0.5

[[pulleys]]
name = "crank"
role = "crankshaft"
center_m = [0.0, 0.0]
radius_m = 0.075

[[pulleys]]
name = "alternator"
role = "accessory"
center_m = [0.25, 0.1]
radius_m = 0.03
inertia_kgm2 = 3.0e-3
torque_table_speed_rad_per_s = [0, 100, 400]
torque_table_Nm = [0.5, 1.0, 3.0]

[[pulleys]]
name = "tens"
role = "tensioner"
center_m = [0.12, 0.12]
radius_m = 0.035
side = "back"
inertia_kgm2 = 5.0e-4

[tensioner]
pivot_m = [0.08, 0.2]
arm_inertia_kgm2 = 1.5e-3
spring_rate_Nm_per_rad = 40.0
friction_torque_Nm = 4.0
"""


def variant(*edits: tuple[str, str]) -> str:
    """VALID with each (old, new) replacement made; every ``old`` must occur exactly once."""
    text = VALID
    for old, new in edits:
        assert text.count(old) == 1, f"{old!r} is not unique in VALID"
        text = text.replace(old, new)
    return text


def load_problems(path) -> list[str]:
    """The problems LayoutError reports for the layout file at ``path``."""
    with pytest.raises(LayoutError) as info:
        load_layout(path)
    assert info.value.source == str(path)
    assert str(info.value).startswith(f"invalid layout {path}: {len(info.value.problems)} problem")
    assert all(line in str(info.value) for line in info.value.problems)
    return info.value.problems


@pytest.fixture
def layout_file(tmp_path):
    path = tmp_path / "drive.toml"
    path.write_text(VALID)
    return path


def test_valid_layout_loads(layout_file):
    layout = load_layout(layout_file)
    assert layout.source == str(layout_file)
    assert [p.name for p in layout.pulleys] == ["crank", "alternator", "tens"]
    assert layout.pulleys[1].center_m == (0.25, 0.1)
    assert layout.pulleys[1].torque_table_speed_rad_per_s == (0.0, 100.0, 400.0)
    assert isinstance(layout.belt.axial_stiffness_N, float)
    assert layout.belt.n_elements == 60
    assert (layout.crank_index, layout.tensioner_index, layout.water_pump_index) == (0, 2, None)
    assert layout.pulley("tens") is layout.pulleys[2]
    with pytest.raises(KeyError, match="idler9"):
        layout.pulley("idler9")


def test_defaults_applied(layout_file):
    layout = load_layout(layout_file)
    assert layout.drive.crank_rotation == "ccw"
    assert layout.drive.headline_pulley is None
    belt = layout.belt
    assert (belt.axial_damping_Ns, belt.bending_damping_Nm2s) == (0.5, 1e-7)
    assert (belt.groove_angle_rad, belt.cord_offset_m) == (0.6981317, 1.0e-3)
    assert belt.unstretched_length_m is None
    assert (layout.contact.stiffness_quadratic_N_per_m3, layout.contact.damping_Ns_per_m2) == (0.0, 2.0e3)
    friction = layout.friction
    assert friction.law == "creep_polynomial"
    assert friction.back_side_mu is None and friction.mu_back == 0.5
    assert (friction.slip_peak, friction.slip_saturation, friction.saturation_ratio) == (0.01, 0.05, 1.0)
    assert (friction.reference_speed_m_per_s, friction.velocity_threshold_m_per_s) == (1.0, 0.01)
    assert friction.bristle_stiffness_N_per_m2 == 5.0e7
    crank = layout.pulleys[0]
    assert (crank.side, crank.inertia_kgm2, crank.bearing_damping_Nms_per_rad) == ("ribbed", 0.0, 1e-4)
    tensioner = layout.tensioner
    assert tensioner.preload_Nm is None
    assert (tensioner.damping_Nms_per_rad, tensioner.friction_torque_return_Nm) == (0.0, 4.0)
    assert tensioner.friction_velocity_threshold_rad_per_s == 1.0e-3
    assert (tensioner.stop_min_rad, tensioner.stop_max_rad) == (-0.35, 0.35)
    assert (tensioner.stop_stiffness_Nm_per_rad, tensioner.stop_damping_Nms_per_rad) == (2.0e3, 1.0)


def test_optional_keys_override_defaults():
    layout = load_layout_text(
        variant(
            ("mu = 0.5", "mu = 0.5\nback_side_mu = 0.3"),
            ("friction_torque_Nm = 4.0", "friction_torque_Nm = 4.0\nfriction_torque_return_Nm = 2.0"),
        )
    )
    assert layout.friction.mu_back == 0.3
    assert layout.tensioner.friction_torque_return_Nm == 2.0


@pytest.mark.parametrize(
    "edits",
    [
        (),
        (
            ("pretension_N = 400.0", "unstretched_length_m = 0.75"),
            ('name = "three-pulley test drive"', 'name = "quote \\" and tab \\t"\nheadline_pulley = "tens"'),
            ("mu = 0.5", 'mu = 0.5\nback_side_mu = 0.3\nlaw = "bristle"'),
            ("spring_rate_Nm_per_rad = 40.0", "spring_rate_Nm_per_rad = 40.0\npreload_Nm = 20.0"),
        ),
    ],
    ids=["defaults", "optional-keys"],
)
def test_round_trip_through_toml(tmp_path, edits):
    layout = load_layout_text(variant(*edits), "original")
    again = load_layout_text(layout.to_toml(), "copy")
    assert again == layout
    written = layout.write(tmp_path / "copy.toml")
    assert load_layout(written) == layout


def test_headline_pulley_resolution(layout_file):
    layout = load_layout(layout_file)
    assert layout.headline_pulley_name == "alternator"  # no idler: first pulley after the crank
    crank, alternator, tens = layout.pulleys
    idler = dataclasses.replace(tens, role="idler")
    with_idler = dataclasses.replace(layout, pulleys=(crank, alternator, idler))
    assert with_idler.headline_pulley_name == "tens"
    named = load_layout_text(variant(("[drive]", '[drive]\nheadline_pulley = "crank"')))
    assert named.headline_pulley_name == "crank"


def test_write_refuses_to_overwrite(layout_file):
    layout = load_layout(layout_file)
    layout_file.write_text("# keep me\n")
    with pytest.raises(FileExistsError, match="overwrite=True") as info:
        layout.write(layout_file)
    assert str(layout_file) in str(info.value)
    assert layout_file.read_text() == "# keep me\n"
    layout.write(layout_file, overwrite=True)
    assert load_layout(layout_file) == layout


BAD_LAYOUTS = {
    # id: (edits of VALID, fragments one reported problem must contain)
    "overlapping-pulleys": (
        [("center_m = [0.12, 0.12]", "center_m = [0.1, 0.05]")],
        ["pulleys.tens.center_m: [0.1, 0.05] overlaps pulley 'crank'", "'tens' and 'crank'", "0.111803 m apart", "must be > 0.1145 m"],
    ),
    "negative-radius": (
        [("radius_m = 0.03\n", "radius_m = -0.03\n")],
        ["pulleys.alternator.radius_m: -0.03 must be in (0, 2]"],
    ),
    "missing-value": (
        [("thickness_m = 4.5e-3\n", "")],
        ["belt.thickness_m: missing; required, a number in (0, 0.05]"],
    ),
    "missing-inertia": (
        [("inertia_kgm2 = 3.0e-3\n", "")],
        ["pulleys.alternator.inertia_kgm2: missing; required for role 'accessory', a number > 0"],
    ),
    "unknown-key": (
        [("axial_stiffness_N", "axial_stiffnes")],
        ["belt.axial_stiffnes: unknown key; did you mean 'axial_stiffness_N'? allowed keys: mass_per_length"],
    ),
    "unknown-pulley-key": (
        [('side = "back"', 'side = "back"\ncolour = "red"')],
        ["pulleys.tens.colour: unknown key; allowed keys: name, role, center_m, radius_m, side"],
    ),
    "unknown-table": (
        [("[contact]", "[belts]\nfoo = 1\n\n[contact]")],
        ["belts: unknown table; did you mean 'belt'? allowed tables: drive, belt, contact"],
    ),
    "nan": ([("mu = 0.5", "mu = nan")], ["friction.mu: nan must be a finite number in (0, 5]"]),
    "inf": (
        [("pretension_N = 400.0", "pretension_N = inf")],
        ["belt.pretension_N: inf must be a finite number > 0"],
    ),
    "float-for-int": (
        [("n_elements = 60", "n_elements = 60.0")],
        ["belt.n_elements: 60.0 must be an integer in [12, 2000]"],
    ),
    "too-few-elements": (
        [("n_elements = 60", "n_elements = 6")],
        ["belt.n_elements: 6 must be an integer in [12, 2000]"],
    ),
    "bool-for-number": ([("mu = 0.5", "mu = true")], ["friction.mu: True must be a number in (0, 5]"]),
    "string-for-number": (
        [("radius_m = 0.03\n", 'radius_m = "0.03"\n')],
        ["pulleys.alternator.radius_m: '0.03' must be a number in (0, 2]"],
    ),
    "bad-point": (
        [("center_m = [0.25, 0.1]", "center_m = [0.25]")],
        ["pulleys.alternator.center_m: [0.25] must be [x, y], two numbers in [-10, 10] m"],
    ),
    "bad-enum": (
        [('side = "back"', 'side = "front"')],
        ["pulleys.tens.side: 'front' must be one of 'ribbed', 'back'"],
    ),
    "bad-name": (
        [('name = "tens"', 'name = "2 tens"')],
        ["pulleys[2].name: '2 tens' must be a name matching [A-Za-z_][A-Za-z0-9_]*"],
    ),
    "duplicate-name": (
        [('name = "tens"', 'name = "crank"')],
        ["pulleys[2].name: 'crank' is already used by pulleys[0]; names must be unique"],
    ),
    "two-crankshafts": (
        [('role = "accessory"', 'role = "crankshaft"')],
        ["pulleys.alternator.role: 'crankshaft' repeats the role of pulley 'crank'", "exactly one pulley must have role 'crankshaft'"],
    ),
    "no-crankshaft": (
        [('role = "crankshaft"', 'role = "idler"')],
        ["pulleys: no pulley has role 'crankshaft'; exactly one pulley must have role 'crankshaft'"],
    ),
    "tensioner-pulley-without-table": (
        [("[tensioner]", "[tensionner]")],
        ["tensioner: missing table; required because pulley 'tens' has role 'tensioner'"],
    ),
    "tensioner-table-without-pulley": (
        [('role = "tensioner"', 'role = "idler"')],
        ["tensioner: table given but no pulley has role 'tensioner'"],
    ),
    "pivot-at-pulley-centre": (
        [("pivot_m = [0.08, 0.2]", "pivot_m = [0.12, 0.12]")],
        ["tensioner.pivot_m: [0.12, 0.12] must differ from pulleys.tens.center_m"],
    ),
    "stop-on-wrong-side": (
        [("spring_rate_Nm_per_rad = 40.0", "spring_rate_Nm_per_rad = 40.0\nstop_min_rad = 0.1")],
        ["tensioner.stop_min_rad: 0.1 must be < 0"],
    ),
    "pretension-and-length": (
        [("pretension_N = 400.0", "pretension_N = 400.0\nunstretched_length_m = 0.75")],
        [
            "belt.unstretched_length_m: 0.75 conflicts with pretension_N = 400.0",
            "give exactly one of pretension_N, unstretched_length_m",
        ],
    ),
    "neither-pretension-nor-length": (
        [("pretension_N = 400.0\n", "")],
        ["belt.pretension_N: missing; give exactly one of pretension_N, unstretched_length_m"],
    ),
    "cord-offset-above-thickness": (
        [("thickness_m = 4.5e-3", "thickness_m = 4.5e-3\ncord_offset_m = 5e-3")],
        ["belt.cord_offset_m: 0.005 must be <= thickness_m (0.0045)"],
    ),
    "groove-angle": (
        [("n_elements = 60", "n_elements = 60\ngroove_angle_rad = 4.0")],
        ["belt.groove_angle_rad: 4.0 must be in (0, pi]"],
    ),
    "saturation-ratio": (
        [("mu = 0.5", "mu = 0.5\nsaturation_ratio = 1.5")],
        ["friction.saturation_ratio: 1.5 must be in (0, 1]"],
    ),
    "slip-saturation-below-peak": (
        [("mu = 0.5", "mu = 0.5\nslip_peak = 0.1")],
        ["friction.slip_saturation: 0.05 must be > slip_peak (0.1)"],
    ),
    "headline-not-a-pulley": (
        [("[drive]", '[drive]\nheadline_pulley = "idler9"')],
        ["drive.headline_pulley: 'idler9' must name a pulley: crank, alternator, tens"],
    ),
    "torque-table-not-increasing": (
        [("[0, 100, 400]", "[0, 400, 100]")],
        [
            "pulleys.alternator.torque_table_speed_rad_per_s: [0, 400, 100]",
            "must be an array of at least 2 numbers >= 0, strictly increasing",
        ],
    ),
    "torque-table-lengths-differ": (
        [("[0.5, 1.0, 3.0]", "[0.5, 1.0]")],
        ["pulleys.alternator.torque_table_Nm: [0.5, 1.0]", "must have as many entries as torque_table_speed_rad_per_s (3)"],
    ),
    "torque-table-half-given": (
        [("torque_table_Nm = [0.5, 1.0, 3.0]\n", "")],
        ["pulleys.alternator.torque_table_Nm: missing; give both torque_table_speed_rad_per_s and torque_table_Nm"],
    ),
    "torque-table-too-short": (
        [("[0, 100, 400]", "[0]"), ("[0.5, 1.0, 3.0]", "[0.5]")],
        ["pulleys.alternator.torque_table_Nm: [0.5] must be an array of at least 2 numbers"],
    ),
    "torque-table-wrong-role": (
        [("inertia_kgm2 = 5.0e-4", "inertia_kgm2 = 5.0e-4\ntorque_table_speed_rad_per_s = [0, 1]\ntorque_table_Nm = [1, 1]")],
        [
            "pulleys.tens.torque_table_speed_rad_per_s: [0, 1] not allowed for role 'tensioner'",
            "a torque table is only for roles 'accessory' or 'water_pump'",
        ],
    ),
}


@pytest.mark.parametrize("edits, fragments", BAD_LAYOUTS.values(), ids=BAD_LAYOUTS.keys())
def test_bad_layout_is_reported(tmp_path, edits, fragments):
    path = tmp_path / "drive.toml"
    path.write_text(variant(*edits))
    problems = load_problems(path)
    assert all(p.startswith(f"{path}: ") for p in problems)
    assert any(all(f in p for f in fragments) for p in problems), "\n".join(problems)


def test_all_problems_reported_at_once(tmp_path):
    path = tmp_path / "drive.toml"
    path.write_text(
        variant(
            ("radius_m = 0.03\n", "radius_m = -0.03\n"),
            ("mu = 0.5", "mu = nan"),
            ("spring_rate_Nm_per_rad = 40.0", "spring_rate = 40.0"),
        )
    )
    problems = load_problems(path)
    fields = ["pulleys.alternator.radius_m", "friction.mu", "tensioner.spring_rate:", "tensioner.spring_rate_Nm_per_rad:"]
    assert len(problems) == len(fields), "\n".join(problems)
    assert all(any(f in p for p in problems) for f in fields)


def test_belt_that_cannot_wrap_is_reported(tmp_path):
    """Valid data, but with the crank turning clockwise the pulleys are not in travel order."""
    pytest.importorskip("belt_fmu.model.geometry")
    path = tmp_path / "drive.toml"
    path.write_text(variant(('name = "three-pulley test drive"', 'crank_rotation = "cw"')))
    assert load_problems(path)


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere.toml"
    assert load_problems(path) == [f"{path}: no such layout file"]


def test_bad_toml_syntax(tmp_path):
    path = tmp_path / "drive.toml"
    text = variant(("mu = 0.5", "mu = = 0.5"))
    path.write_text(text)
    line = text.splitlines().index("mu = = 0.5") + 1
    [problem] = load_problems(path)
    assert problem.startswith(f"{path}: invalid TOML: ")
    assert f"line {line}" in problem


def test_missing_tables_and_too_few_pulleys():
    crank = {"name": "crank", "role": "crankshaft", "center_m": [0, 0], "radius_m": 0.1}
    assert validate({"pulleys": [crank]}, "x") == [
        "x: belt: missing table; required",
        "x: contact: missing table; required",
        "x: friction: missing table; required",
        "x: pulleys: 1 pulley(s) given; at least 2 are required",
    ]


@pytest.mark.parametrize(
    "data, problem",
    [
        ({"belt": 3}, "x: belt: 3 must be a table"),
        ({"pulleys": {"name": "crank"}}, "x: pulleys: {'name': 'crank'} must be an array of tables"),
        ({"pulleys": [1, {}]}, "x: pulleys[0]: 1 must be a table"),
    ],
)
def test_malformed_tables(data, problem):
    assert any(p.startswith(problem) for p in validate(data, "x"))


def test_layout_equality_ignores_source(layout_file):
    assert load_layout(layout_file) == load_layout_text(VALID)
    assert isinstance(load_layout_text(VALID), Layout)


def test_layout_round_trips_through_plain_data(layout_file):
    """The FMU carries its layout as JSON: to_data / load_layout_data must be exact."""
    import json

    from belt_fmu.layout import load_layout_data

    layout = load_layout(layout_file)
    again = load_layout_data(json.loads(json.dumps(layout.to_data())), source="<json>")
    assert again == layout


def test_unstretched_length_with_tensioner_needs_a_preload(tmp_path):
    text = VALID.replace("pretension_N = 400.0", "unstretched_length_m = 1.0")
    path = tmp_path / "drive.toml"
    path.write_text(text)
    with pytest.raises(LayoutError) as err:
        load_layout(path)
    assert "tensioner.preload_Nm" in str(err.value) and "unstretched_length_m" in str(err.value)


@pytest.mark.parametrize("edit, message", [
    (("n_elements = 60", "n_elements = 12"),
     r"belt.n_elements: 12 is too coarse: elements of .* m cannot lie on pulley .* "
     r"\(cord radius .* m\); must be >= \d+"),
    (("stiffness_linear_N_per_m2 = 2.0e8", "stiffness_linear_N_per_m2 = 1.0"),
     r"contact.stiffness_linear_N_per_m2: 1.0 is too soft: .* must be >= [\d.e+]+"),
])
def test_discretization_and_contact_must_suit_the_smallest_pulley(tmp_path, edit, message):
    """Elements longer than the smallest pulley's cord radius cannot lie on it, and a contact
    so soft that the pretension sinks the belt 5 % of that radius deep is no contact: both are
    refused when the layout is read, naming the field, the value and the bound."""
    path = tmp_path / "drive.toml"
    path.write_text(variant(edit))
    with pytest.raises(LayoutError, match=message):
        load_layout(path)


@pytest.mark.parametrize("table, key, bounds", [
    ("belt", "pretension_N", Bounds(0.0, None, False, False)),
    ("belt", "groove_angle_rad", Bounds(0.0, math.pi, False, True)),
    ("belt", "n_elements", Bounds(12, 2000, True, True)),
    ("tensioner", "stop_min_rad", Bounds(None, 0.0, False, False)),
    ("friction", "static_ratio", Bounds(1.0, None, True, False)),
    ("friction", "gms_weights", Bounds(0.0, None, False, False)),  # each item
])
def test_field_bounds_are_the_rules_validate_applies(table, key, bounds):
    """Other interfaces (the FMU's parameter ranges) ask the layout for a key's range instead
    of restating it; the range is the one loading enforces: a value just outside is refused."""
    assert field_bounds(table, key) == bounds
    if table == "belt" and bounds.low is not None and not bounds.low_inclusive:
        with pytest.raises(LayoutError, match=f"belt.{key}"):
            load_layout_text(VALID.replace("pretension_N = 400.0", f"{key} = {bounds.low!r}"))


def test_field_bounds_refuse_what_is_not_a_number():
    with pytest.raises(TypeError, match="friction.law is not a number"):
        field_bounds("friction", "law")
    with pytest.raises(KeyError, match="no key 'pretension' in \\[belt\\]"):
        field_bounds("belt", "pretension")


# ---------------------------------------------------------------------------------------------
# Order and sense (belt_fmu.model.layout_checks): crossing spans, the tensioner's side
# ---------------------------------------------------------------------------------------------


def _default_with(rotation="ccw", reverse=False):
    """The built-in drive with its crank turned ``rotation``, its pulleys after the crank
    listed in reverse if ``reverse``."""
    layout = load_layout()
    pulleys = layout.pulleys[:1] + (layout.pulleys[:0:-1] if reverse else layout.pulleys[1:])
    data = dataclasses.replace(layout, pulleys=pulleys).with_drive(crank_rotation=rotation).to_data()
    return data


def test_neighbouring_spans_that_cross_are_refused_naming_both():
    """The built-in drive with the crank turned clockwise but the pulleys in the same order:
    the back-side idlers and tensioner now lie inside the loop, the belt 245 mm longer, and
    two pairs of neighbouring spans cross (tensioner -> alternator1 with alternator1 -> idler1,
    water_pump -> alternator2 with alternator2 -> idler2); each is named."""
    from belt_fmu.layout import load_layout_data
    with pytest.raises(LayoutError) as err:
        load_layout_data(_default_with("cw"), "d.toml")
    crossing = [p for p in err.value.problems if "crosses the span" in p]
    assert "the span tensioner -> alternator1 crosses the span alternator1 -> idler1" in crossing[0]
    assert "the span water_pump -> alternator2 crosses the span alternator2 -> idler2" in crossing[1]
    assert len(crossing) == 2


def test_the_built_in_drive_has_no_warnings():
    assert load_layout().warnings == ()


def test_reversed_travel_order_warns_of_the_tensioner_on_the_tight_side():
    """Reversing the travel order with the crank turned the other way is the same drawing, a
    valid drive, but the tensioner follows the loads instead of preceding them: it sits on
    the crank's tight span. A warning names the tensioner pulley."""
    from belt_fmu.layout import load_layout_data
    layout = load_layout_data(_default_with("cw", reverse=True), "d.toml")
    assert len(layout.warnings) == 1
    assert layout.warnings[0].startswith("d.toml: pulleys.tensioner: the tensioner is on the tight side")


def test_tensioner_on_tight_side_follows_the_tension_rise():
    """By hand, 1 N m on alternator1 alone (cord radius 29.2 mm): the tension rises by
    1 / 0.0292 = 34.2 N across it. In the built-in order (crank, tensioner, alternator1, ...)
    both of the tensioner's spans lie before the rise, at 0 N above the slack span: mean
    0 < 34.2 / 2, slack side. In the reversed order (..., alternator1, tensioner, crank)
    both lie after it, at 34.2 N: mean 34.2 > 17.1, tight side. No load: no side."""
    from belt_fmu.model.layout_checks import tensioner_on_tight_side
    layout = load_layout()
    names = [p.name for p in layout.pulleys]
    torques = [0.0] * len(names)
    torques[names.index("alternator1")] = 1.0
    assert not tensioner_on_tight_side(layout, torques)
    assert not tensioner_on_tight_side(layout, [0.0] * len(names))
    reversed_layout = load_layout_text(_reversed_toml())
    torques = [0.0] * len(names)
    torques[[p.name for p in reversed_layout.pulleys].index("alternator1")] = 1.0
    assert tensioner_on_tight_side(reversed_layout, torques)


def _reversed_toml():
    from belt_fmu.layout import load_layout_data
    return load_layout_data(_default_with("cw", reverse=True)).to_toml()
