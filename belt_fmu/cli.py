"""Command line interface: ``belt-fmu layout``, ``simulate``, ``build`` and ``cosim``.

Each subcommand accepts only its own options. The model (numba), matplotlib and tqdm are
imported inside the command that needs them.

Exit status: 0 done; 1 an output file could not be written; 2 a bad command line (argparse)
or an invalid layout file (the message names the file, the field, the value and what is
allowed); 3 the model could not run the requested inputs (the integration diverged, or the
drive has no steady running state to start from); 130 interrupted. Expected failures print
one message to stderr, never a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import sys
import time
from pathlib import Path

from . import __version__
from .layout import FRICTION_LAWS, LayoutError

EXIT_OUTPUT = 1
EXIT_USAGE = 2  # argparse's status
EXIT_LAYOUT = 2
EXIT_MODEL = 3
EXIT_INTERRUPTED = 130

#: runs longer than this [s simulated] show a progress bar when stderr is a terminal
PROGRESS_MIN_T_END = 0.2
#: figure file suffixes the --plot options accept (see belt_fmu.plots.FORMATS)
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status
    (argparse's exits for ``--help`` and usage errors included: never raises SystemExit)."""
    try:
        args = _parser().parse_args(argv)
        return args.run(args)
    except SystemExit as done:  # argparse: --help, --version, usage errors
        return done.code if isinstance(done.code, int) else int(done.code is not None)
    except KeyboardInterrupt:
        print("belt-fmu: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        status = _failure_status(err)
        if status is None:  # a bug: keep the traceback
            raise
        print(f"belt-fmu {args.command}: error: {err}", file=sys.stderr)
        return status


def _failure_status(err: Exception) -> int | None:
    """Exit status of an expected failure, None for anything else."""
    if isinstance(err, LayoutError):
        return EXIT_LAYOUT
    from .model.initialization import InitializationError
    from .model.system import DivergenceError

    if isinstance(err, (DivergenceError, InitializationError)):
        return EXIT_MODEL
    return None


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def _real(allowed: str, condition=lambda x: True):
    """argparse type: a finite number satisfying ``condition``; ``allowed`` says which."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number; must be {allowed}") from None
        if not (math.isfinite(value) and condition(value)):
            raise argparse.ArgumentTypeError(f"{text!r}: must be {allowed}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="belt-fmu",
        description="Planar multibody belt-drive dynamics of engine front-end accessory drives.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    layout_help = "layout TOML file (docs/layout-format.md); default: the built-in 7-pulley drive"

    show = commands.add_parser(
        "layout", help="print a layout's belt geometry; optionally draw it",
        description="Print the belt (cord) length, each pulley's wrap angle and cord radius, the span "
                    "lengths and the tensioner arm of a layout; optionally draw the drive.",
    )
    show.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    show.add_argument("--plot", metavar="FIGURE", help="draw the drive to this file (.png, .pdf or .svg)")
    show.set_defaults(run=_layout_command, error=show.error)

    run = commands.add_parser(
        "simulate", help="simulate a drive at constant inputs; summary, CSV and plot",
        description="Simulate a drive from its steady running state at a constant crank speed and "
                    "water-pump torque. Prints mean/min/max of the main outputs over the last half "
                    "of the run, the wall time and the real-time factor.",
    )
    run.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    run.add_argument("--rpm", type=_real("a finite crank speed >= 0 [rpm]", lambda x: x >= 0.0), default=800.0,
                     metavar="RPM",
                     help="crank speed [rpm] (default: %(default)g)")
    run.add_argument("--t-end", type=_real("a finite time > 0 [s]", lambda x: x > 0.0), default=1.0,
                     metavar="SECONDS",
                     help="simulated time [s] (default: %(default)g)")
    run.add_argument("--water-pump-torque", type=_real("a finite torque [N m]"), default=0.0,
                     metavar="NM",
                     help="water-pump load torque [N m], positive against its rotation (default: %(default)g)")
    run.add_argument("--output-interval", type=_real("a finite time > 0 [s]", lambda x: x > 0.0), default=1e-4,
                     metavar="SECONDS",
                     help="output sampling interval [s] (default: %(default)g)")
    run.add_argument("--friction", choices=FRICTION_LAWS, metavar="LAW",
                     help="friction law instead of the layout's: " + ", ".join(FRICTION_LAWS))
    run.add_argument("--out", metavar="CSV", help="write the results table to this CSV file")
    run.add_argument("--plot", metavar="FIGURE", help="plot the results to this file (.png, .pdf or .svg)")
    run.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help=f"show a progress bar (default: when --t-end > {PROGRESS_MIN_T_END:g} s "
                          "and stderr is a terminal)")
    run.set_defaults(run=_simulate_command, error=run.error)

    build = commands.add_parser(
        "build", help="build an FMI 2.0 co-simulation FMU of a drive",
        description="Build an FMI 2.0 co-simulation FMU (PythonFMU) carrying the model and the layout. "
                    "The target machine needs Python >= 3.10 with numpy, scipy and numba.",
    )
    build.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    build.add_argument("-o", "--output", default="BeltDrive.fmu", metavar="FMU",
                       help="FMU file to write (default: %(default)s)")
    build.add_argument("--rpm", type=_real("a finite crank speed >= 0 [rpm]", lambda x: x >= 0.0), default=800.0,
                       metavar="RPM", help="start value of the crank_speed input [rpm] (default: %(default)g)")
    build.add_argument("--water-pump-torque", type=_real("a finite torque [N m]"), default=0.0, metavar="NM",
                       help="start value of the water_pump_torque input [N m] (default: %(default)g)")
    build.add_argument("--no-warm", dest="warm", action="store_false",
                       help="skip compiling the model's kernels into the per-user cache after the build")
    build.set_defaults(run=_build_command, error=build.error)

    cosim = commands.add_parser(
        "cosim", help="co-simulate an FMU with fmpy at constant inputs; summary, CSV and plot",
        description="Load a belt_fmu FMU with fmpy and co-simulate it with fixed communication steps at a "
                    "constant crank speed and water-pump torque. Prints the same summary as simulate, the "
                    "load time and the real-time factor.",
    )
    cosim.add_argument("fmu", metavar="FMU", help="the FMU file (from belt-fmu build)")
    cosim.add_argument("--rpm", type=_real("a finite crank speed >= 0 [rpm]", lambda x: x >= 0.0), default=800.0,
                       metavar="RPM", help="crank speed [rpm] (default: %(default)g)")
    cosim.add_argument("--t-end", type=_real("a finite time > 0 [s]", lambda x: x > 0.0), default=1.0,
                       metavar="SECONDS", help="simulated time [s] (default: %(default)g)")
    cosim.add_argument("--step", type=_real("a finite time > 0 [s]", lambda x: x > 0.0), default=1e-4,
                       metavar="SECONDS", help="communication step [s] (default: %(default)g)")
    cosim.add_argument("--water-pump-torque", type=_real("a finite torque [N m]"), default=0.0, metavar="NM",
                       help="water-pump load torque [N m], positive against its rotation (default: %(default)g)")
    cosim.add_argument("--out", metavar="CSV", help="write the results table to this CSV file")
    cosim.add_argument("--plot", metavar="FIGURE", help="plot the results to this file (.png, .pdf or .svg)")
    cosim.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help=f"show a progress bar (default: when --t-end > {PROGRESS_MIN_T_END:g} s "
                            "and stderr is a terminal)")
    cosim.set_defaults(run=_cosim_command, error=cosim.error)
    return parser


def _check_outputs(error, layout_path: str, outputs: dict[str, str | None]) -> None:
    """Refuse output paths that would overwrite the layout file or each other, lie in a
    missing directory, or (figures) have a format we cannot write. ``outputs`` maps each
    option (--out, --plot) to its path or None."""
    layout_path = Path(layout_path)
    seen = {}
    for option, path in outputs.items():
        if path is None:
            continue
        path = Path(path)
        if _same_file(path, layout_path):
            error(f"argument {option}: {path} is the input layout file; refusing to overwrite it")
        if path.resolve() in seen:
            error(f"argument {option}: {path} is also given to {seen[path.resolve()]}")
        seen[path.resolve()] = option
        if path.is_dir():
            error(f"argument {option}: {path} is a directory; give a file name")
        if not path.parent.is_dir():
            error(f"argument {option}: directory {path.parent} does not exist")
        if option == "--plot" and path.suffix.lower() not in FIGURE_SUFFIXES:
            error(f"argument {option}: {path}: unknown figure format; use a name ending in "
                  + ", ".join(FIGURE_SUFFIXES))


def _same_file(a: Path, b: Path) -> bool:
    """True if ``a`` and ``b`` name the same file (symlinks and hard links included)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _write(option: str, path: str, write) -> bool:
    """Call ``write(path)``; on an OSError print it and return False."""
    try:
        write(path)
    except OSError as err:
        print(f"belt-fmu: error: {option} {path}: cannot write: {err.strerror or err}", file=sys.stderr)
        return False
    print(f"wrote {path}")
    return True


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Plain-text table: first column left-aligned, the others right-aligned."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# belt-fmu layout
# ---------------------------------------------------------------------------------------------


def _layout_command(args) -> int:
    from .layout import load_layout
    from .model.geometry import BeltPath, cord_radius

    layout = load_layout(args.layout)
    _check_outputs(args.error, args.layout or layout.source, {"--plot": args.plot})
    path = BeltPath.from_layout(layout)
    names = [p.name for p in layout.pulleys]
    belt = layout.belt
    print(f"layout: {layout.source}")
    print(f"drive: {layout.drive.name} (crankshaft turns {layout.drive.crank_rotation} in the drawing)")
    print(f"belt length (cord line, installed): {path.length:.6g} m")
    if belt.pretension_N is not None:
        print(f"belt: {belt.n_elements} elements, pretension {belt.pretension_N:g} N")
    else:
        print(f"belt: {belt.n_elements} elements, unstretched length {belt.unstretched_length_m:g} m")
    print()
    print("pulleys, in belt travel order:")
    rows = [
        [p.name, p.role, p.side, f"{p.radius_m:.6g}", f"{cord_radius(layout, j):.6g}",
         f"{path.wrap_angle[j]:.4f}", f"{math.degrees(path.wrap_angle[j]):.1f}"]
        for j, p in enumerate(layout.pulleys)
    ]
    print(_table(["name", "role", "side", "radius [m]", "cord radius [m]", "wrap [rad]", "wrap [deg]"], rows))
    print()
    print("free spans:")
    rows = [[f"{names[j]} -> {names[(j + 1) % len(names)]}", f"{path.span_length[j]:.6g}"]
            for j in range(len(names))]
    print(_table(["span", "length [m]"], rows))
    if layout.tensioner is not None:
        pivot = layout.tensioner.pivot_m
        cx, cy = layout.pulleys[layout.tensioner_index].center_m
        angle = math.atan2(cy - pivot[1], cx - pivot[0])
        print()
        print(f"tensioner arm: pivot ({pivot[0]:g}, {pivot[1]:g}) m, "
              f"length {math.hypot(cx - pivot[0], cy - pivot[1]):.6g} m, "
              f"installed angle {angle:.6g} rad ({math.degrees(angle):.2f} deg; CCW from +x, "
              f"pulley centre about the pivot)")
    if args.plot is not None:
        from .plots import plot_layout, save_figure

        if not _write("--plot", args.plot, lambda p: save_figure(plot_layout(layout), p)):
            return EXIT_OUTPUT
    return 0


# ---------------------------------------------------------------------------------------------
# belt-fmu simulate
# ---------------------------------------------------------------------------------------------


def _simulate_command(args) -> int:
    from .layout import load_layout
    from .simulation import simulate

    if args.output_interval > args.t_end:
        args.error(f"argument --output-interval: {args.output_interval:g} s must be <= --t-end ({args.t_end:g} s)")
    layout = load_layout(args.layout)
    _check_outputs(args.error, args.layout or layout.source, {"--out": args.out, "--plot": args.plot})
    if args.friction is not None:
        layout = dataclasses.replace(layout, friction=dataclasses.replace(layout.friction, law=args.friction))
    start = time.perf_counter()
    with _progress_bar(args) as progress:
        results = simulate(layout, rpm=args.rpm, water_pump_torque=args.water_pump_torque, t_end=args.t_end,
                           output_interval=args.output_interval, progress=progress)
    total = time.perf_counter() - start
    print(f"layout: {layout.source}")
    print(f"inputs: crank {args.rpm:g} rpm, water-pump torque {args.water_pump_torque:g} N.m, "
          f"{args.t_end:g} s simulated; friction law {layout.friction.law}")
    print()
    print(_summary(results, layout))
    print()
    print(f"wall time: {results.wall_time:.3g} s integrating, {total:.3g} s in all "
          "(JIT compilation, build and settle included)")
    print(f"real-time factor: {results.real_time_factor:.3g} (simulated time / integration wall time)")
    ok = True
    if args.out is not None:
        ok &= _write("--out", args.out, results.to_csv)
    if args.plot is not None:
        from .plots import plot_results, save_figure

        ok &= _write("--plot", args.plot, lambda p: save_figure(plot_results(results, layout), p))
    return 0 if ok else EXIT_OUTPUT


# ---------------------------------------------------------------------------------------------
# belt-fmu build, belt-fmu cosim
# ---------------------------------------------------------------------------------------------


def _build_command(args) -> int:
    from .build import build_fmu
    from .simulation import RPM

    if args.layout is not None and _same_file(Path(args.output), Path(args.layout)):
        args.error(f"argument -o/--output: {args.output} is the input layout file; refusing to overwrite it")
    if not Path(args.output).resolve().parent.is_dir():
        args.error(f"argument -o/--output: directory {Path(args.output).parent} does not exist")
    if not args.output.endswith(".fmu"):
        args.error(f"argument -o/--output: {args.output} must end in .fmu")
    start = time.perf_counter()
    path = build_fmu(args.layout, args.output, crank_speed=args.rpm * RPM,
                     water_pump_torque=args.water_pump_torque, warm_cache=args.warm)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB) in {time.perf_counter() - start:.3g} s"
          + (" (kernels compiled into the per-user cache)" if args.warm else ""))
    return 0


def _cosim_command(args) -> int:
    from .cosim import cosimulate
    from .layout import load_layout_data

    if not Path(args.fmu).is_file():
        args.error(f"argument FMU: {args.fmu}: no such file")
    _check_outputs(args.error, args.fmu, {"--out": args.out, "--plot": args.plot})
    start = time.perf_counter()
    with _progress_bar(args) as progress:
        results = cosimulate(args.fmu, rpm=args.rpm, water_pump_torque=args.water_pump_torque, t_end=args.t_end,
                             step_size=args.step, progress=progress,
                             log=lambda level, text: print(f"[{level}] {text}", file=sys.stderr))
    total = time.perf_counter() - start
    layout = load_layout_data(results.layout_data, f"{args.fmu}:resources/layout.json")
    print(f"FMU: {args.fmu} ({layout.drive.name}), co-simulated with fmpy")
    print(f"inputs: crank {args.rpm:g} rpm, water-pump torque {args.water_pump_torque:g} N.m, "
          f"{args.t_end:g} s in communication steps of {args.step:g} s")
    print()
    print(_summary(results, layout))
    print()
    print(f"load time: {results.load_time:.3g} s (unpack, instantiate, initialize)")
    print(f"wall time: {results.wall_time:.3g} s stepping, {total:.3g} s in all")
    print(f"real-time factor: {results.real_time_factor:.3g} (simulated time / stepping wall time)")
    ok = True
    if args.out is not None:
        ok &= _write("--out", args.out, results.to_csv)
    if args.plot is not None:
        from .plots import plot_results, save_figure

        ok &= _write("--plot", args.plot, lambda p: save_figure(plot_results(results, layout), p))
    return 0 if ok else EXIT_OUTPUT


def console_main() -> None:
    """Entry point of the ``belt-fmu`` command. After loading a PythonFMU FMU the process
    ends with os._exit: PythonFMU 0.7.0 has a use-after-free at interpreter exit that aborts
    about one run in 90, after all work is done."""
    status = main()
    cosim = sys.modules.get(f"{__package__}.cosim")
    if cosim is not None and cosim.FmuInstance.loaded:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


@contextlib.contextmanager
def _progress_bar(args):
    """A ``progress(t)`` callback drawing a tqdm bar on stderr, or None if not wanted."""
    show = args.progress
    if show is None:
        show = args.t_end > PROGRESS_MIN_T_END and sys.stderr.isatty()
    if not show:
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=args.t_end, desc=args.command, file=sys.stderr, leave=False,
              bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.3f}/{total:.3f} s [{elapsed}<{remaining}]") as bar:
        yield lambda t: bar.update(t - bar.n)


def _summary(results, layout) -> str:
    """Mean, min and max of the main outputs over the last half of the run."""
    t = results["time"]
    last = t >= 0.5 * t[-1]
    names = [p.name for p in layout.pulleys]
    columns = ["bearing_force", "crank_torque", "belt_speed"]
    if layout.tensioner is not None:
        columns = ["tensioner_angle", "tensioner_angle_rel", *columns]
    columns += [f"span_tension_{a}_{b}" for a, b in zip(names, [*names[1:], names[0]])]
    columns += [f"{kind}_{name}" for name in names for kind in ("speed", "slip")]
    rows = []
    for column in columns:
        values = results[column][last]
        rows.append([column, results.units[column], f"{values.mean():.5g}", f"{values.min():.5g}",
                     f"{values.max():.5g}"])
    title = f"last half of the run, t = {t[last][0]:g} to {t[-1]:g} s (bearing_force: {layout.headline_pulley_name}):"
    return title + "\n" + _table(["output", "unit", "mean", "min", "max"], rows)


if __name__ == "__main__":
    console_main()
