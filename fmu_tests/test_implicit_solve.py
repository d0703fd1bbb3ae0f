"""The belt's implicit solves against numpy's dense solve of the same systems, on a running
drive's state, with an even and an odd element count (both eliminations run from both ends
and meet at a middle row, whose neighbours differ with the parity):

- the axial solve (belt.implicit_axial_correction), the cyclic tridiagonal system of its
  docstring, ``(1 + 2 b) dN_e - b (e_e . e_(e+1)) dN_(e+1) - b (e_e . e_(e-1)) dN_(e-1) =
  alpha w*_e - c w^n_e``;
- the axial, bending and shear solve (belt.implicit_belt_correction), assembled here from the
  equation of its docstring, ``(M + dt sum_e B^T H B) delta = -dt sum_e B^T (H d* - G d^n)``
  (H the axial part's backward Euler and the bending's mass penalty, G what acts on the
  step's start), with each element's rate matrix B written out (not its closed-form product).
"""
import dataclasses
import math

import numpy as np
import pytest
from numba import njit

from belt_fmu import BeltDrive, load_layout
from belt_fmu.model.belt import BENDING_MASS_THETA, implicit_axial_correction, implicit_belt_correction

RPM = 2.0 * math.pi / 60.0


@njit(cache=False, _nrt=False)
def axial_correction(belt, s, w, dt):
    implicit_axial_correction(belt, s, w, dt)


@njit(cache=False, _nrt=False)
def belt_correction(belt, s, w, dt):
    implicit_belt_correction(belt, s, w, dt)


def dense_velocity_change(drive) -> np.ndarray:
    """The node velocity changes of the correction from numpy's dense solve of its system."""
    belt, w = drive.parameters.belt[0], drive.arrays
    u, e, force = drive.views.u, w.element_direction, w.node_force
    n, m, dt = u.shape[0], belt["node_mass"], drive.dt
    k, c = belt["axial_stiffness"] / belt["rest_length"], belt["axial_damping"] / belt["rest_length"]
    alpha = k * dt + c
    b = alpha * dt / m
    matrix = np.diag(np.full(n, 1.0 + 2.0 * b))
    rhs = np.empty(n)
    for i in range(n):
        j = (i + 1) % n
        matrix[i, j] = matrix[j, i] = -b * (e[i] @ e[j])
        rate = e[i] @ (u[j, :2] - u[i, :2])
        rate_start = rate - dt / m * (e[i] @ (force[j, :2] - force[i, :2]))
        rhs[i] = alpha * rate - c * rate_start
    dn = np.linalg.solve(matrix, rhs)
    change = np.zeros((n, 2))
    for i in range(n):
        change[i] += dt / m * dn[i] * e[i]
        change[(i + 1) % n] -= dt / m * dn[i] * e[i]
    return change


@pytest.mark.parametrize("elements", [150, 151, 601])
def test_axial_correction_solves_its_cyclic_system(elements):
    """Tolerance 1e-12 of the largest change: the system is diagonally dominant (condition
    number below 1 + 4 b: about 31 at 150 elements, 480 at 601), so both solves agree to a
    few hundred roundings; a wrong coupling or a missed row moves the result by its own size.
    The 150 and 151-element belts run this scheme; at 601 elements (the belt runs the block
    solve; the axial solve is taken on its state) the minors of the recurrences grow by about
    240 per row and pass belt.MINOR_LIMIT several times, so their scaling is checked too."""
    layout = load_layout()
    layout = dataclasses.replace(layout, belt=dataclasses.replace(layout.belt, n_elements=elements))
    drive = BeltDrive(layout)
    assert drive.parameters.belt[0]["implicit_bending"] == (elements > 151)  # the belt's own scheme
    drive.reset(800 * RPM, 2.0, settle_time=0.0)
    drive.advance(2e-3, 800 * RPM, 2.0)  # element directions and forces of a running belt
    expected = dense_velocity_change(drive)
    before = drive.views.u[:, :2].copy()
    axial_correction(drive.parameters.belt[0], drive.views, drive.arrays, drive.dt)
    change = drive.views.u[:, :2] - before
    scale = np.abs(expected).max()
    assert scale > 1e-3  # the correction is not trivially zero
    assert np.abs(change - expected).max() < 1e-12 * scale


def dense_belt_velocity_change(drive) -> np.ndarray:
    """The node velocity changes (x, y, phi) of the axial, bending and shear correction from
    numpy's dense solve of its system (module docstring): element e from node a = e to
    b = e + 1, direction e_e, p = n / l, rates ``d = B (v_a, phi'_a, v_b, phi'_b)`` with
    stretch ``e . (v_b - v_a)`` and end rotations ``phi'_a - p . (v_b - v_a)``,
    ``phi'_b - p . (v_b - v_a)``; ``K = diag(EA, EI [[4, 2], [2, 4]]) / l0``, C likewise with
    the damping coefficients, ``H = dt diag(1, theta, theta) K + C`` (backward Euler on the
    axial row, the mass penalty theta dt^2 K on the bending rows) and ``G = C`` on the axial
    row, ``H`` on the bending rows (the penalty acts on the increment d* - d^n only)."""
    belt, w = drive.parameters.belt[0], drive.arrays
    u, force = drive.views.u.reshape(-1), w.node_force.reshape(-1)
    direction, inv_length = w.element_direction, w.element_load[7]
    n, dt, l0 = drive.views.u.shape[0], drive.dt, belt["rest_length"]
    mass = np.tile([belt["node_mass"], belt["node_mass"], belt["node_inertia"]], n)
    pattern = np.array([[1.0, 0.0, 0.0], [0.0, 4.0, 2.0], [0.0, 2.0, 4.0]])
    stiffness = np.array([belt["axial_stiffness"], belt["bending_stiffness"], belt["bending_stiffness"]])
    damping = np.array([belt["axial_damping"], belt["bending_damping"], belt["bending_damping"]])
    k = pattern * stiffness[:, None] / l0
    c = pattern * damping[:, None] / l0
    implicit_share = np.array([1.0, BENDING_MASS_THETA, BENDING_MASS_THETA])[:, None]
    h = dt * implicit_share * k + c
    g = np.vstack([c[:1], h[1:]])
    u_start = u - dt * force / mass  # the predictor's start of step
    matrix = np.diag(mass)
    rhs = np.zeros(3 * n)
    for e in range(n):
        ex, ey = direction[e]
        px, py = -ey * inv_length[e], ex * inv_length[e]
        rates = np.array([[-ex, -ey, 0.0, ex, ey, 0.0],
                          [px, py, 1.0, -px, -py, 0.0],
                          [px, py, 0.0, -px, -py, 1.0]])
        dofs = np.r_[3 * e:3 * e + 3, 3 * ((e + 1) % n):3 * ((e + 1) % n) + 3]
        matrix[np.ix_(dofs, dofs)] += dt * rates.T @ h @ rates
        rhs[dofs] -= dt * rates.T @ (h @ rates @ u[dofs] - g @ rates @ u_start[dofs])
    return np.linalg.solve(matrix, rhs).reshape(n, 3)


@pytest.mark.parametrize("drive_name, elements", [("two-pulley", 14), ("two-pulley", 15), ("two-pulley", 16),
                                                   ("two-pulley", 17), ("two-pulley", 23), ("built-in", 150),
                                                   ("built-in", 600), ("built-in", 601), ("built-in", 607)])
def test_belt_correction_solves_its_block_system(drive_name, elements, two_pulley_layout):
    """Tolerance 1e-10 of the largest change: the matrix's condition number is about
    1 + (w dt)^2 of its stiffest mode, the bending shear (stability.implicit_stiffness: a few
    hundred at 600 elements), so both solves agree to some 1e-13; a wrong block, sign or
    border term moves the result by its own size. The counts cover the solve's partition
    (belt._partition): below 16 nodes the separators are the whole belt; 16 and 17 give
    chains of one node, 23 and 607 seven separator groups of two nodes, 150 and 600 none, 601
    one. The short belts are the two-pulley drive's (the built-in drive's does not close
    below about 16 elements). Where the drive runs the explicit bending (below about 155
    elements on the built-in belt), the block solve is taken on its state all the same."""
    layout = load_layout() if drive_name == "built-in" else two_pulley_layout(n=elements)
    layout = dataclasses.replace(layout, belt=dataclasses.replace(layout.belt, n_elements=elements))
    drive = BeltDrive(layout)
    drive.reset(800 * RPM, 2.0, settle_time=0.0)
    drive.advance(2e-3, 800 * RPM, 2.0)  # element directions and forces of a running belt
    expected = dense_belt_velocity_change(drive)
    before = drive.views.u.copy()
    belt_correction(drive.parameters.belt[0], drive.views, drive.arrays, drive.dt)
    change = drive.views.u - before
    # each on its own scale, m/s and rad/s, but the rotations' at least the translations' over
    # l0: the phi rows take the translations through p = n / l, so their rounding is of that
    # size (on the coarse belts the rotations' own corrections are some 1e-5 of it)
    translation = np.abs(expected[:, :2]).max()
    l0 = drive.parameters.belt[0]["rest_length"]
    for column, name in enumerate(("x", "y", "phi")):
        scale = np.abs(expected[:, column]).max()
        assert scale > 1e-6, name  # the correction is not trivially zero
        if name == "phi":
            scale = max(scale, translation / l0)
        assert np.abs(change[:, column] - expected[:, column]).max() < 1e-10 * scale, name
