"""The FMU's FMI status contract, driven by fmpy in this process: every call a host can get
wrong returns fmi2Error with a message naming the call, the variable and what is allowed,
changes nothing, and never crashes the host; a model that cannot start or that diverges says
so with fmi2Error / fmi2Discard; the instance can always be terminated, reset and freed.
(The contract is in the docstring of belt_fmu/slave.py; the native loader maps the slave's
logged errors to status codes.)"""
import base64
import json
import math
import sys

import numpy as np
import pytest

from belt_fmu.cosim import FmuInstance
from belt_fmu.units import RPM

from conftest import status_of

STEP = 1e-4
CRANK = 800 * RPM
PUMP = 2.0
ERROR, DISCARD = 3, 2


def errors(instance) -> list[str]:
    return [text for level, text in instance.messages if level == "ERROR"]


@pytest.fixture
def started(fmu):
    """An instance initialized at 800 rpm and 2 N m."""
    inst = FmuInstance(fmu, instance_name="started")
    inst.initialize({"crank_speed": CRANK, "water_pump_torque": PUMP})
    yield inst
    inst.close()


@pytest.fixture
def fresh(fmu):
    """An instance in initialization mode."""
    inst = FmuInstance(fmu, instance_name="fresh")
    inst.fmu.setupExperiment(startTime=0.0)
    inst.fmu.enterInitializationMode()
    yield inst
    inst.close()


def vr(instance, name):
    return instance.variables[name].valueReference


def test_reading_every_real_variable_at_once_gives_inputs_parameters_and_outputs(started):
    """What a host recording every variable reads at every step (libcosim's observers): one
    fmi2GetReal of all Real variables gives the inputs as set, the parameters' start values
    from the layout and the outputs as read alone."""
    from belt_fmu.slave import PARAMETERS

    started.step(STEP)
    reals = [v.name for v in started.description.modelVariables if v.type == "Real"]
    values = dict(zip(reals, started.get(reals)))
    assert values["crank_speed"] == CRANK and values["water_pump_torque"] == PUMP
    for p in PARAMETERS:
        if p.name in values:
            assert values[p.name] == started.layout_data[p.table][p.key], p.name
    outputs = started.names("output")
    assert [values[name] for name in outputs] == started.get(outputs)
    assert not errors(started)


def test_unknown_value_reference_is_an_error_every_time(started):
    """Repeated bad calls used to kill the host (PythonFMU freed the raising slave twice)."""
    for _ in range(10):
        assert status_of(lambda: started.fmu.getReal([9999])) == ERROR
    assert "fmi2GetReal: value reference 9999 is not a variable of this FMU" in errors(started)
    assert status_of(lambda: started.fmu.getInteger([vr(started, "crank_torque")])) == ERROR
    assert any(e.startswith("fmi2GetInteger: crank_torque (value reference") and e.endswith(
        "is a Real variable; use fmi2GetReal") for e in errors(started)), errors(started)
    started.step(STEP)  # the instance carries on


def test_setting_an_output_is_an_error_and_changes_nothing(started):
    before = started.get(["crank_torque"])
    for _ in range(10):
        assert status_of(lambda: started.fmu.setReal([vr(started, "crank_torque")], [1.0])) == ERROR
    assert "fmi2SetReal: crank_torque is an output; only inputs and parameters can be set" in errors(started)
    assert started.get(["crank_torque"]) == before
    started.step(STEP)


@pytest.mark.parametrize("name, value, message", [
    ("crank_speed", math.nan, "crank_speed = nan rad/s is not allowed; it must be a finite number in [0, 1500] rad/s"),
    ("crank_speed", -10.0, "crank_speed = -10.0 rad/s is not allowed"),
    ("crank_speed", 1.0e5, "crank_speed = 100000.0 rad/s is not allowed"),
    ("water_pump_torque", math.inf, "water_pump_torque = inf N.m is not allowed; it must be a finite number in "
                                    "[-1000, 1000] N.m"),
])
def test_bad_input_is_an_error_and_the_last_good_value_stays(started, name, value, message):
    started.set({name: CRANK if name == "crank_speed" else PUMP})
    assert status_of(lambda: started.fmu.setReal([vr(started, name)], [value])) == ERROR
    assert f"fmi2SetReal: {message}" in " ".join(errors(started))
    started.step(STEP)  # with the value before the refused one
    assert started.get([name])[0] == (CRANK if name == "crank_speed" else PUMP)


def test_nan_input_in_initialization_mode_is_refused_and_initialization_succeeds(fresh):
    """Used to: exit OK, outputs 0.0, every step discarded even after the input was corrected."""
    assert status_of(lambda: fresh.fmu.setReal([vr(fresh, "crank_speed")], [math.nan])) == ERROR
    fresh.fmu.exitInitializationMode()
    assert fresh.get(["crank_speed"])[0] == pytest.approx(CRANK)  # the start value stayed
    assert fresh.get(["water_pump_speed"])[0] > 100.0  # a running drive, not zeros
    fresh.step(STEP)


@pytest.mark.parametrize("name, value, message", [
    ("n_elements", 5, "n_elements = 5 must be an integer in [12, 2000] (layout belt.n_elements)"),
    ("n_elements", 20, "n_elements = 20 would make an invalid drive: "),
    ("friction_law", "bogus", "friction_law = 'bogus' must be one of 'creep_polynomial'"),
    ("belt_pretension", -1.0, "belt_pretension = -1.0 must be > 0 (layout belt.pretension_N)"),
    ("belt_pretension", math.nan, "belt_pretension = nan must be a finite number > 0"),
    ("friction_mu", 1e30, "friction_mu = 1e+30 must be in (0, 5] (layout friction.mu)"),
    ("tensioner_spring_rate", 1e-9,
     "tensioner_spring_rate = 1e-09 must be in [0.1, 100000] (layout tensioner.spring_rate_Nm_per_rad)"),
    ("tensioner_preload", 1e30, "tensioner_preload = 1e+30 must be in (0, 1000] (layout tensioner.preload_Nm)"),
    ("tensioner_friction_torque", 1e30,
     "tensioner_friction_torque = 1e+30 must be in [0, 1000] (layout tensioner.friction_torque_Nm)"),
])
def test_bad_parameter_is_refused_when_set(fresh, name, value, message):
    """Refused at once, naming the value, the parameter, its layout field and what is
    allowed; initialization then goes on with the value before."""
    before = fresh.fmu.getInteger([vr(fresh, name)]) if name == "n_elements" else None
    kind = fresh.variables[name].type
    setter = {"Real": fresh.fmu.setReal, "Integer": fresh.fmu.setInteger, "String": fresh.fmu.setString}[kind]
    assert status_of(lambda: setter([vr(fresh, name)], [value])) == ERROR
    assert any(message in e for e in errors(fresh)), errors(fresh)
    fresh.fmu.exitInitializationMode()
    if before is not None:
        assert fresh.fmu.getInteger([vr(fresh, name)]) == before
    fresh.step(STEP)


def test_failed_initialization_is_an_error_and_so_is_every_later_call(fresh):
    """A preload the layout rules allow but no running state can balance: fmi2Error from
    fmi2ExitInitializationMode with the reason, then errors (never silent zeros) until reset."""
    fresh.set({"tensioner_preload": 500.0})
    assert status_of(fresh.fmu.exitInitializationMode) == ERROR
    assert any(e.startswith("fmi2ExitInitializationMode: the model did not initialize: node placement failed")
               for e in errors(fresh)), errors(fresh)
    assert status_of(lambda: fresh.get(["crank_torque"])) == ERROR
    assert status_of(lambda: fresh.step(STEP)) == ERROR
    assert any(e.startswith("fmi2DoStep(t = 0 s, h = 0.0001 s) refused: the model did not initialize")
               for e in errors(fresh))
    fresh.fmu.terminate()
    fresh.fmu.reset()  # back to the instantiated state with the FMU's start values
    fresh.initialize({"crank_speed": CRANK})
    assert fresh.get(["tensioner_preload"])[0] == pytest.approx(fresh.layout_data["tensioner"]["preload_Nm"])
    fresh.step(STEP)


def test_fixed_parameter_after_initialization_is_refused(started):
    """Used to return OK and read back 1.0 while the model kept 450 N."""
    assert status_of(lambda: started.set({"belt_pretension": 1.0})) == ERROR
    assert any(e.startswith("fmi2SetReal: belt_pretension is a fixed parameter; set it before "
                            "fmi2ExitInitializationMode") for e in errors(started))
    assert started.get(["belt_pretension"]) == [450.0]


def serialized_state(instance):
    state = instance.get_state()
    data = json.loads(instance.serialize_state(state).decode())
    instance.free_state(state)
    return data


def restore_status(instance, data) -> int:
    """Deserialize ``data`` (a state as JSON) and restore it; the status of the restore."""
    state = instance.deserialize_state(json.dumps(data).encode(), instance.time)
    try:
        return status_of(lambda: instance.set_state(state))
    finally:
        instance.free_state(state)


def test_state_with_a_bad_parameter_is_refused_before_anything_is_applied(started):
    """Used to be fmi2Fatal after the inputs and parameters were already applied."""
    started.step(STEP)
    data = serialized_state(started)
    data["parameters"]["n_elements"] = 5
    data["inputs"]["crank_speed"] = 2 * CRANK
    outputs = started.names("output")
    before = started.get(outputs)
    assert restore_status(started, data) == ERROR
    assert any(e.startswith("fmi2SetFMUstate: the state's parameter n_elements = 5 must be an integer in [12, 2000]")
               for e in errors(started)), errors(started)
    assert started.get(outputs) == before
    assert started.get(["crank_speed"])[0] == pytest.approx(CRANK)


def test_state_full_of_nan_is_refused(started):
    """Used to be accepted, after which outputs read NaN."""
    started.step(STEP)
    data = serialized_state(started)
    size = len(base64.b64decode(data["drive"])) // 8
    data["drive"] = base64.b64encode(np.full(size, np.nan).tobytes()).decode()
    assert restore_status(started, data) == ERROR
    assert "fmi2SetFMUstate: the state's model data holds non-finite values; nothing was changed" in errors(started)
    assert all(math.isfinite(v) for v in started.get(started.names("output")))
    started.step(STEP)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "other_json"])
def test_deserializing_damaged_bytes_is_refused(started, damage):
    """Used to raise in the slave: fmi2Fatal, and the 2nd to 4th such call killed the host."""
    state = started.get_state()
    blob = started.serialize_state(state)
    started.free_state(state)
    bad = {"truncated": blob[: len(blob) // 2], "garbage": bytes(range(256)) * 4, "empty": b"",
           "other_json": b'{"a": 1}'}[damage]
    for _ in range(5):
        assert status_of(lambda: started.deserialize_state(bad, 0.0)) == ERROR
    assert any(e.startswith("fmi2DeSerializeFMUstate: the bytes are not a state of this FMU")
               for e in errors(started)), errors(started)
    started.step(STEP)


def test_communication_point_must_be_the_fmus_time(started):
    started.step(STEP)
    assert status_of(lambda: started.fmu.doStep(currentCommunicationPoint=0.5, communicationStepSize=STEP)) == ERROR
    assert any(e.startswith("fmi2DoStep(t = 0.5 s, h = 0.0001 s) refused: the FMU is at t = 0.0001 s")
               for e in errors(started))
    for h in (0.0, -STEP, math.nan):
        assert status_of(lambda: started.fmu.doStep(currentCommunicationPoint=STEP, communicationStepSize=h)) == ERROR
    assert any("the communication step must be a finite time > 0 s" in e for e in errors(started))
    started.step(STEP)  # from 0.0001 s: accepted


@pytest.mark.parametrize("tiny", [1e-12, 1e-300])
def test_outputs_do_not_depend_on_the_length_of_the_last_step(fmu, tiny):
    """Used to: a communication step of 1e-12 s after a full one moved the tensioner's hub
    force by 4.8 % and the bearing force from 213.5 to 204.7 N (h = 1e-300: crank torque -0),
    because the forces read were those of the last internal step, whatever its length. Now
    the outputs are a function of the state and the inputs: 1e-12 s later they may differ by
    what the drive does in 1e-12 s (contact forces ripple by up to ~2 N per us here, so
    ~2e-6 N), which 1e-7 relative (1e-4 N on a 1 kN hub force) bounds with a wide margin.
    Averaged outputs (the default) are each output's mean over the last step: over a tiny
    one, the instantaneous value a sampling instance gives after the same full step."""
    sampled, averaged = (FmuInstance(fmu, instance_name=mode) for mode in ("sample", "average"))
    try:
        for inst, mode in ((sampled, "sample"), (averaged, "average")):
            inst.initialize({"crank_speed": CRANK, "water_pump_torque": PUMP, "output_mode": mode})
        outputs = sampled.names("output")
        state = sampled.get_state()
        sampled.step(STEP)
        plain = sampled.get(outputs)
        sampled.set_state(state)
        sampled.step(STEP)
        sampled.fmu.doStep(currentCommunicationPoint=sampled.time, communicationStepSize=tiny)
        assert sampled.get(outputs) == pytest.approx(plain, rel=1e-7, abs=1e-6)
        sampled.free_state(state)
        averaged.step(STEP)
        assert averaged.get(outputs) != pytest.approx(plain, rel=1e-3)  # the mean over 0.1 ms
        averaged.fmu.doStep(currentCommunicationPoint=averaged.time, communicationStepSize=tiny)
        assert averaged.get(outputs) == pytest.approx(plain, rel=1e-7, abs=1e-6)
    finally:
        sampled.close()
        averaged.close()


def test_start_time_of_the_experiment_is_the_fmus_time(fmu):
    inst = FmuInstance(fmu, instance_name="late")
    try:
        inst.initialize({"crank_speed": CRANK}, start_time=10.0)
        inst.step(STEP)  # from t = 10 s
        assert status_of(lambda: inst.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=STEP)) == ERROR
    finally:
        inst.close()


def model_module(name):
    """The FMU's model module ``name`` (``model.system``, ...): the FMU runs this process's
    package, the same code (belt_fmu/build/slave_script.py)."""
    return sys.modules[f"belt_fmu.{name}"]


@pytest.fixture
def started_in_python(fmu, monkeypatch):
    """As ``started``, without the native loader's fast path (BELT_FMU_NATIVE_FAST_PATH=0):
    every step goes through the Python slave (test_fast_path.py: both paths agree)."""
    with monkeypatch.context() as m:
        m.setenv("BELT_FMU_NATIVE_FAST_PATH", "0")
        inst = FmuInstance(fmu, instance_name="started")
    inst.initialize({"crank_speed": CRANK, "water_pump_torque": PUMP})
    yield inst
    inst.close()


def test_divergence_is_a_discard_then_errors_until_a_state_is_restored(started_in_python, monkeypatch):
    """The model's divergence detection (test_model.py) reaches the host as fmi2Discard with
    the model's message; the diverged state cannot be stepped on, a saved one can. (The
    divergence is made by replacing BeltDrive.advance in Python, so the steps must go
    through Python; a divergence on the fast path: test_fast_path.py.)"""
    started = started_in_python
    saved = started.get_state()
    system = model_module("model.system")
    advance = system.BeltDrive.advance

    def diverge(self, interval, crank, torque):
        raise system.DivergenceError("integration diverged at t = 0.0001 s: non-finite state values")

    monkeypatch.setattr(system.BeltDrive, "advance", diverge)
    assert status_of(lambda: started.fmu.doStep(0.0, STEP)) == DISCARD
    assert any(level == "DISCARD" and "discarded: integration diverged" in text for level, text in started.messages)
    monkeypatch.setattr(system.BeltDrive, "advance", advance)
    assert status_of(lambda: started.fmu.doStep(0.0, STEP)) == ERROR
    assert status_of(lambda: started.get(["crank_torque"])) == ERROR
    started.set_state(saved)
    started.free_state(saved)
    started.step(STEP)
    assert math.isfinite(started.get(["crank_torque"])[0])


def test_a_drive_that_diverges_while_starting_fails_initialization(fmu, monkeypatch):
    inst = FmuInstance(fmu, instance_name="torn")
    system = model_module("model.system")

    def diverge(self, crank, torque, settle_time=None):
        raise system.DivergenceError("integration diverged at t = 0.01 s: an element stretched beyond 25 %")

    monkeypatch.setattr(system.BeltDrive, "reset", diverge)
    try:
        assert status_of(lambda: inst.initialize({"crank_speed": CRANK})) == ERROR
        assert any("the model did not initialize: integration diverged at t = 0.01 s: an element stretched beyond "
                   "25 %" in e for e in errors(inst)), inst.messages
        assert status_of(lambda: inst.step(STEP)) == ERROR
    finally:
        inst.close()


def test_calls_in_the_wrong_state_are_errors(fmu):
    inst = FmuInstance(fmu, instance_name="early")
    try:
        assert status_of(lambda: inst.get(["crank_torque"])) == ERROR  # before initialization
        assert any("output crank_torque is available from initialization mode on" in e for e in errors(inst))
        assert status_of(lambda: inst.fmu.doStep(0.0, STEP)) == ERROR
        assert status_of(inst.fmu.exitInitializationMode) == ERROR  # not entered
    finally:
        inst.close()
