"""The harmonic response of the linearized drive (belt_fmu/analysis/response.py) against the
time-domain sweep with the same excitation (issue 37, item 4), for the discretized model and
for the lumped one, the describing function of the arm's Coulomb friction against a direct
fixed-point solution, and the response, modes and command line of a drive with a torque-driven
crank."""
import dataclasses
import math

import numpy as np
import pytest

from belt_fmu.analysis.arm_friction import equivalent_damping, stick_slip
from belt_fmu.analysis.modes import ROTATIONAL, modes
from belt_fmu.analysis.operating_point import operating_point
from belt_fmu.analysis.response import Excitation, response
from belt_fmu.cli import EXIT_LAYOUT, EXIT_USAGE, main
from belt_fmu.layout import load_layout
from belt_fmu.sweep import Run, RunSettings, run_point


@pytest.mark.parametrize("force", [0.5, 3.0, 30.0])
def test_describing_function_solves_the_harmonic_balance(force):
    """One degree of freedom (m 1e-3 kg m^2, k 40 N m/rad, c 0.2 N m s/rad, Coulomb 2.25 N m)
    under a harmonic torque of ``force`` at 30 Hz: the closed form (Den Hartog 1931) against
    the harmonic balance iterated directly, A = F / |k - m w^2 + i w (c + 4 T/(pi w A))|
    (converged by damped fixed-point iteration), within 1e-6; a torque below what the
    friction holds (0.5 N m against 4 T / pi = 2.9 N m) leaves the arm stuck."""
    m, k, c, level, w = 1e-3, 40.0, 0.2, 2.25, 2 * math.pi * 30.0
    dynamic = k - m * w * w + 1j * w * c
    found = equivalent_damping(force / dynamic, 1.0 / dynamic, w, level, stuck_damping=9000.0)
    if force < 4 * level / math.pi:
        assert found.stuck
        return
    amplitude = force / abs(dynamic)
    for _ in range(2000):
        amplitude = 0.5 * amplitude + 0.5 * force / abs(dynamic + 1j * 4 * level / (math.pi * amplitude))
    assert not found.stuck
    assert found.amplitude == pytest.approx(amplitude, rel=1e-6)
    assert found.damping == pytest.approx(4 * level / (math.pi * w * amplitude), rel=1e-6)


def coulomb_oscillator(force, periods=20, evaluated=4, steps=4000):
    """First-harmonic amplitude [rad] of the one degree of freedom of
    test_describing_function_solves_the_harmonic_balance, its friction the regularized law
    the time-domain model gives the arm (``T tanh(v / delta)``, delta = 2.25 / 2250 rad/s),
    integrated by backward Euler (Newton's method on the rate each step) over ``periods``
    periods of ``steps`` steps from rest, the last ``evaluated`` fitted. Backward Euler damps
    like a viscous ``k dt`` = 3e-4 N m s/rad, 0.2 % of the damper."""
    m, k, c, level, w = 1e-3, 40.0, 0.2, 2.25, 2 * math.pi * 30.0
    delta, dt = level / 2250.0, 2 * math.pi / w / steps
    x = v = 0.0
    first = 0j
    for n in range(1, periods * steps + 1):
        t = n * dt
        a, b = 1.0 + dt / m * (c + k * dt), v + dt / m * (force * math.cos(w * t) - k * x)
        for _ in range(50):
            th = math.tanh(v / delta)
            r = a * v + dt / m * level * th - b
            v -= r / (a + dt / m * level * (1 - th * th) / delta)
            if abs(r) < 1e-14:
                break
        x += dt * v
        if n > (periods - evaluated) * steps:
            first += x * complex(math.cos(w * t), -math.sin(w * t))
    return abs(2 * first / (evaluated * steps))


def test_wrap_slip_gain_is_the_saturation_describing_function():
    """Without bias the driving wrap's gain is the saturation's describing function
    ``(2/pi) (asin r + r sqrt(1 - r^2))`` (r = Q_max / dQ; within 5e-5: 256 samples of a
    period, the clipped waveform's kinks), exactly 1 where the wrap holds, and a steady torque
    makes the limit bite at a smaller swing."""
    from belt_fmu.analysis.response import wrap_slip_gain

    for r in (0.2, 0.5, 0.8, 0.95):
        exact = 2.0 / math.pi * (math.asin(r) + r * math.sqrt(1.0 - r * r))
        assert wrap_slip_gain(0.0, 1.0, r) == pytest.approx(exact, abs=5e-5)
    assert wrap_slip_gain(16.0, 60.0, 80.0) == 1.0
    assert wrap_slip_gain(-16.0, 70.0, 78.0) == wrap_slip_gain(16.0, 70.0, 78.0) < 1.0
    assert wrap_slip_gain(30.0, 60.0, 80.0) < 1.0 == wrap_slip_gain(0.0, 60.0, 80.0)


@pytest.mark.parametrize("force", [3.0, 4.0])
def test_stick_slip_balance_against_time_integration(force):
    """The arm's harmonic balance with its friction (:func:`stick_slip`, five odd harmonics)
    on the one degree of freedom above against its time integration: the first-harmonic
    amplitude within 3 % (measured +1.95 % at 3 N m, where the mass sticks for part of each
    period, +0.4 % at 4 N m; with nine harmonics +1.1 % and +0.1 %: what is left is the
    harmonics left out). At 3 N m the continuous-sliding describing function (the balance's
    one-harmonic limit) is 60 % short of it, at 4 N m 9 %."""
    m, k, c, w = 1e-3, 40.0, 0.2, 2 * math.pi * 30.0
    receptances = [1.0 / (k - m * (h * w) ** 2 + 1j * h * w * c) for h in range(1, 10, 2)]
    found = stick_slip(force * receptances[0], receptances, w, 2.25, 2250.0)
    assert not found.stuck
    assert found.amplitude == pytest.approx(coulomb_oscillator(force), rel=0.03)


def lumped(layout):
    """``layout`` run by the lumped model."""
    return layout.with_drive(model="lumped")


def sweep_peak(amplitude_rpm, rpms, layout=None):
    """(rpm, amplitude [deg]) of the time-domain tensioner peak over ``rpms`` (evenly spaced):
    the vertex of the parabola through the largest sample and its neighbours."""
    layout = layout or load_layout()
    settings = RunSettings(irregularity_rpm=amplitude_rpm)
    return peak_of(rpms, [run_point(Run(rpm, settings, (), layout))["tensioner_amplitude_deg"] for rpm in rpms])


def peak_of(rpms, values):
    """(rpm, value) of the vertex of the parabola through the largest of ``values`` at ``rpms``
    (evenly spaced) and its neighbours."""
    k = int(np.clip(np.argmax(values), 1, len(values) - 2))
    a, b, c = values[k - 1:k + 2]
    shift = 0.5 * (a - c) / (a - 2 * b + c)
    step = rpms[1] - rpms[0]
    return rpms[k] + shift * step, b - 0.25 * (a - c) * shift


def response_peak(amplitude_rpm, low, high, layout=None):
    """(rpm, amplitude [deg]) of the response's tensioner peak, every 10 rpm from ``low`` to
    ``high`` (anchors on the 250 rpm grid of ``belt-fmu response --rpm 500:...``): its
    amplitude as the sweep's, half the peak-to-peak."""
    peak = response(layout or load_layout(), np.arange(low, high + 1.0, 10.0), Excitation(RunSettings(
        irregularity_rpm=amplitude_rpm))).peak
    return peak.rpm, math.degrees(peak.arm_amplitude)


def finer():
    """The built-in drive on the belt the linear analyses discretize it with (twice the
    layout's 150 elements, ``linearization_layout``): every wrap holds three nodes or more.
    On the layout's own 150 elements the tensioner pulley's and idlers' wraps hold one or two,
    and the polygon's hub-load ripple shakes the arm's friction loose: under +-4 rpm that
    sweep peaks at 1696 rpm, 0.0668 deg (docs/modes.md, "Agreement with the time domain")."""
    from belt_fmu.analysis.linearization import linearization_layout

    return linearization_layout(load_layout())


@pytest.fixture(scope="module")
def large():
    """+-40 rpm of order 2, the sweep's default (measured on the finer belt: 2.062, 2.115,
    2.093 deg at 1200, 1300, 1400 rpm; with 26 speeds 500-3000 on the layout's own belt one
    broad peak, 2.08, 2.12, 2.09 deg)."""
    return sweep_peak(40.0, [1200.0, 1300.0, 1400.0], finer()), response_peak(40.0, 1250.0, 1500.0)


@pytest.fixture(scope="module")
def small():
    """+-4 rpm of order 2 (measured on the finer belt: 0.0553, 0.0579, 0.0496 deg at 1700,
    1800, 1900 rpm; the arm sticks elsewhere)."""
    return sweep_peak(4.0, [1700.0, 1800.0, 1900.0], finer()), response_peak(4.0, 1500.0, 2000.0)


def test_campbell_crossing_of_the_excited_arm_mode_is_near_the_swept_peak(large):
    """The Campbell diagram with its default options (the arm friction excited by the sweep's
    +-40 rpm): its order-2 crossing nearest the sweep's tensioner peak lies within 10 % of it
    (issue 37; measured 1386 rpm against 1321 rpm, +4.9 %). The arm mode is heavily damped
    there (60 %): listed and crossing, not dropped."""
    from belt_fmu.analysis.campbell import campbell

    (swept, _), _ = large
    result = campbell(load_layout(), [1200.0, 1300.0, 1400.0, 1500.0], [2.0], count=4, arm_friction="excited",
                      excitation=Excitation(RunSettings()))
    assert result.crossings, "no order-2 crossing between 1200 and 1500 rpm"
    nearest = min(result.crossings, key=lambda c: abs(c.rpm - swept))
    assert nearest.rpm == pytest.approx(swept, rel=0.10)
    assert nearest.damping_ratio > 0.25


def test_large_excitation_peak_amplitude(large):
    """The tensioner peak under +-40 rpm within 20 % of the sweep's (measured -2.8 %:
    2.058 deg against 2.116 deg; against the sweep on the layout's own belt, 2.121 deg, -3.0 %).
    The response's describing function takes the arm as sliding
    through every period, which it does at this amplitude (its friction adds 0.25 N m s/rad to
    the 1 N m s/rad damper)."""
    (_, swept), (_, predicted) = large
    assert predicted == pytest.approx(swept, rel=0.20)


def test_large_excitation_peak_speed(large):
    """The tensioner peak's speed under +-40 rpm within 5 % of the sweep's (measured 1320
    against 1321 rpm, -0.1 %; against the sweep on the layout's own belt, 1306 rpm, +1.1 %; the linear response asks the crank's wrap for more torque than
    it holds from 1150 rpm up, more the faster, and the time domain slips there: the response
    takes the wrap's limit)."""
    (swept, _), (predicted, _) = large
    assert predicted == pytest.approx(swept, rel=0.05)


def test_small_excitation_peak_speed(small):
    """Under +-4 rpm the arm sticks but near the resonance of the arm against the spans: the
    peak's speed within 5 % of the sweep's (issue 37; measured 1810 against 1774 rpm, +2.1 %;
    450 and 600 elements put the sweep's at 1788 and 1782 rpm). Against the sweep on the
    layout's own belt, whose polygon shakes the arm loose (:func:`finer`), 1696 rpm: +6.7 %."""
    (swept, _), (predicted, _) = small
    assert predicted == pytest.approx(swept, rel=0.05)


def test_small_excitation_peak_amplitude(small):
    """The tensioner peak under +-4 rpm within 10 % of the sweep's (issue 37; measured -6.5 %:
    0.0545 against 0.0583 deg; 450 and 600 elements put the sweep's at 0.0590 and 0.0568
    deg). The arm sticks for part of each period: half its peak-to-peak, the sweep's measure,
    is 15 % below its first harmonic (0.0643 deg). Near the stick threshold the arm's
    amplitude changes far faster than its free response: linearized on the layout's own
    150-element belt, whose wraps of one or two nodes the linear model's transport resolves
    coarsely, the response's first harmonic was 0.045 deg."""
    (_, swept), (_, predicted) = small
    assert predicted == pytest.approx(swept, rel=0.10)


@pytest.mark.parametrize("amplitude_rpm, swept, low, high", [
    (40.0, [1200.0, 1300.0, 1400.0], 1200.0, 1500.0),
    (4.0, [1700.0, 1800.0, 1900.0], 1700.0, 2000.0),
])
def test_lumped_response_predicts_the_lumped_sweep(amplitude_rpm, swept, low, high):
    """The lumped model's response (its own step linearized at every speed, the arm's friction
    by its harmonic balance) against the lumped model's sweep with the same excitation, order 2:
    the tensioner peak's speed within 5 % and its amplitude (half the peak-to-peak, as the
    sweep's) within 10 %, at +-40 rpm (the arm sliding through every period; measured 1300
    against 1291 rpm, +0.7 %, and 1.999 against 2.005 deg, -0.3 %) and at +-4 rpm (it sticks for
    part of each period; 1770 against 1792 rpm, -1.2 %, and 0.0316 against 0.0326 deg, -2.8 %).
    Over 500-3000 rpm the +-40 rpm amplitudes agree within 3.4 % of the largest at every 50
    rpm. The wraps' entry arcs, second order in the swing, are not in the linearization."""
    layout = lumped(load_layout())
    speed, amplitude = sweep_peak(amplitude_rpm, swept, layout)
    predicted_speed, predicted = response_peak(amplitude_rpm, low, high, layout)
    assert predicted_speed == pytest.approx(speed, rel=0.05)
    assert predicted == pytest.approx(amplitude, rel=0.10)


def test_lumped_sweep_follows_the_discretized_sweep():
    """The lumped model's sweep against the discretized model's on the built-in drive, +-40 rpm
    of order 2: the tensioner peak's speed within 5 % (measured 1291 against 1306 rpm, -1.2 %;
    without the wraps' drift and the belt bending frees at the spans' ends 1314 rpm, +0.6 %,
    and without the belt's inertia and the spans' string modes as well 1345 rpm, +3.1 %) and
    the amplitude within 15 % below the resonance (500 rpm: measured 0.445 against 0.402 deg,
    +10.6 %), at it (1200-1400 rpm: 2.005 against 2.121 deg at 1300 rpm, -5.5 %) and above it
    (3000 rpm: 0.355 against 0.353 deg, +0.6 %; without the wraps' drift and the bending +31
    %). Over 500-3000 rpm every 100 rpm within -7.0 to +10.6 % (docs/lumped-model.md, "The
    tensioner resonance on the built-in drive")."""
    settings = RunSettings(irregularity_rpm=40.0)
    rpms = [500.0, 1200.0, 1300.0, 1400.0, 3000.0]
    lumped_arm, discretized_arm = ([run_point(Run(rpm, settings, (), model))["tensioner_amplitude_deg"] for rpm in rpms]
                                   for model in (lumped(load_layout()), load_layout()))
    assert peak_of(rpms[1:4], lumped_arm[1:4])[0] == pytest.approx(peak_of(rpms[1:4], discretized_arm[1:4])[0],
                                                                   rel=0.05)
    for rpm, a, b in zip(rpms, lumped_arm, discretized_arm):
        assert a == pytest.approx(b, rel=0.15), f"{rpm} rpm"


def test_lumped_arm_follows_the_belt_model_above_the_arm_mode():
    """The arm's response to the crank's speed ripple at 100 and 150 Hz (1500 rpm, orders 4
    and 6, +-4 rpm; the arm's Coulomb friction replaced by a 1.5 N m s/rad damper, so both
    models are linear), the lumped model's linearized step against the belt model's
    linearization: within 15 %, the lumped level's agreement (measured +14 % and +12 %:
    0.0465 against 0.0407 deg, 0.0226 against 0.0202). It needs both the wraps' drift (the
    friction on a wrap sees the belt's mean speed over it, :func:`belt_fmu.model.lumped.
    predict_belt`) and the bending at the spans' ends (:func:`belt_fmu.model.lumped.
    bending_compliances`): without the drift +30 % at 100 Hz, without the bending +31 %,
    without either +49 %, which the +-40 rpm sweep met at 2600-3000 rpm (docs/lumped-model.md,
    "The tensioner resonance on the built-in drive")."""
    layout = load_layout()
    layout = dataclasses.replace(layout, tensioner=dataclasses.replace(
        layout.tensioner, friction_torque_Nm=0.0, friction_torque_return_Nm=0.0, damping_Nms_per_rad=1.5))
    for order in (4.0, 6.0):
        excitation = Excitation(RunSettings(irregularity_rpm=4.0, order=order))
        belt, level = (response(model, [1500.0], excitation).speeds[0].arm_amplitude
                       for model in (layout, lumped(layout)))
        assert level == pytest.approx(belt, rel=0.15), f"order {order}"


def test_lumped_campbell_crossing_is_near_the_lumped_sweep_peak():
    """The lumped model's Campbell diagram (its linearized step at each speed, the arm friction
    excited by the sweep's +-40 rpm): the order-2 crossing nearest the lumped sweep's tensioner
    peak within 10 % of it (measured 1275 against 1291 rpm, -1.2 %; the arm mode at 42.5 Hz,
    damped 63 %)."""
    from belt_fmu.analysis.campbell import campbell

    layout = lumped(load_layout())
    swept, _ = sweep_peak(40.0, [1200.0, 1300.0, 1400.0], layout)
    result = campbell(layout, [1100.0, 1200.0, 1300.0, 1400.0, 1500.0], [2.0], count=3, arm_friction="excited",
                      excitation=Excitation(RunSettings()))
    assert result.crossings, "no order-2 crossing between 1100 and 1500 rpm"
    nearest = min(result.crossings, key=lambda c: abs(c.rpm - swept))
    assert nearest.rpm == pytest.approx(swept, rel=0.10)
    assert nearest.damping_ratio > 0.25


def test_lumped_linearization_against_the_lumped_time_domain():
    """The lumped model's linearized step (what its response uses) against the lumped model
    itself, in the linear regime: a water-pump torque ripple of 3 N m at order 2, 1500 rpm
    (50 Hz), run for 1 s and the fundamental of each span's tension fitted over the last 10
    periods. Every span's tension amplitude within 2 % of the response's (measured within
    0.5 %: the step's linearization is the time domain's own; the arm sticks, as in the
    response)."""
    from belt_fmu.analysis.response import water_pump_torque
    from belt_fmu.model.lumped_system import LumpedDrive
    from belt_fmu.model.outputs import span_output_name, spans

    layout = lumped(load_layout())
    drive = LumpedDrive(layout)
    rpm, ripple, step = 1500.0, 3.0, 1e-4
    settings = RunSettings()
    predicted = response(layout, [rpm], Excitation(settings, "water_pump", ripple), drive=drive).speeds[0]
    pump = water_pump_torque(layout, rpm, Excitation(settings))
    omega = 2.0 * rpm * 2 * math.pi / 60.0
    t = np.arange(1, int(round(1.0 / step)) + 1) * step
    crank = np.full(t.size, rpm * 2 * math.pi / 60.0)
    drive.reset(crank[0], pump)
    table = np.empty((t.size, len(drive.output_names)))
    drive.advance_sampled(step, np.column_stack([crank, pump + ripple * np.sin(omega * (t - 0.5 * step))]), table)
    last = int(round(10 * 2 * math.pi / omega / step))
    names = [p.name for p in layout.pulleys]
    for k, (a, b) in enumerate(spans(names)):
        tension = table[-last:, drive.output_names.index(span_output_name("span_tension", a, b))]
        fitted = abs(2.0 * np.mean((tension - tension.mean()) * np.exp(-1j * omega * t[-last:])))
        assert predicted.span_tension[k] == pytest.approx(fitted, rel=0.02), f"span {a} -> {b}"


def test_lumped_resolvent_against_a_direct_solve():
    """The lumped step's frequency response from its one factorization (balanced, the core's
    Schur form) against ``(z I - A)^-1 b`` solved directly, at 500 rpm and frequencies from
    10 to 1000 Hz, for each input: states and outputs within 1e-7 of their largest (measured
    within 3e-9; a direct solve of ``z I - A``, of norm about 1e7, is itself good to about
    1e-9)."""
    from belt_fmu.analysis.lumped_linearization import Resolvent, linearize_lumped
    from belt_fmu.model.lumped_system import LumpedDrive

    drive = LumpedDrive(lumped(load_layout()))
    speed = 500.0 * 2 * math.pi / 60.0
    drive.reset(speed, 2.0)
    linear = linearize_lumped(drive, speed, 2.0)
    resolvent = Resolvent(linear)
    names = list(linear.inputs)
    for frequency in (10.0, 43.0, 170.0, 1000.0):
        omega = 2 * math.pi * frequency
        z = np.exp(1j * omega * linear.dt)
        states = np.linalg.solve(z * np.eye(len(linear.a)) - linear.a,
                                 np.column_stack([linear.inputs[name][0] for name in names]))
        for k, (name, (x, y)) in enumerate(zip(names, resolvent.respond(omega, *names))):
            expected_y = (linear.c @ states[:, k] + linear.inputs[name][1]) / z
            assert np.max(np.abs(x - states[:, k])) < 1e-7 * np.max(np.abs(states[:, k])), (frequency, name)
            assert np.max(np.abs(y - expected_y)) < 1e-7 * np.max(np.abs(expected_y)), (frequency, name)
        assert abs(resolvent.arm(omega, "arm_torque") - states[linear.arm, names.index("arm_torque")]) < \
            1e-7 * abs(states[linear.arm, names.index("arm_torque")])


def test_lumped_response_between_anchors_is_the_linearization_there():
    """The lumped response between two anchors (their linear responses interpolated, the arm's
    friction solved at the speed) against the step linearized at that speed itself: +-40 rpm
    of order 2 at 1375 rpm, midway between 1250 and 1500 rpm, near the tensioner peak; every
    amplitude within 2 % (measured: the arm 0.05 %, every output within 0.08 % of its largest)."""
    from belt_fmu.analysis.response import LumpedAnchor, water_pump_torque
    from belt_fmu.model.lumped_system import LumpedDrive

    layout = lumped(load_layout())
    drive = LumpedDrive(layout)
    excitation = Excitation(RunSettings())
    low, middle, high = (LumpedAnchor(drive, rpm, water_pump_torque(layout, rpm, excitation))
                         for rpm in (1250.0, 1375.0, 1500.0))
    blended, own = low.between(high, 0.5).respond(1375.0, excitation), middle.respond(1375.0, excitation)
    assert blended.arm_amplitude == pytest.approx(own.arm_amplitude, rel=0.02)
    for name in ("hub_force", "belt_torque", "span_tension"):
        got, expected = getattr(blended, name), getattr(own, name)
        assert np.max(np.abs(got - expected)) < 0.02 * np.max(np.abs(expected)), name


def test_a_lumped_linearization_again_differences_only_what_the_step_reads():
    """A drive linearized a second time (another speed) differences only the components its
    first linearization kept, and gives the bits of a linearization that differences them
    all; told to skip components the step reads, it sees them change the step and
    differences every one again (the same bits)."""
    from belt_fmu.analysis import lumped_linearization as ll
    from belt_fmu.model.lumped_system import LumpedDrive

    drive = LumpedDrive(lumped(load_layout()))
    calls = []
    stepper = drive.stepper

    def counting(interval):
        advance = stepper(interval)
        return lambda *args: calls.append(1) or advance(*args)

    drive.stepper = counting

    def linearize(rpm, candidates):
        speed = rpm * 2 * math.pi / 60.0
        drive.reset(speed, 2.0)
        if candidates is None:
            ll._LAST_KEPT.pop(drive, None)
        else:
            ll._LAST_KEPT[drive] = candidates
        calls.clear()
        return ll.linearize_lumped(drive, speed, 2.0), len(calls)

    first, _ = linearize(900.0, None)
    full, every = linearize(1700.0, None)
    again, fewer = linearize(1700.0, first.kept)
    size = drive.in_use.size
    assert every == 2 * size + 6 and fewer == 2 * first.kept.size + 2 + 6  # + the check, + the 3 inputs
    assert first.kept.size < 0.6 * size  # the built-in drive: 266 of 557
    assert np.array_equal(again.kept, full.kept) and np.array_equal(again.a, full.a)
    assert np.array_equal(again.c, full.c) and again.inputs.keys() == full.inputs.keys()
    missed, count = linearize(1700.0, first.kept[:-3])
    assert count == 2 * size + 2 + 6
    assert np.array_equal(missed.a, full.a) and np.array_equal(missed.kept, full.kept)


def test_lumped_modes_arm_mode_against_the_belt_model(capsys):
    """The lumped model's modes (its step linearized, the arm sliding): at 1400 rpm the lowest
    mode is the arm's, within 10 % of the discretized belt's arm mode (``belt-fmu modes``, its
    lowest; measured 37.91 against 39.66 Hz, -4.4 %, damped 48 and 47 %; the rotational
    reference of analysis/rotational.py, which leaves out the wraps' creep and drift, the
    spans' ends and the string modes: 41.74 Hz). The command line lists it; --plot, which draws
    the discretized belt, is a usage error."""
    from belt_fmu.analysis.lumped_linearization import linearize_lumped, natural_modes
    from belt_fmu.model.lumped_system import LumpedDrive

    layout = lumped(load_layout())
    drive = LumpedDrive(layout)
    speed = 1400.0 * 2 * math.pi / 60.0
    drive.reset(speed, 0.3)
    found = natural_modes(linearize_lumped(drive, speed, 0.3, "sliding"), drive, 3)
    belt = modes(operating_point(finer(), 1400.0, 0.3), count=1, arm_friction="sliding")
    assert belt.modes[0].classification == ROTATIONAL
    assert found[0].frequency == pytest.approx(belt.modes[0].frequency, rel=0.10)
    assert 0.25 < found[0].damping_ratio < 0.7  # heavily damped, as the sweep's broad peak
    assert main(["modes", "--model", "lumped", "--rpm", "1400", "--water-pump-torque", "0.3",
                 "--arm-friction", "sliding", "--count", "3"]) == 0
    first = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("1 "))
    assert float(first.split()[1]) == pytest.approx(found[0].frequency, rel=1e-3)
    assert main(["modes", "--model", "lumped", "--plot", "m.png"]) == EXIT_USAGE
    assert "discretized belt" in capsys.readouterr().err


def test_lumped_string_modes_are_the_belt_models_span_modes(capsys):
    """The built-in drive at 1400 rpm: the lumped model's string modes of the tensioner's two
    spans (:func:`belt_fmu.model.lumped.prepare_strings`) against the discretized belt's
    transverse modes of those spans (``belt-fmu modes``, named by where their energy is), within
    3 % (measured 210.7 against 213.7 Hz and 219.0 against 221.8 Hz, -1.4 and -1.3 %)."""
    found = {}
    for model in ("discretized", "lumped"):
        assert main(["modes", "--model", model, "--rpm", "1400", "--count", "9"]) == 0
        for line in capsys.readouterr().out.splitlines():
            for span in ("span crank_tensioner", "span tensioner_alternator1"):
                if line[:1].isdigit() and line.rstrip().endswith(span):
                    found[model, span] = float(line.split()[1])
    for span in ("span crank_tensioner", "span tensioner_alternator1"):
        assert found["lumped", span] == pytest.approx(found["discretized", span], rel=0.03)


def torque_driven(layout, crank_inertia):
    """``layout`` with its crank torque-driven, of inertia ``crank_inertia`` [kg m^2]."""
    pulleys = list(layout.pulleys)
    crank = layout.crank_index
    pulleys[crank] = dataclasses.replace(pulleys[crank], inertia_kgm2=crank_inertia)
    return dataclasses.replace(layout, pulleys=tuple(pulleys)).with_drive(crank_input="torque")


def test_a_heavy_torque_driven_crank_has_the_modes_of_a_speed_driven_one():
    """A torque-driven crank turns on its inertia; one of 1e4 kg m^2 hardly turns, so the
    drive's rotational modes are those with the crank's speed prescribed, within 1 % (the
    crank's own inertia moves a mode by (I_belt-side / I_crank), far below). Both at 800 rpm,
    arm stuck."""
    layout = load_layout()
    speed = modes(operating_point(layout, 800.0), 4, "stuck")
    heavy = modes(operating_point(torque_driven(layout, 1e4), 800.0), 4, "stuck")
    assert heavy.coordinates.shape[0] == speed.coordinates.shape[0] + 1
    expected = [m.frequency for m in speed.modes if m.classification == ROTATIONAL][:2]
    found = [m.frequency for m in heavy.modes if m.classification == ROTATIONAL][:2]
    assert found == pytest.approx(expected, rel=0.01)


def test_response_of_a_torque_driven_crank_to_its_engine_torque_ripple():
    """The engine torque ripple of a torque-driven crank of 1e4 kg m^2 at 800 rpm (order 2)
    turns it by T / (I w^2): the response's crank belt torque equals the one a speed-driven
    crank of that irregularity causes, within 2 %."""
    layout = load_layout()
    w = 2.0 * 800.0 * 2 * math.pi / 60.0
    inertia, torque = 1e4, 5e4
    irregularity = torque / (inertia * w) * 60.0 / (2 * math.pi)  # [rpm] the speed ripple it causes
    speed = response(layout, [800.0], Excitation(RunSettings(irregularity_rpm=irregularity)))
    heavy_layout = torque_driven(layout, inertia)
    crank = heavy_layout.pulleys[heavy_layout.crank_index].name
    heavy = response(heavy_layout, [800.0], Excitation(RunSettings(), crank, torque))
    j = layout.crank_index
    assert heavy.speeds[0].belt_torque[j] == pytest.approx(speed.speeds[0].belt_torque[j], rel=0.02)


@pytest.mark.parametrize("argv, message", [
    (["response", "--load-ripple", "nowhere:5"], "argument --load-ripple: 'nowhere:5': must be PULLEY:NM"),
    (["response", "--load-ripple", "alternator1:-1"], "a torque amplitude > 0"),
    (["response", "--load-ripple", "crank:5"], "speed-driven crank"),
    (["response", "--rpm", "0:100:3"], "argument --rpm"),
    (["response", "--plot", "x.gif"], "unknown figure format"),
    (["response", "--model", "lumped", "--load-ripple", "alternator1:2"], "load ripple on its water pump only"),
])
def test_bad_response_options_are_usage_errors(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == EXIT_USAGE
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_cli_on_a_torque_driven_drive(tmp_path, capsys):
    """A torque-driven crank (the built-in drive with crank_input = "torque" and 0.2 kg m^2):
    modes runs with the arm stuck by default and lists the crank among its coordinates;
    --arm-friction excited and a response without --load-ripple are usage errors naming why
    (the crank's speed is an output), and with the lumped model a layout error (it takes a
    speed-driven crank only); with the engine torque ripple the response runs."""
    from importlib.resources import files

    text = (files("belt_fmu") / "layouts" / "default.toml").read_text()
    text = text.replace('crank_rotation = "ccw"', 'crank_rotation = "ccw"\ncrank_input = "torque"', 1)
    text = text.replace("radius_m = 0.085", "radius_m = 0.085\ninertia_kgm2 = 0.2", 1)
    layout = tmp_path / "torque.toml"
    layout.write_text(text)
    assert main(["modes", str(layout), "--count", "2"]) == 0
    assert "tensioner arm friction stuck" in capsys.readouterr().out
    assert main(["modes", str(layout), "--arm-friction", "excited"]) == EXIT_USAGE
    assert "torque-driven" in capsys.readouterr().err
    assert main(["response", str(layout), "--rpm", "800"]) == EXIT_USAGE
    assert "--load-ripple" in capsys.readouterr().err
    assert main(["response", str(layout), "--model", "lumped", "--rpm", "800"]) == EXIT_LAYOUT
    assert 'must be "speed" with drive.model = "lumped"' in capsys.readouterr().err
    out = tmp_path / "r.csv"
    assert main(["response", str(layout), "--rpm", "800", "--load-ripple", "crank:50", "--out", str(out)]) == 0
    assert "tensioner peak" in capsys.readouterr().out and out.stat().st_size > 0
