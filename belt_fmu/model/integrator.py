"""Time integration of the belt drive: :func:`step` sequences the parts' kernels.

Scheme: symplectic (semi-implicit) Euler, the explicit scheme of choice for discretized
rods (PyElastica uses its relatives): velocities first from the forces at the current
positions, positions from the new velocities. The belt elements' own forces (axial, bending,
shear, with their Kelvin-Voigt damping), whose modes stiffen as 1/l0 and 1/l0^2, are then
made stable at any step by one O(n) block solve
(:func:`belt_fmu.model.belt.implicit_belt_correction`: a linearly implicit Euler step on the
axial part, [Hairer and Wanner 1996] IV.7, and a stiffness-proportional mass on the bending,
[Olovsson, Simonsson and Unosson 2005], which damps nothing numerically): so the stable step
is set by the explicit contact (and bristle) springs, whose frequency does not depend on the
element length, and by :data:`~belt_fmu.model.stability.MAX_STEP` for accuracy, see
:func:`stable_time_step`; the step of a 600-element belt is that of a 150-element one.
Where the explicit bending is stable at that step anyway (the built-in belt up to about 155
elements), bending and shear stay explicit and only the axial forces are implicit
(:func:`belt_fmu.model.belt.implicit_axial_correction`, :func:`choose_bending_scheme`): half
the block solve's cost, for the same mean loads (fmu_tests/test_convergence.py).
:func:`step` is the scheme: it calls, in order, the kernels of the parts (belt, contact,
drive, friction, tensioner), each computing its share of the forces and
velocity updates on the state and work views.

Friction is the exception. A regularized friction law is a very stiff damper near zero
slip (a tanh law with a 1 cm/s threshold on a node pressed with 100 N is 5e4 N s/m, which
would need a step of ~1e-8 s explicitly), and explicit Coulomb friction chatters. So each
contact's friction is integrated *implicitly*: after the explicit forces, the contact's
slip ``s*`` without friction is known, and the end-of-step slip solves

    m_eff (s - s*) = dt F(s),      1 / m_eff = 1 / m + r^2 / I

(:func:`belt_fmu.model.friction.implicit_friction`), ``m_eff`` being the node mass in series
with the pulley's inertia at the contact radius ``r`` (the node mass alone where the
pulley's speed is solved with its contacts, below). The impulse ``dt F`` is applied to
the node and, with opposite sign, to the pulley; momentum exchanged between belt and pulley
balances exactly. How the contacts of one pulley are coupled through its speed
(:func:`belt_fmu.model.friction.friction_impulses`): with a velocity law (creep polynomial,
tanh) all contacts are solved at once at the pulley speed the last step's friction
predicts (a warm start, [Catto 2005]), and one Newton step of each pulley's speed, linear
in its contacts, makes the pulley speed implicit too (linearly implicit Euler, [Hairer and
Wanner 1996] IV.7); with the bristle and the state laws the contacts are swept one by one,
each seeing the speed the others left (a Gauss-Seidel sweep from the same warm start), so
that in steady running every contact sees the pulley's end-of-step speed. A cold start
showed the contacts a pulley still slowed by its load torque's explicit impulse, a creep
error proportional to ``dt``. A speed-driven crankshaft has ``1/I = 0``; a torque-driven
one is a free pulley with the layout's inertia.

The tensioner arm's Coulomb friction (a tanh law) is solved the same way, for one degree of
freedom.

Compilation: the kernels of the step (here and in the parts' modules) are compiled without
numba's reference counting (NRT, numba's private ``_nrt`` option; numba is pinned below
0.69 for it). They allocate nothing, every array is a view of the drive's buffers, so there
is nothing to count; with it, numba counted the references of every view of the state and
work tuples up and down at each kernel call, 15 % of a 150-element step.
A kernel that allocates no longer compiles, so none can slip in; copies and comparisons of
arrays are loops for that reason (:func:`_copy`, :func:`_equal`). Only the unpacking of the
buffers into views (:func:`belt_fmu.model.state.unpack`) keeps the counting.
"""
from __future__ import annotations


import numpy as np
from numba import njit

from .belt import closed_belt_forces, implicit_axial_correction, implicit_belt_correction
from .contact import normal_contact, update_neighbour_lists
from .drive import accelerate_pulleys, update_pulley_centers
from .friction import friction_impulses
from .inputs import CRANK_SPEED_RANGE
from .outputs import accumulate_outputs, evaluate_outputs, mean_outputs
from .stability import MAX_STEP, bending_is_implicit, explicit_modes, limiting_mode
from .state import dimensions, motion_size, unpack, unpack_state
from .tensioner import advance_arm

OK = 0
NOT_FINITE = 1
OVERSTRETCHED = 2
#: (:func:`communicate`) a pulley ran away: see :func:`runaway`
RUNAWAY = 3
#: element strain beyond which the run is declared diverged (a real belt breaks far earlier)
STRAIN_LIMIT = 0.25
#: steps between the checks for a diverged state (and after the last step)
HEALTH_CHECK_INTERVAL = 64
#: fraction of the stability limit used as time step
STEP_SAFETY = 0.8
#: internal steps shorter than this fraction of the nominal step are too short to resolve the
#: friction and axial forces the outputs read (:func:`report`); the outputs then take a trial
#: step of the nominal length
TRIAL_STEP_FRACTION = 0.5
#: a pulley whose cord surface runs faster than this multiple of the belt speed plus
#: RUNAWAY_SPEED_MARGIN [m/s] has run away (creep slip is a few percent; the margin covers
#: the crank at rest)
RUNAWAY_SPEED_RATIO = 1.5
RUNAWAY_SPEED_MARGIN = 5.0
#: a torque-driven crank faster than the model's crank-speed range [rad/s] has run away (the
#: engine torque drives it and no load holds it back)
MAX_CRANK_OMEGA = CRANK_SPEED_RANGE[1]

#: The control words of a drive (float64, BeltDrive.control), which :func:`communicate`
#: keeps, so that the native loader's fast path (a cfunc around it,
#: belt_fmu.model.discretized_native) and Python share one bookkeeping: the inputs the state
#: runs at, crank omega CCW [rad/s] and pump torque [N m]; the length [s] of the steps the
#: outputs' trial step takes and the nominal step [s]; 1 when the outputs are those of the
#: state; 1 while the outputs' trial step may be the next run's first step, with the inputs,
#: step length and neighbour lists' remaining validity [s] it was taken with (:func:`report`,
#: :func:`run`); 1 when the outputs are averaged over each communication interval
#: (``[drive] output_mode = "average"``), the time [s] the running integral of the outputs
#: covers and the length [s] of the interval's steps. After these words the control array holds
#: that integral (one value per output) and a scratch vector of the outputs of one step
#: (:func:`average_buffers`).
(CRANK_OMEGA, PUMP_TORQUE, OUTPUT_DT, NOMINAL_DT, OUTPUTS_CURRENT, TRIAL_TAKEN, TRIAL_CRANK_OMEGA,
 TRIAL_PUMP_TORQUE, TRIAL_DT, TRIAL_LISTS_VALID_FOR, AVERAGING, AVERAGE_TIME, AVERAGE_DT, CONTROL_SIZE) = range(14)


def control_size(n_outputs: int) -> int:
    """Length of the control array of a drive with ``n_outputs`` outputs (the words, the
    outputs' running integral and a step's outputs)."""
    return CONTROL_SIZE + 2 * n_outputs


def stable_time_step(parameters, max_step: float = MAX_STEP) -> float:
    """Time step [s]: :data:`STEP_SAFETY` times the stability limit of the explicit part
    (:mod:`belt_fmu.model.stability`: contact and bristle springs, independent of the element
    length), at most ``max_step``."""
    belt, contact, friction = parameters.belt[0], parameters.contact[0], parameters.friction[0]
    modes = explicit_modes(belt["node_mass"], contact["stiffness_linear"], contact["stiffness_quadratic"],
                           contact["damping"], friction["bristle_stiffness"])
    return min(STEP_SAFETY * limiting_mode(modes)[0], max_step)


def choose_bending_scheme(parameters, dt: float) -> None:
    """Set the BELT record's ``implicit_bending`` for steps of ``dt`` [s]
    (:func:`belt_fmu.model.stability.bending_is_implicit`): implicit where the explicit
    bending would limit the step, so that the step stays the contact's at any element count."""
    belt = parameters.belt[0]
    belt["implicit_bending"] = int(bending_is_implicit(belt["node_mass"], belt["node_inertia"], belt["rest_length"],
                                                       belt["bending_stiffness"], belt["bending_damping"], dt,
                                                       STEP_SAFETY))


@njit(cache=True, _nrt=False, inline="always")
def accelerate_nodes(belt, s, w, dt):
    """Explicit velocity predictor of the belt nodes from ``w.node_force`` (friction excluded)
    and gravity (the layout's ``gravity_m_per_s2``, 0 unless given)."""
    inv_m = 1.0 / belt.node_mass
    inv_j = 1.0 / belt.node_inertia
    for i in range(s.u.shape[0]):
        s.u[i, 0] += dt * (w.node_force[i, 0] * inv_m + belt.gravity_x)
        s.u[i, 1] += dt * (w.node_force[i, 1] * inv_m + belt.gravity_y)
        s.u[i, 2] += dt * w.node_force[i, 2] * inv_j


@njit(cache=True, _nrt=False, inline="always")
def move(s, dt):
    """Positions of the nodes and pulley angles from the new velocities."""
    for i in range(s.q.shape[0]):
        s.q[i, 0] += dt * s.u[i, 0]
        s.q[i, 1] += dt * s.u[i, 1]
        s.q[i, 2] += dt * s.u[i, 2]
    for j in range(s.theta.shape[0]):
        s.theta[j] += dt * s.omega[j]


@njit(cache=True, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def step(p, s, w, dt, crank_omega, water_pump_torque, resolved):
    """One step of length ``dt`` [s] of the scheme in the module docstring; ``crank_omega``
    [rad/s] is the crank's speed, CCW (global), unless the crank is torque driven (then it is
    not used). ``p`` are the drive's parameter records, ``s`` its state views, ``w`` its work
    views. Requires neighbour lists valid for the step
    (:func:`belt_fmu.model.contact.update_neighbour_lists`). ``resolved``: the step is long
    enough to resolve the friction forces, which then become the next step's warm start
    (:func:`belt_fmu.model.friction.friction_impulses`)."""
    belt = p.belt[0]
    update_pulley_centers(p, s, w)  # the tensioner pulley rides on its arm
    if p.roles[0].crank_speed_input != 0:
        s.omega[p.roles[0].crank] = crank_omega  # the crank's speed is an input

    # forces at the current positions, friction excluded
    closed_belt_forces(belt, s, w)
    normal_contact(p, s, w)  # also lists this step's contacts

    # new velocities: explicit predictor, then the implicit parts
    accelerate_nodes(belt, s, w, dt)
    accelerate_pulleys(p, s, w, dt, water_pump_torque)
    if belt.implicit_bending:
        implicit_belt_correction(belt, s, w, dt)
    else:
        implicit_axial_correction(belt, s, w, dt)
    friction_impulses(p, s, w, dt, resolved)
    advance_arm(p, s, w, dt)  # the arm's rate and angle, from this step's hub load

    move(s, dt)  # new positions from the new velocities


@njit(cache=True, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def health(p, s, w):
    """OK, NOT_FINITE or OVERSTRETCHED for the current state."""
    limit = p.belt[0].axial_stiffness * STRAIN_LIMIT
    for i in range(s.q.shape[0]):
        if not (np.isfinite(s.q[i, 0]) and np.isfinite(s.q[i, 1]) and np.isfinite(s.u[i, 0])
                and np.isfinite(s.u[i, 1])):
            return NOT_FINITE
        if abs(w.axial_force[i]) > limit:
            return OVERSTRETCHED
    for j in range(s.omega.shape[0]):
        if not np.isfinite(s.omega[j]):
            return NOT_FINITE
    if not (np.isfinite(s.arm[0]) and np.isfinite(s.arm[1])):
        return NOT_FINITE
    return OK


@njit(cache=True, _nrt=False, inline="always")
def advance(p, s, w, n_steps, dt, crank_omega, water_pump_torque, resolved):
    """Take ``n_steps`` steps of ``dt`` with constant inputs.

    Returns (status, steps taken): the run stops at the first check that finds a
    non-finite value or an overstretched element (checked every
    :data:`HEALTH_CHECK_INTERVAL` steps and at the end). Neighbour lists are rebuilt before a
    step that ``w.lists_valid_for`` does not cover (after changing the state from outside, set
    it to 0 and clear ``w.normal_force``: BeltDrive._state_replaced).
    """
    for k in range(n_steps):
        update_neighbour_lists(p, s, w, dt)
        step(p, s, w, dt, crank_omega, water_pump_torque, resolved)
        w.lists_valid_for[0] -= dt
        if (k + 1) % HEALTH_CHECK_INTERVAL == 0 or k == n_steps - 1:
            status = health(p, s, w)
            if status != OK:
                return status, k + 1
    return OK, n_steps


@njit(cache=True, _nrt=False, inline="always")
def average_buffers(control):
    """(running integral of the outputs, one step's outputs): the views of ``control`` after
    its words."""
    n_outputs = (control.shape[0] - CONTROL_SIZE) // 2
    return control[CONTROL_SIZE:CONTROL_SIZE + n_outputs], control[CONTROL_SIZE + n_outputs:]


@njit(cache=True, _nrt=False, inline="always")
def add_step_outputs(p, before, w, control, dt, weight):
    """Add the outputs of the state ``before`` (the views of a step's start state), with the
    forces of the step from it just taken (in ``w``: the forces :func:`report` reads), to the
    running integral with the quadrature weight ``weight`` [s]; the integral then covers
    ``dt`` [s] more."""
    integral, sample = average_buffers(control)
    evaluate_outputs(p, before, w, sample)
    accumulate_outputs(integral, sample, weight)
    control[AVERAGE_TIME] += dt


@njit(cache=True, _nrt=False, inline="always")
def advance_averaged(p, s, w, n_steps, dt, crank_omega, water_pump_torque, resolved, y, start, control, first):
    """:func:`advance`, adding each step's start state's outputs to the running integral of
    the ``control`` array (trapezoidal rule: the outputs at the interval's ends weigh
    ``dt / 2``, the others ``dt``; ``first``: these steps begin the interval, else one came
    before). ``start`` is scratch: at each step's start, a copy of what the outputs read of
    the state ``y`` (``s`` its views), its leading views :data:`~belt_fmu.model.state.MOTION`.
    The steps are :func:`advance`'s: averaging changes no state."""
    before = unpack_state(start, *dimensions(p))
    motion = motion_size(before)
    for k in range(n_steps):
        _copy(start[:motion], y[:motion])
        update_neighbour_lists(p, s, w, dt)
        step(p, s, w, dt, crank_omega, water_pump_torque, resolved)
        w.lists_valid_for[0] -= dt
        add_step_outputs(p, before, w, control, dt, 0.5 * dt if first and k == 0 else dt)
        if (k + 1) % HEALTH_CHECK_INTERVAL == 0 or k == n_steps - 1:
            status = health(p, s, w)
            if status != OK:
                return status, k + 1
    return OK, n_steps


@njit(cache=True, _nrt=False)
def _copy(target, source):
    """``target[:] = source`` for arrays of one size (the slice assignment needs numba's
    reference counting)."""
    for i in range(source.shape[0]):
        target[i] = source[i]


@njit(cache=True, _nrt=False)
def _equal(a, b):
    """Whether the arrays ``a`` and ``b`` of one size hold equal values (np.array_equal, which
    allocates)."""
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


@njit(cache=True, _nrt=False, inline="always")
def run(y, s, w, parameters, n_steps, dt, crank_omega, water_pump_torque, trial_y, trial_start,
        trial_lists_valid_for, resolved, control):
    """:func:`advance` on a drive's state ``y`` (``s`` its views, ``w`` those of its work
    buffers) for a communication step (:func:`communicate`).

    The first step may have been taken already, as the outputs' trial step (:func:`report`):
    if ``trial_lists_valid_for`` > 0 (the caller passes it only when that trial was taken
    with these inputs and this ``dt``) and ``y`` still equals the state the trial started
    from, ``trial_start``, bit for bit, the trial's end state ``trial_y`` is the first step's:
    the same compiled :func:`step` on the same state, inputs and ``dt``, leaving the work
    buffers as that step does (the trial step's), and ``trial_lists_valid_for`` the neighbour
    lists' validity [s] the step started with. So reading the outputs costs no step of its
    own, and a run that reads them follows the same states as one that does not.

    With ``control[AVERAGING]`` the steps add their outputs to the running integral
    (:func:`advance_averaged`, ``trial_start`` its scratch once the trial is settled).
    """
    averaging = control[AVERAGING] != 0.0
    if trial_lists_valid_for > 0.0 and _equal(y, trial_start):
        _copy(y, trial_y)
        w.lists_valid_for[0] = trial_lists_valid_for - dt
        if averaging:  # the trial step's forces are still in w, its start in trial_start
            add_step_outputs(parameters, unpack_state(trial_start, *dimensions(parameters)), w, control, dt, 0.5 * dt)
        if n_steps == 1:
            return health(parameters, s, w), 1
        if averaging:
            status, taken = advance_averaged(parameters, s, w, n_steps - 1, dt, crank_omega, water_pump_torque,
                                             resolved, y, trial_start, control, False)
        else:
            status, taken = advance(parameters, s, w, n_steps - 1, dt, crank_omega, water_pump_torque, resolved)
        return status, taken + 1
    if averaging:
        return advance_averaged(parameters, s, w, n_steps, dt, crank_omega, water_pump_torque, resolved, y,
                                trial_start, control, True)
    return advance(parameters, s, w, n_steps, dt, crank_omega, water_pump_torque, resolved)


@njit(cache=True, _nrt=False, inline="always")
def report(y, work, index_work, parameters, trial_y, trial_start, dt, crank_omega, water_pump_torque, outputs):
    """The outputs of the state ``y`` into ``outputs`` (for :func:`current_outputs`).

    The forces among the outputs (hub forces, span tensions, crank torque) are those the
    scheme applies over a step: the friction impulses and the implicit axial forces depend
    on the step's length, and so would outputs read after a step of any other length (a
    communication step ending 1e-12 s after a full one moved hub forces by 5 %). So they
    are always those of one trial step of length ``dt`` from ``y`` with these inputs, taken
    on the copy ``trial_y``: the outputs are a function of the state, the inputs and ``dt``
    (BeltDrive passes the length of the steps it runs with, or its nominal step after an
    interval too short to resolve the forces), not of the steps that led there. ``y`` is
    kept in ``trial_start``, so that :func:`run` can take the trial as its first step.

    Returns the neighbour lists' validity [s] the trial step started with (after the
    rebuild it made, if one was due), for :func:`run`; the validity in the work buffer is
    left as it was, so the run continues exactly as without the trial.
    """
    _copy(trial_y, y)
    _copy(trial_start, y)
    s, w = unpack(parameters, y, work, index_work)
    trial, _ = unpack(parameters, trial_y, work, index_work)
    valid_before = w.lists_valid_for[0]
    update_neighbour_lists(parameters, trial, w, dt)
    valid_for = w.lists_valid_for[0]
    # dt resolves the forces (communicate chooses it so); np.bool_: a bool, where the
    # constant True, a literal to numba, would compile step a second time
    step(parameters, trial, w, dt, crank_omega, water_pump_torque, np.bool_(True))
    w.lists_valid_for[0] = valid_before
    evaluate_outputs(parameters, s, w, outputs)
    return valid_for


@njit(cache=True, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def runaway(p, s):
    """True if a pulley runs away: its cord surface faster than :data:`RUNAWAY_SPEED_RATIO`
    times the belt speed the crank gives plus :data:`RUNAWAY_SPEED_MARGIN` (or not finite).
    The belt cannot drive a pulley that fast, so its load torque drives it (a negative load
    beyond what the belt can hold back). Also true for a torque-driven crank beyond
    :data:`MAX_CRANK_OMEGA`: the engine torque drives it and no load holds it back."""
    crank = p.roles[0].crank
    if not abs(s.omega[crank]) <= MAX_CRANK_OMEGA:  # only a torque-driven crank can
        return True
    belt_speed = abs(s.omega[crank]) * p.pulleys[crank].radius  # prescribed or torque-driven
    limit = RUNAWAY_SPEED_RATIO * belt_speed + RUNAWAY_SPEED_MARGIN
    for j in range(s.omega.shape[0]):
        if not abs(s.omega[j]) * p.pulleys[j].radius <= limit:
            return True
    return False


@njit(cache=True, _nrt=False, inline="always")
def communication_step(y, work, index_work, parameters, trial_y, trial_start, control, n_steps, dt, crank_omega,
                       water_pump_torque):
    """A communication step (for :func:`communicate`), ``n_steps`` steps of ``dt`` [s] with
    constant inputs, and the bookkeeping of the ``control`` words around :func:`run` (their
    table above).

    The inputs become the state's; the outputs' trial step will be as long as the steps
    taken, so that the forces read are those applied, unless they are too short to say (a
    1e-12 s step: then the nominal step); the last trial step is this run's first step if
    it had these inputs and this ``dt`` (:func:`run` checks that the state is still the one
    it started from). Returns (status, steps taken) as :func:`run`, the status
    :data:`RUNAWAY` after a run that ended well with a pulley running away (:func:`runaway`).
    The pulleys' input torques (``work``) are the caller's to set, and to clear
    ``control[TRIAL_TAKEN]`` when it changes them.
    """
    nominal = control[NOMINAL_DT]
    resolved = dt >= TRIAL_STEP_FRACTION * nominal
    output_dt = dt if resolved else nominal
    trial_lists_valid_for = 0.0
    if (control[TRIAL_TAKEN] != 0.0 and control[TRIAL_CRANK_OMEGA] == crank_omega
            and control[TRIAL_PUMP_TORQUE] == water_pump_torque and control[TRIAL_DT] == output_dt
            and control[TRIAL_DT] == dt):
        trial_lists_valid_for = control[TRIAL_LISTS_VALID_FOR]
    control[CRANK_OMEGA] = crank_omega
    control[PUMP_TORQUE] = water_pump_torque
    control[OUTPUT_DT] = output_dt
    control[OUTPUTS_CURRENT] = 0.0
    control[TRIAL_TAKEN] = 0.0
    if control[AVERAGING] != 0.0:  # a new interval: its integral starts empty
        control[AVERAGE_TIME] = 0.0
        control[AVERAGE_DT] = dt
        integral, _ = average_buffers(control)
        for i in range(integral.shape[0]):
            integral[i] = 0.0
    s, w = unpack(parameters, y, work, index_work)
    status, taken = run(y, s, w, parameters, n_steps, dt, crank_omega, water_pump_torque, trial_y, trial_start,
                        trial_lists_valid_for, resolved, control)
    if status == OK and runaway(parameters, s):
        status = RUNAWAY
    return status, taken


@njit(cache=True, _nrt=False, inline="always")
def current_outputs(y, work, index_work, parameters, trial_y, trial_start, control, outputs):
    """For :func:`communicate`: ``outputs`` of the state ``y`` at the
    inputs of ``control`` (:func:`report`, with the trial step's length ``control[OUTPUT_DT]``)
    unless they are current already; the trial step is then kept in ``control`` for the
    next :func:`communicate`. With ``control[AVERAGING]``, after a communication step, the
    averaged outputs are their means over it: the running integral plus the last
    trapezoid's end, the outputs of this state, over half a step. After a step too short
    to resolve the forces (its trial step the nominal one) they are the outputs of this
    state, the mean over a vanishing interval: the integral holds the forces of steps that
    short, which would make the outputs depend on the step's length."""
    if control[OUTPUTS_CURRENT] != 0.0:
        return
    lists_valid_for = report(y, work, index_work, parameters, trial_y, trial_start, control[OUTPUT_DT],
                             control[CRANK_OMEGA], control[PUMP_TORQUE], outputs)
    if control[AVERAGING] != 0.0 and control[AVERAGE_TIME] > 0.0 and control[AVERAGE_DT] == control[OUTPUT_DT]:
        integral, _ = average_buffers(control)
        mean_outputs(integral, 0.5 * control[AVERAGE_DT], outputs, control[AVERAGE_TIME], outputs,
                     parameters.pulleys.shape[0])
    control[TRIAL_CRANK_OMEGA] = control[CRANK_OMEGA]
    control[TRIAL_PUMP_TORQUE] = control[PUMP_TORQUE]
    control[TRIAL_DT] = control[OUTPUT_DT]
    control[TRIAL_LISTS_VALID_FOR] = lists_valid_for
    control[TRIAL_TAKEN] = 1.0
    control[OUTPUTS_CURRENT] = 1.0


@njit(cache=True, _nrt=False)
def communicate(y, work, index_work, parameters, trial_y, trial_start, control, n_steps, dt, crank_omega,
                water_pump_torque, outputs):
    """The model's one entry, from Python and from the native loader (belt_fmu.model.
    discretized_native): with ``n_steps`` > 0 a communication step (:func:`communication_step`),
    returning (status, steps taken); with 0 steps the ``outputs`` of the state
    (:func:`current_outputs`), returning (OK, 0).

    One entry, so that numba compiles and LLVM optimizes the step once: each compiled
    function that calls another links the callee's code in and optimizes it again."""
    if n_steps == 0:
        current_outputs(y, work, index_work, parameters, trial_y, trial_start, control, outputs)
        return OK, 0
    return communication_step(y, work, index_work, parameters, trial_y, trial_start, control, n_steps, dt,
                              crank_omega, water_pump_torque)
