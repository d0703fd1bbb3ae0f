"""Time the lumped rotational model (``[drive] model = "lumped"``, issue 11).

    python benchmarks/bench_lumped.py [--layout FILE] [--rpm 800] [--t-end 10] [--cycle 1800] [--fmu]

Prints ``key: value`` lines, each with the real-time factor (simulated / wall time):

1. the model alone: ``LumpedDrive.advance`` over --t-end s in one call (the kernel's own
   speed) and in 1 ms chunks (as a co-simulation master calls it);
2. a drive cycle of --cycle s: crank speed as a function of time, idle with ramps to 1500,
   2200 and 3000 rpm and back, held between them, the water-pump load 1 + 2e-4 w^2 N m,
   in 10 ms chunks; checks that every output stays finite;
3. with --fmu: the FMU of the layout, parameter model = "lumped", co-simulated in fmpy at a
   1 ms communication step for --t-end s (belt_fmu.cosim, inputs set and all outputs read
   every step).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--rpm", type=float, default=800.0, help="crank speed [rpm] (default: %(default)g)")
    parser.add_argument("--t-end", type=float, default=10.0, help="timed simulated time [s] (default: %(default)g)")
    parser.add_argument("--water-pump-torque", type=float, default=2.0, help="[N m] (default: %(default)g)")
    parser.add_argument("--cycle", type=float, default=1800.0, help="drive-cycle length [s], 0 to skip "
                                                                   "(default: %(default)g)")
    parser.add_argument("--fmu", action="store_true", help="also time the FMU in fmpy at a 1 ms step")
    args = parser.parse_args(argv)

    layout = load_layout(args.layout)
    layout = dataclasses.replace(layout, drive=dataclasses.replace(layout.drive, model="lumped"))
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

    start = time.perf_counter()
    drive.advance(args.t_end, speed, torque)
    wall = time.perf_counter() - start
    steps = math.ceil(args.t_end / drive.dt - 1e-9)
    print(f"one call, {args.t_end:g} s: wall {wall:.4g} s, real-time factor {args.t_end / wall:.4g}, "
          f"{1e6 * wall / steps:.3g} us per step")

    chunks = round(args.t_end / 1e-3)
    start = time.perf_counter()
    for _ in range(chunks):
        drive.advance(1e-3, speed, torque)
    wall = time.perf_counter() - start
    print(f"1 ms chunks, {args.t_end:g} s: wall {wall:.4g} s, real-time factor {args.t_end / wall:.4g}")

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
        from belt_fmu.build import build_fmu
        from belt_fmu.cosim import cosimulate

        with tempfile.TemporaryDirectory(prefix="belt_fmu_bench_") as tmp:
            path = build_fmu(args.layout, Path(tmp) / "BeltDrive.fmu", crank_speed=speed, water_pump_torque=torque)
            results = cosimulate(path, rpm=args.rpm, water_pump_torque=torque, t_end=args.t_end, step_size=1e-3,
                                 parameters={"model": "lumped"})
            print(f"FMU in fmpy, 1 ms communication step, {args.t_end:g} s: stepping wall {results.wall_time:.4g} s, "
                  f"real-time factor {results.real_time_factor:.4g} (load {results.load_time:.3g} s)")


if __name__ == "__main__":
    main()
