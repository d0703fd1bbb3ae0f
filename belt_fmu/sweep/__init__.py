"""Engine-speed sweeps and parameter studies of a drive, on the local cores or a Dask cluster.

[Scania thesis]'s main result (section 5.2, Figs. 5.4-5.5) is the tensioner angular amplitude and
the first idler's bearing force, max and min, over engine speed, 500-2300 rpm; calibrating a
drive to measurements (its section 9) takes many such runs. A sweep is the cartesian product
of study variants (:func:`parse_variation`: layout keys such as ``belt.pretension_N``, or
run settings such as ``irregularity_rpm``) and crank speeds: :func:`plan` turns it into
:class:`Run` s, :func:`sweep` runs them and keeps the results table.

One run, :func:`run_point`, is a pure function of the run's layout and parameters (the model
is deterministic), so every executor gives the same floats:

- crank speed ``w(t) = w_m + dw sin(q w_m t)``: mean speed w_m and a speed irregularity of
  engine order q and amplitude dw (docs/references.md R8), see :class:`RunSettings`;
- water-pump load ``T0 + k w_p^2`` at the pump's mean speed w_p, constant over the run;
- the drive starts from its steady running state at w_m (``BeltDrive.reset``), runs
  ``settle_cycles`` engine cycles (two crank revolutions each) to reach a periodic state,
  then ``cycles`` evaluated cycles and a margin for the filter;
- the metrics over the evaluated cycles, every signal low-pass filtered at half the polygon
  frequency ([Scania thesis] section 7): :func:`belt_fmu.postprocess.cycle_metrics`.

The results table (CSV) has one row per run, keyed by the run's parameters and appended as
the runs finish, so an interrupted sweep loses nothing done; started again with ``resume``
it skips the runs already in the table. A failed run is a row with status "failed" and its
error message; the others carry on.

The package: :mod:`.planning` (settings, variations, runs), :mod:`.table` (the results CSV),
:mod:`.executors` (where the runs go, and one run); :func:`sweep` here ties them together.
"""
from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .executors import FAILED, OK, default_workers, executor, outcome, run_point
from .planning import (SCALINGS, SETTINGS, Plan, Run, RunSettings, Variation, crank_speed_signal, layout_digest,
                       parse_values, parse_variation, plan)
from .table import SweepTable, append_row

__all__ = ["FAILED", "OK", "SCALINGS", "SETTINGS", "Plan", "Run", "RunSettings", "SweepResult", "SweepTable",
           "Variation", "crank_speed_signal", "default_workers", "layout_digest", "outcome", "parse_values",
           "parse_variation", "plan", "run_point", "sweep"]


@dataclass
class SweepResult:
    """What :func:`sweep` did: the whole table (earlier rows of a resumed table included),
    how many runs it ran and skipped (already in the table), the failures ("run LABEL:
    ERROR" lines) and the wall time [s]."""

    table: SweepTable
    ran: int
    skipped: int
    failures: list[str]
    wall_time: float


def sweep(plan: Plan, out=None, *, mode: str = "new", workers: int | None = None, scheduler: str | None = None,
          progress: bool = False, log: Callable[[str], None] | None = None) -> SweepResult:
    """Run the plan's runs and keep their rows in the results table ``out`` (CSV; None keeps
    them in memory only).

    ``mode`` says what to do with an existing ``out``: "new" refuses it (FileExistsError),
    "resume" keeps its rows and skips the runs whose row is there with status "ok" (failed
    runs run again; the table must be of the same layout and columns, else ValueError), and
    "overwrite" replaces it. Each finished run's row is appended at once; at the end the
    table is rewritten sorted (by variant, then speed), atomically.

    Runs go to the Dask scheduler at ``scheduler`` if given, else to ``workers`` local
    processes (default: :func:`default_workers`, the cores available unless the runs are
    lumped ones too few to pay for starting them; 1 runs them in this process), longest first.
    ``progress`` draws a progress bar (tqdm) on stderr; ``log(line)`` is called for each
    failed run.
    """
    if mode not in ("new", "resume", "overwrite"):
        raise ValueError(f"mode must be 'new', 'resume' or 'overwrite', got {mode!r}")
    columns = list(plan.columns)
    earlier = SweepTable(columns, [])
    if out is not None and Path(out).exists():
        if mode == "new":
            raise FileExistsError(f"{out} exists; resume it or overwrite it")
        if mode == "resume":
            earlier = _resumable(SweepTable.read(out), columns, plan.digest, out)
    done = {earlier.key(row) for row in earlier.rows if row["status"] == OK}
    todo = sorted((run for run in plan.runs if plan.key(run) not in done), key=lambda run: -run.simulated_time)
    workers = default_workers(todo) if workers is None else workers
    start = time.perf_counter()
    rows, failures = [], []
    with executor(min(workers, len(todo)) if todo else 1, scheduler) as run_all:
        if out is not None:
            earlier.write(out)  # the header, and a clean end to append to
        bar = _progress_bar(len(todo)) if progress else None
        try:
            for run, result in run_all(todo):
                row = plan.row(run, result)
                if out is not None:
                    append_row(out, columns, row)
                rows.append(row)
                if result["status"] == FAILED:
                    failures.append(f"run {run.label}: {result['error']}")
                    if log is not None:
                        with bar.external_write_mode() if bar is not None else contextlib.nullcontext():
                            log(failures[-1])
                if bar is not None:
                    bar.set_postfix(failed=len(failures), refresh=False)
                    bar.update()
        finally:
            if bar is not None:
                bar.close()
    table = SweepTable(columns, earlier.rows + rows).sorted()
    if out is not None:
        table.write(out)
    return SweepResult(table, len(todo), len(plan.runs) - len(todo), failures, time.perf_counter() - start)


def _resumable(table: SweepTable, columns: list[str], digest: str, path) -> SweepTable:
    """``table`` if a sweep with these ``columns`` and layout digest may add to it."""
    if table.columns != columns:
        missing = [c for c in columns if c not in table.columns]
        extra = [c for c in table.columns if c not in columns]
        raise ValueError(f"{path}: its columns differ from this sweep's (missing: {', '.join(missing) or '-'}; "
                         f"not in this sweep: {', '.join(extra) or '-'}); resume with the same layout and "
                         "varied layout keys, or write to another file")
    other = sorted({row["layout_sha256"] for row in table.rows} - {digest})
    if other:
        raise ValueError(f"{path}: made with another layout (layout_sha256 {', '.join(other)}, this one "
                         f"{digest}); resume with the same layout, or write to another file")
    return table


def _progress_bar(total: int):
    from tqdm import tqdm

    return tqdm(total=total, desc="sweep", unit="run", file=sys.stderr, leave=False)
