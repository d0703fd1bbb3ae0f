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
INVERSE_TWO_PI = 1.0 / TWO_PI

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
        # 1: bending and shear implicit with the axial forces (implicit_belt_correction), 0: the
        # axial forces alone (implicit_axial_correction), where the explicit bending is stable
        # at the step (belt_fmu.model.stability.bending_is_implicit)
        ("implicit_bending", "i8"),
    ]
)


@njit(cache=True, _nrt=False, inline="always")
def wrap_angle(a):
    """``a`` mapped into [-pi, pi) (an angle within rounding of an odd multiple of pi may come
    out as +pi, the same direction). Multiplied by 1/(2 pi), not divided by 2 pi: two
    divisions fewer per element in :func:`closed_belt_forces`; the same result wherever the
    floor is the same."""
    return a - TWO_PI * np.floor((a + np.pi) * INVERSE_TWO_PI)


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


@njit(cache=True, _nrt=False, inline="always")
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
U0, U1, U2, U3, U4, U5, U6, U7 = (np.uint64(k) for k in (0, 1, 2, 3, 4, 5, 6, 7))
INDEX_MASK = np.uint64(0xFFFFFFFF)


@njit(cache=True, _nrt=False, inline="always")
def element_loads(constants, q, u, a, b):
    """Loads of the co-rotational beam element joining nodes ``a`` and ``b`` (np.uint64),
    the equations of the module docstring.

    ``constants`` are the BELT record's l0, EA, c_a, EI, c_b (:func:`element_constants`: read
    once, not from the record after each store of the loop), ``q``, ``u`` the node
    positions/angles and velocities, flat: node i's x, y, phi at 3 i, 3 i + 1, 3 i + 2. Returns (N, e_x, e_y,
    F_x, F_y, M_a, M_b, 1/l): the axial force N [N] (tension positive), the chord direction e,
    the force (F_x, F_y) = N e - V n on node a (node b gets its opposite) [N], the
    moments the element takes from its nodes [N m] (node a gets -M_a, node b -M_b) and the
    inverse chord length [1/m] (the implicit solve's frame, :func:`implicit_belt_correction`). Pure
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
    return axial, ex, ey, axial * ex + shear * ey, axial * ey - shear * ex, ma, mb, inv_length


@njit(cache=True)  # a test entry (fmu_tests/test_beam.py); its reshaped copies need reference counting
def beam_element(belt, q, u, a, b, out):
    """:func:`element_loads` of nodes ``a``, ``b`` of the (n, 3) arrays ``q``, ``u`` as nodal
    loads: writes ``out[0:3]`` = (Fx, Fy, M) on node a and ``out[3:6]`` on node b [N, N m];
    returns the axial force N [N] (tension positive)."""
    axial, _, _, fx, fy, ma, mb, _ = element_loads(element_constants(belt), np.ascontiguousarray(q).reshape(-1),
                                                   np.ascontiguousarray(u).reshape(-1), np.uint64(a), np.uint64(b))
    out[0] = fx
    out[1] = fy
    out[2] = -ma
    out[3] = -fx
    out[4] = -fy
    out[5] = -mb
    return axial


@njit(cache=True, _nrt=False, inline="always")
def element_constants(belt):
    """The BELT record's fields :func:`element_loads` takes: l0, EA, c_a, EI, c_b."""
    return belt.rest_length, belt.axial_stiffness, belt.axial_damping, belt.bending_stiffness, belt.bending_damping


@njit(cache=True, _nrt=False, inline="always")
def _store_element(constants, q, u, load, n, a, b):
    """Element a's :func:`element_loads` into ``load``, the flat (8, n) ``element_load``: a
    column per quantity, so that the node loop and the implicit solves read contiguous
    entries and the element loop's stores are contiguous too (as rows of 8 they were
    scatters, and the element loop was not vectorized: 150-element step 7.5-7.7 -> 6.9-7.2 us,
    600: 38.9-39.4 -> 36.0-36.6 us)."""
    axial, ex, ey, fx, fy, ma, mb, inv_length = element_loads(constants, q, u, a, b)
    load[a] = axial
    load[n + a] = ex
    load[U2 * n + a] = ey
    load[U3 * n + a] = fx
    load[U4 * n + a] = fy
    load[U5 * n + a] = ma
    load[U6 * n + a] = mb
    load[U7 * n + a] = inv_length


@njit(cache=True, _nrt=False, inline="always")
def _node_load(load, axial_force, direction, node_force, u, damping, n, i, h):
    """Node i's load from its elements h = i - 1 and i, with its transverse damping
    (:func:`transverse_damping_force`); element i's axial force and direction."""
    axial_force[i] = load[i]
    direction[U2 * i] = load[n + i]
    direction[U2 * i + U1] = load[U2 * n + i]
    tx = load[n + h] + load[n + i]
    ty = load[U2 * n + h] + load[U2 * n + i]
    dx, dy = transverse_damping_force(damping, u[U3 * i], u[U3 * i + U1], tx, ty)
    node_force[U3 * i] = load[U3 * n + i] - load[U3 * n + h] + dx
    node_force[U3 * i + U1] = load[U4 * n + i] - load[U4 * n + h] + dy
    node_force[U3 * i + U2] = -load[U5 * n + i] - load[U6 * n + h]


@njit(cache=True, _nrt=False, error_model="numpy", fastmath={"contract"})
def closed_belt_forces(belt, s, w):
    """Element loads of the closed belt loop, element i joining node i to node i+1 (mod n),
    and each node's transverse damping (:func:`transverse_damping_force`).

    Reads the state views ``s`` (q, u); overwrites in the work views ``w`` each element's
    axial force ``axial_force`` (n,), chord direction ``element_direction`` (n, 2) and loads
    ``element_load`` (8, n), and the node loads ``node_force`` (n, 3): the elements' and the
    damping's.

    Written for the compiler's vectorizer: two loops, the elements, then each node's sum of
    its two elements and its damping (one loop, which has both chord directions at hand,
    instead of a pass of its own over the nodes), each without
    a wrap-around index inside (the closing element and node are done apart), on flat views
    of the arrays with unsigned indices (:data:`U1`); and the numpy error model (a
    zero-length element gives non-finite loads, which the integrator's health check reports)
    instead of a ZeroDivisionError check in every division.

    Compiled with fused multiply-adds (numba's fastmath flag "contract" alone: ``a b + c``
    rounded once, nothing reassociated), as the block solve is: faster, and a change of
    rounding only (docs/performance.md, "Why the code is as it is").
    """
    q, u = s.q.reshape(-1), s.u.reshape(-1)
    axial_force, direction = w.axial_force, w.element_direction.reshape(-1)
    load, node_force = w.element_load.reshape(-1), w.node_force.reshape(-1)
    n = np.uint64(axial_force.shape[0]) & INDEX_MASK
    last = n - U1
    constants = element_constants(belt)
    for i in range(U0, last):
        _store_element(constants, q, u, load, n, i, i + U1)
    _store_element(constants, q, u, load, n, last, U0)
    damping = belt.transverse_damping
    _node_load(load, axial_force, direction, node_force, u, damping, n, U0, last)
    for i in range(U1, n):
        _node_load(load, axial_force, direction, node_force, u, damping, n, i, i - U1)


@njit(cache=True, _nrt=False, inline="always")
def transverse_damping_force(damping, ux, uy, tx, ty):
    """Viscous force ``-c (u . n) n`` [N] on a node of velocity ``u``, ``n`` the normal of the
    belt's local direction ``t`` (the sum of the chord directions meeting at the node), ``c``
    per node [N s/m]. With ``n = (-t_y, t_x) / |t|`` the force is
    ``-c (u_y t_x - u_x t_y) (-t_y, t_x) / |t|^2``, without a square root.

    On a moving belt ``u . n`` is the Eulerian transverse rate dw/dt of the span, so the
    belt's running along its path is not damped; the Kelvin-Voigt bending damping of the
    elements ([Scania thesis] eq. 3.34) hardly damps the string-like span modes, this does.
    """
    norm2 = tx * tx + ty * ty
    scale = damping * (uy * tx - ux * ty) / norm2 if norm2 > 0.0 else 0.0  # c (u . n) / |t|
    return scale * ty, -scale * tx


#: ``w.implicit_work`` as a structure of arrays (:func:`implicit_belt_correction`), entry k of
#: node or element i at ``k n + i``: element i's matrix entries Q_xx, Q_xy, Q_yy, s_x, s_y (5,
#: times dt, see the docstring), its right-hand side shares (4: x, y on node i, the negated
#: ones on i+1; phi on node i, on node i+1), then per node the elimination's -W_i (9,
#: row-major), F_i (9), r'_i (3; before, r_i; after, S_i^-1 (r'_i - F_i x_0)), the adjugate
#: of S_i (6: xx xy xphi yy yphi phiphi; before, A[i, i]) and 1 / det(S_i) (1)
_Q, _SHARE, _W, _F, _R, _S, _G = 0, 5, 9, 18, 27, 30, 36
IMPLICIT_COLUMNS = 37

#: theta of the bending's stiffness-proportional mass ``theta dt^2 K_b``
#: (:func:`implicit_belt_correction`). Symplectic Euler on a bending mode with that mass is
#: stable while ``dt^2 k <= 4 (m + theta dt^2 k)``: at any step for theta >= 1/4. 1/2 also
#: keeps the bound the explicit string stiffness ``K_e`` had with backward Euler's ``dt^2 K_b``
#: in the matrix, ``dt^2 (K_b + K_e) <= 4 (m + theta dt^2 K_b)``, i.e.
#: ``dt^2 K_e <= 4 m + dt^2 K_b`` (belt_fmu.model.stability); larger values slow the belt's
#: own bending modes more (``theta (w dt)^2 / 2``)
BENDING_MASS_THETA = 0.5


@njit(cache=True, _nrt=False, inline="always")
def _get(work, n, k, i):
    """Entry k of node i of the structure of arrays ``work``."""
    return work[np.uint64(k) * n + i]


@njit(cache=True, _nrt=False, inline="always")
def _set(work, n, k, i, v):
    work[np.uint64(k) * n + i] = v


@njit(cache=True, _nrt=False, inline="always")
def _get3(work, n, k, i):
    return _get(work, n, k, i), _get(work, n, k + 1, i), _get(work, n, k + 2, i)


@njit(cache=True, _nrt=False, inline="always")
def _set3(work, n, k, i, t):
    _set(work, n, k, i, t[0])
    _set(work, n, k + 1, i, t[1])
    _set(work, n, k + 2, i, t[2])


@njit(cache=True, _nrt=False, inline="always")
def _get6(work, n, k, i):
    return _get3(work, n, k, i) + _get3(work, n, k + 3, i)


@njit(cache=True, _nrt=False, inline="always")
def _set6(work, n, k, i, t):
    _set3(work, n, k, i, (t[0], t[1], t[2]))
    _set3(work, n, k + 3, i, (t[3], t[4], t[5]))


@njit(cache=True, _nrt=False, inline="always")
def _get9(work, n, k, i):
    return _get3(work, n, k, i) + _get3(work, n, k + 3, i) + _get3(work, n, k + 6, i)


@njit(cache=True, _nrt=False, inline="always")
def _set9(work, n, k, i, t):
    _set3(work, n, k, i, (t[0], t[1], t[2]))
    _set3(work, n, k + 3, i, (t[3], t[4], t[5]))
    _set3(work, n, k + 6, i, (t[6], t[7], t[8]))


@njit(cache=True, _nrt=False, inline="always")
def _element_matrix(direction, load, work, n, i, a_axial, a_bending):
    """Element i's ``Q = a_axial e e^T + 12 a_bending p p^T`` (xx, xy, yy) and ``s = 6 a_bending
    p``, ``p = n / l`` (docstring of :func:`implicit_belt_correction`), into ``work``."""
    ex = direction[U2 * i]
    ey = direction[U2 * i + U1]
    inv_length = load[U7 * n + i]  # of the positions closed_belt_forces saw: not moved since
    px = -ey * inv_length
    py = ex * inv_length
    b12 = 12.0 * a_bending
    b6 = 6.0 * a_bending
    _set(work, n, _Q, i, a_axial * ex * ex + b12 * px * px)
    _set(work, n, _Q + 1, i, a_axial * ex * ey + b12 * px * py)
    _set(work, n, _Q + 2, i, a_axial * ey * ey + b12 * py * py)
    _set(work, n, _Q + 3, i, b6 * px)
    _set(work, n, _Q + 4, i, b6 * py)


@njit(cache=True, _nrt=False, inline="always")
def _relative_velocity(u, force, i, j, dt_m):
    """Node j's velocity relative to node i's after the explicit predictor (x, y), and the
    predictor's increment of it, ``dt / m (F_j - F_i)``, which recovers the step's start;
    ``u``, ``force`` flat (n, 3) views, ``dt_m = dt / m``."""
    return (u[U3 * j] - u[U3 * i], u[U3 * j + U1] - u[U3 * i + U1],
            dt_m * (force[U3 * j] - force[U3 * i]), dt_m * (force[U3 * j + U1] - force[U3 * i + U1]))


@njit(cache=True, _nrt=False, inline="always")
def _element_rhs(u, force, direction, load, work, n, i, j, dt, dt_m, dt_j, h_axial, c_axial, h_bending):
    """Element i's (nodes i, j) share of the right-hand side ``-dt B^T (H d* - G d^n)``,
    ``G = diag(c_a/l0, H_b [[4, 2], [2, 4]])`` (docstring of :func:`implicit_belt_correction`)."""
    ex = direction[U2 * i]
    ey = direction[U2 * i + U1]
    inv_length = load[U7 * n + i]
    px = -ey * inv_length
    py = ex * inv_length
    dvx, dvy, dfx, dfy = _relative_velocity(u, force, i, j, dt_m)
    stretch = ex * dvx + ey * dvy
    stretch_start = stretch - (ex * dfx + ey * dfy)
    # the predictor's increments of the end rotations against the chord, d* - d^n
    chord_increment = px * dfx + py * dfy
    ta = dt_j * force[U3 * i + U2] - chord_increment
    tb = dt_j * force[U3 * j + U2] - chord_increment
    fn = h_axial * stretch - c_axial * stretch_start
    fa = h_bending * (4.0 * ta + 2.0 * tb)
    fb = h_bending * (2.0 * ta + 4.0 * tb)
    # -dt B^T (N, M_a, M_b)
    _set(work, n, _SHARE, i, dt * (ex * fn - px * (fa + fb)))
    _set(work, n, _SHARE + 1, i, dt * (ey * fn - py * (fa + fb)))
    _set(work, n, _SHARE + 2, i, dt * fa)
    _set(work, n, _SHARE + 3, i, dt * fb)


@njit(cache=True, _nrt=False, inline="always")
def _upper(work, n, e, two_bending):
    """``A[e, e+1]`` of element e, ``[[-Q, s], [-s^T, 2 a_bending]]``, row-major."""
    qxx = _get(work, n, _Q, e)
    qxy = _get(work, n, _Q + 1, e)
    sx = _get(work, n, _Q + 3, e)
    sy = _get(work, n, _Q + 4, e)
    return (-qxx, -qxy, sx, -qxy, -_get(work, n, _Q + 2, e), sy, -sx, -sy, two_bending)


@njit(cache=True, _nrt=False, inline="always")
def _negated_upper(work, n, e, two_bending):
    """``-A[e, e+1]`` (:func:`_upper`), row-major."""
    sx = _get(work, n, _Q + 3, e)
    sy = _get(work, n, _Q + 4, e)
    qxy = _get(work, n, _Q + 1, e)
    return (_get(work, n, _Q, e), qxy, -sx, qxy, _get(work, n, _Q + 2, e), -sy, sx, sy, -two_bending)


@njit(cache=True, _nrt=False, inline="always")
def _diagonal(work, n, h, i, m, rotational):
    """``A[i, i]`` (xx, xy, xphi, yy, yphi, phiphi) from element h = i - 1 (node i its end b)
    and element i (its end a); ``rotational`` = J + 8 a_bending."""
    return (m + _get(work, n, _Q, h) + _get(work, n, _Q, i), _get(work, n, _Q + 1, h) + _get(work, n, _Q + 1, i),
            _get(work, n, _Q + 3, i) - _get(work, n, _Q + 3, h),
            m + _get(work, n, _Q + 2, h) + _get(work, n, _Q + 2, i),
            _get(work, n, _Q + 4, i) - _get(work, n, _Q + 4, h), rotational)


@njit(cache=True, _nrt=False, inline="always")
def _node_rhs(work, n, h, i):
    """Node i's right-hand side from its elements h = i - 1 and i."""
    return (_get(work, n, _SHARE, i) - _get(work, n, _SHARE, h),
            _get(work, n, _SHARE + 1, i) - _get(work, n, _SHARE + 1, h),
            -_get(work, n, _SHARE + 2, i) - _get(work, n, _SHARE + 3, h))


@njit(cache=True, _nrt=False, inline="always")
def _symmetric_inverse(a0, a1, a2, a4, a5, a8):
    """Inverse of the symmetric 3x3 matrix [[a0 a1 a2] [a1 a4 a5] [a2 a5 a8]] by its adjugate
    (:func:`_adjugate`), as its six distinct entries in the same order."""
    adjugate, reciprocal = _adjugate(a0, a1, a2, a4, a5, a8)
    return _scale6(adjugate, reciprocal)


@njit(cache=True, _nrt=False, inline="always")
def _adjugate(a0, a1, a2, a4, a5, a8):
    """Adjugate (six distinct entries: xx xy xphi yy yphi phiphi) and reciprocal
    determinant of the symmetric 3x3 matrix [[a0 a1 a2] [a1 a4 a5] [a2 a5 a8]], apart: the
    division need not delay what needs only the adjugate."""
    c00 = a4 * a8 - a5 * a5
    c01 = a2 * a5 - a1 * a8
    c02 = a1 * a5 - a2 * a4
    c11 = a0 * a8 - a2 * a2
    c12 = a1 * a2 - a0 * a5
    c22 = a0 * a4 - a1 * a1
    return (c00, c01, c02, c11, c12, c22), 1.0 / (a0 * c00 + a1 * c01 + a2 * c02)


@njit(cache=True, _nrt=False, inline="always")
def _symmetric_product(s, b):
    """``S b`` for the symmetric S of six entries (:func:`_symmetric_inverse`) and a row-major 9-tuple b."""
    s0, s1, s2, s4, s5, s8 = s
    return (s0 * b[0] + s1 * b[3] + s2 * b[6], s0 * b[1] + s1 * b[4] + s2 * b[7], s0 * b[2] + s1 * b[5] + s2 * b[8],
            s1 * b[0] + s4 * b[3] + s5 * b[6], s1 * b[1] + s4 * b[4] + s5 * b[7], s1 * b[2] + s4 * b[5] + s5 * b[8],
            s2 * b[0] + s5 * b[3] + s8 * b[6], s2 * b[1] + s5 * b[4] + s8 * b[7], s2 * b[2] + s5 * b[5] + s8 * b[8])


@njit(cache=True, _nrt=False, inline="always")
def _symmetric_apply(s, x, y, z):
    """``S (x, y, z)`` for the symmetric S of six entries."""
    s0, s1, s2, s4, s5, s8 = s
    return s0 * x + s1 * y + s2 * z, s1 * x + s4 * y + s5 * z, s2 * x + s5 * y + s8 * z


@njit(cache=True, _nrt=False, inline="always")
def _scale6(a, c):
    return a[0] * c, a[1] * c, a[2] * c, a[3] * c, a[4] * c, a[5] * c


@njit(cache=True, _nrt=False, inline="always")
def _scale9(a, c):
    return a[0] * c, a[1] * c, a[2] * c, a[3] * c, a[4] * c, a[5] * c, a[6] * c, a[7] * c, a[8] * c


@njit(cache=True, _nrt=False, inline="always")
def _transpose(a):
    return a[0], a[3], a[6], a[1], a[4], a[7], a[2], a[5], a[8]


@njit(cache=True, _nrt=False, inline="always")
def _transposed_product(a, b):
    """``a^T b`` of two row-major 9-tuples."""
    return (a[0] * b[0] + a[3] * b[3] + a[6] * b[6], a[0] * b[1] + a[3] * b[4] + a[6] * b[7],
            a[0] * b[2] + a[3] * b[5] + a[6] * b[8],
            a[1] * b[0] + a[4] * b[3] + a[7] * b[6], a[1] * b[1] + a[4] * b[4] + a[7] * b[7],
            a[1] * b[2] + a[4] * b[5] + a[7] * b[8],
            a[2] * b[0] + a[5] * b[3] + a[8] * b[6], a[2] * b[1] + a[5] * b[4] + a[8] * b[7],
            a[2] * b[2] + a[5] * b[5] + a[8] * b[8])


@njit(cache=True, _nrt=False, inline="always")
def _congruence(a, b):
    """``a^T b`` of two row-major 9-tuples when it is symmetric (``b = S a``, S symmetric): its
    six distinct entries (:func:`_symmetric_inverse`'s order)."""
    return (a[0] * b[0] + a[3] * b[3] + a[6] * b[6], a[0] * b[1] + a[3] * b[4] + a[6] * b[7],
            a[0] * b[2] + a[3] * b[5] + a[6] * b[8],
            a[1] * b[1] + a[4] * b[4] + a[7] * b[7], a[1] * b[2] + a[4] * b[5] + a[7] * b[8],
            a[2] * b[2] + a[5] * b[5] + a[8] * b[8])


@njit(cache=True, _nrt=False, inline="always")
def _transposed_apply(a, x, y, z):
    """``a^T (x, y, z)`` for a row-major 9-tuple a."""
    return a[0] * x + a[3] * y + a[6] * z, a[1] * x + a[4] * y + a[7] * z, a[2] * x + a[5] * y + a[8] * z


@njit(cache=True, _nrt=False, inline="always")
def _chain_step(adjugate, reciprocal, coupling, border, r):
    """The products of one elimination step of :func:`implicit_belt_correction` from pivot
    node p to the next node q, given ``coupling = -A[p, q]`` and ``S_p^-1`` as its adjugate
    and ``reciprocal`` = 1 / det(S_p): ``-W_p = -S_p^-1 A[p, q]``, ``A[q, p] S_p^-1 A[p, q]``
    (six entries), ``-W_p^T F_p`` and ``-W_p^T r'_p``. Only the scalings by ``reciprocal`` wait
    for the division, which is thus off the recurrence's critical path."""
    v = _symmetric_product(adjugate, coupling)
    wm = _scale9(v, reciprocal)
    return (wm, _scale6(_congruence(coupling, v), reciprocal), _transposed_product(wm, border),
            _transposed_apply(wm, r[0], r[1], r[2]))


@njit(cache=True, _nrt=False, inline="always")
def _first_pivot(work, n, i, border):
    """The first node i of a recurrence of :func:`implicit_belt_correction`: ``S_i = D_i`` (its
    adjugate and 1 / det, stored apart), ``F_i = border``, ``r'_i = r_i``."""
    d = _get6(work, n, _S, i)
    adjugate, reciprocal = _adjugate(d[0], d[1], d[2], d[3], d[4], d[5])
    _set9(work, n, _F, i, border)
    _set6(work, n, _S, i, adjugate)
    _set(work, n, _G, i, reciprocal)
    return adjugate, reciprocal, _get3(work, n, _R, i)


@njit(cache=True, _nrt=False, inline="always")
def _pivot_step(work, n, pivot, i, coupling, adjugate, reciprocal, border, r):
    """One step of a recurrence of :func:`implicit_belt_correction`, from the pivot node to
    node i (``coupling = -A[pivot, i]``): stores ``-W`` of the pivot and ``F_i``, ``r'_i`` and
    the adjugate and 1 / det of ``S_i``, and returns the last three."""
    wm, k, fc, rc = _chain_step(adjugate, reciprocal, coupling, border, r)
    _set9(work, n, _W, pivot, wm)
    d = _get6(work, n, _S, i)
    rhs = _get3(work, n, _R, i)
    r = (rhs[0] + rc[0], rhs[1] + rc[1], rhs[2] + rc[2])
    adjugate, reciprocal = _adjugate(d[0] - k[0], d[1] - k[1], d[2] - k[2], d[3] - k[3], d[4] - k[4], d[5] - k[5])
    _set9(work, n, _F, i, fc)
    _set3(work, n, _R, i, r)
    _set6(work, n, _S, i, adjugate)
    _set(work, n, _G, i, reciprocal)
    return adjugate, reciprocal, fc, r


@njit(cache=True, _nrt=False, inline="always")
def _back_step(work, n, p, y, x):
    """``x_p = y_p + (-W_p) x`` (back substitution of :func:`implicit_belt_correction`), x the
    next node's solution."""
    wm = _get9(work, n, _W, p)
    return (y[0] + (wm[0] * x[0] + wm[1] * x[1] + wm[2] * x[2]),
            y[1] + (wm[3] * x[0] + wm[4] * x[1] + wm[5] * x[2]),
            y[2] + (wm[6] * x[0] + wm[7] * x[1] + wm[8] * x[2]))


@njit(cache=True, _nrt=False, inline="always")
def _eliminated_border(work, n, i, x):
    """``S_i^-1 (r'_i - F_i x)`` (the back substitution's part that does not wait for the
    next node), x the border node's solution."""
    r = _get3(work, n, _R, i)
    f = _get9(work, n, _F, i)
    s_inverse = _scale6(_get6(work, n, _S, i), _get(work, n, _G, i))
    return _symmetric_apply(s_inverse, r[0] - (f[0] * x[0] + f[1] * x[1] + f[2] * x[2]),
                            r[1] - (f[3] * x[0] + f[4] * x[1] + f[5] * x[2]),
                            r[2] - (f[6] * x[0] + f[7] * x[1] + f[8] * x[2]))


@njit(cache=True, _nrt=False, inline="always")
def _negated9(a):
    return -a[0], -a[1], -a[2], -a[3], -a[4], -a[5], -a[6], -a[7], -a[8]


@njit(cache=True, _nrt=False, inline="always")
def _add3(u, i, x):
    """Node i's velocities ``u`` (flat) += x."""
    u[U3 * i] += x[0]
    u[U3 * i + U1] += x[1]
    u[U3 * i + U2] += x[2]


#: independent chains of the block solve's partition (:func:`implicit_belt_correction`), one
#: SIMD lane each: 8 doubles, one AVX-512 register or two AVX2 ones
LANES = 8
ULANES = np.uint64(LANES)
#: a row of the lanes' work: the columns of IMPLICIT_COLUMNS (those of _SHARE unused but for
#: the left separator's solution, carried down the rows by the back substitution), then the
#: running border sums (9: sum F^T S^-1 F, six entries, and sum F^T S^-1 r'), of LANES lanes
#: each
_SUMS = IMPLICIT_COLUMNS
LANE_COLUMNS = IMPLICIT_COLUMNS + 9
LANE_ROW = np.uint64(LANE_COLUMNS * LANES)
#: the separator system's largest size: LANES groups of one or two nodes, or a whole belt of
#: fewer than 2 LANES nodes
MAX_SEPARATORS = 2 * LANES
USEPARATORS = np.uint64(MAX_SEPARATORS)
#: ``w.implicit_work``: the nodes' structure of arrays (IMPLICIT_COLUMNS of n), then the lanes'
#: (at most n / LANES rows of LANE_ROW)
IMPLICIT_WORK_COLUMNS = IMPLICIT_COLUMNS + LANE_COLUMNS
#: ``w.separator_work``: the separator system's structure of arrays (IMPLICIT_COLUMNS of
#: MAX_SEPARATORS); its columns _Q.._SHARE + 3 hold the coupling to the next separator (9)
SEPARATOR_WORK_SIZE = IMPLICIT_COLUMNS * MAX_SEPARATORS
_COUPLING = 0


@njit(cache=True, _nrt=False, inline="always")
def _partition(n):
    """(m, r) of the block solve's partition of an n-node belt (np.uint64): LANES chains of m
    interior nodes and LANES separator groups, r of two nodes, the others of one
    (``n = LANES (m + 1) + r``); m = 0 (no chains, every node a separator) below 2 LANES
    nodes."""
    rows = n // ULANES
    if rows < U2:
        return U0, n
    return rows - U1, n - ULANES * rows


@njit(cache=True, _nrt=False, inline="always")
def _first_interior(k, m, r):
    """The first interior node of chain k; its left separator is the node before it, its
    right one m nodes after it (mod n)."""
    return k * (m + U1) + min(k + U1, r) + U1


@njit(cache=True, _nrt=False, inline="always")
def _add9(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5], a[6] + b[6], a[7] + b[7],
            a[8] + b[8])


@njit(cache=True, _nrt=False, inline="always")
def _subtract6(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5]


@njit(cache=True, _nrt=False, inline="always")
def _border_terms(adjugate, reciprocal, f, r):
    """A node's terms of the border's sums, ``F^T S^-1 F`` (six entries) and ``F^T S^-1 r'``
    (three), from the adjugate of its S and 1 / det(S), its F and r'."""
    phi = _symmetric_product(_scale6(adjugate, reciprocal), f)  # S^-1 F
    return _congruence(f, phi) + _transposed_apply(phi, r[0], r[1], r[2])


@njit(cache=True, _nrt=False, error_model="numpy", fastmath={"contract"})
def _eliminate_chains(work, lanes, n, m, r, two_bending):
    """The forward elimination of the LANES chains of :func:`implicit_belt_correction`, all
    at once: the inner loops run over the lanes (``lanes``: row j of chain k at
    ``j LANE_ROW + k``, columns of LANES), which the compiler vectorizes, one chain a SIMD
    lane. Row j < m holds interior node j of the chain, with the running sums of the
    border's terms (:data:`_SUMS`); row m the step into its right separator: that node's K,
    the eliminated coupling F to the left separator and the right-hand side's term.

    The rows are first copied from the nodes' columns (A[i, i], r_i and the incoming
    element's Q; row 0's element is the one from the left separator, row m's the one into
    the right), so that the elimination reads and writes ``lanes`` alone: LLVM then sees
    every access at a constant offset from the row and vectorizes the lane loops, which it
    did not with the nodes' columns read in them (aliasing). Rows outside, lanes inside:
    each row fills whole cache lines (lanes outside, 1.6 against 4.5 us at 600 elements).
    """
    for j in range(U0, m + U1):
        row = j * LANE_ROW
        for k in range(U0, ULANES):
            node = _first_interior(k, m, r) + j
            for c in range(_Q, _Q + 5):
                _set(lanes, ULANES, c, row + k, _get(work, n, c, node - U1))
        if j < m:
            for k in range(U0, ULANES):
                node = _first_interior(k, m, r) + j
                _set6(lanes, ULANES, _S, row + k, _get6(work, n, _S, node))
                _set3(lanes, ULANES, _R, row + k, _get3(work, n, _R, node))
    for k in range(U0, ULANES):  # row 0: S = A[0, 0], F = A[first, left separator]
        adjugate, reciprocal, rhs = _first_pivot(lanes, ULANES, k, _transpose(_upper(lanes, ULANES, k, two_bending)))
        _set9(lanes, ULANES, _SUMS, k, _border_terms(adjugate, reciprocal, _get9(lanes, ULANES, _F, k), rhs))
    for j in range(U1, m):
        row = j * LANE_ROW
        for k in range(U0, ULANES):
            p = row - LANE_ROW + k
            i = row + k
            adjugate, reciprocal, border, rhs = _pivot_step(
                lanes, ULANES, p, i, _negated_upper(lanes, ULANES, i, two_bending), _get6(lanes, ULANES, _S, p),
                _get(lanes, ULANES, _G, p), _get9(lanes, ULANES, _F, p), _get3(lanes, ULANES, _R, p))
            _set9(lanes, ULANES, _SUMS, i,
                  _add9(_get9(lanes, ULANES, _SUMS, p), _border_terms(adjugate, reciprocal, border, rhs)))
    row = m * LANE_ROW  # into the right separators
    for k in range(U0, ULANES):
        p = row - LANE_ROW + k
        i = row + k
        wm, kk, fc, rc = _chain_step(_get6(lanes, ULANES, _S, p), _get(lanes, ULANES, _G, p),
                                     _negated_upper(lanes, ULANES, i, two_bending), _get9(lanes, ULANES, _F, p),
                                     _get3(lanes, ULANES, _R, p))
        _set9(lanes, ULANES, _W, p, wm)
        _set6(lanes, ULANES, _S, i, kk)
        _set9(lanes, ULANES, _F, i, fc)
        _set3(lanes, ULANES, _R, i, rc)


@njit(cache=True, _nrt=False, error_model="numpy", fastmath={"contract"})
def _substitute_chains(u, lanes, m, r):
    """The back substitution of the chains, all at once (:func:`_eliminate_chains`' layout),
    from their separators' solutions in row m (left: the columns of _SHARE, right: those of
    r'), ``x_j = S_j^-1 (r'_j - F_j x_L) - W_j x_(j+1)``; adds each interior node's solution
    to its velocities ``u`` (flat). ``x_L`` is copied down the rows as it is used, so that
    every access is at a constant offset from the row (as in :func:`_eliminate_chains`:
    read from row m, it kept the loop from being vectorized, 2.7 against 0.6 us at 600
    elements)."""
    for t in range(U1, m + U1):
        row = (m - t) * LANE_ROW
        for k in range(U0, ULANES):
            i = row + k
            left = _get3(lanes, ULANES, _SHARE, i + LANE_ROW)
            _set3(lanes, ULANES, _SHARE, i, left)
            x = _back_step(lanes, ULANES, i, _eliminated_border(lanes, ULANES, i, left),
                           _get3(lanes, ULANES, _R, i + LANE_ROW))
            _set3(lanes, ULANES, _R, i, x)
    for j in range(U0, m):  # rows outside: see _eliminate_chains
        for k in range(U0, ULANES):
            _add3(u, _first_interior(k, m, r) + j, _get3(lanes, ULANES, _R, j * LANE_ROW + k))


@njit(cache=True, _nrt=False, inline="always")
def _separator_nodes(k, m, r):
    """Separator group k's first node, its size (1 or 2) and its first separator's index."""
    size = U1 + U1 if k < r else U1
    return k * (m + U1) + min(k, r), size, k + min(k, r)


@njit(cache=True, _nrt=False, inline="always")
def _chain_separators(k, r, count):
    """The indices in the separators' system of chain k's left and right separators (the
    last of group k, the first of group k + 1, mod ``count``)."""
    left = k + min(k + U1, r)
    return left, (left + U1) % count


@njit(cache=True, _nrt=False, error_model="numpy")
def _solve_separators(work, lanes, separators, u, n, m, r, two_bending):
    """The separators' system of :func:`implicit_belt_correction` (the Schur complement of the
    chains), assembled in ``separators`` and solved; adds the solutions to the separators'
    velocities ``u`` (flat) and leaves each chain's two in its row m (left: the columns of _SHARE,
    right: those of r')."""
    count = n if m == U0 else ULANES + r
    if m == U0:  # no chains: the belt's own system
        for i in range(U0, n):
            _set6(separators, USEPARATORS, _S, i, _get6(work, n, _S, i))
            _set3(separators, USEPARATORS, _R, i, _get3(work, n, _R, i))
            _set9(separators, USEPARATORS, _COUPLING, i, _upper(work, n, i, two_bending))
    else:
        for k in range(U0, ULANES):
            node, size, first = _separator_nodes(k, m, r)
            for t in range(U0, size):
                _set6(separators, USEPARATORS, _S, first + t, _get6(work, n, _S, node + t))
                _set3(separators, USEPARATORS, _R, first + t, _get3(work, n, _R, node + t))
            if size > U1:  # two neighbours: their own coupling
                _set9(separators, USEPARATORS, _COUPLING, first, _upper(work, n, node, two_bending))
        last_row = m * LANE_ROW
        for k in range(U0, ULANES):  # each chain's terms at its two separators
            left, right = _chain_separators(k, r, count)
            i = last_row + k
            sums = _get9(lanes, ULANES, _SUMS, i - LANE_ROW)
            rhs = _get3(separators, USEPARATORS, _R, left)
            _set6(separators, USEPARATORS, _S, left, _subtract6(_get6(separators, USEPARATORS, _S, left), sums))
            _set3(separators, USEPARATORS, _R, left, (rhs[0] - sums[6], rhs[1] - sums[7], rhs[2] - sums[8]))
            rc = _get3(lanes, ULANES, _R, i)
            rhs = _get3(separators, USEPARATORS, _R, right)
            _set6(separators, USEPARATORS, _S, right,
                  _subtract6(_get6(separators, USEPARATORS, _S, right), _get6(lanes, ULANES, _S, i)))
            _set3(separators, USEPARATORS, _R, right, (rhs[0] + rc[0], rhs[1] + rc[1], rhs[2] + rc[2]))
            # A[left, right] = F^T of the step into the right separator
            _set9(separators, USEPARATORS, _COUPLING, left, _transpose(_get9(lanes, ULANES, _F, i)))

    # a cyclic block tridiagonal system of count >= 8 nodes: the chain 1..count-1 with node 0
    # as its border (an arrowhead), the closing coupling A[count-1, 0] added to the last F
    s = separators
    v = USEPARATORS
    last = count - U1
    adjugate, reciprocal, rhs = _first_pivot(s, v, U1, _transpose(_get9(s, v, _COUPLING, U0)))
    border = _get9(s, v, _F, U1)
    for i in range(U2, count):
        adjugate, reciprocal, border, rhs = _pivot_step(s, v, i - U1, i, _negated9(_get9(s, v, _COUPLING, i - U1)),
                                                        adjugate, reciprocal, border, rhs)
    _set9(s, v, _F, last, _add9(border, _get9(s, v, _COUPLING, last)))
    sums = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for i in range(U1, count):
        sums = _add9(sums, _border_terms(_get6(s, v, _S, i), _get(s, v, _G, i), _get9(s, v, _F, i), _get3(s, v, _R, i)))
    d = _subtract6(_get6(s, v, _S, U0), sums)
    rhs = _get3(s, v, _R, U0)
    x = _symmetric_apply(_symmetric_inverse(d[0], d[1], d[2], d[3], d[4], d[5]), rhs[0] - sums[6], rhs[1] - sums[7],
                         rhs[2] - sums[8])
    for i in range(U1, count):
        _set3(s, v, _R, i, _eliminated_border(s, v, i, x))
    _set3(s, v, _R, U0, x)
    x = _get3(s, v, _R, last)
    for t in range(U2, count):  # back substitution, count - 2 .. 1
        i = count - t
        x = _back_step(s, v, i, _get3(s, v, _R, i), x)
        _set3(s, v, _R, i, x)

    # the solutions: to the separators' velocities and the chains' rows m
    if m == U0:
        for i in range(U0, n):
            _add3(u, i, _get3(s, v, _R, i))
        return
    for k in range(U0, ULANES):
        node, size, first = _separator_nodes(k, m, r)
        for t in range(U0, size):
            _add3(u, node + t, _get3(s, v, _R, first + t))
    last_row = m * LANE_ROW
    for k in range(U0, ULANES):
        left, right = _chain_separators(k, r, count)
        _set3(lanes, ULANES, _SHARE, last_row + k, _get3(s, v, _R, left))
        _set3(lanes, ULANES, _R, last_row + k, _get3(s, v, _R, right))


@njit(cache=True, _nrt=False, error_model="numpy", fastmath={"contract"})
def implicit_belt_correction(belt, s, w, dt):
    """Make the belt's elastic and Kelvin-Voigt forces, axial, bending and shear, stable at any
    step (in frozen element frames: the axial ones by backward Euler, the bending and shear by
    a stiffness-proportional mass) by correcting the node velocities ``s.u`` after the
    explicit predictor ``u*`` (which used the forces of the step's start).

    Each element's deformation rates ``d = B u`` are its stretching rate ``e . (v_b - v_a)``
    and its end rotations against the chord, ``phi'_a - beta'`` and ``phi'_b - beta'`` with
    ``beta' = p . (v_b - v_a)``, ``p = n / l``; its forces ``(N, M_a, M_b) = K d_q + C d``
    with ``K = diag(EA, EI [[4, 2], [2, 4]]) / l0`` and ``C`` the same with ``c_a, c_b``
    (module docstring). Linearizing them about the step's start with ``B`` frozen (the
    co-rotational tangent without its geometric part: Crisfield 1991, ch. 7), with
    ``q^{n+1} = q^n + dt u^{n+1}``, the correction ``delta = u^{n+1} - u*`` solves

        (M + dt sum_e B^T H B) delta = -dt sum_e B^T H (d* - d^n) - dt sum_e B^T K_a dt d^n_a

    ``d*``, ``d^n`` the rates of ``u*`` and of the step's start ``u^n = u* - dt M^-1 F^n``,
    ``H = diag(H_a, H_b [[4, 2], [2, 4]])``, ``d_a`` the stretching rate. The two parts are
    treated differently:

    - axial: backward Euler, ``H_a = dt EA/l0 + c_a/l0`` (the last term above is its
      stiffness at the end of the step): a linearly implicit Euler step (Hairer & Wanner
      1996, IV.7, on the stiff part only);
    - bending and shear: their damping implicit, their elastic moments explicit (those of the
      step's start, in the predictor), and the mass matrix raised by the stiffness-proportional
      ``theta dt^2 B^T K_b B`` (:data:`BENDING_MASS_THETA`): ``H_b = theta dt EI/l0 + c_b/l0``,
      which acts on the increment ``d - d^n`` only. This is selective mass scaling with
      an added mass proportional to the stiffness ([Olovsson, Simonsson and Unosson 2005]),
      the element's stiffness in its frame of this step (rebuilt every step, so the large
      rotations stay exact, as the co-rotational forces do). It adds no mass to rigid
      motions (``K_b`` has none of their energy) and slows a bending mode of frequency
      ``w`` to ``w / sqrt(1 + theta (w dt)^2)`` (symplectic Euler with the mass
      ``m + theta dt^2 k``): the mesh's stiff modes below ``2 / dt`` for any
      ``theta >= 1/4``, the belt's own (``w dt`` < 0.1) by less than
      ``theta (w dt)^2 / 2`` (0.25 %), and without numerical damping. Backward Euler on the
      bending would damp it numerically with ``dt EI`` (four times the built-in belt's
      ``c_b`` at 2e-5 s), which the wrapping and unwrapping of the belt works against: it
      moved the mean crank torque by about 1 %, the mass penalty by 0.02 %
      (fmu_tests/test_convergence.py).

    Per element, in (x, y, phi) of its end nodes a and b, with ``Q = H_a e e^T + 12 H_b p p^T``,
    ``s = 6 H_b p``:

        B^T H B = [[ Q,   s, -Q,   s],
                   [ s^T, 4 H_b, -s^T, 2 H_b],
                   [-Q,  -s,  Q,  -s],
                   [ s^T, 2 H_b, -s^T, 4 H_b]]

    (the Euler-Bernoulli frame element's 12, 6 l, 4 l^2, 2 l^2 pattern, [Scania thesis]
    eq. 3.28). The matrix is symmetric positive definite and 3x3-block cyclic tridiagonal;
    it is solved exactly in O(n) by block Gaussian elimination ([Golub and Van Loan 2013]
    4.5) in a partitioned order (substructuring: [Wang 1981], [Polizzi and Sameh 2006]):
    the ring is cut into :data:`LANES` open chains of m interior nodes (:func:`_partition`)
    between LANES separator groups of one or two nodes. With ``D_i = A[i, i]``, each chain's
    nodes are eliminated in order (its LDL^T factorization), from a pivot p to the next node q,

        S_q = D_q - A[q, p] W_p,  W_p = S_p^-1 A[p, q]          (the pivots; S = D at the first)
        F_q = -W_p^T F_p,  F_first = A[first, left separator]    (its border)
        r'_q = r_q - W_p^T r'_p,  r'_first = r_first

    which leaves, per chain, the Schur complement's terms on its two separators: ``sum_i
    F_i^T S_i^-1 F_i`` and ``sum_i F_i^T S_i^-1 r'_i`` on the left one, the last step's
    ``A[R, last] S_last^-1 A[last, R]``, ``-W_last^T r'_last`` on the right one R and
    ``-W_last^T F_last`` = A'[R, left] between them. The separators' system, cyclic block
    tridiagonal of LANES to 2 LANES - 1 nodes, is solved the same way with one of them as
    the border (:func:`_solve_separators`), then each chain backward from its separators'
    solutions ``x_L``, ``x_R``:

        x_last = S_last^-1 (r'_last - F_last x_L) - W_last x_R,
        x_p = S_p^-1 (r'_p - F_p x_L) - W_p x_q

    A belt of fewer than 2 LANES nodes is all separators. Symmetric Gaussian elimination
    without pivoting in any order of the nodes is stable on a symmetric positive definite
    matrix, and the Schur complement of one is one too ([Golub and Van Loan 2013] 4.2).

    The step is then limited by neither the axial wave speed nor the bending rotation and
    shear modes, whose frequencies grow as 1/l0 and 1/l0^2 (:mod:`belt_fmu.model.stability`).

    Cost: the elimination of a node is about 110 multiplies or fused multiply-adds that wait
    on the previous node's; one chain is bound by the multiply units' throughput on scalars.
    The chains are independent and equally long, so they are eliminated together, chain k in
    lane k of the inner loops (:func:`_eliminate_chains`, :func:`_substitute_chains`, on
    ``w.implicit_work`` laid out as rows of LANES lanes), which the compiler vectorizes: one
    SIMD instruction does a step of every chain. The pivots are kept as adjugate and
    ``1 / det`` apart, so the division is off the recurrence's critical path, and ``-W`` is
    stored (no negations). Everything that does not depend on the previous node (the element
    matrices and right-hand sides, ``A[i, i]`` and ``r_i``) is in loops over the nodes,
    which the compiler vectorizes too, on ``w.implicit_work`` as a structure of arrays
    (:data:`IMPLICIT_COLUMNS` arrays of n, entry k of node i at ``k n + i``).
    fmu_tests/test_implicit_solve.py checks the solve against a dense one.
    """
    n = np.uint64(s.q.shape[0]) & INDEX_MASK  # masked: see INDEX_MASK
    u = s.u.reshape(-1)
    force = w.node_force.reshape(-1)
    direction = w.element_direction.reshape(-1)
    load = w.element_load.reshape(-1)
    flat = w.implicit_work.reshape(-1)
    work = flat[:IMPLICIT_COLUMNS * n]
    lanes = flat[IMPLICIT_COLUMNS * n:]
    m = belt.node_mass
    inertia = belt.node_inertia
    l0 = belt.rest_length
    c_axial = belt.axial_damping / l0
    c_bending = belt.bending_damping / l0
    h_axial = dt * belt.axial_stiffness / l0 + c_axial
    h_bending = BENDING_MASS_THETA * dt * belt.bending_stiffness / l0 + c_bending
    a_axial = dt * h_axial  # the matrix's factors
    a_bending = dt * h_bending
    two_bending = 2.0 * a_bending
    rotational = inertia + 8.0 * a_bending
    dt_m = dt / m
    dt_j = dt / inertia
    last = n - U1

    # the elements' matrices and right-hand sides (independent: vectorized loops)
    for i in range(U0, n):
        _element_matrix(direction, load, work, n, i, a_axial, a_bending)
    for i in range(U0, last):
        _element_rhs(u, force, direction, load, work, n, i, i + U1, dt, dt_m, dt_j, h_axial, c_axial, h_bending)
    _element_rhs(u, force, direction, load, work, n, last, U0, dt, dt_m, dt_j, h_axial, c_axial, h_bending)

    # A[i, i] into the columns of S_i^-1, r_i into those of r'_i (a vectorized loop)
    _set6(work, n, _S, U0, _diagonal(work, n, last, U0, m, rotational))
    _set3(work, n, _R, U0, _node_rhs(work, n, last, U0))
    for i in range(U1, n):
        _set6(work, n, _S, i, _diagonal(work, n, i - U1, i, m, rotational))
        _set3(work, n, _R, i, _node_rhs(work, n, i - U1, i))

    chain_length, pairs = _partition(n)
    if chain_length > U0:
        _eliminate_chains(work, lanes, n, chain_length, pairs, two_bending)
    _solve_separators(work, lanes, w.separator_work, u, n, chain_length, pairs, two_bending)
    if chain_length > U0:
        _substitute_chains(u, lanes, chain_length, pairs)


@njit(cache=True, _nrt=False, inline="always")
def _axial_rhs(u, force, direction, cosine, rhs, i, j, alpha, c, dt_m):
    """Element i's (nodes i, j) ``e_i . e_j`` and right-hand side ``alpha w*_i - c w^n_i``
    (:func:`implicit_axial_correction`)."""
    ex = direction[U2 * i]
    ey = direction[U2 * i + U1]
    cosine[i] = ex * direction[U2 * j] + ey * direction[U2 * j + U1]
    dvx, dvy, dfx, dfy = _relative_velocity(u, force, i, j, dt_m)
    rate_star = ex * dvx + ey * dvy
    rate_start = rate_star - (ex * dfx + ey * dfy)  # the predictor's explicit increment removed
    rhs[i] = alpha * rate_star - c * rate_start


@njit(cache=True, _nrt=False, inline="always")
def _axial_node_change(u, direction, change, i, h, dt_m):
    """Node i's velocity change from the axial force changes of its elements h = i - 1 and i."""
    u[U3 * i] += dt_m * (change[i] * direction[U2 * i] - change[h] * direction[U2 * h])
    u[U3 * i + U1] += dt_m * (change[i] * direction[U2 * i + U1] - change[h] * direction[U2 * h + U1])


#: the minors of implicit_axial_correction's recurrences are scaled by 2^-MINOR_EXPONENT when
#: they pass 2^MINOR_EXPONENT (a factor of about 1 + 2 EA dt^2 / (l0 m) per row; exact: a
#: power of two)
MINOR_EXPONENT = 512
MINOR_LIMIT = 2.0 ** MINOR_EXPONENT
MINOR_SCALE = 2.0 ** -MINOR_EXPONENT


@njit(cache=True, _nrt=False, inline="always")
def _minor_step(diag, a, rhs, q, q_before, y, z):
    """One row of :func:`implicit_axial_correction`'s recurrences, ``a`` its coupling to the
    previous row: ``Q_i = diag Q_(i-1) - a^2 Q_(i-2)``, ``Y_i = rhs Q_(i-1) - a Y_(i-1)``,
    ``Z_i = -a Z_(i-1)`` from (Q_(i-1), Q_(i-2), Y_(i-1), Z_(i-1)); returns (Q_i, Q_(i-1),
    Y_i, Z_i), all scaled by :data:`MINOR_SCALE` if Q_i passed :data:`MINOR_LIMIT`."""
    q, q_before = diag * q - a * a * q_before, q
    y = rhs * q_before - a * y
    z = -a * z
    if abs(q) > MINOR_LIMIT:
        return q * MINOR_SCALE, q_before * MINOR_SCALE, y * MINOR_SCALE, z * MINOR_SCALE
    return q, q_before, y, z


@njit(cache=True, _nrt=False, inline="always")
def _eliminated_row(coupling, y, z, row, a_next, q, q_before, y_scaled, z_scaled):
    """Row ``row`` of :func:`implicit_axial_correction`'s elimination from its chain's minors
    (:func:`_minor_step`): the pivot ``d = Q_i / Q_(i-1)``, the coupling to the next row
    ``a_next / d``, and ``y = Y_i / Q_i``, ``z = Z_i / Q_i``."""
    inv = 1.0 / q
    coupling[row] = a_next * q_before * inv
    y[row] = y_scaled * inv
    z[row] = z_scaled * inv


@njit(cache=True, _nrt=False, inline="always")
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

    The elimination runs from both ends at once and meets in the middle (a twisted
    factorization, Parlett and Dhillon, "Fernando's solution to Wilkinson's problem: an
    application of double factorization", Linear Algebra Appl. 1997): two independent
    recurrences overlap in the processor (a third faster than one sweep). Each
    carries its rows' leading minors instead of the pivots, which are their ratios (the
    three-term recurrence of a symmetric tridiagonal matrix's leading minors, the Sturm
    sequence of bisection: Golub and Van Loan, "Matrix computations", 2013, ch. 8), so that
    no division waits on the previous row's (a fifth faster again). Both are
    Gaussian elimination without pivoting on a diagonally dominant matrix, hence stable. The
    loops before and after them (the right-hand side per element, the velocity change per
    node from its two elements) run on flat views with the closing element and node apart,
    and the scratch columns are contiguous, so that the compiler vectorizes them
    (1.74-1.78 -> 1.59-1.62 us per solve, in a loop on a running 150-element drive).

    The scheme of belts whose explicit bending is stable at the step (``belt.implicit_bending``
    0, :func:`belt_fmu.model.stability.bending_is_implicit`): half the cost of
    :func:`implicit_belt_correction` (1.2 against 2.6 us at 150 elements), which gives the
    same mean loads there.
    """
    n = s.q.shape[0]
    m = belt.node_mass
    k = belt.axial_stiffness / belt.rest_length
    c = belt.axial_damping / belt.rest_length
    alpha = k * dt + c
    beta = alpha * dt / m
    diag = 1.0 + 2.0 * beta
    u, force, direction = s.u.reshape(-1), w.node_force.reshape(-1), w.element_direction.reshape(-1)
    # scratch, per element: e_e . e_(e+1), the right-hand side (then dN), the eliminated
    # coupling (rows above the middle row mid: to the next row; below: to the previous), y, z
    work = w.implicit_work.reshape(-1)
    cosine, rhs, coupling, y, z = work[:n], work[n:2 * n], work[2 * n:3 * n], work[3 * n:4 * n], work[4 * n:5 * n]
    last = n - 1  # the closing element, n-1 -> 0 (the recurrences count down from it, signed)
    closing = np.uint64(last) & INDEX_MASK  # ... as the vectorized loops index it (see INDEX_MASK)
    dt_m = dt / m
    # (flat views and the closing element apart: a loop the compiler vectorizes)
    for i in range(U0, closing):
        _axial_rhs(u, force, direction, cosine, rhs, i, i + U1, alpha, c, dt_m)
    _axial_rhs(u, force, direction, cosine, rhs, closing, U0, alpha, c, dt_m)
    # A[e, e+1] = A[e+1, e] = -beta cos_e; corner A[0, n-1] = A[n-1, 0] = -beta cos_{n-1}
    corner = -beta * cosine[last]
    gamma = -diag
    # T = A with b_0 -= gamma, b_{n-1} -= corner^2 / gamma, two right sides: y for the rhs,
    # z for u = (gamma, 0, ..., 0, corner); twisted: eliminated from both ends at once
    # (two independent recurrences), meeting at row mid
    b_first = diag - gamma
    b_last = diag - corner * corner / gamma
    mid = n // 2
    # each chain carries its rows' leading minors Q (rows 0..i from the top, i..n-1 from the
    # bottom), whose ratios are the pivots, d_i = Q_i / Q_(i-1), and Y = y Q, Z = z Q
    # (_minor_step): no division on the chains; the eliminated coupling -beta cos_i / d_i and
    # y, z from them beside
    q_top, q_top_before, y_top, z_top = b_first, 1.0, rhs[0], gamma
    _eliminated_row(coupling, y, z, 0, -beta * cosine[0], q_top, q_top_before, y_top, z_top)
    q_bottom, q_bottom_before, y_bottom, z_bottom = b_last, 1.0, rhs[last], corner
    _eliminated_row(coupling, y, z, last, -beta * cosine[last - 1], q_bottom, q_bottom_before, y_bottom, z_bottom)
    for t in range(1, mid):  # rows 1..mid-1 from the top, n-2..mid+1 from the bottom
        i = t
        q_top, q_top_before, y_top, z_top = _minor_step(diag, -beta * cosine[i - 1], rhs[i], q_top, q_top_before,
                                                        y_top, z_top)
        _eliminated_row(coupling, y, z, i, -beta * cosine[i], q_top, q_top_before, y_top, z_top)
        j = last - t
        if j > mid:
            q_bottom, q_bottom_before, y_bottom, z_bottom = _minor_step(diag, -beta * cosine[j], rhs[j], q_bottom,
                                                                        q_bottom_before, y_bottom, z_bottom)
            _eliminated_row(coupling, y, z, j, -beta * cosine[j - 1], q_bottom, q_bottom_before, y_bottom, z_bottom)
    sub = -beta * cosine[mid - 1]  # row mid, where they meet
    sup = -beta * cosine[mid]
    inv = 1.0 / (diag - sub * coupling[mid - 1] - sup * coupling[mid + 1])
    y[mid] = (rhs[mid] - sub * y[mid - 1] - sup * y[mid + 1]) * inv
    z[mid] = (-sub * z[mid - 1] - sup * z[mid + 1]) * inv
    for t in range(1, mid + 1):  # back substitution from row mid to both ends
        i = mid - t
        y[i] -= coupling[i] * y[i + 1]
        z[i] -= coupling[i] * z[i + 1]
        j = mid + t
        if j < n:
            y[j] -= coupling[j] * y[j - 1]
            z[j] -= coupling[j] * z[j - 1]
    ratio = corner / gamma
    factor = (y[0] + ratio * y[last]) / (1.0 + z[0] + ratio * z[last])
    # dN_e = y_e - factor z_e (over the right-hand side), then each node's change from its
    # two elements
    for i in range(n):
        rhs[i] = y[i] - factor * z[i]
    _axial_node_change(u, direction, rhs, U0, closing, dt_m)
    for i in range(U1, closing + U1):
        _axial_node_change(u, direction, rhs, i, i - U1, dt_m)
