"""Belt elements: massless, geometrically nonlinear planar beam (frame) elements.

Seed 000 section 3.9 (eqs. 3.26-3.34) gives the linear frame element: axial ``EA/L`` and
bending ``EI/L [[4, 2], [2, 4]]`` stiffness with Kelvin-Voigt damping proportional to it
(eq. 3.34), seed 004 eqs. 30-36 the same for a discrete belt. Here the element is written in
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
cantilever of REFERENCES.md section 1.
"""
from __future__ import annotations

import numpy as np
from numba import njit

TWO_PI = 2.0 * np.pi


@njit(cache=True, inline="always")
def wrap_angle(a):
    """``a`` mapped into [-pi, pi)."""
    return a - TWO_PI * np.floor((a + np.pi) / TWO_PI)


@njit(cache=True)
def beam_element(xa, ya, pa, xb, yb, pb, vxa, vya, wa, vxb, vyb, wb,
                 rest_length, ea, ca, ei, cb, out):
    """Loads of one co-rotational beam element on its two nodes.

    Writes ``out[0:3]`` = (Fx, Fy, M) on node a and ``out[3:6]`` on node b [N, N m];
    returns the axial force N [N] (tension positive).
    """
    dx = xb - xa
    dy = yb - ya
    length = np.sqrt(dx * dx + dy * dy)
    ex = dx / length
    ey = dy / length
    dvx = vxb - vxa
    dvy = vyb - vya
    length_rate = ex * dvx + ey * dvy
    chord_rate = (ex * dvy - ey * dvx) / length  # d(beta)/dt
    beta = np.arctan2(dy, dx)
    ta = wrap_angle(pa - beta)
    tb = wrap_angle(pb - beta)
    ta_rate = wa - chord_rate
    tb_rate = wb - chord_rate

    axial = ea * (length - rest_length) / rest_length + ca * length_rate / rest_length
    k = ei / rest_length
    c = cb / rest_length
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


@njit(cache=True)
def closed_belt_forces(q, u, rest_length, ea, ca, ei, cb, node_force, axial_force, direction, out):
    """Element loads of a closed belt loop: element i joins node i to node i+1 (mod n).

    ``q``, ``u``: (n, 3) node positions/angles and velocities. Overwrites ``node_force``
    (n, 3) with the element loads, ``axial_force`` (n,) with each element's axial force and
    ``direction`` (n, 2) with its chord direction; ``out`` is a (6,) scratch array.
    """
    n = q.shape[0]
    node_force[:, :] = 0.0
    for i in range(n):
        j = i + 1 if i + 1 < n else 0
        axial_force[i] = beam_element(
            q[i, 0], q[i, 1], q[i, 2], q[j, 0], q[j, 1], q[j, 2],
            u[i, 0], u[i, 1], u[i, 2], u[j, 0], u[j, 1], u[j, 2],
            rest_length, ea, ca, ei, cb, out,
        )
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


@njit(cache=True)
def transverse_damping(u, direction, damping, node_force):
    """Viscous force ``-c (u . n) n`` on each node, ``n`` the normal of the belt's local
    direction (the mean of the chords meeting at the node), ``c`` per node [N s/m].

    On a moving belt ``u . n`` is the Eulerian transverse rate dw/dt of the span, so the
    belt's running along its path is not damped; the Kelvin-Voigt bending damping of the
    elements (seed 000 eq. 3.34) hardly damps the string-like span modes, this does.
    """
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
        node_force[i, 0] -= damping * vn * nx
        node_force[i, 1] -= damping * vn * ny
