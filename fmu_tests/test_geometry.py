"""The belt's path around the pulleys (belt_fmu.model.geometry) on small drives with known
answers: the open belt on two pulleys and a crossed span (a back-side pulley)."""
import math

import numpy as np
import pytest

from belt_fmu.model.geometry import BeltPath


def test_equal_pulleys_wrap_half_each_and_spans_equal_the_centre_distance():
    """Two equal circles r = 0.1 m, 0.35 m apart, both wrapped the same way: spans of the
    centre distance, wraps of pi, length 2 d + 2 pi r (exact geometry, rounding only)."""
    path = BeltPath.from_circles(np.array([[0.0, 0.0], [0.35, 0.0]]), np.array([0.1, 0.1]), np.array([1.0, 1.0]))
    assert path.span_length == pytest.approx([0.35, 0.35], abs=1e-12)
    assert path.wrap_angle == pytest.approx([math.pi, math.pi], abs=1e-12)
    assert path.length == pytest.approx(2 * 0.35 + 2 * math.pi * 0.1, abs=1e-12)


def test_unequal_pulleys_follow_the_open_belt_formulas():
    """R = 0.1 m and r = 0.04 m, d = 0.3 m: each span sqrt(d^2 - (R - r)^2), the large
    pulley wrapped by pi + 2 asin((R - r)/d), the small one by pi - 2 asin((R - r)/d), and
    the length their sum (the classical open-belt length)."""
    big, small, d = 0.1, 0.04, 0.3
    path = BeltPath.from_circles(np.array([[0.0, 0.0], [d, 0.0]]), np.array([big, small]), np.array([1.0, 1.0]))
    beta = math.asin((big - small) / d)
    span = math.sqrt(d * d - (big - small) ** 2)
    assert path.span_length == pytest.approx([span, span], abs=1e-12)
    assert path.wrap_angle == pytest.approx([math.pi + 2 * beta, math.pi - 2 * beta], abs=1e-12)
    assert path.length == pytest.approx(2 * span + big * (math.pi + 2 * beta) + small * (math.pi - 2 * beta),
                                        abs=1e-12)


def test_a_back_side_idler_is_wrapped_the_other_way_and_spans_cross():
    """A third pulley of the opposite sense (a back-side idler) between two equal pulleys:
    the spans to and from it are crossed tangents, of length sqrt(c^2 - (r1 + r2)^2) for
    centres c apart, and the sampled path is continuous."""
    centers = np.array([[0.0, 0.0], [0.4, 0.0], [0.2, 0.16]])
    radii = np.array([0.08, 0.08, 0.03])
    path = BeltPath.from_circles(centers, radii, np.array([1.0, 1.0, -1.0]))
    for j, k in ((1, 2), (2, 0)):
        c = np.hypot(*(centers[k] - centers[j]))
        assert path.span_length[j] == pytest.approx(math.sqrt(c * c - (radii[j] + radii[k]) ** 2), abs=1e-12)
    points = path.sample(2000.0)
    steps = np.hypot(*np.diff(np.vstack([points, points[:1]]), axis=0).T)
    assert steps.max() < 2e-3  # no jump along the closed loop (samples 0.5 mm apart)
