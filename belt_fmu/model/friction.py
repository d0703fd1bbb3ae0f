"""Friction laws between a belt node and a pulley.

Every law gives the friction force ``F`` on the node along the pulley's CCW tangent from
the slip velocity ``s`` (node tangential velocity minus pulley surface velocity) and the
normal force ``N``. The integrator asks for it through :func:`implicit_friction`, which
solves the implicit Euler equation of the contact, so a steep regularization near
``s = 0`` does not limit the time step.

Laws (``law`` codes in :mod:`belt_fmu.model.state`):

* creep-rate polynomial, seed 000 section 4.2.1.2, eqs. 4.3-4.5: creep rate
  ``sr = |s| / max(|v_belt|, v_ref)`` (eq. 4.3), ``mu(sr)`` piecewise cubic through
  (0, 0), the peak (s1, mu) and saturation (s2, ratio * mu), constant beyond s2 (eq. 4.4),
  ``F = -mu(sr) N sign(s)`` (eq. 4.5). The thesis names the cubic pieces but not their
  coefficients; here the first rises with slope 1.5 mu/s1 at zero and reaches the peak
  with zero slope, the second is a smooth step with zero end slopes.
* tanh, seed 001 (Simscape Belt Pulley): ``F = -mu N tanh(4 s / v_thr)``.
* bristle, elastic/perfectly-plastic (Kim, Leamy & Ferri 2011, cited in seeds 002, 004): a
  tangential spring of stiffness ``k`` whose deflection ``z`` follows the slip while
  ``k |z| < mu N`` and slides at that limit otherwise: ``F = -k z - c_z dz/dt``.
  The deflection is the per-contact friction state.
"""
import numpy as np
from numba import njit

from .state import LAW_BRISTLE, LAW_TANH


@njit(cache=True)
def creep_polynomial(sr, mu, s1, s2, ratio):
    """Friction coefficient and its derivative d mu/d sr at creep rate ``sr >= 0``."""
    if sr < s1:
        x = sr / s1
        return mu * x * (1.5 - 0.5 * x * x), mu * 1.5 * (1.0 - x * x) / s1
    if sr < s2:
        x = (sr - s1) / (s2 - s1)
        mu2 = ratio * mu
        return mu + (mu2 - mu) * x * x * (3.0 - 2.0 * x), (mu2 - mu) * 6.0 * x * (1.0 - x) / (s2 - s1)
    return ratio * mu, 0.0


@njit(cache=True)
def friction_coefficient(law, mu, slip_speed, belt_speed):
    """Coefficient of a velocity-dependent law at ``slip_speed >= 0``, and its derivative.

    ``law`` is a FRICTION_LAW record; ``belt_speed`` the reference of the creep rate (eq. 4.3).
    """
    if law.law == LAW_TANH:
        vt = law.velocity_threshold / 4.0
        th = np.tanh(slip_speed / vt)
        return mu * th, mu * (1.0 - th * th) / vt
    vref = max(abs(belt_speed), law.reference_speed)
    coef, slope = creep_polynomial(slip_speed / vref, mu, law.slip_peak, law.slip_saturation,
                                   law.saturation_ratio)
    return coef, slope / vref


@njit(cache=True)
def implicit_friction(law, mu, normal, free_slip, belt_speed, bristle, mass, dt, guess):
    """Friction force of one contact over a step, from the implicit Euler equation

        mass (s - s_free) = dt F(s)

    ``free_slip`` [m/s] is the slip the contact would have at the end of the step without
    friction, ``mass`` [kg] the effective mass of the node against the pulley, ``guess`` the
    contact's slip of the previous step (a warm start), ``law`` a FRICTION_LAW record. Returns (F [N] on the node along the
    CCW tangent, end-of-step slip [m/s], new bristle state [m]).

    Velocity laws: F = -sign(s) mu(|s|) N; the root lies between 0 and ``free_slip`` (the
    friction cannot reverse the slip), found by Newton's method kept inside that bracket,
    so a steep regularization sticks instead of chattering. Bristle law: the elastic
    predictor is solved exactly, then capped at mu N (return mapping).
    """
    if law.law == LAW_BRISTLE:
        k = law.bristle_stiffness
        c = law.bristle_damping
        slip = (mass * free_slip - dt * k * bristle) / (mass + dt * (dt * k + c))
        force = -k * (bristle + dt * slip) - c * slip
        limit = mu * normal
        if abs(force) <= limit:
            return force, slip, bristle + dt * slip
        force = limit if force > 0.0 else -limit
        return force, free_slip + dt * force / mass, -force / k
    sign = 1.0 if free_slip >= 0.0 else -1.0
    target = sign * free_slip
    if target == 0.0:
        return 0.0, 0.0, 0.0
    scale = dt * normal
    # bracket [lo, hi] with residual(lo) <= 0 <= residual(hi); residual and slope kept at lo
    lo = 0.0
    lo_res = -mass * target
    lo_slope = mass + scale * friction_coefficient(law, mu, 0.0, belt_speed)[1]
    hi = target
    x = sign * guess
    if not (0.0 < x < target):
        x = lo - lo_res / lo_slope  # sticking solution of the law linearized at zero slip
    for _ in range(40):
        coef, slope = friction_coefficient(law, mu, x, belt_speed)
        residual = mass * (x - target) + scale * coef
        dres = mass + scale * slope
        if residual > 0.0:
            hi = x
        else:
            lo, lo_res, lo_slope = x, residual, dres
        new = x - residual / dres
        if new <= lo:
            # overshoot from the sliding side: step from the sticking side instead, which
            # for a concave law (tanh) approaches the root monotonically from below
            new = lo - lo_res / lo_slope
        if not (lo <= new <= hi):
            new = 0.5 * (lo + hi)
        converged = abs(new - x) <= 1e-13 + 1e-9 * target
        x = new
        if converged:
            break
    # the force that exactly matches the momentum change of the converged slip
    return -sign * mass * (target - x) / dt, sign * x, 0.0
