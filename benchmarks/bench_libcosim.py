"""Benchmark libcosim against a plain C host: microseconds per 1e-4 s step of the SSP example.

    python benchmarks/bench_libcosim.py [--steps 2000] [--repeat 3]

1. libcosim from C (fmu_tests/native/cosim_ssp.c through libcosimpy's libcosimc.so) runs the
   SSP example (examples/ssp: power unit, belt drive with an alternator port, water pump,
   alternator; fixed step 1e-4 s, no worker threads) for --steps steps; the program times the
   steps after the first, which initializes the system (about 8 s).
2. The plain C host (fmu_tests/native/fmi2_host.c) runs the same belt FMU alone, master loop
   "set the 3 inputs the system connects, doStep, read the 3 outputs it connects", --steps
   steps (its --timing figure: the loop only).

Both in a bare environment (no virtual environment on PATH: the FMUs' native loader finds the
Python), min of --repeat runs. Prints microseconds per step and the ratio.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "fmu_tests" / "native"
EXAMPLE = ROOT / "examples" / "ssp"
#: what the SSD connects to the belt: its inputs (set by the host every step) and outputs (read)
BELT_INPUTS = {"crank_speed": 83.8, "water_pump_torque": 2.0, "alternator1_torque": 3.0}
BELT_OUTPUTS = ("crank_torque", "water_pump_speed", "alternator1_speed")


def bare_environment() -> dict:
    env = {"PATH": "/usr/bin:/bin"}
    env.update({k: v for k, v in os.environ.items()
                if k in ("HOME", "XDG_CACHE_HOME", "BELT_FMU_CACHE") or k.startswith(("OPENBLAS_", "BELT_FMU_NATIVE"))})
    return env


def compile_program(source: Path, folder: Path) -> Path:
    program = folder / source.stem
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-o", str(program), str(source), "-ldl"], check=True)
    return program


def libcosimc() -> Path:
    spec = importlib.util.find_spec("libcosimpy")
    if spec is None:
        sys.exit("libcosimpy is not installed (it ships libcosimc.so)")
    return next(Path(spec.origin).parent.glob("libcosimc/libcosimc.so"))


def us_per_step(command: list[str]) -> float:
    """The "us_per_step" figure a program prints (it fails: the script stops with its output)."""
    run = subprocess.run(command, capture_output=True, text=True, env=bare_environment(), timeout=1800)
    if run.returncode != 0 or "status OK" not in run.stdout:
        sys.exit(f"{command[0]} failed:\n{run.stdout}\n{run.stderr}")
    return float(next(line.split()[1] for line in run.stdout.splitlines() if line.startswith("us_per_step")))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(EXAMPLE))
    import build_ssp

    with tempfile.TemporaryDirectory(prefix="bench_libcosim_") as tmp:
        tmp = Path(tmp)
        fmus = build_ssp.build_fmus(tmp / "fmus")
        ssp = build_ssp.pack_ssp(tmp / "system.ssp", fmus)
        cosim = compile_program(NATIVE / "cosim_ssp.c", tmp)
        host = compile_program(NATIVE / "fmi2_host.c", tmp)

        per_step_libcosim = min(us_per_step([str(cosim), str(libcosimc()), str(ssp), str(args.steps)])
                                for _ in range(args.repeat)) * 1e-6

        belt = tmp / "belt"
        with zipfile.ZipFile(fmus[build_ssp.BELT_FMU]) as z:
            z.extractall(belt)
        root = ET.parse(belt / "modelDescription.xml").getroot()
        refs = {v.get("name"): v.get("valueReference") for v in root.iter("ScalarVariable")}
        options = [option for name, value in BELT_INPUTS.items() for option in ("--set", f"{refs[name]}={value}")]
        options += ["--each-step", "--steps", str(args.steps), "--timing",
                    "--out", ",".join(refs[name] for name in BELT_OUTPUTS)]
        per_step_host = min(us_per_step([str(host), str(belt), root.find("CoSimulation").get("modelIdentifier"),
                                         root.get("guid"), *options]) for _ in range(args.repeat)) * 1e-6

    print(f"libcosim from C, SSP system (4 FMUs): {1e6 * per_step_libcosim:9.1f} us per 1e-4 s step")
    print(f"plain C host, belt FMU alone:         {1e6 * per_step_host:9.1f} us per 1e-4 s step")
    print(f"ratio: {per_step_libcosim / per_step_host:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
