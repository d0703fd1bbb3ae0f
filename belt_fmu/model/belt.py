"""Belt elements: massless, geometrically nonlinear planar beam (frame) elements.

[Scania thesis] section 3.9 (eqs. 3.26-3.34) gives the linear frame element: axial ``EA/L`` and
bending ``EI/L [[4, 2], [2, 4]]`` stiffness with Kelvin-Voigt damping proportional to it
(eq. 3.34), [Kubas and Harlecki 2021] eqs. 30-36 the same for a discrete belt. Here the element is written in
co-rotational form (Crisfield, *Non-linear Finite Element Analysis of Solids and Structures*,
vol. 1, ch. 7), so rigid rotations of any size are exact and only the small deformation
relative to the element chord is linear:

    l     = |x_b - x_a|,       beta = atan2(x_b - x_a)          (chord length and angle)
    N     = EA (l - l0)/l0 + c_a  (dl/dt)/l0                     (axial force, tension > 0)
    t_a   = phi_a - beta,      t_b = phi_b - beta                (nodal rotations vs. chord)
    M_a   = EI/l0 (4 t_a + 2 t_b) + c_b/l0 (4 dt_a/dt + 2 dt_b/dt)
    M_b   = EI/l0 (2 t_a + 4 t_b) + c_b/l0 (2 dt_a/dt + 4 dt_b/dt)
    V     = (M_a + M_b) / l                                      (shear)

The loads on the nodes follow from virtual work with ``e`` the chord direction and ``n`` its
normal (``e`` turned +90 deg): node a gets ``N e - V n`` and moment ``-M_a``; node b gets
``-N e + V n`` and ``-M_b``. A linear (not co-rotational) element fails the large-deflection
cantilever of docs/references.md R1.
"""
from __future__ import annotations

import numpy as np
from numba import njit

TWO_PI = 2.0 * np.pi

#: The belt as the kernels see it: n nodes joined in a closed loop by n elements (element i
#: joins node i to i+1), each node carrying one element's worth of the belt's mass.
BELT = np.dtype(
    [
        ("n_nodes", "i8"),  # nodes = elements of the loop
        ("rest_length", "f8"),  # unstretched element length l0 [m]
        ("node_mass", "f8"),  # m' l0 [kg]
        ("node_inertia", "f8"),  # m' l0 (l0^2 + h^2) / 12 [kg m^2], h the belt thickness
        ("axial_stiffness", "f8"),  # EA [N]
        ("axial_damping", "f8"),  # c_a [N s]: axial force += c_a x strain rate
        ("bending_stiffness", "f8"),  # EI [N m^2]
        ("bending_damping", "f8"),  # c_b [N m^2 s]: moment += c_b x curvature rate
        ("transverse_damping", "f8"),  # per node: the per-length value x l0 [N s/m]
        ("gravity_x", "f8"),  # acceleration of gravity on the belt [m/s^2] (0 by default)
        ("gravity_y", "f8"),
    ]
)


@njit(cache=True, inline="always")
def wrap_angle(a):
    """``a`` mapped into [-pi, pi)."""
    return a - TWO_PI * np.floor((a + np.pi) / TWO_PI)


@njit(cache=True, inline="always")
def beam_element(belt, q, u, a, b, out):
    """Loads of the co-rotational beam element joining nodes ``a`` and ``b``.

    ``belt`` is the BELT record (l0, EA, c_a, EI, c_b), ``q``, ``u`` the (n, 3) node
    positions/angles and velocities. Writes ``out[0:3]`` = (Fx, Fy, M) on node a and
    ``out[3:6]`` on node b [N, N m]; returns the axial force N [N] (tension positive).
    """
    rest_length = belt.rest_length
    dx = q[b, 0] - q[a, 0]
    dy = q[b, 1] - q[a, 1]
    length = np.sqrt(dx * dx + dy * dy)
    ex = dx / length
    ey = dy / length
    dvx = u[b, 0] - u[a, 0]
    dvy = u[b, 1] - u[a, 1]
    length_rate = ex * dvx + ey * dvy
    chord_rate = (ex * dvy - ey * dvx) / length  # d(beta)/dt
    beta = np.arctan2(dy, dx)
    ta = wrap_angle(q[a, 2] - beta)
    tb = wrap_angle(q[b, 2] - beta)
    ta_rate = u[a, 2] - chord_rate
    tb_rate = u[b, 2] - chord_rate

    axial = (belt.axial_stiffness * (length - rest_length) / rest_length
             + belt.axial_damping * length_rate / rest_length)
    k = belt.bending_stiffness / rest_length
    c = belt.bending_damping / rest_length
    ma = k * (4.0 * ta + 2.0 * tb) + c * (4.0 * ta_rate + 2.0 * tb_rate)
    mb = k * (2.0 * ta + 4.0 * tb) + c * (2.0 * ta_rate + 4.0 * tb_rate)
    shear = (ma + mb) / length
    # n = (-ey, ex)
    fx = axial * ex + shear * ey
    fy = axial * ey - shear * ex
    out[0] = fx
    out[1] = fy
    out[2] = -ma
    out[3] = -fx
    out[4] = -fy
    out[5] = -mb
    return axial


@njit(cache=True, inline="always")
def closed_belt_forces(belt, s, w):
    """Element loads of the closed belt loop: element i joins node i to node i+1 (mod n).

    Reads the state views ``s`` (q, u); overwrites in the work views ``w`` the node loads
    ``node_force`` (n, 3), each element's axial force ``axial_force`` (n,) and chord
    direction ``element_direction`` (n, 2); ``element_work`` is scratch.
    """
    q = s.q
    n = q.shape[0]
    node_force = w.node_force
    direction = w.element_direction
    out = w.element_work
    node_force[:, :] = 0.0
    for i in range(n):
        j = i + 1 if i + 1 < n else 0
        w.axial_force[i] = beam_element(belt, q, s.u, i, j, out)
        dx = q[j, 0] - q[i, 0]
        dy = q[j, 1] - q[i, 1]
        length = np.sqrt(dx * dx + dy * dy)
        direction[i, 0] = dx / length
        direction[i, 1] = dy / length
        node_force[i, 0] += out[0]
        node_force[i, 1] += out[1]
        node_force[i, 2] += out[2]
        node_force[j, 0] += out[3]
        node_force[j, 1] += out[4]
        node_force[j, 2] += out[5]


@njit(cache=True, inline="always")
def transverse_damping(belt, s, w):
    """Viscous force ``-c (u . n) n`` on each node, ``n`` the normal of the belt's local
    direction (the mean of the chords meeting at the node), ``c`` per node [N s/m]; added
    to ``w.node_force``.

    On a moving belt ``u . n`` is the Eulerian transverse rate dw/dt of the span, so the
    belt's running along its path is not damped; the Kelvin-Voigt bending damping of the
    elements ([Scania thesis] eq. 3.34) hardly damps the string-like span modes, this does.
    """
    u = s.u
    direction = w.element_direction
    damping = belt.transverse_damping
    n = u.shape[0]
    for i in range(n):
        h = i - 1 if i > 0 else n - 1
        tx = direction[h, 0] + direction[i, 0]
        ty = direction[h, 1] + direction[i, 1]
        norm = np.sqrt(tx * tx + ty * ty)
        if norm == 0.0:
            continue
        nx = -ty / norm
        ny = tx / norm
        vn = u[i, 0] * nx + u[i, 1] * ny
        w.node_force[i, 0] -= damping * vn * nx
        w.node_force[i, 1] -= damping * vn * ny


@njit(cache=True, inline="always")
def implicit_axial_correction(belt, s, w, dt):
    """Make the belt's axial stiffness and damping implicit (backward Euler) by correcting the
    node velocities ``s.u``.

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
    n = s.q.shape[0]
    m = belt.node_mass
    k = belt.axial_stiffness / belt.rest_length
    c = belt.axial_damping / belt.rest_length
    alpha = k * dt + c
    beta = alpha * dt / m
    diag = 1.0 + 2.0 * beta
    e = w.element_direction
    node_force = w.node_force
    work = w.axial_work  # columns: 0 cos to next, 1 rhs, 2 c', 3 y, 4 z, 5 1/pivot
    for i in range(n):
        j = i + 1 if i + 1 < n else 0
        work[i, 0] = e[i, 0] * e[j, 0] + e[i, 1] * e[j, 1]
        rate_star = e[i, 0] * (s.u[j, 0] - s.u[i, 0]) + e[i, 1] * (s.u[j, 1] - s.u[i, 1])
        # the start-of-step rate: remove the predictor's explicit increment
        rate_start = rate_star - dt / m * (e[i, 0] * (node_force[j, 0] - node_force[i, 0])
                                           + e[i, 1] * (node_force[j, 1] - node_force[i, 1]))
        work[i, 1] = alpha * rate_star - c * rate_start
    # A[e, e+1] = A[e+1, e] = -beta cos_e; corner A[0, n-1] = A[n-1, 0] = -beta cos_{n-1}
    corner = -beta * work[n - 1, 0]
    gamma = -diag
    # Thomas forward sweep on T = A with b_0 -= gamma, b_{n-1} -= corner^2 / gamma, two right sides:
    # y for the rhs, z for u = (gamma, 0, ..., 0, corner)
    b0 = diag - gamma
    work[0, 5] = 1.0 / b0
    work[0, 2] = -beta * work[0, 0] * work[0, 5]
    work[0, 3] = work[0, 1] * work[0, 5]
    work[0, 4] = gamma * work[0, 5]
    for i in range(1, n):
        sub = -beta * work[i - 1, 0]
        bi = diag if i < n - 1 else diag - corner * corner / gamma
        pivot = bi - sub * work[i - 1, 2]
        work[i, 5] = 1.0 / pivot
        work[i, 2] = -beta * work[i, 0] * work[i, 5] if i < n - 1 else 0.0
        zi = corner if i == n - 1 else 0.0
        work[i, 3] = (work[i, 1] - sub * work[i - 1, 3]) * work[i, 5]
        work[i, 4] = (zi - sub * work[i - 1, 4]) * work[i, 5]
    for i in range(n - 2, -1, -1):
        work[i, 3] -= work[i, 2] * work[i + 1, 3]
        work[i, 4] -= work[i, 2] * work[i + 1, 4]
    ratio = corner / gamma
    factor = (work[0, 3] + ratio * work[n - 1, 3]) / (1.0 + work[0, 4] + ratio * work[n - 1, 4])
    # dN_e = y_e - factor z_e, applied to both end nodes of each element
    scale = dt / m
    for i in range(n):
        j = i + 1 if i + 1 < n else 0
        dn = work[i, 3] - factor * work[i, 4]
        s.u[i, 0] += scale * dn * e[i, 0]
        s.u[i, 1] += scale * dn * e[i, 1]
        s.u[j, 0] -= scale * dn * e[i, 0]
        s.u[j, 1] -= scale * dn * e[i, 1]
