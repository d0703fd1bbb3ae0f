"""From a validated layout to the kernels' parameter records: the one translation.

Every layout value reaches its kernel here and only here, as a field of the record of the
physical part it belongs to. Each record type is defined, with its fields' units, beside the
kernels that read it:

=============  ===============================  ==============================================
record         type (module)                    from
=============  ===============================  ==============================================
belt           BELT (belt.py), (1,)             ``[belt]``, per node
contact        CONTACT (contact.py), (1,)       ``[contact]``, per node
friction       FRICTION_LAW (friction.py), (1,) ``[friction]``: the belt-pulley law
pulleys        PULLEY (drive.py), (p,)          ``[[pulleys]]``, ``[belt]`` cord offset and groove
load_table     float (k, 2)                     the pulleys' torque tables: speed, torque
roles          ROLES (drive.py), (1,)           pulley roles, ``[drive]``
tensioner      TENSIONER (tensioner.py), (1,)   ``[tensioner]``; zeros without a tensioner
arm_friction   FRICTION_LAW, (1,)               the arm's Coulomb friction (tanh, rad/s)
load_friction  FRICTION_LAW, (1,)               load torques against rotation (tanh, rad/s)
=============  ===============================  ==============================================

What the translation derives, each in one place:

* **per-node scaling**: the layout gives the belt's mass, transverse damping, contact
  stiffness and damping per unit belt length; a node carries one element's worth, the
  unstretched element length l0 times that. l0 follows from the pretension (the discretized
  belt at uniform pretension closes around the installed drive, Scania thesis (Vahedi 2012)
  eq. 12.22, :func:`belt_fmu.model.initialization.solve_rest_length`) or from the
  unstretched length;
* **effective friction coefficient** of each pulley: ``mu / sin(phi/2)`` on the ribbed side
  (the poly-V ribs wedge into the grooves of angle phi, Simscape Belt Pulley (MathWorks)),
  ``back_side_mu`` on the flat back;
* **cord-line radius and wrap sense** of each pulley (:mod:`belt_fmu.model.geometry`);
* **arm geometry**: arm length and installed angle from the pivot and the tensioner pulley's
  installed centre; the spring's sense (into the belt) and, unless given, its preload, which
  balances the pretension's hub load at the installed angle (Scania thesis (Vahedi 2012)
  eqs. 12.23-12.24).

The initialization works on the same records through
:class:`belt_fmu.model.initialization.DriveGeometry`.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .belt import BELT
from .contact import CONTACT
from .drive import PULLEY, ROLES
from .friction import FRICTION_LAW, LAW_CODES, LAW_TANH
from .geometry import BeltPath, cord_radius, crank_sense, wrap_senses
from .initialization import DriveGeometry, solve_rest_length
from .lumped import LUMPED_BELT
from .tensioner import TENSIONER

#: [rad/s] a load torque resisting rotation reaches 99.9 % of its value at this speed (the
#: tanh regularization of its Coulomb-like sign: 4 x 0.1 rad/s -> tanh(4) = 0.9993)
LOAD_SPEED_THRESHOLD = 0.1
#: [rad/s] regularization of the arm's Coulomb friction without a tensioner (never used)
NO_ARM_THRESHOLD = 1.0


class Parameters(NamedTuple):
    """The parameter records of a drive, one per physical part (module docstring)."""

    belt: np.ndarray
    contact: np.ndarray
    friction: np.ndarray
    pulleys: np.ndarray
    load_table: np.ndarray
    roles: np.ndarray
    tensioner: np.ndarray
    arm_friction: np.ndarray
    load_friction: np.ndarray


def translate(layout) -> tuple[Parameters, DriveGeometry]:
    """The kernels' records of a validated layout and the installed drive's geometry (which
    the initialization uses and which reads the same records)."""
    roles = _roles(layout)
    pulleys, load_table = _pulleys(layout)
    tensioner = _tensioner_arm(layout)
    geometry = DriveGeometry(pulleys, roles, tensioner, layout.belt, layout.contact)
    if layout.tensioner is not None:
        _tensioner_spring(layout, tensioner, geometry)
    belt = layout.belt
    if belt.pretension_N is not None:
        rest_length = solve_rest_length(geometry, belt.pretension_N)
    else:
        rest_length = belt.unstretched_length_m / belt.n_elements
    belt_record = _belt(belt, rest_length, layout.drive.gravity_m_per_s2)
    parameters = Parameters(
        belt=belt_record,
        contact=_contact(layout.contact, rest_length),
        friction=_contact_friction(layout.friction, belt_record[0]),
        pulleys=pulleys,
        load_table=load_table,
        roles=roles,
        tensioner=tensioner,
        arm_friction=_tanh_law(layout.tensioner.friction_velocity_threshold_rad_per_s
                               if layout.tensioner is not None else NO_ARM_THRESHOLD),
        load_friction=_tanh_law(LOAD_SPEED_THRESHOLD),
    )
    return parameters, geometry


def effective_mu(layout, pulley) -> float:
    """Friction coefficient of the belt on ``pulley``: the poly-V ribs wedge into the grooves,
    ``mu / sin(phi/2)`` (Simscape Belt Pulley (MathWorks)); the flat back, ``mu_back``."""
    if pulley.side == "ribbed":
        return layout.friction.mu / math.sin(0.5 * layout.belt.groove_angle_rad)
    return layout.friction.mu_back


def _roles(layout) -> np.ndarray:
    record = np.zeros(1, ROLES)
    r = record[0]
    r["crank"] = layout.crank_index
    r["crank_sense"] = crank_sense(layout)
    r["crank_speed_input"] = 0 if layout.torque_driven_crank else 1
    r["water_pump"] = -1 if layout.water_pump_index is None else layout.water_pump_index
    r["tensioner"] = -1 if layout.tensioner_index is None else layout.tensioner_index
    r["headline"] = [p.name for p in layout.pulleys].index(layout.headline_pulley_name)
    return record


def _pulleys(layout) -> tuple[np.ndarray, np.ndarray]:
    """PULLEY rows and the load table their ``table_start/stop`` index."""
    senses = wrap_senses(layout)
    records = np.zeros(len(layout.pulleys), PULLEY)
    rows = []
    for j, (pulley, r) in enumerate(zip(layout.pulleys, records)):
        r["x"], r["y"] = pulley.center_m
        r["radius"] = cord_radius(layout, j)
        r["sense"] = senses[j]
        # a speed-driven crank's inertia is never used (1/I = 0 in the kernels)
        speed_driven = pulley.role == "crankshaft" and not layout.torque_driven_crank
        r["inertia"] = 1.0 if speed_driven else pulley.inertia_kgm2
        r["bearing_damping"] = pulley.bearing_damping_Nms_per_rad
        r["bearing_friction"] = pulley.bearing_friction_torque_Nm
        r["effective_mu"] = effective_mu(layout, pulley)
        r["table_start"] = len(rows)
        if pulley.torque_table_speed_rad_per_s is not None:
            rows += list(zip(pulley.torque_table_speed_rad_per_s, pulley.torque_table_Nm))
        r["table_stop"] = len(rows)
    table = np.array(rows, dtype=float).reshape(-1, 2) if rows else np.zeros((0, 2))
    return records, table


def _tensioner_arm(layout) -> np.ndarray:
    """TENSIONER record with the arm's geometry, inertia, damping and stops; the spring
    follows in :func:`_tensioner_spring` (it needs the drive's geometry). No stops without
    a tensioner."""
    record = np.zeros(1, TENSIONER)
    r = record[0]
    r["stop_min"] = -np.inf
    r["stop_max"] = np.inf
    t = layout.tensioner_index
    if t is None:
        return record
    tensioner = layout.tensioner
    pivot = np.array(tensioner.pivot_m, dtype=float)
    arm = np.array(layout.pulleys[t].center_m, dtype=float) - pivot
    installed = float(np.arctan2(arm[1], arm[0]))
    r["pivot_x"], r["pivot_y"] = pivot
    r["arm_length"] = float(np.hypot(*arm))
    r["arm_inertia"] = tensioner.arm_inertia_kgm2
    r["installed_angle"] = installed
    r["damping"] = tensioner.damping_Nms_per_rad
    # "away from the belt" is against the spring
    r["friction_away"] = tensioner.friction_torque_Nm
    r["friction_toward"] = tensioner.friction_torque_return_Nm
    r["stop_min"] = installed + tensioner.stop_min_rad
    r["stop_max"] = installed + tensioner.stop_max_rad
    r["stop_stiffness"] = tensioner.stop_stiffness_Nm_per_rad
    r["stop_damping"] = tensioner.stop_damping_Nms_per_rad
    return record


def _tensioner_spring(layout, record: np.ndarray, geometry: DriveGeometry) -> None:
    """The spring of the TENSIONER ``record``: its sense turns the arm into the belt (against
    the moment of the belt's hub load), its preload is the layout's or balances the
    pretension at the installed angle (Scania thesis (Vahedi 2012) eqs. 12.23-12.24)."""
    r = record[0]
    p = len(layout.pulleys)
    installed = r["installed_angle"]
    moment = geometry.hub_moment(installed, np.full(p, 1.0), 0.0)
    r["spring_sense"] = -math.copysign(1.0, moment)
    tensioner = layout.tensioner
    if tensioner.preload_Nm is not None:
        r["spring_preload"] = tensioner.preload_Nm
    else:
        pre = np.full(p, layout.belt.pretension_N)
        r["spring_preload"] = abs(geometry.hub_moment(installed, pre, 0.0))
    r["spring_rate"] = tensioner.spring_rate_Nm_per_rad


def _belt(belt, l0: float, gravity) -> np.ndarray:
    record = np.zeros(1, BELT)
    r = record[0]
    r["n_nodes"] = belt.n_elements
    r["rest_length"] = l0
    r["node_mass"] = belt.mass_per_length_kg_per_m * l0
    r["node_inertia"] = belt.mass_per_length_kg_per_m * l0 * (l0 ** 2 + belt.thickness_m ** 2) / 12.0
    r["axial_stiffness"] = belt.axial_stiffness_N
    r["axial_damping"] = belt.axial_damping_Ns
    r["bending_stiffness"] = belt.bending_stiffness_Nm2
    r["bending_damping"] = belt.bending_damping_Nm2s
    r["transverse_damping"] = belt.transverse_damping_Ns_per_m2 * l0
    r["gravity_x"], r["gravity_y"] = gravity
    return record


def _contact(contact, l0: float) -> np.ndarray:
    record = np.zeros(1, CONTACT)
    r = record[0]
    r["stiffness_quadratic"] = contact.stiffness_quadratic_N_per_m3 * l0
    r["stiffness_linear"] = contact.stiffness_linear_N_per_m2 * l0
    r["damping"] = contact.damping_Ns_per_m2 * l0
    return record


def _contact_friction(friction, belt) -> np.ndarray:
    """FRICTION_LAW record of the belt-pulley contacts; ``belt`` the BELT record (the
    bristle law is per node)."""
    record = np.zeros(1, FRICTION_LAW)
    r = record[0]
    r["law"] = LAW_CODES[friction.law]
    r["slip_peak"] = friction.slip_peak
    r["slip_saturation"] = friction.slip_saturation
    r["saturation_ratio"] = friction.saturation_ratio
    r["reference_speed"] = friction.reference_speed_m_per_s
    r["velocity_threshold"] = friction.velocity_threshold_m_per_s
    r["dahl_stiffness"] = friction.dahl_stiffness_per_m
    r["static_ratio"] = friction.static_ratio
    r["stribeck_velocity"] = friction.stribeck_velocity_m_per_s
    r["lugre_stiffness"] = friction.lugre_stiffness_per_m
    r["lugre_damping"] = friction.lugre_damping_s_per_m
    r["lugre_viscous"] = friction.lugre_viscous_s_per_m
    r["gms_count"] = len(friction.gms_weights)
    r["gms_weight"][:len(friction.gms_weights)] = friction.gms_weights
    r["gms_stiffness"][:len(friction.gms_stiffness_per_m)] = friction.gms_stiffness_per_m
    r["gms_attraction"] = friction.gms_attraction_per_s
    if friction.law == "bristle":
        k = friction.bristle_stiffness_N_per_m2 * belt["rest_length"]
        r["bristle_stiffness"] = k
        if friction.bristle_damping_Ns_per_m2 is None:
            # half-critical damping of a node on its bristle spring (critical: 2 sqrt(k m)): no
            # ringing in stick
            r["bristle_damping"] = math.sqrt(k * belt["node_mass"])
        else:
            r["bristle_damping"] = friction.bristle_damping_Ns_per_m2 * belt["rest_length"]
    return record


def _tanh_law(velocity_threshold: float) -> np.ndarray:
    """FRICTION_LAW record of a regularized Coulomb friction, tanh(4 v / v_thr)."""
    record = np.zeros(1, FRICTION_LAW)
    record[0]["law"] = LAW_TANH
    record[0]["velocity_threshold"] = velocity_threshold
    return record


def translate_lumped(layout, installed: BeltPath, ends: np.ndarray) -> np.ndarray:
    """LUMPED_BELT record (:mod:`belt_fmu.model.lumped`) of a validated layout: the belt of
    the lumped model. Its unstretched length is the layout's, or what closes the ``installed``
    cord path at uniform pretension T0 with the spans' ends under it (the wraps sunk into the
    contact, the belt bending frees), ``L / (1 + T0 / EA) - T0 sum_j c_j`` (the lumped
    counterpart of eq. 12.22), ``ends`` the spans' c_j (:func:`belt_fmu.model.lumped.
    sink_compliances`, :func:`belt_fmu.model.lumped.bending_compliances`)."""
    belt = layout.belt
    record = np.zeros(1, LUMPED_BELT)
    r = record[0]
    r["axial_stiffness"] = belt.axial_stiffness_N
    r["axial_damping"] = belt.axial_damping_Ns
    r["mass_per_length"] = belt.mass_per_length_kg_per_m
    if belt.pretension_N is not None:
        r["unstretched_length"] = (installed.length / (1.0 + belt.pretension_N / belt.axial_stiffness_N)
                                   - belt.pretension_N * float(np.sum(ends)))
    else:
        r["unstretched_length"] = belt.unstretched_length_m
    r["average_outputs"] = layout.drive.output_mode == "average"
    r["transverse_damping"] = belt.transverse_damping_Ns_per_m2
    return record
