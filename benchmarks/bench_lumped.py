"""Time the lumped rotational model (``[drive] model = "lumped"``).

    python benchmarks/bench_lumped.py [--layout FILE] [--rpm 800] [--t-end 10] [--cycle 1800] [--fmu]

Prints ``key: value`` lines, each with the real-time factor (simulated / wall time):

1. the model alone: ``LumpedDrive.advance`` over --t-end s in one call (the kernel's own
   speed) and in 1 ms chunks (as a co-simulation master calls it), each --repeat times
   (min and median);
2. a drive cycle of --cycle s: crank speed as a function of time, idle with ramps to 1500,
   2200 and 3000 rpm and back, held between them, the water-pump load 1 + 2e-4 w^2 N m,
   in 10 ms chunks; checks that every output stays finite;
3. with --fmu: the FMU of the layout, parameter model = "lumped", co-simulated at a 1 ms
   communication step for --t-end s by belt_fmu.cosimulate (inputs set and all outputs
   recorded every step) and by fmpy.simulate_fmu (all outputs recorded; its time includes
   loading the FMU), each --repeat times; then a co-simulation master's loop at 1 ms (fmi2SetReal of the two inputs,
   fmi2DoStep, fmi2GetReal of all outputs), with the native loader's fast path and without
   it (BELT_FMU_NATIVE_FAST_PATH=0, docs/native-hosts.md), in three styles: fmpy's FMU2Slave
   methods (setReal, doStep, getReal: they build ctypes arrays and lists at every call),
   FMU2Slave's fmi2* functions on arrays made once (each a Python wrapper that logs and
   checks the status), and the ctypes functions of the FMU's library that fmpy loaded and
   typed (``FMU2Slave.dll``), the status checked in the loop (what a master written for
   speed does). Each is repeated --repeat times; min and median are printed. Last, the same
   loop in the project's C host (fmu_tests/native/fmi2_host.c, all outputs read), fast path
   on and off.
"""
from __future__ import annotations

import argparse
import ctypes
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from belt_fmu import load_layout
from belt_fmu.model.lumped_system import LumpedDrive
from belt_fmu.units import RPM

#: drive-cycle crank speed [rpm] at these times [s] within each 300 s block, linear between
CYCLE_BLOCK = ((0.0, 800.0), (60.0, 800.0), (70.0, 1500.0), (120.0, 1500.0), (130.0, 2200.0), (180.0, 2200.0),
               (190.0, 3000.0), (220.0, 3000.0), (240.0, 800.0), (300.0, 800.0))


def cycle_speed(t: float) -> float:
    """Crank speed [rad/s] of the drive cycle at time t [s] (a 300 s block repeated)."""
    times, rpms = zip(*CYCLE_BLOCK)
    return float(np.interp(t % 300.0, times, rpms)) * RPM


def spread(walls, steps: int, simulated: float) -> str:
    """us per step and real-time factor of repeated wall times [s]: min (median)."""
    walls = sorted(walls)
    best, median = walls[0], walls[len(walls) // 2]
    return (f"{1e6 * best / steps:.3g} us per step (median {1e6 * median / steps:.3g}), real-time factor "
            f"{simulated / best:.4g} (median {simulated / median:.4g}), {len(walls)} repeats")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--rpm", type=float, default=800.0, help="crank speed [rpm] (default: %(default)g)")
    parser.add_argument("--t-end", type=float, default=10.0, help="timed simulated time [s] (default: %(default)g)")
    parser.add_argument("--water-pump-torque", type=float, default=2.0, help="[N m] (default: %(default)g)")
    parser.add_argument("--cycle", type=float, default=1800.0, help="drive-cycle length [s], 0 to skip "
                                                                   "(default: %(default)g)")
    parser.add_argument("--fmu", action="store_true", help="also time the FMU in fmpy at a 1 ms step")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions of each timing (default: "
                                                                "%(default)s)")
    args = parser.parse_args(argv)

    layout = load_layout(args.layout)
    layout = layout.with_drive(model="lumped")
    speed = args.rpm * RPM
    torque = args.water_pump_torque
    warm = LumpedDrive(layout)
    warm.reset(speed, torque, settle_time=0.01)  # loads or compiles the kernels

    start = time.perf_counter()
    drive = LumpedDrive(layout)
    drive.reset(speed, torque)
    print(f"layout: {layout.drive.name} ({layout.source})")
    print(f"time step: {drive.dt:.3g} s")
    print(f"build and reset: {time.perf_counter() - start:.3g} s")

    steps = math.ceil(args.t_end / drive.dt - 1e-9)
    walls = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        drive.advance(args.t_end, speed, torque)
        walls.append(time.perf_counter() - start)
    print(f"one call, {args.t_end:g} s: {spread(walls, steps, args.t_end)}")

    chunks = round(args.t_end / 1e-3)
    walls = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        for _ in range(chunks):
            drive.advance(1e-3, speed, torque)
        walls.append(time.perf_counter() - start)
    print(f"1 ms chunks, {args.t_end:g} s: {spread(walls, chunks, args.t_end)}")

    if args.cycle > 0.0:
        drive.reset(cycle_speed(0.0), 1.0)
        chunk = 1e-2
        n = round(args.cycle / chunk)
        finite = True
        extremes = np.full((2, len(drive.output_values)), np.nan)
        start = time.perf_counter()
        for k in range(n):
            w = cycle_speed(k * chunk)
            drive.advance(chunk, w, 1.0 + 2e-4 * w * w)
            finite &= bool(np.all(np.isfinite(drive.output_values)))
            extremes[0] = np.fmin(extremes[0], drive.output_values)
            extremes[1] = np.fmax(extremes[1], drive.output_values)
        wall = time.perf_counter() - start
        span = drive.output_names.index("bearing_force")
        print(f"drive cycle, {args.cycle:g} s (idle, ramps to 1500/2200/3000 rpm): wall {wall:.4g} s, "
              f"real-time factor {args.cycle / wall:.4g}; outputs finite: {finite}; bearing force "
              f"{extremes[0, span]:.4g} to {extremes[1, span]:.4g} N")

    if args.fmu:
        from fmpy import simulate_fmu

        from belt_fmu.build import build_fmu
        from belt_fmu.cosim import cosimulate

        with tempfile.TemporaryDirectory(prefix="belt_fmu_bench_") as tmp:
            path = build_fmu(args.layout, Path(tmp) / "BeltDrive.fmu", crank_speed=speed, water_pump_torque=torque)
            runs = [cosimulate(path, rpm=args.rpm, water_pump_torque=torque, t_end=args.t_end, step_size=1e-3,
                               parameters={"model": "lumped"}) for _ in range(max(1, args.repeat))]
            print(f"belt_fmu.cosimulate, 1 ms communication step, all outputs recorded, {args.t_end:g} s: "
                  f"{spread([r.wall_time for r in runs], chunks, args.t_end)} (load {runs[0].load_time:.3g} s)")
            walls = []
            for _ in range(max(1, args.repeat)):
                start = time.perf_counter()
                simulate_fmu(str(path), start_values={"model": "lumped", "crank_speed": speed,
                                                      "water_pump_torque": torque},
                             stop_time=args.t_end, step_size=1e-3, output_interval=1e-3)
                walls.append(time.perf_counter() - start)
            print(f"fmpy.simulate_fmu, 1 ms communication step, all outputs recorded, {args.t_end:g} s, loading "
                  f"included: {spread(walls, chunks, args.t_end)}")
            for style in ("methods", "arrays", "ctypes"):
                for fast in (True, False):
                    walls = [master_loop(path, fast, style, speed, torque, args.t_end)
                             for _ in range(max(1, args.repeat))]
                    print(f"master loop at 1 ms, fmpy {style}, fast path {'on' if fast else 'off'}: "
                          f"{spread(walls, chunks, args.t_end)}")
            native_host(path, Path(tmp), speed, torque, args.t_end, args.repeat)


def native_host(path, folder: Path, speed: float, torque: float, t_end: float, repeat: int) -> None:
    """The master loop in the C host (fmi2_host --timing: the wall time per step of its loop)."""
    import statistics
    import subprocess
    import xml.etree.ElementTree as ET
    import zipfile

    from belt_fmu.build import native

    if native.compiler() is None:
        print("C host: no C compiler, skipped")
        return
    host = folder / "fmi2_host"
    source = Path(__file__).resolve().parent.parent / "fmu_tests" / "native" / "fmi2_host.c"
    subprocess.run([native.compiler(), "-O2", "-o", str(host), str(source), "-ldl"], check=True)
    unpacked = folder / "unpacked"
    with zipfile.ZipFile(path) as z:
        z.extractall(unpacked)
    root = ET.parse(unpacked / "modelDescription.xml").getroot()
    vr = {v.get("name"): v.get("valueReference") for v in root.iter("ScalarVariable")}
    outputs = [v.get("valueReference") for v in root.iter("ScalarVariable") if v.get("causality") == "output"]
    steps = round(t_end / 1e-3)
    command = [str(host), str(unpacked), "BeltDrive", root.get("guid"), "--string", f"{vr['model']}=lumped",
               "--set", f"{vr['crank_speed']}={speed!r}", "--set", f"{vr['water_pump_torque']}={torque!r}",
               "--each-step", "--steps", str(steps), "--step", "1e-3", "--out", ",".join(outputs), "--timing"]
    for fast in (True, False):
        env = {**os.environ, "BELT_FMU_NATIVE_FAST_PATH": "1" if fast else "0"}
        per_step = []
        for _ in range(max(1, repeat)):
            run = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
            per_step.append(float(next(line.split()[1] for line in run.stdout.splitlines()
                                       if line.startswith("us_per_step"))))
        best, median = min(per_step), statistics.median(per_step)
        print(f"master loop, C host, fast path {'on' if fast else 'off'}: {best:.3g} us per 1 ms step "
              f"(median {median:.3g}), real-time factor {1e3 / best:.4g} (median {1e3 / median:.4g})")


def master_loop(path, fast: bool, style: str, speed: float, torque: float, t_end: float) -> float:
    """Wall time [s] of a master's loop over ``t_end`` at 1 ms: the two inputs set (the crank
    speed varying), a step, all outputs read (module docstring)."""
    from belt_fmu.cosim import FmuInstance

    switch = "BELT_FMU_NATIVE_FAST_PATH"
    saved = os.environ.pop(switch, None)
    if not fast:
        os.environ[switch] = "0"  # the loader reads it at fmi2Instantiate
    try:
        inst = FmuInstance(path, instance_name="bench")
    finally:
        os.environ.pop(switch, None)
        if saved is not None:
            os.environ[switch] = saved
    try:
        inst.initialize({"model": "lumped", "crank_speed": speed, "water_pump_torque": torque})
        f, h = inst.fmu, 1e-3
        outputs = [inst.variables[n].valueReference for n in inst.names("output")]
        inputs = [inst.variables[n].valueReference for n in ("crank_speed", "water_pump_torque")]
        steps = round(t_end / h)
        crank = [speed * (1.0 + 0.02 * math.sin(0.01 * k)) for k in range(steps)]
        start = time.perf_counter()
        if style == "methods":
            for k in range(steps):
                f.setReal(inputs, [crank[k], torque])
                f.doStep(k * h, h)
                f.getReal(outputs)
        else:
            in_vr = (ctypes.c_uint * 2)(*inputs)
            in_value = (ctypes.c_double * 2)(speed, torque)
            out_vr = (ctypes.c_uint * len(outputs))(*outputs)
            out_value = (ctypes.c_double * len(outputs))()
            component, n_out = f.component, len(outputs)
            functions = f.dll if style == "ctypes" else f
            set_real, do_step, get_real = functions.fmi2SetReal, functions.fmi2DoStep, functions.fmi2GetReal
            for k in range(steps):
                in_value[0] = crank[k]
                status = (set_real(component, in_vr, 2, in_value) | do_step(component, k * h, h, 1)
                          | get_real(component, out_vr, n_out, out_value))
                if status:  # fmi2OK is 0; the wrappers raise on errors themselves
                    raise RuntimeError(f"FMI call failed with status {status} at step {k}")
        return time.perf_counter() - start
    finally:
        inst.close()


if __name__ == "__main__":
    main()
