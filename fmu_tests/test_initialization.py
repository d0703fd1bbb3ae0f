"""The steady running state's pieces (belt_fmu.model.initialization) on small inputs: the
span tensions a set of loads needs, the contact penetration, and the tension along a wrap."""
import math

import numpy as np
import pytest

from belt_fmu.model.geometry import BeltPath
from belt_fmu.model.initialization import penetration, span_tension_offsets, wrap_tension


def test_span_tensions_rise_by_torque_over_radius_across_each_driven_pulley():
    """docs/references.md R4: going along the belt from the crank's slack side, each driven
    pulley raises the tension by its load torque / cord radius."""
    centers = np.array([[0.0, 0.0], [0.4, 0.0], [0.2, 0.3]])
    radii = np.array([0.08, 0.03, 0.05])
    path = BeltPath.from_circles(centers, radii, np.ones(3))
    offsets = span_tension_offsets(path, 0, np.array([0.0, 3.0, 2.0]))
    assert offsets == pytest.approx([0.0, 3.0 / 0.03, 3.0 / 0.03 + 2.0 / 0.05], rel=1e-15)


def test_penetration_inverts_the_contact_law():
    """N' = c1 p^2 + c2 p ([Kubas 2017] eq. 2.8): the penetration that carries N' is the
    positive root; linear when c1 = 0; none without pressure."""
    assert penetration(1000.0, 0.0, 2e8) == pytest.approx(5e-6, rel=1e-15)
    p = penetration(1000.0, 4e12, 2e8)
    assert 4e12 * p * p + 2e8 * p == pytest.approx(1000.0, rel=1e-12)
    assert penetration(-5.0, 4e12, 2e8) == 0.0


def test_wrap_tension_is_the_capstan_law_on_the_exit_arc():
    """docs/references.md R3: the belt enters at T_in and keeps it until the slip arc, of angle
    ln[(T_out - m'v^2)/(T_in - m'v^2)] / mu at the exit, along which T - m'v^2 grows
    exponentially to T_out."""
    theta, t_in, t_out, centrifugal, mu = math.pi, 300.0, 800.0, 50.0, 0.5
    arc = math.log((t_out - centrifugal) / (t_in - centrifugal)) / mu
    phi = np.linspace(0.0, theta, 1001)
    tension = wrap_tension(phi, theta, t_in, t_out, centrifugal, mu)
    assert np.all(tension[phi < theta - arc - 1e-9] == t_in)
    assert tension[-1] == pytest.approx(t_out, rel=1e-12)
    inside = phi > theta - arc
    expected = centrifugal + (t_in - centrifugal) * np.exp(mu * (phi[inside] - (theta - arc)))
    assert tension[inside] == pytest.approx(expected, rel=1e-12)
