"""Time the model: ``BeltDrive.advance`` over a run, in chunks of 1 ms as a co-simulation
master would call it, after the JIT has been warmed up.

    python benchmarks/bench_model.py [--layout FILE] [--elements N] [--rpm 800] [--t-end 1.0]

Prints one ``key: value`` per line: layout, elements, time step, steps, wall time,
real-time factor (simulated / wall), microseconds per step, and the time to build and reset
a drive (reset includes the settling run, see ``BeltDrive.reset``).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import time

from belt_fmu import BeltDrive, load_layout

RPM = 2.0 * math.pi / 60.0  # rad/s per rpm
#: communication step of the timed run [s], as an FMU master would call do_step
CHUNK = 1e-3
#: fewest belt elements a benchmark figure is quoted for (the default layout's count; coarser
#: belts are faster but their polygon effect is stronger, docs/references.md R6)
MIN_ELEMENTS = 150


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--elements", type=int, help="number of belt elements (default: the layout's)")
    parser.add_argument("--friction", help="friction law instead of the layout's (creep_polynomial, tanh, bristle, "
                                           "dahl, lugre, gms)")
    parser.add_argument("--min-elements", type=int, default=MIN_ELEMENTS,
                        help="refuse belts with fewer elements (default: %(default)s)")
    parser.add_argument("--rpm", type=float, default=800.0, help="crank speed [rpm] (default: %(default)g)")
    parser.add_argument("--t-end", type=float, default=1.0, help="timed simulated time [s] (default: %(default)g)")
    parser.add_argument("--water-pump-torque", type=float, default=0.0,
                        help="water-pump load torque [N m] (default: %(default)g)")
    args = parser.parse_args(argv)
    if not (args.t_end >= CHUNK and math.isfinite(args.t_end)):
        parser.error(f"argument --t-end: must be >= {CHUNK:g} s")
    if not (args.rpm >= 0.0 and math.isfinite(args.rpm)):
        parser.error("argument --rpm: must be a finite speed >= 0")

    layout = load_layout(args.layout)
    if args.elements is not None:
        layout = dataclasses.replace(layout, belt=dataclasses.replace(layout.belt, n_elements=args.elements))
    if args.friction is not None:
        layout = dataclasses.replace(layout, friction=dataclasses.replace(layout.friction, law=args.friction))
    elements = layout.belt.n_elements
    if elements < 12:  # the layout rule for n_elements (docs/layout-format.md)
        parser.error(f"argument --elements: {elements} must be >= 12")
    if elements < args.min_elements:
        parser.error(f"{elements} belt elements < --min-elements {args.min_elements}; "
                     "lower --min-elements to time a coarser belt")
    speed = args.rpm * RPM
    torque = args.water_pump_torque

    # warm-up: load or compile every kernel once
    warm = BeltDrive(layout)
    warm.reset(speed, torque, settle_time=0.0)
    warm.advance(10 * warm.dt, speed, torque)

    start = time.perf_counter()
    drive = BeltDrive(layout)
    drive.reset(speed, torque)
    setup = time.perf_counter() - start

    chunks = round(args.t_end / CHUNK)
    steps_per_chunk = max(1, math.ceil(CHUNK / drive.dt - 1e-9))  # as BeltDrive.advance splits it
    start = time.perf_counter()
    for _ in range(chunks):
        drive.advance(CHUNK, speed, torque)
    wall = time.perf_counter() - start
    simulated = chunks * CHUNK
    steps = chunks * steps_per_chunk

    report = {
        "layout": f"{layout.drive.name} ({layout.source})",
        "elements": elements,
        "rpm": f"{args.rpm:g}",
        "time step dt [s]": f"{CHUNK / steps_per_chunk:.4g} (largest allowed, BeltDrive.dt: {drive.dt:.4g})",
        "steps": steps,
        "simulated [s]": f"{simulated:g}",
        "wall time [s]": f"{wall:.4g}",
        "real-time factor": f"{simulated / wall:.4g}",
        "us per step": f"{1e6 * wall / steps:.4g}",
        "build + reset [s]": f"{setup:.4g}",
    }
    for key, value in report.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
