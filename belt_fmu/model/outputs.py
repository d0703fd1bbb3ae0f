"""Engineering outputs of a drive state: span tensions, hub forces, speeds, slip.

Every output has a name, a unit and a description (:func:`output_specs`): the results
table, the CLI and the FMU all take their variables from here.

Sign conventions (README): speeds are positive in each pulley's running direction;
``crank_torque`` is the torque the belt drive loads the crankshaft with, positive against
its rotation; hub forces are the force of the belt on the pulley (its bearing load in
steady running) in the drawing's x-y frame; the tensioner angle is the polar angle of the
tensioner pulley centre about the arm pivot, CCW positive.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .drive import update_pulley_centers
from .geometry import BeltPath


@dataclass(frozen=True)
class OutputSpec:
    name: str
    unit: str
    description: str


def span_names(pulley_names) -> list[str]:
    p = len(pulley_names)
    return [f"{pulley_names[j]}_{pulley_names[(j + 1) % p]}" for j in range(p)]


def output_specs(pulley_names, headline: str) -> list[OutputSpec]:
    """All outputs of a drive with these pulleys, in table order."""
    specs = [
        OutputSpec("tensioner_angle", "rad", "tensioner arm angle: polar angle of the tensioner pulley "
                                             "centre about the pivot, CCW"),
        OutputSpec("tensioner_angle_rel", "rad", "tensioner arm angle relative to the installed position, CCW"),
        OutputSpec("bearing_force", "N", f"hub (bearing) load magnitude of the headline pulley '{headline}'"),
        OutputSpec("crank_torque", "N.m", "torque the belt drive loads the crankshaft with, positive "
                                          "against its rotation"),
        OutputSpec("belt_speed", "m/s", "mean belt (cord line) speed along its path"),
    ]
    for name in pulley_names:
        specs += [
            OutputSpec(f"speed_{name}", "rad/s", f"speed of pulley '{name}', positive in its running direction"),
            OutputSpec(f"slip_{name}", "1", f"speed loss of pulley '{name}' relative to the crankshaft by "
                                            f"the effective-radius ratio, 1 - w r / (w_crank r_crank)"),
            OutputSpec(f"hub_force_x_{name}", "N", f"x component of the belt's force on pulley '{name}'"),
            OutputSpec(f"hub_force_y_{name}", "N", f"y component of the belt's force on pulley '{name}'"),
            OutputSpec(f"hub_force_{name}", "N", f"magnitude of the belt's force on pulley '{name}'"),
        ]
    p = len(pulley_names)
    for j, span in enumerate(span_names(pulley_names)):
        a, b = pulley_names[j], pulley_names[(j + 1) % p]
        specs.append(OutputSpec(f"span_tension_{span}", "N", f"belt tension in the free span {a} -> {b}"))
    return specs


def span_elements(q: np.ndarray, path: BeltPath) -> list[np.ndarray]:
    """Indices of the elements whose mean axial force :func:`evaluate_outputs` reports as
    each span's tension (:func:`span_tension`), for analysis. Span j runs from pulley j to
    j+1 on ``path`` (built for the current pulley centres)."""
    p = path.n_pulleys
    members = np.empty(q.shape[0], dtype=np.int64)
    spans = []
    for j in range(p):
        b = (j + 1) % p
        ends = _span_end_points(path.centers[j, 0], path.centers[j, 1], path.radii[j], float(path.senses[j]),
                                path.centers[b, 0], path.centers[b, 1], path.radii[b], float(path.senses[b]))
        _, count = span_tension(q, np.zeros(q.shape[0]), *ends, members)
        spans.append(members[:count].copy())
    return spans


@njit(cache=True)
def effective_radius(radius, chord):
    """Radius [m] at which a belt of chords ``chord`` long runs on a cord circle ``radius``:
    each chord spans 2 asin(chord / 2 radius) of the pulley, so belt speed / pulley speed =
    chord / that angle, a little less than the radius (0.4 % for 9 mm chords on a 29 mm
    alternator). Slips measured with it show the belt's creep and slip, not the polygon."""
    return chord / (2.0 * np.arcsin(0.5 * chord / radius))


@njit(cache=True)
def _span_end_points(cx_a, cy_a, rho_a, s_a, cx_b, cy_b, rho_b, s_b):
    """Departure point on pulley a and arrival point on pulley b of the span a -> b
    (the one formula of :mod:`belt_fmu.model.geometry`)."""
    dx = cx_b - cx_a
    dy = cy_b - cy_a
    dist = np.sqrt(dx * dx + dy * dy)
    k = rho_a - s_a * s_b * rho_b
    alpha = np.arctan2(dy, dx) - s_a * np.arccos(min(max(k / dist, -1.0), 1.0))
    ca, sa = np.cos(alpha), np.sin(alpha)
    flip = 1.0 if s_a == s_b else -1.0
    return (cx_a + rho_a * ca, cy_a + rho_a * sa, cx_b + flip * rho_b * ca, cy_b + flip * rho_b * sa)


@njit(cache=True)
def evaluate_outputs(parameters, s, w, out):
    """All outputs of :func:`output_specs`, in that order, into ``out`` (SI units).

    Reads the state views ``s`` and the diagnostics of the last step in ``w``.
    """
    roles = parameters.roles[0]
    pulleys = parameters.pulleys
    p = pulleys.shape[0]
    n = s.q.shape[0]
    crank = roles.crank
    update_pulley_centers(parameters, s, w)
    t = roles.tensioner
    out[0] = s.arm[0] if t >= 0 else 0.0
    out[1] = s.arm[0] - parameters.tensioner[0].installed_angle if t >= 0 else 0.0
    h = roles.headline
    out[2] = np.sqrt(w.hub_force[h, 0] ** 2 + w.hub_force[h, 1] ** 2)
    out[3] = -pulleys[crank].sense * w.belt_torque[crank]
    speed = 0.0
    for i in range(n):
        speed += s.u[i, 0] * w.element_direction[i, 0] + s.u[i, 1] * w.element_direction[i, 1]
    out[4] = speed / n
    l0 = parameters.belt[0].rest_length
    reference = pulleys[crank].sense * s.omega[crank] * effective_radius(pulleys[crank].radius, l0)
    k = 5
    for j in range(p):
        running = pulleys[j].sense * s.omega[j]
        out[k] = running
        out[k + 1] = 1.0 - running * effective_radius(pulleys[j].radius, l0) / reference if reference != 0.0 else 0.0
        out[k + 2] = w.hub_force[j, 0]
        out[k + 3] = w.hub_force[j, 1]
        out[k + 4] = np.sqrt(w.hub_force[j, 0] ** 2 + w.hub_force[j, 1] ** 2)
        k += 5
    # span tensions: mean axial force of the elements in the middle half of each span
    for j in range(p):
        b = j + 1 if j + 1 < p else 0
        x0, y0, x1, y1 = _span_end_points(w.centers[j, 0], w.centers[j, 1], pulleys[j].radius, pulleys[j].sense,
                                          w.centers[b, 0], w.centers[b, 1], pulleys[b].radius, pulleys[b].sense)
        out[k] = span_tension(s.q, w.axial_force, x0, y0, x1, y1, w.span_members)[0]
        k += 1


@njit(cache=True)
def span_tension(q, axial_force, x0, y0, x1, y1, members):
    """Tension [N] of the free span from (x0, y0) to (x1, y1): the mean axial force of the
    elements whose midpoints lie in its middle half (averaging there smooths the polygon
    effect); a span too short to hold one there reports the element nearest its midpoint.
    The elements used go to ``members[:count]``; returns (tension, count), NaN for a span
    without geometry (non-finite state)."""
    n = q.shape[0]
    dx = x1 - x0
    dy = y1 - y0
    length2 = dx * dx + dy * dy
    if not length2 > 0.0:
        return np.nan, 0
    length = np.sqrt(length2)
    total = 0.0
    count = 0
    nearest = 0
    nearest_dist = np.inf
    for e in range(n):
        f = e + 1 if e + 1 < n else 0
        mx = 0.5 * (q[e, 0] + q[f, 0]) - x0
        my = 0.5 * (q[e, 1] + q[f, 1]) - y0
        along = (mx * dx + my * dy) / length2
        off = abs(mx * dy - my * dx) / length
        if 0.25 < along < 0.75 and off < 0.05 * length + 2e-3:
            total += axial_force[e]
            members[count] = e
            count += 1
        centre = (mx - 0.5 * dx) ** 2 + (my - 0.5 * dy) ** 2
        if centre < nearest_dist:
            nearest_dist = centre
            nearest = e
    if count == 0:
        members[0] = nearest
        return axial_force[nearest], 1
    return total / count, count
