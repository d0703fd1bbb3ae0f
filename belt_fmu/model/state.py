"""Preallocated model arrays shared by the compiled kernels.

The whole dynamic state lives in ONE flat float64 vector ``y`` (so saving and restoring it,
e.g. as FMU state, is a copy); :func:`unpack_state` gives named views into it:

==========  ============  =====================================================
view        shape         meaning
==========  ============  =====================================================
q           (n, 3)        belt node x [m], y [m], phi [rad] (cord line, CCW)
u           (n, 3)        their time derivatives [m/s, m/s, rad/s]
theta       (p,)          pulley rotation angles [rad], CCW
omega       (p,)          pulley angular velocities [rad/s], CCW
arm         (2,)          tensioner arm angle psi [rad] (polar angle of the pulley
                          centre about the pivot, CCW) and its rate [rad/s]
friction    (n, p, k)     friction states per belt node and pulley (k per law,
                          see :func:`friction_state_count`); zero out of contact
==========  ============  =====================================================

Parameters are numpy records (``DRIVE`` scalar fields, ``PULLEY`` one row per pulley) so
that kernels read ``drive.axial_stiffness`` rather than ``params[7]``. Diagnostics and
scratch arrays are views into one float and one integer work buffer (:func:`unpack_arrays`).
Kernels take the named tuples; the entries called from Python take the flat arrays and
unpack them in compiled code, because numba types a named tuple of 30 arrays slowly on
every call from Python.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..layout import FRICTION_LAWS, GMS_MAX_ELEMENTS

LAW_CREEP_POLYNOMIAL, LAW_TANH, LAW_BRISTLE, LAW_DAHL, LAW_LUGRE, LAW_GMS = range(len(FRICTION_LAWS))

#: Scalar parameters of the whole drive, per belt node where it says "node".
DRIVE = np.dtype(
    [
        ("n_nodes", "i8"),
        ("n_pulleys", "i8"),
        ("rest_length", "f8"),  # unstretched element length l0 [m]
        ("node_mass", "f8"),  # m' l0 [kg]
        ("node_inertia", "f8"),  # m' l0 (l0^2 + h^2) / 12 [kg m^2]
        ("axial_stiffness", "f8"),  # EA [N]
        ("axial_damping", "f8"),  # [N s]
        ("bending_stiffness", "f8"),  # EI [N m^2]
        ("bending_damping", "f8"),  # [N m^2 s]
        ("transverse_damping", "f8"),  # node [N s/m]
        ("contact_c1", "f8"),  # node contact stiffness, quadratic [N/m^2]
        ("contact_c2", "f8"),  # node contact stiffness, linear [N/m]
        ("contact_damping", "f8"),  # node contact damping [N s/m]
        ("crank", "i8"),  # index of the crankshaft pulley
        ("headline", "i8"),  # index of the pulley whose hub load is `bearing_force`
        ("water_pump", "i8"),  # index of the water pump pulley or -1
        ("crank_sense", "f8"),  # +1 crank turns CCW, -1 CW
        ("tensioner", "i8"),  # index of the tensioner pulley or -1
        ("pivot_x", "f8"),
        ("pivot_y", "f8"),
        ("arm_length", "f8"),  # [m]
        ("arm_inertia", "f8"),  # [kg m^2]
        ("arm_installed", "f8"),  # installed arm angle [rad]
        ("spring_sense", "f8"),  # +1 if the spring turns the arm CCW (into the belt)
        ("spring_rate", "f8"),  # [N m/rad]
        ("spring_preload", "f8"),  # spring torque at the installed angle [N m]
        ("arm_damping", "f8"),  # [N m s/rad]
        ("arm_friction_away", "f8"),  # Coulomb torque, arm moving away from the belt [N m]
        ("arm_friction_toward", "f8"),  # ... moving toward the belt [N m]
        ("stop_min", "f8"),  # absolute arm angle limits [rad]
        ("stop_max", "f8"),
        ("stop_stiffness", "f8"),
        ("stop_damping", "f8"),
    ]
)

#: Parameters of a friction law (:mod:`belt_fmu.model.friction`); the coefficient itself is
#: passed separately (it differs per pulley). Velocities in m/s for belt contacts, rad/s
#: for the tensioner arm.
FRICTION_LAW = np.dtype(
    [
        ("law", "i8"),  # LAW_CREEP_POLYNOMIAL, LAW_TANH or LAW_BRISTLE
        ("slip_peak", "f8"),  # creep rate of the peak coefficient s1 [-]
        ("slip_saturation", "f8"),  # s2 [-]
        ("saturation_ratio", "f8"),  # mu(s2) / mu(s1)
        ("reference_speed", "f8"),  # floor of the creep-rate reference speed
        ("velocity_threshold", "f8"),  # tanh(4 v / v_thr)
        ("bristle_stiffness", "f8"),  # node [N/m]
        ("bristle_damping", "f8"),  # node [N s/m]
        ("dahl_stiffness", "f8"),  # Dahl sigma [1/m]
        ("static_ratio", "f8"),  # LuGre, GMS: mu_s / mu_c
        ("stribeck_velocity", "f8"),  # LuGre, GMS [m/s]
        ("lugre_stiffness", "f8"),  # sigma0 [1/m]
        ("lugre_damping", "f8"),  # sigma1 [s/m]
        ("lugre_viscous", "f8"),  # sigma2 [s/m]
        ("gms_count", "i8"),  # Maxwell-slip elements per contact
        ("gms_weight", "f8", (GMS_MAX_ELEMENTS,)),  # nu_k
        ("gms_stiffness", "f8", (GMS_MAX_ELEMENTS,)),  # sigma_mu_k [1/m]
        ("gms_attraction", "f8"),  # c [1/s]
    ]
)


@njit(cache=True)
def friction_state_count(law, gms_count):
    """Friction states per contact: bristle deflection (bristle), coefficient (Dahl), bristle
    state z (LuGre), and per Maxwell element its coefficient and slip direction (GMS)."""
    if law == LAW_GMS:
        return 2 * gms_count
    if law in (LAW_BRISTLE, LAW_DAHL, LAW_LUGRE):
        return 1
    return 0

#: One row per pulley, in belt travel order.
PULLEY = np.dtype(
    [
        ("x", "f8"),  # centre [m] (tensioner: installed centre)
        ("y", "f8"),
        ("radius", "f8"),  # cord-line radius rho [m]
        ("sense", "f8"),  # +1 turns CCW in normal running, -1 CW
        ("inertia", "f8"),  # [kg m^2]
        ("bearing_damping", "f8"),  # [N m s/rad]
        ("mu", "f8"),  # effective friction coefficient of this contact
        ("table_start", "i8"),  # load-torque table rows [start, stop) in ModelArrays.table
        ("table_stop", "i8"),
    ]
)


class StateViews(NamedTuple):
    """Named views into the flat state vector ``y`` (see the module docstring)."""

    q: np.ndarray
    u: np.ndarray
    theta: np.ndarray
    omega: np.ndarray
    arm: np.ndarray
    friction: np.ndarray


class ModelArrays(NamedTuple):
    """Everything the integrator kernel reads (parameters) or writes (diagnostics, scratch).

    The parameter records are separate arrays; every other array is a view into one float
    and one integer work buffer (:func:`unpack_arrays` defines their layout).
    """

    drive: np.ndarray  # (1,) DRIVE record
    contact_law: np.ndarray  # (1,) FRICTION_LAW of the belt-pulley contacts
    arm_law: np.ndarray  # (1,) FRICTION_LAW of the tensioner arm pivot (tanh, rad/s)
    load_law: np.ndarray  # (1,) FRICTION_LAW of pulley load torques against rotation (tanh, rad/s)
    pulleys: np.ndarray  # (p,) PULLEY records
    table: np.ndarray  # (k, 2) accessory load tables: speed [rad/s], torque [N m]
    # diagnostics of the last step, overwritten every step:
    node_force: np.ndarray  # (n, 3) force/moment on each node, friction excluded
    axial_force: np.ndarray  # (n,) axial force of element i (node i -> i+1) [N]
    element_direction: np.ndarray  # (n, 2) unit chord direction of element i
    axial_work: np.ndarray  # (n, 6) scratch of the implicit axial solve
    element_work: np.ndarray  # (6,) scratch of one element's loads
    normal_force: np.ndarray  # (n, p) contact normal force [N]
    friction_force: np.ndarray  # (n, p) friction force on the node along the CCW tangent [N]
    slip: np.ndarray  # (n, p) slip velocity of each contact, node minus pulley [m/s]
    friction_work: np.ndarray  # (k,) scratch: trial friction states of one contact
    arm_work: np.ndarray  # (1,) scratch: the (stateless) friction solves of arm and loads
    contact_frame: np.ndarray  # (n p, 3): unit normal x, y (pulley centre to node), distance [m]
    hub_force: np.ndarray  # (p, 2) force of the belt on each pulley [N]
    belt_torque: np.ndarray  # (p,) torque of the belt on each pulley, CCW [N m]
    centers: np.ndarray  # (p, 2) current pulley centres [m]
    center_velocity: np.ndarray  # (p, 2) [m/s]
    # contacts: neighbour lists (rebuilt every few steps) and this step's contact list
    candidates: np.ndarray  # (p, n) int: nodes near pulley j, first candidate_count[j] valid
    candidate_count: np.ndarray  # (p,) int
    contact_node: np.ndarray  # (n p,) int: node of contact k, k < contact_count[0]
    contact_pulley: np.ndarray  # (n p,) int
    contact_count: np.ndarray  # (1,) int
    rebuild_countdown: np.ndarray  # (1,) int: steps until the neighbour lists are rebuilt
    span_members: np.ndarray  # (n,) int scratch: elements of the span being measured


@njit(cache=True)
def friction_slots(contact_law) -> int:
    """Friction states per contact stored: at least one, so every law has the same views."""
    return max(1, friction_state_count(contact_law[0].law, contact_law[0].gms_count))


@njit(cache=True)
def _offsets(sizes):
    out = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    for i in range(sizes.shape[0]):
        out[i + 1] = out[i] + sizes[i]
    return out


@njit(cache=True)
def _float_offsets(n, p, k):
    """Offsets of the float work arrays, in the order of :class:`ModelArrays`."""
    return _offsets(np.array([3 * n, n, 2 * n, 6 * n, 6, n * p, n * p, n * p, k, 1, 3 * n * p, 2 * p, p,
                              2 * p, 2 * p], dtype=np.int64))


@njit(cache=True)
def _int_offsets(n, p):
    """Offsets of the integer work arrays, in the order of :class:`ModelArrays`."""
    return _offsets(np.array([p * n, p, n * p, n * p, 1, 1, n], dtype=np.int64))


@njit(cache=True)
def buffer_sizes(n, p, k):
    """Sizes of the state vector and of the float and integer work buffers."""
    return 6 * n + 2 * p + 2 + n * p * k, _float_offsets(n, p, k)[-1], _int_offsets(n, p)[-1]


@njit(cache=True)
def unpack_state(y, n, p, k):
    """:class:`StateViews` of the flat state vector ``y``."""
    o = 0
    q = y[o:o + 3 * n].reshape((n, 3))
    o += 3 * n
    u = y[o:o + 3 * n].reshape((n, 3))
    o += 3 * n
    theta = y[o:o + p]
    o += p
    omega = y[o:o + p]
    o += p
    arm = y[o:o + 2]
    o += 2
    friction = y[o:o + n * p * k].reshape((n, p, k))
    return StateViews(q, u, theta, omega, arm, friction)


@njit(cache=True)
def unpack_arrays(drive, contact_law, arm_law, load_law, pulleys, table, work, index_work):
    """:class:`ModelArrays`: the parameter records and views into the work buffers."""
    n = drive[0].n_nodes
    p = pulleys.shape[0]
    f = _float_offsets(n, p, friction_slots(contact_law))
    i = _int_offsets(n, p)
    return ModelArrays(
        drive, contact_law, arm_law, load_law, pulleys, table,
        work[f[0]:f[1]].reshape((n, 3)), work[f[1]:f[2]], work[f[2]:f[3]].reshape((n, 2)),
        work[f[3]:f[4]].reshape((n, 6)), work[f[4]:f[5]], work[f[5]:f[6]].reshape((n, p)),
        work[f[6]:f[7]].reshape((n, p)), work[f[7]:f[8]].reshape((n, p)), work[f[8]:f[9]], work[f[9]:f[10]],
        work[f[10]:f[11]].reshape((n * p, 3)), work[f[11]:f[12]].reshape((p, 2)), work[f[12]:f[13]],
        work[f[13]:f[14]].reshape((p, 2)), work[f[14]:f[15]].reshape((p, 2)),
        index_work[i[0]:i[1]].reshape((p, n)), index_work[i[1]:i[2]], index_work[i[2]:i[3]],
        index_work[i[3]:i[4]], index_work[i[4]:i[5]], index_work[i[5]:i[6]], index_work[i[6]:i[7]],
    )
