"""The FMU in native (non-Python) FMI hosts, loaded as Dymola, OMSimulator or a C/C++ program
load it: the project's own small C host (native/fmi2_host.c) and libcosim driven from C
(native/cosim_ssp.c), both compiled here with the C compiler and run in a bare environment:
no LD_PRELOAD, no PYTHONPATH, and a PATH (/usr/bin:/bin) without the Python that has numba.
The FMU's native loader must find that Python by itself (docs/native-hosts.md).

``HOME``, ``XDG_CACHE_HOME`` and ``BELT_FMU_CACHE`` are passed on, so the runs share the compiled kernels.
Skipped where there is no C compiler: the FMU then has no native loader either.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from belt_fmu.build import native
from belt_fmu.cosim import FmuInstance

NATIVE = Path(__file__).resolve().parent / "native"
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "ssp"
STEP = 1e-4

pytestmark = pytest.mark.skipif(native.compiler() is None, reason="no C compiler (cc): no native loader to test")


def bare_environment(**extra) -> dict:
    """An environment with no Python set-up (no virtual environment, no PYTHONPATH): the
    PATH, where the kernel cache is (HOME, XDG_CACHE_HOME, BELT_FMU_CACHE: the shared compiled
    kernels, belt_fmu.kernel_cache) and the machine's OpenBLAS settings. Those select
    OpenBLAS's kernels (OPENBLAS_CORETYPE: some processors' environments set it), and with
    them the rounding of the reset's equilibrium solve: without them the hosts' outputs
    differed from fmpy's in this process by 2e-13 relative, which the bit-for-bit checks
    see."""
    env = {"PATH": "/usr/bin:/bin"}
    env.update({name: value for name, value in os.environ.items()
                if name in ("HOME", "XDG_CACHE_HOME", "BELT_FMU_CACHE") or name.startswith("OPENBLAS_")})
    env.update(extra)
    return env


def compile_program(source: Path, folder: Path) -> Path:
    program = folder / source.stem
    subprocess.run([native.compiler(), "-O2", "-o", str(program), str(source), "-ldl"], check=True)
    return program


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return compile_program(NATIVE / "fmi2_host.c", tmp_path_factory.mktemp("host"))


@pytest.fixture(scope="module")
def unpacked(fmu, tmp_path_factory):
    """The FMU extracted as a host extracts it: (folder, GUID, output name -> value reference)."""
    folder = tmp_path_factory.mktemp("unpacked")
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
    root = ET.parse(folder / "modelDescription.xml").getroot()
    outputs = {v.get("name"): int(v.get("valueReference")) for v in root.iter("ScalarVariable")
               if v.get("causality") == "output"}
    return folder, root.get("guid"), outputs


def run_host(host, folder, guid, *options, env=None, timeout=300):
    return subprocess.run([str(host), str(folder), "BeltDrive", guid, *options], capture_output=True, text=True,
                          env=bare_environment() if env is None else env, timeout=timeout)


def outputs_of(stdout: str) -> dict[int, float]:
    return {int(vr): float.fromhex(value) for _, vr, value in
            (line.split() for line in stdout.splitlines() if line.startswith("out "))}


def test_the_fmu_runs_in_a_native_host_from_a_bare_environment_exactly_as_in_fmpy(host, unpacked, fmu):
    """Initialization at the start values (800 rpm, 2 N m), 0.2 s of 1e-4 s steps, every
    call fmi2OK; the state saved at 0.1 s, serialized, deserialized and restored repeats the
    second half bit for bit (the host checks); the discretized model's steps are answered
    natively (the fast path) and the outputs equal those of the Python path (the host with
    BELT_FMU_NATIVE_FAST_PATH=0) and fmpy's bit for bit."""
    folder, guid, outputs = unpacked
    options = ["--steps", "2000", "--state", "1000", "--logging", "--out", ",".join(str(v) for v in outputs.values())]
    run = run_host(host, folder, guid, *options)
    python = run_host(host, folder, guid, *options, env=bare_environment(BELT_FMU_NATIVE_FAST_PATH="0"))
    for each in (run, python):
        assert each.returncode == 0, each.stdout + each.stderr
        assert "status OK" in each.stdout
    note = "fast path: fmi2SetReal, fmi2GetReal and fmi2DoStep are answered natively"
    assert note in run.stderr and note not in python.stderr
    native_values = outputs_of(run.stdout)
    assert native_values == outputs_of(python.stdout)

    instance = FmuInstance(fmu, instance_name="fmpy")
    try:
        instance.initialize({})
        for _ in range(2000):
            instance.step(STEP)
        fmpy_values = dict(zip(outputs.values(), instance.get(list(outputs))))
    finally:
        instance.close()
    assert native_values == fmpy_values


def test_the_lumped_model_runs_through_the_fast_path_in_a_native_host(host, unpacked, fmu, monkeypatch):
    """The lumped model (String parameter model = "lumped") at 1 ms steps, both inputs set
    before every step, all outputs read after it, the state round trip at the middle (the
    host checks it bit for bit): every call fmi2OK, the loader says it answers the steps
    natively, and the outputs equal those of the Python path (the host with
    BELT_FMU_NATIVE_FAST_PATH=0, and fmpy with it) bit for bit."""
    folder, guid, outputs = unpacked
    root = ET.parse(folder / "modelDescription.xml").getroot()
    refs = {v.get("name"): v.get("valueReference") for v in root.iter("ScalarVariable")}
    options = ["--string", f"{refs['model']}=lumped", "--set", f"{refs['crank_speed']}=90.0", "--set",
               f"{refs['water_pump_torque']}=3.0", "--each-step", "--logging", "--steps", "400", "--step", "1e-3",
               "--state", "200", "--out", ",".join(str(v) for v in outputs.values())]
    note = "fast path: fmi2SetReal, fmi2GetReal and fmi2DoStep are answered natively"
    fast = run_host(host, folder, guid, *options)
    python = run_host(host, folder, guid, *options, env=bare_environment(BELT_FMU_NATIVE_FAST_PATH="0"))
    for run in (fast, python):
        assert run.returncode == 0 and "status OK" in run.stdout, run.stdout + run.stderr
    assert note in fast.stderr and note not in python.stderr
    assert outputs_of(fast.stdout) == outputs_of(python.stdout)

    monkeypatch.setenv("BELT_FMU_NATIVE_FAST_PATH", "0")
    instance = FmuInstance(fmu, instance_name="fmpy")
    try:
        instance.initialize({"model": "lumped", "crank_speed": 90.0, "water_pump_torque": 3.0})
        for _ in range(400):
            instance.set({"crank_speed": 90.0, "water_pump_torque": 3.0})
            instance.step(1e-3)
        fmpy_values = dict(zip(outputs.values(), instance.get(list(outputs))))
    finally:
        instance.close()
    assert outputs_of(fast.stdout) == fmpy_values


def test_the_native_host_process_ends_cleanly_every_time(host, unpacked):
    """20 processes, half of them unloading the FMU (dlclose) before they exit, two at a time:
    exit status 0 every time (Python 3.11 used to crash at exit in 28 of 40 runs, and in all
    with dlclose; benchmarks/bench_native.py runs 200)."""
    from concurrent.futures import ThreadPoolExecutor

    folder, guid, outputs = unpacked

    def run(k):
        options = ["--steps", "20", "--out", str(outputs["crank_torque"])] + (["--dlclose"] if k % 2 else [])
        return k, run_host(host, folder, guid, *options)

    with ThreadPoolExecutor(2) as pool:
        for k, done in pool.map(run, range(20)):
            assert done.returncode == 0, (k, done.stdout, done.stderr)


def test_a_state_the_fmu_never_handed_out_or_freed_is_an_error_not_a_crash(host, unpacked):
    """fmi2SetFMUstate, fmi2SerializedFMUstateSize, fmi2SerializeFMUstate and fmi2FreeFMUstate
    given a pointer the FMU never handed out (256 zero bytes) and one it handed out and then
    freed: fmi2Error each time with a message naming the call, the host does not crash (it
    used to: SIGSEGV at the first call) and the instance steps on with every call fmi2OK."""
    folder, guid, outputs = unpacked
    run = run_host(host, folder, guid, "--foreign-states", "--logging", "--steps", "5", "--out",
                   str(outputs["crank_torque"]))
    assert run.returncode == 0 and "status OK" in run.stdout, (run.returncode, run.stdout, run.stderr)
    calls = ("fmi2SetFMUstate", "fmi2SerializedFMUstateSize", "fmi2SerializeFMUstate", "fmi2FreeFMUstate")
    statuses = {tuple(line.split()[1:3]): line.split()[3] for line in run.stdout.splitlines()
                if line.startswith("foreign ")}
    assert statuses == {(which, call): "Error" for which in ("never-handed-out", "freed") for call in calls}
    for call in calls:
        assert f"{call}: the state 0x" in run.stderr
    assert run.stderr.count("was not handed out by this instance (fmi2GetFMUstate or fmi2DeSerializeFMUstate) "
                            "or was freed already; nothing was done") == 8


@pytest.fixture
def without_python(unpacked, tmp_path):
    """A copy of the FMU whose recorded interpreter does not exist, and a PATH without Python."""
    folder, guid, _ = unpacked
    copy = tmp_path / "fmu"
    shutil.copytree(folder, copy)
    settings = copy / "resources" / native.SETTINGS_RESOURCE
    settings.write_text(settings.read_text().replace(f"python = {sys.executable}", "python = /nowhere/bin/python3"))
    (tmp_path / "empty").mkdir()
    return copy, guid, {"PATH": str(tmp_path / "empty")}


def test_without_a_suitable_python_instantiation_fails_naming_what_was_tried(host, without_python):
    """With the host's logging off the message still reaches stderr; it names each candidate
    and what to install."""
    folder, guid, env = without_python
    run = run_host(host, folder, guid, "--steps", "1", env=env)
    assert run.returncode == 1 and "status NULL from fmi2Instantiate" in run.stdout
    message = run.stderr
    assert "belt_fmu FMU host [Error]: no Python this FMU can run in was found" in message
    assert "the packages numpy numba" in message
    assert "$BELT_FMU_PYTHON: not set" in message
    assert "the interpreter recorded when the FMU was built = /nowhere/bin/python3: cannot run it" in message
    assert "python3 on PATH: none" in message
    assert "python3 -m pip install numpy numba" in message and "set BELT_FMU_PYTHON" in message


def test_with_logging_on_the_message_goes_to_the_hosts_logger(host, without_python):
    folder, guid, env = without_python
    run = run_host(host, folder, guid, "--steps", "1", "--logging", env=env)
    assert run.returncode == 1
    assert "[Error] host logStatusError: no Python this FMU can run in was found" in run.stderr
    assert "belt_fmu FMU host [Error]" not in run.stderr  # not twice


def test_belt_fmu_python_names_the_interpreter(host, without_python):
    folder, guid, env = without_python
    run = run_host(host, folder, guid, "--steps", "5", env={**env, "BELT_FMU_PYTHON": sys.executable})
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="no /usr/bin/python3 to try")
def test_a_belt_fmu_python_passed_over_is_said_in_the_hosts_log(host, unpacked):
    """BELT_FMU_PYTHON naming a Python without numba, the recorded interpreter suitable: the
    FMU runs in the recorded one, and a warning through the host's logger (logging off: warnings
    still reach it) names the Python passed over and what it lacks (it used to be passed over
    in silence)."""
    check = subprocess.run(["/usr/bin/python3", "-E", "-c", "import numba"], capture_output=True)
    if check.returncode == 0:
        pytest.skip("/usr/bin/python3 has numba")
    folder, guid, _ = unpacked
    run = run_host(host, folder, guid, "--steps", "5", env=bare_environment(BELT_FMU_PYTHON="/usr/bin/python3"))
    assert run.returncode == 0 and "status OK" in run.stdout, run.stdout + run.stderr
    warning = next((line for line in run.stderr.splitlines() if line.startswith("[Warning] host logStatusWarning: "
                                                                              "the FMU runs in ")), None)
    assert warning == (f"[Warning] host logStatusWarning: the FMU runs in the interpreter recorded when the FMU was "
                       f"built = {sys.executable} (Python {sys.version.split()[0]}); before it:"), run.stderr
    assert "\n  $BELT_FMU_PYTHON = /usr/bin/python3: Python 3." in run.stderr
    assert "lacks numba" in run.stderr or "lacks numpy numba" in run.stderr


@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="no /usr/bin/python3 to try")
def test_a_python_without_the_packages_is_named_with_what_it_lacks(host, without_python):
    check = subprocess.run(["/usr/bin/python3", "-E", "-c", "import numba"], capture_output=True)
    if check.returncode == 0:
        pytest.skip("/usr/bin/python3 has numba")
    folder, guid, env = without_python
    run = run_host(host, folder, guid, "--steps", "1", env={**env, "BELT_FMU_PYTHON": "/usr/bin/python3"})
    assert run.returncode == 1
    assert "$BELT_FMU_PYTHON = /usr/bin/python3: Python 3." in run.stderr
    assert "lacks numba" in run.stderr or "lacks numpy numba" in run.stderr


# --------------------------------------------------------------------------- libcosim from C
def libcosimc() -> Path | None:
    spec = importlib.util.find_spec("libcosimpy")
    if spec is None:
        return None
    found = list(Path(spec.origin).parent.glob("libcosimc/libcosimc.so"))
    return found[0] if found else None


@pytest.mark.skipif(libcosimc() is None, reason="libcosimpy (with libcosimc.so) not installed: Linux x86-64, "
                                                "Python 3.11-3.14")
def test_libcosim_from_c_runs_the_ssp_system_cleanly_without_warnings(tmp_path):
    """The SSP example (three PythonFMU FMUs, each with the native loader) under libcosim's C
    API: no load warnings (a parameter set shared by all components gave 36), the belt's
    crank torque after 0.1 s the same in 3 of 3 runs bit for bit (each loads the kernels the
    FMU ships) and equal to libcosim's run from Python (libcosimpy, in this process, whose
    kernels this process may have compiled itself) within 1e-9 relative, and a clean exit in
    3 of 3 runs. Kernels this process compiled and the cached ones of the same sources have
    differed in the last bits after a cold compile (6e-12 relative here): the compile's
    result is not yet the same in every process that makes it."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        import build_ssp
        import run_ssp
    finally:
        sys.path.remove(str(EXAMPLE))
    ssp = build_ssp.pack_ssp(tmp_path / "system.ssp", build_ssp.build_fmus(tmp_path / "fmus"))
    program = compile_program(NATIVE / "cosim_ssp.c", tmp_path)
    vr = {v.name: v.valueReference for v in __import__("fmpy").read_model_description(
        str(tmp_path / "fmus" / "BeltDrive.fmu")).modelVariables}["crank_torque"]
    values = []
    for _ in range(3):
        run = subprocess.run([str(program), str(libcosimc()), str(ssp), "1000", f"belt:{vr}"], capture_output=True,
                             text=True, env=bare_environment(), timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "status OK" in run.stdout
        log = (run.stdout + run.stderr).lower()
        assert "warning" not in log, run.stdout + run.stderr
        values.append(float.fromhex(next(line.split()[2] for line in run.stdout.splitlines()
                                         if line.startswith("value "))))
    reference = run_ssp.run_libcosim(ssp, 0.1)["belt.crank_torque"][-1]
    assert values == [values[0]] * 3
    assert values[0] == pytest.approx(reference, rel=1e-9, abs=0.0)
