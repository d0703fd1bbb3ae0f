"""Command line interface: ``belt-fmu layout``, ``simulate``, ``build``, ``cosim``, ``sweep``,
``doctor``, and the linear analysis ``operating-point``, ``modes``, ``campbell`` and ``response``.

Each subcommand accepts only its own options. The model (numba), matplotlib and tqdm are
imported inside the command that needs them.

Exit status: 0 done; 1 an output file could not be written; 2 a bad command line (argparse)
or an invalid layout file (the message names the file, the field, the value and what is
allowed); 3 the model could not run the requested inputs (the integration diverged, or the
drive has no steady running state to start from; doctor: this machine cannot run the FMU);
4 an internal error (a bug: one line and a request to report it; ``--debug`` shows the
traceback); 130 interrupted. Every failure prints one message to stderr, never a traceback
(except with ``--debug``).
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
from .layout import FRICTION_LAWS, MODELS, OUTPUT_MODES, LayoutError

EXIT_OUTPUT = 1
EXIT_USAGE = 2  # argparse's status
EXIT_LAYOUT = 2
EXIT_MODEL = 3
EXIT_INTERNAL = 4
EXIT_INTERRUPTED = 130

#: runs longer than this [s simulated] show a progress bar when stderr is a terminal
PROGRESS_MIN_T_END = 0.2
#: figure file suffixes the --plot options accept (see belt_fmu.plots.FORMATS)
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")
#: results-table formats --out writes, by file suffix (belt_fmu.simulation.Results.write)
TABLE_SUFFIXES = (".csv", ".mat")  # the keys of belt_fmu.simulation.TABLE_FORMATS


def _debug_requested(argv: list[str]) -> bool:
    """Whether ``--debug`` is on the command line (it is read before parsing, so that even a
    failure while parsing shows its traceback)."""
    return "--debug" in argv


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status
    (argparse's exits for ``--help`` and usage errors included: never raises SystemExit)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = _debug_requested(argv)
    command = "belt-fmu"
    try:
        parser = _parser()
        args = _parse(parser, argv)
        command = f"belt-fmu {args.command}"
        with _compile_messages(command):
            return args.run(args)
    except SystemExit as done:  # argparse: --help, --version, usage errors
        return done.code if isinstance(done.code, int) else int(done.code is not None)
    except KeyboardInterrupt:
        print("belt-fmu: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        status = _failure_status(err)
        if debug:
            import traceback

            traceback.print_exc()
        if status is None:  # a bug: one line, the traceback only on request
            print(f"{command}: internal error: {type(err).__name__}: {_one_line(err)}\n"
                  f"This is a bug in belt_fmu {__version__}; please report it with the command line and "
                  "input files" + ("" if debug else " (run again with --debug for the full traceback)") + ".",
                  file=sys.stderr)
            return EXIT_INTERNAL
        print(f"{command}: error: {err}", file=sys.stderr)
        return status


def _one_line(err: BaseException) -> str:
    text = " | ".join(line for line in str(err).splitlines() if line.strip())
    return text if len(text) <= 300 else text[:297] + "..."


def _parse(parser: argparse.ArgumentParser, argv: list[str]):
    """Parse ``argv``; an unknown option is an error naming the closest option of the
    subcommand ("did you mean --rpm?")."""
    import difflib

    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = parser._subparsers._group_actions[0].choices[args.command]  # the subcommand's parser
        known = [s for action in sub._actions for s in action.option_strings if s.startswith("--")]
        hints = []
        for extra in extras:
            if extra.startswith("-"):
                close = difflib.get_close_matches(extra.split("=", 1)[0], known, n=1, cutoff=0.6)
                if close:
                    hints.append(f"did you mean {close[0]} (for {extra.split('=', 1)[0]})?")
        sub.error("unrecognized arguments: " + " ".join(extras) + ("; " + " ".join(hints) if hints else ""))
    return args


def _failure_status(err: Exception) -> int | None:
    """Exit status of an expected failure, None for anything else (a bug)."""
    if isinstance(err, LayoutError):
        return EXIT_LAYOUT
    from .cosim import FmuError
    from .model.initialization import InitializationError
    from .model.system import DivergenceError

    from .duty import DutyError

    if isinstance(err, DutyError):
        return EXIT_LAYOUT
    if isinstance(err, (DivergenceError, InitializationError, FmuError, MemoryError)):
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
        description="Print the belt (cord) length, each pulley's wrap angle, cord radius and the belt nodes "
                    "its wrap holds, the span lengths and the tensioner arm of a layout; optionally draw the "
                    "drive.",
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
    _add_inputs(run)
    _add_signal_inputs(run)
    run.add_argument("--output-interval", type=_real("a finite time > 0 [s]", lambda x: x > 0.0), default=1e-4,
                     metavar="SECONDS",
                     help="output sampling interval [s] (default: %(default)g)")
    run.add_argument("--friction", choices=FRICTION_LAWS, metavar="LAW",
                     help="friction law instead of the layout's: " + ", ".join(FRICTION_LAWS))
    _add_model(run)
    _add_output_mode(run, "the layout's [drive] output_mode")
    _add_run_outputs(run)
    run.set_defaults(run=_simulate_command, error=run.error)

    build = commands.add_parser(
        "build", help="build an FMI 2.0 co-simulation FMU of a drive",
        description="Build an FMI 2.0 co-simulation FMU (PythonFMU) carrying the model and the layout. "
                    "The target machine needs Python >= 3.10 with numpy and numba.",
    )
    build.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    build.add_argument("-o", "--output", default="BeltDrive.fmu", metavar="FMU",
                       help="FMU file to write (default: %(default)s)")
    _add_inputs(build, "start value of the FMU input: ")
    build.add_argument("--no-kernels", dest="kernels", action="store_false",
                       help="ship no compiled kernels: each machine then compiles them at the FMU's first load")
    build.set_defaults(run=_build_command, error=build.error)

    cosim = commands.add_parser(
        "cosim", help="co-simulate an FMU with fmpy at constant inputs; summary, CSV and plot",
        description="Load a belt_fmu FMU with fmpy and co-simulate it with fixed communication steps at a "
                    "constant crank speed and water-pump torque. Prints the same summary as simulate, the "
                    "load time and the real-time factor.",
    )
    cosim.add_argument("fmu", metavar="FMU", help="the FMU file (from belt-fmu build)")
    _add_inputs(cosim)
    _add_signal_inputs(cosim)
    cosim.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="start value of an FMU parameter (repeatable), e.g. --param belt_pretension=500 "
                            "--param model=lumped; see the FMU's modelDescription.xml")
    cosim.add_argument("--step", type=_real("a finite time > 0 [s]", lambda x: x > 0.0), default=1e-4,
                       metavar="SECONDS", help="communication step [s] (default: %(default)g)")
    cosim.add_argument("--output-interval", type=_real("a finite time > 0 [s]", lambda x: x > 0.0),
                       metavar="SECONDS", help="record the outputs every this many seconds, a whole number of "
                                               "steps (default: every step)")
    _add_output_mode(cosim, "the FMU's parameter output_mode; average: each output's mean over the "
                            "communication step")
    _add_run_outputs(cosim)
    cosim.set_defaults(run=_cosim_command, error=cosim.error)

    doctor = commands.add_parser(
        "doctor", help="check that this machine can run an FMU in native FMI hosts",
        description="Check this machine against what a belt_fmu FMU needs in a native FMI host (Dymola, "
                    "Simulink, OMSimulator, GT-SUITE, C/C++): platform, C and C++ library versions, the Python "
                    "the FMU would use and its packages; without FMU, for an FMU built here (and a C compiler). "
                    "Exit status 3 if a need is not met.",
    )
    doctor.add_argument("fmu", nargs="?", metavar="FMU", help="the FMU file to check for (default: one built here)")
    doctor.set_defaults(run=_doctor_command, error=doctor.error)
    _add_sweep_parser(commands, layout_help)
    _add_analysis_parsers(commands, layout_help)
    _add_response_parser(commands, layout_help)
    for sub in [parser, *commands.choices.values()]:
        sub.add_argument("--debug", action="store_true",
                         help="show the full traceback of an error (for a bug report)")
    return parser


def _add_inputs(parser, prefix: str = "") -> None:
    """--rpm and --water-pump-torque: the drive's two inputs, held constant."""
    from .model.inputs import RPM_RANGE, WATER_PUMP_TORQUE_RANGE

    low, high = RPM_RANGE
    parser.add_argument("--rpm", type=_real(f"a crank speed in [{low:g}, {high:g}] rpm (the model's range)",
                                            lambda x, low=low, high=high: low <= x <= high), default=800.0,
                        metavar="RPM", help=prefix + f"crank speed [rpm], {low:g} to {high:g} (default: %(default)g)")
    low, high = WATER_PUMP_TORQUE_RANGE
    parser.add_argument("--water-pump-torque", type=_real(f"a torque in [{low:g}, {high:g}] N m (the model's range)",
                                                          lambda x, low=low, high=high: low <= x <= high),
                        default=0.0, metavar="NM",
                        help=prefix + f"water-pump load torque [N m], positive against its rotation, {low:g} to "
                                      f"{high:g} (default: %(default)g)")


def _add_signal_inputs(parser) -> None:
    """--input: any input of the drive, constant or from a CSV file (belt_fmu.signals)."""
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE|NAME=FILE.csv",
                        help="an input of the drive (repeatable): engine_torque of a torque-driven crank, "
                             "{pulley}_torque of an accessory port, crank_speed [rad/s] or water_pump_torque (they "
                             "replace --rpm and --water-pump-torque), as a constant in the input's SI unit or a CSV "
                             "file of time [s], value, interpolated linearly; inputs not given are 0")


def _signals(args, specs) -> dict:
    """The --input signals of ``args`` for the inputs ``specs``; a bad one is a usage error."""
    from .signals import SignalError, parse_inputs

    try:
        return parse_inputs(args.input, specs)
    except SignalError as err:
        args.error(f"argument --input: {err}")


def _inputs_line(args, signals: dict, torque_driven: bool) -> str:
    """The "inputs:" line of simulate's and cosim's report."""
    if "crank_speed" in signals:
        parts = [f"crank_speed {signals['crank_speed'].source}"]
    else:
        parts = [f"crank {args.rpm:g} rpm" + (" at the start (torque-driven)" if torque_driven else "")]
    if "water_pump_torque" in signals:
        parts.append(f"water_pump_torque {signals['water_pump_torque'].source}")
    else:
        parts.append(f"water-pump torque {args.water_pump_torque:g} N.m")
    parts += [f"{name} {signal.source}" for name, signal in signals.items()
              if name not in ("crank_speed", "water_pump_torque")]
    return "inputs: " + ", ".join(parts)


def _add_model(parser) -> None:
    """--model: the fidelity level instead of the layout's ``[drive] model``."""
    parser.add_argument("--model", choices=MODELS, metavar="MODEL",
                        help="model instead of the layout's [drive] model: discretized (beam-element belt) or "
                             "lumped (rotational model, a few hundred times faster)")


def _add_output_mode(parser, instead: str) -> None:
    """--output-mode: outputs sampled or averaged over each interval."""
    parser.add_argument("--output-mode", choices=OUTPUT_MODES, metavar="MODE",
                        help=f"sample (outputs at each output time) or average (each output's mean over the interval "
                             f"before it: the discretized belt's polygon ripple does not alias) instead of {instead}")


def _with_model(layout, model):
    """``layout`` run by ``model`` (None: as it is)."""
    if model is None:
        return layout
    return layout.with_drive(model=model)


def _add_run_outputs(parser) -> None:
    """--t-end, --out, --plot and --progress of a run that writes a results table."""
    parser.add_argument("--t-end", type=_real("a finite time > 0 [s]", lambda x: x > 0.0), default=1.0,
                        metavar="SECONDS", help="simulated time [s] (default: %(default)g)")
    parser.add_argument("--out", metavar="FILE", help="write the results table to this file, in the format of its "
                        "extension: " + ", ".join(TABLE_SUFFIXES) + " (CSV with a 'name [unit]' header; MATLAB "
                        "v5 MAT-file, one variable per column plus structs units and descriptions)")
    parser.add_argument("--plot", metavar="FIGURE", help="plot the results to this file (.png, .pdf or .svg)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help=f"show a progress bar (default: when --t-end > {PROGRESS_MIN_T_END:g} s "
                             "and stderr is a terminal)")


def _check_outputs(error, layout_path: str, outputs: dict[str, str | None],
                   table_suffixes: tuple[str, ...] = TABLE_SUFFIXES) -> None:
    """Refuse output paths that would overwrite the layout file or each other, lie in a
    missing directory, or (figures, tables) have a format we cannot write. ``outputs`` maps
    each option (--out, --plot) to its path or None; ``table_suffixes`` are the formats --out
    takes."""
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
        if option == "--out" and path.suffix.lower() not in table_suffixes:
            error(f"argument {option}: {path}: unknown table format {path.suffix or '(no extension)'!r}; use a "
                  "name ending in " + ", ".join(table_suffixes))


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
    from .model.geometry import BeltPath, cord_radius, small_wraps_note

    layout = _load_layout(args.layout)
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
    nodes = path.wrap_nodes(belt.n_elements)
    rows = [
        [p.name, p.role, p.side, f"{p.radius_m:.6g}", f"{cord_radius(layout, j):.6g}",
         f"{path.wrap_angle[j]:.4f}", f"{math.degrees(path.wrap_angle[j]):.1f}", f"{nodes[j]:.1f}"]
        for j, p in enumerate(layout.pulleys)
    ]
    print(_table(["name", "role", "side", "radius [m]", "cord radius [m]", "wrap [rad]", "wrap [deg]",
                  "belt nodes on wrap"], rows))
    note = small_wraps_note(layout, path)
    if note:
        print(note)
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
    from .simulation import simulate, table_columns, table_problem

    if args.output_interval > args.t_end:
        args.error(f"argument --output-interval: {args.output_interval:g} s must be <= --t-end ({args.t_end:g} s)")
    layout = _load_layout(args.layout)
    _check_outputs(args.error, args.layout or layout.source, {"--out": args.out, "--plot": args.plot})
    if args.friction is not None:
        layout = dataclasses.replace(layout, friction=dataclasses.replace(layout.friction, law=args.friction))
    layout = _with_model(layout, args.model)
    if args.output_mode is not None:
        layout = layout.with_drive(output_mode=args.output_mode)
    from .model.inputs import input_specs

    if (problem := table_problem(args.t_end, args.output_interval, table_columns(layout))) is not None:
        args.error(f"argument --t-end / --output-interval: {problem}")
    signals = _signals(args, input_specs(layout))
    line = _inputs_line(args, signals, layout.torque_driven_crank)
    crank = signals.pop("crank_speed", None)
    if crank is not None and layout.torque_driven_crank and crank.constant is None:
        args.error("argument --input: crank_speed of a torque-driven crank is its start speed, a constant [rad/s]; "
                   "its speed follows from engine_torque")
    pump = signals.pop("water_pump_torque", None)
    speed = dict(rpm=args.rpm) if crank is None else dict(crank_speed=crank.constant if layout.torque_driven_crank
                                                           else crank.at)
    start = time.perf_counter()
    with _progress_bar(args) as progress:
        results = simulate(layout, **speed, water_pump_torque=args.water_pump_torque if pump is None else pump.at,
                           inputs={name: signal.at for name, signal in signals.items()}, t_end=args.t_end,
                           output_interval=args.output_interval, progress=progress)
    total = time.perf_counter() - start
    print(f"layout: {layout.source}")
    print(f"{line}; {args.t_end:g} s simulated; friction law {layout.friction.law}; {layout.drive.model} model")
    _print_alias_warning(results, layout, layout.drive.model, args.output_interval, "--output-interval",
                         layout.drive.output_mode, args.output_interval)
    print()
    print(_summary(results, layout))
    _print_slip_warnings(results, layout)
    print()
    print(f"wall time: {results.wall_time:.3g} s integrating, {total:.3g} s in all "
          "(JIT compilation, build and settle included)")
    print(f"real-time factor: {_factor(results.real_time_factor)} (simulated time / integration wall time)")
    return _write_results(args, results, layout)


# ---------------------------------------------------------------------------------------------
# belt-fmu build, belt-fmu cosim
# ---------------------------------------------------------------------------------------------


def _build_command(args) -> int:
    import warnings

    from .build import build_fmu
    from .build.fmu import NativeLoaderWarning, shipped_levels
    from .kernel_cache import PORTABLE_CPU
    from .simulation import RPM

    if args.layout is not None and _same_file(Path(args.output), Path(args.layout)):
        args.error(f"argument -o/--output: {args.output} is the input layout file; refusing to overwrite it")
    if not Path(args.output).resolve().parent.is_dir():
        args.error(f"argument -o/--output: directory {Path(args.output).parent} does not exist")
    if not args.output.endswith(".fmu"):
        args.error(f"argument -o/--output: {args.output} must end in .fmu")
    if args.layout is not None:
        _load_layout(args.layout)  # its warnings, before the FMU takes it in
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NativeLoaderWarning)
        try:
            path = build_fmu(args.layout, args.output, crank_speed=args.rpm * RPM,
                             water_pump_torque=args.water_pump_torque, kernels=args.kernels)
        except OSError as err:
            if err.filename is None or Path(err.filename).resolve().parent != Path(args.output).resolve().parent:
                raise  # not the output file: unexpected
            print(f"belt-fmu build: error: -o {args.output}: cannot write: {err.strerror or err}", file=sys.stderr)
            return EXIT_OUTPUT
    for warning in caught:
        print(f"belt-fmu build: warning: {warning.message}", file=sys.stderr)
    if args.kernels:
        levels = f"portable {PORTABLE_CPU}" + (" and this processor's" if "host" in shipped_levels() else "")
        kernels = f"with the model's compiled kernels ({levels})"
    else:
        kernels = "without compiled kernels (each machine compiles them at the FMU's first load)"
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB) in {time.perf_counter() - start:.3g} s, {kernels}")
    return 0


def _cosim_command(args) -> int:
    from types import SimpleNamespace

    from fmpy import read_model_description

    from .cosim import FmuError, check_fmu, cosimulate, parse_parameters, step_problem
    from .layout import load_layout_data
    from .simulation import table_problem

    if (problem := step_problem(args.t_end, args.step)) is not None:
        args.error(f"argument --step: {problem}")
    if not Path(args.fmu).is_file():
        args.error(f"argument FMU: {args.fmu}: no such file")
    try:
        check_fmu(args.fmu)
    except FmuError as err:
        args.error(f"argument FMU: {err}")
    _check_outputs(args.error, args.fmu, {"--out": args.out, "--plot": args.plot})
    interval = args.step if args.output_interval is None else args.output_interval
    if (args.output_interval is not None
            and abs(interval / args.step - round(interval / args.step)) > 1e-9 * max(1.0, interval / args.step)):
        args.error(f"argument --output-interval: {interval:g} s is not a whole number of communication steps of "
                   f"{args.step:g} s")
    if interval > args.t_end:
        args.error(f"argument --output-interval: {interval:g} s must be <= --t-end ({args.t_end:g} s)")
    description = read_model_description(args.fmu)
    columns = 1 + sum(v.causality in ("input", "output") for v in description.modelVariables)
    if (problem := table_problem(args.t_end, interval, columns)) is not None:
        args.error(f"argument --t-end / {'--step' if args.output_interval is None else '--output-interval'}: "
                   f"{problem}")
    try:
        parameters = parse_parameters(args.param, description)
    except ValueError as err:
        args.error(f"argument --param: {err}")
    variables = {v.name: v for v in description.modelVariables}
    if args.output_mode is not None:
        if "output_mode" not in variables:
            args.error(f"argument --output-mode: {args.fmu} has no parameter output_mode (an FMU of an earlier "
                       "belt_fmu)")
        parameters["output_mode"] = args.output_mode
    specs = [SimpleNamespace(name=v.name, unit=v.unit or "1", problem=_bounds_problem(v))
             for v in description.modelVariables if v.causality == "input"]
    signals = _signals(args, specs)
    torque_driven = "crank_speed" not in variables or variables["crank_speed"].causality != "input"
    line = _inputs_line(args, signals, torque_driven)
    crank, pump = signals.pop("crank_speed", None), signals.pop("water_pump_torque", None)
    speed = dict(rpm=args.rpm) if crank is None else dict(crank_speed=crank.at)
    start = time.perf_counter()
    with _progress_bar(args) as progress:
        results = cosimulate(args.fmu, **speed, water_pump_torque=args.water_pump_torque if pump is None else pump.at,
                             inputs={name: signal.at for name, signal in signals.items()}, t_end=args.t_end,
                             step_size=args.step, output_interval=interval, parameters=parameters, progress=progress,
                             log=lambda level, text: print(f"[{level}] {text}", file=sys.stderr))
    total = time.perf_counter() - start
    layout = load_layout_data(results.layout_data, f"{args.fmu}:resources/layout.json")
    model = parameters.get("model", variables["model"].start if "model" in variables else layout.drive.model)
    print(f"FMU: {args.fmu} ({layout.drive.name}, {model} model), co-simulated with fmpy")
    if parameters:
        print("parameters: " + ", ".join(f"{name} = {value}" for name, value in parameters.items()))
    print(f"{line}; {args.t_end:g} s in communication steps of {args.step:g} s"
          + (f", outputs every {interval:g} s" if interval != args.step else ""))
    output_mode = parameters.get("output_mode", variables["output_mode"].start if "output_mode" in variables
                                 else "sample")
    _print_alias_warning(results, layout, model, interval,
                         "--step" if args.output_interval is None else "--output-interval", output_mode, args.step)
    print()
    print(_summary(results, layout))
    _print_slip_warnings(results, layout)
    print()
    print(f"load time: {results.load_time:.3g} s (unpack, instantiate, initialize)")
    print(f"wall time: {results.wall_time:.3g} s stepping, {total:.3g} s in all")
    print(f"real-time factor: {_factor(results.real_time_factor)} (simulated time / stepping wall time)")
    return _write_results(args, results, layout, model)


def _bounds_problem(variable):
    """``problem(value)`` of an FMU input: None if ``value`` is within its declared min and
    max, else what is wrong (as :meth:`belt_fmu.model.inputs.Input.problem` says it)."""
    low = -math.inf if variable.min is None else float(variable.min)
    high = math.inf if variable.max is None else float(variable.max)

    def problem(value):
        if low <= value <= high:
            return None
        return f"{variable.name} = {value:.6g} {variable.unit or ''} is outside the allowed range [{low:g}, {high:g}]"

    return problem


#: samples per polygon period below which instantaneous outputs alias (Nyquist)
NYQUIST = 2.0


def _load_layout(path):
    """The layout at ``path`` (None: the built-in one), its checks' warnings printed on stderr."""
    from .layout import load_layout

    layout = load_layout(path)
    for warning in layout.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return layout


def _load_duty(layout, path):
    """The duty cycle of the CSV file ``path`` (None: the layout's ``[[duty_points]]``, or None),
    the duty points at which the tensioner sits on the tight side printed on stderr."""
    from .duty import load_duty, tight_side_warnings

    duty = load_duty(layout, path)
    if duty is not None:
        for warning in tight_side_warnings(layout, duty):
            print(f"warning: {warning}", file=sys.stderr)
    return duty


def _print_alias_warning(results, layout, model: str, interval: float, option: str, output_mode: str = "sample",
                         window: float = 0.0) -> None:
    """Warn when the discretized model's instantaneous outputs were sampled below twice the
    polygon frequency (the belt elements' passing frequency over the crank pulley, at the
    run's highest crank speed): the polygon ripple then folds into the samples as slow
    oscillations or spikes that are not in the drive. Averaged outputs (``output_mode``
    "average", means over intervals of ``window`` [s]) keep at most 1 / (pi f window) of a
    ripple of frequency f: a note says so, a warning if the window is shorter than a polygon
    period."""
    if model != "discretized":
        return  # the lumped model has no polygon effect
    from .model.outputs import pulley_output_name
    from .postprocess import drive_polygon_frequency
    from .units import RPM

    speed = float(abs(results[pulley_output_name("speed", layout.pulleys[layout.crank_index].name)]).max())
    polygon = drive_polygon_frequency(layout, speed)
    if interval * NYQUIST * polygon <= 1.0:
        return
    if output_mode == "average":
        if window * polygon >= 1.0:
            print(f"note: averaging is on (output mode average): each output is its mean over the {window:g} s before "
                  f"it, which keeps at most {100.0 / (math.pi * polygon * window):.2g} % of the polygon ripple "
                  f"({polygon:.4g} Hz at {speed / RPM:.0f} rpm) instead of aliasing it")
            return
        print(f"warning: the outputs are means over {window:g} s, shorter than a polygon period ({polygon:.4g} Hz at "
              f"{speed / RPM:.0f} rpm), sampled every {interval:g} s: part of the polygon ripple aliases into them; "
              f"average over {1.0 / polygon:.3g} s or more, or sample every {1.0 / (NYQUIST * polygon):.3g} s or less "
              f"({option})")
        return
    print(f"warning: the outputs are sampled every {interval:g} s ({1.0 / interval:.4g} Hz), below twice the polygon "
          f"frequency ({polygon:.4g} Hz at {speed / RPM:.0f} rpm): the polygon ripple aliases into them (forces, "
          f"tensions and torques show spikes and slow beats that the drive does not have); sample every "
          f"{1.0 / (NYQUIST * polygon):.3g} s or less ({option}), average them over each interval (--output-mode "
          f"average), or low-pass filter them")


def _doctor_command(args) -> int:
    from .doctor import report, run_checks

    if args.fmu is not None:
        from .cosim import FmuError, check_fmu

        if not Path(args.fmu).is_file():
            args.error(f"argument FMU: {args.fmu}: no such file")
        try:
            check_fmu(args.fmu)
        except FmuError as err:  # one line: what the file is not (no usage text: the command line is right)
            print(f"belt-fmu doctor: error: {err}", file=sys.stderr)
            return EXIT_USAGE
    checks = run_checks(args.fmu)
    print(report(checks))
    return EXIT_MODEL if any(c.ok is False for c in checks) else 0


def _write_results(args, results, layout, model: str | None = None) -> int:
    """Write the table (--out) and the figure (--plot) of ``results`` (run by ``model``,
    default the layout's); the exit status."""
    ok = True
    if args.out is not None:
        ok &= _write("--out", args.out, results.write)
    if args.plot is not None:
        from .plots import plot_results, save_figure

        ok &= _write("--plot", args.plot, lambda p: save_figure(plot_results(results, layout, model=model), p))
    return 0 if ok else EXIT_OUTPUT


# ---------------------------------------------------------------------------------------------
# belt-fmu sweep
# ---------------------------------------------------------------------------------------------

#: a run whose tensioner angle changes by more than this fraction of its peak-to-peak from one
#: engine cycle to the next has not reached its periodic state (the note after the summary)
SETTLED_CYCLE_CHANGE = 0.05


def _count(minimum: int):
    """argparse type: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; must be >= {minimum}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: must be >= {minimum}")
        return value

    return parse


def _add_excitation(group, pump: bool = True) -> None:
    """The sweep's crank speed irregularity (--order, --irregularity-rpm, --irregularity-scaling,
    --idle-rpm) and, with ``pump``, its water-pump load law (--water-pump-torque,
    --water-pump-quadratic), with the sweep's defaults (belt_fmu.sweep.RunSettings)."""
    from .sweep import SCALINGS, RunSettings

    d = RunSettings()
    group.add_argument("--order", type=_real("a multiple of 0.5 > 0", lambda x: x > 0 and (2 * x).is_integer()),
                       default=d.order, metavar="Q",
                       help="engine order of the speed irregularity, firing frequency per revolution "
                            "(4-cylinder 2, 6-cylinder 3; default: %(default)g)")
    group.add_argument("--irregularity-rpm", type=_real("a finite speed >= 0 [rpm]", lambda x: x >= 0.0),
                       default=d.irregularity_rpm, metavar="RPM",
                       help="speed irregularity amplitude, +- [rpm] (default: %(default)g, a 4-cylinder engine "
                            "at idle)")
    group.add_argument("--irregularity-scaling", choices=SCALINGS, default=d.irregularity_scaling,
                       help="constant: the same amplitude at every speed; inverse: the amplitude applies at "
                            "--idle-rpm and scales with idle-rpm / rpm (default: %(default)s)")
    group.add_argument("--idle-rpm", type=_real("a finite speed > 0 [rpm]", lambda x: x > 0.0), default=d.idle_rpm,
                       metavar="RPM", help="speed at which an inverse-scaled amplitude is given (default: %(default)g)")
    if not pump:
        return
    group.add_argument("--water-pump-torque", type=_real("a finite torque [N m]"), default=d.water_pump_torque_Nm,
                       metavar="NM", help="water-pump load T0 + k w^2: T0 [N m] (default: %(default)g)")
    group.add_argument("--water-pump-quadratic", type=_real("a finite number >= 0", lambda x: x >= 0.0),
                       default=d.water_pump_quadratic_Nms2, metavar="K",
                       help="water-pump load T0 + k w^2 at the mean pump speed w: k [N m s^2] (default: %(default)g)")


def _excitation_settings(args):
    """The sweep's RunSettings of the options _add_excitation added (the pump's if there)."""
    from .sweep import RunSettings

    pump = {}
    if hasattr(args, "water_pump_quadratic"):
        pump = {"water_pump_torque_Nm": args.water_pump_torque, "water_pump_quadratic_Nms2": args.water_pump_quadratic}
    return RunSettings(order=args.order, irregularity_rpm=args.irregularity_rpm,
                       irregularity_scaling=args.irregularity_scaling, idle_rpm=args.idle_rpm, **pump)


def _add_sweep_parser(commands, layout_help: str) -> None:
    from .sweep import RunSettings

    d = RunSettings()
    sweep = commands.add_parser(
        "sweep", help="engine-speed sweep or parameter study: tensioner amplitude, bearing force, span "
                      "tensions and slip over crank speed; CSV table and plot",
        description="Run the drive at each crank speed with a firing-order speed irregularity until it is "
                    "periodic, evaluate whole engine cycles (signals low-pass filtered at half the polygon "
                    "frequency, [Scania thesis] section 7) and tabulate and plot the tensioner amplitude, bearing "
                    "force, span tensions and slip over speed ([Scania thesis] Figs. 5.4-5.5). --vary makes it a "
                    "parameter study. Runs go to the local cores or a Dask cluster. See docs/sweep.md.",
    )
    sweep.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    _add_model(sweep)
    sweep.add_argument("--rpm", default="500:2300:19", metavar="RPMS",
                       help="mean crank speeds [rpm]: START:STOP:COUNT (both ends included) or a comma-separated "
                            "list (default: %(default)s, [Scania thesis]'s range)")
    _add_excitation(sweep.add_argument_group("crank speed irregularity and water-pump load"))
    group = sweep.add_argument_group("each run")
    group.add_argument("--settle-cycles", type=_count(2), default=d.settle_cycles, metavar="N",
                       help="engine cycles (2 crank revolutions) run before the evaluation (default: %(default)s)")
    group.add_argument("--cycles", type=_count(1), default=d.cycles, metavar="N",
                       help="engine cycles evaluated (default: %(default)s)")
    group.add_argument("--output-interval", type=_real("a finite time > 0 [s]", lambda x: x > 0.0),
                       default=d.max_output_interval_s, metavar="SECONDS",
                       help="longest output sampling interval [s]; the crank speed is held over each "
                            "(default: %(default)g)")
    group = sweep.add_argument_group("parameter study")
    group.add_argument("--vary", action="append", default=[], metavar="NAME=VALUES",
                       help="vary a layout key (TABLE.KEY, pulleys.NAME.KEY) or a run setting (irregularity_rpm, "
                            "order, water_pump_torque_Nm, ...) over VALUES (START:STOP:COUNT or a list); "
                            "repeat for a cartesian product, e.g. --vary belt.pretension_N=350:550:3 "
                            "--vary tensioner.spring_rate_Nm_per_rad=30,40")
    sweep.add_argument("--duty", metavar="DUTY.csv",
                       help="one run per point of this duty cycle (docs/design-report.md), at its speed with its "
                            "loads; replaces --rpm")
    group = sweep.add_argument_group("execution")
    where = group.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_count(1), metavar="N",
                       help="local worker processes (default: the available cores, or this process for a "
                            "lumped-model sweep too short to pay for starting them; 1 runs in this process)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786)")
    group.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="show a progress bar (default: when stderr is a terminal)")
    group = sweep.add_argument_group("output")
    group.add_argument("--out", metavar="CSV", help="results table (.csv), one row per run, written as runs finish")
    group.add_argument("--plot", metavar="FIGURE", help="plot the results over speed to this file (.png, .pdf or .svg)")
    existing = group.add_mutually_exclusive_group()
    existing.add_argument("--resume", action="store_true",
                          help="continue the sweep in --out: skip its runs done, run the others (and failed ones)")
    existing.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    sweep.set_defaults(run=_sweep_command, error=sweep.error)


def _sweep_command(args) -> int:
    from .sweep import default_workers, parse_values, parse_variation, plan, sweep

    try:
        rpms = parse_values(args.rpm)
        variations = [parse_variation(text) for text in args.vary]
    except ValueError as err:
        args.error(f"argument --rpm/--vary: {err}")
    if (args.resume or args.overwrite) and args.out is None:
        args.error("argument --resume/--overwrite: give the table with --out")
    layout = _with_model(_load_layout(args.layout), args.model)
    _check_outputs(args.error, args.layout or layout.source, {"--out": args.out, "--plot": args.plot},
                   table_suffixes=(".csv",))
    if args.out is not None and Path(args.out).exists() and not (args.resume or args.overwrite):
        args.error(f"argument --out: {args.out} exists; pass --resume to continue that sweep or --overwrite "
                   "to replace it")
    settings = dataclasses.replace(_excitation_settings(args), settle_cycles=args.settle_cycles, cycles=args.cycles,
                                   max_output_interval_s=args.output_interval)
    duty = _load_duty(layout, args.duty) if args.duty is not None else None
    try:
        study = plan(layout, rpms, settings, variations, duty)
    except ValueError as err:
        args.error(str(err))
    from .model.inputs import RPM_RANGE

    outside = sorted({run.rpm for run in study.runs if not RPM_RANGE[0] <= run.rpm <= RPM_RANGE[1]})
    if outside:
        args.error(f"argument --rpm: {outside[0]:g} rpm is outside the model's range [{RPM_RANGE[0]:g}, "
                   f"{RPM_RANGE[1]:g}] rpm")
    workers = args.workers or default_workers(study.runs)
    where = (f"the Dask cluster at {args.scheduler}" if args.scheduler is not None
             else "this process" if workers == 1 else f"{workers} local processes")
    speeds = len(duty.points) if duty is not None else len({run.rpm for run in study.runs})
    print(f"layout: {layout.source} (bearing force: {layout.headline_pulley_name}; {layout.drive.model} model)")
    from .model.geometry import BeltPath, small_wraps_note

    variants = {run.variant: run.layout for run in study.runs}  # a varied mesh, geometry or model has wraps of its own
    for note in dict.fromkeys(small_wraps_note(v, BeltPath.from_layout(v)) for v in variants.values()):
        if note:
            print(note)
    what = "duty points" if duty is not None else "speeds"
    print(f"sweep: {len(study.runs)} runs ({speeds} {what} x {len(study.runs) // speeds} variant(s)) on {where}")
    mode = "resume" if args.resume else "overwrite" if args.overwrite else "new"
    show = sys.stderr.isatty() if args.progress is None else args.progress
    if args.scheduler is None and workers > 1:
        from .model.system import make_drive

        make_drive(layout)  # the kernels compile here, once and said so, not in every worker at once
    try:
        result = sweep(study, args.out, mode=mode, workers=workers, scheduler=args.scheduler, progress=show,
                       log=lambda line: print(f"belt-fmu sweep: {line}", file=sys.stderr))
    except ConnectionError as err:
        args.error(f"argument --scheduler: {err}")
    except ValueError as err:  # a table to resume that belongs to another sweep
        args.error(f"argument --out: {err}")
    except OSError as err:
        print(f"belt-fmu: error: --out {args.out}: cannot write: {err.strerror or err}", file=sys.stderr)
        return EXIT_OUTPUT
    print(f"ran {result.ran} runs in {result.wall_time:.3g} s wall time"
          + (f"; {result.skipped} already in {args.out}" if result.skipped else "")
          + (f"; {len(result.failures)} failed" if result.failures else ""))
    print()
    print(_sweep_summary(result.table, layout))
    unsettled = [row for row in result.table.rows if row["status"] == "ok" and row.get("tensioner_cycle_change [1]")
                 and float(row["irregularity_amplitude [rpm]"]) > 0.0
                 and float(row["tensioner_cycle_change [1]"]) > SETTLED_CYCLE_CHANGE]
    if unsettled:
        print(f"\nnote: the tensioner angle changed by more than {100 * SETTLED_CYCLE_CHANGE:g} % of its range from "
              f"one engine cycle to the next in {len(unsettled)} run(s); raise --settle-cycles for a periodic state")
    ok = True
    if args.out is not None:
        print(f"wrote {args.out}")
    if args.plot is not None:
        from .plots import plot_sweep, save_figure

        ok &= _write("--plot", args.plot, lambda p: save_figure(plot_sweep(result.table, layout), p))
    if result.failures:
        print(f"belt-fmu sweep: error: {len(result.failures)} run(s) failed:", file=sys.stderr)
        for line in result.failures:
            print(f"  {line}", file=sys.stderr)
        return EXIT_MODEL
    return 0 if ok else EXIT_OUTPUT


def _sweep_summary(table, layout) -> str:
    """Per study variant and speed: tensioner amplitude, bearing force min/max, crank torque
    max, the largest mean slip and the periodicity check."""
    from .model.outputs import pulley_output_name, statistic_name
    from .sweep.planning import DUTY_COLUMN

    slips = {p.name: statistic_name(pulley_output_name("slip", p.name), "mean") for p in layout.pulleys
             if p.role != "crankshaft"}
    has_tensioner = layout.tensioner is not None
    blocks = []
    for label, rows in table.cases():
        lines = []
        for row in rows:
            if row["status"] != "ok":
                lines.append([f"{float(row['rpm']):g}", *["-"] * (6 if has_tensioner else 4), "failed"])
                continue

            def metric(name):
                return float(table.metric([row], name)[0])

            slip = max(slips, key=lambda p: abs(metric(slips[p])))
            cells = [f"{float(row['rpm']):g}" + (f" ({row[DUTY_COLUMN]})" if DUTY_COLUMN in row else "")]
            if has_tensioner:
                cells.append(f"{metric('tensioner_amplitude_deg'):.3g}")
            cells += [f"{metric(statistic_name('bearing_force', 'min')):.4g}",
                      f"{metric(statistic_name('bearing_force', 'max')):.4g}",
                      f"{metric(statistic_name('crank_torque', 'max')):.4g}",
                      f"{100 * metric(slips[slip]):.3g} ({slip})"]
            if has_tensioner:
                cells.append(f"{100 * metric('tensioner_cycle_change'):.2g}")
            lines.append(cells + ["ok"])
        header = ["rpm", *(["tensioner amplitude [deg]"] if has_tensioner else []), "bearing force min [N]",
                  "max [N]", "crank torque max [N.m]", "largest mean slip [%]",
                  *(["cycle change [%]"] if has_tensioner else []), "status"]
        blocks.append((f"{label}:\n" if label else "") + _table(header, lines))
    return "\n\n".join(blocks)


# ---------------------------------------------------------------------------------------------
# belt-fmu operating-point, modes, campbell
# ---------------------------------------------------------------------------------------------

#: modes listed and drawn by default
MODE_COUNT = 12
#: --arm-friction of modes and campbell: the friction's equivalent damping under the excitation, or a limit
ARM_FRICTION = ("excited", "stuck", "sliding")
SHAPES_DRAWN = 6


def _add_analysis_parsers(commands, layout_help: str) -> None:
    point = commands.add_parser(
        "operating-point", help="the steady running state: span tensions, hub loads, tensioner, slip margins",
        description="Print the drive's steady running state at a constant crank speed and water-pump torque (the "
                    "state simulate and the FMU start from): every span's tension, every pulley's hub force and wrap "
                    "angle, the tensioner arm angle and spring torque, each pulley's slip arc and slip margin "
                    "(capstan limit with the poly-V wedge and centrifugal tension; a pulley without margin is "
                    "flagged), crank torque and power. See docs/modes.md.",
    )
    point.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    _add_inputs(point)
    point.add_argument("--duty", metavar="DUTY.csv",
                       help="one operating point per duty point of this CSV file (docs/design-report.md); "
                            "replaces --rpm and --water-pump-torque")
    point.set_defaults(run=_operating_point_command, error=point.error)

    report = commands.add_parser(
        "report", help="the drive's design report as one HTML file",
        description="Write the design report: geometry, tensioner position table, static span tensions, hub loads "
                    "and slip safety per duty point in two conventions, dynamic results under the engine order, "
                    "belt fatigue life, natural frequencies and Campbell crossings, pass/fail checks. See "
                    "docs/design-report.md.",
    )
    report.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    report.add_argument("--duty", metavar="DUTY.csv",
                        help="the duty cycle (default: the layout's [[duty_points]], else its own loads at 800, "
                             "1500 and 2300 rpm)")
    report.add_argument("-o", "--out", required=True, metavar="REPORT.html", help="the report to write")
    report.set_defaults(run=_report_command, error=report.error)

    modes = commands.add_parser(
        "modes", help="natural frequencies, damping and mode shapes about the operating point",
        description="Linearize the discretized model about its steady running state (belt nodes, pulleys, "
                    "tensioner arm; friction by its local slope; the belt's transport terms) and list the lowest "
                    "natural modes: frequency, damping ratio and where the mode's energy is (rotational, a named "
                    "span's transverse motion, or mixed). Optionally draw the first modes on the layout. With the "
                    "lumped model, its own step linearized (frequency, damping ratio, energy shares; no drawing). "
                    "See docs/modes.md.",
    )
    modes.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    _add_model(modes)
    _add_inputs(modes)
    _add_mode_options(modes)
    modes.add_argument("--plot", metavar="FIGURE",
                       help=f"draw the first {SHAPES_DRAWN} modes on the layout to this file (.png, .pdf or .svg)")
    modes.set_defaults(run=_modes_command, error=modes.error)

    campbell = commands.add_parser(
        "campbell", help="Campbell diagram: natural frequencies over crank speed with engine orders",
        description="Compute the lowest natural modes at each crank speed (each about its own operating point) and "
                    "list where they cross the engine-order lines (speed, order, mode, frequency); optionally "
                    "write the frequencies as CSV and plot the diagram. Speeds run on the local cores. With the "
                    "lumped model, its own step linearized at each speed. See docs/modes.md.",
    )
    campbell.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    _add_model(campbell)
    _add_speeds(campbell, "500:6000:40")
    campbell.add_argument("--orders", default="2,4", metavar="ORDERS",
                          help="engine orders, comma-separated multiples of 0.5 (default: %(default)s)")
    campbell.add_argument("--water-pump-torque", type=_real("a finite torque [N m]"), default=0.0, metavar="NM",
                          help="water-pump load torque [N m], positive against its rotation (default: %(default)g)")
    _add_mode_options(campbell)
    campbell.add_argument("--workers", type=_count(1), metavar="N",
                          help="local worker processes (default: the available cores; 1 runs in this process)")
    campbell.add_argument("--out", metavar="CSV", help="write the frequencies (one row per speed and mode) to this CSV")
    campbell.add_argument("--plot", metavar="FIGURE", help="plot the diagram to this file (.png, .pdf or .svg)")
    campbell.set_defaults(run=_campbell_command, error=campbell.error)


def _add_speeds(parser, default: str) -> None:
    """--rpm: the crank speeds of campbell and response."""
    parser.add_argument("--rpm", default=default, metavar="RPMS",
                        help="crank speeds [rpm]: START:STOP:COUNT (both ends included) or a comma-separated list "
                             "(default: %(default)s)")


def _add_response_parser(commands, layout_help: str) -> None:
    response = commands.add_parser(
        "response", help="steady harmonic response over crank speed from the linearized model: tensioner amplitude, "
                         "hub loads, span tensions, slip; in seconds what a sweep gives in minutes",
        description="Linearize the drive about its operating point at anchor speeds and compute, at each crank speed, "
                    "the steady response to the sweep's crank speed irregularity (or to a torque ripple on one "
                    "pulley): the tensioner arm amplitude, each pulley's hub load and belt torque amplitude and slip "
                    "utilisation, each span's tension amplitude. The arm's Coulomb friction enters by a harmonic "
                    "balance of the arm at the amplitude it produces. With the lumped model, its own step "
                    "linearized at the anchor speeds. See docs/modes.md.",
    )
    response.add_argument("layout", nargs="?", metavar="LAYOUT", help=layout_help)
    _add_model(response)
    _add_speeds(response, "500:3000:60")
    group = response.add_argument_group("excitation (as belt-fmu sweep applies it) and water-pump load")
    _add_excitation(group)
    group.add_argument("--load-ripple", metavar="PULLEY:NM",
                       help="excite with a torque ripple of this amplitude [N m] on PULLEY at the engine order instead "
                            "of the crank speed irregularity (for a torque-driven crank: its engine torque ripple)")
    response.add_argument("--out", metavar="FILE", help="write the table to this file: .csv or .mat (one variable per "
                                                        "column, SI units, plus structs units and descriptions)")
    response.add_argument("--plot", metavar="FIGURE", help="plot the response to this file (.png, .pdf or .svg)")
    response.set_defaults(run=_response_command, error=response.error)


def _load_ripple(args, layout):
    """(pulley, amplitude [N m]) of --load-ripple, or None; bad text is a usage error."""
    if args.load_ripple is None:
        return None
    names = [p.name for p in layout.pulleys]
    pulley, _, amplitude = args.load_ripple.rpartition(":")
    try:
        value = float(amplitude)
    except ValueError:
        value = math.nan
    if pulley not in names or not (math.isfinite(value) and value > 0.0):
        args.error(f"argument --load-ripple: {args.load_ripple!r}: must be PULLEY:NM, a pulley of this drive "
                   f"({', '.join(names)}) and a torque amplitude > 0 [N m]")
    return pulley, value


def _response_command(args) -> int:
    from .analysis.response import Excitation, check_excitation, response
    from .sweep import parse_values

    try:
        rpms = [float(x) for x in parse_values(args.rpm)]
    except ValueError as err:
        args.error(f"argument --rpm: {err}")
    from .model.inputs import RPM_RANGE

    if not all(RPM_RANGE[0] < r <= RPM_RANGE[1] for r in rpms):
        args.error(f"argument --rpm: {args.rpm!r}: speeds must lie in ({RPM_RANGE[0]:g}, {RPM_RANGE[1]:g}] rpm")
    layout = _with_model(_load_layout(args.layout), args.model)
    _check_outputs(args.error, args.layout or layout.source, {"--out": args.out, "--plot": args.plot})
    drive = None
    if layout.drive.model == "lumped":  # what the lumped model does not take, before the excitation
        from .model.lumped_system import LumpedDrive

        drive = LumpedDrive(layout)
    ripple = _load_ripple(args, layout)
    excitation = Excitation(_excitation_settings(args), *(ripple or ()))
    problem = check_excitation(layout, excitation)
    if problem is not None:
        args.error(f"argument --load-ripple: {problem}" if ripple else f"this drive needs --load-ripple: {problem}")
    _print_analysis_layout(layout)
    print(f"response: {len(rpms)} speeds, {excitation.describe()}")
    start = time.perf_counter()
    result = response(layout, rpms, excitation, drive=drive)
    print(f"wall time: {time.perf_counter() - start:.3g} s ({len(result.anchors)} operating points)")
    print()
    print(report_response(result))
    ok = True
    if args.out is not None:
        ok &= _write("--out", args.out, lambda p: result.table().write(p))
    if args.plot is not None:
        from .analysis.figures import plot_response
        from .plots import save_figure

        ok &= _write("--plot", args.plot, lambda p: save_figure(plot_response(result), p))
    return 0 if ok else EXIT_OUTPUT


def report_response(result) -> str:
    """The response as a text table: per speed the arm amplitude and state, the largest hub
    load and span tension amplitude and slip utilisation (with their pulley or span)."""
    from .model.outputs import spans

    names = [p.name for p in result.layout.pulleys]
    pairs = [f"{a}_{b}" for a, b in spans(names)]
    arm = result.layout.tensioner is not None
    rows = []
    for s in result.speeds:
        hub, span, slip = (int(s.hub_force.argmax()), int(s.span_tension.argmax()),
                           int(s.slip_utilisation.argmax()))
        cells = [f"{s.rpm:.0f}", f"{s.frequency:.1f}"]
        if arm:
            state = "stuck" if s.arm_stuck >= 0.5 else "sliding"
            cells += [f"{math.degrees(s.arm_amplitude):.3g}", f"{state} ({s.arm_damping:.3g})"]
        cells += [f"{s.hub_force[hub]:.4g} ({names[hub]})", f"{s.span_tension[span]:.4g} ({pairs[span]})",
                  f"{s.slip_utilisation[slip]:.2f} ({names[slip]})"]
        rows.append(cells)
    header = ["rpm", "frequency [Hz]", *(["tensioner amplitude [deg]", "arm friction [N.m.s/rad]"] if arm else []),
              "largest hub load amplitude [N]", "largest span tension amplitude [N]", "largest slip utilisation"]
    lines = [_table(header, rows)]
    if arm:
        peak = result.peak
        lines.append(f"\ntensioner peak: {math.degrees(peak.arm_amplitude):.3g} deg at {peak.rpm:.0f} rpm "
                     f"({peak.frequency:.1f} Hz)")
    if any(s.slip_utilisation.max() > 1.0 for s in result.speeds):
        lines.append("slip utilisation above 1: the belt's torque swing exceeds the pulley's capacity at the mean "
                     "tensions; it slips during part of each period")
    return "\n".join(lines)


def _add_mode_options(parser) -> None:
    parser.add_argument("--count", type=_count(1), default=MODE_COUNT, metavar="N",
                        help="number of modes, lowest first (default: %(default)s)")
    _add_arm_friction(parser)


def _add_arm_friction(parser) -> None:
    """--arm-friction and the excitation that sets it (the sweep's irregularity options)."""
    group = parser.add_argument_group("tensioner arm friction")
    group.add_argument("--arm-friction", choices=ARM_FRICTION,
                       help="the tensioner arm's Coulomb friction: excited (the default for a speed-driven crank: the "
                            "damping that dissipates what the friction does under the crank speed irregularity below, "
                            "the arm sticking for part of each period where it does; stuck under small excitation, "
                            "sliding under large), stuck (its "
                            "slope at rest; the default for a torque-driven crank) or sliding (a constant torque: "
                            "the arm swings freely on its spring)")
    _add_excitation(group, pump=False)


def _arm_friction(args, point):
    """The arm_friction argument of modes(): the option, or for 'excited' the equivalent
    damping [N m s/rad] of the excitation the options give, at ``point``."""
    if args.arm_friction != "excited":
        return args.arm_friction
    from .analysis.response import Excitation, excited_arm_friction

    return excited_arm_friction(point, Excitation(_excitation_settings(args)))


def _operating_point_command(args) -> int:
    from .analysis.operating_point import operating_point, report
    from .duty import loaded_layout

    layout = _load_layout(args.layout)
    print(f"layout: {layout.source}")
    if args.duty is None:
        print(report(operating_point(layout, args.rpm, args.water_pump_torque), _table))
        return 0
    for k, duty in enumerate(_load_duty(layout, args.duty).points):
        loads = ", ".join([f"{n} {v / 1e3:g} kW" for n, v in duty.power.items()]
                          + [f"{n} {v:g} N.m" for n, v in duty.torque.items()]) or "the layout's loads"
        print(("\n" if k else "") + f"duty point {duty.name!r} ({loads}, time share {duty.time_share:.3g}):")
        print(report(operating_point(loaded_layout(layout, duty), duty.engine_speed_rpm), _table))
    return 0


def _report_command(args) -> int:
    from . import design_report
    from .files import atomic_write

    layout = _load_layout(args.layout)
    _check_outputs(args.error, args.layout or layout.source, {"-o": args.out})
    if Path(args.out).suffix.lower() not in (".html", ".htm"):
        args.error(f"argument -o: {args.out}: the report is HTML; use a name ending in .html")
    if args.duty is not None and _same_file(Path(args.out), Path(args.duty)):
        args.error(f"argument -o: {args.out} is the duty-cycle file; refusing to overwrite it")
    duty = _load_duty(layout, args.duty)
    start = time.perf_counter()
    result = design_report.build(layout, duty)
    text = design_report.render(result)

    def write(path):
        with atomic_write(path, "w", encoding="utf-8") as f:
            f.write(text)

    if not _write("-o", args.out, write):
        return EXIT_OUTPUT
    for check, value, limit, ok in result.checks:
        print(f"{'PASS' if ok else 'FAIL'}  {check}: {value:.4g} (limit {limit:.4g})")
    print(f"wall time: {time.perf_counter() - start:.3g} s ({len(result.results)} duty points)")
    return 0


def describe_arm_friction(friction, args) -> str:
    """The arm friction a modes or campbell run used, for its header."""
    if isinstance(friction, str):
        return friction
    return (f"excited: {friction:.3g} N.m.s/rad equivalent damping at +-{args.irregularity_rpm:g} rpm of order "
            f"{args.order:g}")


def _check_arm_excitation(args, layout) -> None:
    """--arm-friction's default for ``layout``; excited needs a crank speed irregularity, which
    a torque-driven crank has not."""
    if args.arm_friction is None:
        args.arm_friction = "stuck" if layout.torque_driven_crank else "excited"
    if args.arm_friction == "excited" and layout.torque_driven_crank:
        args.error("argument --arm-friction: excited needs the crank speed irregularity, and this drive's crank is "
                   "torque-driven (drive.crank_input = \"torque\"); choose stuck or sliding")


def _modes_command(args) -> int:
    from .analysis.linearization import linearization_layout
    from .analysis.modes import modes
    from .analysis.operating_point import operating_point

    layout = _with_model(_load_layout(args.layout), args.model)
    _check_outputs(args.error, args.layout or layout.source, {"--plot": args.plot})
    _check_arm_excitation(args, layout)
    if layout.drive.model == "lumped":
        return _lumped_modes(args, layout)
    start = time.perf_counter()
    point = operating_point(linearization_layout(layout), args.rpm, args.water_pump_torque, statistics=False)
    friction = _arm_friction(args, point)
    found = modes(point, args.count, friction)
    wall = time.perf_counter() - start
    _print_analysis_layout(layout)
    _print_modes(found, args, point.belt_speed, friction)
    print(f"\nwall time: {wall:.3g} s (operating point, linearization, eigenvalues)")
    if args.plot is not None:
        from .analysis.figures import plot_modes
        from .plots import save_figure

        if not _write("--plot", args.plot, lambda p: save_figure(plot_modes(found, SHAPES_DRAWN), p)):
            return EXIT_OUTPUT
    return 0


def _print_analysis_layout(layout) -> None:
    """The header line of a linear analysis: the layout, and the model where it is the lumped one."""
    print(f"layout: {layout.source}" + ("; lumped model" if layout.drive.model == "lumped" else ""))


def _print_modes(found, args, belt_speed: float, friction) -> None:
    """The operating point's line and the table of ``found`` modes, with their notes."""
    from .analysis.modes import HEAVY_DAMPING, report

    print(f"operating point: crank {args.rpm:g} rpm, water-pump torque {args.water_pump_torque:g} N.m, belt speed "
          f"{belt_speed:.4g} m/s; tensioner arm friction {describe_arm_friction(friction, args)}")
    print()
    print(report(found, _table))
    if any(m.heavily_damped for m in found.modes):
        print(f"\n*: heavily damped (damping ratio above {100 * HEAVY_DAMPING:g} %): a broad, low response peak")
    if len(found) < args.count:
        print(f"\nnote: {len(found)} oscillating modes found of the {args.count} asked for")


def _lumped_modes(args, layout) -> int:
    """``modes`` of the lumped model: its own step linearized (belt_fmu.analysis.lumped_linearization)."""
    from .analysis.lumped_linearization import lumped_modes
    from .analysis.response import Excitation
    from .model.lumped_system import LumpedDrive

    if args.plot is not None:
        args.error("argument --plot: the drawn mode shapes are the discretized belt's; with the lumped model modes "
                   "lists frequencies, damping ratios and energy shares")
    drive = LumpedDrive(layout)
    start = time.perf_counter()
    friction, found = lumped_modes(drive, args.rpm, args.water_pump_torque, args.count, args.arm_friction,
                                   Excitation(_excitation_settings(args)))
    wall = time.perf_counter() - start
    _print_analysis_layout(layout)
    belt_speed = drive.output_values[drive.output_names.index("belt_speed")]  # the steady state's, creep included
    _print_modes(found, args, belt_speed, friction)
    print(f"\nwall time: {wall:.3g} s (steady state, linearization of the step, eigenvalues)")
    return 0


def _campbell_command(args) -> int:
    from .analysis.campbell import campbell, write_csv
    from .analysis.modes import HEAVY_DAMPING
    from .analysis.response import Excitation
    from .sweep import default_workers, parse_values

    try:
        rpms = [float(x) for x in parse_values(args.rpm)]
    except ValueError as err:
        args.error(f"argument --rpm: {err}")
    if not all(math.isfinite(r) and r >= 0.0 for r in rpms):
        args.error(f"argument --rpm: {args.rpm!r}: speeds must be finite numbers >= 0")
    try:
        orders = [float(x) for x in args.orders.split(",")]
    except ValueError:
        args.error(f"argument --orders: {args.orders!r}: give comma-separated numbers, e.g. 2,4")
    if not all(q > 0 and (2 * q).is_integer() for q in orders):
        args.error(f"argument --orders: {args.orders!r}: each order must be a multiple of 0.5 > 0")
    layout = _with_model(_load_layout(args.layout), args.model)
    _check_outputs(args.error, args.layout or layout.source, {"--out": args.out, "--plot": args.plot})
    _check_arm_excitation(args, layout)
    workers = min(args.workers or default_workers(), len(rpms))
    _print_analysis_layout(layout)
    print(f"campbell: {len(rpms)} speeds, {args.count} modes each, orders {', '.join(f'{q:g}' for q in orders)}, on "
          + ("this process" if workers == 1 else f"{workers} local processes")
          + f"; tensioner arm friction {args.arm_friction}"
          + (f" at +-{args.irregularity_rpm:g} rpm of order {args.order:g}" if args.arm_friction == "excited" else ""))
    start = time.perf_counter()
    excitation = Excitation(_excitation_settings(args)) if args.arm_friction == "excited" else None
    result = campbell(layout, rpms, orders, args.count, args.water_pump_torque, args.arm_friction, workers=workers,
                      excitation=excitation)
    print(f"wall time: {time.perf_counter() - start:.3g} s")
    print()
    rows = [[f"{c.rpm:.0f}", f"{c.order:g}", str(c.mode), f"{c.frequency:.1f}",
             f"{100 * c.damping_ratio:.1f}" + (" *" if c.damping_ratio > HEAVY_DAMPING else ""), c.classification]
            for c in result.crossings]
    print("engine-order crossings:" if rows else "no engine-order crossings in this speed range")
    if rows:
        print(_table(["rpm", "order", "mode", "frequency [Hz]", "damping [%]", "classification"], rows))
        if any(c.damping_ratio > HEAVY_DAMPING for c in result.crossings):
            print(f"*: heavily damped (damping ratio above {100 * HEAVY_DAMPING:g} %): a broad, low response peak")
    ok = True
    if args.out is not None:
        ok &= _write("--out", args.out, lambda p: write_csv(result, p))
    if args.plot is not None:
        from .analysis.figures import plot_campbell
        from .plots import save_figure

        ok &= _write("--plot", args.plot, lambda p: save_figure(plot_campbell(result, layout, args.water_pump_torque), p))
    if result.failures:
        print(f"belt-fmu campbell: error: {len(result.failures)} speed(s) failed:", file=sys.stderr)
        for s in result.failures:
            print(f"  {s.rpm:g} rpm: {s.error}", file=sys.stderr)
        return EXIT_MODEL
    return 0 if ok else EXIT_OUTPUT


def console_main() -> None:
    """Entry point of the ``belt-fmu`` command."""
    sys.exit(main())


@contextlib.contextmanager
def _compile_messages(command: str):
    """Print the kernel cache's announcements (compiling, and how long it took) on stderr."""
    import logging

    from .kernel_cache import logger

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{command}: %(message)s"))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


@contextlib.contextmanager
def _progress_bar(args):
    """A ``progress(t)`` callback drawing a tqdm bar on stderr, or None if not wanted. The
    bar appears at the first call, once the model is built (its kernels loaded or compiled),
    so that its rate and time left are the run's."""
    show = args.progress
    if show is None:
        show = args.t_end > PROGRESS_MIN_T_END and sys.stderr.isatty()
    if not show:
        yield None
        return
    from tqdm import tqdm

    bars = []

    def progress(t):
        if not bars:
            bars.append(tqdm(total=args.t_end, desc=args.command, file=sys.stderr, leave=False,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.3f}/{total:.3f} s "
                                        "[{elapsed}<{remaining}]"))
        bars[0].update(t - bars[0].n)

    try:
        yield progress
    finally:
        for bar in bars:
            bar.close()


#: outputs the printed summary shows in degrees (results files keep radians)
DEGREE_COLUMNS = ("tensioner_angle", "tensioner_angle_rel")


def _print_slip_warnings(results, layout) -> None:
    """A warning line per pulley that slipped grossly during the run (below the summary)."""
    from .postprocess import gross_slips

    for event in gross_slips(results, layout):
        print(f"warning: {event}")


def _factor(value: float) -> str:
    """A real-time factor for a person: three significant digits, whole numbers from 1000 up
    (1150, not 1.15e+03)."""
    return f"{value:.0f}" if 999.5 <= value < float("inf") else f"{value:.3g}"


def _summary(results, layout) -> str:
    """Mean, min and max of the main outputs over the last half of the run."""
    import numpy as np

    t = results["time"]
    last = t >= 0.5 * t[-1]
    from .model.outputs import pulley_output_name, span_output_name, spans

    names = [p.name for p in layout.pulleys]
    columns = ["bearing_force", "crank_torque", "belt_speed"]
    if layout.tensioner is not None:
        columns = ["tensioner_angle", "tensioner_angle_rel", *columns]
    columns += [span_output_name("span_tension", a, b) for a, b in spans(names)]
    columns += [pulley_output_name(key, name) for name in names for key in ("speed", "slip")]
    rows = []
    for column in columns:
        values = results[column][last]
        unit = results.units[column]
        if column in DEGREE_COLUMNS:  # angles for people in degrees (radians in the files)
            values, unit = np.degrees(values), "deg"
        rows.append([column, unit, f"{values.mean():.5g}", f"{values.min():.5g}", f"{values.max():.5g}"])
    title = f"last half of the run, t = {t[last][0]:g} to {t[-1]:g} s (bearing_force: {layout.headline_pulley_name}):"
    return title + "\n" + _table(["output", "unit", "mean", "min", "max"], rows)


if __name__ == "__main__":
    console_main()
