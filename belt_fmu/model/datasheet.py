"""Data-sheet forms of a layout, converted exactly to its model keys (docs/layout-format.md,
"Data-sheet forms").

A belt supplier's data sheet gives pulleys by diameter and the belt's profile by its
pitch-line offsets; a tensioner maker's gives the arm by angles on its own scale, the spring
by its torque at the free arm and a rate per degree; an accessory maker's gives the load as
power. :func:`model_data` turns each into the keys the model reads (``radius_m``, the
``[tensioner]`` spring and stops, torque tables), on the parsed TOML, before the layout is
built; the layout then holds only the model keys.

**Pulley diameters** (poly-V belts, ISO 9981:1998 (PK profile, automotive) and ISO 9982:1998;
the pitch zone's location, the effective line differential, ISO 8370-2:1993). The model puts
the cord (pitch line) of a ribbed-side pulley at ``radius_m + cord_offset_m`` and of a
back-side pulley at ``radius_m + back_cord_distance_m`` (:func:`belt_fmu.model.geometry.
cord_radius`). For a ribbed pulley ``radius_m`` is its effective radius and ``cord_offset_m``
the effective (pitch) line differential h_b, the cord lying outside the effective line: the
pitch diameter is ``d_p = d_e + 2 h_b`` (for belts measured on effective diameters the pitch
line offset is outward, Autodesk, "Inventor Help: V-Belt Geometry Design Properties", 2016).
A flat back-side pulley is given by its outside diameter D, and its cord radius is
``D / 2 + b`` with b the belt's back-to-cord distance. So

    ribbed: effective_diameter_m d_e -> radius_m = d_e / 2
            pitch_diameter_m d_p     -> radius_m = d_p / 2 - cord_offset_m
    back:   outside_diameter_m D     -> radius_m = D / 2
            pitch_diameter_m d_p     -> radius_m = d_p / 2 - back_cord_distance_m

**Tensioner** (the data-sheet angles on the maker's scale, any origin, counted in one sense
from the free arm towards the load stop). The arm rests at its free-arm angle theta_f without
a belt, with the spring torque T_f; it is installed at the nominal angle theta_n and stops at
the load-stop angle theta_l; the spring's torque is linear in the arm angle with the rate k
[N m/deg] (a torsion spring, [Scania thesis] section 4.3). Without theta_n the arm is
installed where its spring balances the pretension T0's hub load: the preload is
``T0 |M_1|``, with M_1 the moment about the pivot of the hub load of unit span tensions on
the installed path ([Scania thesis] eqs. 12.23-12.24), and ``theta_n = theta_f + a (T0 |M_1|
- T_f) / k``. With ``a = sign(theta_l - theta_f)``:

    spring_rate_Nm_per_rad = k * 180 / pi
    preload_Nm             = T_f + k * a * (theta_n - theta_f)        (torque at the installed angle)
    stop towards the belt  = installed angle + s * a * (theta_n - theta_f) * pi / 180
    stop away from it      = installed angle - s * a * (theta_l - theta_n) * pi / 180

with s = +1 if the spring turns the arm counter-clockwise in the drawing, -1 otherwise: the
sense that turns it into the belt, against the moment of the belt's hub load about the pivot
(:func:`spring_sense`, as :func:`belt_fmu.model.parameters._tensioner_spring` takes it).
The stops are the layout's ``stop_min_rad`` / ``stop_max_rad`` (relative, CCW): for s = +1
the belt-side stop is the upper one.

**Power loads**: a table of power P_i [kW] at speeds w_i > 0 [rad/s] becomes the torque
table T = P / w, P interpolated linearly between the table's speeds and held beyond its
ends; below the lowest speed w_0 the torque is held at P_0 / w_0 (no division by zero: an
accessory starts at the torque of its lowest rated speed). The torque table samples P / w at
the table's speeds and in between on a geometric grid of ratio :data:`POWER_GRID_RATIO` up to
:data:`POWER_TOP_SPEED`, so that its linear interpolation stays within 0.06 % of P / w
(for w in [w_1, q w_1] the chord of P / w = c / w departs from it by at most (q - 1)^2 / (4 q)).
"""
from __future__ import annotations

import copy
import math

import numpy as np

from .geometry import BeltPath, side_cord_radius

#: keys that give a pulley's size; exactly one per pulley
PULLEY_SIZE_KEYS = ("radius_m", "pitch_diameter_m", "effective_diameter_m", "outside_diameter_m")
#: the side each diameter is for (None: either)
SIZE_KEY_SIDES = {"radius_m": None, "pitch_diameter_m": None, "effective_diameter_m": "ribbed",
                  "outside_diameter_m": "back"}
#: the tensioner's data-sheet keys; the first four are required in that form, the nominal angle
#: with unstretched_length_m (with a pretension it defaults to where the spring holds it)
TENSIONER_DATASHEET_KEYS = ("free_arm_angle_deg", "load_stop_angle_deg", "free_arm_torque_Nm",
                            "spring_rate_Nm_per_deg", "nominal_arm_angle_deg", "arm_length_m")
TENSIONER_DATASHEET_REQUIRED = TENSIONER_DATASHEET_KEYS[:4]
#: the model keys the data-sheet form sets (a layout gives one form)
TENSIONER_MODEL_KEYS = ("spring_rate_Nm_per_rad", "preload_Nm", "stop_min_rad", "stop_max_rad")
#: [m] the data sheet's arm length and the drawing's |centre - pivot| may differ by this (a
#: drawing's coordinates to 0.1 mm)
ARM_LENGTH_TOLERANCE = 1e-4
POWER_KEYS = ("power_table_speed_rad_per_s", "power_table_kW")
TORQUE_KEYS = ("torque_table_speed_rad_per_s", "torque_table_Nm")
#: speed ratio of neighbouring points of a power load's torque table (interpolation error
#: (q - 1)^2 / (4 q) = 0.06 % of P / w)
POWER_GRID_RATIO = 1.05
#: [rad/s] the torque table of a power load reaches this speed (an accessory at 1500 rad/s of
#: crank, the top of crank_speed, turning 6 times faster); beyond it the torque is held
POWER_TOP_SPEED = 1.0e4


def belt_offsets(belt: dict, cord_offset_default: float) -> tuple[float, float]:
    """(h_b, b) of a ``[belt]`` table: the cord's distance from the ribbed contact line
    (``cord_offset_m``) and from the back (``back_cord_distance_m``, else thickness - h_b)."""
    offset = belt.get("cord_offset_m", cord_offset_default)
    back = belt.get("back_cord_distance_m")
    return offset, (belt["thickness_m"] - offset if back is None else back)


def pulley_radius(pulley: dict, offset: float, back: float) -> tuple[str, float]:
    """(the size key given, ``radius_m``) of a ``[[pulleys]]`` table (module docstring)."""
    key = next(k for k in PULLEY_SIZE_KEYS if k in pulley)
    value = pulley[key]
    if key == "radius_m":
        return key, value
    if key == "pitch_diameter_m":
        return key, 0.5 * value - (offset if pulley.get("side", "ribbed") == "ribbed" else back)
    return key, 0.5 * value


def power_torque_table(speeds, power_kW) -> tuple[list[float], list[float]]:
    """Torque table (speeds [rad/s], torques [N m]) of a power table (module docstring)."""
    speeds = [float(w) for w in speeds]
    watts = [1e3 * float(p) for p in power_kW]
    grid = [speeds[0]]
    ends = speeds[1:] + ([POWER_TOP_SPEED] if speeds[-1] < POWER_TOP_SPEED else [])
    for end in ends:
        steps = max(1, math.ceil(math.log(end / grid[-1]) / math.log(POWER_GRID_RATIO)))
        start = grid[-1]
        grid += [start * (end / start) ** (k / steps) for k in range(1, steps + 1)]
        grid[-1] = end  # exactly the table's speed
    torques = [float(np.interp(w, speeds, watts)) / w for w in grid]
    return grid, torques


def unit_hub_moment(centers, radii, senses, tensioner: int, pivot) -> float:
    """Moment [N m per N, CCW] about the pivot of the tensioner pulley's hub load at unit span
    tensions on the installed path ([Scania thesis] eqs. 12.23-12.24); the spring turns the
    arm against it (into the belt). NaN if the path has no spans there (the layout's geometry
    check reports it)."""
    path = BeltPath.from_circles(centers, radii, senses)
    p, t = path.n_pulleys, tensioner
    if not (np.isfinite(path.depart_angle[(t - 1) % p]) and np.isfinite(path.depart_angle[t])):
        return math.nan
    return path.hub_moment(t, pivot, 1.0, 1.0)


def balanced_nominal_angle(tensioner: dict, pretension: float, moment: float) -> float:
    """The nominal arm angle [deg, data sheet's scale] at which the spring balances the
    pretension's hub load (module docstring); ``moment`` from :func:`unit_hub_moment`."""
    free, stop = tensioner["free_arm_angle_deg"], tensioner["load_stop_angle_deg"]
    a = math.copysign(1.0, stop - free)
    return free + a * (pretension * abs(moment) - tensioner["free_arm_torque_Nm"]) / tensioner["spring_rate_Nm_per_deg"]


def tensioner_model_keys(tensioner: dict, sense: float) -> dict:
    """The model keys of a data-sheet ``[tensioner]`` with its nominal angle (module
    docstring); ``sense`` the spring's, +1 CCW (against :func:`unit_hub_moment`)."""
    free, nominal, stop = (tensioner[k] for k in ("free_arm_angle_deg", "nominal_arm_angle_deg",
                                                   "load_stop_angle_deg"))
    a = math.copysign(1.0, stop - free)
    rate = tensioner["spring_rate_Nm_per_deg"]
    toward = math.radians(a * (nominal - free))  # installed to the free-arm (belt-side) stop, > 0
    away = math.radians(a * (stop - nominal))  # installed to the load stop, > 0
    keys = {"spring_rate_Nm_per_rad": rate * 180.0 / math.pi,
            "preload_Nm": tensioner["free_arm_torque_Nm"] + rate * a * (nominal - free)}
    if sense > 0.0:
        keys["stop_max_rad"], keys["stop_min_rad"] = toward, -away
    else:
        keys["stop_min_rad"], keys["stop_max_rad"] = -toward, away
    return keys


def model_data(data: dict, cord_offset_default: float) -> dict:
    """A copy of the parsed layout ``data`` (valid key by key, one form per pulley and
    tensioner) with every data-sheet key replaced by the model keys it converts to."""
    data = copy.deepcopy(data)
    belt = data["belt"]
    offset, back = belt_offsets(belt, cord_offset_default)
    pulleys = data["pulleys"]
    for pulley in pulleys:
        key, radius = pulley_radius(pulley, offset, back)
        pulley.pop(key)
        pulley["radius_m"] = radius
        if POWER_KEYS[0] in pulley:
            speeds, torques = power_torque_table(pulley.pop(POWER_KEYS[0]), pulley.pop(POWER_KEYS[1]))
            pulley[TORQUE_KEYS[0]], pulley[TORQUE_KEYS[1]] = speeds, torques
    tensioner = data.get("tensioner")
    if isinstance(tensioner, dict) and TENSIONER_DATASHEET_REQUIRED[0] in tensioner:
        t = next(j for j, p in enumerate(pulleys) if p.get("role") == "tensioner")
        sigma = 1 if data.get("drive", {}).get("crank_rotation", "ccw") == "ccw" else -1
        senses = [sigma if p.get("side", "ribbed") == "ribbed" else -sigma for p in pulleys]
        radii = [side_cord_radius(p["radius_m"], p.get("side", "ribbed"), offset, back) for p in pulleys]
        moment = unit_hub_moment([p["center_m"] for p in pulleys], radii, senses, t, tensioner["pivot_m"])
        if math.isnan(moment):
            moment = -1.0  # no path there: the geometry check refuses the layout
        if "nominal_arm_angle_deg" not in tensioner:
            tensioner["nominal_arm_angle_deg"] = balanced_nominal_angle(tensioner, belt["pretension_N"], moment)
        tensioner.update(tensioner_model_keys(tensioner, -math.copysign(1.0, moment)))
        for key in TENSIONER_DATASHEET_KEYS:
            tensioner.pop(key, None)
    return data
