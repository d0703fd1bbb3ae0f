"""Time integration of the belt drive: one compiled kernel, ``advance``.

Scheme: symplectic (semi-implicit) Euler, the explicit scheme of choice for discretized
rods (PyElastica uses its relatives): velocities first from the forces at the current
positions, positions from the new velocities. Its stable step is set by the stiffest
elastic mode (the belt's axial mode between two nodes), see
:func:`belt_fmu.model.system.stable_time_step`.

Friction is the exception. A regularized friction law is a very stiff damper near zero
slip (a tanh law with a 1 cm/s threshold on a node pressed with 100 N is 5e4 N s/m, which
would need a step of ~1e-8 s explicitly), and explicit Coulomb friction chatters. So each
contact's friction is integrated *implicitly*: after the explicit forces, the contact's
slip ``s*`` without friction is known, and the end-of-step slip solves

    m_eff (s - s*) = dt F(s),      1 / m_eff = 1 / m + r^2 / I

(:func:`belt_fmu.model.friction.implicit_friction`), ``m_eff`` being the node mass in series
with the pulley's inertia at the contact radius ``r``. The impulse ``dt F`` is applied to
the node and, with opposite sign, to the pulley at once, so the next contact of the same
pulley sees its updated speed (a Gauss-Seidel sweep); momentum exchanged between belt and
pulley balances exactly. The crankshaft's speed is an input (``1/I = 0``).

The tensioner arm's Coulomb friction (a tanh law) is solved the same way, for one degree of
freedom.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .belt import closed_belt_forces, transverse_damping
from .contact import build_candidates, normal_force
from .drive import arm_torque, pulley_loads, update_pulley_centers
from .friction import implicit_friction
from .outputs import evaluate_outputs
from .state import friction_slots, unpack_arrays, unpack_state

OK = 0
NOT_FINITE = 1
OVERSTRETCHED = 2
#: element strain beyond which the run is declared diverged (a real belt breaks far earlier)
STRAIN_LIMIT = 0.25


@njit(cache=True)
def implicit_axial_correction(s, a, dt):
    """Make the belt's axial stiffness and damping implicit (backward Euler).

    After the explicit predictor ``u*`` (which used the axial forces ``N^n`` of the step's
    start), the axial force of element e is raised by ``dN_e = k dt w_e + c (w_e - w_e^n)``,
    ``w_e`` its end-of-step stretching rate along its (frozen) chord direction ``e_e``,
    ``k = EA/l0``, ``c = c_a/l0``. With ``m dv_i = dt (dN_i e_i - dN_{i-1} e_{i-1})`` this is
    the symmetric cyclic tridiagonal system

        (1 + 2 b) dN_e - b (e_e . e_{e+1}) dN_{e+1} - b (e_e . e_{e-1}) dN_{e-1} = alpha w*_e - c w^n_e

    with ``alpha = k dt + c``, ``b = alpha dt / m``: strictly diagonally dominant, solved in
    O(n) (Thomas algorithm with a Sherman-Morrison correction for the closed loop). The
    step is then no longer limited by the axial wave speed (dt < l0 / sqrt(EA/m')).
    """
    drive = a.drive[0]
    n = s.q.shape[0]
    m = drive.node_mass
    k = drive.axial_stiffness / drive.rest_length
    c = drive.axial_damping / drive.rest_length
    alpha = k * dt + c
    beta = alpha * dt / m
    diag = 1.0 + 2.0 * beta
    e = a.element_direction
    w = a.axial_work  # columns: 0 cos to next, 1 rhs, 2 c', 3 y, 4 z, 5 1/pivot
    for i in range(n):
        j = i + 1 if i + 1 < n else 0
        w[i, 0] = e[i, 0] * e[j, 0] + e[i, 1] * e[j, 1]
        rate_star = e[i, 0] * (s.u[j, 0] - s.u[i, 0]) + e[i, 1] * (s.u[j, 1] - s.u[i, 1])
        # the start-of-step rate: remove the predictor's explicit increment
        rate_start = rate_star - dt / m * (e[i, 0] * (a.node_force[j, 0] - a.node_force[i, 0])
                                           + e[i, 1] * (a.node_force[j, 1] - a.node_force[i, 1]))
        w[i, 1] = alpha * rate_star - c * rate_start
    # A[e, e+1] = A[e+1, e] = -beta cos_e; corner A[0, n-1] = A[n-1, 0] = -beta cos_{n-1}
    corner = -beta * w[n - 1, 0]
    gamma = -diag
    # Thomas forward sweep on T = A with b_0 -= gamma, b_{n-1} -= corner^2 / gamma, two right sides:
    # y for the rhs, z for u = (gamma, 0, ..., 0, corner)
    b0 = diag - gamma
    w[0, 5] = 1.0 / b0
    w[0, 2] = -beta * w[0, 0] * w[0, 5]
    w[0, 3] = w[0, 1] * w[0, 5]
    w[0, 4] = gamma * w[0, 5]
    for i in range(1, n):
        sub = -beta * w[i - 1, 0]
        bi = diag if i < n - 1 else diag - corner * corner / gamma
        pivot = bi - sub * w[i - 1, 2]
        w[i, 5] = 1.0 / pivot
        w[i, 2] = -beta * w[i, 0] * w[i, 5] if i < n - 1 else 0.0
        zi = corner if i == n - 1 else 0.0
        w[i, 3] = (w[i, 1] - sub * w[i - 1, 3]) * w[i, 5]
        w[i, 4] = (zi - sub * w[i - 1, 4]) * w[i, 5]
    for i in range(n - 2, -1, -1):
        w[i, 3] -= w[i, 2] * w[i + 1, 3]
        w[i, 4] -= w[i, 2] * w[i + 1, 4]
    ratio = corner / gamma
    factor = (w[0, 3] + ratio * w[n - 1, 3]) / (1.0 + w[0, 4] + ratio * w[n - 1, 4])
    # dN_e = y_e - factor z_e, applied to both end nodes of each element
    scale = dt / m
    for i in range(n):
        j = i + 1 if i + 1 < n else 0
        dn = w[i, 3] - factor * w[i, 4]
        s.u[i, 0] += scale * dn * e[i, 0]
        s.u[i, 1] += scale * dn * e[i, 1]
        s.u[j, 0] -= scale * dn * e[i, 0]
        s.u[j, 1] -= scale * dn * e[i, 1]


@njit(cache=True)
def step(s, a, dt, crank_omega, water_pump_torque):
    """One time step of length ``dt`` [s]; ``crank_omega`` [rad/s] is CCW (global).

    Requires valid neighbour lists (:func:`belt_fmu.model.contact.build_candidates`).
    """
    drive = a.drive[0]
    pulleys = a.pulleys
    n = s.q.shape[0]
    n_pulleys = pulleys.shape[0]
    m = drive.node_mass
    update_pulley_centers(drive, pulleys, s.arm, a.centers, a.center_velocity)
    s.omega[drive.crank] = crank_omega

    closed_belt_forces(s.q, s.u, drive.rest_length, drive.axial_stiffness, drive.axial_damping,
                       drive.bending_stiffness, drive.bending_damping, a.node_force, a.axial_force,
                       a.element_direction, a.element_work)
    transverse_damping(s.u, a.element_direction, drive.transverse_damping, a.node_force)

    # Normal contact (explicit) of the listed nodes; the contacts found form this step's list.
    a.hub_force[:, :] = 0.0
    a.belt_torque[:] = 0.0
    n_contacts = 0
    for j in range(n_pulleys):
        rho = pulleys[j].radius
        cx = a.centers[j, 0]
        cy = a.centers[j, 1]
        for k in range(a.candidate_count[j]):
            i = a.candidates[j, k]
            rx = s.q[i, 0] - cx
            ry = s.q[i, 1] - cy
            dist2 = rx * rx + ry * ry
            force = 0.0
            if dist2 < rho * rho:
                dist = np.sqrt(dist2)
                nx = rx / dist
                ny = ry / dist
                rvx = s.u[i, 0] - a.center_velocity[j, 0]
                rvy = s.u[i, 1] - a.center_velocity[j, 1]
                force = normal_force(rho - dist, -(rvx * nx + rvy * ny), drive.contact_c1, drive.contact_c2,
                                     drive.contact_damping)
            a.normal_force[i, j] = force
            if force == 0.0:
                s.friction[i, j, :] = 0.0
                a.slip[i, j] = 0.0
                a.friction_force[i, j] = 0.0
                continue
            a.node_force[i, 0] += force * nx
            a.node_force[i, 1] += force * ny
            a.hub_force[j, 0] -= force * nx
            a.hub_force[j, 1] -= force * ny
            a.contact_node[n_contacts] = i
            a.contact_pulley[n_contacts] = j
            a.contact_frame[n_contacts, 0] = nx
            a.contact_frame[n_contacts, 1] = ny
            a.contact_frame[n_contacts, 2] = dist
            n_contacts += 1
    a.contact_count[0] = n_contacts

    # Explicit velocity predictor of nodes and free pulleys.
    inv_m = 1.0 / m
    inv_j = 1.0 / drive.node_inertia
    for i in range(n):
        s.u[i, 0] += dt * a.node_force[i, 0] * inv_m
        s.u[i, 1] += dt * a.node_force[i, 1] * inv_m
        s.u[i, 2] += dt * a.node_force[i, 2] * inv_j
    for j in range(n_pulleys):
        if j != drive.crank:
            inertia = pulleys[j].inertia
            resisting, driving = pulley_loads(drive, pulleys[j], j, s.omega[j], water_pump_torque, a.table)
            free = s.omega[j] + dt * (pulleys[j].sense * driving - pulleys[j].bearing_damping * s.omega[j]) / inertia
            # a resisting load is a Coulomb-like torque against the motion: implicit, like friction
            s.omega[j] = free if resisting == 0.0 else implicit_friction(a.load_law[0], resisting, 1.0, free, 0.0,
                                                                         a.arm_work, a.arm_work, inertia, dt,
                                                                         s.omega[j])[1]
    implicit_axial_correction(s, a, dt)

    # Implicit friction, contact by contact, each impulse shared with the pulley (docstring).
    for k in range(n_contacts):
        i = a.contact_node[k]
        j = a.contact_pulley[k]
        tx = -a.contact_frame[k, 1]
        ty = a.contact_frame[k, 0]
        r = a.contact_frame[k, 2]
        inv_inertia = 0.0 if j == drive.crank else 1.0 / pulleys[j].inertia
        vt = s.u[i, 0] * tx + s.u[i, 1] * ty
        free_slip = vt - (a.center_velocity[j, 0] * tx + a.center_velocity[j, 1] * ty) - s.omega[j] * r
        mass = 1.0 / (inv_m + r * r * inv_inertia)
        f, a.slip[i, j] = implicit_friction(a.contact_law[0], pulleys[j].mu, a.normal_force[i, j], free_slip, vt,
                                            s.friction[i, j], a.friction_work, mass, dt, a.slip[i, j])
        a.friction_force[i, j] = f
        s.u[i, 0] += dt * f * tx * inv_m
        s.u[i, 1] += dt * f * ty * inv_m
        s.omega[j] -= dt * r * f * inv_inertia
        a.hub_force[j, 0] -= f * tx
        a.hub_force[j, 1] -= f * ty
        a.belt_torque[j] -= r * f

    # Tensioner arm: the belt pushes through the tensioner pulley's hub.
    t = drive.tensioner
    if t >= 0:
        psi = s.arm[0]
        rate = s.arm[1]
        free_rate = rate + dt * arm_torque(drive, psi, rate, a.hub_force[t, 0], a.hub_force[t, 1]) / drive.arm_inertia
        # asymmetric Coulomb torque: its level depends on the direction of motion; moving
        # against the spring is moving away from the belt
        away = free_rate * drive.spring_sense < 0.0
        level = drive.arm_friction_away if away else drive.arm_friction_toward
        _, s.arm[1] = implicit_friction(a.arm_law[0], level, 1.0, free_rate, 0.0, a.arm_work, a.arm_work,
                                        drive.arm_inertia, dt, rate)
        s.arm[0] = psi + dt * s.arm[1]

    for i in range(n):
        s.q[i, 0] += dt * s.u[i, 0]
        s.q[i, 1] += dt * s.u[i, 1]
        s.q[i, 2] += dt * s.u[i, 2]
    for j in range(n_pulleys):
        s.theta[j] += dt * s.omega[j]


@njit(cache=True)
def health(s, a):
    """OK, NOT_FINITE or OVERSTRETCHED for the current state."""
    limit = a.drive[0].axial_stiffness * STRAIN_LIMIT
    for i in range(s.q.shape[0]):
        if not (np.isfinite(s.q[i, 0]) and np.isfinite(s.q[i, 1]) and np.isfinite(s.u[i, 0])
                and np.isfinite(s.u[i, 1])):
            return NOT_FINITE
        if abs(a.axial_force[i]) > limit:
            return OVERSTRETCHED
    for j in range(s.omega.shape[0]):
        if not np.isfinite(s.omega[j]):
            return NOT_FINITE
    if not (np.isfinite(s.arm[0]) and np.isfinite(s.arm[1])):
        return NOT_FINITE
    return OK


@njit(cache=True)
def neighbour_margin(drive, pulleys):
    """Distance [m] beyond a cord circle within which nodes are listed as contact candidates."""
    return 0.5 * drive.rest_length


@njit(cache=True)
def _refresh_candidates(s, a, margin):
    update_pulley_centers(a.drive[0], a.pulleys, s.arm, a.centers, a.center_velocity)
    radii = np.empty(a.pulleys.shape[0])
    for j in range(radii.shape[0]):
        radii[j] = a.pulleys[j].radius
    build_candidates(s.q, a.centers, radii, margin,
                     a.candidates, a.candidate_count, (a.normal_force, a.friction_force, a.slip), s.friction)
    # steps until a node moving at the fastest node speed (or the tensioner pulley at its
    # speed) could have closed half the margin
    vmax = 0.0
    for i in range(s.u.shape[0]):
        v = s.u[i, 0] * s.u[i, 0] + s.u[i, 1] * s.u[i, 1]
        if v > vmax:
            vmax = v
    vmax = np.sqrt(vmax)
    if a.drive[0].tensioner >= 0:
        vmax += abs(s.arm[1]) * a.drive[0].arm_length
    return vmax


@njit(cache=True)
def advance(s, a, n_steps, dt, crank_omega, water_pump_torque):
    """Take ``n_steps`` steps of ``dt`` with constant inputs.

    Returns (status, steps taken): the run stops at the first check that finds a
    non-finite value or an overstretched element (checked every 64 steps and at the end).
    Neighbour lists are rebuilt whenever a node could have moved half their margin
    (``a.rebuild_countdown``; set it to 0 after changing the state from outside).
    """
    margin = neighbour_margin(a.drive[0], a.pulleys)
    for k in range(n_steps):
        if a.rebuild_countdown[0] <= 0:
            vmax = _refresh_candidates(s, a, margin)
            # a node accelerating hard may outrun vmax: allow it to double
            a.rebuild_countdown[0] = max(1, min(1000, int(0.5 * margin / (2.0 * vmax * dt + 1e-300))))
        step(s, a, dt, crank_omega, water_pump_torque)
        a.rebuild_countdown[0] -= 1
        if (k & 63) == 63 or k == n_steps - 1:
            status = health(s, a)
            if status != OK:
                return status, k + 1
    return OK, n_steps


@njit(cache=True)
def advance_and_report(s, a, n_steps, dt, crank_omega, water_pump_torque, outputs):
    """:func:`advance`, then the outputs of the reached state into ``outputs``: one call
    from Python per communication step (each call from Python costs microseconds)."""
    status, taken = advance(s, a, n_steps, dt, crank_omega, water_pump_torque)
    evaluate_outputs(s, a, outputs)
    return status, taken


@njit(cache=True)
def run(y, work, index_work, drive, contact_law, arm_law, load_law, pulleys, table, n_steps, dt, crank_omega,
        water_pump_torque, outputs):
    """Entry from Python: :func:`advance_and_report` on the flat buffers of a drive."""
    s = unpack_state(y, drive[0].n_nodes, pulleys.shape[0], friction_slots(contact_law))
    a = unpack_arrays(drive, contact_law, arm_law, load_law, pulleys, table, work, index_work)
    return advance_and_report(s, a, n_steps, dt, crank_omega, water_pump_torque, outputs)


@njit(cache=True)
def report(y, work, index_work, drive, contact_law, arm_law, load_law, pulleys, table, outputs):
    """Entry from Python: the outputs of the current state into ``outputs``."""
    s = unpack_state(y, drive[0].n_nodes, pulleys.shape[0], friction_slots(contact_law))
    a = unpack_arrays(drive, contact_law, arm_law, load_law, pulleys, table, work, index_work)
    evaluate_outputs(s, a, outputs)
