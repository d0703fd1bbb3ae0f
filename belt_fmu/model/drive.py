"""Pulleys, tensioner arm and loads: the drive's rigid parts (seed 000 sections 4.2-4.5).

Kernels the integrator and the outputs share: where the pulley centres are (the tensioner
pulley rides on its arm), which loads act on a pulley, and the torque on the tensioner arm.
"""
import numpy as np
from numba import njit


@njit(cache=True)
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


@njit(cache=True)
def pulley_loads(drive, pulley, index, omega, water_pump_torque, table):
    """External load on a pulley: (resisting torque >= 0 [N m], driving torque [N m]).

    Load torques are given positive against the pulley's rotation (the water-pump input, the
    accessory tables at the current running speed); they resist motion whichever way it
    goes and cannot drive the pulley backwards. A negative value is a torque driving the
    pulley in its running direction.
    """
    resisting = 0.0
    driving = 0.0
    if index == drive.water_pump:
        if water_pump_torque >= 0.0:
            resisting += water_pump_torque
        else:
            driving -= water_pump_torque
    if pulley.table_stop > pulley.table_start:
        torque = table_torque(table, pulley.table_start, pulley.table_stop, abs(omega))
        if torque >= 0.0:
            resisting += torque
        else:
            driving -= torque
    return resisting, driving


@njit(cache=True)
def update_pulley_centers(drive, pulleys, arm, centers, center_velocity):
    """Pulley centres; the tensioner pulley rides on the arm at polar angle ``arm[0]``."""
    for j in range(pulleys.shape[0]):
        centers[j, 0] = pulleys[j].x
        centers[j, 1] = pulleys[j].y
        center_velocity[j, 0] = 0.0
        center_velocity[j, 1] = 0.0
    t = drive.tensioner
    if t >= 0:
        c = np.cos(arm[0])
        s = np.sin(arm[0])
        centers[t, 0] = drive.pivot_x + drive.arm_length * c
        centers[t, 1] = drive.pivot_y + drive.arm_length * s
        center_velocity[t, 0] = -drive.arm_length * s * arm[1]
        center_velocity[t, 1] = drive.arm_length * c * arm[1]


@njit(cache=True)
def arm_torque(drive, psi, psi_rate, hub_x, hub_y):
    """Torque on the tensioner arm [N m, CCW], Coulomb friction excluded (seed 000 4.3).

    Belt load (hub force moment about the pivot, eq. 12.23), spring (preload at the
    installed angle plus rate times deflection), viscous damper, end stops.
    """
    rx = drive.arm_length * np.cos(psi)
    ry = drive.arm_length * np.sin(psi)
    torque = rx * hub_y - ry * hub_x
    torque += drive.spring_sense * drive.spring_preload - drive.spring_rate * (psi - drive.arm_installed)
    torque -= drive.arm_damping * psi_rate
    if psi > drive.stop_max:
        torque -= drive.stop_stiffness * (psi - drive.stop_max) + drive.stop_damping * psi_rate
    elif psi < drive.stop_min:
        torque -= drive.stop_stiffness * (psi - drive.stop_min) + drive.stop_damping * psi_rate
    return torque
