"""Belt path geometry: link (tangent) points, spans, wrap angles, belt length.

Seed 000, appendix 12.1, generalized: instead of the seed's four cases (open/cross span,
CW/CCW driver, eqs. 12.1-12.6) one formula covers every span. Each pulley j has a centre
``c_j``, a cord-line radius ``rho_j`` (the radius at which the belt's cord runs, which differs
for ribbed-side and back-side contact, seed 000 section 9) and a wrap sense ``s_j`` (+1: the
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

from dataclasses import dataclass

import numpy as np

TWO_PI = 2.0 * np.pi


def cord_radius(layout, index: int) -> float:
    """Radius [m] of the belt cord line on pulley ``index``.

    Ribbed side: pulley radius + cord offset; back side: pulley radius + (thickness - offset).
    """
    pulley = layout.pulleys[index]
    belt = layout.belt
    if pulley.side == "ribbed":
        return pulley.radius_m + belt.cord_offset_m
    return pulley.radius_m + belt.thickness_m - belt.cord_offset_m


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
    """The belt's cord line wrapped around the pulleys, as seed 000 app. 12.1 computes it.

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

    @property
    def length(self) -> float:
        """Loaded belt length along the cord line [m] (seed 000 section 12.1.8)."""
        return float(self.span_length.sum() + self.wrapped_length.sum())

    def point(self, j: int, angle: float) -> np.ndarray:
        """Point of the cord circle of pulley j at polar angle ``angle``."""
        return self.centers[j] + self.radii[j] * np.array([np.cos(angle), np.sin(angle)])

    def departure_point(self, j: int) -> np.ndarray:
        return self.point(j, self.depart_angle[j])

    def arrival_point(self, j: int) -> np.ndarray:
        return self.point(j, self.arrive_angle[j])

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


def span_problems(path: BeltPath, names, source: str) -> list[str]:
    """Why the belt cannot run over these circles in this order, as readable problems."""
    problems = []
    n = path.n_pulleys
    for a in range(n):
        b = (a + 1) % n
        if not np.isfinite(path.depart_angle[a]):
            kind = "open" if path.senses[a] == path.senses[b] else "cross"
            dist = float(np.hypot(*(path.centers[b] - path.centers[a])))
            need = abs(path.radii[a] - path.senses[a] * path.senses[b] * path.radii[b])
            problems.append(
                f"{source}: pulleys.{names[a]} -> pulleys.{names[b]}: the belt cannot span from "
                f"{names[a]} to {names[b]} ({kind} span): centre distance {dist:.4g} m must exceed "
                f"{need:.4g} m; move the pulleys apart or change their side/order"
            )
    if problems:
        return problems
    for j in range(n):
        if not (1e-3 < path.wrap_angle[j] < TWO_PI - 1e-3):
            problems.append(
                f"{source}: pulleys[{j}].center_m: wrap angle of {names[j]} is "
                f"{path.wrap_angle[j]:.4g} rad; the belt must wrap every pulley by an angle in "
                f"(0, 2 pi): check the pulley order, sides and crank_rotation"
            )
    if problems:
        return problems
    spans = [(path.departure_point(a), path.arrival_point((a + 1) % n)) for a in range(n)]
    for a, (p, q) in enumerate(spans):
        b = (a + 1) % n
        for j in range(n):
            if j in (a, b):
                continue
            # the span must pass outside pulley j's cord circle
            clearance = _segment_point_distance(p, q, path.centers[j]) - path.radii[j]
            if clearance < 0.0:
                problems.append(
                    f"{source}: pulleys.{names[j]}: the span {names[a]} -> {names[b]} runs through "
                    f"{names[j]} (by {-clearance:.4g} m); pulleys the belt touches must be listed "
                    f"in travel order with the side the belt touches"
                )
        for c in range(a + 1, n):
            if c in ((a + 1) % n, (a - 1) % n):
                continue
            if _segments_cross(p, q, *spans[c]):
                problems.append(
                    f"{source}: pulleys.{names[a]}: the span {names[a]} -> {names[b]} crosses the span "
                    f"{names[c]} -> {names[(c + 1) % n]}; check the pulley order and sides"
                )
    return problems


def _segment_point_distance(p, q, x) -> float:
    d = q - p
    t = np.clip((x - p) @ d / (d @ d), 0.0, 1.0)
    return float(np.hypot(*(p + t * d - x)))


def _segments_cross(p1, q1, p2, q2) -> bool:
    def orient(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    return (orient(p1, q1, p2) * orient(p1, q1, q2) < 0.0) and (orient(p2, q2, p1) * orient(p2, q2, q1) < 0.0)


#: an element may span at most this angle of the smallest pulley (chord = cord radius at 60 deg)
MAX_ELEMENT_ANGLE = np.pi / 3
#: the contact may let the belt sink at most this fraction of a cord radius at the pretension
MAX_PENETRATION = 0.05


def wrap_problems(layout) -> list[str]:
    """Layout checks used by :func:`belt_fmu.layout.load_layout` that need the geometry:
    can the belt wrap the pulleys, are the elements short enough to lie on the smallest
    pulley, and is the contact stiff enough to carry the pretension there?"""
    path = BeltPath.from_layout(layout)
    names = [p.name for p in layout.pulleys]
    problems = span_problems(path, names, layout.source)
    if problems:
        return problems
    belt = layout.belt
    smallest = int(np.argmin(path.radii))
    rho = float(path.radii[smallest])
    chord_max = 2.0 * rho * np.sin(0.5 * MAX_ELEMENT_ANGLE)
    needed = int(np.ceil(path.length / chord_max))
    if path.length / belt.n_elements > chord_max:
        problems.append(
            f"{layout.source}: belt.n_elements: {belt.n_elements!r} is too coarse: elements of "
            f"{path.length / belt.n_elements:.4g} m cannot lie on pulley {names[smallest]} (cord radius "
            f"{rho:.4g} m); must be >= {needed}"
        )
    if belt.pretension_N is not None:
        pressure = belt.pretension_N / rho  # normal force per belt length on the smallest pulley
        c1, c2 = layout.contact.stiffness_quadratic_N_per_m3, layout.contact.stiffness_linear_N_per_m2
        depth = MAX_PENETRATION * rho
        if c1 * depth * depth + c2 * depth < pressure:
            minimum = (pressure - c1 * depth * depth) / depth
            problems.append(
                f"{layout.source}: contact.stiffness_linear_N_per_m2: {c2!r} is too soft: at the pretension "
                f"the belt would sink more than {100 * MAX_PENETRATION:g} % of the cord radius into pulley "
                f"{names[smallest]}; must be >= {minimum:.3g}"
            )
    return problems
