"""The operating point (belt_fmu/analysis/operating_point.py) against statics and the capstan
law, and the CLI commands of the linear analysis on the built-in layout and a user file."""
import math

import numpy as np
import pytest

from belt_fmu.analysis.campbell import Crossing, SpeedModes, crossings
from belt_fmu.analysis.operating_point import capstan, operating_point
from belt_fmu.cli import main
from belt_fmu.layout import load_layout, load_layout_text

from conftest import two_pulley_text


@pytest.fixture(scope="module")
def built_in_point():
    return operating_point(load_layout(), 1500.0, 4.0)


def test_tensioner_spring_balances_the_hub_load(built_in_point):
    """The arm is in equilibrium: its spring torque and the moment of the belt's hub force on
    the tensioner pulley about the pivot (statics, [Scania thesis] eq. 12.23) differ by no more than
    the arm's Coulomb friction can hold (3 N m on 15 N m; measured 1.4 N m at 1500 rpm)."""
    point = built_in_point
    layout = point.layout
    t = layout.tensioner_index
    pulley = point.pulleys[t]
    pivot = np.array(layout.tensioner.pivot_m)
    arm = point.drive.arrays.centers[t] - pivot
    moment = arm[0] * pulley.hub_force_y - arm[1] * pulley.hub_force_x
    assert abs(point.spring_torque - abs(moment)) <= layout.tensioner.friction_torque_Nm


def test_table_is_consistent(built_in_point):
    """Hub magnitudes from their components, crank power = torque x speed, wrap angles
    summing with the spans to the belt length, one tension per span, no pulley flagged at a
    moderate load."""
    point = built_in_point
    for p in point.pulleys:
        assert p.hub_force == pytest.approx(math.hypot(p.hub_force_x, p.hub_force_y), rel=1e-9)
        assert 0.0 < p.wrap_angle < 2 * math.pi
        assert p.margin == pytest.approx(p.capacity - abs(p.torque))
    assert point.crank_power == pytest.approx(point.crank_torque * 1500.0 * 2 * math.pi / 60)
    assert len(point.span_tension) == len(point.layout.pulleys)
    assert np.all(point.span_tension > point.centrifugal_tension)
    assert point.flagged == []
    water_pump = next(p for p in point.pulleys if p.role == "water_pump")
    assert water_pump.torque > 4.0  # the input load plus its bearing loss


def test_capstan_limit():
    """Euler-Eytelwein with centrifugal tension (Firbank 1970): at the limit ratio
    (T_t - m'v^2)/(T_s - m'v^2) = exp(mu theta) the slip arc fills the wrap and the
    capacity equals the torque carried."""
    mu, wrap, r, c = 0.5, math.pi, 0.1, 20.0
    slack = 300.0
    tight = c + (slack - c) * math.exp(mu * wrap)
    arc, capacity = capstan(tight, slack, c, mu, wrap, r)
    assert arc == pytest.approx(wrap)
    assert capacity == pytest.approx(r * (tight - slack))


def test_pulley_beyond_its_capacity_is_flagged():
    """A two-pulley drive with mu = 0.1 on a flat belt carries at most
    R (T1 + T2) (e^{0.1 pi} - 1)/(e^{0.1 pi} + 1) = 0.1 m x 1100 N x 0.156 = 17 N m: asked for
    30 N m, the driven pulley has no margin and is flagged."""
    layout = load_layout_text(two_pulley_text(law="tanh", mu=0.1), source="<slipping drive>")
    point = operating_point(layout, 500.0, 30.0, settle_time=0.02)
    assert "driven" in point.flagged
    assert point.pulleys[1].capacity < 20.0


def test_crossings_are_interpolated():
    """A mode at 100 Hz meets the order-2 line f = 2 n / 60 at n = 3000 rpm."""
    speeds = [SpeedModes(r, np.array([100.0]), np.array([0.01]), ("rotational",)) for r in (2500.0, 3500.0)]
    assert crossings(speeds, [2.0]) == [Crossing(3000.0, 2.0, 1, "rotational", 100.0, 0.01)]


def test_cli_operating_point_and_modes_on_a_user_layout(tmp_path, capsys):
    """The commands read a user layout file and write the mode figure; bad options exit 2."""
    layout = tmp_path / "two.toml"
    layout.write_text(two_pulley_text(law="tanh"))
    assert main(["operating-point", str(layout), "--rpm", "600", "--water-pump-torque", "10"]) == 0
    out = capsys.readouterr().out
    assert "driver -> driven" in out and "slip arc" in out and "crank: torque" in out
    assert "note:" not in out  # wraps of about pi on 0.1 m pulleys hold tens of nodes
    figure = tmp_path / "modes.png"
    assert main(["modes", str(layout), "--rpm", "600", "--count", "30", "--plot", str(figure)]) == 0
    out = capsys.readouterr().out
    assert "span driver_driven" in out and figure.stat().st_size > 0
    assert main(["modes", str(layout), "--arm-friction", "loose"]) == 2
    assert main(["campbell", str(layout), "--orders", "0.3"]) == 2
    assert main(["operating-point", str(tmp_path / "missing.toml")]) == 2


def test_cli_campbell(tmp_path, capsys):
    """Three speeds of the built-in drive in this process: the table, the CSV and the plot."""
    out, figure = tmp_path / "campbell.csv", tmp_path / "campbell.png"
    assert main(["campbell", "--rpm", "1000:3000:3", "--count", "6", "--workers", "1", "--out", str(out),
                 "--plot", str(figure)]) == 0
    text = capsys.readouterr().out
    assert "3 speeds" in text
    rows = out.read_text().splitlines()
    assert rows[0].startswith("rpm,mode,frequency [Hz]") and len(rows) == 1 + 3 * 6
    assert figure.stat().st_size > 0


@pytest.mark.parametrize("model", ["discretized", "lumped"])
def test_modes_at_rest_take_the_arm_as_stuck(model, capsys):
    """At 0 rpm the excitation, an order of the crank speed, has no frequency: nothing moves
    the arm, and the modes command's default arm friction (the one the excitation gives) is
    the stuck arm's there, as is each Campbell speed's at rest. (A response at 0 Hz was
    solved for it, and failed on the singular static system.)"""
    assert main(["modes", "--model", model, "--rpm", "0"]) == 0
    excited = capsys.readouterr().out
    assert main(["modes", "--model", model, "--rpm", "0", "--arm-friction", "stuck"]) == 0
    stuck = capsys.readouterr().out

    def frequencies(text):  # [Hz], the table's second column
        return [float(line.split()[1]) for line in text.splitlines() if line[:1].isdigit()]

    # 1e-3: the two commands' modes come from separate eigenvalue searches; at least the
    # lumped model's four rotational modes and its tensioner spans' two strings
    assert len(frequencies(stuck)) >= 6
    assert frequencies(excited) == pytest.approx(frequencies(stuck), rel=1e-3)
    assert main(["campbell", "--model", model, "--rpm", "0,1000", "--orders", "2", "--count", "4",
                 "--workers", "1"]) == 0
