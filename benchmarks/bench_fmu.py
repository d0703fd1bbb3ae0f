"""Benchmark the FMU: load time, co-simulation speed and the overhead of each doStep.

    python benchmarks/bench_fmu.py [--fmu BeltDrive.fmu] [--t-end 1.0] [--step 1e-4]

1. Load time with a warm JIT cache: in fresh processes, the wall time from loading the FMU
   (unpack, instantiate, initialize) to the end of its first step.
2. Co-simulation of the default layout at 800 rpm: a master loop (set both inputs, doStep,
   read four outputs) over --t-end s in --step communication steps: wall time and real-time
   factor; then the same steps of the Python model from the same state, so that
   overhead per doStep = (master loop per step) - (model advance per step).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOAD_PROBE = """
import os, sys, time
start = time.perf_counter()
from belt_fmu.cosim import FmuInstance
fmu = FmuInstance(sys.argv[1])
fmu.initialize({"crank_speed": 83.776, "water_pump_torque": 2.0})
fmu.step(1e-4)
print(time.perf_counter() - start)
fmu.close()
"""

HEADLINE = ["tensioner_angle", "bearing_force", "crank_torque", "water_pump_speed"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fmu", help="FMU to measure (default: build the built-in layout's)")
    parser.add_argument("--t-end", type=float, default=1.0, help="simulated time [s] (default 1)")
    parser.add_argument("--step", type=float, default=1e-4, help="communication step [s] (default 1e-4)")
    parser.add_argument("--loads", type=int, default=3, help="fresh-process load measurements (default 3)")
    args = parser.parse_args()

    import importlib

    from belt_fmu.build import build_fmu
    from belt_fmu.cosim import FmuInstance
    from belt_fmu.simulation import RPM

    tmp = tempfile.mkdtemp(prefix="belt_fmu_bench_")
    if args.fmu is None:
        start = time.perf_counter()
        fmu_path = build_fmu(None, Path(tmp) / "BeltDrive.fmu")
        print(f"build (JIT cache warmed): {time.perf_counter() - start:.2f} s")
    else:
        fmu_path = Path(args.fmu)
    print(f"fmu: {fmu_path}")

    loads = [float(subprocess.run([sys.executable, "-c", LOAD_PROBE, str(fmu_path)], check=True,
                                  capture_output=True, text=True).stdout.strip().splitlines()[-1])
             for _ in range(args.loads)]
    print(f"load to first step, warm JIT cache [s]: median {statistics.median(loads):.3f}, "
          f"min {min(loads):.3f}, max {max(loads):.3f} ({args.loads} fresh processes)")

    crank, pump = 800 * RPM, 2.0
    n_steps = int(round(args.t_end / args.step))
    instance = FmuInstance(fmu_path)
    instance.initialize({"crank_speed": crank, "water_pump_torque": pump})
    # the reference physics runs the FMU's own copy of the model package: the same code
    model = importlib.import_module("belt_fmu.slave")
    drive = model.BeltDrive(model.load_layout_data(instance.layout_data))
    drive.reset(crank, pump)

    fmu = instance.fmu
    inputs = [instance.variables[n].valueReference for n in ("crank_speed", "water_pump_torque")]
    headline = [instance.variables[n].valueReference for n in HEADLINE]
    every = [instance.variables[n].valueReference for n in instance.names("output")]

    def master_loop(outputs, steps):
        t = instance.time
        start = time.perf_counter()
        for k in range(steps):
            fmu.setReal(inputs, [crank, pump])
            fmu.doStep(t + k * args.step, args.step)
            fmu.getReal(outputs)
        instance.time = t + steps * args.step
        return time.perf_counter() - start

    def model_loop(steps):
        start = time.perf_counter()
        for _ in range(steps):
            drive.advance(args.step, crank, pump)
        return time.perf_counter() - start

    wall = master_loop(headline, n_steps)
    physics = model_loop(n_steps)
    wall_all = master_loop(every, n_steps // 10)
    physics_all = model_loop(n_steps // 10)
    per_step, per_physics = wall / n_steps * 1e6, physics / n_steps * 1e6
    print(f"co-simulation: {args.t_end:g} s in {n_steps} steps of {args.step:g} s (800 rpm, "
          f"{drive.layout.belt.n_elements} elements, internal step {drive.dt:g} s)")
    print(f"wall time [s]: {wall:.3f}")
    print(f"real-time factor: {args.t_end / wall:.3f}")
    print(f"per doStep (set 2 inputs, doStep, get {len(HEADLINE)} outputs) [us]: {per_step:.1f}")
    print(f"model advance per step, same state, no FMU [us]: {per_physics:.1f}")
    print(f"overhead per doStep beyond the physics [us]: {per_step - per_physics:.1f}")
    print(f"overhead per doStep reading all {len(every)} outputs [us]: "
          f"{(wall_all - physics_all) / (n_steps // 10) * 1e6:.1f}")
    instance.close()


if __name__ == "__main__":
    main()
