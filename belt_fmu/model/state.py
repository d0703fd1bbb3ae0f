"""Preallocated model arrays shared by the compiled kernels.

The whole dynamic state lives in ONE flat float64 vector ``y`` (so saving and restoring it,
e.g. as FMU state, is a copy); :class:`StateLayout` gives named views into it:

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
that kernels read ``drive.axial_stiffness`` rather than ``params[7]``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

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


def friction_state_count(law: int, gms_count: int = 0) -> int:
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


class ModelArrays(NamedTuple):
    """Everything the integrator kernel reads (parameters) or writes (diagnostics)."""

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
    # contacts: neighbour lists (rebuilt every few steps) and this step's contact list
    candidates: np.ndarray  # (p, n) int: nodes near pulley j, first candidate_count[j] valid
    candidate_count: np.ndarray  # (p,) int
    contact_node: np.ndarray  # (n p,) int: node of contact k, k < contact_count[0]
    contact_pulley: np.ndarray  # (n p,) int
    contact_frame: np.ndarray  # (n p, 3): unit normal x, y (pulley centre to node), distance [m]
    contact_count: np.ndarray  # (1,) int
    rebuild_countdown: np.ndarray  # (1,) int: steps until the neighbour lists are rebuilt
    hub_force: np.ndarray  # (p, 2) force of the belt on each pulley [N]
    belt_torque: np.ndarray  # (p,) torque of the belt on each pulley, CCW [N m]
    centers: np.ndarray  # (p, 2) current pulley centres [m]
    center_velocity: np.ndarray  # (p, 2) [m/s]


class StateLayout:
    """Offsets of the named parts of the flat state vector of a drive."""

    def __init__(self, n_nodes: int, n_pulleys: int, n_friction_states: int):
        self.n_nodes = n_nodes
        self.n_pulleys = n_pulleys
        # at least one friction slot per contact, so the views keep one shape for every law
        self.n_friction = max(1, n_friction_states)
        sizes = [("q", 3 * n_nodes), ("u", 3 * n_nodes), ("theta", n_pulleys), ("omega", n_pulleys),
                 ("arm", 2), ("friction", n_nodes * n_pulleys * self.n_friction)]
        self.slices = {}
        start = 0
        for name, size in sizes:
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start

    def new(self) -> np.ndarray:
        return np.zeros(self.size)

    def views(self, y: np.ndarray) -> dict:
        """Named, writable views of ``y``."""
        n, p = self.n_nodes, self.n_pulleys
        s = self.slices
        return {
            "q": y[s["q"]].reshape(n, 3),
            "u": y[s["u"]].reshape(n, 3),
            "theta": y[s["theta"]],
            "omega": y[s["omega"]],
            "arm": y[s["arm"]],
            "friction": y[s["friction"]].reshape(n, p, self.n_friction),
        }


def allocate_arrays(drive: np.ndarray, contact_law: np.ndarray, arm_law: np.ndarray, load_law: np.ndarray,
                    pulleys: np.ndarray, table: np.ndarray) -> ModelArrays:
    n = int(drive[0]["n_nodes"])
    p = len(pulleys)
    return ModelArrays(
        drive=drive,
        contact_law=contact_law,
        arm_law=arm_law,
        load_law=load_law,
        pulleys=pulleys,
        table=table,
        node_force=np.zeros((n, 3)),
        axial_force=np.zeros(n),
        element_direction=np.zeros((n, 2)),
        axial_work=np.zeros((n, 6)),
        element_work=np.zeros(6),
        normal_force=np.zeros((n, p)),
        friction_force=np.zeros((n, p)),
        slip=np.zeros((n, p)),
        arm_work=np.zeros(1),
        friction_work=np.zeros(max(1, int(friction_state_count(int(contact_law[0]["law"]),
                                                                 int(contact_law[0]["gms_count"]))))),
        candidates=np.zeros((p, n), dtype=np.int64),
        candidate_count=np.zeros(p, dtype=np.int64),
        contact_node=np.zeros(n * p, dtype=np.int64),
        contact_pulley=np.zeros(n * p, dtype=np.int64),
        contact_frame=np.zeros((n * p, 3)),
        contact_count=np.zeros(1, dtype=np.int64),
        rebuild_countdown=np.zeros(1, dtype=np.int64),
        hub_force=np.zeros((p, 2)),
        belt_torque=np.zeros(p),
        centers=np.zeros((p, 2)),
        center_velocity=np.zeros((p, 2)),
    )
