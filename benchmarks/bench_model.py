"""Time the model: ``BeltDrive.advance`` over a run, in chunks of 1 ms as a co-simulation
master would call it, after the JIT has been warmed up, for belts of several element counts.

    python benchmarks/bench_model.py [--layout FILE] [--elements 150 300 600] [--friction LAW]
                                     [--rpm 800] [--t-end 1.0] [--t-end-fine 0.25] [--repeats 3]

Prints the layout, then one row per element count: the time step, the steps timed, the
microseconds per step and the wall time per simulated second (the minimum and the median of
``--repeats`` timed runs: the machine is shared, the minimum is the least disturbed), the
real-time factor of the best run and the time to build and reset a drive (reset includes the
settling run, see ``BeltDrive.reset``). Belts finer than the first count run ``--t-end-fine``
simulated seconds instead of ``--t-end``.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import time

from belt_fmu import BeltDrive, load_layout

RPM = 2.0 * math.pi / 60.0  # rad/s per rpm
#: communication step of the timed run [s], as an FMU master would call do_step
CHUNK = 1e-3
#: fewest belt elements a benchmark figure is quoted for (the default layout's count; coarser
#: belts are faster but their polygon effect is stronger, docs/references.md R6)
MIN_ELEMENTS = 150
ELEMENTS = (150, 300, 600)


def time_belt(layout, speed: float, torque: float, t_end: float, repeats: int) -> dict:
    """Build, reset and time ``layout``'s drive: the figures of one row (module docstring)."""
    warm = BeltDrive(layout)  # warm-up: load or compile every kernel once
    warm.reset(speed, torque, settle_time=0.0)
    warm.advance(10 * warm.dt, speed, torque)

    start = time.perf_counter()
    drive = BeltDrive(layout)
    drive.reset(speed, torque)
    setup = time.perf_counter() - start

    chunks = max(1, round(t_end / CHUNK))
    steps_per_chunk = max(1, math.ceil(CHUNK / drive.dt - 1e-9))  # as BeltDrive.advance splits it
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(chunks):
            drive.advance(CHUNK, speed, torque)
        walls.append(time.perf_counter() - start)
    simulated = chunks * CHUNK
    steps = chunks * steps_per_chunk
    best, median = min(walls), statistics.median(walls)
    return {
        "elements": layout.belt.n_elements,
        "dt [s]": f"{CHUNK / steps_per_chunk:.4g}",
        "steps": steps,
        "us/step min": f"{1e6 * best / steps:.3g}",
        "us/step median": f"{1e6 * median / steps:.3g}",
        "wall/sim s min": f"{best / simulated:.3g}",
        "wall/sim s median": f"{median / simulated:.3g}",
        "real-time factor": f"{simulated / best:.3g}",
        "build+reset [s]": f"{setup:.3g}",
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--elements", type=int, nargs="+", default=list(ELEMENTS),
                        help="numbers of belt elements (default: %(default)s)")
    parser.add_argument("--friction", help="friction law instead of the layout's (creep_polynomial, tanh, bristle, "
                                           "dahl, lugre, gms)")
    parser.add_argument("--min-elements", type=int, default=MIN_ELEMENTS,
                        help="refuse belts with fewer elements (default: %(default)s)")
    parser.add_argument("--rpm", type=float, default=800.0, help="crank speed [rpm] (default: %(default)g)")
    parser.add_argument("--t-end", type=float, default=1.0,
                        help="timed simulated time [s] of the first element count (default: %(default)g)")
    parser.add_argument("--t-end-fine", type=float, default=0.25,
                        help="timed simulated time [s] of the finer belts (default: %(default)g)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per belt (default: %(default)s)")
    parser.add_argument("--water-pump-torque", type=float, default=0.0,
                        help="water-pump load torque [N m] (default: %(default)g)")
    args = parser.parse_args(argv)
    for name in ("t_end", "t_end_fine"):
        value = getattr(args, name)
        if not (value >= CHUNK and math.isfinite(value)):
            parser.error(f"argument --{name.replace('_', '-')}: must be >= {CHUNK:g} s")
    if not (args.rpm >= 0.0 and math.isfinite(args.rpm)):
        parser.error("argument --rpm: must be a finite speed >= 0")
    if args.repeats < 1:
        parser.error("argument --repeats: must be >= 1")
    for elements in args.elements:
        if elements < 12:  # the layout rule for n_elements (docs/layout-format.md)
            parser.error(f"argument --elements: {elements} must be >= 12")
        if elements < args.min_elements:
            parser.error(f"{elements} belt elements < --min-elements {args.min_elements}; "
                         "lower --min-elements to time a coarser belt")

    layout = load_layout(args.layout)
    if args.friction is not None:
        layout = dataclasses.replace(layout, friction=dataclasses.replace(layout.friction, law=args.friction))
    print(f"layout: {layout.drive.name} ({layout.source})")
    print(f"friction: {layout.friction.law}, {args.rpm:g} rpm, chunks of {CHUNK:g} s, {args.repeats} timed runs "
          "(min, median)")
    rows = []
    for k, elements in enumerate(args.elements):
        belt = dataclasses.replace(layout.belt, n_elements=elements)
        rows.append(time_belt(dataclasses.replace(layout, belt=belt), args.rpm * RPM, args.water_pump_torque,
                              args.t_end if k == 0 else args.t_end_fine, args.repeats))
    keys = list(rows[0])
    widths = [max(len(key), *(len(str(row[key])) for row in rows)) for key in keys]
    print("  ".join(key.rjust(width) for key, width in zip(keys, widths)))
    for row in rows:
        print("  ".join(str(row[key]).rjust(width) for key, width in zip(keys, widths)))


if __name__ == "__main__":
    main()
