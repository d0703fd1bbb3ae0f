"""The inputs of a drive: the one table they are declared in.

:func:`input_specs` gives, for a layout, every input the drive takes, with its unit, range
and description; :class:`~belt_fmu.model.system.BeltDrive` checks values against it, the
FMU slave registers its input variables from it, the FMU builder writes their units and
ranges into the modelDescription, and ``simulate`` names its input columns after it.

Which inputs a drive has is a structural choice of its layout:

* the crankshaft's causality (``[drive] crank_input``): ``crank_speed`` [rad/s], the crank
  speed prescribed (today's default), or ``engine_torque`` [N m], the torque the engine
  drives the crank with, the crank's speed and angle then being outputs and its inertia
  the layout's;
* ``water_pump_torque`` [N m], the water pump's load (every drive has it; 0 without a pump);
* ``{pulley}_torque`` [N m] for every accessory with ``load = "input"`` (a port).

Sign conventions (docs/layout-format.md): speeds in the running direction; a load torque
(``water_pump_torque``, ``{pulley}_torque``) is positive against the pulley's rotation and
acts like a Coulomb load that can stop a pulley but never turns it backwards, a negative
one drives the pulley (a belt starter-generator motoring); ``engine_torque`` is positive
driving the crank in its running direction, a negative one resists like a load (engine
friction and compression while cranking).
"""
from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from ..units import RPM

#: crank speed: the crank turns forwards (the initialization builds a running state in the
#: running direction) and below 1500 rad/s (14 300 rpm; belt speeds beyond that are outside
#: any automotive drive)
CRANK_SPEED_RANGE = (0.0, 1500.0)  # [rad/s]
#: accessory load torques (the water pump's and the ports'): magnitudes up to 1 kN m
LOAD_TORQUE_RANGE = (-1000.0, 1000.0)  # [N m]
#: the water pump's load torque: an accessory load
WATER_PUMP_TORQUE_RANGE = LOAD_TORQUE_RANGE  # [N m]
#: the crank speed range in rpm, as the command line takes it (this module loads no numba,
#: so the command line checks its options against these before it loads the model)
RPM_RANGE = (CRANK_SPEED_RANGE[0] / RPM, CRANK_SPEED_RANGE[1] / RPM)
#: engine torque on the crank: magnitudes up to 10 kN m (heavy-duty diesels reach 3.5 kN m)
ENGINE_TORQUE_RANGE = (-1.0e4, 1.0e4)  # [N m]


@dataclasses.dataclass(frozen=True)
class Input:
    """An input of a drive: its name, unit, description and the range the model accepts;
    ``pulley`` the pulley it acts on (None for ``crank_speed`` and ``water_pump_torque``,
    which the model takes separately)."""

    name: str
    unit: str
    description: str
    low: float
    high: float
    pulley: str | None = None

    def problem(self, value) -> str | None:
        """None if ``value`` is allowed, else what is wrong with it (naming the input)."""
        if type(value) is float and math.isfinite(value) and self.low <= value <= self.high:
            return None  # the common case: the check against numbers.Real below takes about 2 us
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            return (f"{self.name} must be a finite number in [{self.low:g}, {self.high:g}] {self.unit}, "
                    f"got {value!r}")
        if not self.low <= value <= self.high:
            return (f"{self.name} = {value:.6g} {self.unit} is outside the allowed range "
                    f"[{self.low:g}, {self.high:g}] {self.unit}")
        return None


CRANK_SPEED = Input("crank_speed", "rad/s", "crank speed in its running direction", *CRANK_SPEED_RANGE)
WATER_PUMP_TORQUE = Input("water_pump_torque", "N.m", "water-pump load torque, positive against its rotation",
                          *LOAD_TORQUE_RANGE)
ENGINE_TORQUE = "engine_torque"  # the torque-driven crank's input


def port_input_name(pulley: str) -> str:
    """Name of the load-torque input of the accessory ``pulley`` (``load = "input"``)."""
    return f"{pulley}_torque"


def has_native_step(specs) -> bool:
    """Whether a drive with the inputs ``specs`` (:func:`input_specs`) has a native step, and
    so may run the lumped model: its inputs are crank_speed and water_pump_torque alone, the
    native step's C function's (:class:`belt_fmu.model.system.NativeStep`)."""
    return [spec.name for spec in specs] == ["crank_speed", "water_pump_torque"]


def input_specs(layout) -> tuple[Input, ...]:
    """Every input of a drive with this layout, in the FMU's order: the crank's (speed or
    engine torque), the water pump's torque, then the accessories' load torques in belt
    travel order."""
    if layout.torque_driven_crank:
        crank = layout.pulleys[layout.crank_index].name
        first = Input(ENGINE_TORQUE, "N.m", f"engine torque on the crankshaft (pulley '{crank}'), positive "
                      "driving it in its running direction; negative: a resisting load (cranking)",
                      *ENGINE_TORQUE_RANGE, pulley=crank)
    else:
        first = CRANK_SPEED
    ports = tuple(Input(port_input_name(name), "N.m", f"load torque of accessory '{name}', positive against its "
                        "rotation; negative: the accessory drives the belt (a starter-generator motoring)",
                        *LOAD_TORQUE_RANGE, pulley=name)
                  for name in layout.port_pulleys)
    return (first, WATER_PUMP_TORQUE) + ports


def check_inputs(crank_speed, water_pump_torque) -> None:
    """Refuse a crank speed or water-pump torque the model is not made for (ValueError
    naming the input, the value and the range)."""
    for spec, value in ((CRANK_SPEED, crank_speed), (WATER_PUMP_TORQUE, water_pump_torque)):
        problem = spec.problem(value)
        if problem is not None:
            raise ValueError(problem)


def check_input_table(specs, table) -> None:
    """:func:`check_inputs` for a table of input samples (one row per sample, columns as
    ``specs``): each column's first non-finite value, else its extremes, against its spec."""
    for spec, column in zip(specs, table.T):
        finite = np.isfinite(column)
        suspects = (column[np.argmin(finite)],) if not finite.all() else (column.min(), column.max())
        for value in suspects:
            problem = spec.problem(float(value))
            if problem is not None:
                raise ValueError(problem)
