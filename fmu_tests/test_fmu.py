"""The built FMU, driven by fmpy in this process: validation, equality with the Python model,
physics through the FMU, state, instances. The FMI status contract (refused calls, failed
initialization, divergence) is in test_fmu_status.py, native hosts in test_native_host.py.
"""
import sys
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest
from fmpy.validation import validate_fmu

from belt_fmu import BeltDrive
from belt_fmu.cosim import FmuInstance, cosimulate
from belt_fmu.layout import load_layout_data
from belt_fmu.model.geometry import BeltPath
from belt_fmu.simulation import RPM

STEP = 1e-4
CRANK = 800 * RPM
PUMP = 2.0


@pytest.fixture
def instance(fmu):
    inst = FmuInstance(fmu)
    yield inst
    inst.close()


def test_fmu_passes_fmpy_validate_with_units_and_descriptions(fmu):
    assert validate_fmu(str(fmu)) == []
    root = ET.fromstring(zipfile.ZipFile(fmu).read("modelDescription.xml"))
    units = {u.get("name") for u in root.iter("Unit")}
    variables = {v.get("name"): v for v in root.iter("ScalarVariable")}
    for name, var in variables.items():
        assert var.get("description"), name
        real = var.find("Real")
        if real is not None:
            assert real.get("unit") in units, name
    assert variables["crank_speed"].get("causality") == "input"
    assert variables["crank_speed"].find("Real").get("unit") == "rad/s"
    assert float(variables["crank_speed"].find("Real").get("min")) == 0.0
    assert variables["water_pump_torque"].find("Real").get("unit") == "N.m"
    for name in ("tensioner_angle", "bearing_force", "crank_torque", "water_pump_speed", "hub_force_x_idler1",
                 "span_tension_crank_tensioner", "speed_alternator1", "slip_alternator1"):
        assert variables[name].get("causality") == "output", name
    assert variables["belt_pretension"].get("variability") == "fixed"
    assert variables["n_elements"].find("Integer") is not None
    cosim = root.find("CoSimulation")
    assert cosim.get("canGetAndSetFMUstate") == "true" and cosim.get("canSerializeFMUstate") == "true"


def test_parameter_ranges_in_the_model_description_are_the_layout_rules(fmu):
    """Every Real parameter's min/max is its layout key's bounds (belt_fmu.layout.field_bounds,
    what the slave checks a value set by a host against), and the keys a host could set to a
    value that is no drive at all (issue 38: friction_mu = 1e30, tensioner_spring_rate = 1e-9)
    have both bounds."""
    from belt_fmu.layout import field_bounds
    from belt_fmu.slave import PARAMETERS

    with zipfile.ZipFile(fmu) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    real = {v.get("name"): v.find("Real") for v in root.iter("ScalarVariable") if v.find("Real") is not None}
    checked = 0
    for p in PARAMETERS:
        if p.kind is not float or p.name not in real:
            continue
        bounds = field_bounds(p.table, p.key)
        for attribute, bound in (("min", bounds.low), ("max", bounds.high)):
            declared = real[p.name].get(attribute)
            assert (None if declared is None else float(declared)) == bound, (p.name, attribute)
        checked += 1
    assert checked >= 6
    for name in ("friction_mu", "tensioner_spring_rate", "tensioner_preload", "tensioner_friction_torque"):
        assert real[name].get("min") is not None and real[name].get("max") is not None, name


@pytest.mark.parametrize("output_mode", ["sample", "average"])
def test_fmu_equals_the_python_model(instance, output_mode):
    """Same layout (carried as JSON), same inputs, same steps: the FMU is the Python model,
    its outputs sampled or averaged over each step (the parameter output_mode)."""
    instance.initialize({"crank_speed": CRANK, "water_pump_torque": PUMP, "output_mode": output_mode})
    layout = load_layout_data(instance.layout_data)
    drive = BeltDrive(layout.with_drive(output_mode=output_mode))
    drive.reset(CRANK, PUMP)
    names = drive.output_names
    for _ in range(100):
        instance.step(STEP)
        drive.advance(STEP, CRANK, PUMP)
    assert instance.get(names) == pytest.approx(drive.output_values.tolist(), rel=1e-12, abs=1e-12)


def test_cosimulate_records_what_the_fmus_calls_give(fmu):
    """cosimulate's loop (Exchange: the FMU library's functions on arrays made once) records the
    outputs, times and inputs a loop of FmuInstance's set, step and get gives, bit for bit,
    at every output interval (here every second step, the crank speed varying)."""
    def crank(t):
        return CRANK * (1.0 + 10.0 * t)

    results = cosimulate(fmu, crank_speed=crank, water_pump_torque=PUMP, t_end=0.01, step_size=1e-3,
                         output_interval=2e-3, parameters={"model": "lumped"})
    inst = FmuInstance(fmu, instance_name="methods")
    try:
        inst.initialize({"model": "lumped", "crank_speed": crank(0.0), "water_pump_torque": PUMP})
        names = inst.names("output")
        rows, times, speeds = [inst.get(names)], [0.0], [crank(0.0)]
        for k in range(10):
            inst.set({"crank_speed": crank(k * 1e-3), "water_pump_torque": PUMP})
            inst.step(1e-3)
            if (k + 1) % 2 == 0:
                rows.append(inst.get(names))
                times.append((k + 1) * 1e-3)
                speeds.append(crank(k * 1e-3))
    finally:
        inst.close()
    assert results["time"].tolist() == times
    assert results["crank_speed_input"].tolist() == speeds
    assert results["water_pump_torque_input"].tolist() == [PUMP] * 6
    for i, name in enumerate(names):
        assert results[name].tolist() == [row[i] for row in rows], name
    assert rows[-1] != rows[-2]  # the drive moved between records


def test_constant_speed_settles_and_balances_torque_and_hub_load(fmu):
    """At constant inputs the crank torque equals the accessory loads reflected to the crank,
    sum tau_j r_crank / r_j (docs/references.md R4), within 2 %. Each pulley's hub load is
    the vector sum of its span tensions reduced by m'v^2: within 2 % where at least 4 belt
    nodes lie on the wrap; small-wrap idlers with about 2 nodes carry the polygon effect
    (their effective wrap angle is set by 2 chords), bounded at 8 %."""
    results = cosimulate(fmu, rpm=800, water_pump_torque=PUMP, t_end=0.1, step_size=STEP)
    layout = load_layout_data(results.layout_data)
    drive = BeltDrive(layout)
    late = results["time"] > 0.04
    radii = drive.geometry.radii
    names = [p.name for p in layout.pulleys]
    speeds = np.array([results[f"speed_{name}"][late].mean() for name in names])
    loads = drive.load_torques(speeds, PUMP)
    expected = np.sum(loads * radii[0] / radii)
    assert results["crank_torque"][late].mean() == pytest.approx(expected, rel=0.02)
    assert np.std(results["tensioner_angle"][late]) < 1e-3  # settled: no drift or swing

    arm = results["tensioner_angle"][late].mean()  # the tensioner pulley has moved: its wrap with it
    centers = np.array([p.center_m for p in layout.pulleys])
    centers[layout.tensioner_index] = np.array(layout.tensioner.pivot_m) + drive.geometry.arm_length * np.array(
        [np.cos(arm), np.sin(arm)])
    path = BeltPath.from_circles(centers, radii, drive.geometry.senses)
    centrifugal = layout.belt.mass_per_length_kg_per_m * results["belt_speed"][late].mean() ** 2
    resolved = 0
    for j, name in enumerate(names):
        t_in = results[f"span_tension_{names[j - 1]}_{name}"][late].mean() - centrifugal
        t_out = results[f"span_tension_{name}_{names[(j + 1) % len(names)]}"][late].mean() - centrifugal
        wrap = path.wrap_angle[j]
        expected = np.sqrt(t_in ** 2 + t_out ** 2 - 2 * t_in * t_out * np.cos(wrap))
        nodes_on_wrap = wrap * path.radii[j] / drive.rest_length
        tolerance = 0.02 if nodes_on_wrap >= 4 else 0.08
        resolved += nodes_on_wrap >= 4
        assert results[f"hub_force_{name}"][late].mean() == pytest.approx(expected, rel=tolerance), name
    assert resolved >= 4


def test_water_pump_torque_step_response(fmu):
    """A +10 N m pump load: the crank carries it by the radius ratio (16.8 N m) within 3 %,
    the spans downstream of the pump tighten (idler2's hub load rises), and the belt's
    stretch lets the tensioner arm turn into the belt (the spring's direction)."""
    results = cosimulate(fmu, rpm=800, water_pump_torque=lambda t: PUMP if t < 0.03 else PUMP + 10.0, t_end=0.1,
                         step_size=STEP)
    layout = load_layout_data(results.layout_data)
    drive = BeltDrive(layout)
    t = results["time"]
    before, after = (t > 0.01) & (t < 0.03), t > 0.07

    def change(name):
        return results[name][after].mean() - results[name][before].mean()

    radii = drive.geometry.radii
    assert change("crank_torque") == pytest.approx(10.0 * radii[0] / radii[layout.water_pump_index], rel=0.03)
    assert change("hub_force_idler2") > 30.0
    assert change("tensioner_angle") * drive.parameters.tensioner[0]["spring_sense"] > 1e-3


def test_crank_speed_ramp_response(fmu):
    """800 -> 1600 rpm in 0.1 s: the crank torque rises by the accessories' inertia reflected
    to the crank, sum I_j (r_crank/r_j)^2 dw/dt, plus the change of their steady loads, within
    10 %; the headline idler (downstream of the first alternator) is loaded harder; the arm
    turns into the belt."""
    start, ramp_time = 0.02, 0.1
    rate = 800 * RPM / ramp_time
    results = cosimulate(fmu, crank_speed=lambda t: CRANK + rate * min(max(t - start, 0.0), ramp_time),
                         water_pump_torque=PUMP, t_end=0.1, step_size=STEP)
    layout = load_layout_data(results.layout_data)
    drive = BeltDrive(layout)
    t = results["time"]
    before, during = t < start, (t > 0.06) & (t < 0.1)
    radii = drive.geometry.radii
    ratio = radii[0] / radii
    inertia = np.array([0.0 if p.role == "crankshaft" else p.inertia_kgm2 for p in layout.pulleys])
    speeds = [np.array([results[f"speed_{p.name}"][w].mean() for p in layout.pulleys]) for w in (before, during)]
    load_change = np.sum((drive.load_torques(speeds[1], PUMP) - drive.load_torques(speeds[0], PUMP)) * ratio)
    expected = np.sum(inertia * ratio ** 2) * rate + load_change
    rise = results["crank_torque"][during].mean() - results["crank_torque"][before].mean()
    assert rise == pytest.approx(expected, rel=0.10)
    assert results["bearing_force"][during].mean() > results["bearing_force"][before].mean() + 20.0
    turn = results["tensioner_angle"][during].mean() - results["tensioner_angle"][before].mean()
    assert turn * drive.parameters.tensioner[0]["spring_sense"] > 1e-3


@pytest.mark.parametrize("output_mode", ["sample", "average"])
def test_state_rollback_and_serialization_repeat_exactly(fmu, instance, output_mode):
    """fmi2GetFMUstate / fmi2SetFMUstate and their serialization restore the model bit for
    bit; with averaged outputs the state holds the running integral of the interval too."""
    instance.initialize({"crank_speed": CRANK, "water_pump_torque": PUMP, "output_mode": output_mode})
    outputs = instance.names("output")
    for _ in range(50):
        instance.step(STEP)
    saved = instance.get_state()
    blob = instance.serialize_state(saved)

    def run():
        rows = []
        for k in range(30):
            instance.set({"crank_speed": CRANK + 5.0 * k, "water_pump_torque": PUMP + 0.1 * k})
            instance.step(STEP)
            rows.append(instance.get(outputs))
        return rows

    first = run()
    instance.set_state(saved)
    assert run() == first  # bit for bit
    instance.set_state(instance.deserialize_state(blob, saved[1]))
    assert run() == first
    instance.free_state(saved)

    other = FmuInstance(fmu, instance_name="restored", unzip_directory=instance.unzip_directory)
    try:
        other.initialize({"crank_speed": 50.0, "water_pump_torque": 0.0, "output_mode": output_mode})
        other.set_state(other.deserialize_state(blob, saved[1]))
        instance, other = other, instance  # run() drives `instance`
        assert run() == first
    finally:
        instance.close()


@pytest.mark.parametrize("model, fast_path", [("discretized", "1"), ("lumped", "1"), ("lumped", "0")])
def test_state_cycles_do_not_grow_memory(fmu, monkeypatch, model, fast_path):
    """1000 cycles of get state, step, restore, free through fmpy grow Python's traced memory
    by at most 10 kB (an audit measured +752 kB; the lumped model grew 14 kB with the fast
    path, 38 kB without: numba typed its parameters in Python at each call of its output
    report, LumpedDrive._bind). 200 cycles first fill what is filled once, and 200 more with
    tracing on what tracing itself fills once. In a full run one-time allocations of the
    process (fmpy's and ctypes' caches) still added 10-12 kB to one block of 1000 cycles,
    and alone 1-3 kB whether 1000 or 4000 cycles ran; a leak grows in every block, so of two
    blocks of 1000 the smaller growth is the one checked."""
    import gc
    import tracemalloc

    monkeypatch.setenv("BELT_FMU_NATIVE_FAST_PATH", fast_path)
    instance = FmuInstance(fmu, instance_name="cycles")
    try:
        instance.initialize({"model": model, "crank_speed": CRANK, "water_pump_torque": PUMP})

        def cycles(n):
            for _ in range(n):
                state = instance.get_state()
                instance.step(STEP)
                instance.set_state(state)
                instance.free_state(state)

        cycles(200)
        gc.collect()
        tracemalloc.start()
        try:
            cycles(200)
            gc.collect()
            growth = []
            for _ in range(2):
                before = tracemalloc.get_traced_memory()[0]
                cycles(1000)
                gc.collect()
                growth.append(tracemalloc.get_traced_memory()[0] - before)
        finally:
            tracemalloc.stop()
        assert min(growth) <= 10_000, f"{growth} bytes more after each 1000 state cycles"
        assert not [m for m in instance.messages if m[0] == "ERROR"]
    finally:
        instance.close()


def test_variable_steps_and_splitting(instance, fmu):
    """The same 20 ms in steps of varying size gives the same result as in 0.1 ms steps, to
    the accuracy of the integrator (internal steps differ by under 1 %)."""
    instance.initialize({"crank_speed": CRANK, "water_pump_torque": PUMP})
    other = FmuInstance(fmu, instance_name="split", unzip_directory=instance.unzip_directory)
    try:
        other.initialize({"crank_speed": CRANK, "water_pump_torque": PUMP})
        for _ in range(200):
            instance.step(STEP)
        for h in [3.3e-3, 1.1e-3, 7.7e-5, 4.9e-3, 2.3e-4, 1e-2 - 3.3e-3 - 1.1e-3 - 7.7e-5 - 4.9e-3 - 2.3e-4] * 2:
            other.step(h)
        assert other.time == pytest.approx(instance.time, abs=1e-12)
        names = ["tensioner_angle", "crank_torque", "speed_water_pump", "span_tension_idler2_crank"]
        a, b = instance.get(names), other.get(names)
        assert b[0] == pytest.approx(a[0], abs=2e-4)  # rad
        assert b[1] == pytest.approx(a[1], abs=1.5)  # N m, ripple +-2 N m
        assert b[2] == pytest.approx(a[2], rel=5e-3)
        assert b[3] == pytest.approx(a[3], abs=30.0)  # N, polygon ripple +-40 N
    finally:
        other.close()


def test_two_instances_with_different_parameters_are_independent(fmu, instance):
    """Interleaved stepping of a 450 N and a 600 N pretension instance: the second belt is
    shorter, so its tensioner arm stands further from the belt and its tension is higher
    (by the spring's rate, not by 150 N: that is what an automatic tensioner is for); the
    first gives exactly what it gives alone."""
    other = FmuInstance(fmu, instance_name="tight", unzip_directory=instance.unzip_directory)
    alone = FmuInstance(fmu, instance_name="alone", unzip_directory=instance.unzip_directory)
    try:
        instance.initialize({"crank_speed": CRANK, "water_pump_torque": PUMP})
        other.initialize({"belt_pretension": 600.0, "crank_speed": CRANK, "water_pump_torque": PUMP})
        alone.initialize({"crank_speed": CRANK, "water_pump_torque": PUMP})
        name = ["span_tension_crank_tensioner"]
        for _ in range(50):
            instance.step(STEP)
            other.step(STEP)
        for _ in range(50):
            alone.step(STEP)
        assert other.get(name)[0] > instance.get(name)[0] + 20.0
        sense = BeltDrive(load_layout_data(instance.layout_data)).parameters.tensioner[0]["spring_sense"]
        arm = ["tensioner_angle"]
        assert (other.get(arm)[0] - instance.get(arm)[0]) * sense < -0.01  # pushed back, away from the belt
        assert instance.get(instance.names("output")) == alone.get(alone.names("output"))
    finally:
        other.close()
        alone.close()


def test_outputs_are_the_running_state_already_in_initialization_mode(fmu):
    """FMI 2.0 InitialUnknowns: outputs read before initialization ends are those of the
    steady running state at the current inputs (a power-unit model needs the crank torque
    from the start), and the model restarts if the inputs change before the end."""
    inst = FmuInstance(fmu, instance_name="early")
    try:
        inst.fmu.setupExperiment(startTime=0.0)
        inst.fmu.enterInitializationMode()
        inst.set({"crank_speed": CRANK, "water_pump_torque": PUMP})
        early = inst.get(["crank_torque", "water_pump_speed"])
        assert 10.0 < early[0] < 30.0 and early[1] > 100.0
        inst.set({"crank_speed": 2 * CRANK})
        inst.fmu.exitInitializationMode()
        late = inst.get(["crank_torque", "water_pump_speed"])
        assert late[1] == pytest.approx(2 * early[1], rel=0.02)  # restarted at the new speed
    finally:
        inst.close()


MISSING_NUMBA = """
import sys
sys.modules["numba"] = None  # this Python "lacks" numba
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave, defaultCallbacks, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
messages = []
callbacks = fmi2CallbackFunctions()
callbacks.logger = fmi2CallbackLoggerTYPE(lambda c, i, status, cat, msg: messages.append(msg.decode()))
callbacks.allocateMemory = defaultCallbacks.allocateMemory
callbacks.freeMemory = defaultCallbacks.freeMemory
md = read_model_description(sys.argv[1])
fmu = FMU2Slave(guid=md.guid, unzipDirectory=extract(sys.argv[1]),
                modelIdentifier=md.coSimulation.modelIdentifier, instanceName="no_numba")
try:
    fmu.instantiate(callbacks=callbacks, loggingOn=True)
    print("INSTANTIATED")
except Exception as err:
    print("REFUSED", err)
print("LOG", " | ".join(messages))
sys.stdout.flush()
import os
os._exit(0)
"""


def test_missing_dependency_is_reported_through_the_fmi_logger(fmu):
    """A Python without numba: instantiation fails with the reason in the FMI log, and the
    host process carries on."""
    import subprocess

    run = subprocess.run([sys.executable, "-c", MISSING_NUMBA, str(fmu)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "REFUSED" in run.stdout
    assert "needs Python >= 3.10 with numpy and numba" in run.stdout
    assert "lacks numba" in run.stdout and "pip install numpy numba" in run.stdout


def test_friction_law_is_a_structural_parameter(fmu):
    """Set before initialization, `friction_law` = gms builds the model with the GMS law and
    its friction states: the same steps as the Python model with that law, to 1e-12."""
    import dataclasses

    inst = FmuInstance(fmu, instance_name="gms")
    try:
        inst.initialize({"friction_law": "gms", "crank_speed": CRANK, "water_pump_torque": PUMP})
        layout = load_layout_data(inst.layout_data)
        drive = BeltDrive(dataclasses.replace(layout, friction=dataclasses.replace(layout.friction, law="gms")))
        drive.reset(CRANK, PUMP)
        for _ in range(20):
            inst.step(STEP)
            drive.advance(STEP, CRANK, PUMP)
        assert inst.get(drive.output_names) == pytest.approx(drive.output_values.tolist(), rel=1e-12, abs=1e-12)
    finally:
        inst.close()


def test_output_mode_is_a_structural_parameter(fmu):
    """The modelDescription declares `output_mode` (String, fixed parameter, start "average":
    a master's communication step of 1 ms samples the polygon ripple below its Nyquist rate,
    described); set to "sample" on the lumped model, the FMU's outputs at 1 ms steps are the
    Python model's sampled ones, to 1e-12."""
    from belt_fmu.model.lumped_system import LumpedDrive

    with zipfile.ZipFile(fmu) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    variable = next(v for v in root.iter("ScalarVariable") if v.get("name") == "output_mode")
    assert variable.get("causality") == "parameter" and variable.get("variability") == "fixed"
    assert variable.find("String").get("start") == "average"
    assert "average" in variable.get("description") and "sample" in variable.get("description")

    inst = FmuInstance(fmu, instance_name="sampled")
    try:
        inst.initialize({"model": "lumped", "output_mode": "sample", "crank_speed": CRANK,
                         "water_pump_torque": PUMP})
        layout = load_layout_data(inst.layout_data)
        drive = LumpedDrive(layout.with_drive(model="lumped", output_mode="sample"))
        drive.reset(CRANK, PUMP)
        for _ in range(5):
            inst.step(1e-3)
            drive.advance(1e-3, CRANK, PUMP)
        assert inst.get(drive.output_names) == pytest.approx(drive.output_values.tolist(), rel=1e-12, abs=1e-12)
    finally:
        inst.close()
