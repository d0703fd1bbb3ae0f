"""Initial state of a drive: [Scania thesis] appendix 12.1, made consistent with the model.

[Scania thesis] places belt nodes along the loaded path, sets the unstretched length from the
pretension (eq. 12.22), the tensioner torque from the pretension (eqs. 12.23-12.24), belt and
pulley speeds from the crank speed by radius ratios (eqs. 12.18-12.20). Its section 9 asks
for elements of equal length; its start still carries a transient because the discretized
belt is not in equilibrium. Here the initial state is built to be (nearly) the model's own
steady running state, and :meth:`belt_fmu.model.system.BeltDrive.reset` then removes the
rest of the transient numerically.

1. Steady tension distribution (docs/references.md R2-R4): going along the belt, the
   tension rises across each driven pulley by its load torque / radius and drops across the
   crankshaft; inside a wrap it changes only on the exit slip arc, by the capstan law
   ``(T - m'v^2) = (T_in - m'v^2) exp(mu phi)`` (Grashof/Firbank creep theory).
   The level is fixed by the tensioner's torque balance (its spans carry spring torque /
   lever arm + m'v^2), or, for fixed centres, by the belt length.
2. Nodes are marched along the cord path so that each element's chord is its unstretched
   length stretched by its tension, ``l0 (1 + T/EA)``; on a pulley the nodes sit at the
   radius where the contact law carries the node's share of the wrap pressure. The loop must
   close after n elements: that closure condition is solved for ``l0`` (given pretension), the
   tension level (fixed centres) or the tensioner arm angle.
3. Node velocities follow from mass flow, ``v = v_ref (1 + eps)``; pulley speeds from the
   belt speed where the belt adheres, at the entry of each wrap.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..layout import Belt, Contact
from .drive import steady_load_torques
from .geometry import BeltPath
from .roots import brent_root
from .tensioner import spring_torque

SAMPLE_SPACING = 2.0e-5  # [m] resolution of the sampled cord path used for node placement
#: the steady running state is searched for span tensions up to this strain (EA times it);
#: beyond, the model declares the belt broken (belt_fmu.model.integrator.STRAIN_LIMIT, 0.25)
MAX_RUNNING_STRAIN = 0.2


class InitializationError(ValueError):
    """The layout has no steady running state for the requested inputs."""


def span_tension_offsets(path: BeltPath, crank: int, load_torques: np.ndarray) -> np.ndarray:
    """Span tensions relative to the span leaving the crankshaft (its slack side) [N].

    ``load_torques[j]`` [N m] opposes pulley j's running direction; tension rises by
    torque / radius across each driven pulley (docs/references.md R4).
    """
    p = path.n_pulleys
    offsets = np.zeros(p)
    for k in range(1, p):
        j = (crank + k) % p
        offsets[j] = offsets[j - 1] + load_torques[j] / path.radii[j]
    return offsets


def penetration(normal_per_length: float, c1: float, c2: float) -> float:
    """Penetration [m] where the per-length contact law ([Kubas 2017] eq. 2.8) carries a pressure."""
    if normal_per_length <= 0.0:
        return 0.0
    if c1 == 0.0:
        return normal_per_length / c2
    return (-c2 + np.sqrt(c2 * c2 + 4.0 * c1 * normal_per_length)) / (2.0 * c1)


class PathSampler:
    """Densely sampled cord path with its tension, starting where the belt leaves the crank."""

    def __init__(self, path: BeltPath, crank: int, span_tension: np.ndarray, centrifugal: float,
                 mu: np.ndarray):
        pts, tension, tangent, pulley = [], [], [], []
        p = path.n_pulleys
        for k in range(p):
            j = (crank + 1 + k) % p  # spans and wraps in travel order, from the crank's exit
            a = (j - 1) % p
            start, stop = path.departure_point(a), path.arrival_point(j)
            m = max(2, int(np.ceil(path.span_length[a] / SAMPLE_SPACING)))
            t = np.linspace(0.0, 1.0, m, endpoint=False)[:, None]
            pts.append(start + t * (stop - start))
            direction = (stop - start) / max(path.span_length[a], 1e-300)
            tangent.append(np.repeat(direction[None, :], m, axis=0))
            tension.append(np.full(m, span_tension[a]))
            pulley.append(np.full(m, -1))
            # wrap of pulley j
            theta = path.wrap_angle[j]
            m = max(2, int(np.ceil(path.radii[j] * theta / SAMPLE_SPACING)))
            phi = np.linspace(0.0, theta, m, endpoint=False)
            ang = path.arrive_angle[j] + path.senses[j] * phi
            pts.append(path.centers[j] + path.radii[j] * np.column_stack([np.cos(ang), np.sin(ang)]))
            tangent.append(path.senses[j] * np.column_stack([-np.sin(ang), np.cos(ang)]))
            tension.append(wrap_tension(phi, theta, span_tension[a], span_tension[j], centrifugal, mu[j]))
            pulley.append(np.full(m, j))
        self.points = np.vstack(pts)
        self.tension = np.concatenate(tension)
        self.tangent = np.vstack(tangent)
        self.pulley = np.concatenate(pulley)
        seg = np.hypot(*np.diff(np.vstack([self.points, self.points[:1]]), axis=0).T)
        self.arc = np.concatenate([[0.0], np.cumsum(seg)])  # arc[-1]: closed length

    @property
    def length(self) -> float:
        return float(self.arc[-1])

    def march(self, chord_of_tension, n_elements: int):
        """Place nodes along the path; element k's chord is ``chord_of_tension(T_k)``.

        Node 0 sits at the start of the path. Returns the node positions (n, 2), the sample
        index each node lies after (n,), and the arc position reached after n elements [m]:
        the loop closes when that equals :attr:`length`.
        """
        total = len(self.points)
        pts = np.vstack([self.points, self.points, self.points[:1]])  # two loops, unwrapped
        arc = np.concatenate([self.arc[:-1], self.length + self.arc])
        nodes = np.empty((n_elements, 2))
        index = np.empty(n_elements, dtype=np.int64)
        i, frac = 0, 0.0
        pos = pts[0].copy()
        for k in range(n_elements):
            nodes[k] = pos
            index[k] = i % total
            chord = chord_of_tension(self.tension[i % total])
            j = i + 1
            window = int(2.0 * chord / SAMPLE_SPACING) + 8
            ahead = pts[j:j + window]
            dist = np.hypot(ahead[:, 0] - pos[0], ahead[:, 1] - pos[1])
            hit = int(np.argmax(dist >= chord))
            if dist[hit] < chord or j + hit >= len(pts):
                raise InitializationError("node placement failed: an element is longer than the path allows "
                                          "(tension beyond what the belt can carry)")
            # the node lies on the sample segment (a, b) = (j + hit - 1, j + hit), at the exact chord
            a = j + hit - 1
            d = pts[a + 1] - pts[a]
            e = pts[a] - pos
            qa, qb, qc = d @ d, 2.0 * d @ e, e @ e - chord * chord
            t = (-qb + np.sqrt(max(qb * qb - 4.0 * qa * qc, 0.0))) / (2.0 * qa)
            i, frac = a, float(np.clip(t, 0.0, 1.0))
            pos = pts[a] + frac * d
        reached = arc[i] + frac * (arc[i + 1] - arc[i])
        return nodes, index, reached


def wrap_tension(phi, theta, t_in, t_out, centrifugal, mu):
    """Tension along a wrap at angles ``phi`` from the arrival [N]: constant, then the capstan
    law on the exit slip arc (docs/references.md R3)."""
    a = t_in - centrifugal
    b = t_out - centrifugal
    if a <= 0.0 or b <= 0.0 or abs(t_out - t_in) < 1e-12:
        return np.full_like(phi, t_in) + (t_out - t_in) * (phi >= theta)
    arc = min(abs(np.log(b / a)) / mu, theta)
    start = theta - arc
    growth = np.log(b / a) / max(arc, 1e-300)
    return np.where(phi < start, t_in, centrifugal + a * np.exp(growth * np.clip(phi - start, 0.0, None)))


@dataclass(frozen=True)
class DriveGeometry:
    """The installed drive as the initialization sees it: the pulley circles, roles and the
    tensioner arm from the kernels' records (:mod:`belt_fmu.model.parameters`), the belt's
    per-length properties from the layout. It keeps no copy of its own: every quantity below
    reads one of them."""

    pulleys: np.ndarray  # (p,) PULLEY records
    roles: np.ndarray  # (1,) ROLES record
    arm: np.ndarray  # (1,) TENSIONER record
    belt: Belt  # the layout's [belt]
    contact: Contact  # the layout's [contact]

    @property
    def centers(self) -> np.ndarray:
        """(p, 2) installed pulley centres [m]."""
        return np.column_stack([self.pulleys["x"], self.pulleys["y"]])

    @property
    def radii(self) -> np.ndarray:
        """(p,) cord-line radii [m]."""
        return self.pulleys["radius"]

    @property
    def senses(self) -> np.ndarray:
        """(p,) wrap senses, +1 / -1."""
        return self.pulleys["sense"]

    @property
    def mu(self) -> np.ndarray:
        """(p,) effective friction coefficients."""
        return self.pulleys["effective_mu"]

    @property
    def crank(self) -> int:
        return int(self.roles[0]["crank"])

    @property
    def tensioner(self) -> int:
        """Index of the tensioner pulley, -1 if none."""
        return int(self.roles[0]["tensioner"])

    @property
    def pivot(self) -> np.ndarray:
        return np.array([self.arm[0]["pivot_x"], self.arm[0]["pivot_y"]])

    @property
    def arm_length(self) -> float:
        return float(self.arm[0]["arm_length"])

    @property
    def arm_installed(self) -> float:
        """Installed arm angle [rad] (0 without a tensioner)."""
        return float(self.arm[0]["installed_angle"])

    @property
    def n_elements(self) -> int:
        return self.belt.n_elements

    @property
    def axial_stiffness(self) -> float:
        """EA [N]."""
        return self.belt.axial_stiffness_N

    @property
    def mass_per_length(self) -> float:
        """m' [kg/m]."""
        return self.belt.mass_per_length_kg_per_m

    @property
    def contact_c1(self) -> float:
        """Quadratic contact stiffness per unit belt length [N/m^3]."""
        return self.contact.stiffness_quadratic_N_per_m3

    @property
    def contact_c2(self) -> float:
        """Linear contact stiffness per unit belt length [N/m^2]."""
        return self.contact.stiffness_linear_N_per_m2

    def centers_at(self, arm_angle: float) -> np.ndarray:
        c = self.centers.copy()
        if self.tensioner >= 0:
            c[self.tensioner] = self.pivot + self.arm_length * np.array([np.cos(arm_angle), np.sin(arm_angle)])
        return c

    def loaded_path(self, arm_angle: float, span_tension: np.ndarray, centrifugal: float) -> BeltPath:
        """Cord path with every pulley's radius reduced by the contact penetration."""
        radii = self.radii.copy()
        p = len(radii)
        for j in range(p):
            mean_tension = 0.5 * (span_tension[j - 1] + span_tension[j]) - centrifugal
            radii[j] -= penetration(mean_tension / self.radii[j], self.contact_c1, self.contact_c2)
        return BeltPath.from_circles(self.centers_at(arm_angle), radii, self.senses)

    def closure(self, arm_angle, span_tension, centrifugal, rest_length):
        """(arc reached - path length) [m] after marching n elements, and the march."""
        path = self.loaded_path(arm_angle, span_tension, centrifugal)
        if not (np.all(np.isfinite(path.wrap_angle)) and np.all(path.radii > 0.0)
                and np.all(np.isfinite(span_tension))):
            where = (f" with the tensioner arm {arm_angle - self.arm_installed:+.4g} rad from its installed angle"
                     if self.tensioner >= 0 else "")
            raise InitializationError(f"no steady running state: the belt cannot wrap the pulleys{where} at span "
                                      f"tensions up to {np.max(span_tension):.4g} N; check belt.pretension_N or "
                                      "unstretched_length_m, the tensioner's preload_Nm and stops, and the loads")
        sampler = PathSampler(path, self.crank, span_tension, centrifugal, self.mu)
        ea = self.axial_stiffness
        nodes, index, reached = sampler.march(lambda t: rest_length * (1.0 + t / ea), self.n_elements)
        return reached - sampler.length, (path, sampler, nodes, index)

    def hub_moment(self, arm_angle, span_tension, centrifugal) -> float:
        """Moment [N m, CCW] of the belt's hub load on the tensioner pulley about the pivot
        ([Scania thesis] eqs. 12.23-12.24, with the centrifugal term of docs/references.md R4)."""
        t = self.tensioner
        path = self.loaded_path(arm_angle, span_tension, centrifugal)
        return path.hub_moment(t, self.pivot, span_tension[t - 1] - centrifugal, span_tension[t] - centrifugal)


def solve_rest_length(geom: DriveGeometry, pretension: float) -> float:
    """Unstretched element length [m] such that the belt at uniform ``pretension`` closes
    exactly around the installed layout: eq. 12.22 for the discretized belt."""
    tension = np.full(len(geom.radii), pretension)
    loaded = geom.loaded_path(geom.arm_installed, tension, 0.0).length
    guess = loaded / (geom.n_elements * (1.0 + pretension / geom.axial_stiffness))

    def residual(l0):
        return geom.closure(geom.arm_installed, tension, 0.0, l0)[0]

    try:
        return brent_root(residual, 0.97 * guess, 1.03 * guess, xtol=1e-13)
    except ValueError as exc:
        raise InitializationError(f"the discretized belt does not close around the layout at pretension "
                                  f"{pretension:g} N ({exc}); use more elements or check the geometry") from None


def solve_running_state(geom: DriveGeometry, rest_length: float, offsets: np.ndarray, centrifugal: float,
                        arm_bias: float = 0.0):
    """Tension level (and tensioner arm angle) of the steady running state.

    ``offsets``: span tensions relative to the crank's slack span [N]. Fixed centres: the
    level closes the loop. With a tensioner, its spring torque (:func:`belt_fmu.model.
    tensioner.spring_torque`) sets the level by the arm's torque balance and the arm angle,
    between the stops, closes the loop. ``arm_bias`` [N m, CCW] is a constant torque added
    to the spring's in that balance (the mean torque of the arm's friction where the drive's
    vibration leaves it, :meth:`belt_fmu.model.system.BeltDrive.reset`).
    Returns (arm angle, span tensions, march).
    """
    ea = geom.axial_stiffness
    if geom.tensioner < 0:
        def residual(level):
            return geom.closure(geom.arm_installed, offsets + level, centrifugal, rest_length)[0]

        try:
            level = brent_root(residual, -0.05 * ea - offsets.max(), MAX_RUNNING_STRAIN * ea, xtol=1e-10)
        except ValueError as exc:
            raise InitializationError(f"no belt tension closes the loop: {exc}") from None
        span = offsets + level
        return geom.arm_installed, span, geom.closure(geom.arm_installed, span, centrifugal, rest_length)[1]

    arm = geom.arm[0]

    def level_at(psi):
        spring = spring_torque(arm, psi) + arm_bias
        # hub moment is affine in the level: M = M(0) + level * dM/dlevel
        m0 = geom.hub_moment(psi, offsets, centrifugal)
        m1 = geom.hub_moment(psi, offsets + 1.0, centrifugal)
        # the penetration makes it very slightly nonlinear; one correction step
        level = -(spring + m0) / (m1 - m0)
        m_l = geom.hub_moment(psi, offsets + level, centrifugal)
        m_l1 = geom.hub_moment(psi, offsets + level + 1.0, centrifugal)
        return level - (spring + m_l) / (m_l1 - m_l)

    def residual(psi):
        return geom.closure(psi, offsets + level_at(psi), centrifugal, rest_length)[0]

    psi = _bracketed_root(residual, geom.arm_installed, (arm["stop_min"], arm["stop_max"]), geom.arm_installed)
    span = offsets + level_at(psi)
    return psi, span, geom.closure(psi, span, centrifugal, rest_length)[1]


def place_running_state(state, geom: DriveGeometry, parameters, crank_speed: float, water_pump_torque: float,
                        arm_bias: float = 0.0, port_torque=None):
    """Write the steady running state at constant inputs into the state views ``state``
    (:class:`belt_fmu.model.state.StateViews`; friction states zero): steps 1-3 of the module
    docstring. ``crank_speed`` [rad/s] in the crank's running direction, ``water_pump_torque``
    [N m] against the pump's rotation, ``port_torque`` (p,) [N m] the pulleys' input load
    torques (None: none); ``arm_bias`` as in :func:`solve_running_state`. If the loads need
    tensions the belt cannot carry (it will slip), the belt starts unloaded and the dynamics
    apply the loads."""
    crank = geom.crank
    rest_length = parameters.belt[0]["rest_length"]
    # belt speed from the crank, running speeds by radius ratio (eq. 12.20)
    belt_speed = abs(crank_speed) * geom.radii[crank]
    speeds = belt_speed / geom.radii
    centrifugal = geom.mass_per_length * belt_speed ** 2
    path = BeltPath.from_circles(geom.centers, geom.radii, geom.senses)
    loaded = span_tension_offsets(path, crank, steady_load_torques(parameters, speeds, water_pump_torque, port_torque))
    if not (np.all(np.isfinite(loaded)) and np.ptp(loaded) < MAX_RUNNING_STRAIN * geom.axial_stiffness):
        loaded = np.zeros_like(loaded)  # loads no belt carries: start unloaded, the dynamics slip
    try:
        psi, span, march = solve_running_state(geom, rest_length, loaded, centrifugal, arm_bias)
    except InitializationError:
        psi, span, march = solve_running_state(geom, rest_length, np.zeros_like(loaded), centrifugal, arm_bias)
    path, sampler, nodes, index = march
    ea = geom.axial_stiffness
    for view in state:
        view[...] = 0.0
    tangent = sampler.tangent[index]
    tension = sampler.tension[index]
    state.q[:, 0:2] = nodes
    state.q[:, 2] = np.unwrap(np.arctan2(tangent[:, 1], tangent[:, 0]))
    # mass flow: v / (1 + eps) is the same everywhere; the belt adheres at a wrap's entry
    flux = abs(crank_speed) * path.radii[crank] / (1.0 + span[crank - 1] / ea)
    speed = flux * (1.0 + tension / ea)
    state.u[:, 0:2] = speed[:, None] * tangent
    on = sampler.pulley[index]
    wrapped = on >= 0
    state.u[wrapped, 2] = geom.senses[on[wrapped]] * speed[wrapped] / path.radii[on[wrapped]]
    for j in range(len(geom.radii)):
        state.omega[j] = geom.senses[j] * flux * (1.0 + span[j - 1] / ea) / path.radii[j]
    state.omega[crank] = parameters.roles[0]["crank_sense"] * crank_speed
    state.arm[0] = psi


def _bracketed_root(func, start, bounds, installed):
    """Root of ``func`` nearest ``start``, searched in widening brackets within ``bounds``
    (absolute arm angles; ``installed`` the installed angle, from which the layout gives the
    stops)."""
    lo_bound, hi_bound = bounds
    f0 = func(start)
    if f0 == 0.0:
        return start
    for width in (0.01, 0.03, 0.1, 0.3, 1.0):
        lo = max(start - width, lo_bound)
        hi = min(start + width, hi_bound)
        f_lo, f_hi = func(lo), func(hi)
        if f_lo * f0 <= 0.0:
            return brent_root(func, lo, start, xtol=1e-12)
        if f_hi * f0 <= 0.0:
            return brent_root(func, start, hi, xtol=1e-12)
    # f0 > 0: the n elements reach beyond the closed path at the installed angle
    direction = "long" if f0 > 0.0 else "short"
    raise InitializationError(
        f"the tensioner arm finds no equilibrium between its stops, tensioner.stop_min_rad = "
        f"{lo_bound - installed:.4g} and stop_max_rad = {hi_bound - installed:.4g} rad from the installed angle: "
        f"at the installed angle the belt is too {direction} for the path and the spring; check belt.pretension_N or unstretched_length_m, "
        "tensioner.preload_Nm and the stop angles"
    )
