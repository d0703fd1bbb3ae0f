"""The belt's implicit axial solve (belt.implicit_axial_correction) against a dense solve of
the same cyclic tridiagonal system (its docstring):

    (1 + 2 b) dN_e - b (e_e . e_(e+1)) dN_(e+1) - b (e_e . e_(e-1)) dN_(e-1) = alpha w*_e - c w^n_e,

on a running drive's state, with an even and an odd element count (the elimination from
both ends meets at a middle row, whose neighbours differ with the parity).
"""
import dataclasses
import math

import numpy as np
import pytest
from numba import njit

from belt_fmu import BeltDrive, load_layout
from belt_fmu.model.belt import implicit_axial_correction

RPM = 2.0 * math.pi / 60.0


@njit(cache=False, _nrt=False)
def axial_correction(belt, s, w, dt):
    implicit_axial_correction(belt, s, w, dt)


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


@pytest.mark.parametrize("elements", [150, 151])
def test_axial_correction_solves_its_cyclic_system(elements):
    """Tolerance 1e-12 of the largest change: the system is diagonally dominant (condition
    number below 1 + 4 b, about 25 here), so both solves agree to a few hundred roundings;
    a wrong coupling or a missed row moves the result by its own size."""
    layout = load_layout()
    layout = dataclasses.replace(layout, belt=dataclasses.replace(layout.belt, n_elements=elements))
    drive = BeltDrive(layout)
    assert drive.parameters.belt[0]["implicit_bending"] == 0  # the scheme under test
    drive.reset(800 * RPM, 2.0, settle_time=0.0)
    drive.advance(2e-3, 800 * RPM, 2.0)  # element directions and forces of a running belt
    expected = dense_velocity_change(drive)
    before = drive.views.u[:, :2].copy()
    axial_correction(drive.parameters.belt[0], drive.views, drive.arrays, drive.dt)
    change = drive.views.u[:, :2] - before
    scale = np.abs(expected).max()
    assert scale > 1e-3  # the correction is not trivially zero
    assert np.abs(change - expected).max() < 1e-12 * scale
