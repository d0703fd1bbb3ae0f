"""Run ``BeltDriveSystem.ssp`` with libcosim, the Open Simulation Platform's co-simulation
engine (PyPI ``libcosimpy``): results table and plots.

    python examples/ssp/run_ssp.py BeltDriveSystem.ssp [--t-end T] [--out results_ssp.csv]
                                   [--plot results_ssp.png]

libcosim reads the archive itself (components, connections, the parameter bindings of
``parameters.ssv``, the fixed-step algorithm of the DefaultExperiment annotation) and runs
it: at each step every FMU steps from the inputs its partners' outputs had after the
previous step (Jacobi), then outputs go to the inputs.
A time-series observer records :data:`ssp_file.RECORDED` at every step, the initialized
state included (step 0), and the bound parameters' values. The run prints a summary of its
second half; ``--t-end`` defaults to the SSD's stop time.

The FMUs are PythonFMU FMUs with belt_fmu's native loader: loaded into this process, they run
on this interpreter.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from ssp_file import RECORDED, belt_layout, filtered_bearing_force, fixed_steps, read_ssp, results_table, summary

#: panels of :func:`figure`: column, label, factor from the recorded SI value to the one drawn
#: (speeds in rpm and the tensioner in deg, as the belt-fmu command line shows them)
PANELS = (("engine.crank_speed", "crank speed [rpm]", 30.0 / math.pi),
          ("belt.crank_torque", "crank torque [N.m]", 1.0),
          ("belt.tensioner_angle", "tensioner angle [deg]", 180.0 / math.pi),
          ("belt.bearing_force", "bearing force idler1 [N]", 1.0))


def run_libcosim(ssp_path, t_end: float | None = None):
    """Co-simulate the SSP archive at ``ssp_path`` with libcosim for ``t_end`` [s] (default:
    the SSD's stop time) with the SSD's fixed-step algorithm; returns a
    :class:`belt_fmu.simulation.Results` of :data:`ssp_file.RECORDED` at every step from 0,
    with ``parameters``: the bound parameter values the FMUs report at the end.
    ``wall_time`` is the stepping time (the first step, which also initializes, counted as an
    average one). RuntimeError if libcosim stops, with its message (an FMU's own message is
    in libcosim's log, on standard output, just before)."""
    from libcosimpy._internal import get_last_error_message
    from libcosimpy.CosimEnums import CosimVariableCausality, CosimVariableType
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver


    system = read_ssp(ssp_path)
    _, n_steps = fixed_steps(system, t_end)
    log_output_level(CosimLogLevel.WARNING)
    execution = CosimExecution.from_ssp_file(str(ssp_path))
    try:
        observer = CosimObserver.create_time_series(buffer_size=n_steps + 1)
        execution.add_observer(observer)
        recorded, applied = {}, {}  # column -> (slave index, value reference)
        for name, component in system.components.items():
            index = execution.slave_index_from_instance_name(name)
            variables = {v.name.decode(): v for v in execution.slave_variables(index)}
            recorded.update({f"{name}.{v}": (index, variables[v].reference) for c, v in RECORDED if c == name})
            applied.update({f"{name}.{p}": (index, variables[p].reference) for p in component.parameters
                            if p in variables and variables[p].causality == CosimVariableCausality.PARAMETER.value})
        for index, reference in (*recorded.values(), *applied.values()):
            observer.start_time_series(index, reference, CosimVariableType.REAL)

        if not execution.step(1):  # initializes, then steps once
            raise RuntimeError(f"libcosim could not initialize {ssp_path} and take the first step: "
                               f"{get_last_error_message()}")
        start = time.perf_counter()
        if n_steps > 1 and not execution.step(n_steps - 1):
            raise RuntimeError(f"libcosim stopped at t = {execution.status().current_time * 1e-9:.6g} s: "
                               f"{get_last_error_message()}")
        wall = (time.perf_counter() - start) * n_steps / max(n_steps - 1, 1)
        values = {}
        for name, where in recorded.items():
            times_ns, values[name] = _all_samples(observer, *where, n_steps)
        parameters = {name: observer.time_series_real_samples(*where, n_steps, 1)[2][0]
                      for name, where in applied.items()}
    finally:
        del execution  # now, also after a failure: unloads the FMUs, removes libcosim's temporary folder
    return results_table(system, [t / 1e9 for t in times_ns], values, wall, parameters)


def _all_samples(observer, index: int, reference: int, n_steps: int) -> tuple[list, list]:
    """Time points [ns] and values at steps 0..n_steps of one real variable from a
    time-series observer. (libcosimpy 0.0.6 trims a read that includes step 0 by one sample,
    taking step number 0 for an empty slot, so the read continues from the last step it
    returned.)"""
    times, steps, samples = [], [], []
    while not steps or steps[-1] < n_steps:
        start = steps[-1] + 1 if steps else 0
        got_times, got_steps, got_samples = observer.time_series_real_samples(index, reference, start,
                                                                              n_steps + 1 - start)
        if not got_steps:
            raise RuntimeError(f"no samples of variable {reference} of slave {index} from step {start}")
        times += got_times
        steps += got_steps
        samples += got_samples
    if steps != list(range(n_steps + 1)):
        raise RuntimeError(f"time series of variable {reference} of slave {index} has gaps")
    return times, samples


def figure(results, reference=None, labels=("libcosim", "fmpy loop")):
    """Four panels over time (crank speed, crank torque, tensioner angle, bearing force), with
    ``reference`` (another run of the same system) drawn dashed over it. The bearing force is
    also drawn as it is read, low-pass filtered below the belt model's polygon frequency
    (:func:`ssp_file.filtered_bearing_force`). The title names the operating point (mean
    crank speed, the firing order and the speed amplitude the engine was given, the mean
    water-pump torque) and the belt FMU's model."""
    from belt_fmu.plots import plt

    fig, axes = plt.subplots(len(PANELS), 1, sharex=True, figsize=(8, 9))
    for ax, (column, label, factor) in zip(axes, PANELS):
        ax.plot(results["time"], factor * results[column], lw=0.8, label=labels[0])
        if reference is not None:
            ax.plot(reference["time"], factor * reference[column], lw=0.8, ls="--", label=labels[1])
        ax.set_ylabel(label)
        ax.grid(True, lw=0.3)
    force, cutoff = filtered_bearing_force(results)
    axes[-1].plot(results["time"], force, color="k", lw=1.2, label=f"{labels[0]}, low-pass {cutoff:.0f} Hz "
                  "(half the polygon frequency)")
    for ax in (axes[0], axes[-1]):
        ax.legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel("time [s]")
    parameters = results.parameters
    rpm = float(np.mean(results["engine.crank_speed"])) * 30.0 / math.pi
    fig.suptitle(f"{results.system.path.name}: engine, belt drive, water pump and alternator\n"
                 f"crank {rpm:.0f} rpm mean, order {parameters['engine.irregularity_order']:g} firing pulsation "
                 f"(+-{parameters['engine.irregularity_amplitude'] * 30.0 / math.pi:.3g} rpm engine alone)\n"
                 f"water-pump torque {np.mean(results['pump.water_pump_torque']):.3g} N.m mean; belt FMU: "
                 f"{belt_layout(results.system).drive.model} model", fontsize=9)
    fig.tight_layout()
    return fig


def plot_results(results, path, reference=None, labels=("libcosim", "fmpy loop")):
    """:func:`figure` written to ``path`` atomically."""
    from belt_fmu.plots import save_figure

    return save_figure(figure(results, reference, labels), path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ssp", type=Path, help="SSP archive (build_ssp.py)")
    parser.add_argument("--t-end", type=float, default=None, help="simulated time [s] (default: the SSD's stop time)")
    parser.add_argument("--out", type=Path, default=Path("results_ssp.csv"), help="results table (CSV)")
    parser.add_argument("--plot", type=Path, default=Path("results_ssp.png"), help="figure (png, pdf, svg)")
    args = parser.parse_args(argv)
    results = run_libcosim(args.ssp, args.t_end)
    results.to_csv(args.out)
    plot_results(results, args.plot)
    print(f"libcosim: {results['time'][-1]:g} s simulated in {results.wall_time:.2f} s "
          f"(real-time factor {results.real_time_factor:.2f}); wrote {args.out} and {args.plot}")
    print(summary(results))
    return 0


if __name__ == "__main__":
    try:
        status = main()
    except Exception as err:  # a message, not a traceback
        print(f"run_ssp: {type(err).__name__}: {err}", file=sys.stderr)
        status = 1
    sys.exit(status)
