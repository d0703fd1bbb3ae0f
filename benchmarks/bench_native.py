"""Benchmark the FMU in a native FMI host: cost per communication step against the physics and
fmpy, and clean process exits over many runs.

    python benchmarks/bench_native.py [--fmu BeltDrive.fmu] [--steps 10000] [--repeat 3]
                                      [--exit-runs 200] [--python PYTHON ...]

1. Per 1e-4 s communication step, built-in layout (the discretized model) at 800 rpm, master
   loop "set the 2 inputs, doStep, read 4 outputs": the project's C host
   (fmu_tests/native/fmi2_host.c) in a bare environment and fmpy in Python, each with the
   loader's native fast path and without it (BELT_FMU_NATIVE_FAST_PATH=0), and the model's
   own advance in Python (the physics). Min and median of --repeat runs of --steps steps
   each. Overhead = host per step - physics per step (the physics figure includes a Python
   call of about 1 us, so the native overhead is if anything understated by that much).
2. --exit-runs processes of the C host (10 steps each) per Python given with --python (the
   loader is pointed at it with BELT_FMU_PYTHON; default: the one running this script),
   without and with dlclose before exit: how many did not exit with status 0.
Prints wall time and real-time factors.
"""
from __future__ import annotations

import argparse
import atexit
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST_SOURCE = ROOT / "fmu_tests" / "native" / "fmi2_host.c"
HEADLINE = ["tensioner_angle", "bearing_force", "crank_torque", "water_pump_speed"]
STEP = 1e-4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fmu", help="FMU to use (default: build the built-in layout's)")
    parser.add_argument("--steps", type=int, default=10000, help="steps per timing run (default 10000 = 1 s)")
    parser.add_argument("--repeat", type=int, default=3, help="timing runs of each kind (default 3)")
    parser.add_argument("--exit-runs", type=int, default=200, help="processes per Python and variant (default 200)")
    parser.add_argument("--python", action="append", help="Python for the exit runs (repeatable)")
    args = parser.parse_args()

    from belt_fmu.build import build_fmu, native
    from belt_fmu.units import RPM

    tmp = Path(tempfile.mkdtemp(prefix="belt_fmu_bench_native_"))
    atexit.register(shutil.rmtree, tmp, True)  # the FMU built, unpacked, and the host
    fmu = Path(args.fmu) if args.fmu else build_fmu(None, tmp / "BeltDrive.fmu")
    folder = tmp / "unpacked"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
    root = ET.parse(folder / "modelDescription.xml").getroot()
    vr = {v.get("name"): v.get("valueReference") for v in root.iter("ScalarVariable")}
    host = tmp / "fmi2_host"
    subprocess.run([native.compiler(), "-O2", "-o", str(host), str(HOST_SOURCE), "-ldl"], check=True)
    crank, pump = 800 * RPM, 2.0

    def native_run(*options, python=None, steps=10, timing=False, fast=True):
        env = {"PATH": "/usr/bin:/bin", **({"BELT_FMU_PYTHON": python} if python else {}),
               **({} if fast else {"BELT_FMU_NATIVE_FAST_PATH": "0"})}
        command = [str(host), str(folder), "BeltDrive", root.get("guid"), "--steps", str(steps),
                   "--set", f"{vr['crank_speed']}={crank!r}", "--set", f"{vr['water_pump_torque']}={pump!r}",
                   "--each-step", "--out", ",".join(vr[n] for n in HEADLINE), *(["--timing"] if timing else []),
                   *options]
        return subprocess.run(command, capture_output=True, text=True, env=env)

    def native_per_step(fast):
        run = native_run(steps=args.steps, timing=True, fast=fast)
        if run.returncode != 0:
            raise SystemExit(f"native host failed: {run.stdout}{run.stderr}")
        return float(next(line.split()[1] for line in run.stdout.splitlines() if line.startswith("us_per_step")))

    native_run()  # warm the JIT cache for this Python
    print(f"fmu: {fmu}\nper communication step of {STEP:g} s (set 2 inputs, doStep, read {len(HEADLINE)} outputs), "
          f"{args.steps} steps, min / median of {args.repeat} [us] (real-time factor of the min), overhead = "
          f"min - physics min:")
    native_us = {True: [], False: []}
    for _ in range(args.repeat):  # interleaved: the machine's load drifts
        for fast in native_us:
            native_us[fast].append(native_per_step(fast))
    fmpy_us, physics_us = fmpy_and_physics_per_step(fmu, crank, pump, args.steps, args.repeat)
    physics = min(physics_us)

    def line(what, times):
        best = min(times)
        overhead = "" if times is physics_us else f"; overhead {best - physics:.1f}"
        print(f"  {what:<38} {best:6.1f} / {statistics.median(times):6.1f}  (real-time factor "
              f"{STEP / best * 1e6:.2f}){overhead}")

    line("physics (model advance in Python)", physics_us)
    for fast in (True, False):
        line(f"native C host, fast path {'on' if fast else 'off'}", native_us[fast])
    for fast in (True, False):
        line(f"fmpy, fast path {'on' if fast else 'off'}", fmpy_us[fast])

    for python in args.python or [sys.executable]:
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                                 text=True).stdout.strip()
        native_run(python=python)  # this Python's JIT cache
        for variant, options in (("exit", []), ("dlclose, then exit", ["--dlclose"])):
            start = time.perf_counter()
            failed = sum(native_run(*options, python=python).returncode != 0 for _ in range(args.exit_runs))
            print(f"exit runs, Python {version} ({python}), {variant}: {failed} of {args.exit_runs} not clean "
                  f"({time.perf_counter() - start:.0f} s)")


def fmpy_and_physics_per_step(fmu, crank, pump, steps, repeat):
    """Microseconds per step of --repeat runs: of an fmpy master loop with the fast path on
    and off ({True: [...], False: [...]}) and of the model's own advance."""
    import importlib
    import os

    from belt_fmu.cosim import FmuInstance

    instances = {}
    for fast in (True, False):  # the loader reads the switch at fmi2Instantiate
        if not fast:
            os.environ["BELT_FMU_NATIVE_FAST_PATH"] = "0"
        instances[fast] = FmuInstance(fmu, instance_name=f"fast-{fast}")
        instances[fast].initialize({"crank_speed": crank, "water_pump_torque": pump})
    os.environ.pop("BELT_FMU_NATIVE_FAST_PATH", None)
    instance = instances[True]
    model = importlib.import_module("belt_fmu.slave")  # the FMU's model: this process's package, the same code
    drive = model.BeltDrive(model.load_layout_data(instance.layout_data))
    drive.reset(crank, pump)
    inputs = [instance.variables[n].valueReference for n in ("crank_speed", "water_pump_torque")]
    outputs = [instance.variables[n].valueReference for n in HEADLINE]

    def master(instance):
        t, start = instance.time, time.perf_counter()
        for k in range(steps):
            instance.fmu.setReal(inputs, [crank, pump])
            instance.fmu.doStep(t + k * STEP, STEP)
            instance.fmu.getReal(outputs)
        instance.time = t + steps * STEP
        return (time.perf_counter() - start) / steps * 1e6

    def physics():
        start = time.perf_counter()
        for _ in range(steps):
            drive.advance(STEP, crank, pump)
        return (time.perf_counter() - start) / steps * 1e6

    fmpy_us = {fast: [] for fast in instances}
    physics_us = []
    for _ in range(repeat):  # interleaved: the machine's load drifts
        for fast, inst in instances.items():
            fmpy_us[fast].append(master(inst))
        physics_us.append(physics())
    for inst in instances.values():
        inst.close()
    return fmpy_us, physics_us


if __name__ == "__main__":
    main()
