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

Between the two the arm sticks for part of each period, where the describing function is
far off (it may stick the arm for good); :func:`stick_slip` balances the arm's motion over
one period at several harmonics with the friction law the time domain integrates, and is
what the harmonic response uses.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dgesv


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


#: odd harmonics 1, 3, ..., 2 HARMONICS - 1 of the excitation frequency :func:`stick_slip`
#: keeps: on the built-in drive under +-4 rpm at 1700 rpm its arm amplitude changes by at most
#: 2.2 % from 5 to 9 harmonics (one degree of freedom deep in stick-slip needs more: test_response.py)
HARMONICS = 5
#: time samples per harmonic kept, over one period (the friction law is evaluated there)
SAMPLES_PER_HARMONIC = 8
#: steps of the continuation from a smooth friction law to the arm's own (:func:`stick_slip`):
#: on the built-in drive and the single degree of freedom of test_response.py 8 and 24 give
#: the same amplitudes to 12 digits
CONTINUATION_STEPS = 8
#: residual [share of the friction level] to which the continuation's steps before the last
#: are solved (the last to 1e-10): the same amplitudes within 1e-12 on the built-in drive's
#: response, in a third fewer Newton iterations
TRACKING_TOLERANCE = 1e-2


@dataclass(frozen=True)
class StickSlip:
    """The arm's periodic motion under its Coulomb friction (:func:`stick_slip`)."""

    torque: complex  # [N m] first harmonic of the friction torque on the arm
    amplitude: float  # [rad] the arm's first-harmonic amplitude
    damping: float  # [N m s/rad] the viscous damper that dissipates as much per period
    stuck: bool  # the friction holds the arm through the whole period
    swing: float  # [rad] half the peak-to-peak of the arm's periodic motion (all harmonics kept)


def stick_slip(free: complex, receptances, omega: float, level: float, stuck_damping: float) -> StickSlip:
    """The arm's periodic motion with its friction torque, sticking for part of each period
    where it does: a harmonic balance of the arm alone (Den Hartog 1931 solved one degree of
    freedom exactly; the alternating frequency-time balance, Cameron and Griffin, "An
    alternating frequency/time domain method for calculating the steady-state response of
    nonlinear dynamic systems", J. Appl. Mech. 56, 1989). ``free`` [rad] is the arm's
    response to the excitation without its friction, ``receptances`` [rad/(N m)] its
    response to a unit torque on it at the odd harmonics 1, 3, 5, ... of ``omega``. The arm's
    rate is ``v = v0 + Y lambda`` over one period (Y the admittances ``i h w u_h``), the
    friction ``lambda = -level tanh(v / delta)``: the time-domain model's regularized law at
    its ``delta = level / stuck_damping``, reached by continuation from a smooth law and
    solved by Newton's method at each step. The continuous-sliding describing function
    (:func:`equivalent_damping`) is its one-harmonic limit; where the arm slides through the
    whole period the two agree (within 0.5 % on the built-in drive under +-40 rpm)."""
    u = np.asarray(receptances, dtype=complex)
    harmonics = np.arange(1, 2 * len(u), 2)
    n = SAMPLES_PER_HARMONIC * len(u)
    phase = np.exp(1j * np.outer(harmonics, 2.0 * np.pi * np.arange(n) / n))
    # rate at the samples per torque at the samples: v_i = Re sum_h Y_h L_h e^{i h t_i},
    # L_h = (2/n) sum_j lambda_j e^{-i h t_j} the torque's harmonics
    admittance = np.real(phase.T @ ((1j * harmonics * omega * u)[:, None] * phase.conj())) * 2.0 / n
    free_rate = np.real(1j * omega * free * phase[0])
    scale = np.max(np.abs(free_rate))
    if level == 0.0 or scale == 0.0:
        return StickSlip(0j, abs(free), 0.0, False, abs(free))
    final = level / stuck_damping
    diagonal = np.arange(n)
    for steps in (CONTINUATION_STEPS, 8 * CONTINUATION_STEPS):  # finer steps if Newton's method stalls
        torque = np.zeros(n)
        for delta in np.geomspace(max(scale, final), final, steps):
            # the steps before the last only lead the way to it: a loose residual will do
            tolerance = (1e-10 if delta == final else TRACKING_TOLERANCE) * level

            def residual(torque):
                """(tanh of the rate over delta, the balance's residual) at ``torque``."""
                x = np.tanh((free_rate + admittance @ torque) / delta)
                return x, torque + level * x

            x, error = residual(torque)
            size = np.max(np.abs(error))
            converged = False
            for _ in range(100):
                if size < tolerance:
                    converged = True
                    break
                jacobian = (level * (1.0 - x * x) / delta)[:, None] * admittance
                jacobian[diagonal, diagonal] += 1.0
                _, _, step, _ = dgesv(jacobian, -error)
                length = 1.0
                while True:  # backtracking: the residual must fall
                    trial = torque + length * step
                    x, error = residual(trial)
                    if np.max(np.abs(error)) < size or length <= 1e-6:
                        break
                    length *= 0.5
                torque, size = trial, np.max(np.abs(error))
        if converged:
            break
    else:
        raise ArithmeticError(f"the arm's stick-slip balance did not converge at {omega:g} rad/s")
    harmonic = 2.0 / n * (phase.conj() @ torque)  # the torque's harmonics L_h
    first = harmonic[0]
    arm = free + u[0] * first
    rate = 1j * omega * arm
    damping = -(first * rate.conjugate()).real / abs(rate) ** 2 if abs(rate) > 0.0 else stuck_damping
    motion = np.real((u * harmonic + np.where(harmonics == 1, free, 0.0)) @ phase)  # the arm angle at the samples
    return StickSlip(complex(first), abs(arm), float(damping), bool(np.max(np.abs(torque)) < 0.999 * level),
                     0.5 * float(np.ptp(motion)))
