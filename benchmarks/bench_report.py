"""Time ``belt-fmu report``: the design report of a drive over a duty cycle of N points.

    python benchmarks/bench_report.py [--layout FILE] [--points 12] [--rpm 650:2300]

The duty cycle: ``--points`` engine speeds evenly over ``--rpm``, each alternator of the
built-in drive at 0.5 kW + 1 kW per 1000 rpm, the water pump at 1 N m + 3 N m per 1000 rpm
(other layouts: their own loads). The kernels are compiled first (a one-point report), then
prints ``key: value`` lines: layout, points, the wall time of the computation (static chain,
operating points, forced response, fatigue, modes and Campbell crossings), of the HTML
(figures included), and their sum.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from belt_fmu import design_report, load_layout
from belt_fmu.duty import DutyCycle, DutyPoint


def duty_cycle(layout, count: int, low: float, high: float) -> DutyCycle:
    names = {p.name for p in layout.pulleys}
    points = []
    for rpm in np.linspace(low, high, count):
        power = {n: 500.0 + rpm for n in ("alternator1", "alternator2") if n in names}
        torque = {"water_pump": 1.0 + 3e-3 * rpm} if "water_pump" in names else {}
        points.append(DutyPoint(f"{rpm:.0f} rpm", float(rpm), 1.0 / count, power, torque))
    return DutyCycle(tuple(points), f"{count} points, {low:g} to {high:g} rpm")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--points", type=int, default=12, help="duty points (default: %(default)s)")
    parser.add_argument("--rpm", default="650:2300", metavar="START:STOP",
                        help="engine speed range [rpm] (default: %(default)s)")
    args = parser.parse_args(argv)
    layout = load_layout(args.layout)
    low, high = (float(x) for x in args.rpm.split(":"))
    design_report.build(layout, duty_cycle(layout, 1, low, low), campbell_speeds=2)  # compiles the kernels
    begin = time.perf_counter()
    report = design_report.build(layout, duty_cycle(layout, args.points, low, high))
    built = time.perf_counter()
    design_report.render(report)
    done = time.perf_counter()
    print(f"layout: {layout.source}")
    print(f"points: {args.points}")
    print(f"compute: {built - begin:.3g} s")
    print(f"html: {done - built:.3g} s")
    print(f"total: {done - begin:.3g} s")


if __name__ == "__main__":
    main()
