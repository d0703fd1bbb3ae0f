"""Time the linear analysis: the modes of a drive at one speed, a harmonic response over
speed, and a Campbell diagram.

    python benchmarks/bench_modes.py [--layout FILE] [--rpm 800] [--count 12] [--speeds 40]
                                     [--campbell-rpm 500:6000] [--workers N]
                                     [--response-speeds 60] [--response-rpm 500:3000]
                                     [--parts modes response lumped-response campbell]

Prints one ``key: value`` per line: layout, elements, the wall time of the operating point
(reset and settling run), of the modes (linearization at each instant of the polygon period
and eigenvalues), their sum, the wall time of ``belt-fmu response``'s computation over
``--response-speeds`` speeds (the sweep's default excitation, in this process: one core), the
same with the lumped model (its own step linearized at every speed), and
the wall time of a Campbell diagram of ``--speeds`` speeds on ``--workers`` local processes
(default: the available cores). The kernels are compiled (and the worker pool's cache warmed)
before timing. ``--parts`` times only those parts.
"""
from __future__ import annotations

import argparse
import math
import time

from belt_fmu import load_layout
from belt_fmu.analysis.campbell import campbell
from belt_fmu.analysis.linearization import linearization_layout
from belt_fmu.analysis.modes import modes
from belt_fmu.analysis.operating_point import operating_point
from belt_fmu.analysis.response import Excitation, response
from belt_fmu.sweep import RunSettings, default_workers


PARTS = ("modes", "response", "lumped-response", "campbell")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--rpm", type=float, default=800.0, help="crank speed of the single analysis [rpm]")
    parser.add_argument("--count", type=int, default=12, help="modes per speed (default: %(default)s)")
    parser.add_argument("--speeds", type=int, default=40, help="speeds of the Campbell diagram (default: %(default)s)")
    parser.add_argument("--campbell-rpm", default="500:6000", metavar="START:STOP",
                        help="speed range of the Campbell diagram [rpm] (default: %(default)s)")
    parser.add_argument("--workers", type=int, help="worker processes (default: the available cores)")
    parser.add_argument("--response-speeds", type=int, default=60,
                        help="speeds of the harmonic response (default: %(default)s)")
    parser.add_argument("--response-rpm", default="500:3000", metavar="START:STOP",
                        help="speed range of the harmonic response [rpm] (default: %(default)s)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=PARTS, help="what to time (default: all)")
    args = parser.parse_args(argv)
    layout = load_layout(args.layout)
    start, stop = (float(x) for x in args.campbell_rpm.split(":"))
    workers = args.workers or default_workers()

    print(f"layout: {layout.source}")
    print(f"elements: {layout.belt.n_elements}")
    low, high = (float(x) for x in args.response_rpm.split(":"))
    excitation = Excitation(RunSettings())
    if "modes" in args.parts or "response" in args.parts:
        point = operating_point(linearization_layout(layout), args.rpm)  # compiles the kernels
        modes(point, args.count)
        begin = time.perf_counter()
        point = operating_point(linearization_layout(layout), args.rpm, drive=point.drive)
        middle = time.perf_counter()
        found = modes(point, args.count)
        end = time.perf_counter()
        print(f"modes found: {len(found)} at {args.rpm:g} rpm, lowest {found.frequencies[0]:.2f} Hz")
        print(f"operating point wall time: {middle - begin:.3g} s")
        print(f"modes wall time: {end - middle:.3g} s")
        print(f"one speed wall time: {end - begin:.3g} s (operating point + modes)")
    if "response" in args.parts:
        response(layout, [low], excitation, drive=point.drive)  # compiles the analysis kernels
        begin = time.perf_counter()
        result = response(layout, [low + (high - low) * k / max(1, args.response_speeds - 1)
                                   for k in range(args.response_speeds)], excitation, drive=point.drive)
        wall = time.perf_counter() - begin
        print(f"response: {args.response_speeds} speeds, {len(result.anchors)} operating points, tensioner peak "
              f"{math.degrees(result.peak.arm_amplitude):.3g} deg at {result.peak.rpm:.0f} rpm")
        print(f"response wall time: {wall:.3g} s (one process)")
    if "lumped-response" in args.parts:
        from belt_fmu.model.lumped_system import LumpedDrive

        lumped = layout.with_drive(model="lumped")
        response(lumped, [low], excitation)  # compiles what the lumped response needs
        drive = LumpedDrive(lumped)  # a new one: its first speed differences every component
        begin = time.perf_counter()
        result = response(lumped, [low + (high - low) * k / max(1, args.response_speeds - 1)
                                   for k in range(args.response_speeds)], excitation, drive=drive)
        wall = time.perf_counter() - begin
        print(f"lumped response: {args.response_speeds} speeds, tensioner peak "
              f"{math.degrees(result.peak.arm_amplitude):.3g} deg at {result.peak.rpm:.0f} rpm")
        print(f"lumped response wall time: {wall:.3g} s (one process)")
    if "campbell" in args.parts:
        rpms = [start + (stop - start) * k / max(1, args.speeds - 1) for k in range(args.speeds)]
        begin = time.perf_counter()
        result = campbell(layout, rpms, [2.0, 4.0], args.count, workers=workers)
        wall = time.perf_counter() - begin
        print(f"campbell: {args.speeds} speeds x {args.count} modes on {workers} process(es), "
              f"{len(result.failures)} failed, {len(result.crossings)} crossings")
        print(f"campbell wall time: {wall:.3g} s (worker start-up included)")


if __name__ == "__main__":
    main()
