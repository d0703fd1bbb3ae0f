"""Duty cycle: the operating points a drive is designed for.

A duty point is an engine speed [rpm] with, for any of the drive's loaded pulleys (roles
"accessory" and "water_pump"), its power [kW] or its load torque [N m], an optional name and
an optional time share. A pulley the point says nothing about keeps its layout load (torque
table, or the water pump's input 0). Points come from a CSV file or from the layout's
``[[duty_points]]`` tables, with the same names::

    name,engine_speed_rpm,time_share,alternator1_power_kW,water_pump_torque_Nm
    idle,650,0.3,1.0,1.5

    [[duty_points]]
    name = "idle"
    engine_speed_rpm = 650
    time_share = 0.3
    alternator1_power_kW = 1.0

A power P [W] becomes the torque ``P / omega`` at the pulley's running speed at that engine
speed, ``omega = omega_crank R_crank / R`` (cord-line radii, the belt's speed ratio without
creep). Time shares are normalized to sum to 1; none given: equal shares. Positive loads
resist the pulley's rotation (README, "Units and sign conventions").

The model takes a duty point's loads through :func:`loaded_layout`: each loaded pulley's
load becomes a constant torque table (a port, ``load = "input"``, too: in steady running a
constant table and a constant input are the same load), so that every model and analysis
that reads a layout (discretized, lumped, the static design chain) sees the same loads.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

from .model.inputs import LOAD_TORQUE_RANGE, RPM_RANGE
from .signals import csv_rows
from .units import RPM

LOADED_ROLES = ("accessory", "water_pump")
POWER_SUFFIX = "_power_kW"
TORQUE_SUFFIX = "_torque_Nm"
KEYS = ("name", "engine_speed_rpm", "time_share")


class DutyError(ValueError):
    """A duty cycle that cannot be read: the message names the file (or layout table), the
    line or point, the field, the value and what is allowed."""


@dataclass(frozen=True)
class DutyPoint:
    """One operating point: engine (crank) speed and the loads it sets, by pulley name."""

    name: str
    engine_speed_rpm: float
    time_share: float  # [-], the cycle's shares sum to 1
    power: dict  # pulley -> [W]
    torque: dict  # pulley -> [N m]

    @property
    def crank_speed(self) -> float:
        """[rad/s]"""
        return self.engine_speed_rpm * RPM

    def load_torques(self, layout) -> dict:
        """Load torque [N m] of every pulley this point loads: given, or power / running speed."""
        from .model.geometry import cord_radius

        torques = dict(self.torque)
        belt_speed = self.crank_speed * cord_radius(layout, layout.crank_index)
        for name, power in self.power.items():
            j = [p.name for p in layout.pulleys].index(name)
            omega = belt_speed / cord_radius(layout, j)
            torques[name] = power / omega if omega > 0.0 else 0.0
        return torques


@dataclass(frozen=True)
class DutyCycle:
    points: tuple[DutyPoint, ...]
    source: str

    def __len__(self) -> int:
        return len(self.points)


def loaded_layout(layout, point: DutyPoint):
    """``layout`` with the loads of ``point``: each loaded pulley's load a constant torque
    table (module docstring)."""
    torques = point.load_torques(layout)
    pulleys = tuple(
        dataclasses.replace(p, load="table", torque_table_speed_rad_per_s=(0.0, 1.0),
                            torque_table_Nm=(torques[p.name], torques[p.name]))
        if p.name in torques else p for p in layout.pulleys)
    return dataclasses.replace(layout, pulleys=pulleys)


def _columns(layout) -> dict:
    """Allowed load columns: column name -> (pulley, "power" or "torque")."""
    columns = {}
    for p in layout.pulleys:
        if p.role in LOADED_ROLES:
            columns[p.name + POWER_SUFFIX] = (p.name, "power")
            columns[p.name + TORQUE_SUFFIX] = (p.name, "torque")
    return columns


def _load_problem(layout, column: str) -> str:
    """Why ``column`` is not a column of a duty point on ``layout``."""
    loaded = [p.name for p in layout.pulleys if p.role in LOADED_ROLES]
    allowed = (f"{', '.join(KEYS)} and, for the loaded pulleys ({', '.join(loaded) or 'none'}), "
               f"<pulley>{POWER_SUFFIX} or <pulley>{TORQUE_SUFFIX}")
    for suffix in (POWER_SUFFIX, TORQUE_SUFFIX):
        if column.endswith(suffix):
            name = column[: -len(suffix)]
            names = {p.name: p.role for p in layout.pulleys}
            if name not in names:
                return f"no pulley {name!r} in the layout; allowed: {allowed}"
            return f"pulley {name!r} has role {names[name]!r}, which takes no load; allowed: {allowed}"
    return f"unknown field; allowed: {allowed}"


def _number(where: str, field: str, value, low: float, high: float, unit: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise DutyError(f"{where}: {field}: {value!r} is not a number; must be in [{low:g}, {high:g}] {unit}") from None
    if isinstance(value, bool) or not (math.isfinite(x) and low <= x <= high):
        raise DutyError(f"{where}: {field}: {value!r} must be in [{low:g}, {high:g}] {unit}")
    return x


def _point(layout, where: str, row: dict, index: int) -> tuple[DutyPoint, float | None]:
    """One point from a row (field -> value; empty and None values are not given)."""
    columns = _columns(layout)
    given = {k: v for k, v in row.items() if v is not None and not (isinstance(v, str) and v.strip() == "")}
    for key in given:
        if key not in KEYS and key not in columns:
            raise DutyError(f"{where}: {key}: {_load_problem(layout, key)}")
    if "engine_speed_rpm" not in given:
        raise DutyError(f"{where}: engine_speed_rpm: missing; every duty point needs its engine speed [rpm]")
    rpm = _number(where, "engine_speed_rpm", given["engine_speed_rpm"], RPM_RANGE[0], RPM_RANGE[1], "rpm")
    share = None
    if "time_share" in given:
        share = _number(where, "time_share", given["time_share"], 0.0, math.inf, "(a share >= 0)")
    power, torque = {}, {}
    for key, value in given.items():
        if key not in columns:
            continue
        pulley, kind = columns[key]
        other = pulley + (TORQUE_SUFFIX if kind == "power" else POWER_SUFFIX)
        if other in given:
            raise DutyError(f"{where}: {pulley}: both {pulley}{POWER_SUFFIX} and {pulley}{TORQUE_SUFFIX} given; "
                            "give one of them")
        if kind == "power":
            power[pulley] = 1e3 * _number(where, key, value, -1e3, 1e3, "kW")
        else:
            torque[pulley] = _number(where, key, value, *LOAD_TORQUE_RANGE, "N m")
    name = str(given.get("name", f"point {index + 1}"))
    if rpm == 0.0 and power:
        raise DutyError(f"{where}: engine_speed_rpm: 0 with a power given; a power needs a running pulley")
    return DutyPoint(name, rpm, 0.0, power, torque), share


def _cycle(points_and_shares, source: str) -> DutyCycle:
    if not points_and_shares:
        raise DutyError(f"{source}: no duty points")
    shares = [s for _, s in points_and_shares]
    given = [s is not None for s in shares]
    if any(given) and not all(given):
        missing = [p.name for p, s in points_and_shares if s is None]
        raise DutyError(f"{source}: time_share: given for some points but not for {', '.join(missing)}; "
                        "give it for every point or for none (equal shares)")
    if not any(given):
        shares = [1.0] * len(shares)
    total = sum(shares)
    if not total > 0.0:
        raise DutyError(f"{source}: time_share: the shares sum to 0; at least one must be > 0")
    names = [p.name for p, _ in points_and_shares]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DutyError(f"{source}: name: {', '.join(repeated)} repeated; each duty point needs its own name")
    return DutyCycle(tuple(dataclasses.replace(p, time_share=s / total)
                           for (p, _), s in zip(points_and_shares, shares)), source)


def read_duty_csv(path, layout) -> DutyCycle:
    """The duty cycle in the CSV file ``path`` for ``layout`` (module docstring); ``#`` starts a
    comment line. DutyError names the file, line, field and value of a problem."""
    path = Path(path)
    try:
        rows = csv_rows(path)
    except FileNotFoundError:
        raise DutyError(f"{path}: no such duty-cycle file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise DutyError(f"{path}: cannot read the duty-cycle file: {err}") from None
    if not rows:
        raise DutyError(f"{path}: empty; a header row (name,engine_speed_rpm,...) and one row per point expected")
    header_line, header = rows[0][0], [h.strip() for h in rows[0][1]]
    if "engine_speed_rpm" not in header:
        raise DutyError(f"{path} line {header_line}: engine_speed_rpm: missing column; the header needs "
                        f"engine_speed_rpm (and optionally {', '.join(k for k in KEYS if k != 'engine_speed_rpm')} "
                        "and load columns)")
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise DutyError(f"{path} line {header_line}: column {repeated[0]!r} repeated")
    points = []
    for k, (number, row) in enumerate(rows[1:]):
        where = f"{path} line {number}"
        if len(row) != len(header):
            raise DutyError(f"{where}: {len(row)} fields, the header has {len(header)}")
        points.append(_point(layout, where, dict(zip(header, (c.strip() for c in row))), k))
    for column in header:  # an unknown column is refused even with every cell empty
        if column not in KEYS and column not in _columns(layout):
            raise DutyError(f"{path} line {header_line}: {column}: {_load_problem(layout, column)}")
    return _cycle(points, str(path))


def layout_duty(layout) -> DutyCycle | None:
    """The layout's ``[[duty_points]]`` (None if it has none)."""
    tables = layout.design.get("duty_points")
    if tables is None:
        return None
    source = f"{layout.source}: duty_points"
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise DutyError(f"{source}: must be an array of tables ([[duty_points]])")
    return _cycle([_point(layout, f"{source}[{k}]", t, k) for k, t in enumerate(tables)], source)


def tight_side_warnings(layout, cycle: DutyCycle) -> list[str]:
    """A line for each duty point of ``cycle`` at which the tensioner sits on the crank's
    tight side with that point's loads (:func:`belt_fmu.model.layout_checks.tensioner_on_tight_side`)."""
    from .model.layout_checks import steady_loads, tensioner_on_tight_side

    lines = []
    for point in cycle.points:
        loaded = loaded_layout(layout, point)
        if tensioner_on_tight_side(loaded, steady_loads(loaded, point.crank_speed)):
            lines.append(f"{cycle.source}: duty point {point.name!r} ({point.engine_speed_rpm:g} rpm): the tensioner "
                         "is on the tight side of the crank with this point's loads (it carries more than half of "
                         "the tension rise they make); a tensioner belongs on the crank's slack side")
    return lines


def load_duty(layout, path=None) -> DutyCycle | None:
    """The duty cycle of ``path`` (a CSV file), else the layout's, else None."""
    return read_duty_csv(path, layout) if path is not None else layout_duty(layout)
