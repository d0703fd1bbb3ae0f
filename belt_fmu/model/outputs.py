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
                                            f"the cord-radius ratio, 1 - w r / (w_crank r_crank)"),
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
    """Indices of the elements in the middle half of each free span.

    Span j runs from pulley j to j+1 on ``path`` (built for the current pulley centres).
    A span too short to hold an element there gets the element nearest its midpoint.
    """
    mid = 0.5 * (q[:, :2] + np.roll(q[:, :2], -1, axis=0))  # element midpoints
    p = path.n_pulleys
    spans = []
    for j in range(p):
        start = path.departure_point(j)
        stop = path.arrival_point((j + 1) % p)
        d = stop - start
        length2 = d @ d
        rel = mid - start
        t = rel @ d / length2
        off = np.abs(rel[:, 0] * d[1] - rel[:, 1] * d[0]) / np.sqrt(length2)
        inside = np.flatnonzero((t > 0.25) & (t < 0.75) & (off < 0.05 * np.sqrt(length2) + 2e-3))
        if inside.size == 0:
            inside = np.array([np.argmin(np.hypot(*(mid - (start + 0.5 * d)).T))])
        spans.append(inside)
    return spans


def span_tensions(q: np.ndarray, axial_force: np.ndarray, path: BeltPath) -> np.ndarray:
    """Tension of each free span [N]: mean axial force of the elements in its middle half
    (averaging there smooths the polygon effect)."""
    return np.array([axial_force[elements].mean() for elements in span_elements(q, path)])
