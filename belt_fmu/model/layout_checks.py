"""Layout checks that need the belt's geometry (docs/layout-format.md, "Rules checked on loading").

:func:`belt_fmu.layout.load_layout_data` calls :func:`geometry_problems` once every table of
the layout has passed its own rules (:func:`belt_fmu.layout.validate`): the belt must be able
to wrap the pulleys in the given order and sides, the discretized belt must be able to lie on
the smallest pulley, and the contact must carry the pretension without the belt sinking
deep into a pulley. Each problem is one readable line naming the field, as the table rules'
are.
"""
from __future__ import annotations

import math

import numpy as np

from .geometry import TWO_PI, BeltPath
from .stability import (MAX_IMPLICIT_STIFFNESS, MAX_RATE_STEPS, MAX_STEP, MODE_ADVICE, explicit_modes,
                        implicit_modes, implicit_stiffness, limiting_mode)

#: an element may span at most this angle of the smallest pulley (chord = cord radius at 60 deg)
MAX_ELEMENT_ANGLE = np.pi / 3
#: the contact may let the belt sink at most this fraction of a cord radius at the pretension
MAX_PENETRATION = 0.05
#: a wrap angle closer than this to 0 or 2 pi [rad] is a pulley the belt does not really wrap
#: (or wraps fully): a misplaced pulley or a wrong side or crank_rotation, not a drive
MIN_WRAP_MARGIN = 1e-3
#: [s] the shortest stable time step the model accepts (belt_fmu.model.stability): the
#: built-in drive runs at 2e-5 s; at 1e-6 s a second of a 150-element drive takes about 15 s
#: of computing, and shorter steps come from values no belt has (a belt of 0.1 mg/m, a
#: damping of 1e30) that would make every command run for hours
MIN_TIME_STEP = 1e-6
#: the largest installation strain: pretension_N <= MAX_PRESTRAIN EA. Stretch-fit (elastic)
#: belts are installed at up to about 5 % (Gates, "Stretch Fit belt installation", 2014);
#: 15 % leaves room for the running tensions below the strain the model treats as a broken
#: belt (belt_fmu.model.integrator.STRAIN_LIMIT, 25 %)
MAX_PRESTRAIN = 0.15
#: an unstretched length within this factor of the installed cord length: a tensioner arm
#: swinging between its stops takes up a part of a difference; a factor of 2 is no drive (a
#: unit slip, a typo), and the initialization judges what lies between
MAX_LENGTH_RATIO = 2.0


def span_problems(path: BeltPath, names, source: str) -> list[str]:
    """Why the belt cannot run over these circles in this order, as readable problems."""
    problems = []
    n = path.n_pulleys
    for a in range(n):
        b = (a + 1) % n
        if not np.isfinite(path.depart_angle[a]):
            kind = "open" if path.senses[a] == path.senses[b] else "cross"
            dist = float(np.hypot(*(path.centers[b] - path.centers[a])))
            need = abs(path.radii[a] - path.senses[a] * path.senses[b] * path.radii[b])
            problems.append(
                f"{source}: pulleys.{names[a]} -> pulleys.{names[b]}: the belt cannot span from "
                f"{names[a]} to {names[b]} ({kind} span): centre distance {dist:.4g} m must exceed "
                f"{need:.4g} m; move the pulleys apart or change their side/order"
            )
    if problems:
        return problems
    for j in range(n):
        if not (MIN_WRAP_MARGIN < path.wrap_angle[j] < TWO_PI - MIN_WRAP_MARGIN):
            problems.append(
                f"{source}: pulleys.{names[j]}.center_m: wrap angle of {names[j]} is "
                f"{path.wrap_angle[j]:.4g} rad; the belt must wrap every pulley by an angle in "
                f"(0, 2 pi): check the pulley order, sides and crank_rotation"
            )
    if problems:
        return problems
    spans = [(path.departure_point(a), path.arrival_point((a + 1) % n)) for a in range(n)]
    for a, (p, q) in enumerate(spans):
        b = (a + 1) % n
        for j in range(n):
            if j in (a, b):
                continue
            # the span must pass outside pulley j's cord circle
            clearance = _segment_point_distance(p, q, path.centers[j]) - path.radii[j]
            if clearance < 0.0:
                problems.append(
                    f"{source}: pulleys.{names[j]}: the span {names[a]} -> {names[b]} runs through "
                    f"{names[j]} (by {-clearance:.4g} m); pulleys the belt touches must be listed "
                    f"in travel order with the side the belt touches"
                )
        for c in range(a + 1, n):
            # neighbouring spans meet at a pulley and cross only if the belt wraps it wrongly;
            # in a 2-pulley drive the two spans of a crossed belt cross by design
            if n == 2:
                continue
            if _segments_cross(p, q, *spans[c]):
                problems.append(
                    f"{source}: pulleys.{names[a]}: the span {names[a]} -> {names[b]} crosses the span "
                    f"{names[c]} -> {names[(c + 1) % n]}; check the pulley order and sides"
                )
    return problems


def _segment_point_distance(p, q, x) -> float:
    d = q - p
    t = np.clip((x - p) @ d / (d @ d), 0.0, 1.0)
    return float(np.hypot(*(p + t * d - x)))


def _segments_cross(p1, q1, p2, q2) -> bool:
    def orient(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    return (orient(p1, q1, p2) * orient(p1, q1, q2) < 0.0) and (orient(p2, q2, p1) * orient(p2, q2, q1) < 0.0)


#: [rad/s] crank speed of the layout's own duty point for :func:`layout_warnings`: the command
#: line's default --rpm, 800 rpm (an idling engine)
CHECK_CRANK_SPEED = 800.0 * math.pi / 30.0


def steady_load_torque(speed: float, damping: float, friction: float, table_speeds=None, table_torques=None) -> float:
    """Load torque [N m] against the rotation of a pulley running steadily at ``speed``
    [rad/s]: its bearing's viscous and Coulomb loss, ``damping speed + friction``, and its
    torque table (``table_speeds``, ``table_torques``; None: none) at ``|speed|``, linear and
    held at its ends as the kernels' belt_fmu.model.drive.table_torque. Plain numpy, so that
    loading a layout (:func:`steady_loads`) compiles no kernel; the roles' loads (water pump,
    ports) are the callers'."""
    torque = damping * speed + friction
    if table_speeds is not None and len(table_speeds) > 0:
        torque += float(np.interp(abs(speed), table_speeds, table_torques))
    return torque


def steady_loads(layout, crank_speed: float, water_pump_torque: float = 0.0, path=None) -> np.ndarray:
    """Load torque [N m] of every pulley (0 for the crank) running steadily without slip at
    the crank speed ``crank_speed`` [rad/s] (:func:`steady_load_torque`, plus the water-pump
    torque); each pulley turns at ``crank_speed r_crank / r_j`` (cord radii of ``path``, the
    layout's BeltPath, built here when not given)."""
    path = BeltPath.from_layout(layout) if path is None else path
    crank = layout.crank_index
    torques = np.zeros(len(layout.pulleys))
    for j, pulley in enumerate(layout.pulleys):
        if j == crank:
            continue
        speed = crank_speed * path.radii[crank] / path.radii[j]
        torques[j] = steady_load_torque(speed, pulley.bearing_damping_Nms_per_rad, pulley.bearing_friction_torque_Nm,
                                        pulley.torque_table_speed_rad_per_s, pulley.torque_table_Nm)
        if pulley.role == "water_pump":
            torques[j] += water_pump_torque
    return torques


def tensioner_on_tight_side(layout, load_torques=None) -> bool:
    """Whether the tensioner sits on the crank's tight side under ``load_torques`` [N m] (one
    per pulley, against its rotation; default: the layout's own loads at
    :data:`CHECK_CRANK_SPEED`, :func:`steady_loads`).

    In steady running the tension rises by load torque / cord radius across each driven
    pulley, from the crank's slack span (leaving it) to its tight span (arriving at it)
    (torque balance, Euler-Eytelwein: docs/references.md R4). The tensioner is on the tight
    side when the mean tension of its two spans lies above the middle of that rise: more of
    the load lies between the crank's slack span and the tensioner than after it. False
    without a tensioner or without load."""
    t = layout.tensioner_index
    if t is None:
        return False
    if load_torques is None:
        load_torques = steady_loads(layout, CHECK_CRANK_SPEED)
    path = BeltPath.from_layout(layout)
    p, crank = path.n_pulleys, layout.crank_index
    rise = np.zeros(p)  # tension of span j (pulley j -> j + 1) above the slack span
    for k in range(1, p):
        j = (crank + k) % p
        rise[j] = rise[j - 1] + load_torques[j] / path.radii[j]
    total = rise[(crank - 1) % p]
    return bool(total > 0.0 and 0.5 * (rise[t - 1] + rise[t]) > 0.5 * total)


def effective_length(layout) -> float:
    """The belt's unstretched effective length [m] the layout's geometry implies: the
    installed cord path's, unstretched by the pretension (``L / (1 + T0 / EA)``, or the
    layout's unstretched length), less the cord offset times the net wrap of the ribbed side
    (the effective line runs ``cord_offset_m`` inside the cord on a ribbed pulley, outside
    on a back-side one; along a span the two are parallel)."""
    path = BeltPath.from_layout(layout)
    belt = layout.belt
    if belt.unstretched_length_m is not None:
        cord = belt.unstretched_length_m
    else:
        cord = path.length / (1.0 + belt.pretension_N / belt.axial_stiffness_N)
    ribbed = np.array([p.side == "ribbed" for p in layout.pulleys])
    net_wrap = float(path.wrap_angle[ribbed].sum() - path.wrap_angle[~ribbed].sum())
    return cord - belt.cord_offset_m * net_wrap


def layout_warnings(layout) -> list[str]:
    """What a valid layout may get wrong without being impossible, as readable lines
    "{source}: {field}: ...": the tensioner on the tight side of the crank at the layout's
    own duty point (:func:`tensioner_on_tight_side`), a declared belt length
    (``belt.length_m``) off the geometry's by more than its tolerance."""
    warnings = []
    if tensioner_on_tight_side(layout):
        t = layout.pulleys[layout.tensioner_index].name
        warnings.append(
            f"{layout.source}: pulleys.{t}: the tensioner is on the tight side of the crank at "
            f"{CHECK_CRANK_SPEED * 30.0 / math.pi:g} rpm with the layout's loads (it carries more than half of the "
            f"tension rise the loads make): check the pulley order against the belt's travel and "
            f"drive.crank_rotation; a tensioner belongs on the crank's slack side")
    belt = layout.belt
    if belt.length_m is not None:
        implied = effective_length(layout)
        if abs(implied - belt.length_m) > belt.length_tolerance_m:
            warnings.append(
                f"{layout.source}: belt.length_m: {belt.length_m!r} m differs from the effective length the "
                f"geometry implies, {implied:.6g} m, by {1e3 * (belt.length_m - implied):+.4g} mm (tolerance "
                f"+-{1e3 * belt.length_tolerance_m:g} mm): check the pulley positions, diameters and order")
    return warnings


def geometry_problems(layout) -> list[str]:
    """Every problem of a layout (valid table by table) that needs its geometry: can the
    belt wrap the pulleys, are the elements short enough to lie on the smallest pulley, and
    is the contact stiff enough to carry the pretension there? Empty if none."""
    path = BeltPath.from_layout(layout)
    names = [p.name for p in layout.pulleys]
    problems = span_problems(path, names, layout.source)
    if problems:
        return problems
    belt = layout.belt
    problems += _length_problems(layout, path.length)
    if problems:
        return problems
    problems += _time_step_problems(layout, path.length)
    problems += _rigid_body_rate_problems(layout)
    smallest = int(np.argmin(path.radii))
    rho = float(path.radii[smallest])
    chord_max = 2.0 * rho * np.sin(0.5 * MAX_ELEMENT_ANGLE)
    needed = int(np.ceil(path.length / chord_max))
    if path.length / belt.n_elements > chord_max:
        problems.append(
            f"{layout.source}: belt.n_elements: {belt.n_elements!r} is too coarse: elements of "
            f"{path.length / belt.n_elements:.4g} m cannot lie on pulley {names[smallest]} (cord radius "
            f"{rho:.4g} m); must be >= {needed}"
        )
    if belt.pretension_N is not None:
        pressure = belt.pretension_N / rho  # normal force per belt length on the smallest pulley
        c1, c2 = layout.contact.stiffness_quadratic_N_per_m3, layout.contact.stiffness_linear_N_per_m2
        depth = MAX_PENETRATION * rho
        if c1 * depth * depth + c2 * depth < pressure:
            minimum = (pressure - c1 * depth * depth) / depth
            problems.append(
                f"{layout.source}: contact.stiffness_linear_N_per_m2: {c2!r} is too soft: at the pretension "
                f"the belt would sink more than {100 * MAX_PENETRATION:g} % of the cord radius into pulley "
                f"{names[smallest]}; must be >= {minimum:.3g}"
            )
    return problems


def _length_problems(layout, cord_length: float) -> list[str]:
    """The belt's installation within what the model can start from: pretension at most
    :data:`MAX_PRESTRAIN` EA; an unstretched length within a factor :data:`MAX_LENGTH_RATIO`
    of the installed cord length."""
    belt = layout.belt
    ea = belt.axial_stiffness_N
    if belt.pretension_N is not None:
        if belt.pretension_N > MAX_PRESTRAIN * ea:
            return [f"{layout.source}: belt.pretension_N: {belt.pretension_N!r} N would stretch the belt by "
                    f"{100 * belt.pretension_N / ea:.3g} % (axial_stiffness_N = {ea:g} N); must be <= "
                    f"{MAX_PRESTRAIN * ea:.6g} N ({100 * MAX_PRESTRAIN:g} % of EA)"]
        return []
    low, high = cord_length / MAX_LENGTH_RATIO, MAX_LENGTH_RATIO * cord_length
    length = belt.unstretched_length_m
    if not low <= length <= high:
        what = "short" if length < low else "long"
        return [f"{layout.source}: belt.unstretched_length_m: {length!r} m is far too {what} for the installed "
                f"cord path of {cord_length:.6g} m; must be in [{low:.6g}, {high:.6g}] m (and close to the cord "
                f"length: a belt a few percent shorter)"]
    return []


def _time_step_problems(layout, cord_length: float) -> list[str]:
    """The stable time step of the explicit part (belt_fmu.model.stability) at least
    :data:`MIN_TIME_STEP`, and the implicit part's matrix conditioned well enough at
    :data:`MAX_STEP` (:data:`MAX_IMPLICIT_STIFFNESS`); the message names the mode that
    fails and the keys that set it."""
    belt, contact, friction = layout.belt, layout.contact, layout.friction
    if belt.unstretched_length_m is not None:
        l0 = belt.unstretched_length_m / belt.n_elements
    else:
        l0 = cord_length / (belt.n_elements * (1.0 + belt.pretension_N / belt.axial_stiffness_N))
    m = belt.mass_per_length_kg_per_m * l0
    inertia = m * (l0 * l0 + belt.thickness_m ** 2) / 12.0
    bristle = friction.bristle_stiffness_N_per_m2 * l0 if friction.law == "bristle" else 0.0
    try:
        modes = explicit_modes(m, contact.stiffness_linear_N_per_m2 * l0, contact.stiffness_quadratic_N_per_m3 * l0,
                               contact.damping_Ns_per_m2 * l0, bristle)
        limit, mode = limiting_mode(modes)
        stiff = max(implicit_modes(m, inertia, l0, belt.axial_stiffness_N, belt.axial_damping_Ns,
                                   belt.bending_stiffness_Nm2, belt.bending_damping_Nm2s),
                    key=lambda implicit: implicit_stiffness(implicit, MAX_STEP))
        stiffness = implicit_stiffness(stiff, MAX_STEP)
    except (OverflowError, ZeroDivisionError, ValueError):
        limit, mode, stiff, stiffness = 0.0, None, None, math.inf
    if mode is None or stiff is None:
        return [f"{layout.source}: belt: the values give no finite stable time step; the model needs >= "
                f"{MIN_TIME_STEP:g} s: check the belt's, contact's and friction's magnitudes"]
    keys = {"bending rotation": ("belt.bending_stiffness_Nm2", "belt.bending_damping_Nm2s", "belt.n_elements",
                                 "belt.mass_per_length_kg_per_m"),
            "bending shear": ("belt.bending_stiffness_Nm2", "belt.n_elements", "belt.mass_per_length_kg_per_m"),
            "axial": ("belt.axial_stiffness_N", "belt.axial_damping_Ns", "belt.n_elements",
                      "belt.mass_per_length_kg_per_m"),
            "contact": ("contact.stiffness_linear_N_per_m2", "contact.stiffness_quadratic_N_per_m3",
                        "contact.damping_Ns_per_m2", "belt.mass_per_length_kg_per_m"),
            "bristle": ("friction.bristle_stiffness_N_per_m2", "belt.mass_per_length_kg_per_m")}

    def values(name):
        return ", ".join(f"{key} = {getattr(getattr(layout, key.split('.')[0]), key.split('.')[1])!r}"
                         for key in keys[name])

    if limit < MIN_TIME_STEP:
        return [f"{layout.source}: {keys[mode.name][0].split('.')[0]}: the stable time step would be {limit:.3g} s, "
                f"set by the belt's {mode.name} mode ({values(mode.name)}); the model needs >= {MIN_TIME_STEP:g} s: "
                f"{MODE_ADVICE[mode.name]}"]
    if not stiffness <= MAX_IMPLICIT_STIFFNESS:
        return [f"{layout.source}: {keys[stiff.name][0].split('.')[0]}: the belt's {stiff.name} mode is too stiff "
                f"for its mass ({values(stiff.name)}): the implicit belt solve at {MAX_STEP:g} s would lose its "
                f"precision (stiffness {stiffness:.3g} times the mass, at most {MAX_IMPLICIT_STIFFNESS:g}): "
                f"{MODE_ADVICE[stiff.name]}"]
    return []


def _rigid_body_rate_problems(layout) -> list[str]:
    """The explicit dampers and springs of the pulleys and the tensioner arm within what the
    time step integrates stably: c / I and sqrt(k / I) at most :data:`MAX_RATE_STEPS` /
    :data:`MAX_STEP` (belt_fmu.model.stability)."""
    limit = MAX_RATE_STEPS / MAX_STEP  # [1/s]
    problems = []
    for j, pulley in enumerate(layout.pulleys):
        if pulley.role == "crankshaft" or pulley.inertia_kgm2 <= 0.0:
            continue
        c = pulley.bearing_damping_Nms_per_rad
        if c > limit * pulley.inertia_kgm2:
            problems.append(f"{layout.source}: pulleys.{pulley.name}.bearing_damping_Nms_per_rad: {c!r} is too large for "
                            f"the inertia {pulley.inertia_kgm2!r} kg m^2 of {pulley.name}; must be <= "
                            f"{limit * pulley.inertia_kgm2:.4g} (a damping time I / c of at least {MAX_STEP:g} s)")
    tensioner = layout.tensioner
    if tensioner is not None:
        inertia = tensioner.arm_inertia_kgm2
        for key in ("damping_Nms_per_rad", "stop_damping_Nms_per_rad"):
            c = getattr(tensioner, key)
            if c > limit * inertia:
                problems.append(f"{layout.source}: tensioner.{key}: {c!r} is too large for the arm inertia "
                                f"{inertia!r} kg m^2; must be <= {limit * inertia:.4g} (a damping time I / c of at "
                                f"least {MAX_STEP:g} s)")
        for key in ("spring_rate_Nm_per_rad", "stop_stiffness_Nm_per_rad"):
            k = getattr(tensioner, key)
            if k > limit * limit * inertia:
                problems.append(f"{layout.source}: tensioner.{key}: {k!r} is too stiff for the arm inertia "
                                f"{inertia!r} kg m^2; must be <= {limit * limit * inertia:.4g} (a period of the "
                                f"arm on it of at least {6.2832 * MAX_STEP:.3g} s)")
    return problems
