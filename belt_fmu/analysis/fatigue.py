"""Belt fatigue life from the peak force per pulley passage, summed over a duty cycle.

The model of Oliver, Johnson and Breig ("V-belt life prediction and power rating", ASME J.
Engineering for Industry 98(1), 1976), as given in Budynas and Nisbett, *Shigley's
Mechanical Engineering Design*, 9th ed., McGraw-Hill, 2011, section 17-3, eqs. 17-26 to
17-28: each time the belt runs round a pulley of pitch diameter d it carries the peak force
``T = F + K_b / d`` (its span tension, centrifugal part included, plus the bending
equivalent), and the number of belt passes to failure under peaks T_j per pass is

    N_P = [ sum_j (T_j / K)^b ]^-1,

K and b fitted to fatigue tests (Shigley Table 17-17). The life in hours is
``N_P L / (3600 v)`` (L the belt length, v its speed). Over a duty cycle the damage adds
linearly (Palmgren-Miner rule, M. A. Miner, "Cumulative damage in fatigue", J. Appl. Mech.
12, 1945): the damage per hour is ``sum_k s_k (3600 v_k / L) sum_j (T_kj / K)^b`` over the
duty points k with time shares s_k, and the life its inverse.

Here T_j is the larger of the two span tensions at pulley j (the tension with which the belt
leaves or enters the wrap, whichever is higher) plus the amplitude of that span's dynamic
tension, so that the peak is the passage's peak.

**Constants**: the published sets are for classical and narrow V-belt sections; none for
ribbed (poly-V) belts was found in the open literature. The defaults are Shigley's for the
classical A section (Table 17-16: ``K_b = 220 lbf in``; Table 17-17: ``K = 674 lbf``,
``b = 11.089`` for 10^8 to 10^9 force peaks), converted to SI. **They are not this belt's
data**: the life is a comparison between duty cycles and layouts, not a prediction for a
6PK belt; a belt supplier's K, b and K_b replace them through ``[design_limits]``
(``fatigue_K_N``, ``fatigue_b``, ``fatigue_Kb_Nm``). The fit holds for 10^8 to 10^9 peaks
(Shigley: beyond 10^9 report "more than"): a life outside that range is flagged as
extrapolated.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LBF = 4.4482216152605  # [N]
INCH = 0.0254  # [m]
#: Shigley Tables 17-16 and 17-17, classical A section (module docstring), in SI
K_B = 220.0 * LBF * INCH  # [N m]
K = 674.0 * LBF  # [N]
EXPONENT = 11.089
#: [force peaks] the range the constants were fitted over
VALID_PEAKS = (1.0e8, 1.0e9)


@dataclass(frozen=True)
class FatigueConstants:
    k: float = K  # [N]
    exponent: float = EXPONENT
    k_b: float = K_B  # [N m]
    source: str = "Shigley (Budynas and Nisbett 2011) Tables 17-16/17-17, classical A section"


def peak_forces(span_tension, amplitude, pitch_diameters, constants: FatigueConstants) -> np.ndarray:
    """(p,) [N] peak force of each pulley passage: the larger of its two spans' tensions plus
    that span's dynamic amplitude, plus ``K_b / d`` (span i from pulley i to i + 1)."""
    t = np.asarray(span_tension, dtype=float) + np.asarray(amplitude, dtype=float)
    larger = np.maximum(np.roll(t, 1), t)
    return larger + constants.k_b / np.asarray(pitch_diameters, dtype=float)


def damage_per_pass(peaks, constants: FatigueConstants) -> float:
    """``sum_j (T_j / K)^b``: the share of the belt's life one pass uses."""
    return float(np.sum((np.asarray(peaks, dtype=float) / constants.k) ** constants.exponent))


def passes_to_failure(peaks, constants: FatigueConstants) -> float:
    return 1.0 / damage_per_pass(peaks, constants)


def life_hours(points, belt_length: float, constants: FatigueConstants) -> tuple[float, float]:
    """(life [h], belt passes [-]) over a duty cycle: ``points`` are (time share, belt speed
    [m/s], peaks (p,) [N]) (module docstring, Miner's rule)."""
    per_hour = 0.0
    passes_per_hour = 0.0
    for share, speed, peaks in points:
        rate = share * 3600.0 * speed / belt_length  # passes per hour of the cycle
        per_hour += rate * damage_per_pass(peaks, constants)
        passes_per_hour += rate
    if per_hour <= 0.0:
        return math.inf, math.inf
    hours = 1.0 / per_hour
    return hours, hours * passes_per_hour
