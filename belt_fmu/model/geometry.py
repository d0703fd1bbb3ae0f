"""Belt path geometry: link (tangent) points, spans, wrap angles, belt length.

[Scania thesis], appendix 12.1, generalized: instead of the thesis's four cases (open/cross span,
CW/CCW driver, eqs. 12.1-12.6) one formula covers every span. Each pulley j has a centre
``c_j``, a cord-line radius ``rho_j`` (the radius at which the belt's cord runs, which differs
for ribbed-side and back-side contact, [Scania thesis] section 9) and a wrap sense ``s_j`` (+1: the
belt goes round it counter-clockwise, -1: clockwise). Ribbed-side pulleys turn with the
crankshaft, back-side pulleys against it.

For a span leaving pulley a and arriving at pulley b, with ``d = c_b - c_a``, ``D = |d|`` and
``delta = atan2(d)``, the belt leaves a at the polar angle

    alpha_a = delta - s_a * acos(k / D),      k = rho_a - s_a s_b rho_b

and arrives at b at ``alpha_b = alpha_a`` (open span, s_a = s_b, eq. 12.3) or
``alpha_a + pi`` (cross span, eq. 12.6); the free span length is ``sqrt(D^2 - k^2)``
(eq. 12.21). The wrap angle of pulley j is the angle swept in its wrap sense from the
arrival to the departure point (eqs. 12.7-12.10), and the loaded belt length is the sum of
span lengths and wrapped arcs ``rho_j theta_j`` (section 12.1.8).
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np

TWO_PI = 2.0 * np.pi
#: a wrap holding fewer of the discretized belt's nodes than this is bent over by a couple of
#: chords: its hub load ripples with the polygon by tens of per cent and its mean is off by a
#: few, and on the tensioner pulley the ripple shakes the arm's friction loose under a small
#: excitation; with 3.4 the built-in drive's tensioner load ripples by 5 % and the arm's
#: stick-slip has converged (docs/model.md, "Small wraps"; docs/modes.md, "What is left")
MIN_WRAP_NODES = 3.0


def cord_radius(layout, index: int) -> float:
    """Radius [m] of the belt cord line on pulley ``index`` (:func:`side_cord_radius`)."""
    pulley = layout.pulleys[index]
    belt = layout.belt
    return side_cord_radius(pulley.radius_m, pulley.side, belt.cord_offset_m, belt.back_cord_distance)


def side_cord_radius(radius: float, side: str, cord_offset: float, back_cord_distance: float) -> float:
    """Cord-line radius [m] of a pulley of ``radius`` touched by the belt's ``side``: ribbed,
    radius + cord offset (the effective line differential, docs/layout-format.md); back,
    radius + the belt's back-to-cord distance."""
    return radius + (cord_offset if side == "ribbed" else back_cord_distance)


def crank_sense(layout) -> int:
    """+1 if the crankshaft turns counter-clockwise in the drawing, -1 otherwise."""
    return 1 if layout.drive.crank_rotation == "ccw" else -1


def wrap_senses(layout) -> np.ndarray:
    """Wrap sense of every pulley (+1 CCW, -1 CW): the sense it turns in normal running."""
    sigma = crank_sense(layout)
    return np.array([sigma if p.side == "ribbed" else -sigma for p in layout.pulleys], dtype=np.int64)


def span_departure_angle(c_a, rho_a, s_a, c_b, rho_b, s_b) -> float:
    """Polar angle [rad] on pulley a where the span towards b leaves it (NaN if impossible)."""
    d = np.asarray(c_b, float) - np.asarray(c_a, float)
    dist = float(np.hypot(d[0], d[1]))
    k = rho_a - s_a * s_b * rho_b
    if dist <= abs(k):
        return float("nan")
    return float(np.arctan2(d[1], d[0]) - s_a * np.arccos(k / dist))


@dataclass(frozen=True)
class BeltPath:
    """The belt's cord line wrapped around the pulleys, as [Scania thesis] app. 12.1 computes it.

    Arrays are indexed by pulley, in belt travel order. Span j runs from pulley j to pulley
    j+1 (cyclic). Angles are polar angles about each pulley centre, CCW positive.
    """

    centers: np.ndarray  # (n, 2) [m]
    radii: np.ndarray  # (n,) cord-line radius [m]
    senses: np.ndarray  # (n,) +1 / -1
    depart_angle: np.ndarray  # (n,) where the belt leaves pulley j [rad]
    arrive_angle: np.ndarray  # (n,) where the belt arrives on pulley j [rad]
    wrap_angle: np.ndarray  # (n,) [rad], in (0, 2 pi)
    span_length: np.ndarray  # (n,) length of span j (pulley j -> j+1) [m]

    @classmethod
    def from_circles(cls, centers, radii, senses) -> "BeltPath":
        centers = np.asarray(centers, dtype=float)
        radii = np.asarray(radii, dtype=float)
        senses = np.asarray(senses, dtype=np.int64)
        n = len(radii)
        depart = np.empty(n)
        arrive = np.empty(n)
        span = np.empty(n)
        for a in range(n):
            b = (a + 1) % n
            alpha = span_departure_angle(centers[a], radii[a], senses[a], centers[b], radii[b], senses[b])
            depart[a] = alpha
            arrive[b] = alpha if senses[a] == senses[b] else alpha + np.pi
            d = centers[b] - centers[a]
            k = radii[a] - senses[a] * senses[b] * radii[b]
            span[a] = np.sqrt(max(d @ d - k * k, 0.0))
        wrap = np.mod(senses * (depart - arrive), TWO_PI)
        return cls(centers, radii, senses, depart, arrive, wrap, span)

    @classmethod
    def from_layout(cls, layout, centers=None) -> "BeltPath":
        """Path of ``layout``; ``centers`` overrides the pulley centres (moved tensioner)."""
        n = len(layout.pulleys)
        if centers is None:
            centers = [p.center_m for p in layout.pulleys]
        radii = [cord_radius(layout, j) for j in range(n)]
        return cls.from_circles(centers, radii, wrap_senses(layout))

    @property
    def n_pulleys(self) -> int:
        return len(self.radii)

    @property
    def wrapped_length(self) -> np.ndarray:
        """Arc length of belt on each pulley, rho_j theta_j [m]."""
        return self.radii * self.wrap_angle

    def wrap_nodes(self, n_elements: int) -> np.ndarray:
        """Belt nodes each wrap holds, on average over the polygon's passage: its arc
        ``rho_j theta_j`` over the element length ``L / n`` of a belt of ``n_elements``."""
        return self.wrapped_length * n_elements / self.length

    @property
    def length(self) -> float:
        """Loaded belt length along the cord line [m] ([Scania thesis] section 12.1.8)."""
        return float(self.span_length.sum() + self.wrapped_length.sum())

    def point(self, j: int, angle: float) -> np.ndarray:
        """Point of the cord circle of pulley j at polar angle ``angle``."""
        return self.centers[j] + self.radii[j] * np.array([np.cos(angle), np.sin(angle)])

    def departure_point(self, j: int) -> np.ndarray:
        return self.point(j, self.depart_angle[j])

    def arrival_point(self, j: int) -> np.ndarray:
        return self.point(j, self.arrive_angle[j])

    def hub_force(self, j: int, tension_in: float, tension_out: float) -> np.ndarray:
        """Force [N] of the belt on pulley j: its two spans pulling along their lines from the
        tangent points, span j - 1 with ``tension_in`` and span j with ``tension_out``
        ([Scania thesis] eqs. 12.23-12.24; tensions less the centrifugal part m'v^2, which
        the wrap's own inertia carries: docs/references.md R4)."""
        back = self.departure_point((j - 1) % self.n_pulleys) - self.arrival_point(j)
        ahead = self.arrival_point((j + 1) % self.n_pulleys) - self.departure_point(j)
        return tension_in * back / np.hypot(*back) + tension_out * ahead / np.hypot(*ahead)

    def hub_moment(self, j: int, pivot, tension_in: float, tension_out: float) -> float:
        """Moment [N m, CCW] about ``pivot`` of the belt's force on pulley j
        (:meth:`hub_force`): for the tensioner, about its arm's pivot."""
        force = self.hub_force(j, tension_in, tension_out)
        r = self.centers[j] - np.asarray(pivot, dtype=float)
        return float(r[0] * force[1] - r[1] * force[0])

    def segments(self):
        """The path as (kind, data, length) pieces in travel order, starting with the wrap
        of pulley 0 at its arrival point: ("arc", j, length) or ("line", (p, q), length)."""
        pieces = []
        for j in range(self.n_pulleys):
            pieces.append(("arc", j, float(self.wrapped_length[j])))
            k = (j + 1) % self.n_pulleys
            pieces.append(("line", (self.departure_point(j), self.arrival_point(k)), float(self.span_length[j])))
        return pieces

    def sample(self, points_per_metre: float = 2000.0) -> np.ndarray:
        """Densely sampled closed path (m, 2) for drawing."""
        out = []
        for kind, data, length in self.segments():
            m = max(2, int(length * points_per_metre))
            if kind == "arc":
                j = data
                ang = self.arrive_angle[j] + self.senses[j] * np.linspace(0.0, self.wrap_angle[j], m)
                out.append(self.centers[j] + self.radii[j] * np.column_stack([np.cos(ang), np.sin(ang)]))
            else:
                p, q = data
                out.append(p + np.linspace(0.0, 1.0, m)[:, None] * (q - p))
        return np.vstack(out)


def small_wraps_note(layout, path: BeltPath) -> str | None:
    """A note naming the pulleys whose wraps hold fewer than :data:`MIN_WRAP_NODES` of the
    discretized belt's nodes on ``path``, and what that does; None if none does, or if
    ``layout`` runs the lumped model (it has no nodes)."""
    if layout.drive.model != "discretized":
        return None
    n = layout.belt.n_elements
    nodes = path.wrap_nodes(n)
    small = [(p.name, k) for p, k in zip(layout.pulleys, nodes) if k < MIN_WRAP_NODES]
    if not small:
        return None
    small = [f"{name} ({k:.1f}{' nodes' if i == 0 else ''})" for i, (name, k) in enumerate(small)]
    names = small[0] if len(small) == 1 else f"{', '.join(small[:-1])} and {small[-1]}"
    return textwrap.fill(
        f"note: the wraps of {names} hold fewer than {MIN_WRAP_NODES:g} of the belt's {n} nodes: their hub loads "
        "ripple with the polygon, and a tensioner pulley's ripple shakes the arm's friction loose under a small "
        "excitation; raise belt.n_elements where that matters (docs/model.md, \"Small wraps\")", 100)


def polygon_frequency(radius_m: float, speed_rad_per_s: float, n_elements: int, belt_length_m: float) -> float:
    """Polygon-effect frequency [Hz], ``R w n / l`` ([Scania thesis] eq. 4.14): with ``R w`` the belt
    speed and ``l / n`` the element length, the number of nodes running onto a pulley per
    second. R is the pitch (cord) radius of the pulley whose speed w [rad/s] is given."""
    return radius_m * abs(speed_rad_per_s) * n_elements / belt_length_m


def drive_polygon_frequency(layout, crank_speed_rad_per_s: float) -> float:
    """Polygon frequency [Hz] of a drive, from the crankshaft's cord radius and speed and the
    installed cord-line belt length, as [Scania thesis] section 7 recommends ("use the crankshaft
    pulley speed and pitch radii")."""
    crank = layout.crank_index
    return polygon_frequency(cord_radius(layout, crank), crank_speed_rad_per_s, layout.belt.n_elements,
                             BeltPath.from_layout(layout).length)
