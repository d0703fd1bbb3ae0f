"""Time the engine-speed sweep of `belt-fmu sweep` with the lumped model and with the
discretized belt, back to back in one process: the default speeds (500 to 2300 rpm, 19) and
run settings on the built-in layout, each run serial. Prints the wall time of each, its
real-time factor (simulated time, the resets' settling included, over wall time) and the
ratio. Prints one ``key: value`` per line.

    taskset -c 1 python benchmarks/bench_sweep_models.py [--layout FILE] [--rpm 500:2300:19] [--repeat 1]

Each sweep runs after a one-run warm-up sweep that loads its kernels, builds the sweep's
drive and imports its filters in this process; with ``--repeat`` the fastest of the repeats
is kept (other load on the machine only ever slows a run down).
"""
from __future__ import annotations

import argparse
import platform
import time

from belt_fmu import load_layout
from belt_fmu.model.system import SETTLE_TIME
from belt_fmu.sweep import RunSettings, parse_values, plan, sweep


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--rpm", default="500:2300:19", help="speeds as belt-fmu sweep takes them (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=1, help="time each sweep this often, keep the fastest")
    args = parser.parse_args(argv)

    base = load_layout(args.layout)
    speeds = [float(x) for x in parse_values(args.rpm)]
    settings = RunSettings()
    walls = {}
    for model in ("lumped", "discretized"):
        layout = base.with_drive(model=model)
        runs = plan(layout, speeds, settings)
        # warm-up: a one-run sweep loads the kernels, builds the sweep's drive and imports the
        # filters here (a first sweep in a process took 0.5 s more for 19 lumped runs)
        sweep(plan(layout, speeds[:1], settings), workers=1)
        best = None
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = sweep(runs, workers=1)
            wall = time.perf_counter() - start
            best = wall if best is None else min(best, wall)
        walls[model] = best
        simulated = sum(run.simulated_time for run in runs.runs) + SETTLE_TIME * len(runs.runs)
        per_run = sum(float(row["wall_time [s]"]) for row in result.table.rows)
        print(f"{model} sweep wall time [s]: {best:.4g} ({len(runs.runs)} runs, sum of the runs {per_run:.4g}; "
              f"failed {len(result.failures)})")
        print(f"{model} simulated [s]: {simulated:.4g} (resets' settling included); real-time factor "
              f"{simulated / best:.3g}")
    print(f"ratio discretized / lumped: {walls['discretized'] / walls['lumped']:.3g}")
    print(f"cpu: {cpu_name()}")


if __name__ == "__main__":
    main()
