"""Belt elements: massless, geometrically nonlinear planar beam (frame) elements.

[Scania thesis] section 3.9 (eqs. 3.26-3.34) gives the linear frame element: axial ``EA/L`` and
bending ``EI/L [[4, 2], [2, 4]]`` stiffness with Kelvin-Voigt damping proportional to it
(eq. 3.34), [Kubas and Harlecki 2021] eqs. 30-36 the same for a discrete belt. Here the element is written in
co-rotational form (Crisfield, *Non-linear Finite Element Analysis of Solids and Structures*,
vol. 1, ch. 7), so rigid rotations of any size are exact and only the small deformation
relative to the element chord is linear:

    l     = |x_b - x_a|,       beta = atan2(x_b - x_a)          (chord length and angle; chord_angle)
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


# atan(x) for 0 <= x <= 0.66 as x + x z P(z)/Q(z), z = x^2, with S. L. Moshier's coefficients
# (Cephes Math Library, atan.c; [Moshier 1989] ch. 6): relative error below 2e-16.
ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
          -1.228866684490136173410e2, -6.485021904942025371773e1)
ATAN_Q = (2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
          4.853903996359136964868e2, 1.945506571482613964425e2)
#: pi/4, pi/2, pi rounded to double, and the part of pi/4 they lose ([Moshier 1989] MOREBITS/2)
PI_4 = 0.25 * np.pi
PI_2 = 0.5 * np.pi
PI_4_LOW = 3.061616997868382943065e-17


@njit(cache=True, inline="always")
def chord_angle(ex, ey):
    """atan2(ey, ex) [rad] in [-pi, pi] of a non-zero vector, in arithmetic and selects only.

    libm's atan2 is a call the compiler cannot vectorize, and it bounded the element loop.
    Reduction to the first octant, ``x = min(|ex|, |ey|) / max(|ex|, |ey|)`` in [0, 1],
    then above 0.66 ``atan x = pi/4 + atan((x - 1)/(x + 1))``, then Moshier's rational
    approximation (:data:`ATAN_P`), then the octant back by ``pi/2 - a``, ``pi - a``, ``-a``:
    within 2 ulp of ``np.arctan2``'s result (1 ulp the largest seen in 2e6 random directions;
    fmu_tests/test_beam.py checks every octant). (-1, -0) gives +pi, the same direction.
    """
    ax = abs(ex)
    ay = abs(ey)
    steep = ay > ax
    big = ay if steep else ax
    small = ax if steep else ay
    x = small / big
    upper = x > 0.66
    t = (x - 1.0) / (x + 1.0) if upper else x
    z = t * t
    num = (((ATAN_P[0] * z + ATAN_P[1]) * z + ATAN_P[2]) * z + ATAN_P[3]) * z + ATAN_P[4]
    den = ((((z + ATAN_Q[0]) * z + ATAN_Q[1]) * z + ATAN_Q[2]) * z + ATAN_Q[3]) * z + ATAN_Q[4]
    a = t + t * (z * num / den)
    a = (PI_4 + (a + PI_4_LOW)) if upper else a
    a = (PI_2 - a + 2.0 * PI_4_LOW) if steep else a
    a = (np.pi - a + 4.0 * PI_4_LOW) if ex < 0.0 else a
    return -a if ey < 0.0 else a


# Unsigned index arithmetic for the element and node loops: numba adds the array's length to
# a negative signed index, and that select in every address keeps LLVM from vectorizing them.
# Loop bounds are masked to 32 bits (INDEX_MASK: a belt has far fewer nodes), which tells the
# compiler that 8 i + 7 cannot wrap, else it gives up on the runtime checks that would need.
U0, U1, U2, U3, U4, U5, U6, U8 = (np.uint64(k) for k in (0, 1, 2, 3, 4, 5, 6, 8))
INDEX_MASK = np.uint64(0xFFFFFFFF)


@njit(cache=True, inline="always")
def element_loads(constants, q, u, a, b):
    """Loads of the co-rotational beam element joining nodes ``a`` and ``b`` (np.uint64),
    the equations of the module docstring.

    ``constants`` are the BELT record's l0, EA, c_a, EI, c_b (:func:`element_constants`: read
    once, not from the record after each store of the loop), ``q``, ``u`` the node
    positions/angles and velocities, flat: node i's x, y, phi at 3 i, 3 i + 1, 3 i + 2. Returns (N, e_x, e_y,
    F_x, F_y, M_a, M_b): the axial force N [N] (tension positive), the chord direction e,
    the force (F_x, F_y) = N e - V n on node a (node b gets its opposite) [N] and the
    moments the element takes from its nodes [N m] (node a gets -M_a, node b -M_b). Pure
    arithmetic on its arguments, so that a loop over the elements vectorizes.
    """
    rest_length, axial_stiffness, axial_damping, bending_stiffness, bending_damping = constants
    dx = q[U3 * b] - q[U3 * a]
    dy = q[U3 * b + U1] - q[U3 * a + U1]
    length = np.sqrt(dx * dx + dy * dy)
    inv_length = 1.0 / length
    ex = dx * inv_length
    ey = dy * inv_length
    dvx = u[U3 * b] - u[U3 * a]
    dvy = u[U3 * b + U1] - u[U3 * a + U1]
    length_rate = ex * dvx + ey * dvy
    chord_rate = (ex * dvy - ey * dvx) * inv_length  # d(beta)/dt
    beta = chord_angle(ex, ey)
    ta = wrap_angle(q[U3 * a + U2] - beta)
    tb = wrap_angle(q[U3 * b + U2] - beta)
    ta_rate = u[U3 * a + U2] - chord_rate
    tb_rate = u[U3 * b + U2] - chord_rate

    axial = (axial_stiffness * (length - rest_length) + axial_damping * length_rate) / rest_length
    k = bending_stiffness / rest_length
    c = bending_damping / rest_length
    ma = k * (4.0 * ta + 2.0 * tb) + c * (4.0 * ta_rate + 2.0 * tb_rate)
    mb = k * (2.0 * ta + 4.0 * tb) + c * (2.0 * ta_rate + 4.0 * tb_rate)
    shear = (ma + mb) * inv_length
    # n = (-ey, ex)
    return axial, ex, ey, axial * ex + shear * ey, axial * ey - shear * ex, ma, mb


@njit(cache=True)
def beam_element(belt, q, u, a, b, out):
    """:func:`element_loads` of nodes ``a``, ``b`` of the (n, 3) arrays ``q``, ``u`` as nodal
    loads: writes ``out[0:3]`` = (Fx, Fy, M) on node a and ``out[3:6]`` on node b [N, N m];
    returns the axial force N [N] (tension positive)."""
    axial, _, _, fx, fy, ma, mb = element_loads(element_constants(belt), np.ascontiguousarray(q).reshape(-1),
                                                np.ascontiguousarray(u).reshape(-1), np.uint64(a), np.uint64(b))
    out[0] = fx
    out[1] = fy
    out[2] = -ma
    out[3] = -fx
    out[4] = -fy
    out[5] = -mb
    return axial


@njit(cache=True, inline="always")
def element_constants(belt):
    """The BELT record's fields :func:`element_loads` takes: l0, EA, c_a, EI, c_b."""
    return belt.rest_length, belt.axial_stiffness, belt.axial_damping, belt.bending_stiffness, belt.bending_damping


@njit(cache=True, inline="always")
def _store_element(constants, q, u, load, a, b):
    axial, ex, ey, fx, fy, ma, mb = element_loads(constants, q, u, a, b)
    row = U8 * a
    load[row] = axial
    load[row + U1] = ex
    load[row + U2] = ey
    load[row + U3] = fx
    load[row + U4] = fy
    load[row + U5] = ma
    load[row + U6] = mb


@njit(cache=True, inline="always")
def _node_load(load, axial_force, direction, node_force, i, h):
    """Node i's load from its elements h = i - 1 and i; element i's axial force and direction."""
    row = U8 * i
    previous = U8 * h
    axial_force[i] = load[row]
    direction[U2 * i] = load[row + U1]
    direction[U2 * i + U1] = load[row + U2]
    node_force[U3 * i] = load[row + U3] - load[previous + U3]
    node_force[U3 * i + U1] = load[row + U4] - load[previous + U4]
    node_force[U3 * i + U2] = -load[row + U5] - load[previous + U6]


@njit(cache=True, error_model="numpy")
def closed_belt_forces(belt, s, w):
    """Element loads of the closed belt loop: element i joins node i to node i+1 (mod n).

    Reads the state views ``s`` (q, u); overwrites in the work views ``w`` each element's
    axial force ``axial_force`` (n,), chord direction ``element_direction`` (n, 2) and loads
    ``element_load`` (n, 8), and the node loads ``node_force`` (n, 3).

    Written for the compiler's vectorizer: two loops, the elements, then each node's sum of
    its two elements, each without a wrap-around index inside (the closing element and node
    are done apart), on flat views of the arrays with unsigned indices (:data:`U1`); and
    the numpy error model (a zero-length element gives non-finite loads, which the
    integrator's health check reports) instead of a ZeroDivisionError check in every
    division.
    """
    q, u = s.q.reshape(-1), s.u.reshape(-1)
    axial_force, direction = w.axial_force, w.element_direction.reshape(-1)
    load, node_force = w.element_load.reshape(-1), w.node_force.reshape(-1)
    last = np.uint64(axial_force.shape[0] - 1) & INDEX_MASK
    constants = element_constants(belt)
    for i in range(U0, last):
        _store_element(constants, q, u, load, i, i + U1)
    _store_element(constants, q, u, load, last, U0)
    _node_load(load, axial_force, direction, node_force, U0, last)
    for i in range(U1, last + U1):
        _node_load(load, axial_force, direction, node_force, i, i - U1)


@njit(cache=True, inline="always")
def _damp_node(damping, u, direction, node_force, i, h):
    tx = direction[U2 * h] + direction[U2 * i]
    ty = direction[U2 * h + U1] + direction[U2 * i + U1]
    norm2 = tx * tx + ty * ty
    scale = damping * (u[U3 * i + U1] * tx - u[U3 * i] * ty) / norm2 if norm2 > 0.0 else 0.0  # c (u . n) / |t|
    node_force[U3 * i] += scale * ty
    node_force[U3 * i + U1] -= scale * tx


@njit(cache=True, error_model="numpy")
def transverse_damping(belt, s, w):
    """Viscous force ``-c (u . n) n`` on each node, ``n`` the normal of the belt's local
    direction ``t`` (the sum of the chords meeting at the node), ``c`` per node [N s/m];
    added to ``w.node_force``. With ``n = (-t_y, t_x) / |t|`` the force is
    ``-c (u_y t_x - u_x t_y) (-t_y, t_x) / |t|^2``, without a square root. (Written for the
    vectorizer as :func:`closed_belt_forces` is.)

    On a moving belt ``u . n`` is the Eulerian transverse rate dw/dt of the span, so the
    belt's running along its path is not damped; the Kelvin-Voigt bending damping of the
    elements ([Scania thesis] eq. 3.34) hardly damps the string-like span modes, this does.
    """
    u, direction, node_force = s.u.reshape(-1), w.element_direction.reshape(-1), w.node_force.reshape(-1)
    damping = belt.transverse_damping
    last = np.uint64(s.u.shape[0] - 1) & INDEX_MASK
    _damp_node(damping, u, direction, node_force, U0, last)
    for i in range(U1, last + U1):
        _damp_node(damping, u, direction, node_force, i, i - U1)


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
