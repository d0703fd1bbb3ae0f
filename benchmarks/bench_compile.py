"""Where the cold start's time goes: compile the model's kernels from empty caches, phase by
phase, each phase in a fresh process, and print its wall and CPU seconds, the process's peak
memory and the functions that took longest to compile.

    python benchmarks/bench_compile.py [--phases import discretized native lumped analysis fmu]
                                       [--top 12] [--keep-cache DIR]

The phases run in order against one kernel cache, empty at the start (a temporary folder as
``BELT_FMU_CACHE``, removed at the end unless ``--keep-cache``), so each phase compiles only
what the ones before it left for it, as a user's commands do one after the other:

- ``import``: ``import belt_fmu.simulation`` (numba, the package, the kernels' decorators);
- ``discretized``: a reset and 1 ms of the built-in drive (what ``belt-fmu simulate`` runs);
- ``native``: the discretized model's C step for the FMU's native loader;
- ``lumped``: the lumped model's reset, 1 ms and its C step (``--model lumped``);
- ``analysis``: the modes at 800 rpm (``belt-fmu modes``);
- ``fmu``: ``belt-fmu build`` of the built-in layout, then its first load and one step in
  fmpy (what ``belt-fmu cosim`` does first).

CPU seconds and peak memory include the processes a phase starts (``belt-fmu build``
compiles in two). Each phase's compile times come from numba's event API (``numba:compile`` events): a
function's own time excludes the functions compiled while typing it. The largest are listed
per phase. Figures for this machine go into docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PHASES = {
    "import": "import belt_fmu.simulation",
    "discretized": """
        from belt_fmu import BeltDrive, load_layout
        drive = BeltDrive(load_layout())
        drive.reset(83.8, 0.0, settle_time=1e-3)
        drive.advance(1e-3, 83.8, 0.0)
        drive.output_values
    """,
    "native": """
        from belt_fmu import BeltDrive, load_layout
        drive = BeltDrive(load_layout())
        drive.native_step()
    """,
    "lumped": """
        from belt_fmu import load_layout
        from belt_fmu.model.lumped_system import LumpedDrive
        drive = LumpedDrive(load_layout())
        drive.reset(83.8, 0.0, settle_time=1e-3)
        drive.advance(1e-3, 83.8, 0.0)
        drive.output_values
        drive.native_step()
    """,
    "analysis": """
        from belt_fmu import load_layout
        from belt_fmu.analysis.modes import modes
        from belt_fmu.analysis.operating_point import operating_point
        modes(operating_point(load_layout(), 800.0, settle_time=1e-3), count=6)
    """,
    "fmu": """
        import tempfile
        from pathlib import Path
        from fmpy import simulate_fmu
        from belt_fmu.build import build_fmu
        with tempfile.TemporaryDirectory() as tmp:
            fmu = build_fmu(None, Path(tmp) / "BeltDrive.fmu")
            simulate_fmu(str(fmu), stop_time=1e-3, step_size=1e-4)
    """,
}

#: run in the child before a phase: record numba's compile events
PROBE = """
import json, os, resource, sys, time
from numba.core import event

_own = {}
_stack = []

class _Listener(event.Listener):
    def on_start(self, ev):
        _stack.append([ev.data["dispatcher"], time.perf_counter(), 0.0])

    def on_end(self, ev):
        dispatcher, start, nested = _stack.pop()
        spent = time.perf_counter() - start
        if _stack:
            _stack[-1][2] += spent
        name = getattr(dispatcher, "__qualname__", None) or getattr(dispatcher.py_func, "__qualname__", "?")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        key = f"{module}.{name}"
        _own[key] = _own.get(key, 0.0) + spent - nested

event.register("numba:compile", _Listener())
_wall, _cpu = time.perf_counter(), time.process_time()
"""

REPORT = """
_children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the build's compiling processes
_result = {"wall": time.perf_counter() - _wall,
           "cpu": time.process_time() - _cpu + _children.ru_utime + _children.ru_stime,
           "peak_mb": max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, _children.ru_maxrss) / 1024,
           "compiled": sorted(_own.items(), key=lambda kv: -kv[1])}
print("BENCH_COMPILE " + json.dumps(_result))
"""


def run_phase(name: str, env: dict) -> dict:
    """One phase in a fresh process: its figures (wall, cpu, peak_mb, compiled)."""
    code = PROBE + textwrap.dedent(PHASES[name]) + REPORT
    if name == "import":  # numba itself is part of the import's cost
        code = "import time; _t0, _c0 = time.perf_counter(), time.process_time()\n" + code
        code = code.replace("_wall, _cpu = time.perf_counter(), time.process_time()", "_wall, _cpu = _t0, _c0")
    start = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    whole = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{child.stderr[-3000:]}")
    line = next(line for line in child.stdout.splitlines() if line.startswith("BENCH_COMPILE "))
    result = json.loads(line[len("BENCH_COMPILE "):])
    result["process"] = whole
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", nargs="+", choices=list(PHASES), default=list(PHASES))
    parser.add_argument("--top", type=int, default=12, help="functions listed per phase")
    parser.add_argument("--keep-cache", metavar="DIR", help="use DIR as the kernel cache and keep it")
    args = parser.parse_args(argv)

    cache = args.keep_cache or tempfile.mkdtemp(prefix="belt_fmu_bench_compile.")
    # numba's own cache too, for kernels that would otherwise be cached beside their source
    env = dict(os.environ, BELT_FMU_CACHE=cache, NUMBA_CACHE_DIR=str(Path(cache) / "numba"))
    print(f"python {platform.python_version()}, {platform.processor() or platform.machine()}, "
          f"cpu: {cpu_model()}, kernel cache: {cache}")
    rows = []
    try:
        for name in args.phases:
            result = run_phase(name, env)
            rows.append((name, result))
            own = sum(seconds for _, seconds in result["compiled"])
            print(f"\n{name}: {result['wall']:.1f} s wall, {result['cpu']:.1f} s CPU, "
                  f"{result['process']:.1f} s with the interpreter, peak {result['peak_mb']:.0f} MB; "
                  f"{len(result['compiled'])} functions compiled in {own:.1f} s")
            for qualname, seconds in result["compiled"][:args.top]:
                print(f"    {seconds:7.2f} s  {qualname}")
    finally:
        if not args.keep_cache:
            shutil.rmtree(cache, ignore_errors=True)
    print("\n| phase | wall [s] | CPU [s] | peak RSS [MB] | functions compiled |")
    print("|---|---|---|---|---|")
    for name, result in rows:
        print(f"| {name} | {result['wall']:.1f} | {result['cpu']:.1f} | {result['peak_mb']:.0f} | "
              f"{len(result['compiled'])} |")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


if __name__ == "__main__":
    main()
