"""The classical lumped rotational model of a serpentine drive, linearized about steady running.

Hwang, Perkins and Ulsoy, "Rotational response and slip prediction of serpentine belt drive
systems", ASME J. Vibration and Acoustics 116 (1994): the pulleys turn as rigid bodies, the
tensioner arm swings about its pivot, and each free span is an axial spring of stiffness
``EA / L_i`` (and damper ``c_a / L_i``) whose stretch follows from the motion of its end
pulleys and of the arm. The belt sticks to the pulleys on their wraps (no creep, no wrap
elasticity). Here the belt's mass is kept (it moves with the pulley surfaces on the wraps and
axially along the spans, with speed varying linearly along a span), and the arm carries the
geometric stiffness of the span tensions (the moment of the hub load changes with the arm
angle at constant tension).

Coordinates, with the crankshaft's speed prescribed (its rotation is not a degree of freedom):
the rotation of every other pulley in its running direction [rad] and the tensioner arm angle
[rad, CCW]. Span i runs from pulley i to pulley i+1 in belt travel order; pulley a paying
belt into the span and pulley b taking it out change its stretch by

    delta_i = r_b theta_b - r_a theta_a + c_i psi,

    c_i = dL_i/dpsi - r_b d(phi_b)/dpsi + r_a d(phi_a)/dpsi,

``L_i`` the span's length and ``phi`` the running-direction angles of its arrival point on b
and departure point on a (the arm moves the tangent points along the pulleys). Then

    M x'' + C x' + K x = 0,  K = sum_i (EA/L_i) b_i b_i^T + (k_spring + sum_i T'_i dc_i/dpsi) e_psi e_psi^T

with ``T'_i = T_i - m'v^2`` the span tension the pulleys feel (the centrifugal part is carried
by the belt's own inertia on the wraps, Firbank 1970). The belt sticks on the wraps but for
the sliding arc at each exit (Firbank 1970, :func:`belt_fmu.model.lumped.wrap_arcs`), which
makes the span it feeds softer, as if ``R_a |T'_i - T'_(i-1)| / (mu T'_i)`` longer:
``EA / L_i`` becomes ``EA / (L_i + that)``. That is the lumped fidelity level's span; at the
tensions of a drive transmitting torque it lowers the modes in which the spans leaving the
loaded pulleys stretch (docs/lumped-model.md, "Agreement"). This module is the independent
reference the discretized model's rotational modes are checked against (docs/modes.md), and
the linear core of the lumped fidelity level.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.geometry import BeltPath, cord_radius, wrap_senses
from ..model.lumped import steady_arcs
from ..model.parameters import effective_mu

ARM = "tensioner_arm"
#: [rad] step of the arm angle in the central differences of the span geometry
ANGLE_STEP = 1e-6


@dataclass(frozen=True)
class RotationalModel:
    """Linear rotational model of a drive at an operating point (module docstring)."""

    dofs: tuple[str, ...]  # pulley names (running-direction rotation), and ARM
    mass: np.ndarray  # (d, d) [kg m^2]
    damping: np.ndarray  # (d, d) [N m s/rad]
    stiffness: np.ndarray  # (d, d) [N m/rad]
    span_coupling: np.ndarray  # (p, d): stretch of span i per unit of each coordinate [m/rad]
    span_stiffness: np.ndarray  # (p,) EA / L_i [N/m]


def arm_geometry(layout) -> tuple[np.ndarray, float, float]:
    """(pivot [m], arm length [m], installed arm angle [rad]) of the layout's tensioner."""
    t = layout.tensioner_index
    pivot = np.asarray(layout.tensioner.pivot_m, dtype=float)
    arm = np.asarray(layout.pulleys[t].center_m, dtype=float) - pivot
    return pivot, float(np.hypot(*arm)), float(np.arctan2(arm[1], arm[0]))


def path_at(layout, arm_angle: float | None) -> BeltPath:
    """The cord path with the tensioner arm at ``arm_angle`` (None: installed position)."""
    centers = np.array([p.center_m for p in layout.pulleys], dtype=float)
    if layout.tensioner is not None and arm_angle is not None:
        pivot, length, _ = arm_geometry(layout)
        centers[layout.tensioner_index] = pivot + length * np.array([np.cos(arm_angle), np.sin(arm_angle)])
    radii = np.array([cord_radius(layout, j) for j in range(len(layout.pulleys))])
    return BeltPath.from_circles(centers, radii, wrap_senses(layout))


def span_arm_coupling(layout, arm_angle: float) -> tuple[np.ndarray, np.ndarray]:
    """(c_i, dc_i/dpsi) of every span (module docstring), by central differences of the
    exact path geometry in the arm angle."""

    def effective_length(psi):
        path = path_at(layout, psi)
        s = path.senses
        n = path.n_pulleys
        b = (np.arange(n) + 1) % n
        # running-direction angles of each span's departure (on a) and arrival (on b) points
        return path.span_length, s * path.depart_angle * path.radii, s[b] * path.arrive_angle[b] * path.radii[b]

    def c_at(psi):
        plus, minus = effective_length(psi + ANGLE_STEP), effective_length(psi - ANGLE_STEP)
        length = (plus[0] - minus[0]) / (2 * ANGLE_STEP)
        depart = _angle_difference(plus[1], minus[1], layout) / (2 * ANGLE_STEP)
        arrive = _angle_difference(plus[2], minus[2], layout, arrival=True) / (2 * ANGLE_STEP)
        return length - arrive + depart

    return c_at(arm_angle), (c_at(arm_angle + 1e-4) - c_at(arm_angle - 1e-4)) / 2e-4


def _angle_difference(plus, minus, layout, arrival=False):
    """Difference of two arc positions r*phi, with the angles' 2 pi jumps taken out."""
    radii = np.array([cord_radius(layout, j) for j in range(len(layout.pulleys))])
    if arrival:
        radii = np.roll(radii, -1)
    delta = (plus - minus) / radii
    delta = (delta + np.pi) % (2 * np.pi) - np.pi
    return delta * radii


def rotational_model(layout, arm_angle: float, span_tension, belt_speed: float) -> RotationalModel:
    """The model of ``layout`` at steady running: tensioner arm at ``arm_angle`` [rad], span
    tensions ``span_tension`` [N] (span i from pulley i to i+1), belt speed [m/s]."""
    n = len(layout.pulleys)
    crank = layout.crank_index
    free = [j for j in range(n) if j != crank]
    dofs = tuple(layout.pulleys[j].name for j in free) + ((ARM,) if layout.tensioner is not None else ())
    index = {j: k for k, j in enumerate(free)}
    d = len(dofs)
    path = path_at(layout, arm_angle if layout.tensioner is not None else None)
    r = path.radii
    belt = layout.belt
    m_belt = belt.mass_per_length_kg_per_m

    coupling = np.zeros((n, d))
    for i in range(n):
        a, b = i, (i + 1) % n
        if b in index:
            coupling[i, index[b]] += r[b]
        if a in index:
            coupling[i, index[a]] -= r[a]
    c_arm = dc_arm = np.zeros(n)
    if layout.tensioner is not None:
        c_arm, dc_arm = span_arm_coupling(layout, arm_angle)
        coupling[:, -1] = c_arm
    span_stiffness = belt.axial_stiffness_N / (path.span_length + arc_lengths(layout, path, span_tension, belt_speed))

    mass = np.zeros((d, d))
    damping = np.zeros((d, d))
    for j in free:
        pulley = layout.pulleys[j]
        k = index[j]
        # the belt on the wrap moves with the pulley surface
        mass[k, k] += pulley.inertia_kgm2 + m_belt * path.wrapped_length[j] * r[j] ** 2
        damping[k, k] += pulley.bearing_damping_Nms_per_rad
    for i in range(n):
        # a span's belt moves axially with speed varying linearly from one end to the other:
        # kinetic energy m' L/6 (v_a^2 + v_a v_b + v_b^2)
        a, b = i, (i + 1) % n
        ends = [(index[j], r[j]) for j in (a, b) if j in index]
        for (ka, ra) in ends:
            for (kb, rb) in ends:
                mass[ka, kb] += m_belt * path.span_length[i] / 6.0 * (2.0 if ka == kb else 1.0) * ra * rb
    stiffness = np.einsum("i,ij,ik->jk", span_stiffness, coupling, coupling)
    damping += np.einsum("i,ij,ik->jk", span_stiffness * belt.axial_damping_Ns / belt.axial_stiffness_N,
                         coupling, coupling)
    if layout.tensioner is not None:
        tensioner = layout.tensioner
        # the arm and its pulley, and the belt on that pulley's wrap, which it carries along
        pivot, arm_length, _ = arm_geometry(layout)
        mass[-1, -1] += tensioner.arm_inertia_kgm2 + m_belt * path.wrapped_length[layout.tensioner_index] * arm_length ** 2
        damping[-1, -1] += tensioner.damping_Nms_per_rad
        felt = np.asarray(span_tension, dtype=float) - m_belt * belt_speed ** 2
        stiffness[-1, -1] += tensioner.spring_rate_Nm_per_rad + float(felt @ dc_arm)
    return RotationalModel(dofs, mass, damping, stiffness, coupling, span_stiffness)


def arc_lengths(layout, path: BeltPath, span_tension, belt_speed: float) -> np.ndarray:
    """[m] how much longer each span acts for its stretch: span i by the sliding arcs at its
    ends, ``EA dD/dT'_i`` (:func:`belt_fmu.model.lumped.steady_arcs`: in steady running the
    exit of pulley i alone, the belt adhering to each wrap at its arriving span's strain)."""
    ea = layout.belt.axial_stiffness_N
    felt = np.asarray(span_tension, dtype=float) - layout.belt.mass_per_length_kg_per_m * belt_speed ** 2
    mu = [effective_mu(layout, pulley) for pulley in layout.pulleys]
    return ea * steady_arcs(path.radii, mu, path.wrap_angle, felt, ea)[1]


def natural_frequencies(model: RotationalModel) -> tuple[np.ndarray, np.ndarray]:
    """Undamped natural frequencies [Hz], ascending, and mode shapes (columns, mass-normalized)."""
    from scipy.linalg import eigh

    values, shapes = eigh(model.stiffness, model.mass)
    return np.sqrt(np.clip(values, 0.0, None)) / (2 * np.pi), shapes
