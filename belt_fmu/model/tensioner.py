"""The automatic tensioner: an arm on a pivot carrying the tensioner pulley, pressed into the
belt by a torsion spring, with viscous and asymmetric Coulomb damping and end stops ([Scania thesis]
section 4.3).

The arm angle psi is the polar angle of the tensioner pulley's centre about the pivot, CCW;
torques on the arm are CCW positive. The spring's sense is chosen so that it turns the arm
into the belt: the moment of the belt's hub load about the pivot opposes it.
"""
import numpy as np
from numba import njit

from .friction import implicit_friction

#: The tensioner arm. Angles are absolute polar angles [rad]; the layout gives the stops
#: relative to the installed angle.
TENSIONER = np.dtype(
    [
        ("pivot_x", "f8"),  # arm pivot [m]
        ("pivot_y", "f8"),
        ("arm_length", "f8"),  # pivot to tensioner pulley centre [m]
        ("arm_inertia", "f8"),  # arm and pulley about the pivot [kg m^2]
        ("installed_angle", "f8"),  # arm angle at the layout's pulley centre [rad]
        ("spring_sense", "f8"),  # +1 if the spring turns the arm CCW (into the belt), else -1
        ("spring_rate", "f8"),  # [N m/rad]
        ("spring_preload", "f8"),  # spring torque magnitude at the installed angle [N m]
        ("damping", "f8"),  # viscous [N m s/rad]
        ("friction_away", "f8"),  # Coulomb torque, arm moving away from the belt [N m]
        ("friction_toward", "f8"),  # ... moving toward the belt [N m]
        ("stop_min", "f8"),  # end stops [rad]
        ("stop_max", "f8"),
        ("stop_stiffness", "f8"),  # [N m/rad]
        ("stop_damping", "f8"),  # [N m s/rad]
    ]
)


# inlined: both models call it (why: the note above friction.is_state_law)
@njit(cache=True, _nrt=False, inline="always")
def spring_torque(tensioner, psi):
    """Spring torque on the arm [N m, CCW] at arm angle ``psi``: the preload at the installed
    angle plus rate times deflection, ``s T0 - k (psi - psi0)``."""
    return tensioner.spring_sense * tensioner.spring_preload - tensioner.spring_rate * (
        psi - tensioner.installed_angle)


@njit(cache=True, _nrt=False, inline="always")
def arm_support_torque(tensioner, psi, psi_rate):
    """Torque of the arm's own spring (:func:`spring_torque`), viscous damper and end stops (a
    stiff spring-damper beyond each stop) [N m, CCW], ([Scania thesis] 4.3), with its
    stiffness and damping: ``-d torque / d psi`` [N m/rad] and ``-d torque / d psi_rate``
    [N m s/rad]."""
    torque = spring_torque(tensioner, psi) - tensioner.damping * psi_rate
    stiffness = tensioner.spring_rate
    damping = tensioner.damping
    if psi > tensioner.stop_max or psi < tensioner.stop_min:
        stop = tensioner.stop_max if psi > tensioner.stop_max else tensioner.stop_min
        torque -= tensioner.stop_stiffness * (psi - stop) + tensioner.stop_damping * psi_rate
        stiffness += tensioner.stop_stiffness
        damping += tensioner.stop_damping
    return torque, stiffness, damping


# inlined: both models call it (why: the note above friction.is_state_law)
@njit(cache=True, _nrt=False, inline="always")
def arm_torque(tensioner, psi, psi_rate, hub_x, hub_y):
    """Torque on the tensioner arm [N m, CCW], Coulomb friction excluded ([Scania thesis] 4.3):
    the belt load (hub force moment about the pivot, eq. 12.23) and the arm's spring, damper
    and stops (:func:`arm_support_torque`)."""
    rx = tensioner.arm_length * np.cos(psi)
    ry = tensioner.arm_length * np.sin(psi)
    return rx * hub_y - ry * hub_x + arm_support_torque(tensioner, psi, psi_rate)[0]


@njit(cache=True, _nrt=False, inline="always")
def arm_pulley_center(tensioner, arm, centers, center_velocity, t):
    """Centre [m] and velocity [m/s] of the tensioner pulley ``t`` on the arm at state
    ``arm`` = (psi, dpsi/dt), into row ``t`` of ``centers`` and ``center_velocity``."""
    c = np.cos(arm[0])
    s = np.sin(arm[0])
    centers[t, 0] = tensioner.pivot_x + tensioner.arm_length * c
    centers[t, 1] = tensioner.pivot_y + tensioner.arm_length * s
    center_velocity[t, 0] = -tensioner.arm_length * s * arm[1]
    center_velocity[t, 1] = tensioner.arm_length * c * arm[1]


@njit(cache=True, _nrt=False, inline="always")
def advance_arm(p, s, w, dt):
    """The arm's step: its rate from the belt's hub load on the tensioner pulley (this step's
    ``w.hub_force``), the spring, damper and stops, explicit, and its Coulomb friction
    implicit (``arm_friction``, a tanh law in rad/s, solved as a contact's friction is); then
    its angle from the new rate. Nothing without a tensioner."""
    t = p.roles[0].tensioner
    if t < 0:
        return
    tensioner = p.tensioner[0]
    psi = s.arm[0]
    rate = s.arm[1]
    torque = arm_torque(tensioner, psi, rate, w.hub_force[t, 0], w.hub_force[t, 1])
    free_rate = rate + dt * torque / tensioner.arm_inertia
    # asymmetric Coulomb torque: its level depends on the direction of motion; moving
    # against the spring is moving away from the belt
    away = free_rate * tensioner.spring_sense < 0.0
    level = tensioner.friction_away if away else tensioner.friction_toward
    _, s.arm[1] = implicit_friction(p.arm_friction[0], level, 1.0, free_rate, 0.0, w.arm_work, w.arm_work,
                                    tensioner.arm_inertia, dt, rate)
    s.arm[0] = psi + dt * s.arm[1]
