"""Belt-drive layouts: TOML files describing one drive, read into frozen dataclasses.

A layout file has the tables ``[drive]``, ``[belt]``, ``[contact]``, ``[friction]``, one
``[[pulleys]]`` table per pulley in belt travel order, and an optional ``[tensioner]``.
SI units throughout; every key carries its unit in its name (``radius_m``, ``pretension_N``,
``inertia_kgm2``, ...). The format, its sign conventions and the rules checked on loading are
documented in ``docs/layout-format.md``; that document is the contract this module implements.

The dataclass field names are exactly the TOML keys, and their defaults are the defaults of
the optional keys. Each field's metadata holds the rule its value must satisfy, so a key's
type, range and default are declared in one place.

Loading is two steps: :func:`validate` checks the parsed TOML and returns *all* problems as
readable lines ("{source}: {field}: {value!r} {what is allowed}"); only if there are none are
the dataclasses built. :func:`load_layout` and :func:`load_layout_text` raise
:class:`LayoutError` carrying every problem at once.
"""
from __future__ import annotations

import dataclasses
import difflib
import errno
import importlib.resources
import math
import re
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .model import datasheet
from .model.inputs import CRANK_SPEED_RANGE
from .model.layout_checks import geometry_problems, layout_warnings

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

__all__ = [
    "Belt",
    "Contact",
    "Drive",
    "Friction",
    "Layout",
    "LayoutError",
    "Pulley",
    "Tensioner",
    "field_bounds",
    "field_rule",
    "load_layout",
    "load_layout_data",
    "load_layout_text",
    "validate",
]

DEFAULT_LAYOUT = "default.toml"  # in the package folder belt_fmu/layouts/
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TORQUE_TABLE_ROLES = ("accessory", "water_pump")
ROLE_COUNTS = {"crankshaft": True, "water_pump": False, "tensioner": False}  # role: exactly one?
#: how a pulley's load torque is given: by its torque table (or none), or by an input (a port)
PULLEY_LOADS = ("table", "input")
#: roles whose load may be an input (the water pump has its own input, water_pump_torque)
INPUT_LOAD_ROLES = ("accessory",)
#: the crankshaft's causality: its speed is an input, or the engine torque is (speed an output)
CRANK_INPUTS = ("speed", "torque")
#: pulley names a pulley with an input may not have: its FMU variables ``{name}_torque``,
#: ``{name}_speed``, ``{name}_angle`` would clash with the crank's and the water pump's
RESERVED_PORT_NAMES = ("crank", "water_pump", "engine")
BELT_LENGTH_KEYS = ("pretension_N", "unstretched_length_m")
#: friction laws a layout may name (belt_fmu.model.friction implements them)
FRICTION_LAWS = ("creep_polynomial", "tanh", "bristle", "dahl", "lugre", "gms")
GMS_MAX_ELEMENTS = 8  # Maxwell-slip elements per contact at most
#: Magnitudes a layout may have. A front-end accessory drive fits in a 1 m box; these bounds
#: are ten times wider, so that they only refuse values that are no drive at all (a typo, a
#: unit slip: mm for m) before they reach the model, where they would overflow or hang.
MAX_COORDINATE_M = 10.0  # |x|, |y| of centres and the pivot [m]
MAX_RADIUS_M = 2.0  # pulley radius [m]
MAX_THICKNESS_M = 0.05  # belt height [m]
MAX_MASS_PER_LENGTH = 10.0  # [kg/m] (a 6PK belt: 0.1 kg/m; the heaviest flat power belts: ~2 kg/m)
#: Magnitudes of the values a host may set as FMU parameters (belt_fmu.slave.PARAMETERS), wide
#: in the same sense: dry rubber on steel reaches a friction coefficient of about 1.5; tensioner
#: springs of accessory drives have 10-200 N m/rad and their torques stay below 100 N m.
MAX_FRICTION_COEFFICIENT = 5.0
SPRING_RATE_RANGE_NM_PER_RAD = (0.1, 1.0e5)
MAX_TENSIONER_TORQUE_NM = 1.0e3
#: [N m] a pulley bearing's Coulomb drag: a rolling bearing with its seals drags 0.01-0.5 N m
MAX_BEARING_FRICTION_NM = 100.0
#: [kW] an accessory's power: a belt starter-generator reaches 15-25 kW
MAX_POWER_KW = 1.0e3
#: elements the model accepts at most: the cost of a step grows with them (the default
#: drive's 150 run faster than real time; 2000 take ~15 times longer per step, and the step
#: shrinks with the element length, see belt_fmu.model.layout_checks.MIN_TIME_STEP)
MAX_ELEMENTS = 2000
#: fidelity levels a layout may select (belt_fmu.model.system.make_drive builds them)
MODELS = ("discretized", "lumped")
#: what a model reports at a communication point: its outputs there ("sample"), or each
#: output's mean over the last communication interval ("average": the discretized belt's
#: polygon ripple cannot alias into outputs sampled more slowly than it)
OUTPUT_MODES = ("sample", "average")


# ---------------------------------------------------------------------------------------------
# Value rules: each checks one TOML value and converts it to the dataclass field's type.
# ``problem(value)`` returns None if the value is allowed, else "must be ..." (what is allowed).
# ---------------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    """Bound for messages: 'pi' for math.pi, else the shortest readable number."""
    return "pi" if x == math.pi else f"{x:g}"


def _is_number(value: Any) -> bool:
    """True for TOML integers and floats; booleans are not numbers."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class _Real:
    """A finite number (a TOML integer is accepted) within optional bounds."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None

    @property
    def bounds(self) -> str:
        """The bounds as text: '> 0', '< 0', 'in (0, 1]', or '' when unbounded."""
        low = ("(", self.gt) if self.gt is not None else ("[", self.ge)
        high = (")", self.lt) if self.lt is not None else ("]", self.le)
        if low[1] is not None and high[1] is not None:
            return f"in {low[0]}{_fmt(low[1])}, {_fmt(high[1])}{high[0]}"
        if low[1] is not None:
            return f"{'>' if low[0] == '(' else '>='} {_fmt(low[1])}"
        if high[1] is not None:
            return f"{'<' if high[0] == ')' else '<='} {_fmt(high[1])}"
        return ""

    def within(self, x: float) -> bool:
        """Whether the number ``x`` satisfies the bounds."""
        return (
            (self.gt is None or x > self.gt)
            and (self.ge is None or x >= self.ge)
            and (self.lt is None or x < self.lt)
            and (self.le is None or x <= self.le)
        )

    def problem(self, value: Any) -> str | None:
        if not _is_number(value):
            return f"must be a number {self.bounds}".rstrip()
        if not math.isfinite(value):
            return f"must be a finite number {self.bounds}".rstrip()
        return None if self.within(value) else f"must be {self.bounds}"

    def convert(self, value: Any) -> float:
        return float(value)


@dataclass(frozen=True)
class _Integer:
    """An integer (not a float, not a boolean) >= ``ge`` and, if given, <= ``le``."""

    ge: int
    le: int | None = None

    def problem(self, value: Any) -> str | None:
        if (isinstance(value, int) and not isinstance(value, bool) and value >= self.ge
                and (self.le is None or value <= self.le)):
            return None
        if self.le is None:
            return f"must be an integer >= {self.ge}"
        return f"must be an integer in [{self.ge}, {self.le}]"

    def convert(self, value: Any) -> int:
        return value


@dataclass(frozen=True)
class _Choice:
    """One string out of a fixed set."""

    choices: tuple[str, ...]

    def problem(self, value: Any) -> str | None:
        if isinstance(value, str) and value in self.choices:
            return None
        return "must be one of " + ", ".join(repr(c) for c in self.choices)

    def convert(self, value: Any) -> str:
        return value


@dataclass(frozen=True)
class _Text:
    """Free text."""

    def problem(self, value: Any) -> str | None:
        return None if isinstance(value, str) else "must be a string"

    def convert(self, value: Any) -> str:
        return value


@dataclass(frozen=True)
class _Name:
    """An identifier-like name, ``[A-Za-z_][A-Za-z0-9_]*``."""

    def problem(self, value: Any) -> str | None:
        if isinstance(value, str) and NAME_PATTERN.fullmatch(value):
            return None
        return f"must be a name matching {NAME_PATTERN.pattern}"

    def convert(self, value: Any) -> str:
        return value


@dataclass(frozen=True)
class _Point:
    """A vector [x, y] of two finite numbers, each within +-``limit`` [``unit``] (a point
    [m] within +-MAX_COORDINATE_M by default)."""

    limit: float = MAX_COORDINATE_M
    unit: str = "m"

    def problem(self, value: Any) -> str | None:
        coordinate = _Real(ge=-self.limit, le=self.limit)
        if isinstance(value, list) and len(value) == 2 and all(coordinate.problem(v) is None for v in value):
            return None
        return f"must be [x, y], two numbers in [-{self.limit:g}, {self.limit:g}] {self.unit}"

    def convert(self, value: Any) -> tuple[float, float]:
        return (float(value[0]), float(value[1]))


@dataclass(frozen=True)
class _Series:
    """An array of finite numbers within ``item`` bounds (at least ``min_length``, at most
    ``max_length`` of them), optionally increasing."""

    item: _Real = _Real()  # any finite number
    increasing: bool = False
    min_length: int = 2
    max_length: int | None = None

    def problem(self, value: Any) -> str | None:
        ok = (
            isinstance(value, (list, tuple))
            and len(value) >= self.min_length
            and (self.max_length is None or len(value) <= self.max_length)
            and all(self.item.problem(v) is None for v in value)
            and (not self.increasing or all(a < b for a, b in zip(value, value[1:])))
        )
        if ok:
            return None
        count = f"at least {self.min_length}" + (f" and at most {self.max_length}" if self.max_length else "")
        what = f"must be an array of {count} numbers {self.item.bounds}".rstrip()
        return what + (", strictly increasing" if self.increasing else "")

    def convert(self, value: Any) -> tuple[float, ...]:
        return tuple(float(v) for v in value)


def _key(rule, default: Any = MISSING):
    """Dataclass field for one TOML key: its value ``rule`` and, if optional, its default."""
    return field(default=default, metadata={"rule": rule})


FINITE = _Real()
POSITIVE = _Real(gt=0.0)
NON_NEGATIVE = _Real(ge=0.0)
FRICTION_COEFFICIENT = _Real(gt=0.0, le=MAX_FRICTION_COEFFICIENT)
TENSIONER_TORQUE = _Real(ge=0.0, le=MAX_TENSIONER_TORQUE_NM)
SPRING_RATE = _Real(ge=SPRING_RATE_RANGE_NM_PER_RAD[0], le=SPRING_RATE_RANGE_NM_PER_RAD[1])


# ---------------------------------------------------------------------------------------------
# The layout dataclasses. Field names are the TOML keys; defaults are the optional keys'
# defaults; a field without a default is a required key.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Drive:
    """``[drive]``: name, crankshaft rotation sense, the pulley whose hub load is reported and
    the model (fidelity level) that runs the drive."""

    name: str = _key(_Text(), "belt drive")  # free text
    crank_rotation: str = _key(_Choice(("ccw", "cw")), "ccw")  # crankshaft sense in the drawing
    headline_pulley: str | None = _key(_Name(), None)  # None: see Layout.headline_pulley_name
    crank_input: str = _key(_Choice(CRANK_INPUTS), "speed")  # crank speed or engine torque is the input
    # torque-driven crank's start speed, within the crank speed input's range
    initial_crank_speed_rad_per_s: float = _key(_Real(ge=CRANK_SPEED_RANGE[0], le=CRANK_SPEED_RANGE[1]), 0.0)
    # gravity on the belt, in the drawing's frame; bounded at ten times the earth's
    gravity_m_per_s2: tuple[float, float] = _key(_Point(limit=100.0, unit="m/s2"), (0.0, 0.0))
    model: str = _key(_Choice(MODELS), "discretized")  # fidelity level: which model runs the drive
    output_mode: str = _key(_Choice(OUTPUT_MODES), "average")  # outputs sampled or averaged over each interval


@dataclass(frozen=True, kw_only=True)
class Belt:
    """``[belt]``: the belt as a Kelvin-Voigt beam; exactly one of the last two is not None."""

    mass_per_length_kg_per_m: float = _key(_Real(gt=0.0, le=MAX_MASS_PER_LENGTH))  # m' [kg/m]
    axial_stiffness_N: float = _key(POSITIVE)  # EA [N]
    bending_stiffness_Nm2: float = _key(POSITIVE)  # EI [N m^2]
    axial_damping_Ns: float = _key(NON_NEGATIVE, 0.5)  # axial force += c_a * strain rate [N s]
    bending_damping_Nm2s: float = _key(NON_NEGATIVE, 1.0e-7)  # moment += c_b * curvature rate [N m^2 s]
    transverse_damping_Ns_per_m2: float = _key(NON_NEGATIVE, 5.0)  # span vibration damping per length
    thickness_m: float = _key(_Real(gt=0.0, le=MAX_THICKNESS_M))  # total belt height h [m]
    cord_offset_m: float = _key(NON_NEGATIVE, 1.0e-3)  # ribbed contact (effective) line to cord line [m], <= h
    back_cord_distance_m: float | None = _key(NON_NEGATIVE, None)  # back to cord line [m]; None: h - cord offset
    groove_angle_rad: float = _key(_Real(gt=0.0, le=math.pi), 0.6981317)  # poly-V angle phi (pi: flat)
    n_elements: int = _key(_Integer(ge=12, le=MAX_ELEMENTS))  # number of beam elements
    pretension_N: float | None = _key(POSITIVE, None)  # installation span tension [N]
    unstretched_length_m: float | None = _key(POSITIVE, None)  # unstretched cord length [m]
    length_m: float | None = _key(POSITIVE, None)  # declared effective length (data sheet) [m], for a check
    length_tolerance_m: float | None = _key(POSITIVE, None)  # its tolerance [m]; required with length_m

    @property
    def back_cord_distance(self) -> float:
        """Distance [m] from the belt's back to its cord line: ``back_cord_distance_m``, else
        ``thickness_m - cord_offset_m``."""
        if self.back_cord_distance_m is not None:
            return self.back_cord_distance_m
        return self.thickness_m - self.cord_offset_m


@dataclass(frozen=True, kw_only=True)
class Contact:
    """``[contact]``: normal force per unit belt length N' = c1 p^2 + c2 p + b dp/dt, N' >= 0."""

    stiffness_quadratic_N_per_m3: float = _key(NON_NEGATIVE, 0.0)  # c1 [N/m^3]
    stiffness_linear_N_per_m2: float = _key(POSITIVE)  # c2 [N/m^2]
    damping_Ns_per_m2: float = _key(NON_NEGATIVE, 2.0e3)  # b [N s/m^2]


@dataclass(frozen=True, kw_only=True)
class Friction:
    """``[friction]``: the belt-pulley friction law and its parameters (dimensionless unless
    the name carries a unit)."""

    law: str = _key(_Choice(FRICTION_LAWS), "creep_polynomial")
    mu: float = _key(FRICTION_COEFFICIENT)  # rubber-steel coefficient; ribbed side uses mu / sin(phi/2)
    back_side_mu: float | None = _key(FRICTION_COEFFICIENT, None)  # flat back on a smooth pulley; None: mu
    slip_peak: float = _key(POSITIVE, 0.01)  # creep_polynomial s1
    slip_saturation: float = _key(POSITIVE, 0.05)  # creep_polynomial s2 > s1
    saturation_ratio: float = _key(_Real(gt=0.0, le=1.0), 1.0)  # mu(s2) / mu(s1)
    reference_speed_m_per_s: float = _key(POSITIVE, 1.0)  # floor of |v_belt| in the creep rate
    velocity_threshold_m_per_s: float = _key(POSITIVE, 0.01)  # tanh law: tanh(4 v / v_thr)
    bristle_stiffness_N_per_m2: float = _key(POSITIVE, 5.0e7)  # bristle law, per belt length
    bristle_damping_Ns_per_m2: float | None = _key(NON_NEGATIVE, None)  # per belt length; None: sqrt(k m')
    dahl_stiffness_per_m: float = _key(POSITIVE, 1.0e4)  # Dahl sigma [1/m] ([Kubas 2017] case 1: 1e4)
    static_ratio: float = _key(_Real(ge=1.0), 1.2)  # LuGre, GMS: static / Coulomb coefficient
    stribeck_velocity_m_per_s: float = _key(POSITIVE, 0.01)  # LuGre, GMS: Stribeck velocity v_s
    lugre_stiffness_per_m: float = _key(POSITIVE, 1.0e4)  # LuGre sigma0 [1/m]
    lugre_damping_s_per_m: float = _key(NON_NEGATIVE, 1.0)  # LuGre sigma1 [s/m]
    lugre_viscous_s_per_m: float = _key(NON_NEGATIVE, 0.0)  # LuGre sigma2 [s/m]
    gms_weights: tuple[float, ...] = _key(_Series(POSITIVE, min_length=1, max_length=GMS_MAX_ELEMENTS),
                                          (0.5, 0.3, 0.2))  # GMS nu_k, summing to 1 ([Kubas and Harlecki 2021] eq. 4)
    gms_stiffness_per_m: tuple[float, ...] = _key(_Series(POSITIVE, min_length=1, max_length=GMS_MAX_ELEMENTS),
                                                  (3.0e4, 1.0e4, 3.0e3))  # GMS sigma_mu_k [1/m] (eq. 7)
    gms_attraction_per_s: float = _key(POSITIVE, 1.0e3)  # GMS attraction parameter c [1/s] (eq. 10)

    @property
    def mu_back(self) -> float:
        """Friction coefficient of back-side contact: ``back_side_mu``, else ``mu``."""
        return self.mu if self.back_side_mu is None else self.back_side_mu


@dataclass(frozen=True, kw_only=True)
class Pulley:
    """``[[pulleys]]``: one pulley. ``inertia_kgm2`` is required (> 0) except for a
    speed-driven crankshaft (default 0.0). The optional load-torque table (role "accessory"
    or "water_pump") is interpolated linearly in speed and held at its ends; an accessory
    with ``load = "input"`` takes its load torque from the input ``{name}_torque`` instead."""

    name: str = _key(_Name())  # unique
    role: str = _key(_Choice(("crankshaft", "water_pump", "accessory", "idler", "tensioner")))
    center_m: tuple[float, float] = _key(_Point())  # centre (tensioner: installed position) [m]
    # radius of the surface the belt touches [m] (ribbed: the effective radius); or one of the
    # data-sheet diameters below, converted to it on loading (belt_fmu.model.datasheet)
    radius_m: float | None = _key(_Real(gt=0.0, le=MAX_RADIUS_M), None)
    side: str = _key(_Choice(("ribbed", "back")), "ribbed")  # belt side touching the pulley
    pitch_diameter_m: float | None = _key(_Real(gt=0.0, le=2.0 * MAX_RADIUS_M), None)  # cord-line diameter
    effective_diameter_m: float | None = _key(_Real(gt=0.0, le=2.0 * MAX_RADIUS_M), None)  # ribbed side only
    outside_diameter_m: float | None = _key(_Real(gt=0.0, le=2.0 * MAX_RADIUS_M), None)  # back side only
    inertia_kgm2: float = _key(NON_NEGATIVE, 0.0)  # polar inertia [kg m^2]
    bearing_damping_Nms_per_rad: float = _key(NON_NEGATIVE, 1.0e-4)  # viscous bearing loss
    bearing_friction_torque_Nm: float = _key(_Real(ge=0.0, le=MAX_BEARING_FRICTION_NM), 0.0)  # Coulomb bearing drag
    torque_table_speed_rad_per_s: tuple[float, ...] | None = _key(_Series(NON_NEGATIVE, True), None)
    torque_table_Nm: tuple[float, ...] | None = _key(_Series(), None)  # load torque [N m]
    # or the load as power at speeds > 0 (data sheet), converted to a torque table on loading
    power_table_speed_rad_per_s: tuple[float, ...] | None = _key(_Series(POSITIVE, True, min_length=1), None)
    power_table_kW: tuple[float, ...] | None = _key(_Series(_Real(ge=-MAX_POWER_KW, le=MAX_POWER_KW),
                                                            min_length=1), None)
    load: str = _key(_Choice(PULLEY_LOADS), "table")  # "input": load torque from the input {name}_torque


@dataclass(frozen=True, kw_only=True)
class Tensioner:
    """``[tensioner]``: the arm carrying the pulley with role "tensioner". Angles are relative
    to the installed arm angle. ``friction_torque_return_Nm`` given as None becomes
    ``friction_torque_Nm``."""

    pivot_m: tuple[float, float] = _key(_Point())  # arm pivot [m]
    arm_inertia_kgm2: float = _key(POSITIVE)  # arm + pulley about the pivot [kg m^2]
    spring_rate_Nm_per_rad: float | None = _key(SPRING_RATE, None)  # torsional spring rate k; or the data sheet's
    preload_Nm: float | None = _key(_Real(gt=0.0, le=MAX_TENSIONER_TORQUE_NM), None)  # None: from the pretension
    damping_Nms_per_rad: float = _key(NON_NEGATIVE, 0.0)  # viscous damping
    friction_torque_Nm: float = _key(TENSIONER_TORQUE, 0.0)  # Coulomb torque, arm moving off the belt
    friction_torque_return_Nm: float | None = _key(TENSIONER_TORQUE, None)  # arm moving toward the belt
    friction_velocity_threshold_rad_per_s: float = _key(POSITIVE, 1.0e-3)  # Coulomb regularization
    stop_min_rad: float = _key(_Real(lt=0.0), -0.35)  # end stop, below the installed angle
    stop_max_rad: float = _key(_Real(gt=0.0), 0.35)  # end stop, above the installed angle
    stop_stiffness_Nm_per_rad: float = _key(POSITIVE, 2.0e3)
    stop_damping_Nms_per_rad: float = _key(NON_NEGATIVE, 1.0)
    # the data-sheet form (instead of spring_rate_Nm_per_rad, preload_Nm, stop_min_rad, stop_max_rad),
    # converted on loading (belt_fmu.model.datasheet): angles on the maker's scale [deg]
    free_arm_angle_deg: float | None = _key(_Real(ge=-360.0, le=360.0), None)
    nominal_arm_angle_deg: float | None = _key(_Real(ge=-360.0, le=360.0), None)  # installed
    load_stop_angle_deg: float | None = _key(_Real(ge=-360.0, le=360.0), None)
    free_arm_torque_Nm: float | None = _key(TENSIONER_TORQUE, None)  # spring torque at the free arm
    spring_rate_Nm_per_deg: float | None = _key(_Real(ge=math.radians(SPRING_RATE_RANGE_NM_PER_RAD[0]),
                                                      le=math.radians(SPRING_RATE_RANGE_NM_PER_RAD[1])), None)
    arm_length_m: float | None = _key(_Real(gt=0.0, le=MAX_COORDINATE_M), None)  # checked against the drawing

    def __post_init__(self):
        if self.friction_torque_return_Nm is None:
            object.__setattr__(self, "friction_torque_return_Nm", self.friction_torque_Nm)


# Layout tables in file order, and the dataclass each one is read into.
TABLES: dict[str, type] = {
    "drive": Drive,
    "belt": Belt,
    "contact": Contact,
    "friction": Friction,
    "pulleys": Pulley,
    "tensioner": Tensioner,
}
REQUIRED_TABLES = ("belt", "contact", "friction", "pulleys")
# Tables of the design report, not of the model: kept as given in Layout.design and checked
# where they are read (belt_fmu/duty.py, belt_fmu/design_report.py); the model ignores them.
DESIGN_TABLES = ("duty_points", "design_limits")


def _fields(cls: type) -> dict[str, dataclasses.Field]:
    """The key fields of a layout table dataclass, by key."""
    return {f.name: f for f in dataclasses.fields(cls)}


def field_rule(table: str, key: str):
    """The rule the value of ``table.key`` must satisfy, as :func:`validate` applies it: an
    object with ``problem(value)`` (None if allowed, else "must be ...") and, for numbers,
    the bounds (see :func:`field_bounds`). Rules across keys (docs/layout-format.md) are not
    part of it. KeyError names the allowed tables or keys."""
    if table not in TABLES:
        raise KeyError(f"no layout table {table!r}; tables: {', '.join(TABLES)}")
    fields = _fields(TABLES[table])
    if key not in fields:
        raise KeyError(f"no key {key!r} in [{table}]; keys: {', '.join(fields)}")
    return fields[key].metadata["rule"]


class Bounds(NamedTuple):
    """Range of a number: ``low``/``high`` None where unbounded; the flags say whether the
    bound itself is allowed."""

    low: float | None
    high: float | None
    low_inclusive: bool
    high_inclusive: bool


def field_bounds(table: str, key: str) -> Bounds:
    """Range of the number ``table.key`` (e.g. ``field_bounds("belt", "pretension_N")`` is
    ``Bounds(0.0, None, False, False)``: > 0), from the rule :func:`validate` applies, so that
    other interfaces (the FMU's parameter ranges) state the same bounds. For an array the
    range of its items. TypeError for a key that is not a number."""
    rule = field_rule(table, key)
    if isinstance(rule, _Series):
        rule = rule.item
    if isinstance(rule, _Integer):
        return Bounds(rule.ge, rule.le, True, rule.le is not None)
    if not isinstance(rule, _Real):
        raise TypeError(f"{table}.{key} is not a number: it {rule.problem(None)}")
    low, low_inclusive = (rule.gt, False) if rule.gt is not None else (rule.ge, rule.ge is not None)
    high, high_inclusive = (rule.lt, False) if rule.lt is not None else (rule.le, rule.le is not None)
    return Bounds(low, high, low_inclusive, high_inclusive)


@dataclass(frozen=True)
class Layout:
    """One belt drive, as read from a layout file. ``source`` (the file it was read from) does
    not take part in comparisons."""

    drive: Drive
    belt: Belt
    contact: Contact
    friction: Friction
    pulleys: tuple[Pulley, ...]
    tensioner: Tensioner | None = None
    source: str = field(default="<string>", compare=False)
    #: what the layout's checks warn of (belt_fmu.model.layout_checks.layout_warnings), each a
    #: line "{source}: {field}: ..."; the command line prints them as "warning: ..."
    warnings: tuple[str, ...] = field(default=(), compare=False)
    design: dict = field(default_factory=dict, compare=False, repr=False)  # DESIGN_TABLES as given

    def with_drive(self, **settings) -> "Layout":
        """This layout with the ``[drive]`` ``settings`` changed (``model="lumped"``, say); the
        values are not checked, as :func:`load_layout` checks a file's."""
        return dataclasses.replace(self, drive=dataclasses.replace(self.drive, **settings))

    @property
    def headline_pulley_name(self) -> str:
        """Pulley whose hub-load magnitude is the headline output: ``drive.headline_pulley``,
        else the first idler, else the first pulley that is not the crankshaft."""
        if self.drive.headline_pulley is not None:
            return self.drive.headline_pulley
        idlers = [p.name for p in self.pulleys if p.role == "idler"]
        driven = [p.name for p in self.pulleys if p.role != "crankshaft"]
        return (idlers or driven)[0]

    def pulley(self, name: str) -> Pulley:
        """The pulley called ``name`` (KeyError if there is none)."""
        for p in self.pulleys:
            if p.name == name:
                return p
        names = ", ".join(p.name for p in self.pulleys)
        raise KeyError(f"no pulley {name!r} in {self.source}; pulleys: {names}")

    def _role_index(self, role: str) -> int | None:
        return next((j for j, p in enumerate(self.pulleys) if p.role == role), None)

    @property
    def crank_index(self) -> int:
        """Index of the crankshaft pulley."""
        return self._role_index("crankshaft")

    @property
    def tensioner_index(self) -> int | None:
        """Index of the tensioner pulley, or None."""
        return self._role_index("tensioner")

    @property
    def torque_driven_crank(self) -> bool:
        """Whether the engine torque, not the crank speed, is the crank's input."""
        return self.drive.crank_input == "torque"

    @property
    def port_pulleys(self) -> tuple[str, ...]:
        """Names of the pulleys whose load torque is an input (``load = "input"``), in travel
        order."""
        return tuple(p.name for p in self.pulleys if p.load == "input")

    @property
    def water_pump_index(self) -> int | None:
        """Index of the water pump pulley, or None."""
        return self._role_index("water_pump")

    def to_toml(self) -> str:
        """The layout as TOML text with every key explicit (defaults included, None omitted);
        :func:`load_layout_text` reads it back to an equal Layout."""
        tables = [("[drive]", self.drive), ("[belt]", self.belt), ("[contact]", self.contact)]
        tables += [("[friction]", self.friction)] + [("[[pulleys]]", p) for p in self.pulleys]
        if self.tensioner is not None:
            tables.append(("[tensioner]", self.tensioner))
        header = "# belt drive layout; format: docs/layout-format.md\n\n"
        return header + "\n".join(_toml_table(name, table) for name, table in tables)

    def to_data(self) -> dict:
        """The layout as plain data (the parsed-TOML form, None omitted, tuples as lists);
        :func:`load_layout_data` reads it back to an equal Layout. JSON-serializable."""

        def table(obj) -> dict:
            return {f.name: list(v) if isinstance(v, tuple) else v
                    for f in dataclasses.fields(obj) if (v := getattr(obj, f.name)) is not None}

        data = {"drive": table(self.drive), "belt": table(self.belt), "contact": table(self.contact),
                "friction": table(self.friction), "pulleys": [table(p) for p in self.pulleys]}
        if self.tensioner is not None:
            data["tensioner"] = table(self.tensioner)
        return data

    def write(self, path, overwrite: bool = False) -> Path:
        """Write :meth:`to_toml` to ``path`` and return it as a Path. An existing file is
        replaced only if ``overwrite``; otherwise FileExistsError names it."""
        path = Path(path)
        try:
            with open(path, "w" if overwrite else "x", encoding="utf-8", newline="\n") as f:
                f.write(self.to_toml())
        except FileExistsError:
            raise FileExistsError(
                errno.EEXIST, "layout file exists; pass overwrite=True to replace it", str(path)
            ) from None
        return path


# ---------------------------------------------------------------------------------------------
# Writing TOML
# ---------------------------------------------------------------------------------------------

_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in text:
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)  # int, or a finite float: repr is TOML and reads back exactly


def _toml_table(header: str, table) -> str:
    lines = [header]
    for f in dataclasses.fields(table):
        value = getattr(table, f.name)
        if value is not None:
            lines.append(f"{f.name} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


class _Report:
    """Collects problems as lines "{source}: {field}: ..."."""

    def __init__(self, source: str):
        self.source = source
        self.problems: list[str] = []

    def bad(self, path: str, value: Any, allowed: str) -> None:
        """A value that is not allowed: "{source}: {path}: {value!r} {allowed}"."""
        self.problems.append(f"{self.source}: {path}: {value!r} {allowed}")

    def note(self, path: str, text: str) -> None:
        """Any other problem at ``path`` (missing or unknown keys, ...)."""
        self.problems.append(f"{self.source}: {path}: {text}")


def _unknown(name: str, what: str, allowed) -> str:
    """Message for an unknown key or table, suggesting the closest allowed name."""
    allowed = list(allowed)
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown {what}; {hint}allowed {what}s: {', '.join(allowed)}"


def _check_table(report: _Report, path: str, table: Any, cls: type) -> dict[str, Any] | None:
    """Check one table against its dataclass: unknown keys, missing required keys and every
    value's rule. Returns the valid keys' values (None if ``table`` is not a table)."""
    if not isinstance(table, dict):
        report.bad(path, table, "must be a table")
        return None
    fields = _fields(cls)
    valid = {}
    for key, value in table.items():
        if key not in fields:
            report.note(f"{path}.{key}", _unknown(key, "key", fields))
            continue
        rule = fields[key].metadata["rule"]
        allowed = rule.problem(value)
        if allowed is None:
            valid[key] = value
        else:
            report.bad(f"{path}.{key}", value, allowed)
    for key, f in fields.items():
        if f.default is MISSING and key not in table:
            allowed = f.metadata["rule"].problem(None)  # the wrong-type message says what is allowed
            report.note(f"{path}.{key}", f"missing; required, {allowed.removeprefix('must be ')}")
    return valid


def _effective(valid: dict[str, Any], table: Any, cls: type, key: str) -> Any:
    """The value of ``key`` to use in checks across keys: the given value if it is valid, the
    default if it is not given, None if it is given but invalid (already reported)."""
    if isinstance(table, dict) and key in table:
        return valid.get(key)
    return _fields(cls)[key].default


def _check_belt(report: _Report, belt: Any, valid: dict[str, Any]) -> None:
    given = [k for k in BELT_LENGTH_KEYS if k in belt]
    one_of = f"give exactly one of {', '.join(BELT_LENGTH_KEYS)}"
    if not given:
        report.note(f"belt.{BELT_LENGTH_KEYS[0]}", f"missing; {one_of}")
    elif len(given) == 2:
        first, second = BELT_LENGTH_KEYS
        report.bad(f"belt.{second}", belt[second], f"conflicts with {first} = {belt[first]!r}; {one_of}")
    offset = _effective(valid, belt, Belt, "cord_offset_m")
    thickness = valid.get("thickness_m")
    if offset is not None and thickness is not None and offset > thickness:
        report.bad("belt.cord_offset_m", offset, f"must be <= thickness_m ({thickness!r})")
    back = valid.get("back_cord_distance_m")
    if back is not None and thickness is not None and back > thickness:
        report.bad("belt.back_cord_distance_m", back, f"must be <= thickness_m ({thickness!r})")


def _check_friction(report: _Report, friction: Any, valid: dict[str, Any]) -> None:
    peak = _effective(valid, friction, Friction, "slip_peak")
    saturation = _effective(valid, friction, Friction, "slip_saturation")
    if peak is not None and saturation is not None and saturation <= peak:
        report.bad("friction.slip_saturation", saturation, f"must be > slip_peak ({peak!r})")
    weights = _effective(valid, friction, Friction, "gms_weights")
    stiffness = _effective(valid, friction, Friction, "gms_stiffness_per_m")
    if weights is not None and stiffness is not None:
        if len(weights) != len(stiffness):
            report.bad("friction.gms_stiffness_per_m", list(stiffness),
                       f"must have one value per GMS element (gms_weights has {len(weights)})")
        if abs(sum(weights) - 1.0) > 1e-9:
            report.bad("friction.gms_weights", list(weights), "must sum to 1 ([Kubas and Harlecki 2021] eq. 4)")


def _check_pulley(report: _Report, path: str, pulley: dict[str, Any], valid: dict[str, Any]) -> None:
    """Checks within one pulley that involve its role: inertia and the torque table."""
    role = valid.get("role")
    if valid.get("load") == "input":
        if role is not None and role not in INPUT_LOAD_ROLES:
            report.bad(f"{path}.load", "input", f"not allowed for role {role!r}; only roles "
                       + " or ".join(repr(r) for r in INPUT_LOAD_ROLES) + " take their load from an input"
                       + {"water_pump": " (the water pump has its input water_pump_torque)",
                          "crankshaft": ' (for an engine-torque input set drive.crank_input = "torque")'}.get(role, ""))
        if valid.get("name") in RESERVED_PORT_NAMES:
            report.bad(f"{path}.name", valid["name"], "must not be one of " + ", ".join(RESERVED_PORT_NAMES)
                       + ' for a pulley with load = "input" (its inputs and outputs {name}_torque, '
                       "{name}_speed, {name}_angle would clash with the crank's and the water pump's)")
        for key in ("torque_table_speed_rad_per_s", "torque_table_Nm"):
            if key in pulley:
                report.bad(f"{path}.{key}", pulley[key], 'not allowed with load = "input" (the load torque '
                           "is the input); remove the table or the load key")
                break
    if role is not None and role != "crankshaft":
        if "inertia_kgm2" not in pulley:
            report.note(f"{path}.inertia_kgm2", f"missing; required for role {role!r}, a number > 0")
        elif valid.get("inertia_kgm2") == 0.0:
            report.bad(f"{path}.inertia_kgm2", pulley["inertia_kgm2"], f"must be > 0 for role {role!r}")
    speed_key, torque_key = "torque_table_speed_rad_per_s", "torque_table_Nm"
    given = [k for k in (speed_key, torque_key) if k in pulley]
    if not given:
        return
    if role is not None and role not in TORQUE_TABLE_ROLES:
        report.bad(
            f"{path}.{given[0]}",
            pulley[given[0]],
            f"not allowed for role {role!r}; a torque table is only for roles "
            + " or ".join(repr(r) for r in TORQUE_TABLE_ROLES),
        )
    elif len(given) == 1:
        missing = torque_key if given[0] == speed_key else speed_key
        report.note(f"{path}.{missing}", f"missing; give both {speed_key} and {torque_key}")
    elif speed_key in valid and torque_key in valid and len(valid[speed_key]) != len(valid[torque_key]):
        report.bad(
            f"{path}.{torque_key}",
            valid[torque_key],
            f"must have as many entries as {speed_key} ({len(valid[speed_key])})",
        )


def pulley_path(pulleys: list, i: int) -> str:
    """How messages name the ``i``-th of ``pulleys`` (its tables, as given or as checked):
    ``pulleys.NAME`` where its name is valid and unique (the key path ``sweep --vary`` takes
    too), else by position, ``pulleys[i]``."""
    names = [p.get("name") if isinstance(p, dict) else None for p in pulleys]
    name = names[i]
    if isinstance(name, str) and NAME_PATTERN.fullmatch(name) and names.count(name) == 1:
        return f"pulleys.{name}"
    return f"pulleys[{i}]"


def pulley_label(pulleys: list, i: int) -> str:
    """The ``i``-th of ``pulleys`` in a sentence: "pulley 'crank'" (or ``pulleys[i]``)."""
    path = pulley_path(pulleys, i)
    return f"pulley {pulleys[i]['name']!r}" if path.startswith("pulleys.") else path


def _check_pulleys(report: _Report, pulleys: Any) -> list[dict[str, Any]] | None:
    """Check the pulley tables one by one; returns each pulley's valid values (an empty dict
    for a pulley that is not a table), or None if ``pulleys`` is not an array."""
    if not isinstance(pulleys, list):
        report.bad("pulleys", pulleys, "must be an array of tables, one [[pulleys]] per pulley")
        return None
    valids = []
    for i, pulley in enumerate(pulleys):
        path = pulley_path(pulleys, i)
        valid = _check_table(report, path, pulley, Pulley)
        if valid is not None:
            _check_pulley(report, path, pulley, valid)
        valids.append(valid or {})
    return valids


def _check_names_and_roles(report: _Report, pulleys: list[dict[str, Any]], has_tensioner_table: bool):
    """Pulley count, unique names, role counts, and [tensioner] iff a tensioner pulley."""
    if len(pulleys) < 2:
        report.note("pulleys", f"{len(pulleys)} pulley(s) given; at least 2 are required")
    first_use: dict[str, int] = {}
    for i, p in enumerate(pulleys):
        name = p.get("name")
        if name in first_use:
            used = f"is already used by pulleys[{first_use[name]}]; names must be unique"
            report.bad(f"pulleys[{i}].name", name, used)  # by position: the name is not unique
        elif name is not None:
            first_use[name] = i
    with_role = {role: [i for i, p in enumerate(pulleys) if p.get("role") == role] for role in ROLE_COUNTS}
    for role, required in ROLE_COUNTS.items():
        indices = with_role[role]
        count = "exactly one pulley must" if required else "at most one pulley may"
        rule = f"{count} have role {role!r}"
        if required and not indices:
            report.note("pulleys", f"no pulley has role {role!r}; {rule}")
        for i in indices[1:]:
            report.bad(f"{pulley_path(pulleys, i)}.role", role,
                       f"repeats the role of {pulley_label(pulleys, indices[0])}; {rule}")
    if with_role["tensioner"] and not has_tensioner_table:
        i = with_role["tensioner"][0]
        report.note("tensioner", f"missing table; required because {pulley_label(pulleys, i)} has role 'tensioner'")
    elif has_tensioner_table and not with_role["tensioner"]:
        report.note("tensioner", "table given but no pulley has role 'tensioner'; remove it or add one")


def _check_crank_input(report: _Report, drive: dict[str, Any], pulleys: list[dict[str, Any]]) -> None:
    """A torque-driven crankshaft has an inertia (the crank pulley with what turns with it)."""
    if drive.get("crank_input") != "torque":
        return
    for i, p in enumerate(pulleys):
        if p.get("role") == "crankshaft" and not p.get("inertia_kgm2", 0.0) > 0.0:
            report.bad(f"{pulley_path(pulleys, i)}.inertia_kgm2", p.get("inertia_kgm2", 0.0),
                       'must be > 0 for a torque-driven crankshaft (drive.crank_input = "torque"): the '
                       "inertia of the crankshaft and what turns with it, reduced to the crank pulley")


def lumped_model_limits(drive: dict[str, Any], pulleys: list[dict[str, Any]]) -> list[tuple[str, Any, str]]:
    """What a layout run by the lumped model (``drive.model = "lumped"``) asks that only the
    discretized model models: (key path, value, what is allowed) for a torque-driven crank,
    accessory ports, gravity on the belt and more than :data:`belt_fmu.model.lumped.MAX_PULLEYS`
    pulleys."""
    if drive.get("model") != "lumped":
        return []
    from .model.lumped import MAX_PULLEYS

    limits = []
    use = 'with drive.model = "lumped"; the discretized model (model = "discretized") has it'
    if len(pulleys) > MAX_PULLEYS:
        limits.append(("pulleys", len(pulleys),
                       f"must be at most {MAX_PULLEYS} with drive.model = \"lumped\"; the discretized model "
                       "(model = \"discretized\") takes more"))
    if drive.get("crank_input") == "torque":
        limits.append(("drive.crank_input", "torque", f'must be "speed" {use}'))
    for i, p in enumerate(pulleys):
        if p.get("load") == "input":
            limits.append((f"{pulley_path(pulleys, i)}.load", "input", f'must be "table" (a port) {use}'))
    if any(drive.get("gravity_m_per_s2", (0.0, 0.0))):
        limits.append(("drive.gravity_m_per_s2", list(drive["gravity_m_per_s2"]), f"must be [0, 0] {use}"))
    return limits


def _check_headline(report: _Report, drive: dict[str, Any], pulleys: list[dict[str, Any]]) -> None:
    name = drive.get("headline_pulley")
    names = [p["name"] for p in pulleys if "name" in p]
    if name is not None and name not in names:
        report.bad("drive.headline_pulley", name, f"must name a pulley: {', '.join(names)}")


def _check_pivot(report: _Report, tensioner: dict[str, Any], pulleys: list[dict[str, Any]]) -> None:
    """The tensioner arm has a length: the pivot is not the tensioner pulley's centre."""
    pivot = tensioner.get("pivot_m")
    centers = [(i, p.get("center_m")) for i, p in enumerate(pulleys) if p.get("role") == "tensioner"]
    for i, center in centers:
        if pivot is not None and center is not None and math.dist(pivot, center) == 0.0:
            report.bad("tensioner.pivot_m", pivot,
                       f"must differ from {pulley_path(pulleys, i)}.center_m (arm length > 0)")


def _check_preload(report: _Report, belt: dict[str, Any], tensioner: Any) -> None:
    """Without a pretension the spring preload cannot be derived ([Scania thesis] eqs. 12.23-12.24)."""
    given = isinstance(tensioner, dict) and ("preload_Nm" in tensioner or "free_arm_torque_Nm" in tensioner)
    if isinstance(tensioner, dict) and not given and "unstretched_length_m" in belt:
        report.note("tensioner.preload_Nm", "missing; required when the belt is given by "
                   "unstretched_length_m (it is derived from pretension_N otherwise)")


def _check_overlap(report: _Report, pulleys: list[dict[str, Any]], thickness: float | None) -> None:
    """No two pulleys overlap: centre distance > r_a + r_b + belt thickness."""
    if thickness is None:
        return
    placed = [(i, p) for i, p in enumerate(pulleys) if "center_m" in p and "radius_m" in p]
    for a, (i, p) in enumerate(placed):
        for j, q in placed[a + 1:]:
            distance = math.dist(p["center_m"], q["center_m"])
            minimum = p["radius_m"] + q["radius_m"] + thickness
            if distance <= minimum:
                report.bad(
                    f"{pulley_path(pulleys, j)}.center_m",
                    q["center_m"],
                    f"overlaps {pulley_label(pulleys, i)}: {q.get('name', '?')!r} and {p.get('name', '?')!r} are "
                    f"{distance:.6g} m apart; the centre distance must be > {minimum:.6g} m "
                    f"(radii {q['radius_m']!r} + {p['radius_m']!r} + belt thickness {thickness!r})",
                )


def _check_sizes(report: _Report, pulleys: list[dict[str, Any]], raw: list) -> None:
    """Exactly one size key per pulley, on a side it is for."""
    keys = datasheet.PULLEY_SIZE_KEYS
    for i, (valid, pulley) in enumerate(zip(pulleys, raw)):
        if not isinstance(pulley, dict):
            continue
        path = pulley_path(raw, i)
        given = [k for k in keys if k in pulley]
        if not given:
            report.note(f"{path}.radius_m", f"missing; give exactly one of {', '.join(keys)}")
        for key in given[1:]:
            report.bad(f"{path}.{key}", pulley[key], f"conflicts with {given[0]} = {pulley[given[0]]!r}; "
                       f"give exactly one of {', '.join(keys)}")
        side = valid.get("side", "ribbed") if "side" not in pulley or "side" in valid else None
        for key in given:
            needed = datasheet.SIZE_KEY_SIDES[key]
            if needed is not None and side is not None and side != needed:
                other = "outside_diameter_m" if needed == "ribbed" else "effective_diameter_m"
                report.bad(f"{path}.{key}", pulley[key], f"is for a pulley with side = {needed!r}; this one has "
                           f"side = {side!r}: give {other} or pitch_diameter_m")


def _check_power_table(report: _Report, pulleys: list[dict[str, Any]], raw: list) -> None:
    """A power table: both keys, as many powers as speeds, not with a torque table or an input."""
    speed_key, power_key = datasheet.POWER_KEYS
    for i, (valid, pulley) in enumerate(zip(pulleys, raw)):
        if not isinstance(pulley, dict):
            continue
        path = pulley_path(raw, i)
        given = [k for k in datasheet.POWER_KEYS if k in pulley]
        if not given:
            continue
        role = valid.get("role")
        torque = [k for k in datasheet.TORQUE_KEYS if k in pulley]
        if role is not None and role not in TORQUE_TABLE_ROLES:
            report.bad(f"{path}.{given[0]}", pulley[given[0]], f"not allowed for role {role!r}; a power table is "
                       "only for roles " + " or ".join(repr(r) for r in TORQUE_TABLE_ROLES))
        elif torque:
            report.bad(f"{path}.{given[0]}", pulley[given[0]], f"conflicts with {torque[0]}; give the load as a "
                       "torque table or as a power table, not both")
        elif valid.get("load") == "input":
            report.bad(f"{path}.{given[0]}", pulley[given[0]], 'not allowed with load = "input" (the load torque '
                       "is the input); remove the table or the load key")
        elif len(given) == 1:
            missing = power_key if given[0] == speed_key else speed_key
            report.note(f"{path}.{missing}", f"missing; give both {speed_key} and {power_key}")
        elif speed_key in valid and power_key in valid and len(valid[speed_key]) != len(valid[power_key]):
            report.bad(f"{path}.{power_key}", valid[power_key],
                       f"must have as many entries as {speed_key} ({len(valid[speed_key])})")


def _check_tensioner_form(report: _Report, tensioner: Any, valid: dict[str, Any],
                          pulleys: list[dict[str, Any]], belt: Any) -> None:
    """One form of the tensioner's spring and stops: the model's or the data sheet's, whole."""
    if not isinstance(tensioner, dict):
        return
    sheet = [k for k in datasheet.TENSIONER_DATASHEET_KEYS if k in tensioner]
    model = [k for k in datasheet.TENSIONER_MODEL_KEYS if k in tensioner]
    if not sheet:
        if "spring_rate_Nm_per_rad" not in tensioner:
            report.note("tensioner.spring_rate_Nm_per_rad", "missing; required, a number in "
                        f"[{_fmt(SPRING_RATE_RANGE_NM_PER_RAD[0])}, {_fmt(SPRING_RATE_RANGE_NM_PER_RAD[1])}] (or give "
                        "the data-sheet form: " + ", ".join(datasheet.TENSIONER_DATASHEET_REQUIRED) + ")")
        return
    for key in model:
        report.bad(f"tensioner.{key}", tensioner[key], f"conflicts with the data-sheet form's {sheet[0]} = "
                   f"{tensioner[sheet[0]]!r}; give either {', '.join(datasheet.TENSIONER_MODEL_KEYS)} or "
                   f"the data-sheet keys {', '.join(datasheet.TENSIONER_DATASHEET_REQUIRED)}")
    for key in datasheet.TENSIONER_DATASHEET_REQUIRED:
        if key not in tensioner:
            report.note(f"tensioner.{key}", f"missing; required in the data-sheet form (given: {', '.join(sheet)})")
    if "nominal_arm_angle_deg" not in tensioner and isinstance(belt, dict) and "pretension_N" not in belt:
        report.note("tensioner.nominal_arm_angle_deg", "missing; required in the data-sheet form when the belt is "
                    "given by unstretched_length_m (else the spring balances the pretension's hub load there)")
    free, nominal, stop = (valid.get(k) for k in ("free_arm_angle_deg", "nominal_arm_angle_deg",
                                                  "load_stop_angle_deg"))
    if None not in (free, nominal, stop) and not (min(free, stop) < nominal < max(free, stop)):
        report.bad("tensioner.nominal_arm_angle_deg", nominal, f"must lie strictly between free_arm_angle_deg "
                   f"({free!r}) and load_stop_angle_deg ({stop!r})")
    length, pivot = valid.get("arm_length_m"), valid.get("pivot_m")
    centers = [p.get("center_m") for p in pulleys if p.get("role") == "tensioner"]
    if length is not None and pivot is not None and centers and centers[0] is not None:
        drawn = math.dist(pivot, centers[0])
        if abs(drawn - length) > datasheet.ARM_LENGTH_TOLERANCE:
            report.bad("tensioner.arm_length_m", length, f"must equal the drawing's arm length, |tensioner pulley "
                       f"center_m - pivot_m| = {drawn:.6g} m, within {datasheet.ARM_LENGTH_TOLERANCE:g} m")


def _check_length_tolerance(report: _Report, belt: Any) -> None:
    if isinstance(belt, dict) and "length_m" in belt and "length_tolerance_m" not in belt:
        report.note("belt.length_tolerance_m", "missing; required with length_m (the data sheet's length "
                    "tolerance, for the check of the declared length against the geometry)")
    elif isinstance(belt, dict) and "length_tolerance_m" in belt and "length_m" not in belt:
        report.note("belt.length_m", "missing; length_tolerance_m is its tolerance: give both or neither")


def _check_converted(report: _Report, data: dict, model: dict) -> None:
    """The model keys the data-sheet keys converted to within their rules; a problem names
    the data-sheet key it came from."""
    offset, back = datasheet.belt_offsets(model["belt"], _fields(Belt)["cord_offset_m"].default)
    for i, (pulley, converted) in enumerate(zip(data["pulleys"], model["pulleys"])):
        key = next(k for k in datasheet.PULLEY_SIZE_KEYS if k in pulley)
        if key != "radius_m" and not field_rule("pulleys", "radius_m").within(converted["radius_m"]):
            report.bad(f"{pulley_path(data['pulleys'], i)}.{key}", pulley[key],
                       f"gives the pulley radius {converted['radius_m']:.6g} m (cord offsets {offset:g} m ribbed, "
                       f"{back:g} m back); the radius must be {field_rule('pulleys', 'radius_m').bounds}")
    tensioner = data.get("tensioner")
    if isinstance(tensioner, dict) and datasheet.TENSIONER_DATASHEET_REQUIRED[0] in tensioner:
        free, stop = tensioner["free_arm_angle_deg"], tensioner["load_stop_angle_deg"]
        # the nominal angle the converted preload stands for
        nominal = free + math.copysign(1.0, stop - free) * (model["tensioner"]["preload_Nm"] - tensioner[
            "free_arm_torque_Nm"]) / tensioner["spring_rate_Nm_per_deg"]
        if "nominal_arm_angle_deg" not in tensioner and not min(free, stop) < nominal < max(free, stop):
            report.bad("belt.pretension_N", data["belt"]["pretension_N"], f"puts the tensioner arm at "
                       f"{nominal:.4g} deg on the data sheet's scale, where its spring balances the hub load, "
                       f"outside free_arm_angle_deg ({free!r}) to load_stop_angle_deg ({stop!r}): give "
                       "tensioner.nominal_arm_angle_deg, or a pretension the spring holds between the stops")
            return
        for key in datasheet.TENSIONER_MODEL_KEYS:
            value = model["tensioner"][key]
            allowed = field_rule("tensioner", key).problem(value)
            if allowed is not None:
                report.bad("tensioner", {k: tensioner[k] for k in datasheet.TENSIONER_DATASHEET_REQUIRED},
                           f"gives {key} = {value:.6g}, which {allowed}")


def validate(data: dict, source: str) -> list[str]:
    """All problems of the parsed layout ``data`` (the dict tomllib returns), each one line
    "{source}: {field}: ...". An empty list means a Layout can be built from ``data``.

    Checks every rule of docs/layout-format.md except whether the belt can wrap the pulleys,
    which needs the geometry (see :func:`load_layout_text`)."""
    return _validate(data, source)[0]


def _validate(data: dict, source: str) -> tuple[list[str], dict | None]:
    """:func:`validate`'s problems, and when there are none the layout's data with its
    data-sheet keys converted to the model's (:func:`belt_fmu.model.datasheet.model_data`)."""
    report = _Report(source)
    for name in data:
        if name not in TABLES and name not in DESIGN_TABLES:
            report.note(name, _unknown(name, "table", (*TABLES, *DESIGN_TABLES)))
    for name in REQUIRED_TABLES:
        if name not in data:
            report.note(name, "missing table; required")
    valid: dict[str, dict[str, Any]] = {}
    for name, cls in TABLES.items():
        if name in data and name != "pulleys":
            valid[name] = _check_table(report, name, data[name], cls) or {}
    if isinstance(data.get("belt"), dict):
        _check_belt(report, data["belt"], valid["belt"])
    if isinstance(data.get("friction"), dict):
        _check_friction(report, data["friction"], valid["friction"])
    pulleys = _check_pulleys(report, data["pulleys"]) if "pulleys" in data else None
    if pulleys is None:
        pulleys = []  # already reported; skip the checks across pulleys
    else:
        _check_names_and_roles(report, pulleys, "tensioner" in data)
    _check_headline(report, valid.get("drive", {}), pulleys)
    _check_crank_input(report, valid.get("drive", {}), pulleys)
    for path, value, what in lumped_model_limits(valid.get("drive", {}), pulleys):
        report.bad(path, value, what)
    _check_pivot(report, valid.get("tensioner", {}), pulleys)
    _check_preload(report, valid.get("belt", {}), data.get("tensioner"))
    raw = data.get("pulleys") if isinstance(data.get("pulleys"), list) else []
    _check_sizes(report, pulleys, raw)
    _check_power_table(report, pulleys, raw)
    _check_tensioner_form(report, data.get("tensioner"), valid.get("tensioner", {}), pulleys, data.get("belt"))
    _check_length_tolerance(report, data.get("belt"))
    thickness = valid.get("belt", {}).get("thickness_m")
    if report.problems:
        _check_overlap(report, pulleys, thickness)
        return report.problems, None
    model = datasheet.model_data(data, _fields(Belt)["cord_offset_m"].default)
    _check_converted(report, data, model)
    _check_overlap(report, model["pulleys"], thickness)
    return report.problems, (None if report.problems else model)


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


class LayoutError(ValueError):
    """An unreadable or invalid layout. ``problems`` lists every problem found, each a line
    starting with ``source``, the file (or "<string>") the layout came from."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = list(problems)
        n = len(self.problems)
        header = f"invalid layout {source}: {n} problem{'' if n == 1 else 's'}"
        super().__init__("\n".join([header, *self.problems]))


def _build(cls: type, table: dict[str, Any]):
    """The dataclass ``cls`` from a validated table."""
    fields = _fields(cls)
    return cls(**{key: fields[key].metadata["rule"].convert(value) for key, value in table.items()})


def load_layout_text(text: str, source: str = "<string>") -> Layout:
    """Parse, validate and build a layout from TOML ``text``; ``source`` names it in problems.

    Raises LayoutError with every problem: TOML syntax, the rules of :func:`validate`, and
    (once the data is valid) whether the belt can wrap the pulleys in the given order."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise LayoutError(source, [f"{source}: invalid TOML: {err}"]) from None
    return load_layout_data(data, source)


def load_layout_data(data: dict, source: str = "<data>") -> Layout:
    """Validate and build a layout from its parsed form (what TOML or :meth:`Layout.to_data`
    gives); raises LayoutError with every problem, including whether the belt can wrap the
    pulleys in the given order."""
    problems, data = _validate(data, source)
    if problems:
        raise LayoutError(source, problems)
    layout = Layout(
        drive=_build(Drive, data.get("drive", {})),
        belt=_build(Belt, data["belt"]),
        contact=_build(Contact, data["contact"]),
        friction=_build(Friction, data["friction"]),
        pulleys=tuple(_build(Pulley, p) for p in data["pulleys"]),
        tensioner=_build(Tensioner, data["tensioner"]) if "tensioner" in data else None,
        source=source,
        design={name: data[name] for name in DESIGN_TABLES if name in data},
    )
    problems = geometry_problems(layout)
    if problems:
        raise LayoutError(source, problems)
    object.__setattr__(layout, "warnings", tuple(layout_warnings(layout)))
    return layout


def load_layout(path=None) -> Layout:
    """Read the layout file at ``path`` (str or Path); None reads the built-in default,
    ``belt_fmu/layouts/default.toml``. Raises LayoutError if the file is missing, unreadable
    or invalid."""
    if path is None:
        resource = importlib.resources.files(__package__) / "layouts" / DEFAULT_LAYOUT
        source = str(resource)
    else:
        resource = Path(path)
        source = str(path)
    try:
        text = resource.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise LayoutError(source, [f"{source}: no such layout file"]) from None
    except OSError as err:
        raise LayoutError(source, [f"{source}: cannot read layout file: {err.strerror}"]) from None
    except UnicodeDecodeError as err:
        raise LayoutError(source, [f"{source}: not UTF-8 text: {err}"]) from None
    return load_layout_text(text, source)
