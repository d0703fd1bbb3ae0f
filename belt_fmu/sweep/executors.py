"""Where a sweep's runs go: this process, local worker processes or a Dask cluster.

One run, :func:`run_point`, is a pure function of the run's layout and parameters (the model
is deterministic), so every executor gives the same floats. :func:`outcome` wraps it so that
a failed run is a result like any other.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from ..units import RPM
from .planning import Run, postprocessing, crank_speed_signal

OK, FAILED = "ok", "failed"
#: [s] how often a local worker checks that the sweep's main process still runs
PARENT_POLL_INTERVAL = 0.5
#: the lumped drive of the last layout this process ran, (layout, drive): :func:`drive_for`
_last_lumped = None
#: [s] what a local worker process takes to start (numba, the package, scipy.signal and the
#: compiled kernels loaded), and a run of the lumped model at the sweep's defaults: 2-core
#: AMD EPYC (znver3), 100 runs 500-3000 rpm, 4.1 s in this process, 4.7 s on 2 workers
WORKER_START_SECONDS = 2.6
LUMPED_RUN_SECONDS = 0.035


def drive_for(layout):
    """A drive to run ``layout`` on: the lumped model's is built once per layout and process
    and reused (its reset rebuilds its whole state and work buffers from the layout and
    the inputs, so a run does not depend on the runs before it); building it (the
    layout's translation, the kernels' binding) took about 0.2 s, more than the run of an
    engine-speed sweep. The discretized belt is built for every run (None: simulate builds
    it)."""
    global _last_lumped
    if layout.drive.model != "lumped":
        return None
    if _last_lumped is None or not (_last_lumped[0] is layout or _last_lumped[0] == layout):
        from ..model.system import make_drive

        _last_lumped = (layout, make_drive(layout))
    return _last_lumped[1]


def run_point(run: Run) -> dict[str, float]:
    """Simulate one run and return its metrics by name
    (:func:`belt_fmu.postprocess.cycle_metric_specs` lists them with their units).

    Outputs are sampled every :attr:`Run.output_interval` (the crank speed held over each
    interval, as a co-simulation master holds an input over a step); the evaluated cycles
    follow ``settle_cycles`` engine cycles and are followed by :attr:`Run.margin_samples`.
    Raises what the model raises (DivergenceError, InitializationError, ValueError).
    """
    from ..simulation import simulate

    s = run.settings
    samples = run.cycle_samples
    start = s.settle_cycles * samples
    crank = crank_speed_signal(run.rpm, run.irregularity_amplitude, s.order)
    results = simulate(run.layout, crank_speed=crank, water_pump_torque=run.water_pump_torque,
                       t_end=run.simulated_time, output_interval=run.output_interval, drive=drive_for(run.layout))
    return postprocessing().cycle_metrics(results, run.layout, run.rpm * RPM, start, samples, s.cycles)


def outcome(run: Run) -> dict:
    """What a worker returns for a run: status, error message, wall time [s] and metrics.
    Any exception is caught here, so a failed run is a result like any other."""
    start = time.perf_counter()
    try:
        metrics = run_point(run)
    except Exception as err:  # recorded with the run's parameters; the sweep carries on
        message = f"{type(err).__name__}: {err}".replace("\n", " | ")
        return {"status": FAILED, "error": message, "wall_time": time.perf_counter() - start}
    return {"status": OK, "error": "", "wall_time": time.perf_counter() - start, **metrics}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else (pid reused): treat as gone
        return False
    return True


def _watch_main(main_pid: int) -> None:
    """Worker initializer: end this worker as soon as the sweep's main process is gone (killed
    with SIGKILL, it cannot shut the pool down), so that no worker computes on for nobody.
    The forkserver and resource tracker end by themselves once the main process and every
    worker are gone (their pipes close)."""

    def watch():
        while _alive(main_pid):
            time.sleep(PARENT_POLL_INTERVAL)
        os._exit(1)

    threading.Thread(target=watch, name="belt-fmu-sweep-watchdog", daemon=True).start()


def default_workers(runs=None) -> int:
    """The cores this process may run on; for ``runs`` (:class:`Run`) all of the lumped
    model, 1 (this process) unless spreading them over the cores saves more time than the
    workers take to start (:data:`WORKER_START_SECONDS`): a lumped run takes a few hundredths
    of a second, and a short sweep of them ran slower on two workers than in this process."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if runs and all(run.layout.drive.model == "lumped" for run in runs):
        saved = len(runs) * LUMPED_RUN_SECONDS * (1.0 - 1.0 / cores)
        return cores if saved > WORKER_START_SECONDS else 1
    return cores


def _collected(future) -> dict:
    """A future's outcome; a worker lost (killed process, lost cluster node) is a failed run."""
    try:
        return future.result()
    except Exception as err:
        return {"status": FAILED, "error": f"{type(err).__name__}: {err}".replace("\n", " | "), "wall_time": ""}


@contextlib.contextmanager
def executor(workers: int, scheduler: str | None):
    """Yields ``run_all(runs)``, an iterator of (run, outcome) in the order the runs finish:
    on the Dask scheduler at ``scheduler`` if given, else on ``workers`` local processes
    ('forkserver' start method where available, else 'spawn'; each worker loads the model's
    compiled kernels from numba's disk cache), or in this process if ``workers`` is 1."""
    if scheduler is not None:
        from distributed import Client
        from distributed import as_completed as dask_completed

        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as err:
            raise ConnectionError(f"cannot connect to the Dask scheduler at {scheduler}: {err}") from None

        def run_all(runs):
            futures = {client.submit(outcome, run, pure=False): run for run in runs}
            for future in dask_completed(list(futures)):
                yield futures[future], _collected(future)

        try:
            yield run_all
        finally:
            client.close()
    elif workers > 1:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if context.get_start_method() == "forkserver":
            context.set_forkserver_preload(["belt_fmu.simulation"])  # workers fork with the model loaded
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_watch_main,
                                   initargs=(os.getpid(),))

        def run_all(runs):
            futures = {pool.submit(outcome, run): run for run in runs}
            for future in as_completed(futures):
                yield futures[future], _collected(future)

        try:
            yield run_all
        finally:
            pool.shutdown(cancel_futures=True)
    else:
        yield lambda runs: ((run, outcome(run)) for run in runs)
