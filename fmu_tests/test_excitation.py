"""Gravity on the belt, and the engineer's access to the belt nodes: positions, velocities,
the nodes of a span, and impulses (a tap test with a modal hammer).

References (docs/references.md): the catenary of a heavy cord under horizontal tension H,
y = (H / w) cosh(w x / H), w = m' g (curvature w / H at its vertex; sag
(H / w)(cosh(w L / 2H) - 1) over a span L); the axially moving string, f_n = n c (1 - v^2/c^2)
/ (2 L), c = sqrt(T / m') (docs/references.md R5).
"""
import numpy as np
import pytest

from belt_fmu.layout import LayoutError, load_layout_text
from belt_fmu.model.system import BeltDrive

from conftest import two_pulley_text

G = 9.81
MASS = 0.12  # m' of the conftest belt [kg/m]
CORD_RADIUS = 0.1  # [m]


def sag_drive(gravity: bool) -> BeltDrive:
    """Two pulleys 1 m apart on a horizontal line, belt at 100 N, a thin belt (EI = 0.002 N m^2:
    sqrt(EI / T) = 4.5 mm, the length over which bending stiffness bends the cord line near the
    pulleys, is small against the 1 m span)."""
    text = two_pulley_text(n=100, pretension=100.0, distance=1.0).replace("bending_stiffness_Nm2 = 0.02",
                                                                        "bending_stiffness_Nm2 = 0.002")
    if gravity:
        text = "[drive]\ngravity_m_per_s2 = [0.0, -9.81]\n" + text
    return BeltDrive(load_layout_text(text, "<sagging spans>"))


def span_shape(drive):
    """(curvature [1/m] and height at x = 0.5 m [m] of a parabola fitted through the middle
    half of the span, its tension [N]) for the upper span (driven -> driver) and the lower
    one, averaged over 0.1 s at rest."""
    rows = []
    for _ in range(20):
        drive.advance(5e-3, 0.0, 0.0)
        positions, outputs = drive.node_positions(), drive.outputs()
        row = []
        for a, b in (("driven", "driver"), ("driver", "driven")):
            middle = drive.span_nodes(a, b, (0.25, 0.75))
            fit = np.polyfit(positions[middle, 0], positions[middle, 1], 2)
            row.append((2.0 * fit[0], np.polyval(fit, 0.5), outputs[f"span_tension_{a}_{b}"]))
        rows.append(row)
    return np.mean(rows, axis=0)


@pytest.fixture(scope="module")
def straight():
    """The spans of the weightless belt (the discretized belt's straight spans lie a little
    inside the pulleys' common tangents: its polygon on the wraps)."""
    drive = sag_drive(gravity=False)
    drive.reset(0.0, 0.0, settle_time=0.1)
    return span_shape(drive)


def test_static_sag_of_a_span_follows_the_catenary(straight):
    """A belt at rest under gravity: each span hangs as the catenary of its own tension. In
    the middle half of both spans the curvature is w / T within 1 % (the catenary's at its
    vertex, cosh ~ 1 to 2e-6 here; measured 0.1 %); the sag at mid-span below the weightless
    belt's span is the catenary's over the 1 m span, 1.47 mm, within 2 % (measured -1 %: the
    bending stiffness holds the span's ends straight over about sqrt(EI / T) = 4.5 mm)."""
    drive = sag_drive(gravity=True)
    drive.reset(0.0, 0.0, settle_time=0.5)  # the sag settles (transverse damping: time constant 0.05 s)
    for (curvature, height, tension), (_, level, _) in zip(span_shape(drive), straight):
        w = MASS * G
        assert curvature == pytest.approx(w / tension, rel=0.01)
        catenary = tension / w * (np.cosh(w * 1.0 / (2.0 * tension)) - 1.0)
        assert catenary == pytest.approx(1.47e-3, rel=0.01)
        assert level - height == pytest.approx(catenary, rel=0.02)


def test_gravity_is_off_by_default(straight):
    """Without ``gravity_m_per_s2`` the spans stay straight: their curvature is below 1 % of
    the heavy belt's."""
    for curvature, _, tension in straight:
        assert abs(curvature) < 0.01 * MASS * G / tension


def test_gravity_must_be_a_vector():
    text = "[drive]\ngravity_m_per_s2 = -9.81\n" + two_pulley_text()
    with pytest.raises(LayoutError,
                       match=r"drive.gravity_m_per_s2: -9.81 must be \[x, y\], two numbers in \[-100, 100\] m/s2"):
        load_layout_text(text, "<test>")


@pytest.mark.parametrize("crank_speed", [0.0, 200.0])
def test_tap_test_finds_the_span_frequency_of_the_moving_string(crank_speed):
    """A modal-hammer tap (an impulse of 2e-3 N s across the span on its middle node) on the
    0.35 m free span of the two-pulley drive (550 N, m' = 0.12 kg/m: c = 67.7 m/s): the
    span's middle rings (its lateral position at mid-span, a spectrum of 0.1 s) at the first
    transverse mode of the axially moving string,
    f1 = c (1 - v^2 / c^2) / (2 L) with T the span's tension (the output): 96.8 Hz at rest and
    88.5 Hz with the belt at 20 m/s, within 3 % (the spectrum's resolution, and bending
    stiffness raises it by 0.3 % on a pinned span; the span's ends are where the belt leaves
    the pulleys, not pins)."""
    drive = BeltDrive(load_layout_text(two_pulley_text(n=120), "<two-pulley drive>"))
    drive.reset(crank_speed, 0.0, settle_time=0.1)
    span = drive.span_nodes("driven", "driver")  # the upper span, from x = 0.35 to 0
    # the nodes found cover the span: within an element of each end (where the nodes sit
    # when the run stops decides whether the end ones fall inside the span's window)
    assert 0.35 - 2.0 * drive.rest_length < np.ptp(drive.node_positions()[span, 0]) < 0.36
    tension = drive.outputs()["span_tension_driven_driver"]
    speed = abs(drive.outputs()["belt_speed"])
    before = drive.node_velocities()
    middle = drive.span_nodes("driven", "driver", (0.45, 0.55))
    drive.apply_impulse(middle, (0.0, 2e-3 / middle.size))
    jump = drive.node_velocities() - before
    assert jump[middle, 1] == pytest.approx(2e-3 / middle.size / (MASS * drive.rest_length))
    assert np.all(jump[np.setdiff1d(np.arange(len(jump)), middle)] == 0.0)
    lateral = []
    for _ in range(1000):  # 0.1 s, about 10 periods
        drive.advance(1e-4, crank_speed, 0.0)
        nodes = drive.span_nodes("driven", "driver")  # the belt passes: interpolate at a fixed point
        positions = drive.node_positions()[nodes]
        order = np.argsort(positions[:, 0])
        lateral.append(np.interp(0.175, positions[order, 0], positions[order, 1]))
    signal = (np.array(lateral) - np.mean(lateral)) * np.hanning(len(lateral))
    frequencies = np.fft.rfftfreq(8 * len(signal), 1e-4)  # zero padded: the peak to 1.25 Hz
    peak = frequencies[np.argmax(np.abs(np.fft.rfft(signal, 8 * len(signal))))]
    c = np.sqrt(tension / MASS)
    expected = c * (1.0 - speed ** 2 / c ** 2) / (2.0 * 0.35)
    assert expected == pytest.approx(96.8 if crank_speed == 0.0 else 88.5, rel=0.01)
    assert peak == pytest.approx(expected, rel=0.03)


def test_node_access_is_checked():
    drive = BeltDrive(load_layout_text(two_pulley_text(n=60), "<two-pulley drive>"))
    drive.reset(10.0, 0.0, settle_time=0.0)
    assert drive.node_positions().shape == (60, 2) and drive.node_velocities().shape == (60, 2)
    with pytest.raises(ValueError, match="no free span driver -> driver; the spans are driver -> driven, "
                                         "driven -> driver"):
        drive.span_nodes("driver", "driver")
    with pytest.raises(ValueError, match=r"belt node indices must be in \[0, 60\)"):
        drive.apply_velocity([60], (0.0, 1.0))
    with pytest.raises(ValueError, match="finite"):
        drive.apply_impulse([1, 2], [(0.0, 1.0)] * 3)
