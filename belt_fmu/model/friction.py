"""Friction laws between a belt node and a pulley.

Every law gives the friction force ``F`` on the node along the pulley's CCW tangent from
the slip velocity ``s`` (node tangential velocity minus pulley surface velocity) and the
normal force ``N``. The integrator asks for it through :func:`implicit_friction`, which
solves the implicit Euler equation of the contact, so a steep regularization near
``s = 0`` does not limit the time step.

Laws (:data:`LAW_CODES`: the code a FRICTION_LAW record carries for each name a layout may
give, :data:`belt_fmu.layout.FRICTION_LAWS`):

* creep-rate polynomial, [Scania thesis] section 4.2.1.2, eqs. 4.3-4.5: creep rate
  ``sr = |s| / max(|v_belt|, v_ref)`` (eq. 4.3), ``mu(sr)`` piecewise cubic through
  (0, 0), the peak (s1, mu) and saturation (s2, ratio * mu), constant beyond s2 (eq. 4.4),
  ``F = -mu(sr) N sign(s)`` (eq. 4.5). The thesis names the cubic pieces but not their
  coefficients; here the first rises with slope 1.5 mu/s1 at zero and reaches the peak
  with zero slope, the second is a smooth step with zero end slopes.
* tanh, [Simscape Belt Pulley] (Simscape Belt Pulley): ``F = -mu N tanh(4 s / v_thr)``.
* bristle, elastic/perfectly-plastic (Kim, Leamy & Ferri 2011, cited by [Kubas 2017] and [Kubas and Harlecki 2021]): a
  tangential spring of stiffness ``k`` whose deflection ``z`` follows the slip while
  ``k |z| < mu N`` and slides at that limit otherwise: ``F = -k z - c_z dz/dt``.
  The deflection is the per-contact friction state.

Dynamic laws with internal friction states, one set per belt node and pulley it touches,
zeroed when the node leaves the pulley ([Kubas 2017] and [Kubas and Harlecki 2021] reset them likewise). Each is
written for the friction coefficient ``m`` of the contact, ``F = -N m``, and integrated
exactly over a step with the slip ``s`` held at its end-of-step value (their state
equations are linear in the state for fixed ``s``), so stiff internal dynamics do not limit
the step either:

* Dahl (Dahl 1968; [Kubas 2017] eq. 2.9): ``dm/dx = sigma (1 - m/mu_k sgn(v))``, x the slip
  displacement. For constant slip direction its solution is eq. 2.9,
  ``m = sgn(v) mu_k + (m0 - sgn(v) mu_k) exp(-sigma |x - x0| / mu_k)``, restarting from
  the reversal point (x0, m0): the state is m.
* LuGre (Canudas de Wit et al. 1995, cited in [Kubas 2017]): ``dz/dt = v - sigma0 |v| z / g(v)``,
  ``m = sigma0 z + sigma1 dz/dt + sigma2 v``, with the Stribeck curve
  ``g(v) = mu_c + (mu_s - mu_c) exp(-(v/v_s)^2)``: the state is z [m].
* Generalized Maxwell-slip ([Kubas and Harlecki 2021] eqs. 1-13): n elements of weight nu_k; a sticking
  element's coefficient follows the slip, ``dm_k/dt = sigma_k v`` (eqs. 6, 9), until it
  reaches the Stribeck value s(v) of eq. 11 and slips,
  ``dm_k/dt = sgn(v) nu_k c (1 - m_k/s(v))`` (eq. 10), until the slip reverses;
  ``m = sum nu_k m_k`` (eq. 13): the states are m_k and each element's slip direction.
"""
import numpy as np
from numba import njit

from ..layout import FRICTION_LAWS, GMS_MAX_ELEMENTS

#: the code of each friction law in a FRICTION_LAW record, by its name in a layout
LAW_CODES = {name: code for code, name in enumerate(FRICTION_LAWS)}
LAW_CREEP_POLYNOMIAL = LAW_CODES["creep_polynomial"]
LAW_TANH = LAW_CODES["tanh"]
LAW_BRISTLE = LAW_CODES["bristle"]
LAW_DAHL = LAW_CODES["dahl"]
LAW_LUGRE = LAW_CODES["lugre"]
LAW_GMS = LAW_CODES["gms"]

#: Parameters of a friction law. The coefficient itself is not here: it differs per pulley
#: (``PULLEY.effective_mu``) and is passed with each contact. Velocities in m/s for belt
#: contacts, rad/s for the tensioner arm and the pulley loads.
FRICTION_LAW = np.dtype(
    [
        ("law", "i8"),  # one of LAW_CODES
        ("slip_peak", "f8"),  # creep rate of the peak coefficient s1 [-]
        ("slip_saturation", "f8"),  # s2 [-]
        ("saturation_ratio", "f8"),  # mu(s2) / mu(s1) [-]
        ("reference_speed", "f8"),  # floor of the creep-rate reference speed [m/s]
        ("velocity_threshold", "f8"),  # tanh(4 v / v_thr) [m/s or rad/s]
        ("bristle_stiffness", "f8"),  # per node [N/m]
        ("bristle_damping", "f8"),  # per node [N s/m]
        ("dahl_stiffness", "f8"),  # Dahl sigma [1/m]
        ("static_ratio", "f8"),  # LuGre, GMS: mu_s / mu_c [-]
        ("stribeck_velocity", "f8"),  # LuGre, GMS [m/s]
        ("lugre_stiffness", "f8"),  # sigma0 [1/m]
        ("lugre_damping", "f8"),  # sigma1 [s/m]
        ("lugre_viscous", "f8"),  # sigma2 [s/m]
        ("gms_count", "i8"),  # Maxwell-slip elements per contact
        ("gms_weight", "f8", (GMS_MAX_ELEMENTS,)),  # nu_k [-]
        ("gms_stiffness", "f8", (GMS_MAX_ELEMENTS,)),  # sigma_mu_k [1/m]
        ("gms_attraction", "f8"),  # c [1/s]
    ]
)


#: tanh(x) rounds to 1 in double precision for x above 19.06 (1 - tanh x = 2 exp(-2x) < 2^-53)
TANH_SATURATION = 19.1
# tanh(x) for |x| <= 0.625 as x + x z P(z)/Q(z), z = x^2, with S. L. Moshier's coefficients
# (Cephes Math Library, tanh.c; [Moshier 1989] ch. 6), Q's leading 1 implied: relative error
# below 3e-16
TANH_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
TANH_Q = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)

# The small kernels both models call (here, in drive.py and tensioner.py) are inlined by
# numba (inline="always"), not only by LLVM: a caller compiled while its callee is loaded
# from numba's cache came out different, in rounding (the discretized model's start moved by
# 1e-10) and in speed, from one compiled together with it. The per-contact solves
# (implicit_friction, implicit_state_friction, state_law_coefficient) are not: numba retypes
# an inlined body at every call site, and theirs, at the sites of both models, made most of
# a cold start's compile time (docs/performance.md). Every process loads the same compiled
# entries from the one kernel folder (belt_fmu/kernel_cache.py), so the Python model, the FMU
# and native hosts still agree bit for bit.


@njit(cache=True, _nrt=False, inline="always")
def is_state_law(law) -> bool:
    """Whether the law code ``law`` has internal states integrated exactly over a step
    (Dahl, LuGre, GMS: :func:`implicit_state_friction`)."""
    return law == LAW_DAHL or law == LAW_LUGRE or law == LAW_GMS


@njit(cache=True, _nrt=False, inline="always")
def is_velocity_law(law) -> bool:
    """Whether the law code ``law`` is a velocity law (creep polynomial, tanh): no state, the
    coefficient a function of the slip (:func:`implicit_friction`)."""
    return law == LAW_CREEP_POLYNOMIAL or law == LAW_TANH


@njit(cache=True, _nrt=False)
def friction_state_count(law, gms_count):
    """Friction states per contact: bristle deflection (bristle), coefficient (Dahl), bristle
    state z (LuGre), and per Maxwell element its coefficient and slip direction (GMS)."""
    if law == LAW_GMS:
        return 2 * gms_count
    if law == LAW_BRISTLE or law == LAW_DAHL or law == LAW_LUGRE:
        return 1
    return 0


@njit(cache=True, _nrt=False, inline="always")
def creep_polynomial(sr, mu, s1, s2, ratio):
    """Friction coefficient and its derivative d mu/d sr at creep rate ``sr >= 0``."""
    # the reciprocals of the constants leave one multiplication, not a division, on the path
    # from sr to the coefficient (the Newton iteration of implicit_friction waits for it)
    if sr < s1:
        return creep_rise(sr, mu, s1)
    if sr < s2:
        return creep_fall(sr, mu, s1, s2, ratio)
    return ratio * mu, 0.0


@njit(cache=True, _nrt=False, inline="always")
def creep_rise(sr, mu, s1):
    """:func:`creep_polynomial`'s first cubic, from (0, 0) to the peak (s1, mu): coefficient
    and slope at creep rate ``sr``."""
    inverse = 1.0 / s1
    x = sr * inverse
    return mu * x * (1.5 - 0.5 * x * x), mu * 1.5 * (1.0 - x * x) * inverse


@njit(cache=True, _nrt=False, inline="always")
def creep_fall(sr, mu, s1, s2, ratio):
    """:func:`creep_polynomial`'s second cubic, from the peak to saturation (s2, ratio mu):
    coefficient and slope at creep rate ``sr``."""
    inverse = 1.0 / (s2 - s1)
    x = (sr - s1) * inverse
    mu2 = ratio * mu
    return mu + (mu2 - mu) * x * x * (3.0 - 2.0 * x), (mu2 - mu) * 6.0 * x * (1.0 - x) * inverse


@njit(cache=True, _nrt=False, inline="always")
def tanh(x):
    """tanh(x) as [Moshier 1989] computes it: the rational approximation (:data:`TANH_P`) up to
    |x| = 0.625, ``1 - 2 / (exp(2 |x|) + 1)`` beyond (no cancellation there: tanh > 0.55).
    libm's tanh is a call whose latency (about 40 ns here) the Newton iteration of
    :func:`implicit_friction` waits for at every step; this one is inlined arithmetic and
    one exp (fmu_tests/test_friction_laws.py checks it against np.tanh)."""
    a = abs(x)
    if a > 0.625:
        t = 1.0 - 2.0 / (np.exp(2.0 * a) + 1.0)
        return t if x > 0.0 else -t
    return tanh_rational(x)


@njit(cache=True, _nrt=False, inline="always")
def tanh_rational(x):
    """:func:`tanh`'s rational form, ``x + x z P(z)/Q(z)`` (:data:`TANH_P`), tanh(x) for
    |x| <= 0.625 only."""
    z = x * x
    num = (TANH_P[0] * z + TANH_P[1]) * z + TANH_P[2]
    den = ((z + TANH_Q[0]) * z + TANH_Q[1]) * z + TANH_Q[2]
    return x + x * (z * num / den)


@njit(cache=True, _nrt=False, inline="always")
def slip_scale(law, belt_speed):
    """The inverse [s/m] of a velocity law's speed scale: ``4 / v_thr`` (tanh), ``1 / max(|v_belt|,
    v_ref)`` (the creep rate's reference, [Scania thesis] eq. 4.3)."""
    if law.law == LAW_TANH:
        return 4.0 / law.velocity_threshold
    return 1.0 / max(abs(belt_speed), law.reference_speed)


@njit(cache=True, _nrt=False, inline="always")
def scaled_coefficient(law, mu, slip_speed, scale):
    """:func:`friction_coefficient` with the law's :func:`slip_scale` ``scale`` computed once:
    the slip enters multiplied by it, so an iteration over the slip divides by nothing."""
    if law.law == LAW_TANH:
        th = tanh(slip_speed * scale)
        return mu * th, mu * (1.0 - th * th) * scale
    coef, slope = creep_polynomial(slip_speed * scale, mu, law.slip_peak, law.slip_saturation,
                                   law.saturation_ratio)
    return coef, slope * scale


@njit(cache=True, _nrt=False, inline="always")
def friction_coefficient(law, mu, slip_speed, belt_speed):
    """Coefficient of a velocity-dependent law at ``slip_speed >= 0``, and its derivative.

    ``law`` is a FRICTION_LAW record; ``belt_speed`` the reference of the creep rate (eq. 4.3).
    """
    return scaled_coefficient(law, mu, slip_speed, slip_scale(law, belt_speed))


@njit(cache=True, _nrt=False, inline="always")
def saturated_sliding(law, limit, free_slip, mass, dt):
    """End-of-step slip [m/s] of a contact that slides through the step on the tanh law, else
    0: the slip left after the full friction impulse ``dt limit`` (``limit`` = mu N), if the
    law is saturated there to the last bit (tanh = 1 in double precision beyond
    :data:`TANH_SATURATION`), solves the
    implicit Euler equation of :func:`implicit_friction` exactly, without its iteration."""
    if law.law != LAW_TANH:
        return 0.0
    target = abs(free_slip)
    sliding = target - dt * limit / mass
    if 4.0 * sliding > TANH_SATURATION * law.velocity_threshold:
        return sliding if free_slip > 0.0 else -sliding
    return 0.0


#: the friction solves (:func:`implicit_friction`, :func:`implicit_state_friction`) stop once
#: the force they apply, which matches the slip's change of momentum exactly, is within this
#: fraction of ``mu N`` of the law's force at the slip they end with: about what the slip
#: tolerance alone gave before (1e-9 of the slip), far below anything the outputs resolve
FORCE_TOLERANCE = 1e-9
#: the largest |tanh''(x)|, 4 / (3 sqrt 3) at tanh x = 1 / sqrt 3
TANH_CURVATURE = 4.0 / (3.0 * np.sqrt(3.0))


@njit(cache=True, _nrt=False, inline="always")
def curvature_bound(law):
    """The largest ``|d^2 mu/d x^2| / mu`` of a velocity law, x the slip times its
    :func:`slip_scale`: ``3 / s1^2`` and ``6 |ratio - 1| / (s2 - s1)^2`` on the creep
    polynomial's two cubics (:func:`creep_polynomial`), :data:`TANH_CURVATURE` for tanh."""
    if law.law == LAW_TANH:
        return TANH_CURVATURE
    s1 = law.slip_peak
    gap = law.slip_saturation - s1
    return max(3.0 / (s1 * s1), 6.0 * abs(law.saturation_ratio - 1.0) / (gap * gap))


@njit(cache=True, _nrt=False, inline="always")
def newton_converged(step, previous_step, tolerance):
    """Whether a Newton iteration for the slip has converged after a step of size ``step``
    whose predecessor was ``previous_step`` (0 if that was no Newton step): the step is
    within ``tolerance``, or so is the error it leaves as the observed contraction
    ``theta = step / previous_step < 1`` bounds it, ``theta / (1 - theta) step``: the stopping
    test of the simplified Newton iteration, [Hairer and Wanner 1996] IV.8. Newton's method
    converges quadratically, so theta overstates the next contraction and the bound is
    conservative; it spares the evaluation that would only confirm a step of about 1e-12 m/s
    (a third of the evaluations on the built-in drive). Written without the division:
    ``step^2 <= (previous - step) tol``."""
    return step <= tolerance or step * step <= (previous_step - step) * tolerance


@njit(cache=True, _nrt=False)
def implicit_friction(law, mu, normal, free_slip, belt_speed, state, work, mass, dt, guess):
    """Friction force of one contact over a step, from the implicit Euler equation

        mass (s - s_free) = dt F(s)

    ``free_slip`` [m/s] is the slip the contact would have at the end of the step without
    friction, ``mass`` [kg] the effective mass of the node against the pulley, ``guess`` the
    contact's slip of the previous step (a warm start), ``law`` a FRICTION_LAW record,
    ``state`` the contact's friction states (updated in place), ``work`` scratch of the same
    size. Returns (F [N] on the node along the CCW tangent, end-of-step slip [m/s]).

    Velocity laws: F = -sign(s) mu(|s|) N; the root lies between 0 and ``free_slip`` (the
    friction cannot reverse the slip), found by Newton's method kept inside that bracket,
    so a steep regularization sticks instead of chattering. It stops after a Newton step
    short enough that the residual at its end, ``r''(xi) step^2 / 2`` (Taylor), is within
    ``dt FORCE_TOLERANCE mu N`` by the law's :func:`curvature_bound`, without evaluating the
    law there (or when the step is within 1e-9 of the slip by the observed contraction,
    :func:`newton_converged`). From the warm start that is the second step for almost every
    contact, where a test on the slip alone took a third for one in eight.

    Bristle law: the elastic predictor is solved exactly, then capped at mu N (return
    mapping). State laws: :func:`implicit_state_friction`.
    """
    if law.law == LAW_BRISTLE:
        k = law.bristle_stiffness
        c = law.bristle_damping
        z = state[0]
        slip = (mass * free_slip - dt * k * z) / (mass + dt * (dt * k + c))
        force = -k * (z + dt * slip) - c * slip
        limit = mu * normal
        if abs(force) <= limit:
            state[0] = z + dt * slip
            return force, slip
        force = limit if force > 0.0 else -limit
        state[0] = -force / k
        return force, free_slip + dt * force / mass
    if is_state_law(law.law):
        return implicit_state_friction(law, mu, normal, free_slip, state, work, mass, dt, guess)
    sign = 1.0 if free_slip >= 0.0 else -1.0
    target = sign * free_slip
    if target == 0.0:
        return 0.0, 0.0
    scale = dt * normal
    sliding = saturated_sliding(law, mu * normal, free_slip, mass, dt)
    if sliding != 0.0:
        return -mass * (free_slip - sliding) / dt, sliding
    # bracket [lo, hi] with residual(lo) <= 0 <= residual(hi); residual and slope kept at lo
    lo = 0.0
    lo_res = -mass * target
    speed_scale = slip_scale(law, belt_speed)
    lo_slope = mass + scale * scaled_coefficient(law, mu, 0.0, speed_scale)[1]
    hi = target
    x = sign * guess
    if not (0.0 < x < target):
        x = lo - lo_res / lo_slope  # sticking solution of the law linearized at zero slip
    tolerance = 1e-13 + 1e-9 * target
    # a Newton step leaves the residual r''(xi) step^2 / 2 <= dt N mu c (speed_scale step)^2 / 2 at
    # its end, c the curvature bound: within dt FORCE_TOLERANCE mu N for steps up to this
    accepted_step2 = 2.0 * FORCE_TOLERANCE / (curvature_bound(law) * speed_scale * speed_scale)  # [(m/s)^2]
    previous_step = 0.0
    for _ in range(40):
        coef, slope = scaled_coefficient(law, mu, x, speed_scale)
        residual = mass * (x - target) + scale * coef
        dres = mass + scale * slope
        if residual > 0.0:
            hi = x
        else:
            lo, lo_res, lo_slope = x, residual, dres
        new = x - residual / dres
        newton = True
        if new <= lo:
            # overshoot from the sliding side: step from the sticking side instead, which
            # for a concave law (tanh) approaches the root monotonically from below
            new = lo - lo_res / lo_slope
            newton = False
        if not (lo <= new <= hi):
            new = 0.5 * (lo + hi)
            newton = False
        step = abs(new - x)
        x = new
        if (newton and step * step <= accepted_step2) or newton_converged(step, previous_step, tolerance):
            break
        previous_step = step if newton else 0.0
    # the force that exactly matches the momentum change of the converged slip
    return -sign * mass * (target - x) / dt, sign * x


@njit(cache=True, _nrt=False, inline="always")
def stribeck_with_slope(law, mu, slip):
    """Stribeck curve, [Kubas and Harlecki 2021] eq. 11: ``g = mu_c + (mu_s - mu_c) exp(-(v/v_s)^2)``
    (>= 0), and its derivative dg/dv (one exponential for both)."""
    inverse = 1.0 / law.stribeck_velocity
    r = slip * inverse
    excess = (law.static_ratio - 1.0) * mu * np.exp(-r * r)
    return mu + excess, -2.0 * r * inverse * excess


@njit(cache=True, _nrt=False)
def stribeck(law, mu, slip):
    """The Stribeck curve :func:`stribeck_with_slope` alone."""
    return stribeck_with_slope(law, mu, slip)[0]


@njit(cache=True, _nrt=False)
def state_law_coefficient(law, mu, slip, dt, state, new_state):
    """Friction coefficient ``m`` (F = -N m) of a state law at the end of a step of length
    ``dt`` whose slip is ``slip`` throughout, its derivative dm/d(slip), and the states then
    (into ``new_state``). Each update is the exact solution of the law's state equation for
    constant slip; at zero slip the derivative is the mean of its one-sided values."""
    sign = 1.0 if slip > 0.0 else (-1.0 if slip < 0.0 else 0.0)
    if law.law == LAW_DAHL:
        m0 = state[0]
        rate = law.dahl_stiffness * dt / mu
        if sign == 0.0:
            new_state[0] = m0
            return m0, rate * mu
        decay = np.exp(-rate * abs(slip))
        m = sign * mu + (m0 - sign * mu) * decay
        new_state[0] = m
        return m, rate * (mu - sign * m0) * decay
    # reciprocals of the constants, and of g once: an iteration over the slip then waits for
    # one division per evaluation, not four
    if law.law == LAW_LUGRE:
        z0 = state[0]
        s0 = law.lugre_stiffness
        damping_rate = law.lugre_damping * (1.0 / dt)
        if sign == 0.0:
            new_state[0] = z0
            return s0 * z0, (s0 + damping_rate) * dt
        g, dg = stribeck_with_slope(law, mu, slip)
        inv_g = 1.0 / g
        inv_s0 = 1.0 / s0
        steady = sign * g * inv_s0
        lam = s0 * abs(slip) * dt * inv_g
        decay = np.exp(-lam)
        z = steady + (z0 - steady) * decay
        dz = (sign * dg * inv_s0 * (1.0 - decay)
              - (z0 - steady) * decay * s0 * dt * (sign * g - abs(slip) * dg) * inv_g * inv_g)
        new_state[0] = z
        m = s0 * z + damping_rate * (z - z0) + law.lugre_viscous * slip
        return m, (s0 + damping_rate) * dz + law.lugre_viscous
    # LAW_GMS
    g, dg = stribeck_with_slope(law, mu, slip)
    inv_g = 1.0 / g
    limit = sign * g  # s(v), eq. 11
    limit_slope = sign * dg
    total = 0.0
    slope = 0.0
    for k in range(law.gms_count):
        m = state[2 * k]
        mode = state[2 * k + 1]  # 0: sticks, +-1: slips in that direction
        dm = law.gms_stiffness[k] * dt
        if sign != 0.0:
            if mode == 0.0 or mode != sign:  # sticking, or the slip reversed: eq. 9
                m = m + law.gms_stiffness[k] * slip * dt
                mode = 0.0
                if abs(m) > g:
                    m = limit
                    mode = sign
                    dm = limit_slope
            else:  # slipping on: eq. 10 with v held
                beta = law.gms_weight[k] * law.gms_attraction * dt
                decay = np.exp(-beta * inv_g)
                dm = limit_slope * (1.0 - decay) + (m - limit) * decay * beta * sign * limit_slope * inv_g * inv_g
                m = limit + (m - limit) * decay
        new_state[2 * k] = m
        new_state[2 * k + 1] = mode
        total += law.gms_weight[k] * m
        slope += law.gms_weight[k] * dm
    return total, slope


@njit(cache=True, _nrt=False, inline="always")
def state_slope(law, slope, dt):
    """d(state)/d(slip) of Dahl's or LuGre's state at the end of a step of ``dt`` [s] at a
    slip of one direction where the coefficient's slope d m/d(slip) is ``slope``
    (:func:`state_law_coefficient`): Dahl's state is m itself; LuGre's
    ``m = sigma0 z + sigma1 (z - z0) / dt + sigma2 v``, so
    ``dz/dv = (dm/dv - sigma2) / (sigma0 + sigma1 / dt)``."""
    if law.law == LAW_DAHL:
        return slope
    return (slope - law.lugre_viscous) / (law.lugre_stiffness + law.lugre_damping / dt)


@njit(cache=True, _nrt=False)
def implicit_state_friction(law, mu, normal, free_slip, state, work, mass, dt, guess):
    """:func:`implicit_friction` for the state laws: solve
    ``h(s) = mass (s - s_free) + dt N m(s) = 0`` with m from :func:`state_law_coefficient`
    by Newton's method from the warm start, keeping a bracket of the points evaluated (and
    bisecting in it, or stepping out of it, when Newton would leave it); then keep the
    states of the converged slip.

    It stops where the residual is within ``dt FORCE_TOLERANCE mu N`` (the states of that
    slip are at hand then), or where the Newton step is within 1e-10 of the slip. The
    residual test ends most contacts at their third evaluation, not a fourth that only
    stored the states of a slip the third's step had confirmed.

    Dahl and LuGre also stop at the end of a Newton step, unevaluated, where the residual
    left there is within that tolerance by the convergence observed: Newton's error squares
    from step to step, ``e2 = K e1^2`` with ``K ~ step2 / step1^2``, so the step from x,
    whose residual is ``h(x) = h' step2``, leaves ``h' K step2^2 = |h(x)| (step2 / step1)^2``
    (the reasoning of [Hairer and Wanner 1996] IV.8). The states there are taken to first
    order from those at x (:func:`state_slope`): their error ``m'' step2^2 / 2`` in the
    coefficient is the residual's own ``dt N m'' step2^2 / 2``, so within the tolerance with
    it (fmu_tests/test_friction_laws.py checks both). Only between slips of one direction,
    on either side of the last step as well, where the laws are smooth (a reversal is a kink
    in |v|). That spares the third evaluation, which only confirmed a slip the second's
    step had found and stored its states. GMS keeps evaluating: its elements switch between
    sticking and slipping within a step of the slip, and it ends at 2.0 evaluations anyway.

    Convergence is tested on the Newton step before the bracket is: a root found to the last
    bits gives a step that lands on x itself, the end of the bracket x has just become, and
    was taken for a step out of it, then bisected toward x one halving at a time (about 36
    evaluations, the bracket's width down to the 1e-13 m/s tolerance). On the built-in
    drive with GMS, whose sticking contacts are linear in the slip and so solved exactly by
    the first step, that was a third of the contacts: 6.1 -> 2.0 evaluations per contact.
    """
    scale = dt * normal
    width = scale * 2.0 * mu * law.static_ratio / mass + 1e-9
    lo = -np.inf
    hi = np.inf
    x = guess if abs(guess - free_slip) < width else free_slip
    previous_x = 0.0  # where the last step started
    previous_step = 0.0
    evaluated = False  # whether ``work`` holds the states at x
    accepted_residual = FORCE_TOLERANCE * mu * scale
    for _ in range(60):
        m, dm = state_law_coefficient(law, mu, x, dt, state, work)
        residual = mass * (x - free_slip) + scale * m
        if abs(residual) <= accepted_residual:
            evaluated = True
            break
        if residual > 0.0:
            hi = x
        else:
            lo = x
        slope = mass + scale * dm
        new = x - residual / slope if slope > 0.0 else np.nan
        step = abs(new - x)  # nan compares false
        if step <= 1e-13 + 1e-10 * abs(x):
            # x lies within the tolerance of the root: keep it, and its states (also where the
            # step lands on the bracket's end x itself, residual ~ 0: not a step out of it)
            evaluated = True
            break
        newton = True
        if not (lo < new < hi):  # also catches nan
            newton = False
            if np.isfinite(lo) and np.isfinite(hi):
                new = 0.5 * (lo + hi)
            else:
                new = x - width if residual > 0.0 else x + width
                width *= 2.0
        step = abs(new - x)
        if (newton and law.law != LAW_GMS and new * x > 0.0 and x * previous_x > 0.0
                and abs(residual) * step * step <= accepted_residual * previous_step * previous_step):
            # the residual left at the step's end is within the tolerance by the observed
            # convergence: take it, with the states to first order from those at x
            work[0] += state_slope(law, dm, dt) * (new - x)
            x = new
            evaluated = True
            break
        previous_x = x
        x = new
        if newton_converged(step, previous_step, 1e-13 + 1e-10 * abs(x)) or hi - lo <= 1e-13 + 1e-10 * abs(x):
            break
        previous_step = step if newton else 0.0
    if not evaluated:
        state_law_coefficient(law, mu, x, dt, state, work)
    for k in range(state.shape[0]):
        state[k] = work[k]
    return mass * (x - free_slip) / dt, x


@njit(cache=True, _nrt=False, inline="always")
def unbranched_coefficient(law, tanh_law, mu, slip_speed, scale):
    """:func:`scaled_coefficient` (coefficient and slope) in arithmetic and selects only, for
    :func:`velocity_batch`, and whether it is the law's: the same operations, so the same
    bits. tanh (``tanh_law`` True): the rational form of :func:`tanh` alone, its value up to
    |x| = 0.625 (beyond, the result is flagged); the creep polynomial: its three pieces
    computed, the one of the creep rate selected."""
    x = slip_speed * scale
    if tanh_law:
        th = tanh_rational(x)
        return mu * th, mu * (1.0 - th * th) * scale, abs(x) <= 0.625
    s1 = law.slip_peak
    s2 = law.slip_saturation
    rise, rise_slope = creep_rise(x, mu, s1)
    fall, fall_slope = creep_fall(x, mu, s1, s2, law.saturation_ratio)
    coef = rise if x < s1 else (fall if x < s2 else law.saturation_ratio * mu)
    slope = rise_slope if x < s1 else (fall_slope if x < s2 else 0.0)
    return coef, slope * scale, True


@njit(cache=True, _nrt=False, inline="always")
def _batch_iteration(law, tanh_law, x, lo, lo_res, lo_slope, hi, previous_step, mu, mass, target, scale, speed_scale,
                     tolerance, accepted_step2):
    """One iteration of :func:`implicit_friction`'s loop for a velocity law, in selects
    (:func:`velocity_batch`): (new x, lo, lo_res, lo_slope, hi, the step kept for the next
    test, whether the loop stops here, whether the law was evaluated in its own form, the
    stiffness ``dt N d mu/ds`` at x [kg])."""
    coef, slope, exact = unbranched_coefficient(law, tanh_law, mu, x, speed_scale)
    residual = mass * (x - target) + scale * coef
    dres = mass + scale * slope
    above = residual > 0.0
    hi = x if above else hi
    lo = lo if above else x
    lo_res = lo_res if above else residual
    lo_slope = lo_slope if above else dres
    new = x - residual / dres
    sticking_side = lo - lo_res / lo_slope
    newton = not (new <= lo)
    new = new if newton else sticking_side
    inside = lo <= new and new <= hi
    new = new if inside else 0.5 * (lo + hi)
    newton = newton and inside
    step = abs(new - x)
    stop = (newton and step * step <= accepted_step2) or newton_converged(step, previous_step, tolerance)
    return new, lo, lo_res, lo_slope, hi, step if newton else 0.0, stop, exact, scale * slope


#: the columns of ``w.contact_batch`` (velocity_batch): inputs (the contact's coefficient mu
#: with them), then results: force, slip, stiffness ``dt N d mu/ds`` at the slip last
#: evaluated [kg] and whether the batch solved the contact
(BATCH_FREE_SLIP, BATCH_NORMAL, BATCH_BELT_SPEED, BATCH_GUESS, BATCH_MU, BATCH_FORCE, BATCH_SLIP, BATCH_STIFFNESS,
 BATCH_SOLVED, BATCH_COLUMNS) = range(10)


@njit(cache=True, _nrt=False, error_model="numpy")
def velocity_batch(law, batch, count, mass, dt):
    """:func:`implicit_friction` of ``count`` independent contacts of a velocity law against
    surfaces of given speed, of node mass ``mass``, at once: its first two iterations, in
    arithmetic and selects (:func:`_batch_iteration`), so that the compiler runs the
    contacts in SIMD lanes (the numpy error model: no ZeroDivisionError branch in the
    divisions). ``batch`` holds the columns of :data:`BATCH_FREE_SLIP` ... ; where the
    solve stops within these iterations, the force and slip are written with
    ``BATCH_SOLVED`` 1: the same bits as :func:`implicit_friction` (the same operations),
    and the stiffness at the slip the solve last evaluated the law at (the last iteration's
    start: its Newton step ended within the solve's tolerance of the slip returned).
    Elsewhere (0): a contact without slip, one sliding on the saturated tanh law
    (:func:`saturated_sliding`), a tanh slip beyond the rational form, or one needing more
    iterations, left to :func:`implicit_friction`."""
    tanh_law = law.law == LAW_TANH
    n = batch.shape[0] // BATCH_COLUMNS
    free, normal, belt_speed = batch[:n], batch[n:2 * n], batch[2 * n:3 * n]
    guess, mu, force = batch[3 * n:4 * n], batch[4 * n:5 * n], batch[5 * n:6 * n]
    slip, stiffness, solved = batch[6 * n:7 * n], batch[7 * n:8 * n], batch[8 * n:9 * n]
    curvature = curvature_bound(law)
    if tanh_law:
        for k in range(count):
            _batch_contact(law, True, free, normal, belt_speed, guess, mu, force, slip, stiffness, solved, k, mass, dt,
                           curvature)
    else:
        for k in range(count):
            _batch_contact(law, False, free, normal, belt_speed, guess, mu, force, slip, stiffness, solved, k, mass,
                           dt, curvature)


@njit(cache=True, _nrt=False, inline="always")
def _batch_contact(law, tanh_law, free, normal, belt_speed, guess, coefficient, force, slip, stiffness, solved, k, mass,
                   dt, curvature):
    """Contact k of :func:`velocity_batch`."""
    mu = coefficient[k]
    free_slip = free[k]
    sign = 1.0 if free_slip >= 0.0 else -1.0
    target = sign * free_slip
    scale = dt * normal[k]
    speed_scale = 4.0 / law.velocity_threshold if tanh_law else 1.0 / max(abs(belt_speed[k]), law.reference_speed)
    sliding = target - dt * (mu * normal[k]) / mass
    saturated = tanh_law and 4.0 * sliding > TANH_SATURATION * law.velocity_threshold
    accepted_step2 = 2.0 * FORCE_TOLERANCE / (curvature * speed_scale * speed_scale)
    tolerance = 1e-13 + 1e-9 * target
    lo_res = -mass * target
    lo_slope = mass + scale * unbranched_coefficient(law, tanh_law, mu, 0.0, speed_scale)[1]
    x = sign * guess[k]
    x = x if 0.0 < x and x < target else 0.0 - lo_res / lo_slope
    x1, lo, lo_res, lo_slope, hi, step1, stop1, exact1, stiffness1 = _batch_iteration(
        law, tanh_law, x, 0.0, lo_res, lo_slope, target, 0.0, mu, mass, target, scale, speed_scale, tolerance,
        accepted_step2)
    x2, _, _, _, _, _, stop2, exact2, stiffness2 = _batch_iteration(
        law, tanh_law, x1, lo, lo_res, lo_slope, hi, step1, mu, mass, target, scale, speed_scale, tolerance,
        accepted_step2)
    end = x1 if stop1 else x2
    force[k] = -sign * mass * (target - end) / dt
    slip[k] = sign * end
    stiffness[k] = stiffness1 if stop1 else stiffness2
    ok = target != 0.0 and not saturated and exact1 and (stop1 or (stop2 and exact2))
    solved[k] = 1.0 if ok else 0.0


@njit(cache=True, _nrt=False, inline="always")
def pulley_contacts(w, j):
    """(first, end): pulley j's contacts are ``first <= k < end`` of this step's contact
    list (:func:`belt_fmu.model.contact.normal_contact` lists them pulley by pulley)."""
    end = w.contact_start[j + 1] if j + 1 < w.contact_start.shape[0] else w.contact_count[0]
    return w.contact_start[j], end


@njit(cache=True, _nrt=False, inline="always")
def interleaved_sweep(law) -> bool:
    """Whether :func:`friction_impulses` sweeps the contacts of law code ``law`` in rounds
    across the pulleys: for the laws whose solve iterates on a chain of exp and divisions
    (Dahl, LuGre), whose contacts the processor then overlaps; for the others the rounds'
    bookkeeping costs more than it gains."""
    return law == LAW_DAHL or law == LAW_LUGRE


@njit(cache=True, _nrt=False, inline="always")
def friction_impulses(p, s, w, dt, resolved):
    """Friction of this step's contacts (``w.contact_*``), implicit.

    For contact k of node i on pulley j, with the CCW tangent t of its frame and contact
    radius r, the slip the step would end with without friction and the implicit Euler
    equation of the contact (:func:`implicit_friction`) give the friction force F. Its
    impulse ``dt F`` goes to the node and, opposite, to the pulley (the momentum exchanged
    balances exactly); F is added to the pulley's hub force and belt torque, the contact's
    slip and force kept for the next step (``s.slip``, ``s.friction_force``). A speed-driven
    crank has 1/I = 0: no impulse changes its speed.

    Both schemes below start from the last step's friction forces ``F'``
    (``s.friction_force``; the accumulated impulses of [Catto 2005]), applied to the pulleys
    first: pulley j starts from ``omega_0 = omega* - dt/I sum_l r_l F'_l`` (``omega*``
    after its explicit load torque), in steady running its end-of-step speed. A cold start
    (``F' = 0``) left the pulley the load torque's impulse ``dt M / I`` away from it, a creep
    error proportional to ``dt`` (on the two-pulley test drive of
    fmu_tests/test_two_pulley.py the creep 5 % low at its step of 1e-5 s, 10 % at 2e-5 s;
    with the warm start within 1 % of its ``dt -> 0`` value from 5e-6 to 3e-5 s).

    * The velocity laws (creep polynomial, tanh): all contacts at once, each pulley's speed
      linearly implicit (:func:`coupled_velocity_friction`).
    * The bristle and the state laws: a Gauss-Seidel sweep, contact by contact with the
      effective mass of the node against the pulley (``1/m_eff = 1/m + r^2/I``); each
      contact's impulse goes to its pulley at once, so the next contact of the same pulley
      sees its new speed, and each contact swaps its own ``F'`` for its new ``F``: contact k
      of pulley j sees ``omega_k = omega* - dt/I (sum_{l<k} r_l F_l + sum_{l>k} r_l F'_l)``
      (sums over the pulley's contacts in sweep order) and the pulley ends at
      ``omega* - dt/I sum_l r_l F_l``.

    Only a ``resolved`` step, one long enough to resolve the friction forces
    (:data:`belt_fmu.model.integrator.TRIAL_STEP_FRACTION` of the nominal step at least),
    stores its forces as the next step's warm start: the force over a 1e-12 s step is the
    law's at the slip the state shows, not the sticking contacts' share of the load, and
    would change the next full step by what one sweep leaves of its error (hub forces by
    1e-4 relative on the built-in drive).
    """
    pulleys = p.pulleys
    crank = p.roles[0].crank if p.roles[0].crank_speed_input != 0 else -1  # the pulley of infinite inertia
    inv_m = 1.0 / p.belt[0].node_mass
    for k in range(w.contact_count[0]):  # the warm start
        j = w.contact_pulley[k]
        if j != crank:
            s.omega[j] -= dt * w.contact_frame[k, 2] * s.friction_force[w.contact_node[k], j] / pulleys[j].inertia
    if is_velocity_law(p.friction[0].law):
        coupled_velocity_friction(p, s, w, crank, inv_m, dt, resolved)
        return
    if not interleaved_sweep(p.friction[0].law):
        for k in range(w.contact_count[0]):
            contact_friction(p, s, w, k, crank, inv_m, dt, resolved)
        return
    # The pulleys' contacts in rounds, round r taking the r-th contact of every pulley: each
    # pulley's in list order, as above, but interleaved with the other pulleys', so that
    # consecutive contacts are independent and the processor overlaps their solves (those
    # of one pulley wait for each other's impulses). The same forces bit for bit.
    rounds = 0
    for j in range(pulleys.shape[0]):
        first, end = pulley_contacts(w, j)
        rounds = max(rounds, end - first)
    for round_ in range(rounds):
        for j in range(pulleys.shape[0]):
            first, end = pulley_contacts(w, j)
            if first + round_ < end:
                contact_friction(p, s, w, first + round_, crank, inv_m, dt, resolved)


@njit(cache=True, _nrt=False, inline="always")
def contact_friction(p, s, w, k, crank, inv_m, dt, resolved):
    """Contact k's share of :func:`friction_impulses`: its friction force by
    :func:`implicit_friction`, applied to its node and pulley (``crank``: the speed-driven
    crank's index, else -1; ``inv_m``: 1 / the node mass)."""
    pulleys = p.pulleys
    i, tx, ty, r = contact_geometry(w, k)
    j = w.contact_pulley[k]
    # the driven crank's speed is an input: its contacts leave it as it is, rather than
    # adding 0 (which made each wait for the previous one's force: 0.2 us of a
    # 150-element step, 0.3 with the bristle law)
    driven = j == crank
    inv_inertia = 0.0 if driven else 1.0 / pulleys[j].inertia
    if not driven:
        s.omega[j] += dt * r * s.friction_force[i, j] * inv_inertia  # this contact's warm start back off
    vt, free_slip = slip_without_friction(s, w, i, j, tx, ty, r)
    mass = 1.0 / (inv_m + r * r * inv_inertia)
    f, slip = implicit_friction(p.friction[0], pulleys[j].effective_mu, w.normal_force[i, j], free_slip, vt,
                                s.friction[i, j], w.friction_work, mass, dt, s.slip[i, j])
    apply_contact_force(s, w, i, j, tx, ty, r, driven, inv_inertia, f, slip, inv_m, dt, resolved)


@njit(cache=True, _nrt=False, inline="always")
def slip_without_friction(s, w, i, j, tx, ty, r):
    """(the tangential velocity of node i, its slip on pulley j without this step's friction)
    [m/s], at its contact of CCW tangent (tx, ty) and distance r."""
    vt = s.u[i, 0] * tx + s.u[i, 1] * ty
    return vt, vt - (w.center_velocity[j, 0] * tx + w.center_velocity[j, 1] * ty) - s.omega[j] * r


@njit(cache=True, _nrt=False, inline="always")
def apply_contact_force(s, w, i, j, tx, ty, r, driven, inv_inertia, f, slip, inv_m, dt, resolved):
    """The friction force ``f`` [N] of the contact of node i on pulley j and its end-of-step
    slip: kept (the force only after a ``resolved`` step), its impulse on the node and, unless
    the pulley is ``driven``, on the pulley (``inv_inertia`` its 1/I), its share of the hub
    force and belt torque."""
    s.slip[i, j] = slip
    if resolved:
        s.friction_force[i, j] = f
    s.u[i, 0] += dt * f * tx * inv_m
    s.u[i, 1] += dt * f * ty * inv_m
    if not driven:
        s.omega[j] -= dt * r * f * inv_inertia
    w.hub_force[j, 0] -= f * tx
    w.hub_force[j, 1] -= f * ty
    w.belt_torque[j] -= r * f


@njit(cache=True, _nrt=False, inline="always")
def contact_geometry(w, k):
    """Contact k's node, the CCW tangent (tx, ty) of its pulley there and its distance r [m]
    from the pulley's centre."""
    return w.contact_node[k], -w.contact_frame[k, 1], w.contact_frame[k, 0], w.contact_frame[k, 2]


@njit(cache=True, _nrt=False, inline="always")
def coupled_velocity_friction(p, s, w, crank, inv_m, dt, resolved):
    """:func:`friction_impulses` for a velocity law: every contact's implicit Euler equation
    solved at once with its pulley's speed held at the warm start's ``omega_0``, then one
    Newton step of each pulley's speed, linear in its contacts (linearly implicit Euler,
    [Hairer and Wanner 1996] IV.7).

    Held at ``omega``, contact k of a pulley is the node of mass m against a given surface:
    its slip without friction ``s*_k(omega) = v_k - omega r_k`` (``v_k`` the node's
    tangential velocity less the centre's), its end-of-step slip from

        m (s_k - s*_k) = dt F(s_k)                                  (implicit_friction)

    with F(s) = -sign(s) mu(|s|) N. No contact waits for another's impulse, so all are
    solved together in SIMD lanes (:func:`velocity_batch`; those it leaves, alone). The
    pulley's own implicit Euler equation is

        g(omega) = I (omega - omega*) + dt sum_k r_k F_k(omega) = 0,
        g(omega_0) = dt sum_k r_k (F_k - F'_k)

    (``F'`` the warm start), and ``dF_k/d omega = r_k m D_k / ((m + D_k) dt)`` from
    differentiating the contact's equation, where ``D_k = dt N d mu/ds`` is the contact's
    stiffness over the step (not below 0: :func:`coupling_stiffness`). One Newton step
    ``delta = -g(omega_0) / g'(omega_0)`` (:func:`pulley_speed_step`) moves each contact's
    force and slip along that line (``F_k += m r_k delta D_k / ((m + D_k) dt)``,
    ``s_k -= r_k delta m / (m + D_k)``), and the impulses of these forces leave the pulley at
    ``omega_0 + delta``, so every stored slip is the one the end-of-step state shows.

    A speed-driven crank (``crank``) takes no step: its contacts are exact. Elsewhere what
    one step leaves is second order in the change of the forces from the last step; on the
    settled built-in drive the forces match their law at the end-of-step slip within 1e-4
    mu N (fmu_tests/test_friction_laws.py). The contact-by-contact sweep (the state laws')
    gave each contact a pulley speed between its start and end values: its forces missed
    their law at the end-of-step slip by up to 0.46 mu N with tanh, and the slips it kept
    were up to 1e-3 m/s (tanh) and 4e-4 m/s (creep polynomial) off the end-of-step state's,
    although the mean outputs over 0.1 s agree within 2e-4 (hub loads, span tensions:
    2e-5). And it waited for each contact's solve in turn, which the batch does not.

    Two pulleys never share a node (the layout keeps their cord circles apart), so no
    node's two contacts wait for each other either.
    """
    law = p.friction[0]
    count = w.contact_count[0]
    batch = w.contact_batch.reshape(-1)
    n = w.contact_batch.shape[1]
    mass = 1.0 / inv_m
    _gather_contacts(p, s, w, batch, n, count)
    velocity_batch(law, batch, count, mass, dt)
    for k in range(count):
        if batch[BATCH_SOLVED * n + k] == 0.0:
            _solve_alone(law, s, w, batch, n, k, mass, dt)
    for j in range(p.pulleys.shape[0]):
        first, end = pulley_contacts(w, j)
        driven = j == crank
        inv_inertia = 0.0 if driven else 1.0 / p.pulleys[j].inertia
        delta = 0.0 if driven else pulley_speed_step(s, w, batch, n, j, first, end, p.pulleys[j].inertia, mass, dt)
        for k in range(first, end):
            i, tx, ty, r = contact_geometry(w, k)
            f = batch[BATCH_FORCE * n + k]
            slip = batch[BATCH_SLIP * n + k]
            if not driven:
                stiffness = coupling_stiffness(batch, n, k)
                f += mass * r * delta * stiffness / ((mass + stiffness) * dt)
                slip -= r * delta * mass / (mass + stiffness)
                s.omega[j] += dt * r * s.friction_force[i, j] * inv_inertia  # its warm start back off
            apply_contact_force(s, w, i, j, tx, ty, r, driven, inv_inertia, f, slip, inv_m, dt, resolved)


@njit(cache=True, _nrt=False, inline="always")
def _gather_contacts(p, s, w, batch, n, count):
    """The inputs of :func:`velocity_batch` for this step's ``count`` contacts into the
    columns of ``batch`` (``n`` rows each), each pulley at its current speed."""
    for k in range(count):
        i, tx, ty, r = contact_geometry(w, k)
        j = w.contact_pulley[k]
        vt, batch[BATCH_FREE_SLIP * n + k] = slip_without_friction(s, w, i, j, tx, ty, r)
        batch[BATCH_NORMAL * n + k] = w.normal_force[i, j]
        batch[BATCH_BELT_SPEED * n + k] = vt
        batch[BATCH_GUESS * n + k] = s.slip[i, j]
        batch[BATCH_MU * n + k] = p.pulleys[j].effective_mu


@njit(cache=True, _nrt=False, inline="always")
def _solve_alone(law, s, w, batch, n, k, mass, dt):
    """Contact k of ``batch``, which :func:`velocity_batch` left, by :func:`implicit_friction`,
    and its stiffness ``dt N d mu/ds`` at the slip found."""
    i = w.contact_node[k]
    j = w.contact_pulley[k]
    mu = batch[BATCH_MU * n + k]
    normal = batch[BATCH_NORMAL * n + k]
    belt_speed = batch[BATCH_BELT_SPEED * n + k]
    f, slip = implicit_friction(law, mu, normal, batch[BATCH_FREE_SLIP * n + k], belt_speed, s.friction[i, j],
                                w.friction_work, mass, dt, batch[BATCH_GUESS * n + k])
    batch[BATCH_FORCE * n + k] = f
    batch[BATCH_SLIP * n + k] = slip
    slope = scaled_coefficient(law, mu, abs(slip), slip_scale(law, belt_speed))[1]
    batch[BATCH_STIFFNESS * n + k] = dt * normal * slope


@njit(cache=True, _nrt=False, inline="always")
def coupling_stiffness(batch, n, k):
    """Contact k's stiffness ``D = dt N d mu/ds`` [kg] as :func:`pulley_speed_step` takes it:
    not below 0. Where the coefficient falls with the slip (the creep polynomial beyond its
    peak) the slip's response to the pulley speed, ``m / (m + D)``, grows without bound as
    D nears -m (at 85 N on a node of the built-in drive, where its law falls steepest; with
    the crank's speed swinging +-50 % at 25 Hz, D reached -0.96 m): taken flat there, the
    contact's force holds and its slip follows the pulley. In that run the outputs' rms
    difference from a run at dt/4, 2-20 % of their variation, was the same with the exact
    slope within 0.003 of the variation; neither diverged."""
    return max(batch[BATCH_STIFFNESS * n + k], 0.0)


@njit(cache=True, _nrt=False, inline="always")
def pulley_speed_step(s, w, batch, n, j, first, end, inertia, mass, dt):
    """The Newton step [rad/s] of pulley j's speed, ``-g(omega_0) / g'(omega_0)`` with
    ``g = dt sum_k r_k (F_k - F'_k)`` and ``g' = I + sum_k r_k^2 m D_k / (m + D_k)`` over its
    contacts ``first <= k < end`` (:func:`coupled_velocity_friction`; ``F'`` is still in
    ``s.friction_force``)."""
    unbalanced = 0.0  # sum r (F - F') [N m]
    slope = inertia
    for k in range(first, end):
        i = w.contact_node[k]
        r = w.contact_frame[k, 2]
        stiffness = coupling_stiffness(batch, n, k)
        unbalanced += r * (batch[BATCH_FORCE * n + k] - s.friction_force[i, j])
        slope += r * r * mass * stiffness / (mass + stiffness)
    return -dt * unbalanced / slope
