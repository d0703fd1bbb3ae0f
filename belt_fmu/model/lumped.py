"""The lumped rotational drive model: the second fidelity level, two to three orders of
magnitude faster than the discretized belt (docs/lumped-model.md).

Degrees of freedom: the pulley rotations (the crank's speed is the input), the tensioner arm
angle, and the belt as material: the unstretched content of each free span and of each
pulley's wrap. This is the classical rotational model of a front-end accessory drive
(Hwang, Perkins and Ulsoy, "Rotational response and slip prediction of serpentine belt
drive systems", ASME J. Vibration and Acoustics, 1994: pulleys and arm as rigid bodies,
each span a longitudinal spring-damper of its free length, belt inertia only in the
centrifugal tension) with the belt's creep and gross slip on every pulley instead of the
no-slip kinematics of that paper:

* **span springs**: span j (pulley j -> j + 1) has the spring length ``G_j``, its free
  length plus the arcs by which its ends moved from their installed tangent points
  (:func:`update_springs`; the tangent formula of :mod:`belt_fmu.model.geometry`, the
  tensioner pulley at its arm angle, so the arm's kinematics is exact), and the tension
  ``T_j = EA (G_j / S_j - 1) + c_a d/dt (G_j / S_j)`` (Kelvin-Voigt), ``S_j`` its
  unstretched content;
* **material flow**: belt runs onto pulley j at the unstretched rate ``q_j``, at the speed
  ``v_j = q_j (1 + eps_(j-1))``; ``v_j - R_j w_j`` is the gross slip on that pulley (belt
  faster than the pulley surface positive). The belt on the pulley's installed wrap arc,
  ``W_j``, is carried at the strain it ran on with and replaced over the wrap's transit
  time; the spans' contents follow ``dS_j/dt = q_j - q_(j+1) - dW_j/dt``. With no gross
  slip this is Grashof/Firbank creep: a driven pulley turns slower than the belt by
  ``(T_tight - T_slack) / (EA + T_tight)``;
* **capstan** (Simscape Belt Pulley (MathWorks), [Simscape Belt Pulley]: the Euler-Eytelwein equation with
  centrifugal force and a velocity-dependent coefficient): the belt over a wrap is massless,
  so the friction it transmits is the difference of its end tensions, and

      T_out - m' v^2 = (T_in - m' v^2) exp(mu_s(v_slip) theta)

  with the wrap angle theta from the geometry and mu_s the friction law's coefficient at the
  gross slip velocity, odd in it, capped by the effective coefficient ``mu / sin(phi/2)``
  (the poly-V wedge). Below the cap the belt creeps elastically; a load beyond it makes the
  pulley slip grossly. For the laws with velocity dependence (tanh, creep_polynomial and the
  Stribeck curve of LuGre and GMS) mu_s is theirs; the bristle and Dahl laws are Coulomb in
  steady sliding and are regularized like tanh with :data:`STICK_VELOCITY`;
* **pulleys**: load torques (the water-pump input, the accessory tables) and bearing damping
  as in the discretized model (:func:`belt_fmu.model.drive.accelerate_pulleys`), the belt's
  torque ``R (T_out - T_in)``;
* **tensioner**: spring, viscous damping, asymmetric Coulomb friction and stops from the
  TENSIONER record and kernels (:mod:`belt_fmu.model.tensioner`), loaded by the belt's hub
  force ``(T_in - m'v^2) u_in + (T_out - m'v^2) u_out``.

Integration: the span springs are stiff against the small pulleys (an idler on a short span:
above 1 kHz) and the friction regularization stiffer still, so each step is implicit where it
matters: after the arm's step (explicit in the belt's hub load, as the discretized model's;
taking the belt's stiffness into the arm implicitly, with the pulleys held, makes the arm
heavier than it is by dt^2 k / 4: 14 % at 0.25 ms and a 30 % lower arm resonance peak), one
Gauss-Seidel sweep over the
pulleys in which each pulley's flow q_j, speed and friction solve the end-of-step capstan
equation with its two spans' tensions implicit in q_j (a scalar, monotone equation, by
bracketed Newton); the implicit parts use the theta method (:data:`THETA`). Outputs come
from the same output registry as the discretized model's (:mod:`belt_fmu.model.outputs`).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from .drive import accelerate_pulleys
from .friction import (LAW_CREEP_POLYNOMIAL, LAW_GMS, LAW_LUGRE, LAW_TANH, friction_coefficient,
                       stribeck, stribeck_slope)
from .outputs import (ANGLE, BEARING_FORCE, BELT_SPEED, CRANK_TORQUE, HUB_FORCE, HUB_FORCE_X, HUB_FORCE_Y, PULLEY_BLOCK,
                      PULLEY_STRIDE, SLIP, SPAN_STRIDE, SPAN_TENSION, SPEED, TENSIONER_ANGLE, TENSIONER_ANGLE_REL)
from .tensioner import advance_arm, arm_pulley_center

#: [m/s] regularization of the Coulomb laws (bristle, Dahl) in steady sliding: tanh(4 v / v)
#: reaches 0.999 of the coefficient at this gross slip velocity ([Simscape Belt Pulley]'s velocity threshold)
STICK_VELOCITY = 1.0e-3
#: [s] longest time step: an accuracy bound (the pulleys' and spans' stiff parts are
#: implicit; the arm takes at most ARM_STEP_SAFETY of its explicit limit, arm_step_limit). At
#: 0.25 ms the tensioner amplitude under a firing-order irregularity is within 4 % of the
#: converged one, at the arm resonance too (fmu_tests/test_lumped.py, docs/lumped-model.md)
MAX_STEP = 2.5e-4
TWO_PI = 2.0 * math.pi
#: fraction of the explicit arm's stability limit used as time step (:func:`arm_step_limit`)
ARM_STEP_SAFETY = 0.5
#: weight of the end of the step in the implicit parts (the theta method): 1 is implicit
#: Euler, which damps a mode of frequency w by 1 / sqrt(1 + (w dt)^2) per step (45 % of a
#: 60 Hz tensioner mode's energy per period at 0.5 ms); 1/2, the trapezoidal rule, keeps
#: the energy of linear modes; a little above it damps only the fastest, parasitic ones
THETA = 0.5
#: [m/s] the flows' solution accuracy: over a 0.25 ms step it misplaces 2.5e-11 m of belt
#: between two spans (1e-4 N of tension on a 0.1 m span), which the next step's equations
#: see and correct; the belt's total content is conserved exactly whatever the tolerance
#: (each flow leaves one span and enters the next)
FLOW_TOLERANCE = 1.0e-7
OK = 0
NOT_FINITE = 1

#: The lumped belt (one record).
LUMPED_BELT = np.dtype(
    [
        ("axial_stiffness", "f8"),  # EA [N]
        ("axial_damping", "f8"),  # Kelvin-Voigt c_a [N s]
        ("mass_per_length", "f8"),  # m' [kg/m]
        ("unstretched_length", "f8"),  # total unstretched cord length [m]
        ("max_coefficient_ratio", "f8"),  # largest friction coefficient / mu of the law (static ratio) [-]
    ]
)

#: the state vector y of the lumped model: (name, size in pulleys p or fixed, meaning)
LUMPED_STATE_LAYOUT = (
    ("theta", "p", "pulley rotation angles [rad], CCW"),
    ("omega", "p", "pulley angular velocities [rad/s], CCW"),
    ("arm", 2, "tensioner arm angle psi [rad] (polar angle of the pulley centre about the pivot, CCW) and rate"),
    ("content", "p", "unstretched belt content S_j of span j [m]"),
    ("flow", "p", "unstretched belt flow q_j onto pulley j (from span j - 1), travel direction [m/s]"),
    ("wrap_content", "p", "unstretched belt W_j held on pulley j's installed wrap arc [m]"),
)
#: the work buffer: geometry and diagnostics of the last step, scratch
LUMPED_WORK_LAYOUT = (
    ("tension", "p", "axial force (tension) of span j [N]"),
    ("spring_length", "p", "spring length G_j of span j: its free length and the shifts of its ends [m]"),
    ("spring_rate", "p", "dG_j/dt [m/s]"),
    ("span_length", "p", "free length of span j [m]"),
    ("depart", "p", "polar angle where the belt leaves pulley j [rad]"),
    ("arrive", "p", "polar angle where the belt arrives on pulley j [rad]"),
    ("wrap", "p", "wrap angle of pulley j [rad]"),
    ("reference", "p", "installed departure angle of pulley j [rad]"),
    ("reference_arrive", "p", "installed arrival angle on pulley j [rad]"),
    ("wrap_rate", "p", "dW_j/dt this step [m/s]"),
    ("direction_x", "p", "unit vector of span j, travel direction, x"),
    ("direction_y", "p", "... y"),
    ("centrifugal", "p", "m' v^2 of span j [N]"),
    ("slip", "p", "gross slip on pulley j, belt minus pulley surface speed, travel direction [m/s]"),
    ("belt_force", "p", "friction force of the belt on pulley j, its running direction [N]"),
    ("predicted", "p", "scratch: span j's end-of-step tension without flow [N]"),
    ("compliance", "p", "scratch: its decrease per unit net outflow [N s/m]"),
    ("hub_force", ("p", 2), "force of the belt on each pulley [N]"),
    ("centers", ("p", 2), "current pulley centres [m]"),
    ("center_velocity", ("p", 2), "their velocities [m/s]"),
    ("arm_work", 1, "scratch of the arm's and loads' friction solves"),
    ("port_torque", "p", "input load torque of each pulley [N m] (belt_fmu.model.drive.pulley_loads); "
                         "zero: the lumped model has no ports"),
)

LumpedState = namedtuple("LumpedState", [name for name, _, _ in LUMPED_STATE_LAYOUT])
LumpedWork = namedtuple("LumpedWork", [name for name, _, _ in LUMPED_WORK_LAYOUT])


def _sizes(layout, p: int) -> list[int]:
    out = []
    for _, extent, _ in layout:
        extent = extent if isinstance(extent, tuple) else (extent,)
        out.append(int(np.prod([p if e == "p" else e for e in extent])))
    return out


def buffer_sizes(p: int) -> tuple[int, int]:
    """Sizes of the lumped state vector and work buffer for p pulleys (from the tables)."""
    return sum(_sizes(LUMPED_STATE_LAYOUT, p)), sum(_sizes(LUMPED_WORK_LAYOUT, p))


def offsets(layout, p: int) -> np.ndarray:
    """Start of each view of ``layout`` in its buffer, the size last."""
    return np.concatenate([[0], np.cumsum(_sizes(layout, p))]).astype(np.int64)


@njit(cache=True)
def _view(buffer, starts, i):
    return buffer[starts[i]:starts[i + 1]]


@njit(cache=True)
def _pairs(buffer, starts, i, p):
    return buffer[starts[i]:starts[i + 1]].reshape((p, 2))


@njit(cache=True)
def unpack(y, work, so, wo, p):
    """Named views (:class:`LumpedState`, :class:`LumpedWork`) of the flat buffers at the
    offsets ``so`` and ``wo`` generated from the tables (:func:`offsets`), in table order
    (fmu_tests/test_lumped.py checks that they tile the buffers with the tables' shapes)."""
    s = LumpedState(_view(y, so, 0), _view(y, so, 1), _view(y, so, 2), _view(y, so, 3), _view(y, so, 4),
                    _view(y, so, 5))
    w = LumpedWork(_view(work, wo, 0), _view(work, wo, 1), _view(work, wo, 2), _view(work, wo, 3),
                   _view(work, wo, 4), _view(work, wo, 5), _view(work, wo, 6), _view(work, wo, 7),
                   _view(work, wo, 8), _view(work, wo, 9), _view(work, wo, 10), _view(work, wo, 11),
                   _view(work, wo, 12), _view(work, wo, 13), _view(work, wo, 14), _view(work, wo, 15),
                   _view(work, wo, 16), _pairs(work, wo, 17, p), _pairs(work, wo, 18, p), _pairs(work, wo, 19, p),
                   _view(work, wo, 20), _view(work, wo, 21))
    return s, w


def arm_step_limit(parameters, belt, spring_length, direction_x, direction_y) -> float:
    """Largest stable step [s] of the explicit arm (:func:`step`): symplectic Euler on the arm
    against the belt's two spans at the tensioner pulley is stable for ``w dt < 2``, with
    ``w^2 = k / J``, ``k = sum EA / G_a (dL_a / dpsi)^2 + k_spring + k_stop`` over those spans
    (their springs with the pulleys held: the stiffest the arm can meet); inf without a
    tensioner. ``spring_length`` and the span directions of the installed geometry."""
    t = int(parameters.roles[0]["tensioner"])
    if t < 0:
        return math.inf
    arm = parameters.tensioner[0]
    n = len(spring_length)
    psi = arm["installed_angle"]
    ex, ey = -arm["arm_length"] * math.sin(psi), arm["arm_length"] * math.cos(psi)
    stiffness = arm["spring_rate"] + arm["stop_stiffness"]
    for a in ((t - 1) % n, t):
        lever = direction_x[a] * ex + direction_y[a] * ey
        stiffness += belt[0]["axial_stiffness"] / spring_length[a] * lever * lever
    return 2.0 * math.sqrt(arm["arm_inertia"] / stiffness)


# ------------------------------------------------------------------------------------ geometry
@njit(cache=True, inline="always")
def update_span(p, w, a):
    """Geometry of span a (pulley a -> a + 1) at the current centres ``w.centers``: its
    departure and arrival angles, length and direction, by the tangent formula of
    :mod:`belt_fmu.model.geometry` (Scania thesis (Vahedi 2012) app. 12.1, generalized):
    the belt leaves a at ``alpha = atan2(d) - s_a acos(k / D)``, ``k = rho_a - s_a s_b rho_b``,
    and arrives on b at alpha (open span) or alpha + pi (cross span); length sqrt(D^2 - k^2)."""
    n = p.pulleys.shape[0]
    b = a + 1 if a + 1 < n else 0
    pa = p.pulleys[a]
    pb = p.pulleys[b]
    dx = w.centers[b, 0] - w.centers[a, 0]
    dy = w.centers[b, 1] - w.centers[a, 1]
    dist2 = dx * dx + dy * dy
    dist = np.sqrt(dist2)
    k = pa.radius - pa.sense * pb.sense * pb.radius
    alpha = np.arctan2(dy, dx) - pa.sense * np.arccos(min(max(k / dist, -1.0), 1.0))
    length = np.sqrt(max(dist2 - k * k, 0.0))
    w.span_length[a] = length
    w.depart[a] = alpha
    w.arrive[b] = alpha if pa.sense == pb.sense else alpha + np.pi
    # travel direction: the tangent of pulley a's wrap sense at the departure point
    w.direction_x[a] = -pa.sense * np.sin(alpha)
    w.direction_y[a] = pa.sense * np.cos(alpha)


@njit(cache=True, inline="always")
def update_springs(p, w, dt):
    """Wrap angles and the spans' spring lengths G_j from the span geometry;
    ``w.spring_rate`` from the change over ``dt`` (0: no rate).

    The belt on a pulley's installed wrap arc (from its installed arrival to its installed
    departure point, ``w.reference_arrive``, ``w.reference``) is held by the pulley
    (``wrap_content``); span j's spring is its free length plus the arcs by which its two
    ends have moved from their installed points (a moved end unwraps belt from the pulley
    into the span or wraps it on). So a moved pulley changes each span's spring by the
    projection of its displacement on the span (envelope of the tangent), the hub forces
    along the spans are the forces of the spans' tensions ([Scania thesis] eq. 12.23) and the
    belt's coupling to the arm is conservative; and a span's stiffness is EA over its free
    length, the span spring of Hwang, Perkins and Ulsoy (1994)."""
    n = p.pulleys.shape[0]
    for j in range(n):
        wrap = p.pulleys[j].sense * (w.depart[j] - w.arrive[j])
        w.wrap[j] = wrap - TWO_PI * np.floor(wrap / TWO_PI)
    for j in range(n):
        b = j + 1 if j + 1 < n else 0
        left = p.pulleys[j].sense * (w.depart[j] - w.reference[j])
        left -= TWO_PI * np.floor(left / TWO_PI + 0.5)  # in [-pi, pi)
        right = p.pulleys[b].sense * (w.reference_arrive[b] - w.arrive[b])
        right -= TWO_PI * np.floor(right / TWO_PI + 0.5)
        g = w.span_length[j] + p.pulleys[j].radius * left + p.pulleys[b].radius * right
        w.spring_rate[j] = (g - w.spring_length[j]) / dt if dt > 0.0 else 0.0
        w.spring_length[j] = g


@njit(cache=True, inline="always")
def installed_wrap(p, w, j):
    """Length [m] of pulley j's installed wrap arc (cord line)."""
    wrap = p.pulleys[j].sense * (w.reference[j] - w.reference_arrive[j])
    return p.pulleys[j].radius * (wrap - TWO_PI * np.floor(wrap / TWO_PI))


@njit(cache=True, inline="always")
def update_geometry(p, s, w, dt, full):
    """Centres and path for the arm angle ``s.arm[0]``: every span if ``full``, else the two
    spans of the tensioner pulley (the others do not move)."""
    n = p.pulleys.shape[0]
    for j in range(n):
        w.centers[j, 0] = p.pulleys[j].x
        w.centers[j, 1] = p.pulleys[j].y
        w.center_velocity[j, 0] = 0.0
        w.center_velocity[j, 1] = 0.0
    t = p.roles[0].tensioner
    if t >= 0:
        arm_pulley_center(p.tensioner[0], s.arm, w.centers, w.center_velocity, t)
    if full:
        for a in range(n):
            update_span(p, w, a)
    elif t >= 0:
        update_span(p, w, t - 1 if t > 0 else n - 1)
        update_span(p, w, t)
    else:
        return
    update_springs(p, w, dt)


@njit(cache=True, inline="always")
def hub_force(p, w, j):
    """Force [N] of the belt on pulley j: effective tensions T - m'v^2 of its two spans along
    them, away from the pulley ([Scania thesis] eq. 12.23; Simscape Belt Pulley's force balance)."""
    n = p.pulleys.shape[0]
    i = j - 1 if j > 0 else n - 1
    t_in = w.tension[i] - w.centrifugal[i]
    t_out = w.tension[j] - w.centrifugal[j]
    w.hub_force[j, 0] = -t_in * w.direction_x[i] + t_out * w.direction_x[j]
    w.hub_force[j, 1] = -t_in * w.direction_y[i] + t_out * w.direction_y[j]


# ------------------------------------------------------------------------------------ friction
@njit(cache=True)
def slip_coefficient(law, mu, slip, belt_speed):
    """Friction coefficient mu_s at gross slip ``slip`` [m/s] (odd in it) and its derivative:
    the law's steady velocity dependence (module docstring)."""
    v = abs(slip)
    sign = 1.0 if slip >= 0.0 else -1.0
    if law.law == LAW_TANH or law.law == LAW_CREEP_POLYNOMIAL:
        coef, slope = friction_coefficient(law, mu, v, belt_speed)
        return sign * coef, slope
    vt = STICK_VELOCITY / 4.0
    th = np.tanh(v / vt)
    dth = (1.0 - th * th) / vt
    if law.law == LAW_LUGRE or law.law == LAW_GMS:
        g = stribeck(law, mu, v)
        dg = stribeck_slope(law, mu, v)
        extra = law.lugre_viscous * slip if law.law == LAW_LUGRE else 0.0
        return sign * g * th + extra, dg * th + g * dth + (law.lugre_viscous if law.law == LAW_LUGRE else 0.0)
    return sign * mu * th, mu * dth


@njit(cache=True)
def capstan_flow(law, mu, theta, r, a_out, a_in, t_out0, t_in0, c, strain_in, speed, inv_inertia, dt, guess):
    """Flow q [m/s] past a pulley solving the end-of-step capstan equation (module docstring)

        (T_out(q) - c) exp(-h/2) - (T_in(q) - c) exp(h/2) = 0,   h = theta mu_s(v_slip(q)),

    with the spans' tensions T_out = t_out0 - a_out q and T_in = t_in0 + a_in q, the gross
    slip v_slip = q (1 + eps_in) - r w(q) and the pulley's running speed after the belt's
    torque w(q) = speed + dt r (T_out - T_in) / I (``inv_inertia`` 0 for the crank).
    ``law`` is the FRICTION_LAW record, ``mu`` the pulley's effective coefficient, ``theta``
    its wrap angle, ``c`` = m' v^2. The residual decreases in q: Newton's method from
    ``guess``, kept inside the bracket of the points evaluated (widening it until the root is
    enclosed). Returns (q, T_out - T_in, v_slip)."""
    dv = (1.0 + strain_in) + dt * r * r * inv_inertia * (a_out + a_in)  # d v_slip / d q
    width = (abs(t_out0 - t_in0) + 1.0) / (a_out + a_in)
    lo = -np.inf
    hi = np.inf
    x = guess
    for _ in range(80):
        t_out = t_out0 - a_out * x
        t_in = t_in0 + a_in * x
        force = t_out - t_in
        v = x * (1.0 + strain_in) - r * (speed + dt * r * force * inv_inertia)
        m, dm = slip_coefficient(law, mu, v, x * (1.0 + strain_in))
        e = np.exp(0.5 * theta * m)
        residual = (t_out - c) / e - (t_in - c) * e
        slope = -a_out / e - a_in * e - 0.5 * theta * dm * dv * ((t_out - c) / e + (t_in - c) * e)
        if residual > 0.0:
            lo = x
        else:
            hi = x
        new = x - residual / slope if slope < 0.0 else np.nan
        if not (lo < new < hi):  # also catches nan
            if np.isfinite(lo) and np.isfinite(hi):
                new = 0.5 * (lo + hi)
            else:
                new = x + width if residual > 0.0 else x - width
                width *= 2.0
        converged = abs(new - x) <= FLOW_TOLERANCE
        x = new
        if converged or hi - lo <= FLOW_TOLERANCE:
            break
    t_out = t_out0 - a_out * x
    t_in = t_in0 + a_in * x
    force = t_out - t_in
    v = x * (1.0 + strain_in) - r * (speed + dt * r * force * inv_inertia)
    return x, force, v


# ------------------------------------------------------------------------------------ the parts
@njit(cache=True, inline="always")
def centrifugal_tensions(p, lb, s, w):
    """m' v^2 of each span, v its belt speed q (1 + eps) onto the next pulley."""
    n = s.content.shape[0]
    for j in range(n):
        speed = s.flow[j + 1 if j + 1 < n else 0] * w.spring_length[j] / s.content[j]
        w.centrifugal[j] = lb.mass_per_length * speed * speed


@njit(cache=True, inline="always")
def belt_flow(p, lb, s, w, dt):
    """The belt's step: each span's end-of-step tension without flow and its compliance to
    flow, then one Gauss-Seidel sweep from the crank over the pulleys solving each one's
    capstan equation (:func:`capstan_flow`) with its neighbours' latest flows; then the
    spans' contents and tensions and the pulleys' speeds."""
    pulleys = p.pulleys
    n = pulleys.shape[0]
    crank = p.roles[0].crank
    ea = lb.axial_stiffness
    ca = lb.axial_damping
    th = THETA
    for j in range(n):
        # the belt on the wrap is replaced at the entry strain as it runs through, over the
        # wrap's transit time (a first-order lag for that transport delay, exact over the step)
        i = j - 1 if j > 0 else n - 1
        strain_in = w.spring_length[i] / s.content[i] - 1.0
        bank = installed_wrap(p, w, j)
        target = bank / (1.0 + strain_in)
        relax = 1.0 - np.exp(-abs(s.flow[j]) * (1.0 + strain_in) * dt / bank)
        w.wrap_rate[j] = (target - s.wrap_content[j]) * relax / dt
        s.wrap_content[j] += dt * w.wrap_rate[j]
    for j in range(n):
        nxt = j + 1 if j + 1 < n else 0
        # the old flows' share, and what the wrap of pulley j takes from the span leaving it
        s.content[j] += (1.0 - th) * dt * (s.flow[j] - s.flow[nxt]) - dt * w.wrap_rate[j]
    for j in range(n):
        g = w.spring_length[j]
        u = s.content[j]
        w.predicted[j] = ea * (g / u - 1.0) + ca * w.spring_rate[j] / u
        w.compliance[j] = (ea * th * dt + ca) * g / (u * u)
    law = p.friction[0]
    for k in range(n):
        j = crank + k if crank + k < n else crank + k - n
        i = j - 1 if j > 0 else n - 1
        nxt = j + 1 if j + 1 < n else 0
        pulley = pulleys[j]
        inv_inertia = 0.0 if j == crank else 1.0 / pulley.inertia
        # running speed with the old belt force's share; the new force's share is implicit
        speed = pulley.sense * s.omega[j] + (1.0 - th) * dt * pulley.radius * w.belt_force[j] * inv_inertia
        t_out0 = w.predicted[j] + w.compliance[j] * s.flow[nxt]
        t_in0 = w.predicted[i] - w.compliance[i] * s.flow[i]
        strain_in = w.spring_length[i] / s.content[i] - 1.0
        q, force, slip = capstan_flow(law, pulley.effective_mu, w.wrap[j], pulley.radius, w.compliance[j],
                                      w.compliance[i], t_out0, t_in0, w.centrifugal[i], strain_in, speed,
                                      inv_inertia, th * dt, s.flow[j])
        s.flow[j] = q
        w.slip[j] = slip
        w.belt_force[j] = force
        if j != crank:
            s.omega[j] = pulley.sense * (speed + th * dt * pulley.radius * force * inv_inertia)
    for j in range(n):
        nxt = j + 1 if j + 1 < n else 0
        net = s.flow[j] - s.flow[nxt]
        w.tension[j] = w.predicted[j] - w.compliance[j] * net
        s.content[j] += th * dt * net


@njit(cache=True, inline="always")
def step(p, lb, s, w, dt, crank_omega, water_pump_torque):
    """One step of ``dt`` [s]: the arm (:func:`belt_fmu.model.tensioner.advance_arm`, the
    discretized model's, from the hub load of the current span tensions: explicit, stable for
    steps below :func:`arm_step_limit`), the geometry at its new angle, the pulleys' loads
    (:func:`belt_fmu.model.drive.accelerate_pulleys`), the belt's flow and friction, the
    rotations."""
    centrifugal_tensions(p, lb, s, w)
    if p.roles[0].tensioner >= 0:
        hub_force(p, w, p.roles[0].tensioner)  # from this step's tensions
        advance_arm(p, s, w, dt)
        update_geometry(p, s, w, dt, False)
    for j in range(s.theta.shape[0]):
        s.theta[j] += (1.0 - THETA) * dt * s.omega[j]
    s.omega[p.roles[0].crank] = crank_omega
    accelerate_pulleys(p, s, w, dt, water_pump_torque)
    belt_flow(p, lb, s, w, dt)
    for j in range(s.theta.shape[0]):
        s.theta[j] += THETA * dt * s.omega[j]


@njit(cache=True, inline="always")
def health(p, lb, s, w):
    """OK, or NOT_FINITE for non-finite values or a span without belt."""
    for j in range(s.content.shape[0]):
        if not (np.isfinite(s.content[j]) and np.isfinite(s.omega[j]) and np.isfinite(s.flow[j])
                and np.isfinite(w.tension[j])):
            return NOT_FINITE
        if not s.content[j] > 0.0:
            return NOT_FINITE
    if not (np.isfinite(s.arm[0]) and np.isfinite(s.arm[1])):
        return NOT_FINITE
    return OK


@njit(cache=True)
def evaluate_outputs(p, lb, s, w, out):
    """All outputs of :func:`belt_fmu.model.outputs.output_specs`, at their positions, into
    ``out`` (SI units), from the state and the last step's tensions."""
    pulleys = p.pulleys
    roles = p.roles[0]
    n = pulleys.shape[0]
    crank = roles.crank
    t = roles.tensioner
    for j in range(n):
        hub_force(p, w, j)
    out[TENSIONER_ANGLE] = s.arm[0] if t >= 0 else 0.0
    out[TENSIONER_ANGLE_REL] = s.arm[0] - p.tensioner[0].installed_angle if t >= 0 else 0.0
    h = roles.headline
    out[BEARING_FORCE] = np.sqrt(w.hub_force[h, 0] ** 2 + w.hub_force[h, 1] ** 2)
    before = crank - 1 if crank > 0 else n - 1
    out[CRANK_TORQUE] = pulleys[crank].radius * (w.tension[before] - w.tension[crank])
    length = 0.0
    travel = 0.0
    for j in range(n):
        travel += s.flow[j + 1 if j + 1 < n else 0] * w.spring_length[j] * w.spring_length[j] / s.content[j]
        length += w.spring_length[j]
    out[BELT_SPEED] = travel / length
    reference = pulleys[crank].sense * s.omega[crank] * pulleys[crank].radius
    for j in range(n):
        k = PULLEY_BLOCK + j * PULLEY_STRIDE
        running = pulleys[j].sense * s.omega[j]
        out[k + SPEED] = running
        out[k + ANGLE] = pulleys[j].sense * s.theta[j]
        out[k + SLIP] = 1.0 - running * pulleys[j].radius / reference if reference != 0.0 else 0.0
        out[k + HUB_FORCE_X] = w.hub_force[j, 0]
        out[k + HUB_FORCE_Y] = w.hub_force[j, 1]
        out[k + HUB_FORCE] = np.sqrt(w.hub_force[j, 0] ** 2 + w.hub_force[j, 1] ** 2)
    for j in range(n):
        out[PULLEY_BLOCK + n * PULLEY_STRIDE + j * SPAN_STRIDE + SPAN_TENSION] = w.tension[j]


@njit(cache=True)
def run(y, work, so, wo, p, lb, n_steps, dt, crank_omega, water_pump_torque, out):
    """Entry from Python: ``n_steps`` steps of ``dt`` at constant inputs, then the outputs into
    ``out``. Returns (status, steps taken); the state is checked every 64 steps and at the
    end."""
    n = p.pulleys.shape[0]
    s, w = unpack(y, work, so, wo, n)
    status = OK
    taken = n_steps
    for k in range(n_steps):
        step(p, lb[0], s, w, dt, crank_omega, water_pump_torque)
        if (k + 1) % 64 == 0 or k == n_steps - 1:
            status = health(p, lb[0], s, w)
            if status != OK:
                taken = k + 1
                break
    evaluate_outputs(p, lb[0], s, w, out)
    return status, taken


@njit(cache=True)
def report(y, work, so, wo, p, lb, out):
    """Entry from Python: the outputs of the current state into ``out``."""
    s, w = unpack(y, work, so, wo, p.pulleys.shape[0])
    evaluate_outputs(p, lb[0], s, w, out)


@njit(cache=True)
def place_geometry(y, work, so, wo, p, arm_angle, installed):
    """Entry from Python: the full geometry at arm angle ``arm_angle`` into the work buffer
    (spring rates zero); with ``installed``, that arm angle is the installed one and its
    departure and arrival angles become the spans' reference ends (``w.reference``,
    ``w.reference_arrive``)."""
    s, w = unpack(y, work, so, wo, p.pulleys.shape[0])
    s.arm[0] = arm_angle
    update_geometry(p, s, w, 0.0, True)
    if installed:
        for j in range(w.reference.shape[0]):
            w.reference[j] = w.depart[j]
            w.reference_arrive[j] = w.arrive[j]
        update_springs(p, w, 0.0)
