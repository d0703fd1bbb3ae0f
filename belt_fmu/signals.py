"""Input signals from the command line: ``--input NAME=VALUE`` or ``NAME=FILE.csv``.

A value is a constant in the input's unit (the drive's input table,
:func:`belt_fmu.model.inputs.input_specs`: SI, N.m for torques, rad/s for speeds). A file is a
CSV table of two columns, time [s] and the value, with times strictly increasing; the value
between two rows is interpolated linearly and held at the first and last rows' values before
and after them. An optional header row names the columns; units given there in brackets
(``time [s],engine_torque [N.m]``) must be the input's. Lines starting with ``#`` are
comments. The model holds an input constant over each output interval (``simulate``) or
communication step (``cosim``), at its value at the interval's start.

Every problem is a :class:`SignalError` whose message starts with the option's text and names
the input or the file and what is allowed: the command line reports it as a usage error.
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

#: a header cell's unit: "name [unit]"
UNIT = re.compile(r"\[([^\]]*)\]\s*$")


class SignalError(ValueError):
    """An ``--input`` that cannot be used; the message says why."""


@dataclass(frozen=True)
class Signal:
    """One input's signal: its name, a function of time [s] and where it came from."""

    name: str
    at: Callable[[float], float]
    source: str  # "3.5 N.m" or "torque.csv (120 rows, 0 to 2 s)"
    constant: float | None = None  # the value, for a constant


def parse_inputs(texts: list[str], specs) -> dict[str, Signal]:
    """The signals of the ``NAME=VALUE`` / ``NAME=FILE.csv`` texts, for inputs of ``specs``
    (objects with ``name``, ``unit``, ``problem(value)``), by name; SignalError for an
    unknown name (listing the allowed ones), a name given twice, a bad number or file."""
    known = {spec.name: spec for spec in specs}
    signals = {}
    for text in texts:
        name, sep, value = text.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise SignalError(f"{text!r}: give NAME=VALUE or NAME=FILE.csv")
        spec = known.get(name)
        if spec is None:
            raise SignalError(f"{text!r}: {name!r} is not an input of this drive; its inputs: "
                              + ", ".join(known))
        if name in signals:
            raise SignalError(f"{text!r}: {name} is given twice")
        signals[name] = _signal(spec, value, text)
    return signals


def _signal(spec, value: str, text: str) -> Signal:
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None:
        problem = spec.problem(number)
        if problem is not None:
            raise SignalError(f"{text!r}: {problem}")
        return Signal(spec.name, lambda t, v=number: v, f"{number:g} {spec.unit}", number)
    path = Path(value)
    if not path.is_file():
        raise SignalError(f"{text!r}: {value} is neither a number nor an existing file "
                          f"(a constant in {spec.unit} or a CSV of time [s], value [{spec.unit}])")
    times, values = read_table(path, spec, repr(text))
    return Signal(spec.name, lambda t: float(np.interp(t, times, values)),
                  f"{path} ({len(times)} rows, t = {times[0]:g} to {times[-1]:g} s, linear)")


def csv_rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, cells) of each row of the CSV file ``path``, read as UTF-8 with or without
    the byte-order mark a spreadsheet writes; blank rows and rows whose first cell starts
    with ``#`` (comments) left out. Raises OSError or UnicodeDecodeError."""
    text = Path(path).read_text(encoding="utf-8-sig")
    return [(number, row) for number, row in enumerate(csv.reader(text.splitlines()), 1)
            if row and not row[0].lstrip().startswith("#") and any(cell.strip() for cell in row)]


def read_table(path: Path, spec, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The (time, value) columns of the CSV file ``path`` for the input ``spec``, checked:
    two numeric columns, at least one row, finite values, times strictly increasing, the
    values in the input's range, header units (if any) ``s`` and the input's."""
    try:
        rows = csv_rows(path)
    except (OSError, UnicodeDecodeError) as err:
        raise SignalError(f"{where}: cannot read {path}: {getattr(err, 'strerror', None) or err}") from None
    if rows and not _numeric(rows[0][1][0]):
        _check_header(rows.pop(0)[1], path, spec, where)
    times, values = [], []
    for number, row in rows:
        cells = [cell.strip() for cell in row]
        if len(cells) != 2 or not all(_numeric(cell) for cell in cells):
            raise SignalError(f"{where}: {path} line {number}: {','.join(row)!r} is not two numbers "
                              f"(time [s], {spec.name} [{spec.unit}])")
        t, v = float(cells[0]), float(cells[1])
        if not (math.isfinite(t) and math.isfinite(v)):
            raise SignalError(f"{where}: {path} line {number}: {','.join(row)!r} is not finite")
        if times and t <= times[-1]:
            raise SignalError(f"{where}: {path} line {number}: time {t:g} s does not follow {times[-1]:g} s; "
                              "times must increase strictly")
        problem = spec.problem(v)
        if problem is not None:
            raise SignalError(f"{where}: {path} line {number}: {problem}")
        times.append(t)
        values.append(v)
    if not times:
        raise SignalError(f"{where}: {path} has no rows of time [s], {spec.name} [{spec.unit}]")
    return np.array(times), np.array(values)


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _check_header(header: list[str], path: Path, spec, where: str) -> None:
    if len(header) != 2:
        raise SignalError(f"{where}: {path}: the header {','.join(header)!r} must name two columns, time [s] and "
                          f"{spec.name} [{spec.unit}]")
    for cell, unit in zip(header, ("s", spec.unit)):
        found = UNIT.search(cell)
        if found is not None and found.group(1).strip() != unit:
            raise SignalError(f"{where}: {path}: column {cell.strip()!r} is in {found.group(1).strip()!r}; "
                              f"this column must be in {unit}")
