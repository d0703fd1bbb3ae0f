"""Time an engine-speed sweep: 10 speeds from 500 to 2300 rpm on the built-in layout, run
serially in this process and then on local worker processes; print both wall times and the
speed-up, and check that both give the same table.

    python benchmarks/bench_sweep.py [--layout FILE] [--workers N] [--settle-cycles 4] [--cycles 2] [--repeat 2]

The runs use the sweep's defaults (2nd-order +-40 rpm irregularity, 4 settling and 2
evaluated engine cycles, outputs every 0.1 ms): 6.6 s of simulated time in all after the
resets (which settle 0.15 s each), most of it at the low speeds, whose engine cycles are
longest. The serial loop runs after a warm-up
that loads the compiled kernels into this process; the parallel time includes starting the
workers and loading the kernels in each, as a user pays them. Each sweep is timed
``--repeat`` times, alternating, and the fastest kept (about a minute in all with the
defaults). Prints one ``key: value`` per line.
"""
from __future__ import annotations

import argparse

import numpy as np

from belt_fmu import load_layout
from belt_fmu.simulation import simulate
from belt_fmu.sweep import RunSettings, default_workers, plan, sweep

SPEEDS = np.linspace(500.0, 2300.0, 10)  # [rpm], [Scania thesis]'s range


def main(argv=None) -> None:
    defaults = RunSettings()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--workers", type=int, default=max(2, default_workers()),
                        help="worker processes of the parallel sweep (default: %(default)s)")
    parser.add_argument("--settle-cycles", type=int, default=defaults.settle_cycles,
                        help="engine cycles settled per run (default: %(default)s)")
    parser.add_argument("--cycles", type=int, default=defaults.cycles,
                        help="engine cycles evaluated per run (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=2,
                        help="time each sweep this often, alternating, and keep the fastest: other load on "
                             "the machine only ever slows a run down (default: %(default)s)")
    args = parser.parse_args(argv)

    layout = load_layout(args.layout)
    settings = RunSettings(settle_cycles=args.settle_cycles, cycles=args.cycles)
    runs = plan(layout, SPEEDS, settings)
    simulate(layout, rpm=800.0, t_end=1e-3, settle_time=0.0)  # warm-up: load the kernels here

    serial, parallel = [], []
    for _ in range(args.repeat):
        serial.append(sweep(runs, workers=1))
        parallel.append(sweep(runs, workers=args.workers))
    serial = min(serial, key=lambda result: result.wall_time)
    parallel = min(parallel, key=lambda result: result.wall_time)

    def results(table):
        return [{k: v for k, v in row.items() if k != "wall_time [s]"} for row in table.rows]

    per_run = sum(float(row["wall_time [s]"]) for row in serial.table.rows)
    report = {
        "layout": f"{layout.drive.name} ({layout.source}), {layout.belt.n_elements} elements",
        "speeds [rpm]": ", ".join(f"{x:g}" for x in SPEEDS),
        "each run": f"reset (0.15 s settle at the mean speed), {args.settle_cycles} engine cycles settled, "
                    f"{args.cycles} evaluated, filter margin; +-{settings.irregularity_rpm:g} rpm of order "
                    f"{settings.order:g}; outputs every {settings.max_output_interval_s:g} s or finer",
        "simulated [s]": f"{sum(run.simulated_time for run in runs.runs):.4g} (after the resets)",
        "serial wall time [s]": f"{serial.wall_time:.4g} (sum of the runs: {per_run:.4g}; "
                                f"fastest of {args.repeat})",
        f"parallel wall time [s], {args.workers} processes": f"{parallel.wall_time:.4g} (worker start and "
                                                             f"kernel loading included; fastest of {args.repeat})",
        "speed-up": f"{serial.wall_time / parallel.wall_time:.3g}",
        "same results": results(serial.table) == results(parallel.table),
        "failed runs": len(serial.failures) + len(parallel.failures),
    }
    for key, value in report.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
