"""Cross-check: the same ``BeltDriveSystem.ssp`` run by a plain fmpy master loop.

    python examples/ssp/run_fmpy.py BeltDriveSystem.ssp [--t-end T] [--out results_fmpy.csv]
                                    [--compare results_ssp.csv] [--plot cross_check.png]

The loop reads the archive the way :mod:`ssp_file` describes (components, connections,
parameter bindings, the fixed step of libcosim's annotation) and drives each FMU through fmpy
(:class:`belt_fmu.cosim.FmuInstance`) with the sequence of calls libcosim's fixed-step
algorithm makes, so that both masters feed every FMU the same inputs and their results
agree to the last bit when the FMUs are deterministic:

1. the bound parameter values set on the instantiated FMUs (values for inputs wait for the
   first pass; names that are no parameter or input of the FMU are ignored), then
   ``setupExperiment`` and ``enterInitializationMode``; outputs read;
2. as many initialization passes as there are components: each sets the inputs its partners'
   outputs gave in the previous pass and reads its outputs (in initialization mode);
3. inputs set, ``exitInitializationMode``, outputs read and passed on: time 0;
4. each step k: every FMU sets the inputs passed on after step k-1, steps from t_k by h_k and
   has its outputs read; then outputs are passed on (Jacobi). Time points are those of
   libcosim's nanosecond clock: t_k = k h_ns / 1e9 in double precision, h_ns the SSD's step
   truncated to whole nanoseconds, and h_k = t_{k+1} - t_k.

``--compare`` reads a results table of ``run_ssp.py`` and prints the largest difference of
each signal; ``--plot`` then draws both runs.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
from fmpy.fmi1 import FMICallException

from ssp_file import RECORDED, fixed_steps, read_ssp, results_table, summary


def run_fmpy(ssp_path, t_end: float | None = None):
    """Co-simulate the SSP archive at ``ssp_path`` with the fmpy loop described in the module
    docstring for ``t_end`` [s] (default: the SSD's stop time) at the SSD's fixed step;
    returns a :class:`belt_fmu.simulation.Results` of :data:`ssp_file.RECORDED` at every
    step from 0, with ``parameters``: the bound parameter values the FMUs report after
    initialization. ``wall_time`` is the stepping time. RuntimeError with the FMUs' error
    messages if an FMU fails."""
    system = read_ssp(ssp_path)
    step_ns, n_steps = fixed_steps(system, t_end)
    # the FMUs' libraries stay loaded (FmuInstance.close), which Windows does not let delete
    with tempfile.TemporaryDirectory(prefix="belt_fmu_ssp_fmpy_", ignore_cleanup_errors=True) as tmp:
        with zipfile.ZipFile(ssp_path) as archive:
            archive.extractall(tmp)
        loop = JacobiLoop(system, Path(tmp))
        try:
            loop.initialize()
            rows = [loop.recorded()]
            start = time.perf_counter()
            for k in range(n_steps):
                t, t_next = k * step_ns / 1e9, (k + 1) * step_ns / 1e9
                loop.step(t, t_next - t)
                rows.append(loop.recorded())
            wall = time.perf_counter() - start
        except FMICallException as err:
            raise RuntimeError(f"{err} {'; '.join(loop.errors())}") from None
        finally:
            loop.close()
    table = np.array(rows)
    values = {f"{c}.{v}": table[:, i] for i, (c, v) in enumerate(RECORDED)}
    return results_table(system, [k * step_ns / 1e9 for k in range(n_steps + 1)], values, wall, loop.parameters)


class JacobiLoop:
    """The FMUs of ``system`` (extracted below ``folder``) driven as libcosim's fixed-step
    algorithm drives them (module docstring). Outputs are read into :attr:`outputs` and
    passed on to the inputs they connect to in :attr:`pending`, set at the next call."""

    def __init__(self, system, folder: Path):
        from fmpy import extract

        from belt_fmu.cosim import FmuInstance

        self.system = system
        self.instances = {}
        for name, component in system.components.items():
            fmu = folder / component.source
            self.instances[name] = FmuInstance(fmu, instance_name=name,
                                               unzip_directory=extract(fmu, unzipdir=folder / name))
        self.read = {name: sorted({connector for start, connector, *_ in system.connections if start == name}
                                  | {v for c, v in RECORDED if c == name})
                     for name in self.instances}  # variables read after each call: connected and recorded
        self.outputs = {name: {} for name in self.instances}
        self.pending = {name: {} for name in self.instances}
        self.parameters = {}

    def initialize(self) -> None:
        """Steps 1-3 of the module docstring; :attr:`parameters` then holds the bound
        parameter values the FMUs report."""
        for name, instance in self.instances.items():
            for parameter, value in self.system.components[name].parameters.items():
                causality = self._causality(name, parameter)
                if causality == "parameter":
                    instance.set({parameter: value})
                elif causality == "input":  # a start value: libcosim sets it in the first pass
                    self.pending[name][parameter] = value
            instance.fmu.setupExperiment(startTime=0.0)
            instance.fmu.enterInitializationMode()
            self._get(name)
        for _ in range(len(self.instances)):
            for name in self.instances:
                self._set_pending(name)
                self._get(name)
            self._transfer()
        for name, instance in self.instances.items():
            self._set_pending(name)
            instance.fmu.exitInitializationMode()
            self._get(name)
        self._transfer()
        for name, instance in self.instances.items():
            bound = [p for p in self.system.components[name].parameters if self._causality(name, p) == "parameter"]
            self.parameters.update({f"{name}.{p}": v for p, v in zip(bound, instance.get(bound))})

    def step(self, t: float, h: float) -> None:
        """One communication step from ``t`` [s] by ``h`` [s] (step 4 of the module docstring)."""
        for name, instance in self.instances.items():
            self._set_pending(name)
            instance.fmu.doStep(currentCommunicationPoint=t, communicationStepSize=h)
            self._get(name)
        self._transfer()

    def recorded(self) -> list[float]:
        """Current values of :data:`ssp_file.RECORDED`."""
        return [self.outputs[c][v] for c, v in RECORDED]

    def errors(self) -> list[str]:
        """The error messages the FMUs logged, as "component: message"."""
        return [f"{name}: {text}" for name, instance in self.instances.items()
                for level, text in instance.messages if level in ("ERROR", "FATAL")]

    def close(self) -> None:
        for instance in self.instances.values():
            instance.close()

    def _causality(self, name: str, variable: str) -> str | None:
        return getattr(self.instances[name].variables.get(variable), "causality", None)

    def _get(self, name: str) -> None:
        self.outputs[name] = dict(zip(self.read[name], self.instances[name].get(self.read[name])))

    def _set_pending(self, name: str) -> None:
        self.instances[name].set(self.pending[name])
        self.pending[name] = {}

    def _transfer(self) -> None:
        for start, start_connector, end, end_connector in self.system.connections:
            self.pending[end][end_connector] = self.outputs[start][start_connector]


def differences(results, reference) -> dict[str, float]:
    """Largest absolute difference of each recorded signal between two runs on the same time
    grid (ValueError if the grids differ)."""
    if not np.array_equal(results["time"], reference["time"]):
        raise ValueError("the two runs have different time points")
    return {name: float(np.max(np.abs(results[name] - reference[name]))) for name in results.names if name != "time"}


def read_table(path):
    """A results table written by ``Results.to_csv`` (``name [unit]`` header)."""
    from belt_fmu.simulation import Results

    with open(path) as f:
        header = f.readline().strip().split(",")
    data = np.atleast_2d(np.loadtxt(path, delimiter=",", skiprows=1))
    names = [h.rsplit(" [", 1)[0] for h in header]
    units = {n: h.rsplit(" [", 1)[1].rstrip("]") for n, h in zip(names, header)}
    return Results({n: data[:, i] for i, n in enumerate(names)}, units)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ssp", type=Path, help="SSP archive (build_ssp.py)")
    parser.add_argument("--t-end", type=float, default=None, help="simulated time [s] (default: the SSD's stop time)")
    parser.add_argument("--out", type=Path, default=Path("results_fmpy.csv"), help="results table (CSV)")
    parser.add_argument("--compare", type=Path, default=None, metavar="CSV",
                        help="results of run_ssp.py to compare with")
    parser.add_argument("--plot", type=Path, default=None, help="figure of both runs (with --compare)")
    args = parser.parse_args(argv)
    results = run_fmpy(args.ssp, args.t_end)
    results.to_csv(args.out)
    print(f"fmpy loop: {results['time'][-1]:g} s simulated in {results.wall_time:.2f} s "
          f"(real-time factor {results.real_time_factor:.2f}); wrote {args.out}")
    print(summary(results))
    if args.compare is not None:
        reference = read_table(args.compare)
        print(f"largest difference to {args.compare} (both as written, 9 significant digits):")
        for name, diff in differences(read_table(args.out), reference).items():
            scale = float(np.max(np.abs(reference[name])))
            print(f"  {name:24s} {diff:.3g} {results.units[name]} ({diff / scale if scale else 0.0:.2g} of its "
                  "largest value)")
        if args.plot is not None:
            from run_ssp import plot_results

            plot_results(results, args.plot, reference, labels=("fmpy loop", "libcosim"))
            print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    try:
        status = main()
    except Exception as err:  # a message, not a traceback
        print(f"run_fmpy: {type(err).__name__}: {err}", file=sys.stderr)
        status = 1
    sys.exit(status)
