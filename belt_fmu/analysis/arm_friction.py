"""The tensioner arm's Coulomb friction in a harmonic response: its describing function.

A Coulomb torque of level T_c opposing a harmonic motion ``psi = A cos(w t + phi)`` is a
square wave in phase with the rate; its first harmonic, the only part a harmonic balance
keeps, is that of a viscous damper of rate

    c_eq = 4 T_c / (pi w A)

(Den Hartog, "Forced vibrations with combined Coulomb and viscous friction", Trans. ASME
53, 1931; Gelb and Vander Velde, "Multiple-input describing functions and nonlinear system
design", McGraw-Hill 1968, ch. 2). The arm's two levels (moving away from the belt, toward
it) make a square wave of mean amplitude ``T_c = (T_away + T_toward) / 2`` about an offset
of half their difference, which shifts the arm's mean position, not its damping.

The damping depends on the amplitude it produces. With the arm's receptance ``u`` (its
response to a unit harmonic torque on it) and the arm's response ``x0`` to the excitation,
both of the drive without the friction, the arm's amplitude with it is

    A = |x0| / |1 + i w c u|,

and with ``c = c_eq(A)`` this is ``|A + i k u| = |x0|``, ``k = 4 T_c / pi``, a quadratic in A
with the one positive root

    A = k Im(u) + sqrt(|x0|^2 - k^2 Re(u)^2)

(Den Hartog's closed form for a single degree of freedom, here with the whole drive in u and
x0). It exists where ``|x0| > k |u|``: the excitation moves the arm further than its
friction can hold it back. Otherwise, or where ``c_eq`` would exceed the friction law's
slope at rest (the regularized law the time-domain model integrates), the arm sticks: its
damping is that slope. Stuck and sliding are the two limits of the one law: small
excitation sticks, large slides with ``c_eq -> 0``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ArmFriction:
    """The arm friction's equivalent damping at one excitation (module docstring)."""

    damping: float  # [N m s/rad] the equivalent viscous damping
    amplitude: float  # [rad] the arm amplitude it produces
    stuck: bool  # the arm sticks (damping = the law's slope at rest)


def first_harmonic(level: float) -> float:
    """k = 4 T_c / pi [N m]: amplitude of the first harmonic of a Coulomb torque of ``level``."""
    return 4.0 * level / math.pi


def equivalent_damping(free: complex, receptance: complex, omega: float, level: float,
                       stuck_damping: float) -> ArmFriction:
    """The arm friction at frequency ``omega`` [rad/s] (module docstring): ``free`` the arm's
    response [rad] to the excitation without its friction, ``receptance`` [rad/(N m)] its
    response to a unit torque on it, ``level`` the mean Coulomb torque [N m],
    ``stuck_damping`` the friction law's slope at rest [N m s/rad]."""
    k = first_harmonic(level)
    stuck = ArmFriction(stuck_damping, abs(free) / abs(1.0 + 1j * omega * stuck_damping * receptance), True)
    if k == 0.0:
        return ArmFriction(0.0, abs(free), False)
    if omega <= 0.0:
        return stuck
    root = abs(free) ** 2 - (k * receptance.real) ** 2
    if root <= 0.0:
        return stuck
    amplitude = k * receptance.imag + math.sqrt(root)
    if amplitude <= 0.0 or k / (omega * amplitude) >= stuck_damping:
        return stuck
    return ArmFriction(k / (omega * amplitude), amplitude, False)
