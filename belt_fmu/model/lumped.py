"""The lumped rotational drive model: the second fidelity level, two to three orders of
magnitude faster than the discretized belt (docs/lumped-model.md).

Degrees of freedom: the pulley rotations (the crank's speed is the input), the tensioner arm
angle, and the belt as material: the unstretched content of each free span and of each
pulley's wrap. This is the classical rotational model of a front-end accessory drive
(Hwang, Perkins and Ulsoy, "Rotational response and slip prediction of serpentine belt
drive systems", ASME J. Vibration and Acoustics, 1994: pulleys and arm as rigid bodies,
each span a longitudinal spring-damper of its free length, belt inertia only in the
centrifugal tension) with the belt's creep and gross slip on every pulley instead of the
no-slip kinematics of that paper, and the belt's mass carried by the pulleys and the arm
(:func:`belt_inertias`):

* **span springs**: span j (pulley j -> j + 1) has the spring length ``G_j``, its free
  length plus the arcs by which its ends moved from their installed tangent points
  (:func:`update_springs`; the tangent formula of :mod:`belt_fmu.model.geometry`, the
  tensioner pulley at its arm angle, so the arm's kinematics is exact), and the tension
  ``T_j = EA (G_j / S_j - 1) + c_a d/dt (G_j / S_j)`` (Kelvin-Voigt), ``S_j`` its
  unstretched content;
* **material flow**: belt runs onto pulley j at the unstretched rate ``q_j``, at the speed
  ``v_j = q_j (1 + eps_(j-1))``. The belt on the pulley's installed wrap arc,
  ``W_j``, is carried through at the strain it ran on with and creeps toward its spans'
  strains as the friction law's slope lets it (:func:`wrap_target`); the spans' contents
  follow ``dS_j/dt = q_j - q_(j+1) - dW_j/dt``. The friction sees the belt's mean speed over
  the wrap, ``v_j - (1 + eps_(j-1)) (dW_j/dt) / 2`` (the wrap's belt leaves at
  ``q_j - dW_j/dt``; :func:`predict_belt`), less the pulley's surface speed ``R_j w_j``: the
  gross slip on that pulley (belt faster than the pulley surface positive). With no gross
  slip this is Grashof/Firbank creep: a driven pulley turns slower than the belt by
  ``(T_tight - T_slack) / (EA + T_tight)``;
* **sliding arcs** (Firbank, "Mechanics of the belt drive", Int. J. Mech. Sci. 12, 1970):
  the belt adheres to a wrap at the strain it ran on with, ``wrap_content``, and slides on
  an arc at each end whose span's tension differs from that: at the exit, where its tension
  moves to the leaving span's, and at the entry, when the arriving span's tension swings
  faster than the wrap's belt runs through. Such an arc holds less or more belt than the
  adhering belt would; the difference belongs to the span at that end (``release``,
  :func:`wrap_arcs`), and it changes at once with that span's tension: a span leaving a
  pulley that transmits a torque is softer, as if ``R |dT| / (mu T_out)`` longer. Without
  the exit arcs the arm's bounce on the tensioner's spans was 10 % too high in frequency
  and half as damped as in the discretized belt; without the entry arcs a span whose
  tension swings by most of its mean was too stiff, and the test drive's arm resonance
  (docs/lumped-model.md) lay 7 % too high;
* **the tensioner spans' string modes** (:func:`prepare_strings`; Beikmann, Perkins and
  Ulsoy, "Free vibration of serpentine belt drive systems", ASME J. Vibration and Acoustics
  118, 1996): the first transverse mode of each of the tensioner's two spans, driven by the
  arm's swing across them and implicit with the arm; they take the energy of the arm's
  bounce on its spans (docs/lumped-model.md);
* **span ends** (:func:`sink_compliances`, :func:`bending_compliances`): under tension a
  wrap's belt sinks into the pulley's contact and its cord runs shorter, and a belt with
  bending stiffness leaves each pulley an arc ``sqrt(EI / T)`` before the tangent point;
  span j takes ``c_j (T_j - m'v^2)`` more belt, released with the sliding arc's and, like
  it, implicit in the span's own tension (docs/lumped-model.md);
* **capstan** (Simscape Belt Pulley (MathWorks), [Simscape Belt Pulley]: the Euler-Eytelwein equation with
  centrifugal force and a velocity-dependent coefficient): the belt over a wrap is massless,
  so the friction it transmits is the difference of its end tensions, and

      T_out - m' v^2 = (T_in - m' v^2) exp(mu_s(v_slip) theta)

  with the wrap angle theta from the geometry and mu_s the friction law's coefficient at the
  gross slip velocity, odd in it, capped by the effective coefficient ``mu / sin(phi/2)``
  (the poly-V wedge). Below the cap the belt creeps elastically; a load beyond it makes the
  pulley slip grossly. For the laws with velocity dependence (tanh, creep_polynomial and the
  Stribeck curve of LuGre and GMS) mu_s is theirs, the Stribeck curve taken at the speed the
  belt creeps over the sliding arc (:func:`slip_coefficient`); the bristle and Dahl laws are Coulomb in
  steady sliding and are regularized like tanh with :data:`STICK_VELOCITY`. The state laws
  (Dahl, LuGre, GMS) build their coefficient over the distance the belt slides on the wrap
  from its entry, so a wrap develops only a share of it, growing with the gross slip
  (:func:`developed_share`);
* **pulleys**: load torques (the water-pump input, the accessory tables) and bearing damping
  as in the discretized model (:func:`belt_fmu.model.drive.accelerate_pulleys`), the belt's
  torque ``R (T_out - T_in)``;
* **tensioner**: spring, viscous damping, asymmetric Coulomb friction and stops from the
  TENSIONER record and kernels (:mod:`belt_fmu.model.tensioner`), loaded by the belt's hub
  force ``(T_in - m'v^2) u_in + (T_out - m'v^2) u_out``.

Integration (:func:`step`, 1 ms at most, :data:`MAX_STEP`): the span springs are stiff
against the small pulleys (an idler on a short span: above 1 kHz) and the friction
regularization stiffer still, so after the explicit parts (the pulleys' loads, the wraps'
contents) every pulley's flow, speed and friction and the tensioner arm are solved together,
implicit: the capstan equation of each pulley and the arm's equation of motion at the end of
the step, with the spans' tensions linear in the flows and the arm angle (the spans'
contents and pulley speeds by the generalized trapezoidal rule, :data:`THETA`, the arm by
the trapezoidal rule), by Newton's method on a cyclic tridiagonal system bordered by the arm
(:func:`solve_step`). Stable at any step: at 1 ms the tensioner amplitude under a
firing-order irregularity stays within 4 % of the converged one, at the arm resonance too
(docs/lumped-model.md, "Time step"). Outputs come from the same output registry as the
discretized model's (:mod:`belt_fmu.model.outputs`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .drive import accelerate_pulleys
from .friction import (LAW_CREEP_POLYNOMIAL, LAW_DAHL, LAW_GMS, LAW_LUGRE, LAW_TANH, friction_coefficient,
                       stribeck_with_slope, tanh)
from .outputs import (ANGLE, BEARING_FORCE, BELT_SPEED, CRANK_TORQUE, HUB_FORCE, HUB_FORCE_X, HUB_FORCE_Y, PULLEY_BLOCK,
                      PULLEY_STRIDE, SLIP, SPAN_STRIDE, SPAN_TENSION, SPEED, TENSIONER_ANGLE, TENSIONER_ANGLE_REL,
                      accumulate_outputs, mean_outputs)
from .tensioner import arm_pulley_center, arm_support_torque, arm_torque

#: [m/s] regularization of the Coulomb laws (bristle, Dahl) in steady sliding: tanh(4 v / v)
#: reaches 0.999 of the coefficient at this gross slip velocity ([Simscape Belt Pulley]'s velocity threshold)
STICK_VELOCITY = 1.0e-3
#: [m/s] belt speed below which a wrap's slid distance is taken at this speed
#: (:func:`developed_share`): a belt at rest renews nothing on its wraps
ARC_SPEED_FLOOR = 1.0e-3
#: erfcx(y) = exp(y^2) erfc(y) from its asymptotic series above this argument (erfc underflows
#: near 26; the series' first omitted term is below 3e-10 here)
ERFCX_ASYMPTOTIC = 20.0
#: [s] longest time step: an accuracy bound. The step is implicit in everything stiff
#: (:func:`solve_step`), so it is stable at any length; at 1 ms the tensioner amplitude under a
#: firing-order irregularity and the step responses stay within a few percent of the converged
#: ones (0.05 ms) up to 3000 rpm (docs/lumped-model.md, "Time step"; fmu_tests/test_lumped.py)
MAX_STEP = 1.0e-3
TWO_PI = 2.0 * math.pi
#: weight of the end of the step in the spans' contents and the pulleys' speeds (the
#: generalized trapezoidal rule, T. J. R. Hughes, "The finite element method", 1987, ch. 8):
#: 1 is implicit Euler, which damps a mode of frequency w by 1 / sqrt(1 + (w dt)^2) per step
#: (45 % of a 60 Hz tensioner mode's energy per period at 0.5 ms); 1/2, the trapezoidal
#: rule, keeps the energy of linear modes but multiplies a mode far stiffer than the step by
#: -1 each step: a pulley sliding on a flat friction law alternated between sliding and
#: sticking from step to step, and after a crank speed step of 1000 rpm under a loaded water
#: pump the step's equations lost their solution. 0.51 multiplies such a mode by -0.96 and
#: takes about 2 (THETA - 1/2) (w dt)^2 of a mode's energy per step (0.13 % per 1 ms step at
#: 40 Hz)
THETA = 0.51
#: [m/s] the flows' solution accuracy: over a 1 ms step it misplaces 1e-10 m of belt
#: between two spans (1e-4 N of tension on a 0.1 m span), which the next step's equations
#: see and correct; the belt's total content is conserved exactly whatever the tolerance
#: (each flow leaves one span and enters the next)
FLOW_TOLERANCE = 1.0e-7
#: [rad] the arm angle's solution accuracy (1e-11 m at the tensioner pulley of a 0.1 m arm)
ANGLE_TOLERANCE = 1.0e-10
#: largest change of the exponent theta mu_s of a pulley's capstan equation that one Newton
#: correction may make, predicted by its linearization: a trust region for the friction
#: laws' steep regularization (a correction that would cross it is shortened)
EXPONENT_STEP = 0.5
#: Gauss-Seidel sweeps of the fallback (:func:`relax_step`) before a step is reported as
#: not converged
MAX_SWEEPS = 2000
#: Newton iterations of a step before it falls back to :func:`relax_step` (a step takes 1
#: in steady running, up to 7 after a load step; an arm coming to rest on its Coulomb
#: friction, approached from the sliding side where the law is flat, about 20)
MAX_ITERATIONS = 50
#: attempts more of a step whose equations Newton's method and the fallback did not solve,
#: each with the sliding arcs' compliance over the step halved (:func:`solve_step`)
ARC_RETRIES = 2
#: the sliding arcs' compliance a step takes implicitly, at most this many times its span's
#: own, G / EA (:func:`predict_belt`; the release itself stays exact, and what the cap leaves
#: out the next step takes explicitly). An arc's tangent compliance grows as 1 / T_span when
#: the span's tension falls far below its wrap's adhesion tension: after a crank speed drop
#: from 700 to 0 rpm under a loaded pump the test drive's spans went nearly slack, and
#: linearized at the step's start that compliance left the step's equations without a
#: solution. It binds where ``|1 - T_a / T_span| > 2 mu L / R`` (an arc's ``R |1 - T_a / T_span|
#: / (EA mu)`` against ``L / EA``): a span's tension a small fraction of its wrap's adhesion
#: tension, or a pulley near its capstan limit; the swings of the arm resonance stay below it
ARC_COMPLIANCE_LIMIT = 2.0
OK = 0
NOT_FINITE = 1
NOT_CONVERGED = 2
#: ``n_steps`` of a :func:`run` that places the geometry at an arm angle instead of stepping,
#: and of one that places it at the installed arm angle (the spans' reference ends)
PLACE = -1
PLACE_INSTALLED = -2

#: The lumped belt (one record).
LUMPED_BELT = np.dtype(
    [
        ("axial_stiffness", "f8"),  # EA [N]
        ("axial_damping", "f8"),  # Kelvin-Voigt c_a [N s]
        ("mass_per_length", "f8"),  # m' [kg/m]
        ("unstretched_length", "f8"),  # total unstretched cord length [m]
        ("max_coefficient_ratio", "f8"),  # largest friction coefficient / mu of the law (static ratio) [-]
        ("average_outputs", "f8"),  # 1: the outputs are their means over each run ([drive] output_mode = "average")
        ("transverse_damping", "f8"),  # the spans' transverse damping per length [N s/m^2]
    ]
)

#: the state record (:data:`LUMPED_STATE`), the state vector y: (name, size in pulleys p or fixed, meaning)
LUMPED_STATE_LAYOUT = (
    ("theta", "p", "pulley rotation angles [rad], CCW"),
    ("omega", "p", "pulley angular velocities [rad/s], CCW"),
    ("arm", 2, "tensioner arm angle psi [rad] (polar angle of the pulley centre about the pivot, CCW) and rate"),
    ("content", "p", "unstretched belt content S_j of span j [m]"),
    ("flow", "p", "unstretched belt flow q_j onto pulley j (from span j - 1), travel direction [m/s]"),
    ("wrap_content", "p", "unstretched belt W_j held on pulley j's installed wrap arc at its adhesion strain [m]"),
    ("release", "p", "belt D_j released into span j (part of S_j) at its ends: by the sliding arcs at pulley j's "
                     "exit and pulley j + 1's entry, and by its ends' sink and bending [m]"),
    ("string", "p", "first transverse string mode of span j, its amplitude at mid-span [m] (the tensioner's two "
                    "spans; 0 elsewhere)"),
    ("string_rate", "p", "... its rate [m/s]"),
)
#: the work record (:data:`LUMPED_WORK`): geometry and diagnostics of the last step, scratch
LUMPED_WORK_LAYOUT = (
    ("tension", "p", "axial force (tension) of span j [N]"),
    ("spring_length", "p", "spring length G_j of span j: its free length and the shifts of its ends [m]"),
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
    ("predicted", "p", "scratch: span j's end-of-step tension without flow, arm held [N]"),
    ("compliance", "p", "scratch: its decrease per unit net outflow [N s/m]"),
    ("lever", "p", "dG_j/dpsi: change of span j's spring length with the arm angle [m/rad] (0 off the tensioner)"),
    ("coupling", "p", "scratch: dT_j/dpsi of the end-of-step tension [N/rad]"),
    ("free_speed", "p", "scratch: pulley j's running speed at the end of the step without the belt's new force [rad/s]"),
    ("iterations", 1, "Newton iterations of the last step"),
    ("jacobian", ("p+1", "p+1"), "scratch: the step's Newton matrix (flows and arm angle)"),
    ("newton", "p+1", "scratch: its right-hand side (the residuals, negated), then the solution"),
    ("correction", "p+1", "scratch: the Newton correction of the flows and the arm angle"),
    ("flow_start", "p", "scratch: the flows at the start of the step (the fallback's start)"),
    ("arm_friction_slope", 1, "scratch: d(friction torque)/d(arm rate) of the arm at the Newton iterate [N m s/rad]"),
    ("sweep_upper", "p", "scratch: the tridiagonal elimination's upper factors"),
    ("sweep_pivot", "p", "scratch: ... its inverse pivots"),
    ("corner_solution", "p", "scratch: the solution for the cyclic corner (Sherman-Morrison)"),
    ("border_solution", "p", "scratch: the solution for the arm's column"),
    ("slip_slope", "p", "scratch: d(theta_j mu_s)/d v_slip on pulley j at the Newton iterate [s/m]"),
    ("hub_force", ("p", 2), "force of the belt on each pulley [N]"),
    ("centers", ("p", 2), "current pulley centres [m]"),
    ("center_velocity", ("p", 2), "their velocities [m/s]"),
    ("arm_work", 1, "scratch of the arm's and loads' friction solves"),
    ("port_torque", "p", "input load torque of each pulley [N m] (belt_fmu.model.drive.pulley_loads); "
                         "zero: the lumped model has no ports"),
    ("release_slope", "p", "scratch: dD_j/dT_j at the start of the step [m/N]"),
    ("tension_start", "p", "scratch: span j's tension at the start of the step [N]"),
    ("creep_speed", "p", "speed of the belt over pulley j's sliding arc, |q_j| |T_j - T_(j-1)| / EA, at the start of "
                         "the step [m/s]"),
    ("arc_curve", "p", "the creep's share of the distance the belt slides on pulley j from its entry, x = "
                       "arc_curve phi^2 at angle phi: mu R (T_(j-1) - m'v^2) / (2 EA), start of the step [m]"),
    ("output_sample", "outputs", "the outputs of the state (sampled), kept for the next interval's start when they "
                                 "are averaged"),
    ("output_mean", "outputs", "averaged outputs: the running time-integral of the outputs over the interval, then "
                               "the reported outputs (their means, and the sampled values of outputs not averaged)"),
    ("end_compliance", "p", "belt span j takes at its ends per newton of its effective tension: its two wraps' sink "
                            "into the contact and the belt its bending frees at each end [m/N]"),
    ("transverse_lever", "p", "the tensioner pulley's displacement across span j per unit arm angle, along the "
                              "span's normal (-e_y, e_x) [m/rad] (0 off the tensioner)"),
    ("string_coupling", "p", "scratch: m' L lever / pi, the arm's inertial coupling to span j's string mode [kg m]"),
    ("string_shift", "p", "scratch: the string's rate change over the step with the arm's rate held [m/s]"),
    ("string_gain", "p", "scratch: ... its change per unit change of the arm's rate [m/rad]"),
    ("string_force", "p", "the string mode's pull across span j on its two pulleys, (T - m'v^2) pi q / L [N]"),
    ("wrap_drift", "p", "the belt's mean speed over wrap j less its entry speed, -(1 + eps) (dW_j/dt) / 2 [m/s]"),
    ("bank", "p", "length of pulley j's installed wrap arc, its cord line from the installed arrival to the installed "
                  "departure point [m]"),
)

#: the most pulleys a drive run by the lumped model may have: the size of its records'
#: per-pulley fields
MAX_PULLEYS = 16


def shape(extent, p: int) -> tuple[int, ...]:
    """Shape of a table entry's view for p pulleys: ``extent`` is a size, "p", "p+1",
    "outputs" (the length of the output vector) or a tuple of them."""
    extent = extent if isinstance(extent, tuple) else (extent,)
    sizes = {"p": p, "p+1": p + 1, "outputs": PULLEY_BLOCK + p * (PULLEY_STRIDE + SPAN_STRIDE)}
    return tuple(sizes.get(e, e) for e in extent)


def record(layout) -> np.dtype:
    """The record of a table (:data:`LUMPED_STATE_LAYOUT`, :data:`LUMPED_WORK_LAYOUT`): a
    float64 field for each entry, of its shape for :data:`MAX_PULLEYS` pulleys, of which a
    drive of p pulleys uses the first p (p + 1, the outputs of p pulleys)."""
    return np.dtype([(name, np.float64, shape(extent, MAX_PULLEYS)) for name, extent, _ in layout])


#: The state and the work record. The kernels take each as one array of one record and name
#: its fields (``s.content[j]``, ``w.tension[j]``): numba addresses every field from the
#: record's one address at a constant offset (docs/performance.md, "The work record").
LUMPED_STATE = record(LUMPED_STATE_LAYOUT)
LUMPED_WORK = record(LUMPED_WORK_LAYOUT)


def views(values, layout, p: int) -> dict:
    """The fields of ``values`` (an array of one record of ``layout``, :func:`record`) by name,
    each cut to the shape its table entry has for p pulleys: views, for Python."""
    return {name: values[name][0][tuple(slice(0, k) for k in shape(extent, p))] for name, extent, _ in layout}


def positions(layout, p: int) -> np.ndarray:
    """Positions, among the float64 values of ``layout``'s record, of those a drive of p
    pulleys uses (:func:`views`; the rest is room for :data:`MAX_PULLEYS` pulleys), in record
    order."""
    dtype = record(layout)
    values = np.arange(dtype.itemsize // 8, dtype=np.float64).view(dtype)
    return np.concatenate([view.ravel() for view in views(values, layout, p).values()]).astype(np.int64)


# ------------------------------------------------------------------------------------ geometry
@njit(cache=True, inline="always")
def update_span(p, w, a):
    """Geometry of span a (pulley a -> a + 1) at the current centres ``w.centers``: its
    departure and arrival angles, length and direction, by the tangent formula of
    :mod:`belt_fmu.model.geometry` (Scania thesis (Vahedi 2012) app. 12.1, generalized):
    the belt leaves a at ``alpha = atan2(d) - s_a acos(k / D)``, ``k = rho_a - s_a s_b rho_b``,
    and arrives on b at alpha (open span) or alpha + pi (cross span); length
    ``L = sqrt(D^2 - k^2)``. With ``cos acos(k / D) = k / D`` and ``sin acos(k / D) = L / D``
    the angle's cosine and sine are ``(d_x k + s_a d_y L) / D^2`` and
    ``(d_y k - s_a d_x L) / D^2``: one arctangent instead of four trigonometric functions."""
    n = p.pulleys.shape[0]
    b = a + 1 if a + 1 < n else 0
    pa = p.pulleys[a]
    pb = p.pulleys[b]
    dx = w.centers[b, 0] - w.centers[a, 0]
    dy = w.centers[b, 1] - w.centers[a, 1]
    dist2 = dx * dx + dy * dy
    k = pa.radius - pa.sense * pb.sense * pb.radius
    length = np.sqrt(max(dist2 - k * k, 0.0))
    cosine = (dx * k + pa.sense * dy * length) / dist2
    sine = (dy * k - pa.sense * dx * length) / dist2
    if length == 0.0:  # overlapping circles (refused by the layout checks): keep a unit direction
        norm = np.sqrt(cosine * cosine + sine * sine)
        cosine /= norm
        sine /= norm
    alpha = np.arctan2(sine, cosine)
    w.span_length[a] = length
    w.depart[a] = alpha
    w.arrive[b] = alpha if pa.sense == pb.sense else alpha + np.pi
    # travel direction: the tangent of pulley a's wrap sense at the departure point
    w.direction_x[a] = -pa.sense * sine
    w.direction_y[a] = pa.sense * cosine


@njit(cache=True, inline="always")
def update_wrap(p, w, j):
    """Wrap angle [rad] of pulley j, in [0, 2 pi), from its departure and arrival angles."""
    wrap = p.pulleys[j].sense * (w.depart[j] - w.arrive[j])
    w.wrap[j] = wrap - TWO_PI * np.floor(wrap / TWO_PI)


@njit(cache=True, inline="always")
def update_spring(p, w, j):
    """Spring length G_j of span j: its free length plus the arcs by which its two ends moved
    from their installed points (:func:`update_springs`)."""
    n = p.pulleys.shape[0]
    b = j + 1 if j + 1 < n else 0
    left = p.pulleys[j].sense * (w.depart[j] - w.reference[j])
    left -= TWO_PI * np.floor(left / TWO_PI + 0.5)  # in [-pi, pi)
    right = p.pulleys[b].sense * (w.reference_arrive[b] - w.arrive[b])
    right -= TWO_PI * np.floor(right / TWO_PI + 0.5)
    w.spring_length[j] = w.span_length[j] + p.pulleys[j].radius * left + p.pulleys[b].radius * right


@njit(cache=True, _nrt=False)
def update_springs(p, w):
    """Wrap angles and the spans' spring lengths G_j from the span geometry.

    The belt on a pulley's installed wrap arc (from its installed arrival to its installed
    departure point, ``w.reference_arrive``, ``w.reference``) is held by the pulley
    (``wrap_content``); span j's spring is its free length plus the arcs by which its two
    ends have moved from their installed points (a moved end unwraps belt from the pulley
    into the span or wraps it on). So a moved pulley changes each span's spring by the
    projection of its displacement on the span (envelope of the tangent), the hub forces
    along the spans are the forces of the spans' tensions ([Scania thesis] eq. 12.23) and the
    belt's coupling to the arm is conservative; and a span's stiffness is EA over its free
    length, the span spring of Hwang, Perkins and Ulsoy (1994)."""
    for j in range(p.pulleys.shape[0]):
        update_wrap(p, w, j)
        update_spring(p, w, j)


@njit(cache=True, inline="always")
def installed_wrap(p, w, j):
    """Length [m] of pulley j's installed wrap arc (cord line), from the reference angles."""
    wrap = p.pulleys[j].sense * (w.reference[j] - w.reference_arrive[j])
    return p.pulleys[j].radius * (wrap - TWO_PI * np.floor(wrap / TWO_PI))


@njit(cache=True, _nrt=False)
def update_geometry(p, s, w, full):
    """Centres and path for the arm angle ``s.arm[0]``: every span if ``full``, else the
    tensioner pulley's centre, its two spans and the three wraps they end on (nothing else
    moves)."""
    n = p.pulleys.shape[0]
    t = p.roles[0].tensioner
    if full:
        for j in range(n):
            w.centers[j, 0] = p.pulleys[j].x
            w.centers[j, 1] = p.pulleys[j].y
            w.center_velocity[j, 0] = 0.0
            w.center_velocity[j, 1] = 0.0
    if t >= 0:
        arm_pulley_center(p.tensioner[0], s.arm, w.centers, w.center_velocity, t)
    if full:
        for a in range(n):
            update_span(p, w, a)
        update_springs(p, w)
    elif t >= 0:
        i = t - 1 if t > 0 else n - 1
        nxt = t + 1 if t + 1 < n else 0
        update_span(p, w, i)
        update_span(p, w, t)
        update_wrap(p, w, i)
        update_wrap(p, w, t)
        update_wrap(p, w, nxt)
        update_spring(p, w, i)
        update_spring(p, w, t)


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
@njit(cache=True, inline="always")
def erfcx(y):
    """The scaled complementary error function exp(y^2) erfc(y), y >= 0 (Abramowitz and
    Stegun, "Handbook of mathematical functions", 1964, 7.1.23, for large y)."""
    if y < ERFCX_ASYMPTOTIC:
        return math.exp(y * y) * math.erfc(y)
    r = 1.0 / (y * y)
    return (1.0 - 0.5 * r * (1.0 - 1.5 * r * (1.0 - 2.5 * r))) / (y * math.sqrt(math.pi))


@njit(cache=True, inline="always")
def relaxation_deficit(a, c, wrap):
    """``D = int_0^wrap exp(-a phi - c phi^2) dphi`` and dD/da (a, c >= 0): completing the
    square, ``D = sqrt(pi) / (2 sqrt c) (erfcx(y0) - erfcx(y1) exp(-a wrap - c wrap^2))``,
    ``y0 = a / (2 sqrt c)``, ``y1 = y0 + sqrt(c) wrap`` (Abramowitz and Stegun 7.4.32);
    ``dD/da = -int phi exp(..) = -(1 - exp(-a wrap - c wrap^2) - a D) / (2 c)``."""
    if c * wrap * wrap < 1e-12:
        if a * wrap < 1e-12:
            return wrap, -0.5 * wrap * wrap
        end = math.exp(-a * wrap)
        deficit = (1.0 - end) / a
        return deficit, (wrap * end - deficit) / a
    root = math.sqrt(c)
    y0 = 0.5 * a / root
    end = math.exp(-(a + c * wrap) * wrap)
    deficit = 0.5 * math.sqrt(math.pi) / root * (erfcx(y0) - erfcx(y0 + root * wrap) * end)
    return deficit, -(1.0 - end - a * deficit) / (2.0 * c)


# compiled apart, not inlined: both capstan solves call it, and only for the state laws
@njit(cache=True, _nrt=False)
def developed_share(law, g, along, curve, wrap):
    """(eta, d eta/d along): the share of a state law's steady coefficient ``g`` that the belt
    develops on average over a wrap of ``wrap`` [rad] in steady sliding, 1 for the other laws.

    A state law (Dahl, LuGre, GMS) builds its friction with the distance x the belt has slid
    over the pulley, not at once: for constant direction the Dahl and LuGre coefficient is
    ``g (1 - exp(-x / x_r))``, ``x_r = g / sigma`` (Dahl, "A solid friction model", Aerospace
    Corp. TOR-158, 1968; Canudas de Wit, Olsson, Astrom and Lischinsky, "A new model for
    control of systems with friction", IEEE TAC 40(3), 1995, sigma0), and each GMS element
    ``min(sigma_k x, g)`` (Al-Bender, Lampaert and Swevers, "The generalized Maxwell-slip
    model", IEEE TAC 50(11), 2005, eq. 9). The belt enters a wrap with none (on the span it
    touched nothing) and slides from the entry at the gross slip plus its creep, which grows
    as its tension moves away from the entry tension T_a: ``v_s = v_g + v |T - T_a| / EA``
    (Firbank, "Mechanics of the belt drive", Int. J. Mech. Sci. 12, 1970). Over the transit
    ``dt = R dphi / v`` it has slid ``x(phi) = along phi + curve phi^2``, ``along = R v_g /
    v`` and ``curve = mu R T_a / (2 EA)`` (T - T_a ~ mu T_a phi near the entry, where the
    deficit lies). The capstan exponent is ``g (wrap - D)``, D the integral of the
    undeveloped share over the wrap, so ``eta = 1 - D / wrap``: a wrap transmits its full
    coefficient only beyond a gross slip of several x_r per wrap transit, which the
    discretized belt's nodes, each entering with its state at rest, show as a speed loss
    rising with the load before the capstan limit (docs/lumped-model.md)."""
    if wrap <= 0.0:
        return 1.0, 0.0
    if law.law == LAW_DAHL or law.law == LAW_LUGRE:
        relaxation = g / (law.dahl_stiffness if law.law == LAW_DAHL else law.lugre_stiffness)
        deficit, slope = relaxation_deficit(along / relaxation, curve / relaxation, wrap)
        return 1.0 - deficit / wrap, -slope / (relaxation * wrap)
    if law.law == LAW_GMS:
        # element k develops fully at x_k = g / sigma_k, at phi_k: curve phi^2 + along phi = x_k
        deficit = 0.0
        slope = 0.0
        weights = 0.0
        for k in range(law.gms_count):
            full = g / law.gms_stiffness[k]
            rate = along + math.sqrt(along * along + 4.0 * curve * full)
            u = min(2.0 * full / rate, wrap) if rate > 0.0 else wrap  # nothing slid: the element never develops
            weight = law.gms_weight[k]
            deficit += weight * (u - (0.5 * along * u * u + curve * u * u * u / 3.0) / full)
            slope -= weight * 0.5 * u * u / full
            weights += weight
        return 1.0 - deficit / (weights * wrap), -slope / (weights * wrap)
    return 1.0, 0.0


@njit(cache=True, inline="always")
def slip_coefficient(law, mu, slip, belt_speed, creep, radius, wrap, curve):
    """Friction coefficient mu_s at gross slip ``slip`` [m/s] (odd in it) and its derivative:
    the law's steady velocity dependence (module docstring). The Stribeck laws (LuGre, GMS)
    take their curve at the speed the belt slides over the pulley's sliding arc, the gross
    slip plus the creep ``creep`` [m/s]: on that arc the belt's strain changes between its
    spans' while it runs on, at |v| |T_t - T_s| / EA relative to the pulley [Firbank 1970],
    already beyond the Stribeck velocity in a loaded drive, so that the arc holds the
    kinetic coefficient, not the static one, as the discretized belt's nodes find. The state
    laws (Dahl, LuGre, GMS) develop that coefficient over the distance the belt slides on
    the wrap (:func:`developed_share`: the pulley's ``radius``, ``wrap`` and the creep's
    ``curve``)."""
    v = abs(slip)
    sign = 1.0 if slip >= 0.0 else -1.0
    if law.law == LAW_TANH or law.law == LAW_CREEP_POLYNOMIAL:
        coef, slope = friction_coefficient(law, mu, v, belt_speed)
        return sign * coef, slope
    vt = STICK_VELOCITY / 4.0
    th = tanh(v / vt)
    dth = (1.0 - th * th) / vt
    along_rate = radius / max(abs(belt_speed), ARC_SPEED_FLOOR)  # d along / d|slip|
    if law.law == LAW_LUGRE or law.law == LAW_GMS:
        g, dg = stribeck_with_slope(law, mu, v + creep)
        eta, deta = developed_share(law, g, v * along_rate, curve, wrap)
        coef, dcoef = g * eta, dg * eta + g * deta * along_rate
        extra = law.lugre_viscous * slip if law.law == LAW_LUGRE else 0.0
        return sign * coef * th + extra, dcoef * th + coef * dth + (law.lugre_viscous if law.law == LAW_LUGRE else 0.0)
    if law.law == LAW_DAHL:
        eta, deta = developed_share(law, mu, v * along_rate, curve, wrap)
        return sign * mu * eta * th, mu * (deta * along_rate * th + eta * dth)
    return sign * mu * th, mu * dth


# ------------------------------------------------------------------------------------ the parts
@njit(cache=True, inline="always")
def wrap_arcs(radius, mu, wrap, adhesion, arriving, leaving, ea):
    """(E, dE/dT_in, D, dD/dT_out) of a wrap's two sliding arcs (Firbank 1970; Johnson,
    "Contact mechanics", 1985): the belt [m] each releases into its span beyond what the wrap
    would hold at its adhesion strain, the entry's into the arriving span and the exit's into
    the leaving one, and each one's derivative in its own span's tension [m/N].

    On a wrap the belt sticks at the strain it ran on with (tension ``adhesion``). Where a
    span's tension differs from it, the belt slides on an arc at that end, over which its
    tension moves exponentially to the span's (all effective tensions, T - m'v^2, the arc's
    Euler-Eytelwein relation): at the exit as in steady creep, and at the entry when the
    arriving span's tension swings faster than the belt it brought runs through the wrap.
    With ``rho = T_span / adhesion`` an arc is ``|ln rho| / mu`` long, and the material at its
    end lies ``R adhesion (rho - 1 - ln rho) sign(ln rho) / (EA mu)`` beyond where adhering
    belt would put it; ``R |1 - 1/rho| / (EA mu)`` per newton of the span's tension: the span
    acts as if ``R |T_span - adhesion| / (mu T_span)`` longer (Firbank's softening of a span by
    its creep arc). Two arcs longer together than the wrap (gross slip, or both spans far from
    the adhesion tension) share it, sliding at the coefficient their ratios need,
    ``(|ln rho_in| + |ln rho_out|) / theta``. Tensions are floored at 1 N (a slack end holds
    no arc)."""
    if wrap <= 0.0:
        return 0.0, 0.0, 0.0, 0.0
    a = max(adhesion, 1.0)
    c = max(arriving, 1.0)
    b = max(leaving, 1.0)
    inverse = 1.0 / a
    log_in = np.log(c * inverse)
    log_out = np.log(b * inverse)
    spread = abs(log_in) + abs(log_out)  # mu times the two arcs' lengths
    shared = spread > mu * wrap
    mu_arc = spread / wrap if shared else mu
    scale = radius / (ea * mu_arc)
    entry, entry_slope = arc_release(scale, shared, mu_arc * wrap, a, c, log_in)
    exit_, exit_slope = arc_release(scale, shared, mu_arc * wrap, a, b, log_out)
    return entry, entry_slope, exit_, exit_slope


@njit(cache=True, inline="always")
def arc_release(scale, shared, spread, adhesion, span, log):
    """(release [m], d release / d span [m/N]) of one sliding arc of :func:`wrap_arcs`, from
    the ``adhesion`` tension to the ``span``'s (``log`` = ln(span / adhesion)); ``scale`` = R /
    (EA mu_arc) at the arcs' coefficient mu_arc; ``shared``: that coefficient is what the
    wrap's two arcs need to fit it (``spread`` = mu_arc theta), and it falls as this span's
    tension moves toward the adhesion tension."""
    excess = span - adhesion - adhesion * log  # adhesion (rho - 1 - ln rho) >= 0
    slope = abs(1.0 - adhesion / span)
    if shared:
        slope -= excess / (span * spread)
    return (scale if log >= 0.0 else -scale) * excess, scale * slope


@njit(cache=True, inline="always")
def adhesion_tension(bank, content, centrifugal, ea):
    """[N] The effective tension T - m'v^2 at which a wrap of installed length ``bank`` [m]
    holds the unstretched belt ``content`` [m]: ``EA (bank / content - 1) - centrifugal``."""
    return ea * (bank / content - 1.0) - centrifugal


@njit(cache=True, inline="always")
def slid_wrap(bank, content, arriving, leaving, mu, wrap, centrifugal, ea):
    """[m] The belt content of a wrap of installed length ``bank`` [m] whose adhesion content
    is ``content`` [m], after its sliding arcs (:func:`wrap_arcs`) have met: where both spans'
    effective tensions ``arriving`` and ``leaving`` [N] lie so far on the same side of the
    adhesion tension that the two arcs would overlap, the whole wrap slides and keeps no
    memory of the strain it ran on with. Its tension then rises (or falls) exponentially from
    both ends to the peak ``T_p = sqrt(T_in T_out) exp(+-mu theta / 2)`` where the arcs meet,
    and its adhesion content becomes that of ``T_p`` (``centrifugal`` m'v^2 [N] added back).
    Otherwise ``content`` is returned unchanged."""
    a = max(adhesion_tension(bank, content, centrifugal, ea), 1.0)
    c = max(arriving, 1.0)
    b = max(leaving, 1.0)
    if (c - a) * (b - a) <= 0.0:  # the adhesion tension between the spans': the arcs do not meet
        return content
    spread = np.log(a * a / (c * b))  # ln(a / c) + ln(a / b): the two arcs' lengths, times mu
    if abs(spread) <= mu * wrap:
        return content
    peak = np.sqrt(c * b) * np.exp(0.5 * mu * wrap if spread > 0.0 else -0.5 * mu * wrap)
    return bank / (1.0 + (peak + centrifugal) / ea)


def installed_tension(path, belt) -> float:
    """[N] the belt's uniform tension as installed on ``path`` (:class:`belt_fmu.model.geometry.
    BeltPath`, the installed geometry): the layout's pretension, or what its unstretched
    length makes of the path."""
    if belt.pretension_N is not None:
        return belt.pretension_N
    return max(belt.axial_stiffness_N * (path.length / belt.unstretched_length_m - 1.0), 0.0)


def sink_compliances(path, belt, contact) -> np.ndarray:
    """[m/N] per span j (pulley j -> j + 1): the belt the span gains per newton of its effective
    tension as its two wraps sink into the contact. A wrap of angle theta and cord radius R
    under the effective tension T presses the contact with T / R per unit length, the belt
    sinks by d with ``c1 d^2 + c2 d = T / R`` (the discretized model's contact law,
    :mod:`belt_fmu.model.contact`) and its cord runs ``theta d`` shorter: the tangent
    ``theta / (R k)``, ``k = sqrt(c2^2 + 4 c1 T0 / R)`` at the installed tension T0
    (:func:`installed_tension`), half of it to the span at each end of the wrap. On the
    installed ``path``; ``belt`` and ``contact`` the layout's records."""
    radii = path.radii
    stiffness = np.sqrt(contact.stiffness_linear_N_per_m2 ** 2
                        + 4.0 * contact.stiffness_quadratic_N_per_m3 * installed_tension(path, belt) / radii)
    half = path.wrap_angle / (2.0 * radii * stiffness)
    return half + np.roll(half, -1)


def bending_compliances(path, belt) -> np.ndarray:
    """[m/N] per span j (pulley j -> j + 1): the belt its bending stiffness frees at its two
    ends, per newton of its tension. A belt of bending stiffness EI under tension T cannot
    take the pulley's curvature 1/R at once: in the span its curvature decays as
    ``exp(-x / lambda)``, ``lambda = sqrt(EI / T)`` (``EI w_xxxx = T w_xx``, the boundary
    layer of a tensioned beam), so it turns through ``lambda / R`` after leaving the pulley
    and leaves it an arc ``lambda`` before the tangent point (bending stiffness shortens the
    wraps: L. Kong and R. G. Parker, "Steady mechanics of belt-pulley systems", ASME J. Appl.
    Mech. 72, 2005). That belt is free and stretches with the span, which is as if
    ``lambda_a + lambda_b`` longer: ``(lambda_a + lambda_b) / EA``, at the installed tension
    T0 (:func:`installed_tension`), each lambda at most half its wrap's arc. On the installed
    ``path``; ``belt`` the layout's record."""
    tension = installed_tension(path, belt)
    layer = math.sqrt(belt.bending_stiffness_Nm2 / tension) if tension > 0.0 else np.inf
    ends = np.minimum(layer, 0.5 * path.radii * path.wrap_angle)
    return (ends + np.roll(ends, -1)) / belt.axial_stiffness_N


def belt_inertias(path, mass_per_length: float, tensioner: int, pivot) -> tuple[np.ndarray, float]:
    """([kg m^2] per pulley, [kg m^2] for the arm) the belt's own inertia the lumped bodies
    carry. The belt on a wrap turns with its pulley, ``m' R^3 theta``. A span's belt moves
    along it at a speed between its end pulleys' surface speeds, linearly along it (the
    kinetic energy ``m' L (v_a^2 + v_a v_b + v_b^2) / 6`` of :mod:`belt_fmu.analysis.rotational`);
    its consistent mass lumped by row sums (T. J. R. Hughes, "The finite element method",
    1987) gives each end pulley half the span, ``m' R^2 L / 2``. The arm carries the belt on
    the tensioner pulley's wrap, ``m' R theta a^2`` (a the arm's length), and the part of its
    two spans that moves across with the pulley, ``m' L lever^2 / 3`` each
    (:func:`prepare_strings`). ``tensioner`` is its index, -1 for none, ``pivot`` the arm's
    pivot [m]; on the installed ``path``."""
    radii = path.radii
    spans = 0.5 * (path.span_length + np.roll(path.span_length, 1))
    pulleys = mass_per_length * radii ** 2 * (path.wrapped_length + spans)
    if tensioner < 0:
        return pulleys, 0.0
    arm = path.centers[tensioner] - np.asarray(pivot, dtype=float)
    across = np.array([-arm[1], arm[0]])  # the pulley's displacement per unit arm angle
    n = path.n_pulleys
    inertia = mass_per_length * path.wrapped_length[tensioner] * float(arm @ arm)
    for span in ((tensioner - 1) % n, tensioner):
        chord = path.arrival_point((span + 1) % n) - path.departure_point(span)
        normal = np.array([-chord[1], chord[0]]) / np.hypot(*chord)
        inertia += mass_per_length * path.span_length[span] * float(across @ normal) ** 2 / 3.0
    return pulleys, float(inertia)


def steady_arcs(radii, mu, wraps, effective, ea, adhesion=None):
    """(release_j, d release_j / dT_j) per span j in steady running: the belt the sliding arcs
    at its two ends, pulley j's exit and pulley j + 1's entry (:func:`wrap_arcs`), release
    into it. Pulley j's adhesion at ``adhesion[j]`` (default: the tension of the span arriving
    on it, ``effective[j - 1]``: no entry arc); ``effective`` the spans' effective tensions
    T - m'v^2 [N], in travel order; ``radii``, ``mu`` and ``wraps`` per pulley. For the start
    and the linear model."""
    adhesion = np.roll(effective, 1) if adhesion is None else adhesion
    release, slope = np.zeros(len(effective)), np.zeros(len(effective))
    for j in range(len(effective)):
        entry, entry_slope, exit_, exit_slope = wrap_arcs(radii[j], mu[j], wraps[j], adhesion[j], effective[j - 1],
                                                          effective[j], ea)
        release[j - 1] += entry
        slope[j - 1] += entry_slope
        release[j] += exit_
        slope[j] += exit_slope
    return release, slope


@njit(cache=True, inline="always")
def centrifugal_tensions(p, lb, s, w):
    """m' v^2 of each span, v its belt speed q (1 + eps) onto the next pulley."""
    n = p.pulleys.shape[0]
    for j in range(n):
        speed = s.flow[j + 1 if j + 1 < n else 0] * w.spring_length[j] / s.content[j]
        w.centrifugal[j] = lb.mass_per_length * speed * speed


@njit(cache=True, inline="always")
def creep_damping(law, mu, belt_speed):
    """d mu_s / d v [s/m]: the friction coefficient's slope at zero creep, a velocity law's own
    (tanh, creep polynomial), the other laws' regularization (tanh at :data:`STICK_VELOCITY`)."""
    if law.law == LAW_TANH or law.law == LAW_CREEP_POLYNOMIAL:
        return friction_coefficient(law, mu, 0.0, belt_speed)[1]
    return 4.0 * mu / STICK_VELOCITY


@njit(cache=True, inline="always")
def wrap_creep_rate(law, mu, radius, bank, effective_tension, belt_speed, ea):
    """[1/s] How fast the belt on a wrap of length ``bank`` [m] stretches toward its two spans'
    strains by creeping: ``pi^2 EA / (c l^2)``. Held by friction of slope d mu_s/d v
    (:func:`creep_damping`) under the pressure ``T' / R`` per unit length, the belt creeps at
    ``w = (dT/ds) / c``, ``c = (T' / R) d mu_s/d v`` [N s/m^2], and its strain obeys
    ``d eps/dt + v d eps/ds = (EA / c) d^2 eps/ds^2`` (advection by the belt's transport,
    diffusion by its creep): this is the slowest diffusion mode's rate over the wrap, its
    ends held at the spans' strains. A velocity law with a gentle slope (the creep polynomial)
    lets a short wrap stretch within a few milliseconds; a stiff one (tanh at 1 mm/s) holds it."""
    # pi^2 EA / (c l^2), c = max(T', 1) / R * slope, with one division
    return math.pi ** 2 * ea * radius / (max(effective_tension, 1.0) * creep_damping(law, mu, belt_speed) * bank * bank)


@njit(cache=True, inline="always")
def wrap_target(bank, strain_in, strain_out, speed, creep):
    """(content [m] a wrap's belt tends to, rate [1/s]): the transport's ``bank / (1 + eps_in)``
    and the creep's ``bank / (1 + (eps_in + eps_out) / 2)`` (the mean of the steady diffusion
    profile between the spans' strains), together a first-order lag at the sum of their
    rates. The belt running through the wrap at ``speed`` [m/s] holds the mean of the strains
    it brought over its transit time ``tau = bank / speed``, a moving average, ``(1 -
    exp(-s tau)) / (s tau)``; its first-order Pade approximant ``1 / (1 + s tau / 2)`` is a lag
    at the rate ``2 / tau``, which keeps the average's mean delay tau / 2. The creep relaxes
    at ``creep`` [1/s] (:func:`wrap_creep_rate`, the slowest mode of its diffusion)."""
    transport = 2.0 * speed / bank
    rate = transport + creep
    stretch_in = 1.0 + strain_in
    stretch_mean = 1.0 + 0.5 * (strain_in + strain_out)
    # bank (transport / stretch_in + creep / stretch_mean) / rate, with one division
    return bank * (transport * stretch_mean + creep * stretch_in) / (rate * stretch_in * stretch_mean), rate


@njit(cache=True, _nrt=False)
def steady_wraps(law, pulleys, banks, tensions, centrifugal, flow, ea, wraps):
    """Each wrap's content [m] in steady running into ``wraps``: where :func:`wrap_target`
    holds it (as :func:`predict_belt` runs it) at span tensions ``tensions`` [N], their
    centrifugal part ``centrifugal`` [N] and the unstretched flow ``flow`` [m/s]; ``banks``
    the installed wrap lengths [m]. For the start, in one call."""
    n = tensions.shape[0]
    for j in range(n):
        i = j - 1 if j > 0 else n - 1
        strain_in = tensions[i] / ea
        speed = abs(flow) * (1.0 + strain_in)
        creep = wrap_creep_rate(law, pulleys[j].effective_mu, pulleys[j].radius, banks[j],
                                0.5 * (tensions[i] + tensions[j]) - centrifugal, speed, ea)
        wraps[j] = wrap_target(banks[j], strain_in, tensions[j] / ea, speed, creep)[0]


@njit(cache=True, inline="always")
def predict_belt(p, lb, s, w, dt):
    """The belt's explicit part of a step: the wraps' contents (:func:`wrap_target`: the belt
    on a wrap is replaced at the entry strain as it runs through, over the wrap's transit time,
    and creeps toward its spans' strains; a first-order lag, exact over the step; a wrap whose
    sliding arcs meet slides all over, :func:`slid_wrap`) and the
    drift their change gives the belt's mean speed over each wrap (``wrap_drift``), the old
    flows' share of the spans' contents, and what each span's ends release (the sliding arcs,
    :func:`wrap_arcs`; the sink and the bending) and how fast that changes with the span's
    tension (for :func:`span_laws`)."""
    n = p.pulleys.shape[0]
    ea = lb.axial_stiffness
    th = THETA
    law = p.friction[0]
    strain_out = w.spring_length[n - 1] / s.content[n - 1] - 1.0
    for j in range(n):
        i = j - 1 if j > 0 else n - 1
        strain_in = strain_out  # span j - 1's, from the last pulley's turn
        strain_out = w.spring_length[j] / s.content[j] - 1.0
        bank = w.bank[j]
        speed = abs(s.flow[j]) * (1.0 + strain_in)
        pulley = p.pulleys[j]
        creep = wrap_creep_rate(law, pulley.effective_mu, pulley.radius, bank,
                                0.5 * (w.tension[i] + w.tension[j]) - w.centrifugal[i], speed, ea)
        target, rate = wrap_target(bank, strain_in, strain_out, speed, creep)
        content = s.wrap_content[j] + (target - s.wrap_content[j]) * (1.0 - np.exp(-rate * dt))
        content = slid_wrap(bank, content, w.tension[i] - w.centrifugal[i], w.tension[j] - w.centrifugal[i],
                            pulley.effective_mu, w.wrap[j], w.centrifugal[i], ea)
        w.wrap_rate[j] = (content - s.wrap_content[j]) / dt
        # the wrap's belt leaves at q - dW/dt: the friction sees the mean of the two speeds
        w.wrap_drift[j] = -0.5 * w.wrap_rate[j] * (1.0 + strain_in)
        s.wrap_content[j] += dt * w.wrap_rate[j]
    for j in range(n):
        nxt = j + 1 if j + 1 < n else 0
        s.content[j] += (1.0 - th) * dt * (s.flow[j] - s.flow[nxt]) - dt * w.wrap_rate[j]
    # what each span releases at its ends: its wraps' sliding arcs, explicit, at the adhesion
    # strains of the middle of the step (the wraps' contents before and after their update
    # above: at the start or the end, a 1 ms step moved the test drive's arm on its resonance's
    # flank by -11 or +7 %), and its sink and bending; their change with the span's own
    # end-of-step tension is implicit (below, and finish_step)
    for j in range(n):
        i = j - 1 if j > 0 else n - 1
        s.content[j] -= s.release[j]
        s.release[j] = w.end_compliance[j] * max(w.tension[j] - w.centrifugal[i], 0.0)
        w.release_slope[j] = w.end_compliance[j]
    for j in range(n):
        i = j - 1 if j > 0 else n - 1
        held = s.wrap_content[j] - 0.5 * dt * w.wrap_rate[j]
        adhesion = adhesion_tension(w.bank[j], held, w.centrifugal[i], ea)
        entry, entry_slope, exit_, exit_slope = wrap_arcs(
            p.pulleys[j].radius, p.pulleys[j].effective_mu, w.wrap[j], adhesion, w.tension[i] - w.centrifugal[i],
            w.tension[j] - w.centrifugal[i], ea)
        s.release[i] += entry
        w.release_slope[i] += entry_slope
        s.release[j] += exit_
        w.release_slope[j] += exit_slope
    per_ea = 1.0 / ea
    limit_per_length = ARC_COMPLIANCE_LIMIT * per_ea
    for j in range(n):
        i = j - 1 if j > 0 else n - 1
        s.content[j] += s.release[j]
        w.release_slope[j] = min(w.release_slope[j], w.end_compliance[j] + limit_per_length * w.spring_length[j])
        w.tension_start[j] = w.tension[j]
        w.creep_speed[j] = abs(s.flow[j]) * abs(w.tension[j] - w.tension[i]) * per_ea
        w.arc_curve[j] = (p.pulleys[j].effective_mu * p.pulleys[j].radius
                          * max(w.tension[i] - w.centrifugal[i], 0.0) * (0.5 * per_ea))


@njit(cache=True, inline="always")
def span_laws(lb, s, w, dt, n):
    """Each span's end-of-step tension as a linear function of the step's unknowns,
    ``T_j = predicted_j + coupling_j (psi - psi_0) - compliance_j (q_j - q_(j+1))``: the
    Kelvin-Voigt law with the content ``S_j + theta dt (q_j - q_(j+1))`` and the spring length
    ``G_j + lever_j (psi - psi_0)``, the belt its ends release changing with the span's own
    tension at ``w.release_slope`` from the start of the step's ``w.tension``."""
    ea = lb.axial_stiffness
    ca = lb.axial_damping
    th = THETA
    per_content = 1.0 / (th * dt)  # a content change D - D0 acts as a flow (D - D0) / (theta dt)
    rate_stiffness = ea + ca / dt
    for j in range(n):
        g = w.spring_length[j]
        per_u = 1.0 / s.content[j]
        compliance = (ea * th * dt + ca) * g * per_u * per_u
        # T = P - k (T - T0) - compliance (q_j - q_(j+1)) + coupling dpsi, k from D(T) - D(T0)
        k = compliance * per_content * w.release_slope[j]
        f = 1.0 / (1.0 + k)
        w.predicted[j] = (ea * (g * per_u - 1.0) + k * w.tension[j]) * f
        w.compliance[j] = compliance * f
        w.coupling[j] = rate_stiffness * w.lever[j] * per_u * f


@njit(cache=True, inline="always")
def arm_levers(p, s, w):
    """``w.lever``: dG/dpsi of the tensioner's two spans at the current geometry, the
    projection of the tensioner pulley's displacement per unit arm angle on each span (the
    span arriving lengthens as the pulley moves along it, the span leaving shortens); and
    ``w.transverse_lever``, its projection across each (:func:`prepare_strings`)."""
    n = p.pulleys.shape[0]
    for j in range(n):
        w.lever[j] = 0.0
        w.transverse_lever[j] = 0.0
    t = p.roles[0].tensioner
    if t < 0:
        return
    # d(centre)/dpsi: the arm vector turned by a quarter
    ex = -(w.centers[t, 1] - p.tensioner[0].pivot_y)
    ey = w.centers[t, 0] - p.tensioner[0].pivot_x
    i = t - 1 if t > 0 else n - 1
    w.lever[i] = w.direction_x[i] * ex + w.direction_y[i] * ey
    w.lever[t] = -(w.direction_x[t] * ex + w.direction_y[t] * ey)
    for span in (i, t):
        w.transverse_lever[span] = -w.direction_y[span] * ex + w.direction_x[span] * ey


@njit(cache=True, _nrt=False)
def solve_linear(a, b, m):
    """Solve ``a[:m, :m] x = b[:m]`` in place, x into ``b`` (Gaussian elimination with partial
    pivoting; the matrix is a cyclic tridiagonal one bordered by the arm's row and column, so
    most eliminations are skipped). False if the matrix is singular."""
    for k in range(m):
        pivot = k
        largest = abs(a[k, k])
        for r in range(k + 1, m):
            if abs(a[r, k]) > largest:
                largest = abs(a[r, k])
                pivot = r
        if not (largest > 0.0 and np.isfinite(largest)):
            return False
        if pivot != k:
            for c in range(k, m):
                a[k, c], a[pivot, c] = a[pivot, c], a[k, c]
            b[k], b[pivot] = b[pivot], b[k]
        inverse = 1.0 / a[k, k]
        for r in range(k + 1, m):
            factor = a[r, k] * inverse
            if factor != 0.0:
                for c in range(k + 1, m):
                    a[r, c] -= factor * a[k, c]
                b[r] -= factor * b[k]
    for k in range(m - 1, -1, -1):
        total = b[k]
        for c in range(k + 1, m):
            total -= a[k, c] * b[c]
        b[k] = total / a[k, k]
    return True


# inlined: the solve's four sweeps then overlap (docs/performance.md, "Kernels compiled apart")
@njit(cache=True, inline="always")
def _sweep(a, pivot, upper, x, n):
    """Forward and back substitution of ``x`` (n) through the factored tridiagonal matrix."""
    x[0] *= pivot[0]
    for j in range(1, n):
        x[j] = (x[j] - a[j, j - 1] * x[j - 1]) * pivot[j]
    for j in range(n - 2, -1, -1):
        x[j] -= upper[j] * x[j + 1]


@njit(cache=True, _nrt=False)
def solve_step_matrix(a, b, upper, pivot, corner, column, n, bordered):
    """Solve the step's linear system ``a x = b`` (``w.jacobian``, ``w.newton``) in place, x
    into ``b``, with the scratch ``upper``, ``pivot``, ``corner`` and ``column`` (the work
    record's ``sweep_upper``, ``sweep_pivot``, ``corner_solution``, ``border_solution``):
    the flows' cyclic tridiagonal block T (entries (j, j-1), (j, j), (j, j+1)
    around the belt loop), bordered, if ``bordered``, by the arm's row and column (index n).
    O(n): T is a tridiagonal matrix plus a rank-one corner correction (Sherman-Morrison, as
    Press et al., "Numerical Recipes", 3rd ed. 2007, section 2.7.2), the border by its Schur
    complement ``d - r T^-1 c``. Without pivoting: T is diagonally dominant (each row's
    diagonal is minus the sum of its off-diagonal terms and the friction slope). Two-pulley
    drives (T is 2 x 2) go to :func:`solve_linear`. False if the matrix is singular."""
    if n < 3:
        return solve_linear(a, b, n + 1 if bordered else n)
    beta = a[0, n - 1]  # top right
    alpha = a[n - 1, 0]  # bottom left
    gamma = -a[0, 0]
    # factor T' = T - u v^T, u = (gamma, 0, ..., alpha), v = (1, 0, ..., beta / gamma)
    for j in range(n):
        diagonal = a[j, j]
        if j == 0:
            diagonal -= gamma
        if j == n - 1:
            diagonal -= alpha * beta / gamma
        if j > 0:
            diagonal -= a[j, j - 1] * upper[j - 1]
        if not (diagonal != 0.0 and np.isfinite(diagonal)):
            return False
        pivot[j] = 1.0 / diagonal
        upper[j] = a[j, j + 1] * pivot[j] if j < n - 1 else 0.0
    for j in range(n):
        corner[j] = 0.0
    corner[0] = gamma
    corner[n - 1] = alpha
    _sweep(a, pivot, upper, corner, n)
    scale = 1.0 / (1.0 + corner[0] + beta / gamma * corner[n - 1])
    _sweep(a, pivot, upper, b, n)  # the flows' right-hand side
    factor = (b[0] + beta / gamma * b[n - 1]) * scale
    for j in range(n):
        b[j] -= factor * corner[j]
    if not bordered:
        return True
    for j in range(n):
        column[j] = a[j, n]
    _sweep(a, pivot, upper, column, n)
    factor = (column[0] + beta / gamma * column[n - 1]) * scale
    row_x = 0.0
    row_c = 0.0
    for j in range(n):
        column[j] -= factor * corner[j]
        row_x += a[n, j] * b[j]
        row_c += a[n, j] * column[j]
    schur = a[n, n] - row_c
    if not (schur != 0.0 and np.isfinite(schur)):
        return False
    b[n] = (b[n] - row_x) / schur
    for j in range(n):
        b[j] -= b[n] * column[j]
    return True


@njit(cache=True, inline="always")
def speed_gain(p, j, dt):
    """d(R_j w_j)/dF [m/(s N)]: how much pulley j's surface speed at the end of the step rises
    per newton of the belt's force on it, ``R^2 theta dt / I`` (0 for the speed-driven crank)."""
    if j == p.roles[0].crank:
        return 0.0
    return p.pulleys[j].radius * p.pulleys[j].radius * THETA * dt / p.pulleys[j].inertia


@njit(cache=True, inline="always")
def end_tensions(p, s, w, dpsi):
    """The spans' end-of-step tensions for the current flows and arm angle change ``dpsi``."""
    n = p.pulleys.shape[0]
    for j in range(n):
        nxt = j + 1 if j + 1 < n else 0
        w.tension[j] = w.predicted[j] + w.coupling[j] * dpsi - w.compliance[j] * (s.flow[j] - s.flow[nxt])


@njit(cache=True, inline="always")
def tensioner_spans(p):
    """(the span arriving on the tensioner pulley, the span leaving it), (-1, -1) without a
    tensioner."""
    t = p.roles[0].tensioner
    if t < 0:
        return -1, -1
    return (t - 1 if t > 0 else p.pulleys.shape[0] - 1), t


@njit(cache=True, inline="always")
def prepare_strings(p, lb, s, w, dt):
    """The first transverse string mode of each of the tensioner's two spans for this step
    (Beikmann, Perkins and Ulsoy 1996: the spans next to the tensioner vibrate across, driven
    by the arm). Span j of length L carries ``w(x) = u x/L + q sin(pi x / L)`` (``1 - x/L``
    where the tensioner is its first pulley), u the tensioner pulley's displacement across it,
    ``u = lever (psi - psi_installed)``. Its kinetic energy ``m' L (u'^2/3 + q'^2/2 + 2 u' q'/pi) / 2``
    and strain energy ``T pi^2 q^2 / (4 L)`` (the ``T u^2 / L`` part is the spans' geometric
    stiffness the arm already has) give

        (m' L / 2) q'' + (m' L lever / pi) psi'' + (m' L / 2) (2 zeta w q' + w^2 q) = 0,

    with the arm's equation gaining ``kappa q''``, ``kappa = m' L lever / pi`` (and the arm's
    inertia ``m' L lever^2 / 3``: :func:`belt_inertias`). ``w`` is the axially moving string's
    ``pi (c^2 - v^2) / (L c)``, ``c^2 = T / m'`` (Wickert and Mote 1990), ``2 zeta w`` the
    layout's transverse damping over m'. The trapezoidal rule over the step makes the
    string's rate change affine in the arm's rate change dr: ``shift + gain dr``
    (``w.string_shift``, ``w.string_gain``), which :func:`arm_residual` takes in the arm's
    momentum and :func:`finish_step` applies."""
    i, t = tensioner_spans(p)
    if t < 0:
        return
    mass = lb.mass_per_length
    zeta_omega = 0.5 * lb.transverse_damping / mass
    for span in (i, t):
        length = w.span_length[span]
        # w^2 = pi^2 (c^2 - v^2)^2 / (L^2 c^2) = pi^2 (T - m'v^2)^2 / (L^2 m' T)
        effective = max(w.tension[span] - w.centrifugal[span], 0.0)
        omega2 = math.pi * math.pi * effective * effective / (length * length * mass * max(w.tension[span], 1.0))
        q0 = s.string[span]
        rate = s.string_rate[span]
        lever = w.transverse_lever[span]
        scale = 1.0 / (1.0 + (zeta_omega + 0.25 * omega2 * dt) * dt)  # times dt
        w.string_coupling[span] = mass * length * lever / math.pi
        w.string_shift[span] = scale * (rate * (1.0 - (zeta_omega + 0.25 * omega2 * dt) * dt) - omega2 * dt * q0) - rate
        w.string_gain[span] = -scale * 2.0 * lever / math.pi  # kappa / (m' L / 2) = 2 lever / pi


@njit(cache=True, inline="always")
def finish_strings(p, s, w, dt, rate_change):
    """The strings' state at the end of the step from the arm's rate change (:func:`prepare_strings`),
    and their pull across their spans."""
    i, t = tensioner_spans(p)
    if t < 0:
        return
    for span in (i, t):
        rate = s.string_rate[span]
        new_rate = rate + w.string_shift[span] + w.string_gain[span] * rate_change
        s.string[span] += 0.5 * dt * (rate + new_rate)
        s.string_rate[span] = new_rate
        w.string_force[span] = (w.tension[span] - w.centrifugal[span]) * math.pi * s.string[span] / w.span_length[span]


@njit(cache=True, inline="always")
def add_string_forces(p, w):
    """The string modes' pull (``w.string_force``) into the hub forces of the pulleys at both
    ends of the tensioner's two spans: a string bulging to its span's normal pulls both its
    pulleys that way."""
    n = p.pulleys.shape[0]
    i, t = tensioner_spans(p)
    if t < 0:
        return
    for span in (i, t):
        fx = -w.string_force[span] * w.direction_y[span]
        fy = w.string_force[span] * w.direction_x[span]
        nxt = span + 1 if span + 1 < n else 0
        for j in (span, nxt):
            w.hub_force[j, 0] += fx
            w.hub_force[j, 1] += fy


@njit(cache=True, inline="always")
def arm_residual(p, w, dt, psi0, rate0, moment0, psi):
    """Residual [N m] of the arm's step and its derivative in psi with the tensions held:

        J (r - r0) / dt = (M0 + M(psi, r)) / 2 + F(r),   r = 2 (psi - psi0) / dt - r0,

    the trapezoidal rule for the arm's torque M without Coulomb friction (hub load
    ``-sum (T_a - m'v^2) lever_a`` over its two spans; spring, damper, stops:
    :func:`belt_fmu.model.tensioner.arm_support_torque`), the friction torque F (asymmetric, a tanh law
    in rad/s, [Scania thesis] section 4.3) implicit at the end of the step as the discretized
    model's arm takes it. ``moment0`` is M at the start of the step."""
    arm = p.tensioner[0]
    n = p.pulleys.shape[0]
    t = p.roles[0].tensioner
    i = t - 1 if t > 0 else n - 1
    rate = 2.0 * (psi - psi0) / dt - rate0
    support, stiffness, damping = arm_support_torque(arm, psi, rate)
    moment = support - (w.tension[i] - w.centrifugal[i]) * w.lever[i] - (w.tension[t] - w.centrifugal[t]) * w.lever[t]
    away = rate * arm.spring_sense < 0.0  # moving against the spring: away from the belt
    level = arm.friction_away if away else arm.friction_toward
    coefficient, slope = friction_coefficient(p.arm_friction[0], level, abs(rate), 0.0)
    friction = -coefficient if rate > 0.0 else coefficient
    residual = arm.arm_inertia * (rate - rate0) / dt - 0.5 * (moment0 + moment) - friction
    derivative = 2.0 * arm.arm_inertia / (dt * dt) + 0.5 * (stiffness + 2.0 * damping / dt) + 2.0 * slope / dt
    for span in (i, t):  # the string modes' reaction on the arm's momentum (prepare_strings)
        kappa = w.string_coupling[span]
        residual += kappa * (w.string_shift[span] + w.string_gain[span] * (rate - rate0)) / dt
        derivative += 2.0 * kappa * w.string_gain[span] / (dt * dt)
    w.arm_friction_slope[0] = slope
    return residual, derivative


@njit(cache=True, _nrt=False)
def assemble(p, s, w, dt, psi0, rate0, moment0, psi):
    """The step's equations at the current flows and arm angle ``psi`` (:func:`solve_step`):
    their residuals, negated, into ``w.newton`` and their Jacobian into ``w.jacobian``.
    Returns the merit: the sum of the squared residuals, the arm's as a force at its pulley."""
    pulleys = p.pulleys
    n = pulleys.shape[0]
    t = p.roles[0].tensioner
    m = n + 1 if t >= 0 else n
    law = p.friction[0]
    a = w.jacobian
    b = w.newton
    end_tensions(p, s, w, psi - psi0)
    for r in range(m):
        for c in range(m):
            a[r, c] = 0.0
    merit = 0.0
    for j in range(n):
        i = j - 1 if j > 0 else n - 1
        nxt = j + 1 if j + 1 < n else 0
        pulley = pulleys[j]
        gain = speed_gain(p, j, dt)
        t_out = w.tension[j] - w.centrifugal[i]
        t_in = w.tension[i] - w.centrifugal[i]
        stretch = w.spring_length[i] / s.content[i]  # 1 + eps_(j-1)
        speed = s.flow[j] * stretch
        slip = speed + w.wrap_drift[j] - pulley.radius * w.free_speed[j] - gain * (w.tension[j] - w.tension[i])
        mu, dmu = slip_coefficient(law, pulley.effective_mu, slip, speed, w.creep_speed[j], pulley.radius, w.wrap[j],
                                   w.arc_curve[j])
        e = np.exp(0.5 * w.wrap[j] * mu)
        per_e = 1.0 / e
        w.slip_slope[j] = w.wrap[j] * dmu
        b[j] = t_in * e - t_out * per_e
        merit += b[j] * b[j]
        d = 0.5 * w.wrap[j] * dmu * (t_out * per_e + t_in * e)  # -d residual / d slip
        d_out = per_e + d * gain  # d residual / d T_j
        d_in = -(e + d * gain)  # d residual / d T_(j-1)
        a[j, j] += -d * stretch - d_out * w.compliance[j] + d_in * w.compliance[i]
        a[j, nxt] += d_out * w.compliance[j]
        a[j, i] -= d_in * w.compliance[i]
        if t >= 0:
            a[j, n] += d_out * w.coupling[j] + d_in * w.coupling[i]
    if t >= 0:
        residual, derivative = arm_residual(p, w, dt, psi0, rate0, moment0, psi)
        b[n] = -residual
        merit += (residual / p.tensioner[0].arm_length) ** 2
        i = t - 1 if t > 0 else n - 1
        for span in (i, t):
            nxt = span + 1 if span + 1 < n else 0
            # d residual / d T_span = lever / 2; T_span falls with q_span, rises with q_next
            a[n, span] -= 0.5 * w.lever[span] * w.compliance[span]
            a[n, nxt] += 0.5 * w.lever[span] * w.compliance[span]
            a[n, n] += 0.5 * w.lever[span] * w.coupling[span]
        a[n, n] += derivative
    return merit


@njit(cache=True, inline="always")
def trust_region(p, s, w, dt, d):
    """Fraction (<= 1) of the Newton correction ``d`` (flows, arm angle) to take: the largest
    for which no pulley's capstan exponent theta mu_s changes, by its linearization at the
    iterate (``w.slip_slope``), by more than :data:`EXPONENT_STEP`. Near zero slip the
    regularized laws are steep (tanh: 4 mu / v_t) and flat beyond; a full correction from
    there lands on the flat part, where the belt's uniform flow is barely determined."""
    pulleys = p.pulleys
    n = pulleys.shape[0]
    t = p.roles[0].tensioner
    dpsi = d[n] if t >= 0 else 0.0
    fraction = 1.0
    for j in range(n):
        i = j - 1 if j > 0 else n - 1
        nxt = j + 1 if j + 1 < n else 0
        gain = speed_gain(p, j, dt)
        d_out = w.coupling[j] * dpsi - w.compliance[j] * (d[j] - d[nxt])
        d_in = w.coupling[i] * dpsi - w.compliance[i] * (d[i] - d[j])
        d_slip = d[j] * w.spring_length[i] / s.content[i] - gain * (d_out - d_in)
        change = abs(w.slip_slope[j] * d_slip)
        if change * fraction > EXPONENT_STEP:
            fraction = EXPONENT_STEP / change
    if t >= 0:
        # the arm's Coulomb friction is as steep near standstill: its torque may change by
        # at most EXPONENT_STEP times its larger level
        arm = p.tensioner[0]
        change = abs(w.arm_friction_slope[0] * 2.0 * dpsi / dt)
        limit = EXPONENT_STEP * max(arm.friction_away, arm.friction_toward)
        if change * fraction > limit:
            fraction = limit / change
    return fraction


@njit(cache=True, inline="always")
def keep_slips(p, s, w, dt, dpsi):
    """The Newton iteration's start: the flows at which every pulley's gross slip is the last
    step's (``w.slip``) for the arm angle change ``dpsi``. The slip is linear in the flows
    (:func:`solve_step`) but the friction laws are steep in it, so a start from the last
    flows, whose slips the step's load and tension changes shift by up to tenths of a m/s,
    would begin where the laws are flat and the belt's uniform flow undetermined; from the
    last slips the iteration starts where the laws are linearized well."""
    pulleys = p.pulleys
    n = pulleys.shape[0]
    a = w.jacobian
    b = w.newton
    for r in range(n):
        for c in range(n):
            a[r, c] = 0.0
    for j in range(n):
        i = j - 1 if j > 0 else n - 1
        nxt = j + 1 if j + 1 < n else 0
        pulley = pulleys[j]
        gain = speed_gain(p, j, dt)
        # slip_j = stretch q_j + drift_j - R free_speed_j - gain (T_j - T_(j-1)), the tensions linear in q
        a[j, j] += w.spring_length[i] / s.content[i] + gain * (w.compliance[j] + w.compliance[i])
        a[j, nxt] -= gain * w.compliance[j]
        a[j, i] -= gain * w.compliance[i]
        b[j] = (w.slip[j] - w.wrap_drift[j] + pulley.radius * w.free_speed[j]
                + gain * (w.predicted[j] - w.predicted[i] + (w.coupling[j] - w.coupling[i]) * dpsi))
    # np.bool_: a bool, where the constant False, a literal to numba, would compile the solve twice
    if solve_step_matrix(w.jacobian, w.newton, w.sweep_upper, w.sweep_pivot, w.corner_solution,
                         w.border_solution, n, np.bool_(False)):
        for j in range(n):
            s.flow[j] = b[j]


@njit(cache=True, _nrt=False)
def capstan_flow(law, mu, theta, r, a_out, a_in, t_out0, t_in0, c, stretch, speed, gain, creep, curve, guess):
    """Flow q [m/s] onto one pulley solving its end-of-step capstan equation with its
    neighbours' flows and the arm held (:func:`relax_step`):

        (T_out(q) - c) exp(-h/2) - (T_in(q) - c) exp(h/2) = 0,   h = theta mu_s(v_slip(q)),

    ``T_out = t_out0 - a_out q``, ``T_in = t_in0 + a_in q``, the gross slip
    ``v_slip = q stretch - r speed - gain (T_out - T_in)`` (``r speed`` the pulley's surface
    speed with the wrap's drift taken off, :func:`predict_belt`), ``creep`` and ``curve`` the sliding
    arc's (:func:`slip_coefficient`). The residual decreases in q:
    Newton's method from ``guess``, kept inside the bracket of the points evaluated (widening
    it until the root is enclosed)."""
    dv = stretch + gain * (a_out + a_in)  # d v_slip / d q
    width = (abs(t_out0 - t_in0) + 1.0) / (a_out + a_in)
    lo = -np.inf
    hi = np.inf
    x = guess
    for _ in range(80):
        t_out = t_out0 - a_out * x
        t_in = t_in0 + a_in * x
        v = x * stretch - r * speed - gain * (t_out - t_in)
        m, dm = slip_coefficient(law, mu, v, x * stretch, creep, r, theta, curve)
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
        converged = abs(new - x) <= 0.1 * FLOW_TOLERANCE
        x = new
        if converged or hi - lo <= 0.1 * FLOW_TOLERANCE:
            break
    return x


@njit(cache=True, _nrt=False)
def relax_step(p, s, w, dt, psi0, rate0, moment0):
    """The fallback of :func:`solve_step` when Newton's method does not converge (a crank
    speed jump that sets every pulley slipping, where the friction laws are flat and the
    belt's uniform flow barely determined): the same equations by nonlinear Gauss-Seidel
    sweeps, each pulley's capstan equation for its own flow (:func:`capstan_flow`, bracketed)
    and the arm's for its angle, from the step's starting flows, until the flows change by
    less than :data:`FLOW_TOLERANCE`. Returns the sweeps taken, 0 if it did not converge."""
    pulleys = p.pulleys
    n = pulleys.shape[0]
    crank = p.roles[0].crank
    t = p.roles[0].tensioner
    law = p.friction[0]
    for j in range(n):
        s.flow[j] = w.flow_start[j]
    psi = psi0 + dt * rate0 if t >= 0 else psi0
    for sweep in range(1, MAX_SWEEPS + 1):
        change = 0.0
        for k in range(n):
            j = crank + k if crank + k < n else crank + k - n
            i = j - 1 if j > 0 else n - 1
            nxt = j + 1 if j + 1 < n else 0
            pulley = pulleys[j]
            gain = speed_gain(p, j, dt)
            dpsi = psi - psi0
            t_out0 = w.predicted[j] + w.coupling[j] * dpsi + w.compliance[j] * s.flow[nxt]
            t_in0 = w.predicted[i] + w.coupling[i] * dpsi - w.compliance[i] * s.flow[i]
            q = capstan_flow(law, pulley.effective_mu, w.wrap[j], pulley.radius, w.compliance[j], w.compliance[i],
                             t_out0, t_in0, w.centrifugal[i], w.spring_length[i] / s.content[i],
                             w.free_speed[j] - w.wrap_drift[j] / pulley.radius,
                             gain, w.creep_speed[j], w.arc_curve[j], s.flow[j])
            change = max(change, abs(q - s.flow[j]))
            s.flow[j] = q
        if t >= 0:
            i = t - 1 if t > 0 else n - 1
            stiffness = 0.5 * (w.lever[i] * w.coupling[i] + w.lever[t] * w.coupling[t])
            start = psi
            for _ in range(50):
                end_tensions(p, s, w, psi - psi0)
                residual, derivative = arm_residual(p, w, dt, psi0, rate0, moment0, psi)
                correction = residual / (derivative + stiffness)
                psi -= correction
                if abs(correction) <= 0.1 * ANGLE_TOLERANCE:
                    break
            # half of the arm's move: the arm and its spans are stiffly coupled, and the full
            # move can alternate between two arm angles from sweep to sweep
            psi = 0.5 * (start + psi)
            change = max(change, abs(psi - start) * p.tensioner[0].arm_length / dt)
        if not np.isfinite(change):
            return 0
        if change <= FLOW_TOLERANCE:
            finish_step(p, s, w, dt, psi0, rate0, psi)
            return sweep
    return 0


@njit(cache=True, inline="always")
def solve_step(p, lb, s, w, dt, psi0, rate0, moment0):
    """The implicit part of a step: the flows q_j onto every pulley and the arm's end angle
    psi, from the end-of-step capstan equation of every pulley (module docstring)

        (T_j - c) exp(-h_j / 2) - (T_(j-1) - c) exp(h_j / 2) = 0,   h_j = theta_j mu_s(v_j),

    with the spans' tensions linear in the unknowns (:func:`span_laws`), the gross slip
    ``v_j = q_j (1 + eps_(j-1)) + drift_j - R_j w_j`` (the belt's mean speed over the wrap,
    :func:`predict_belt`) and the pulley's speed after the belt's force
    ``w_j = free_speed_j + theta dt R_j (T_j - T_(j-1)) / I_j`` (the crank's is the input),
    together with the arm's trapezoidal step (:func:`arm_residual`), by Newton's method on
    the whole system (a cyclic tridiagonal matrix for the flows, bordered by the arm) from
    the last step's flows and the arm's explicit prediction, each correction halved until the
    merit falls (a backtracking line search, Dennis and Schnabel, "Numerical methods for
    unconstrained optimization and nonlinear equations", 1983, section 6.3: the friction
    laws' steep regularization near zero slip makes the full correction overshoot when a
    pulley starts or stops slipping). Solving the pulleys and the arm together keeps the step
    accurate and stable at any length (a sweep pulley by pulley with the arm explicit
    lags each part behind its neighbours by a step: 28 % error in the arm's amplitude at
    1 ms). Returns the Newton iterations taken; if they do not converge, the same equations
    are solved by :func:`relax_step` and MAX_ITERATIONS plus its sweeps returned. If neither
    converges (a belt gone nearly slack, its sliding arcs far from their adhesion tensions),
    both try again with the arcs' compliance halved, up to :data:`ARC_RETRIES` times; 0 if
    no attempt converged."""
    n = p.pulleys.shape[0]
    t = p.roles[0].tensioner
    m = n + 1 if t >= 0 else n
    b = w.newton
    d = w.correction
    for j in range(n):
        w.flow_start[j] = s.flow[j]
    for attempt in range(ARC_RETRIES + 1):
        if attempt > 0:
            # the sliding arcs' release is concave in the span's tension: over a large change
            # the tangent at the step's start overstates it; try again with half of it
            for j in range(n):
                s.flow[j] = w.flow_start[j]
                w.tension[j] = w.tension_start[j]
                w.release_slope[j] = w.end_compliance[j] + 0.5 * (w.release_slope[j] - w.end_compliance[j])
        span_laws(lb, s, w, dt, n)
        psi = psi0 + dt * rate0 if t >= 0 else psi0
        keep_slips(p, s, w, dt, psi - psi0)
        merit = assemble(p, s, w, dt, psi0, rate0, moment0, psi)
        for iteration in range(1, MAX_ITERATIONS + 1):
            if not solve_step_matrix(w.jacobian, w.newton, w.sweep_upper, w.sweep_pivot, w.corner_solution,
                                     w.border_solution, n, t >= 0):
                break
            small = True
            for k in range(m):
                d[k] = b[k]
                small &= abs(b[k]) <= (FLOW_TOLERANCE if k < n else ANGLE_TOLERANCE)
            fraction = trust_region(p, s, w, dt, d)
            for k in range(m):
                d[k] *= fraction
            for j in range(n):
                s.flow[j] += d[j]
            if t >= 0:
                psi += d[n]
            if small and fraction == 1.0:  # the last correction is within tolerance: stop
                finish_step(p, s, w, dt, psi0, rate0, psi)
                return iteration
            trial = assemble(p, s, w, dt, psi0, rate0, moment0, psi)
            length = 1.0  # of the line search, along the shortened correction
            for _ in range(30):
                if trial <= (1.0 - 1e-4 * length) * merit or not np.isfinite(merit):
                    break
                length *= 0.5
                for j in range(n):
                    s.flow[j] -= length * d[j]
                if t >= 0:
                    psi -= length * d[n]
                trial = assemble(p, s, w, dt, psi0, rate0, moment0, psi)
            merit = trial
        sweeps = relax_step(p, s, w, dt, psi0, rate0, moment0)
        if sweeps > 0:
            return MAX_ITERATIONS + sweeps
    return 0


@njit(cache=True, _nrt=False)
def finish_step(p, s, w, dt, psi0, rate0, psi):
    """End of the step at the solved flows and arm angle: tensions, the belt's forces and
    slips, the pulleys' speeds, the spans' contents, the arm and its geometry."""
    pulleys = p.pulleys
    n = pulleys.shape[0]
    crank = p.roles[0].crank
    th_dt = THETA * dt
    end_tensions(p, s, w, psi - psi0)
    for j in range(n):
        i = j - 1 if j > 0 else n - 1
        nxt = j + 1 if j + 1 < n else 0
        pulley = pulleys[j]
        force = w.tension[j] - w.tension[i]
        w.belt_force[j] = force
        if j != crank:
            s.omega[j] = pulley.sense * (w.free_speed[j] + th_dt * pulley.radius * force / pulley.inertia)
        w.slip[j] = (s.flow[j] * w.spring_length[i] / s.content[i] + w.wrap_drift[j]
                     - pulley.radius * pulley.sense * s.omega[j])
    for j in range(n):
        nxt = j + 1 if j + 1 < n else 0
        release = w.release_slope[j] * (w.tension[j] - w.tension_start[j])
        s.release[j] += release
        s.content[j] += th_dt * (s.flow[j] - s.flow[nxt]) + release
    if p.roles[0].tensioner >= 0:
        s.arm[0] = psi
        s.arm[1] = 2.0 * (psi - psi0) / dt - rate0
        update_geometry(p, s, w, np.bool_(False))  # np.bool_: compiled once for both (place_geometry)
        finish_strings(p, s, w, dt, s.arm[1] - rate0)
        arm_levers(p, s, w)


@njit(cache=True, inline="always")
def step(p, lb, s, w, dt, crank_omega, water_pump_torque):
    """One step of ``dt`` [s]: the pulleys' loads (:func:`belt_fmu.model.drive.
    accelerate_pulleys`), the belt's explicit part (:func:`predict_belt`), then the flows,
    the belt's friction on every pulley and the arm together, implicit
    (:func:`solve_step`), and the rotations. Returns the Newton iterations, 0 if the step
    did not converge."""
    centrifugal_tensions(p, lb, s, w)
    prepare_strings(p, lb, s, w, dt)
    t = p.roles[0].tensioner
    psi0 = s.arm[0]
    rate0 = s.arm[1]
    moment0 = 0.0
    if t >= 0:
        hub_force(p, w, t)  # from the tensions at the start of the step
        moment0 = arm_torque(p.tensioner[0], psi0, rate0, w.hub_force[t, 0], w.hub_force[t, 1])
    for j in range(p.pulleys.shape[0]):
        s.theta[j] += (1.0 - THETA) * dt * s.omega[j]
    s.omega[p.roles[0].crank] = crank_omega
    accelerate_pulleys(p, s, w, dt, water_pump_torque)
    pulleys = p.pulleys
    crank = p.roles[0].crank
    for j in range(pulleys.shape[0]):
        # running speed with the old belt force's share; the new force's share is implicit
        share = 0.0 if j == crank else (1.0 - THETA) * dt * pulleys[j].radius * w.belt_force[j] / pulleys[j].inertia
        w.free_speed[j] = pulleys[j].sense * s.omega[j] + share
    predict_belt(p, lb, s, w, dt)
    iterations = solve_step(p, lb, s, w, dt, psi0, rate0, moment0)
    for j in range(p.pulleys.shape[0]):
        s.theta[j] += THETA * dt * s.omega[j]
    return iterations


@njit(cache=True, inline="always")
def health(p, lb, s, w):
    """OK, or NOT_FINITE for non-finite values or a span without belt."""
    for j in range(p.pulleys.shape[0]):
        if not (np.isfinite(s.content[j]) and np.isfinite(s.omega[j]) and np.isfinite(s.flow[j])
                and np.isfinite(w.tension[j])):
            return NOT_FINITE
        if not s.content[j] > 0.0:
            return NOT_FINITE
    if not (np.isfinite(s.arm[0]) and np.isfinite(s.arm[1])):
        return NOT_FINITE
    return OK


@njit(cache=True, inline="always")
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
    add_string_forces(p, w)
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


@njit(cache=True, inline="always")
def run_sample(p, lb, s, w, n_steps, dt, crank_omega, water_pump_torque, out):
    """One sample of :func:`run`: ``n_steps`` steps of ``dt`` at constant inputs, then the
    outputs into ``out``; with 0 steps, the outputs of the state, sampled. Returns (status,
    steps taken): OK, NOT_CONVERGED (a step's Newton iteration failed) or NOT_FINITE (the
    state is checked every 64 steps and at the end).

    With ``lb.average_outputs`` the outputs of a sample of steps are their means over it:
    the running time-integral ``w.output_mean`` by the trapezoidal rule over the steps, from
    the outputs at the sample's start (``w.output_sample``, the last sample's end) to those
    at its end (exact for an output linear in time: an angle at constant speed); each step
    evaluates the outputs, about 0.1 us."""
    n = p.pulleys.shape[0]
    m = out.shape[0]  # the outputs of n pulleys (the work record has room for MAX_PULLEYS')
    averaging = lb.average_outputs != 0.0 and n_steps > 0
    if averaging:
        for i in range(m):
            w.output_mean[i] = 0.5 * dt * w.output_sample[i]
    status = OK
    taken = n_steps
    # one pass more than steps, for the outputs at the sample's end: evaluate_outputs is
    # inlined once (it is an eighth of run's code, which numba types and lowers per call site)
    for k in range(n_steps + 1):
        end = k == n_steps
        if not end:
            iterations = step(p, lb, s, w, dt, crank_omega, water_pump_torque)
            w.iterations[0] = iterations
            if iterations == 0:
                status = NOT_CONVERGED
            elif (k + 1) % 64 == 0 or k == n_steps - 1:
                status = health(p, lb, s, w)
            if status != OK:
                taken = k + 1
                end = True
        if end or (averaging and k < n_steps - 1):
            evaluate_outputs(p, lb, s, w, w.output_sample)
            if end:
                break
            accumulate_outputs(w.output_mean[:m], w.output_sample, dt)
    if averaging:
        mean_outputs(w.output_mean, 0.5 * dt, w.output_sample, taken * dt, w.output_mean[:m], n)
    source = w.output_mean if averaging else w.output_sample
    for i in range(m):
        out[i] = source[i]
    return status, taken


@njit(cache=True, inline="always")
def place_geometry(p, s, w, arm_angle, installed):
    """The full geometry at arm angle ``arm_angle`` into the work record (spring rates zero);
    with ``installed``, that arm angle is the installed one and its departure and arrival
    angles become the spans' reference ends (``w.reference``, ``w.reference_arrive``). Part
    of :func:`run`, so that it compiles with the step's callees and not as an entry of its own."""
    s.arm[0] = arm_angle
    update_geometry(p, s, w, np.bool_(True))  # np.bool_: compiled once for both (step)
    if installed:
        for j in range(p.pulleys.shape[0]):
            w.reference[j] = w.depart[j]
            w.reference_arrive[j] = w.arrive[j]
            w.bank[j] = installed_wrap(p, w, j)
        update_springs(p, w)
    arm_levers(p, s, w)


# error_model="numpy": float division without Python's zero check (health() sees inf and nan);
# _nrt=False: without numba's reference counting (next docstring);
# no fastmath flag: with them LLVM fuses and rewrites by the context it compiles run in, and
# the native step's copy rounded apart from this one on some CPUs (docs/lumped-model.md).
@njit(cache=True, error_model="numpy", _nrt=False)
def run(state, work, p, lb, n_steps, dt, crank_omega, water_pump_torque, table):
    """The model's one entry, from Python and from the native step: a sampled run, sample i
    :func:`run_sample` at the inputs ``crank_omega[i]``, ``water_pump_torque[i]``, its
    outputs into ``table[i]``, without Python between the samples (an advance is one sample;
    the outputs of the state are one sample of 0 steps). Returns (status, samples completed,
    steps taken in the sample that failed): stops at the first status other than OK. A run of
    :data:`PLACE` or :data:`PLACE_INSTALLED` steps takes none: it places the geometry at the
    arm angle ``dt`` (:func:`place_geometry`).

    One entry, so that numba compiles and LLVM optimizes the step once: each compiled
    function that calls another links the callee's code in and optimizes it again.

    Compiled without numba's reference counting (NRT, numba's ``_nrt`` flag): the kernels
    allocate nothing (every array is a view of the caller's buffers, which outlive the call),
    but with NRT numba increments and decrements the owner's count of every array view at
    each inlined call. Without NRT a kernel that allocated would not compile."""
    s, w = state[0], work[0]  # the records (LUMPED_STATE, LUMPED_WORK)
    if n_steps < 0:
        place_geometry(p, s, w, dt, n_steps == PLACE_INSTALLED)
        return OK, 0, 0
    for i in range(crank_omega.shape[0]):
        status, taken = run_sample(p, lb[0], s, w, n_steps, dt, crank_omega[i], water_pump_torque[i], table[i])
        if status != OK:
            return status, i, taken
    return OK, crank_omega.shape[0], n_steps
