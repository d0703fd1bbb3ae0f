"""Layout checks that need the belt's geometry (docs/layout-format.md, "Rules checked on loading").

:func:`belt_fmu.layout.load_layout_data` calls :func:`geometry_problems` once every table of
the layout has passed its own rules (:func:`belt_fmu.layout.validate`): the belt must be able
to wrap the pulleys in the given order and sides, the discretized belt must be able to lie on
the smallest pulley, and the contact must carry the pretension without the belt sinking
deep into a pulley. Each problem is one readable line naming the field, as the table rules'
are.
"""
from __future__ import annotations

import numpy as np

from .geometry import TWO_PI, BeltPath

#: an element may span at most this angle of the smallest pulley (chord = cord radius at 60 deg)
MAX_ELEMENT_ANGLE = np.pi / 3
#: the contact may let the belt sink at most this fraction of a cord radius at the pretension
MAX_PENETRATION = 0.05
#: a wrap angle closer than this to 0 or 2 pi [rad] is a pulley the belt does not really wrap
#: (or wraps fully): a misplaced pulley or a wrong side or crank_rotation, not a drive
MIN_WRAP_MARGIN = 1e-3


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
        if not (MIN_WRAP_MARGIN < path.wrap_angle[j] < TWO_PI - MIN_WRAP_MARGIN):
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


def geometry_problems(layout) -> list[str]:
    """Every problem of a layout (valid table by table) that needs its geometry: can the
    belt wrap the pulleys, are the elements short enough to lie on the smallest pulley, and
    is the contact stiff enough to carry the pretension there? Empty if none."""
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
