"""The drive's two inputs and the ranges the model accepts them in (no numba: the command
line checks its options against these before it loads the model)."""
from __future__ import annotations

import math

import numpy as np

from ..units import RPM

#: Inputs the model accepts: the crank turns forwards (the initialization builds a running
#: state in the running direction) and below 1500 rad/s (14 300 rpm; belt speeds beyond that
#: are outside any automotive drive); water-pump torque magnitudes up to 1 kN m.
CRANK_SPEED_RANGE = (0.0, 1500.0)  # [rad/s]
WATER_PUMP_TORQUE_RANGE = (-1000.0, 1000.0)  # [N m]
#: the crank speed range in rpm, as the command line takes it
RPM_RANGE = (CRANK_SPEED_RANGE[0] / RPM, CRANK_SPEED_RANGE[1] / RPM)


def check_inputs(crank_speed, water_pump_torque) -> None:
    """Refuse inputs the model is not made for, naming the input, the value and the range."""
    for name, value, (low, high), unit in (("crank_speed", crank_speed, CRANK_SPEED_RANGE, "rad/s"),
                                           ("water_pump_torque", water_pump_torque, WATER_PUMP_TORQUE_RANGE, "N.m")):
        if not isinstance(value, (int, float, np.floating)) or isinstance(value, bool) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number in [{low:g}, {high:g}] {unit}, got {value!r}")
        if not low <= value <= high:
            raise ValueError(f"{name} = {value:.6g} {unit} is outside the allowed range [{low:g}, {high:g}] {unit}")
