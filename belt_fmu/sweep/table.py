"""A sweep's results table: one row per run, written as the runs finish.

The CSV has the run's parameters first (they identify it), then the layout file, the run's
derived inputs, its status and its metrics as ``name [unit]`` columns; numbers in full
precision. Rows are appended and flushed as runs finish, so a killed sweep keeps what it did;
:meth:`SweepTable.read` drops a last row cut short.
"""
from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..files import atomic_write


@dataclass
class SweepTable:
    """A sweep's results table: the CSV header and the rows as text, numbers in full
    precision. The key columns (a run's parameters and the layout digest) come first and end
    before the column ``layout``."""

    columns: list[str]
    rows: list[dict[str, str]]

    @classmethod
    def read(cls, path) -> "SweepTable":
        """Read a results CSV. A last row cut short (the sweep was killed while writing it) is
        left out. Raises ValueError if the file is not a sweep table."""
        text = Path(path).read_text(encoding="utf-8")
        if text and not text.endswith("\n"):  # cut short while written: drop the partial row
            text = text[:text.rfind("\n") + 1]
        lines = list(csv.reader(text.splitlines(keepends=True)))
        if not lines or "layout" not in lines[0] or "status" not in lines[0]:
            raise ValueError(f"{path}: not a belt-fmu sweep table (no header with 'layout' and 'status')")
        columns = lines[0]
        rows = [dict(zip(columns, line)) for line in lines[1:] if len(line) == len(columns)]
        return cls(columns, rows)

    def write(self, path) -> Path:
        """Write the table to ``path`` atomically (a temporary file renamed over it)."""
        path = Path(path)
        with atomic_write(path, newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, self.columns, lineterminator="\n")
            writer.writeheader()
            writer.writerows(self.rows)
        return path

    @property
    def key_columns(self) -> list[str]:
        return self.columns[:self.columns.index("layout")]

    def key(self, row: dict[str, str]) -> tuple[str, ...]:
        return tuple(row[c] for c in self.key_columns)

    def sorted(self) -> "SweepTable":
        """The rows in order of their key, speed last; the last row of a key wins (a run
        done again on resume replaces its earlier row)."""
        from .planning import DUTY_COLUMN

        duty = [DUTY_COLUMN] if DUTY_COLUMN in self.key_columns else []
        columns = [c for c in self.key_columns if c not in ("rpm", DUTY_COLUMN)] + ["rpm"] + duty
        latest = {self.key(row): row for row in self.rows}
        order = sorted(latest.values(), key=lambda row: tuple(_sortable(row[c]) for c in columns))
        return SweepTable(self.columns, order)

    def number(self, rows: list[dict[str, str]], column: str) -> np.ndarray:
        """Column ``column`` of ``rows`` as floats (NaN where empty)."""
        return np.array([float(row[column]) if row[column] else math.nan for row in rows])

    def metric(self, rows: list[dict[str, str]], name: str) -> np.ndarray:
        """The metric ``name`` (its column ``name [unit]``) of ``rows`` as floats."""
        column = next((c for c in self.columns if c.rpartition(" [")[0] == name), None)
        if column is None:
            raise KeyError(f"no metric {name!r} in the table")
        return self.number(rows, column)

    def cases(self) -> list[tuple[str, list[dict[str, str]]]]:
        """The rows grouped by study variant, each group sorted by speed, with its label:
        "name=value, ..." of the parameters other than rpm that differ between rows, named as
        ``--vary`` names them ("" if none do)."""
        rows = self.sorted().rows
        from .planning import DUTY_COLUMN, SETTING_COLUMNS

        # a duty cycle's points are the speeds of one case, not cases
        varied = [c for c in self.key_columns if c not in ("rpm", DUTY_COLUMN) and len({row[c] for row in rows}) > 1]
        groups: dict[tuple, list] = {}
        for row in rows:
            groups.setdefault(tuple(row[c] for c in varied), []).append(row)

        names = {column: name for name, column in SETTING_COLUMNS.items()}  # labelled as --vary names them
        return [(", ".join(f"{names.get(c, c)}={_short(v)}" for c, v in zip(varied, values)), group)
                for values, group in groups.items()]


def _sortable(text: str):
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def _short(text: str) -> str:
    try:
        return f"{float(text):g}"
    except ValueError:
        return text


def cell(value) -> str:
    """A table cell: floats in full precision (repr reads back exactly), others as str."""
    return repr(float(value)) if isinstance(value, float) else str(value)


def append_row(path, columns: list[str], row: dict[str, str]) -> None:
    """Append one row and push it to the disk, so a killed sweep keeps it."""
    with open(path, "a", newline="", encoding="utf-8") as f:
        csv.DictWriter(f, columns, lineterminator="\n").writerow(row)
        f.flush()
        os.fsync(f.fileno())
