"""The discretized model's equations of motion linearized about steady running.

Generalized coordinates: every belt node's x, y [m] and angle phi [rad] (3 per node, in node
order), every pulley's rotation [rad, CCW] and the tensioner arm angle [rad, CCW]; a
speed-driven crankshaft's rotation is prescribed (its speed is the model's input) and drops
out, its column of the forces kept as the excitation its speed ripple applies (a
torque-driven crank turns on its inertia: a coordinate like the others), as does the arm
without a tensioner. :class:`Linearization` also carries the sensitivities of the outputs the
harmonic response reports (hub forces, belt torques, span tensions). :func:`generalized_forces` evaluates the forces on all of them
with the model's own kernels (belt elements, transverse damping, normal contact, pulley
loads, tensioner arm), friction written as an explicit function of the contact's slip and
relative tangential displacement (below), and :func:`tangent_matrices` differentiates it by
central differences: ``K_q = -df/dq`` and ``C_q = -df/dq'``.

The belt material flows through the drive, so the steady running state is steady only in
the frame fixed to the drive (Eulerian). Write the perturbation of the belt as a field
``u(k, t)`` over a fixed mesh, ``k`` the node index as a continuous coordinate: the node
that is at mesh point ``k`` now is at ``k + t / tau`` later, ``tau`` the time a node takes
to the next node's place (the same for every node, by conservation of mass). A node's
velocity and acceleration are the material derivatives

    d/dt = d/dt|_k + E,      E = (1/tau) d/dk,

and the linearized equations of motion are those of an axially moving continuum
(Wickert and Mote, "Classical vibration analysis of axially moving continua", ASME J. Appl.
Mech. 57, 1990):

    M q'' + (2 M E + C_q) q' + (K_q + C_q E + M E^2) q = 0.

``M E^2`` and ``2 M E`` are the discretized ``m' v^2 d^2/ds^2`` and ``2 m' v d/ds`` of the
moving string (E is the cyclic central difference in ``k``, acting on each of a node's
three coordinates; it is zero on the pulleys and the arm, which do not flow).

In the damping forces' ``C_q E`` the material rate is differenced upwind, with the
second-order backward difference ``(3 u_k - 4 u_{k-1} + u_{k-2}) / (2 tau)`` (Warming and
Beam, "Upwind second-order difference schemes and applications in aerodynamic flows", AIAA
J. 14, 1976). Where the belt holds to a pulley, the friction's stiff damper makes the slip
an advection equation: a node's displacement is carried in from the wrap's entry, upstream.
The central difference makes each contact's slip depend on the node downstream of it, which
on the polygon's short wraps (one or two nodes on the idlers and the tensioner pulley of the
built-in drive) is a different contact or none.

Even upwind, a difference over one or two nodes resolves a wrap coarsely, where the time
domain, whose nodes carry the material, needs no difference at all: the linear model
converges more slowly with the mesh than the time domain does. On the built-in drive (150
elements) the arm's response to the crank's speed ripple, with the arm's friction replaced
by a damper of 1 or 15 N m s/rad, lies 3-14 % below the time domain's at 500-3000 rpm when
linearized on the time domain's mesh, and within -7 to +12 % (4 % on average) on a mesh
twice as fine, while the time domain itself changes by 2 % between the two meshes (with the
central difference, on the time domain's mesh: -5 to +34 %). The linear analyses (modes,
Campbell diagram, harmonic response) therefore linearize the layout with :data:`REFINEMENT`
times its elements (:func:`linearization_layout`; docs/modes.md, "Agreement with the time
domain").

Friction enters by its local tangent at the operating point:

* velocity laws (creep polynomial, tanh): the force follows the slip through the law, so its
  slope is a damper between node and pulley (a stiff one where the belt sticks);
* bristle: a sticking contact is its spring ``k`` (and damper) on the relative tangential
  displacement; a sliding one carries ``mu N``;
* state laws (Dahl, LuGre, generalized Maxwell slip): the coefficient ``m0`` of the operating
  point, plus, where the contact sticks, the law's pre-sliding stiffness (Dahl
  ``sigma (1 - |m0|/mu)``, LuGre ``sigma0``, GMS the sum of ``nu_k sigma_k`` of its sticking
  elements) times N on the relative tangential displacement; LuGre's ``sigma1 + sigma2``
  damping. This neglects their internal relaxation dynamics (a first-order lag).

The tensioner arm's Coulomb friction either sticks (its tanh law's slope: at small
amplitudes the arm of a damped tensioner does not move), slides (a constant torque, no
stiffness or damping), :data:`ARM_STUCK`, :data:`ARM_SLIDING`, or, sliding, adds an
equivalent viscous damping (its describing function, :mod:`belt_fmu.analysis.arm_friction`).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .. import kernel_cache
from ..model.belt import closed_belt_forces
from ..model.contact import normal_contact, rebuild_neighbour_lists
from ..model.drive import pulley_loads, update_pulley_centers
from ..model.friction import LAW_BRISTLE, LAW_DAHL, LAW_GMS, LAW_LUGRE, friction_coefficient, stribeck
from ..model.state import dimensions, unpack, unpack_state
from ..model.tensioner import arm_torque

ARM_STUCK = 0
ARM_SLIDING = 1
ARM_MODES = {"stuck": ARM_STUCK, "sliding": ARM_SLIDING}

#: the linear analyses' belt has this many times the elements of the layout's (module
#: docstring)
REFINEMENT = 2


def linearization_layout(layout):
    """``layout`` as the linear analyses discretize it: :data:`REFINEMENT` times its belt
    elements (at most the layout format's limit); the lumped model's unchanged."""
    from ..layout import MAX_ELEMENTS

    if layout.drive.model == "lumped":
        return layout
    elements = min(REFINEMENT * layout.belt.n_elements, MAX_ELEMENTS)
    return dataclasses.replace(layout, belt=dataclasses.replace(layout.belt, n_elements=elements))


#: [m, rad] step of the central differences in the coordinates: far below the contact
#: penetrations (tens of microns) so that a node at the edge of a wrap keeps its contact
#: state, far above round-off (forces ~1e3 N: 1e-13 N / 1e-8 m)
POSITION_STEP = 1e-8
#: [m/s, rad/s] step in the velocities
VELOCITY_STEP = 1e-6
#: a bristle or state-law contact whose friction is below this fraction of its limit sticks
STICK_FRACTION = 0.999


@njit(cache=True)
def _contact_friction(law, mu, normal, slip, belt_speed, shift, base_force, base_normal, base_slip, state):
    """Friction force [N] on a node along the CCW tangent of its pulley (module docstring):
    ``slip`` the slip now, ``shift`` the relative tangential displacement since the
    operating point [m], the ``base_*`` values and ``state`` those of the operating point."""
    if law.law == LAW_BRISTLE:
        limit = mu * base_normal
        if abs(base_force) < STICK_FRACTION * limit:
            return base_force - law.bristle_stiffness * shift - law.bristle_damping * (slip - base_slip)
        return (1.0 if base_force > 0.0 else -1.0) * mu * normal
    if law.law == LAW_DAHL or law.law == LAW_LUGRE or law.law == LAW_GMS:
        m0 = -base_force / base_normal if base_normal > 0.0 else 0.0
        stiffness = 0.0
        damping = 0.0
        if law.law == LAW_DAHL:
            stiffness = law.dahl_stiffness * max(0.0, 1.0 - abs(m0) / mu)
        elif law.law == LAW_LUGRE:
            g0 = stribeck(law, mu, 0.0)
            stiffness = law.lugre_stiffness * max(0.0, 1.0 - law.lugre_stiffness * abs(state[0]) / g0)
            damping = law.lugre_damping + law.lugre_viscous
        else:
            for k in range(law.gms_count):
                if state[2 * k + 1] == 0.0:
                    stiffness += law.gms_weight[k] * law.gms_stiffness[k]
        return -normal * (m0 + stiffness * shift + damping * (slip - base_slip))
    sign = 1.0 if slip > 0.0 else (-1.0 if slip < 0.0 else 0.0)
    return -sign * friction_coefficient(law, mu, abs(slip), belt_speed)[0] * normal


@njit(cache=True)
def _forces(p, s, w, base_q, base_theta, base_centers, base_friction, base_normal, base_slip, base_state,
            base_arm_rate, arm_mode, water_pump_torque, out):
    """Generalized forces of the state ``s`` into ``out`` (3n + p + 1): node forces and
    moments, pulley torques (crank included), arm torque [N, N m]. ``w`` must hold the
    operating point's neighbour lists."""
    belt = p.belt[0]
    n = s.q.shape[0]
    np_ = p.pulleys.shape[0]
    update_pulley_centers(p, s, w)
    closed_belt_forces(belt, s, w)
    normal_contact(p, s, w)
    for k in range(w.contact_count[0]):
        i = w.contact_node[k]
        j = w.contact_pulley[k]
        nx = w.contact_frame[k, 0]
        ny = w.contact_frame[k, 1]
        tx, ty = -ny, nx
        r = w.contact_frame[k, 2]
        vt = s.u[i, 0] * tx + s.u[i, 1] * ty
        slip = vt - (w.center_velocity[j, 0] * tx + w.center_velocity[j, 1] * ty) - s.omega[j] * r
        shift = (tx * (s.q[i, 0] - base_q[i, 0] - w.centers[j, 0] + base_centers[j, 0])
                 + ty * (s.q[i, 1] - base_q[i, 1] - w.centers[j, 1] + base_centers[j, 1])
                 - r * (s.theta[j] - base_theta[j]))
        f = _contact_friction(p.friction[0], p.pulleys[j].effective_mu, w.normal_force[i, j], slip, vt, shift,
                              base_friction[i, j], base_normal[i, j], base_slip[i, j], base_state[i, j])
        w.node_force[i, 0] += f * tx
        w.node_force[i, 1] += f * ty
        w.hub_force[j, 0] -= f * tx
        w.hub_force[j, 1] -= f * ty
        w.belt_torque[j] -= r * f
    for i in range(n):
        out[3 * i] = w.node_force[i, 0]
        out[3 * i + 1] = w.node_force[i, 1]
        out[3 * i + 2] = w.node_force[i, 2]
    roles = p.roles[0]
    for j in range(np_):
        pulley = p.pulleys[j]
        resisting, driving = pulley_loads(roles, pulley, j, s.omega[j], water_pump_torque, w.port_torque[j],
                                         p.load_table)
        torque = w.belt_torque[j] + pulley.sense * driving - pulley.bearing_damping * s.omega[j]
        if resisting > 0.0:
            sign = 1.0 if s.omega[j] > 0.0 else -1.0
            torque -= sign * friction_coefficient(p.load_friction[0], resisting, abs(s.omega[j]), 0.0)[0]
        out[3 * n + j] = torque
    out[3 * n + np_] = 0.0
    t = roles.tensioner
    if t >= 0:
        tensioner = p.tensioner[0]
        torque = arm_torque(tensioner, s.arm[0], s.arm[1], w.hub_force[t, 0], w.hub_force[t, 1])
        if arm_mode == ARM_STUCK:
            # stuck about the operating point: the friction's slope at zero rate, whatever the
            # arm's residual motion at the instant the state was taken
            level = 0.5 * (tensioner.friction_away + tensioner.friction_toward)
            rate = s.arm[1] - base_arm_rate
            sign = 1.0 if rate > 0.0 else -1.0
            torque -= sign * friction_coefficient(p.arm_friction[0], level, abs(rate), 0.0)[0]
        out[3 * n + np_] = torque


@njit(cache=True)
def _shift(s, d, n, np_, delta, rate):
    """Add ``delta`` to coordinate ``d`` (or to its rate)."""
    if d < 3 * n:
        if rate:
            s.u[d // 3, d % 3] += delta
        else:
            s.q[d // 3, d % 3] += delta
    elif d < 3 * n + np_:
        if rate:
            s.omega[d - 3 * n] += delta
        else:
            s.theta[d - 3 * n] += delta
    else:
        s.arm[1 if rate else 0] += delta


@njit(cache=True)
def _observe(w, members, counts, out):
    """The linear analysis' outputs of the state whose forces ``w`` holds, into ``out`` (4p):
    each pulley's hub force x, y [N] and belt torque [N m, CCW], then each span's tension [N],
    the mean axial force of its elements ``members[j, :counts[j]]`` (the operating point's
    elements of the model's ``span_tension`` output)."""
    p = counts.shape[0]
    for j in range(p):
        out[3 * j] = w.hub_force[j, 0]
        out[3 * j + 1] = w.hub_force[j, 1]
        out[3 * j + 2] = w.belt_torque[j]
        total = 0.0
        for k in range(counts[j]):
            total += w.axial_force[members[j, k]]
        out[3 * p + j] = total / counts[j]


@njit(cache=True)
def _jacobians(y0, y, work, index_work, parameters, base_slip, base_friction, rows, columns, arm_mode,
               water_pump_torque, members, counts, stiffness, damping, output_stiffness, output_damping):
    """Central differences about ``y0`` in the coordinates ``columns`` (and their rates): the
    forces' ``-df/dq`` of the coordinates ``rows`` into ``stiffness`` and ``-df/dq'`` into
    ``damping``; the outputs' (:func:`_observe`) ``dy/dq`` and ``dy/dq'`` into
    ``output_stiffness`` and ``output_damping``."""
    s, w = unpack(parameters, y, work, index_work)
    n = s.q.shape[0]
    np_ = s.theta.shape[0]
    size = 3 * n + np_ + 1
    y[:] = y0
    base_q = s.q.copy()
    base_theta = s.theta.copy()
    update_pulley_centers(parameters, s, w)
    base_centers = w.centers.copy()
    base_normal = w.normal_force.copy()
    base_state = s.friction.copy()
    base_arm_rate = s.arm[1]
    plus = np.empty(size)
    minus = np.empty(size)
    seen_plus = np.empty(4 * np_)
    seen_minus = np.empty(4 * np_)
    for c in range(columns.shape[0]):
        d = columns[c]
        for rate in (False, True):
            h = VELOCITY_STEP if rate else POSITION_STEP
            y[:] = y0
            _shift(s, d, n, np_, h, rate)
            _forces(parameters, s, w, base_q, base_theta, base_centers, base_friction, base_normal, base_slip,
                    base_state, base_arm_rate, arm_mode, water_pump_torque, plus)
            _observe(w, members, counts, seen_plus)
            y[:] = y0
            _shift(s, d, n, np_, -h, rate)
            _forces(parameters, s, w, base_q, base_theta, base_centers, base_friction, base_normal, base_slip,
                    base_state, base_arm_rate, arm_mode, water_pump_torque, minus)
            _observe(w, members, counts, seen_minus)
            target = damping if rate else stiffness
            for r in range(rows.shape[0]):
                target[r, c] = -(plus[rows[r]] - minus[rows[r]]) / (2.0 * h)
            seen = output_damping if rate else output_stiffness
            for r in range(4 * np_):
                seen[r, c] = (seen_plus[r] - seen_minus[r]) / (2.0 * h)
    y[:] = y0


def coordinates(drive) -> np.ndarray:
    """Indices (into the 3n + p + 1 generalized forces of :func:`_forces`) of the free
    coordinates of ``drive``: all node coordinates, the pulleys but a speed-driven crank
    (a torque-driven one turns on its inertia), the arm if there is a tensioner."""
    n = drive.parameters.belt[0]["n_nodes"]
    p = len(drive.parameters.pulleys)
    roles = drive.parameters.roles[0]
    prescribed = roles["crank"] if roles["crank_speed_input"] else -1
    dofs = list(range(3 * n)) + [3 * n + j for j in range(p) if j != prescribed]
    if roles["tensioner"] >= 0:
        dofs.append(3 * n + p)
    return np.array(dofs, dtype=np.int64)


@dataclass(frozen=True)
class Linearization:
    """The drive's forces and outputs linearized about its current state (module docstring).

    ``coordinates`` are the free coordinates (:func:`coordinates`); ``crank_*`` the forces'
    column of a speed-driven crank's rotation, through which its prescribed speed excites the
    drive (zero for a torque-driven crank, which is free). The outputs are, per pulley, its
    hub force x, y [N] and belt torque [N m, CCW], then per span its tension [N]
    (:func:`output_index`); their matrices have a column per free coordinate and a last one
    for a speed-driven crank's rotation."""

    coordinates: np.ndarray  # (d,) indices into the generalized forces
    stiffness: np.ndarray  # (d, d) K_q = -df/dq [N/m, N, N m/rad]
    damping: np.ndarray  # (d, d) C_q = -df/dq'
    crank_stiffness: np.ndarray  # (d,) -df/dtheta_crank
    crank_damping: np.ndarray  # (d,) -df/domega_crank
    output_stiffness: np.ndarray  # (4p, d + 1) dy/dq
    output_damping: np.ndarray  # (4p, d + 1) dy/dq'


def output_index(p: int, quantity: str, j: int) -> int:
    """Row of a :class:`Linearization`'s outputs: ``quantity`` one of hub_force_x,
    hub_force_y, belt_torque (of pulley j) or span_tension (of the span from pulley j to
    j + 1)."""
    if quantity == "span_tension":
        return 3 * p + j
    return 3 * j + ("hub_force_x", "hub_force_y", "belt_torque").index(quantity)


def linearize(drive, water_pump_torque: float, arm_friction="stuck") -> Linearization:
    """The :class:`Linearization` of ``drive`` at its current state (module docstring).
    ``arm_friction``: "stuck", "sliding", or a float, an equivalent viscous damping
    [N m s/rad] that replaces the sliding arm's friction (the describing function of
    :mod:`belt_fmu.analysis.arm_friction`)."""
    from ..model.outputs import span_elements

    equivalent = 0.0
    if not isinstance(arm_friction, str):
        equivalent, arm_friction = float(arm_friction), "sliding"
        if not (math.isfinite(equivalent) and equivalent >= 0.0):
            raise ValueError(f"an equivalent arm damping must be a finite number >= 0 N m s/rad, got {equivalent!r}")
    if arm_friction not in ARM_MODES:
        raise ValueError(f"arm_friction must be one of {', '.join(ARM_MODES)} or a damping, got {arm_friction!r}")
    dofs = coordinates(drive)
    roles = drive.parameters.roles[0]
    n = drive.parameters.belt[0]["n_nodes"]
    columns = np.append(dofs, 3 * n + roles["crank"]) if roles["crank_speed_input"] else dofs
    # the work buffers then hold the forces of one step from this state (the outputs' trial
    # step, belt_fmu.model.integrator.report) and the trial state its end-of-step slips and
    # friction forces
    drive.evaluate_outputs()
    trial = unpack_state(drive._trial_y, *dimensions(drive.parameters))
    base_slip = trial.slip.copy()
    base_friction = trial.friction_force.copy()
    elements = span_elements(drive.views.q, drive.current_path())
    counts = np.array([len(e) for e in elements], dtype=np.int64)
    members = np.zeros((len(elements), max(counts)), dtype=np.int64)
    for j, e in enumerate(elements):
        members[j, :len(e)] = e
    y0 = drive.y.copy()
    work = drive.work.copy()
    index_work = drive.index_work.copy()
    d = len(dofs)
    stiffness = np.zeros((d, len(columns)))
    damping = np.zeros_like(stiffness)
    output_stiffness = np.zeros((4 * len(counts), d + 1))
    output_damping = np.zeros_like(output_stiffness)
    with kernel_cache.compiling("analysis"):
        _rebuild(y0.copy(), work, index_work, drive.parameters)
        _jacobians(y0, y0.copy(), work, index_work, drive.parameters, base_slip, base_friction, dofs, columns,
                   ARM_MODES[arm_friction], water_pump_torque, members, counts, stiffness, damping,
                   output_stiffness[:, :len(columns)], output_damping[:, :len(columns)])
    if roles["tensioner"] >= 0:
        damping[d - 1, d - 1] += equivalent
    if len(columns) > d:
        crank_stiffness, crank_damping = stiffness[:, d].copy(), damping[:, d].copy()
    else:
        crank_stiffness, crank_damping = np.zeros(d), np.zeros(d)
    return Linearization(dofs, stiffness[:, :d].copy(), damping[:, :d].copy(), crank_stiffness, crank_damping,
                         output_stiffness, output_damping)


@njit(cache=True)
def _rebuild(y, work, index_work, parameters):
    s, w = unpack(parameters, y, work, index_work)
    rebuild_neighbour_lists(parameters, s, w)


def mass_matrix(drive, dofs) -> np.ndarray:
    """Diagonal of the mass matrix of the coordinates ``dofs`` [kg, kg m^2]: node mass (x, y)
    and rotary inertia (phi), pulley inertias, arm inertia about its pivot."""
    p = drive.parameters
    n = p.belt[0]["n_nodes"]
    node = np.tile([p.belt[0]["node_mass"], p.belt[0]["node_mass"], p.belt[0]["node_inertia"]], n)
    full = np.concatenate([node, p.pulleys["inertia"], [p.tensioner[0]["arm_inertia"]]])
    return full[dofs]


def node_passage_rate(drive) -> float:
    """1/tau [1/s]: how many nodes pass a fixed point per second (module docstring), the
    mean over the elements of (mean end speed along the chord) / chord length."""
    q, u = drive.views.q, drive.views.u
    d = np.roll(q[:, :2], -1, axis=0) - q[:, :2]
    length = np.hypot(d[:, 0], d[:, 1])
    e = d / length[:, None]
    speed = 0.5 * (np.einsum("ij,ij->i", u[:, :2], e) + np.einsum("ij,ij->i", np.roll(u[:, :2], -1, axis=0), e))
    return float(np.mean(speed / length))


#: weights of nodes k + offset in E's row k, per :func:`transport_operator` scheme
STENCILS = {"central": ((1, 0.5), (-1, -0.5)), "upwind": ((0, 1.5), (-1, -2.0), (-2, 0.5))}


def transport_operator(n: int, rate: float, dofs, scheme: str = "central") -> np.ndarray:
    """E = (1/tau) d/dk on the coordinates ``dofs``, zero on pulleys and arm: in the node
    index of each node coordinate, the cyclic central difference or (``scheme`` "upwind") the
    second-order backward difference (module docstring)."""
    e = np.zeros((len(dofs), len(dofs)))
    position = {d: k for k, d in enumerate(dofs)}
    for i in range(n):
        for c in range(3):
            row = position[3 * i + c]
            for offset, weight in STENCILS[scheme]:
                e[row, position[3 * ((i + offset) % n) + c]] += weight * rate
    return e


@njit(cache=True)
def _arm_stuck_damping(parameters):
    tensioner = parameters.tensioner[0]
    level = 0.5 * (tensioner.friction_away + tensioner.friction_toward)
    return friction_coefficient(parameters.arm_friction[0], level, 0.0, 0.0)[1]


def arm_stuck_damping(drive) -> float:
    """[N m s/rad] The stuck arm's damping: the slope at rest of its regularized Coulomb
    friction at the mean of its two levels (what :data:`ARM_STUCK` linearizes); 0 without a
    tensioner."""
    if drive.parameters.roles[0]["tensioner"] < 0:
        return 0.0
    # not announced as the analysis's compile: the lumped model's response needs only this
    # small kernel, which compiles in well under a second
    return float(_arm_stuck_damping(drive.parameters))


def motion_matrices(drive, linear: Linearization):
    """(M diagonal, G, K, E_d) of the equations of motion ``M q'' + G q' + K q = f`` about
    the drive's current state (module docstring): ``G = 2 M E + C_q``,
    ``K = K_q + C_q E_d + M E^2``, E the central and E_d the upwind transport operator (the
    material rate a velocity-dependent force sees); G, K and E_d sparse (CSR)."""
    from scipy import sparse

    dofs = linear.coordinates
    n, rate = drive.parameters.belt[0]["n_nodes"], node_passage_rate(drive)
    mass = mass_matrix(drive, dofs)
    e = sparse.csr_matrix(transport_operator(n, rate, dofs))
    upwind = sparse.csr_matrix(transport_operator(n, rate, dofs, "upwind"))
    k_q, c_q = sparse.csr_matrix(linear.stiffness), sparse.csr_matrix(linear.damping)
    me = sparse.diags(mass) @ e
    gyro = 2.0 * me + c_q
    stiffness = k_q + c_q @ upwind + me @ e
    return mass, gyro.tocsr(), stiffness.tocsr(), upwind
