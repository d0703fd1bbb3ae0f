"""The lumped model against the discretized belt on a layout at one speed: the mean of every
span tension, hub force and the crank torque over the last half of a run, both models from
their steady running state at the same inputs, and their difference. Prints a table; no
timing.

    python benchmarks/compare_levels.py [--layout FILE] [--rpm 800] [--water-pump-torque 2] [--t-end 0.4]
"""
from __future__ import annotations

import argparse

import numpy as np

from belt_fmu import load_layout
from belt_fmu.model.outputs import pulley_output_name, span_output_name, spans
from belt_fmu.simulation import simulate


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--rpm", type=float, default=800.0)
    parser.add_argument("--water-pump-torque", type=float, default=2.0)
    parser.add_argument("--t-end", type=float, default=0.4)
    args = parser.parse_args(argv)
    base = load_layout(args.layout)
    names = [p.name for p in base.pulleys]
    columns = ([span_output_name("span_tension", a, b) for a, b in spans(names)]
               + [pulley_output_name("hub_force", name) for name in names] + ["crank_torque"])
    means = {}
    for model in ("lumped", "discretized"):
        layout = base.with_drive(model=model)
        results = simulate(layout, rpm=args.rpm, t_end=args.t_end, water_pump_torque=args.water_pump_torque,
                           output_interval=1e-4)
        half = results["time"] >= 0.5 * args.t_end
        means[model] = {name: float(np.mean(results[name][half])) for name in columns}
    print(f"{base.drive.name}, {base.belt.n_elements} elements, {args.rpm:g} rpm, water-pump torque "
          f"{args.water_pump_torque:g} N.m, means over t = {0.5 * args.t_end:g} to {args.t_end:g} s")
    print(f"{'output':45s} {'lumped':>10s} {'discretized':>12s} {'disc./lumped - 1':>17s}")
    for name in columns:
        lumped, discretized = means["lumped"][name], means["discretized"][name]
        print(f"{name:45s} {lumped:10.4g} {discretized:12.4g} {100.0 * (discretized / lumped - 1.0):+16.2f} %")


if __name__ == "__main__":
    main()
