"""Pulleys and their loads: the drive's rigid rotating parts ([Scania thesis] sections 4.2-4.5).

Kernels the integrator and the outputs share: where the pulley centres are (the tensioner
pulley rides on its arm, :mod:`belt_fmu.model.tensioner`) and which loads act on a pulley.
Rotations are CCW positive in the drawing; each pulley's ``sense`` is the sense it turns in
normal running, so ``sense * omega`` is its running speed.
"""
import numpy as np
from numba import njit

from .friction import implicit_friction
from .layout_checks import steady_load_torque
from .tensioner import arm_pulley_center

#: One row per pulley, in belt travel order.
PULLEY = np.dtype(
    [
        ("x", "f8"),  # centre [m] (tensioner: installed centre)
        ("y", "f8"),
        ("radius", "f8"),  # cord-line radius rho [m]
        ("sense", "f8"),  # +1 turns CCW in normal running, -1 CW
        ("inertia", "f8"),  # polar inertia [kg m^2] (a speed-driven crankshaft: unused)
        ("bearing_damping", "f8"),  # viscous bearing loss [N m s/rad]
        ("bearing_friction", "f8"),  # Coulomb bearing drag [N m], against the rotation
        ("effective_mu", "f8"),  # friction coefficient of the belt on it: ribbed mu / sin(phi/2)
        ("table_start", "i8"),  # its load-torque table: rows [start, stop) of the load table
        ("table_stop", "i8"),
    ]
)

#: Which pulley plays which role (indices into the PULLEY rows, -1 for none).
ROLES = np.dtype(
    [
        ("crank", "i8"),  # the crankshaft: its speed is the input crank_speed, or it is free
        ("crank_speed_input", "i8"),  # 1: the crank's speed is prescribed; 0: it turns under the
        # engine torque (its load torque in the work view port_torque) like a free pulley
        ("crank_sense", "f8"),  # +1 the crankshaft turns CCW in the drawing, -1 CW
        ("water_pump", "i8"),  # loaded by the input water_pump_torque, or -1
        ("tensioner", "i8"),  # carried by the tensioner arm, or -1
        ("headline", "i8"),  # whose hub-load magnitude is the output bearing_force
    ]
)


# inlined: both models call it (why: the note above friction.is_state_law)
@njit(cache=True, _nrt=False)
def table_torque(table, start, stop, speed):
    """Linear interpolation of a load-torque table [N m] at ``speed`` >= 0, held at the ends."""
    if stop <= start:
        return 0.0
    if speed <= table[start, 0]:
        return table[start, 1]
    for k in range(start + 1, stop):
        if speed <= table[k, 0]:
            x0, t0 = table[k - 1, 0], table[k - 1, 1]
            x1, t1 = table[k, 0], table[k, 1]
            return t0 + (t1 - t0) * (speed - x0) / (x1 - x0)
    return table[stop - 1, 1]


# inlined: both models call it (why: the note above friction.is_state_law)
@njit(cache=True, _nrt=False, inline="always")
def pulley_loads(roles, pulley, index, omega, water_pump_torque, port_torque, table):
    """External load on pulley ``index``: (resisting torque >= 0 [N m], driving torque [N m]).

    Load torques are given positive against the pulley's rotation (the water-pump input, the
    pulley's input ``port_torque``, the accessory tables at the current running speed); they
    resist motion whichever way it goes and cannot drive the pulley backwards. A negative
    value is a torque driving the pulley in its running direction. The bearing's Coulomb drag
    is one of the resisting torques (so its sign is regularized as theirs is).
    """
    resisting = pulley.bearing_friction
    driving = 0.0
    if index == roles.water_pump:
        if water_pump_torque >= 0.0:
            resisting += water_pump_torque
        else:
            driving -= water_pump_torque
    if port_torque >= 0.0:
        resisting += port_torque
    else:
        driving -= port_torque
    if pulley.table_stop > pulley.table_start:
        torque = table_torque(table, pulley.table_start, pulley.table_stop, abs(omega))
        if torque >= 0.0:
            resisting += torque
        else:
            driving -= torque
    return resisting, driving


@njit(cache=True, _nrt=False, inline="always")
def update_pulley_centers(p, s, w):
    """Pulley centres ``w.centers`` [m] and their velocities ``w.center_velocity`` [m/s]:
    fixed, but the tensioner pulley rides on the arm at polar angle ``s.arm[0]``."""
    pulleys = p.pulleys
    for j in range(pulleys.shape[0]):
        w.centers[j, 0] = pulleys[j].x
        w.centers[j, 1] = pulleys[j].y
        w.center_velocity[j, 0] = 0.0
        w.center_velocity[j, 1] = 0.0
    t = p.roles[0].tensioner
    if t >= 0:
        arm_pulley_center(p.tensioner[0], s.arm, w.centers, w.center_velocity, t)


@njit(cache=True, _nrt=False, inline="always")
def accelerate_pulleys(p, s, w, dt, water_pump_torque):
    """Velocity predictor of the free pulleys (all but a speed-driven crank): their driving loads and
    bearing damping explicit; a load resisting rotation is a Coulomb-like torque against the
    motion, solved implicitly as friction is (:func:`belt_fmu.model.friction.implicit_friction`
    with the ``load_friction`` law), so that it stops a pulley instead of reversing it. The
    belt's torque comes with the friction impulses."""
    roles = p.roles[0]
    pulleys = p.pulleys
    for j in range(pulleys.shape[0]):
        if j != roles.crank or roles.crank_speed_input == 0:
            inertia = pulleys[j].inertia
            resisting, driving = pulley_loads(roles, pulleys[j], j, s.omega[j], water_pump_torque, w.port_torque[j],
                                              p.load_table)
            free = s.omega[j] + dt * (pulleys[j].sense * driving - pulleys[j].bearing_damping * s.omega[j]) / inertia
            s.omega[j] = free if resisting == 0.0 else implicit_friction(p.load_friction[0], resisting, 1.0, free, 0.0,
                                                                         w.arm_work, w.arm_work, inertia, dt,
                                                                         s.omega[j])[1]


def steady_load_torques(parameters, speeds, water_pump_torque: float, port_torque=None) -> np.ndarray:
    """Load torque of every pulley [N m] running steadily at ``speeds`` [rad/s], against its
    rotation: bearing loss and accessory table (:func:`belt_fmu.model.layout_checks.steady_load_torque`),
    the water-pump input and the pulleys' inputs ``port_torque`` (p,) (0 for the crank, which drives)."""
    roles = parameters.roles[0]
    torques = np.zeros(len(speeds))
    for j, pulley in enumerate(parameters.pulleys):
        if j == roles["crank"]:
            continue
        table = parameters.load_table[pulley["table_start"]:pulley["table_stop"]]
        torques[j] = steady_load_torque(speeds[j], pulley["bearing_damping"], pulley["bearing_friction"],
                                        table[:, 0], table[:, 1])
        if port_torque is not None:
            torques[j] += port_torque[j]
        if j == roles["water_pump"]:
            torques[j] += water_pump_torque
    return torques
