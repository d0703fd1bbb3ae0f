"""The discretized belt's bearing force at 2000 rpm reported every 1 ms, sampled and averaged
(``[drive] output_mode``), against samples every 10 us: range and mean over t = 0.1 to 0.3 s.
The polygon ripple (about 2 kHz) aliases into the 1 ms samples; their means over each 1 ms
do not alias. Prints one line per case; no timing.

    python benchmarks/output_modes.py [--rpm 2000] [--interval 1e-3]
"""
from __future__ import annotations

import argparse

from belt_fmu import load_layout
from belt_fmu.simulation import simulate


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rpm", type=float, default=2000.0)
    parser.add_argument("--interval", type=float, default=1e-3)
    args = parser.parse_args(argv)
    layout = load_layout()
    cases = [("sample", args.interval), ("average", args.interval), ("sample", 1e-5)]
    for mode, interval in cases:
        edited = layout.with_drive(output_mode=mode)
        results = simulate(edited, rpm=args.rpm, t_end=0.3, output_interval=interval, water_pump_torque=2.0)
        force = results["bearing_force"][results["time"] >= 0.1]
        print(f"{mode:7s} every {interval:g} s: bearing force {force.min():.1f} .. {force.max():.1f} N, "
              f"mean {force.mean():.1f} N")


if __name__ == "__main__":
    main()
