"""The native loader's fast path (belt_fmu/fast_path.py, docs/native-hosts.md): with the lumped
model and with the discretized one, fmi2SetReal of the inputs, fmi2GetReal and fmi2DoStep are
answered in C on the slave's arrays, and the slave stays the authority over everything else.

Every test runs the same calls on an instance with the fast path (the default) and on one
without (``BELT_FMU_NATIVE_FAST_PATH=0``, the Python path) and asserts the same statuses, the
same messages and the same outputs and states bit for bit: both paths run the same compiled
kernel on the same values, so any difference at all is a bug (no tolerance). The loader logs
once per slave, at the debug level, when it answers a step natively; the tests check with it
that the fast path did run."""
import base64
import json
import math

import numpy as np
import pytest

from belt_fmu.cosim import FmuInstance
from belt_fmu.model import lumped
from belt_fmu.units import RPM

from conftest import status_of

SWITCH = "BELT_FMU_NATIVE_FAST_PATH"
STEP = 1e-3
ERROR, DISCARD = 3, 2
FAST_NOTE = "fast path: fmi2SetReal, fmi2GetReal and fmi2DoStep are answered natively"


def instance(fmu, monkeypatch, fast: bool, name: str) -> FmuInstance:
    """An instance of the session FMU with or without the fast path (the loader reads the
    switch at fmi2Instantiate), not yet initialized."""
    with monkeypatch.context() as m:
        if fast:
            m.delenv(SWITCH, raising=False)
        else:
            m.setenv(SWITCH, "0")
        return FmuInstance(fmu, instance_name=name)


def lumped_instance(fmu, monkeypatch, fast: bool, name: str, crank=800 * RPM, pump=2.0) -> FmuInstance:
    """An instance of the session FMU running the lumped model, with or without the fast path."""
    inst = instance(fmu, monkeypatch, fast, name)
    inst.initialize({"model": "lumped", "crank_speed": crank, "water_pump_torque": pump})
    return inst


def fast_notes(inst) -> int:
    return sum(FAST_NOTE in text for level, text in inst.messages if level == "OK")


def problems(inst) -> list[tuple[str, str]]:
    return [(level, text) for level, text in inst.messages if level != "OK"]


@pytest.fixture
def pair(fmu, monkeypatch):
    """(fast, python): two lumped instances at 800 rpm and 2 N m."""
    made = [lumped_instance(fmu, monkeypatch, True, "fast"), lumped_instance(fmu, monkeypatch, False, "python")]
    yield made
    for inst in made:
        inst.close()


def everything(inst) -> list[str]:
    return [v.name for v in inst.description.modelVariables if v.causality in ("output", "input")]


def step_size(k: int) -> float:
    """Communication steps of 1 ms, with some of 2.7 ms and 0.1 ms (other internal step counts)."""
    return 2.7e-3 if k % 7 == 3 else 1e-4 if k % 11 == 5 else STEP


def test_fast_and_python_paths_give_the_same_outputs_and_states_bit_for_bit(fmu, monkeypatch):
    """Two operating points, each on both paths, stepped in turns (four instances in one
    process, each with its own block): 300 steps with a varying crank speed, all outputs and
    inputs read after every step, then the serialized states; a state saved on the fast path
    continues on the Python path exactly as on the fast path."""
    points = {"idle": (800 * RPM, 2.0), "high": (3000 * RPM, 8.0)}
    runs = {(point, fast): lumped_instance(fmu, monkeypatch, fast, f"{point}-{fast}", *points[point])
            for point in points for fast in (True, False)}
    try:
        names = everything(runs["idle", True])
        values = {key: [] for key in runs}
        for k in range(300):
            for (point, fast), inst in runs.items():
                crank, pump = points[point]
                inst.set({"crank_speed": crank * (1.0 + 0.05 * math.sin(0.05 * k)), "water_pump_torque": pump})
                inst.step(step_size(k))
                values[point, fast].append(inst.get(names))
        for point in points:
            assert np.array_equal(values[point, True], values[point, False])
            assert np.all(np.isfinite(values[point, True]))
        assert not np.array_equal(values["idle", True], values["high", True])
        for (point, fast), inst in runs.items():
            assert fast_notes(inst) == (1 if fast else 0)
            assert problems(inst) == []
        states = {key: inst.serialize_state(inst.get_state()) for key, inst in runs.items()}
        for point in points:
            assert states[point, True] == states[point, False]

        fast, python = runs["idle", True], runs["idle", False]
        state = python.deserialize_state(states["idle", True], fast.time)
        python.set_state(state)
        python.free_state(state)
        for inst in (fast, python):
            for _ in range(50):
                inst.step(STEP)
        assert fast.get(names) == python.get(names)
    finally:
        for inst in runs.values():
            inst.close()


def test_refused_calls_reach_the_slave_and_change_nothing(pair):
    """With the fast path serving the steps: an input out of range, not finite, or set with
    an output; a step from another time, of zero, negative or non-finite length: fmi2Error
    with the slave's own message, nothing applied; the steps after go on as on the Python
    path."""
    def scenario(inst):
        crank, pump, torque = (inst.variables[n].valueReference for n in ("crank_speed", "water_pump_torque",
                                                                         "crank_torque"))
        inst.step(STEP)
        inst.set({"crank_speed": 900 * RPM})
        inst.step(STEP)
        statuses = [
            status_of(lambda: inst.fmu.setReal([crank], [2000.0])),
            status_of(lambda: inst.fmu.setReal([pump, crank], [3.0, math.nan])),
            status_of(lambda: inst.fmu.setReal([crank], [math.inf])),
            status_of(lambda: inst.fmu.setReal([pump, torque], [3.0, 1.0])),
            status_of(lambda: inst.fmu.doStep(inst.time + 0.5, STEP)),
            status_of(lambda: inst.fmu.doStep(inst.time, 0.0)),
            status_of(lambda: inst.fmu.doStep(inst.time, -STEP)),
            status_of(lambda: inst.fmu.doStep(inst.time, math.nan)),
            status_of(lambda: inst.fmu.doStep(math.inf, STEP)),
        ]
        after_refusals = inst.get(everything(inst))
        for _ in range(20):
            inst.step(STEP)
        return statuses, after_refusals, inst.get(everything(inst))

    fast, python = pair
    got, expected = scenario(fast), scenario(python)
    assert got[0] == [ERROR] * 9
    assert got == expected
    assert problems(fast) == problems(python)
    assert [text for level, text in problems(fast)][:2] == [
        "fmi2SetReal: crank_speed = 2000.0 rad/s is not allowed; it must be a finite number in [0, 1500] rad/s",
        "fmi2SetReal: crank_speed = nan rad/s is not allowed; it must be a finite number in [0, 1500] rad/s"]
    assert fast.get(["water_pump_torque"]) == [2.0]  # the refused calls set nothing
    assert fast_notes(fast) == 1


def corrupted(inst, state) -> object:
    """A state of ``inst`` whose model has a span without belt (finite values, so the slave
    accepts it; the model's health check fails on the first step: belt_fmu.model.lumped.health)."""
    data = json.loads(inst.serialize_state(state))
    values = np.frombuffer(base64.b64decode(data["drive"]), dtype=np.float64).copy()
    content = 1 + lumped.LUMPED_STATE.fields["content"][1] // 8  # after the time: the first span's
    values[content] = -0.01
    data["drive"] = base64.b64encode(values.tobytes()).decode()
    return inst.deserialize_state(json.dumps(data).encode(), state[1])


def test_divergence_is_a_discard_then_errors_until_a_state_is_restored(pair):
    """A step that diverges on the fast path is taken again by the slave (the loader restores
    the model's arrays): fmi2Discard with the slave's message, then fmi2Error for steps and
    outputs, until a saved state is restored; then the fast path serves again. The same
    statuses, messages and outputs as on the Python path."""
    def scenario(inst):
        for _ in range(5):
            inst.step(STEP)
        good = inst.get_state()
        bad = corrupted(inst, good)
        inst.set_state(bad)
        inst.free_state(bad)
        statuses = [status_of(lambda: inst.fmu.doStep(inst.time, STEP)),
                    inst.fmu.getRealStatus(2),  # fmi2LastSuccessfulTime: the start of the step
                    status_of(lambda: inst.fmu.doStep(inst.time, STEP)),
                    status_of(lambda: inst.get(["crank_torque"]))]
        diverged = inst.get_state()  # the model as the diverged step left it: stepped once, not twice
        statuses.append(inst.serialize_state(diverged))
        inst.free_state(diverged)
        inst.set_state(good)
        inst.free_state(good)
        for _ in range(5):
            inst.step(STEP)
        return statuses, inst.get(everything(inst))

    fast, python = pair
    got, expected = scenario(fast), scenario(python)
    assert got[0][:4] == [DISCARD, pytest.approx(5 * STEP, abs=1e-15), ERROR, ERROR]
    assert got == expected
    assert problems(fast) == problems(python)
    assert any(level == "DISCARD" and "discarded: integration of the lumped model diverged" in text
               for level, text in problems(fast))
    assert fast_notes(fast) == 1


def test_reset_then_a_new_start_runs_on_the_fast_path_again(pair):
    """fmi2Reset makes a new slave (PythonFMU): the loader drops the old block and reads the
    new one; after a new initialization at other inputs the steps are the Python path's."""
    def scenario(inst):
        for _ in range(10):
            inst.step(STEP)
        inst.fmu.reset()
        inst.initialize({"model": "lumped", "crank_speed": 1500 * RPM, "water_pump_torque": 4.0})
        for _ in range(10):
            inst.step(STEP)
        return inst.get(everything(inst))

    fast, python = pair
    assert scenario(fast) == scenario(python)
    assert problems(fast) == problems(python) == []
    assert fast_notes(fast) == 2  # once per slave


def test_the_exchange_variable_is_internal(fmu):
    """The exchange variable is internal: documented so, never settable."""
    inst = FmuInstance(fmu, instance_name="exchange")
    try:
        variable = inst.variables["_native_fast_path"]
        assert variable.causality == "local" and variable.description.startswith("internal:")
        assert status_of(lambda: inst.fmu.setString([variable.valueReference], ["0"])) == ERROR
    finally:
        inst.close()


# ------------------------------------------------------------------ the discretized model
DISCRETIZED_STEP = 1e-4


def discretized_instance(fmu, monkeypatch, fast: bool, name: str) -> FmuInstance:
    """An instance of the session FMU running the discretized model (its default) at the
    start values, 800 rpm and 2 N m, with or without the fast path."""
    inst = instance(fmu, monkeypatch, fast, name)
    inst.initialize({})
    return inst


@pytest.fixture
def discretized_pair(fmu, monkeypatch):
    """(fast, python): two discretized instances at 800 rpm and 2 N m."""
    made = [discretized_instance(fmu, monkeypatch, True, "fast"),
            discretized_instance(fmu, monkeypatch, False, "python")]
    yield made
    for inst in made:
        inst.close()


def discretized_step(k: int) -> float:
    """Communication steps of 1e-4 s (5 internal steps), with some of 2.7e-4 s (14 steps) and
    of 1e-9 s (a step too short for the outputs' trial step: it takes the nominal step)."""
    return 2.7e-4 if k % 9 == 4 else 1e-9 if k % 23 == 11 else DISCRETIZED_STEP


def test_discretized_fast_and_python_paths_give_the_same_outputs_and_states_bit_for_bit(discretized_pair):
    """The discretized model, about 0.02 s: the crank speed varies at every step and the pump
    torque now and then; all outputs and inputs read after most steps but not all (the
    outputs' trial step then is, or is not, the next step's first: integrator.communicate),
    some steps repeated with the inputs unchanged; a state saved, serialized, the run
    continued, and the state restored and the run continued again. Outputs and serialized
    states equal bit for bit on both paths (no tolerance: the same compiled kernels on the
    same values), and the fast one did answer the steps. The outputs differ from read to
    read, except those of the restored state, which equal those read when it was saved
    (the state holds the inputs; its neighbour lists are rebuilt)."""
    def scenario(inst):
        names = everything(inst)
        values = []
        saved = None
        for k in range(160):
            if k % 5 != 2:  # some steps at the inputs of the step before
                inst.set({"crank_speed": 800 * RPM * (1.0 + 0.05 * math.sin(0.2 * k)),
                          "water_pump_torque": 2.0 + (k // 40)})
            inst.step(discretized_step(k))
            if k % 4 != 1:
                values.append(inst.get(names))
            if k == 60:
                saved = inst.get_state()
                values.append(inst.serialize_state(saved))
            if k == 100:
                inst.set_state(saved)
                inst.free_state(saved)
                values.append(("restored", inst.get(names)))
        state = inst.get_state()
        values.append(inst.serialize_state(state))
        inst.free_state(state)
        return values

    fast, python = discretized_pair
    got, expected = scenario(fast), scenario(python)
    assert got == expected
    outputs = [row for row in got if isinstance(row, list)]
    assert np.all(np.isfinite(outputs)) and len({tuple(row) for row in outputs}) == len(outputs)
    restored = next(row for row in got if isinstance(row, tuple))[1]
    at_save = got[next(i for i, row in enumerate(got) if isinstance(row, bytes)) - 1]
    assert restored == at_save
    assert fast_notes(fast) == 1 and fast_notes(python) == 0
    assert problems(fast) == problems(python) == []


def test_a_failing_discretized_step_is_taken_again_by_the_slave(discretized_pair):
    """A pump torque of -100 N m drives the water pump faster than the belt can hold it back
    (the runaway is found after about 10 steps): the compiled step reports it
    (integrator.runaway), the
    loader restores the arrays the step changed and hands it to the slave, which takes it
    again: fmi2Discard with the slave's message, then fmi2Error, until a saved state is
    restored; then the fast path serves again. Statuses, messages, the diverged state and the
    outputs after the restore equal the Python path's bit for bit."""
    def scenario(inst):
        good = inst.get_state()
        inst.set({"water_pump_torque": -100.0})
        statuses = []
        for _ in range(200):
            status = status_of(lambda: inst.fmu.doStep(inst.time, DISCRETIZED_STEP))
            statuses.append(status)
            if status != 0:
                break
            inst.time += DISCRETIZED_STEP
        statuses.append(status_of(lambda: inst.fmu.doStep(inst.time, DISCRETIZED_STEP)))
        diverged = inst.get_state()
        statuses.append(inst.serialize_state(diverged))
        inst.free_state(diverged)
        inst.set_state(good)
        inst.free_state(good)
        inst.set({"water_pump_torque": 2.0})
        for _ in range(5):
            inst.step(DISCRETIZED_STEP)
        return statuses, inst.get(everything(inst))

    fast, python = discretized_pair
    got, expected = scenario(fast), scenario(python)
    assert got[0][-3:-1] == [DISCARD, ERROR] and len(got[0]) > 5 and set(got[0][:-3]) == {0}
    assert got == expected
    assert problems(fast) == problems(python)
    assert any(level == "DISCARD" and "water_pump ran away" in text for level, text in problems(fast))
    assert fast_notes(fast) == 1


def test_a_drive_with_torque_inputs_has_no_native_step():
    """The compiled step takes crank_speed and water_pump_torque only: a drive with a pulley
    input torque (its FMU then stays on the Python path) has no native step."""
    from belt_fmu.layout import load_layout, load_layout_data
    from belt_fmu.model.system import BeltDrive

    data = load_layout().to_data()
    pulley = data["pulleys"][2]
    pulley["load"] = "input"
    pulley.pop("torque_table_speed_rad_per_s", None)
    pulley.pop("torque_table_Nm", None)
    drive = BeltDrive(load_layout_data(data))
    with pytest.raises(ValueError, match="the native step takes crank_speed and water_pump_torque"):
        drive.native_step()


def test_instances_stepped_in_parallel_threads_each_give_their_own_run(fmu, monkeypatch):
    """fmpy releases the GIL in its calls and the fast path needs none: two instances stepped
    at once in two threads (different inputs) give exactly what each gives on the Python path
    alone; the exchange variable reads as the block's address (hexadecimal) in both."""
    from concurrent.futures import ThreadPoolExecutor

    points = ((800 * RPM, 2.0), (2000 * RPM, 6.0))

    def run(inst, point):
        crank, pump = point
        for k in range(400):
            inst.set({"crank_speed": crank * (1.0 + 0.05 * math.sin(0.03 * k)), "water_pump_torque": pump})
            inst.step(STEP)
        return inst.get(everything(inst))

    fast = [lumped_instance(fmu, monkeypatch, True, f"thread{k}", *point) for k, point in enumerate(points)]
    python = [lumped_instance(fmu, monkeypatch, False, f"alone{k}", *point) for k, point in enumerate(points)]
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            threaded = list(pool.map(run, fast, points))
        alone = [run(inst, point) for inst, point in zip(python, points)]
        assert threaded == alone
        assert threaded[0] != threaded[1]
        for inst in fast:
            assert fast_notes(inst) == 1 and problems(inst) == []
            text = inst.fmu.getString([inst.variables["_native_fast_path"].valueReference])[0]
            assert int(text, 16) > 0
    finally:
        for inst in fast + python:
            inst.close()
