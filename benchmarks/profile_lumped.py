"""Where the lumped model's step spends its time, by source function and line.

    python benchmarks/profile_lumped.py [--layout FILE] [--rpm 800] [--t-end 2000] [--top 30]

Runs ``LumpedDrive.advance`` over --t-end s in one call under ``perf record`` (Linux perf)
and attributes the samples in the compiled kernel to the functions and lines of
``belt_fmu/model`` they were compiled from: the kernel is compiled afresh, in a temporary
kernel cache, with numba's line tables (``NUMBA_DEBUGINFO=1``) but numba's inlining left as
it is (full debug info would add ``noinline`` to every function and profile another code),
and each sampled address is looked up in the compiled object with ``addr2line``. Prints the
share of the kernel's samples per function (a function inlined into another counts as its
own), the hottest lines, and the C math library's functions, which the kernel calls. The
``?`` rows are code without a line (prologues, spills). Needs ``perf`` (sampling at 20 kHz,
CPU clock: it runs on virtual machines without hardware counters), ``addr2line`` and ``nm``; takes
about three minutes on a 2-core machine, most of it the compile with line tables.
"""
from __future__ import annotations

import argparse
import ast
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL_SOURCES = Path(__file__).resolve().parents[1] / "belt_fmu" / "model"


def run_kernel(args, out: Path) -> None:
    """The profiled process: compile (lines kept, inlining as usual), then one long advance
    under ``perf record`` attached to this process; writes the samples, the kernel's compiled
    object and its entry address into ``out``."""
    from numba.core import lowering

    numba_pre_lower = lowering.Lower.pre_lower

    def pre_lower(self):
        numba_pre_lower(self)
        self.builder.function.attributes.discard("noinline")  # full debug info adds it

    lowering.Lower.pre_lower = pre_lower

    from belt_fmu import load_layout
    from belt_fmu.model import lumped
    from belt_fmu.model.lumped_system import LumpedDrive
    from belt_fmu.units import RPM

    drive = LumpedDrive(load_layout(args.layout).with_drive(model="lumped"))
    speed = args.rpm * RPM
    drive.reset(speed, args.water_pump_torque)
    drive.advance(0.01, speed, args.water_pump_torque)  # compiled now
    compiled = lumped.run.overloads[lumped.run.signatures[0]]
    entry = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
    (out / "kernel.o").write_bytes(compiled.library._get_compiled_object())  # numba's (0.68) object code
    (out / "entry").write_text(f"{compiled.fndesc.llvm_func_name} {entry:#x}")
    perf = subprocess.Popen(["perf", "record", "-F", "20000", "-q", "-p", str(os.getpid()), "-o",
                             str(out / "perf.data")])
    time.sleep(1.0)  # perf attaches
    start = time.perf_counter()
    drive.advance(args.t_end, speed, args.water_pump_torque)
    wall = time.perf_counter() - start
    perf.send_signal(signal.SIGINT)
    perf.wait()
    print(f"{args.t_end:g} s simulated in {wall:.3g} s under the profiler (real-time factor {args.t_end / wall:.4g})")


def function_ranges() -> dict:
    """{file name: [(first line, last line, function name)]} of the model's modules."""
    ranges = {}
    for path in MODEL_SOURCES.glob("*.py"):
        tree = ast.parse(path.read_text())
        ranges[path.name] = [(node.lineno, node.end_lineno, node.name) for node in tree.body
                             if isinstance(node, ast.FunctionDef)]
    return ranges


def attribute(out: Path, data: Path, top: int) -> None:
    """Print the samples of ``data`` by function and line of the kernel in ``out``."""
    name, entry = (out / "entry").read_text().split()
    symbols = subprocess.run(["nm", "--defined-only", str(out / "kernel.o")], capture_output=True, text=True,
                             check=True).stdout
    # a sample's offset in the object's code section: its distance from run's entry, plus run's offset there
    base = int(entry, 16) - next(int(line.split()[0], 16) for line in symbols.splitlines() if line.endswith(" " + name))
    size = (out / "kernel.o").stat().st_size
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym,dso"], capture_output=True,
                            text=True, check=True).stdout
    kernel = collections.Counter()
    libm = collections.Counter()
    for line in script.splitlines():
        fields = line.split()
        if not fields:
            continue
        address = int(fields[0], 16)
        if "libm" in line:
            libm[fields[1]] += 1
        elif 0 <= address - base < size:
            kernel[address - base] += 1
    total = sum(kernel.values()) + sum(libm.values())
    if total == 0:
        sys.exit("profile_lumped: no samples in the kernel (perf could not sample this process?)")
    offsets = sorted(kernel)
    lines = subprocess.run(["addr2line", "-e", str(out / "kernel.o"), "-j", ".ltext"],
                           input="\n".join(hex(o) for o in offsets), capture_output=True, text=True,
                           check=True).stdout.splitlines()
    ranges = function_ranges()
    by_function = collections.Counter()
    by_line = collections.Counter()
    for offset, where in zip(offsets, lines):
        path, _, number = where.split(" (")[0].rpartition(":")
        name = Path(path).name
        function = "?"
        if number.isdigit():
            function = next((f for first, last, f in ranges.get(name, ()) if first <= int(number) <= last), "?")
        by_function[f"{name}:{function}"] += kernel[offset]
        by_line[f"{name}:{number}"] += kernel[offset]
    print(f"\nkernel samples: {total} ({100 * sum(libm.values()) / total:.1f} % in the C math library)\n")
    print("| share | function |\n|---|---|")
    for function, count in by_function.most_common(top):
        print(f"| {100 * count / total:.1f} % | {function} |")
    print("\nhottest lines: " + ", ".join(f"{line} {100 * count / total:.1f} %"
                                           for line, count in by_line.most_common(12)))
    print("C math library: " + ", ".join(f"{name} {100 * count / total:.1f} %" for name, count in libm.most_common(8)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", help="layout TOML file (default: the built-in layout)")
    parser.add_argument("--rpm", type=float, default=800.0, help="crank speed [rpm] (default: %(default)g)")
    parser.add_argument("--water-pump-torque", type=float, default=2.0, help="[N m] (default: %(default)g)")
    parser.add_argument("--t-end", type=float, default=2000.0, help="profiled simulated time [s] (default: %(default)g)")
    parser.add_argument("--top", type=int, default=30, help="functions listed (default: %(default)s)")
    parser.add_argument("--kernel-out", help=argparse.SUPPRESS)  # the profiled process's own
    args = parser.parse_args(argv)
    if args.kernel_out:
        run_kernel(args, Path(args.kernel_out))
        return
    missing = [tool for tool in ("perf", "addr2line", "nm") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"profile_lumped: needs {' and '.join(missing)} on PATH")
    with tempfile.TemporaryDirectory(prefix="belt_fmu_profile_") as tmp:
        out = Path(tmp)
        env = dict(os.environ, NUMBA_DEBUGINFO="1", BELT_FMU_CACHE=str(out / "cache"))
        command = [sys.executable, __file__, "--kernel-out", str(out), "--rpm", str(args.rpm),
                   "--water-pump-torque", str(args.water_pump_torque), "--t-end", str(args.t_end)]
        if args.layout:
            command += ["--layout", args.layout]
        subprocess.run(command, env=env, check=True)
        attribute(out, out / "perf.data", args.top)


if __name__ == "__main__":
    main()
