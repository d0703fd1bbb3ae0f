"""Steady harmonic response of a drive to an engine-order excitation, from its linearization.

About the operating point the drive obeys the linearized equations of motion of
:mod:`belt_fmu.analysis.linearization`, ``M q'' + G q' + K q = f(t)``. An excitation harmonic
at ``w = q n 2 pi / 60`` (engine order q, crank speed n [rpm]) drives the steady response
``q = Re(X e^{i w t})`` with

    (K - w^2 M + i w G) X = F

(the frequency response of a linear system; for the moving belt, Wickert and Mote,
"Classical vibration analysis of axially moving continua", ASME J. Appl. Mech. 57, 1990).
The excitations, as the sweep applies them (:mod:`belt_fmu.sweep`):

* the crank's speed irregularity ``dw sin(w t)`` of a speed-driven crank turns it by
  ``Theta = dw / w``; through the forces' crank column (:class:`~belt_fmu.analysis.
  linearization.Linearization`) ``F = -(k_c + i w c_c) Theta``;
* a torque ripple of amplitude T on one pulley (an accessory's, or a torque-driven crank's
  engine torque): ``F = T`` on that pulley's rotation.

The tensioner arm's Coulomb friction enters by the first harmonic of its torque, Lambda,
from a harmonic balance of the arm alone that lets it stick for part of each period
(:func:`belt_fmu.analysis.arm_friction.stick_slip`): the response without it, X0, and the
arm's receptance u (at the excitation's odd harmonics, one factorization each) give it, and
the whole response is ``X = X0 + u Lambda``. The arm's amplitude is half its angle's
peak-to-peak over that period, all harmonics, as the sweep measures it; its first harmonic,
larger where the arm sticks for part of the period, is reported too.

Outputs, each a complex amplitude ``Y = Y_q X + Y_v (i w + E_d) X`` (+ the crank's column;
E_d the belt's transport as the damping forces see it, as the velocities are material ones): each pulley's hub force
(the amplitude of its magnitude, along the steady hub force) and belt torque, each span's
tension. The *slip utilisation* of a pulley is ``(|Q| + |dQ|) / Q_max``: its steady torque
and the amplitude of its belt torque against its capacity at the operating point (capstan
law, :mod:`belt_fmu.analysis.operating_point`); beyond 1 the belt slips on it during part of
each period.

The crank's wrap drives the belt through friction, so the belt torque it transmits is
capped at its capacity. Where the linear response asks more of it (slip utilisation above 1
under the crank speed irregularity) the belt slips on the crank during part of each period
(the sweep's runs show it: at 1300 rpm under +-40 rpm every pulley runs up to 4 % behind the
crank), and the torque's first harmonic is ``N dQ``, N the describing function of that
limit (:func:`wrap_slip_gain`). The whole response is then taken at the irregularity scaled
by N, the driving wrap's utilisation reported as the linear response asked it.

As :func:`belt_fmu.analysis.modes.modes` does, the response is computed at
:data:`RESPONSE_PHASES` instants over the node passage period of the
discretized belt and the amplitudes averaged (the time domain sees the mean of the polygon's
fast periodic change). The operating point dominates the cost (a settling run of about
0.3 s of model time), and it changes slowly with speed: it is computed at *anchor* speeds at
most :data:`ANCHOR_SPACING` apart, and at each speed asked for the responses of the two
nearest anchors, each at that speed's excitation frequency and amplitude, are interpolated
linearly in speed. The resonance is where the excitation frequency meets a mode, which
each anchor's model locates exactly; what is interpolated is how the drive's tensions,
tensioner position and belt speed move the mode between anchors.

With the lumped model (``[drive] model = "lumped"``) the linear model is the lumped model's
own step, linearized about its steady running state at the anchor speeds
(:class:`LumpedAnchor`, :mod:`belt_fmu.analysis.lumped_linearization`). At each speed asked
for, the two nearest anchors' linear responses at that speed's frequency (the arm's and the
outputs', to the excitation and to a torque on the arm) and their steady loads are
interpolated linearly in speed, and the arm's friction and the crank wrap's limit are solved
there: on the built-in drive every amplitude lies within 1 % of its maximum over 500-3000
rpm of what a linearization at every 10 rpm gives, at +-40 and +-4 rpm.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from ..units import RPM
from .arm_friction import HARMONICS, stick_slip
from .linearization import (arm_stuck_damping, linearization_layout, linearize, motion_matrices,
                            node_passage_rate, output_index)
from .modes import MIN_PASSAGE_RATE, PHASES

#: [rpm] operating points are computed at most this far apart (module docstring)
ANCHOR_SPACING = 250.0
#: instants over the node passage period the response is averaged over: on the built-in drive
#: the +-40 rpm tensioner amplitude at 1400 rpm (an anchor there) is 1.99, 2.09 and 2.03 deg
#: with one, two and four; the +-40 rpm peak lies at 1380 rpm with two and four (2.05, 2.04 deg),
#: the +-4 rpm peak at 1740 rpm (0.045, 0.044 deg); each instant costs a linearization and five
#: factorizations per speed (the arm's harmonic balance)
RESPONSE_PHASES = 2


@dataclass(frozen=True)
class Excitation:
    """What drives the response, at engine ``order`` q: the sweep's crank speed irregularity
    (``settings``, a :class:`belt_fmu.sweep.RunSettings`: its order, amplitude and scaling,
    and its water-pump load), or, with ``ripple_pulley``, a torque ripple of
    ``ripple_torque`` [N m] amplitude on that pulley (the crank then turns at constant speed)."""

    settings: object
    ripple_pulley: str | None = None
    ripple_torque: float = 0.0  # [N m]

    @property
    def order(self) -> float:
        return self.settings.order

    def describe(self) -> str:
        if self.ripple_pulley is not None:
            return f"torque ripple {self.ripple_torque:g} N.m on {self.ripple_pulley}, order {self.order:g}"
        s = self.settings
        scaled = f" at {s.idle_rpm:g} rpm, scaled by idle/rpm" if s.irregularity_scaling == "inverse" else ""
        return f"crank speed irregularity +-{s.irregularity_rpm:g} rpm{scaled}, order {s.order:g}"


def check_excitation(layout, excitation: Excitation) -> str | None:
    """What is wrong with ``excitation`` on ``layout`` (None: nothing)."""
    names = [p.name for p in layout.pulleys]
    if excitation.ripple_pulley is None:
        if layout.torque_driven_crank:
            return ("the crank is torque-driven (drive.crank_input = \"torque\"): its speed is an output; excite it "
                    f"with a torque ripple on {names[layout.crank_index]} instead")
        return None
    if excitation.ripple_pulley not in names:
        return f"no pulley {excitation.ripple_pulley!r}; the pulleys are {', '.join(names)}"
    if excitation.ripple_pulley == names[layout.crank_index] and not layout.torque_driven_crank:
        return (f"{excitation.ripple_pulley} is the speed-driven crank (its speed is prescribed): excite it with the "
                "crank speed irregularity instead")
    if not (math.isfinite(excitation.ripple_torque) and excitation.ripple_torque > 0.0):
        return f"the ripple's amplitude must be a finite torque > 0 N m, got {excitation.ripple_torque!r}"
    if layout.drive.model == "lumped" and names.index(excitation.ripple_pulley) != layout.water_pump_index:
        pump = names[layout.water_pump_index] if layout.water_pump_index is not None else None
        return (f"the lumped model takes a load ripple on its water pump only ({pump}), not on "
                f"{excitation.ripple_pulley}" if pump else
                "the lumped model's only load input is a water pump's torque, and this drive has no water pump")
    return None


def water_pump_torque(layout, rpm: float, excitation: Excitation) -> float:
    """[N m] the water-pump load at ``rpm``, the sweep's law (:class:`belt_fmu.sweep.Run`)."""
    from ..sweep import Run

    return Run(rpm, excitation.settings, (), layout).water_pump_torque


class _Instant:
    """The linear model of the drive at one instant (module docstring)."""

    def __init__(self, point):
        drive = point.drive
        self.linear = linearize(drive, point.water_pump_torque, 0.0)  # the arm sliding, its friction added later
        mass, gyro, stiffness, self.transport = motion_matrices(drive, self.linear)
        self.mass = mass
        # K, -M and G on one sparsity pattern, so that each frequency's dynamic stiffness is
        # one sum of their values (no sparse algebra per speed)
        pattern = (abs(stiffness) + abs(gyro) + sparse.identity(len(mass))).tocsc()
        pattern.sort_indices()
        rows, columns = pattern.indices, np.repeat(np.arange(pattern.shape[1]), np.diff(pattern.indptr))
        self.pattern = pattern
        self.values = [np.asarray(m.tocsr()[rows, columns]).ravel()
                       for m in (stiffness, -sparse.diags(mass), gyro)]
        dofs = list(self.linear.coordinates)
        n = drive.parameters.belt[0]["n_nodes"]
        self.pulley_dof = {j: dofs.index(3 * n + j) for j in range(len(drive.parameters.pulleys))
                           if 3 * n + j in dofs}
        self.arm = len(dofs) - 1 if drive.layout.tensioner is not None else None
        self.stuck_damping = arm_stuck_damping(drive)
        tensioner = drive.parameters.tensioner[0]
        self.friction_level = 0.5 * (tensioner["friction_away"] + tensioner["friction_toward"])
        self.crank_sense = float(drive.parameters.pulleys[drive.layout.crank_index]["sense"])
        self._solved = None  # (omega, its solves): kept for the next call at that frequency

    def _factor(self, omega: float):
        """The LU factors of the dynamic stiffness ``K - w^2 M + i w G`` at ``omega`` [rad/s]."""
        from scipy.sparse.linalg import splu

        k, m, g = self.values
        return splu(sparse.csc_matrix((k + omega ** 2 * m + 1j * omega * g, self.pattern.indices,
                                       self.pattern.indptr), shape=self.pattern.shape))

    def respond(self, omega: float, irregularity: float, ripple: tuple[int, float] | None):
        """(outputs (4p,) complex, arm amplitude [rad], ArmFriction or None) at ``omega``
        [rad/s]: crank speed amplitude ``irregularity`` [rad/s], or ``ripple`` (pulley, torque
        amplitude [N m])."""
        d = len(self.mass)
        lu, u, receptances = self._frequency_solves(omega)
        force = np.zeros(d, dtype=complex)
        crank = 0.0
        if ripple is None:
            crank = self.crank_sense * irregularity / omega
            force -= (self.linear.crank_stiffness + 1j * omega * self.linear.crank_damping) * crank
        else:
            force[self.pulley_dof[ripple[0]]] = ripple[1]
        x = lu.solve(force)
        friction = None
        if self.arm is not None:
            friction = stick_slip(complex(x[self.arm]), receptances, omega, self.friction_level, self.stuck_damping)
            x = x + u * friction.torque
        rate = 1j * omega * x + self.transport @ x
        y_q, y_v = self.linear.output_stiffness, self.linear.output_damping
        outputs = y_q[:, :d] @ x + y_v[:, :d] @ rate + (y_q[:, d] + 1j * omega * y_v[:, d]) * crank
        return outputs, (abs(x[self.arm]) if self.arm is not None else 0.0), friction

    def _frequency_solves(self, omega: float):
        """(the LU factors at ``omega``, the response ``u`` to a unit torque on the arm, its
        receptances at the odd harmonics; None without an arm), kept for a next call at the
        same frequency (the second pass under the crank wrap's limit, :class:`_Responding`)."""
        if self._solved is None or self._solved[0] != omega:
            lu = self._factor(omega)
            u = receptances = None
            if self.arm is not None:
                unit = np.zeros(len(self.mass), dtype=complex)
                unit[self.arm] = 1.0
                u = lu.solve(unit)
                receptances = [u[self.arm]] + [self._factor(h * omega).solve(unit)[self.arm]
                                               for h in range(3, 2 * HARMONICS, 2)]
            self._solved = (omega, lu, u, receptances)
        return self._solved[1:]


def hub_load_amplitude(steady, amplitude_x, amplitude_y) -> np.ndarray:
    """(p,) [N] the amplitude of each pulley's hub force magnitude: the complex amplitudes of
    its components (``amplitude_x``, ``amplitude_y``) along its steady hub force ``steady``
    (p, 2) (module docstring)."""
    direction = steady / np.maximum(np.hypot(steady[:, 0], steady[:, 1]), 1e-300)[:, None]
    return np.abs(amplitude_x * direction[:, 0] + amplitude_y * direction[:, 1])


@dataclass(frozen=True)
class SpeedResponse:
    """The steady harmonic response at one crank speed (amplitudes, module docstring)."""

    rpm: float
    frequency: float  # [Hz] of the excitation
    arm_first_harmonic: float  # [rad] the arm angle's first harmonic
    arm_damping: float  # [N m s/rad] the arm friction's equivalent damping
    arm_stuck: float  # [-] share of the polygon instants at which the arm sticks
    hub_force: np.ndarray  # (p,) [N] amplitude of the hub force's magnitude
    belt_torque: np.ndarray  # (p,) [N m]
    span_tension: np.ndarray  # (p,) [N], span j from pulley j to j + 1
    slip_utilisation: np.ndarray  # (p,) [-]
    arm_amplitude: float  # [rad] half the arm angle's peak-to-peak, all harmonics (the sweep's tensioner amplitude)


def wrap_slip_gain(steady: float, amplitude: float, capacity: float, samples: int = 256) -> float:
    """The first-harmonic gain N of a wrap's torque limit: the belt torque ``Q + dQ sin(t)``
    (``steady`` |Q| and ``amplitude`` dQ [N m]) clipped at +-``capacity`` Q_max [N m] has the
    first harmonic ``N dQ``,

        N = 2 / (n dQ) sum_i clip(Q + dQ sin t_i, -Q_max, Q_max) sin t_i

    over ``samples`` instants t_i of a period: the describing function of a saturation for
    a biased sinusoid (Gelb and Vander Velde, "Multiple-input describing functions and
    nonlinear system design", 1968, chapter 5; without bias, ``(2/pi) (asin r + r sqrt(1 -
    r^2))``, r = Q_max / dQ). 1 where the wrap holds, ``|Q| + dQ <= Q_max``."""
    if abs(steady) + amplitude <= capacity or amplitude <= 0.0:
        return 1.0
    t = 2.0 * np.pi * np.arange(samples) / samples
    return float(2.0 / (samples * amplitude) * np.sum(np.clip(abs(steady) + amplitude * np.sin(t), -capacity, capacity)
                                                        * np.sin(t)))


class _Responding:
    """What both anchors share: the response with the driving wrap's torque limit (module
    docstring). An anchor gives ``layout``, ``torque`` and ``capacity`` (p,) [N m] (each
    pulley's steady belt torque and capacity) and ``_respond(rpm, excitation, scale)``, its
    linear response with the excitation's amplitude scaled by ``scale``."""

    def respond(self, rpm: float, excitation: Excitation) -> SpeedResponse:
        """The response to ``excitation`` at crank speed ``rpm``."""
        asked = self._respond(rpm, excitation, 1.0)
        if excitation.ripple_pulley is not None:  # the pulley's inertia shares the ripple: no wrap in series alone
            return asked
        crank = self.layout.crank_index
        gain = wrap_slip_gain(self.torque[crank], asked.belt_torque[crank], self.capacity[crank])
        if gain >= 1.0:
            return asked
        transmitted = self._respond(rpm, excitation, gain)
        utilisation = transmitted.slip_utilisation.copy()
        utilisation[crank] = asked.slip_utilisation[crank]
        return dataclasses.replace(transmitted, slip_utilisation=utilisation)


class Anchor(_Responding):
    """The linear models of the drive at one anchor speed and its operating point."""

    def __init__(self, point, phases: int = PHASES):
        self.point = point
        drive = point.drive
        self.layout = drive.layout
        rate = node_passage_rate(drive)
        instants = phases if rate > MIN_PASSAGE_RATE else 1
        saved = drive.get_state()
        self.instants = []
        try:
            for k in range(instants):
                if k:
                    point.hold(1.0 / (rate * instants))
                self.instants.append(_Instant(point))
        finally:
            drive.set_state(saved)
        self.hub = np.array([[p.hub_force_x, p.hub_force_y] for p in point.pulleys])
        self.torque = np.array([abs(p.torque) for p in point.pulleys])
        self.capacity = np.array([p.capacity for p in point.pulleys])

    def _respond(self, rpm: float, excitation: Excitation, scale: float) -> SpeedResponse:
        """The linear response to ``excitation``, its amplitude times ``scale``, at crank
        speed ``rpm`` (its frequency and amplitude there) of this anchor's models, averaged
        over the polygon instants."""
        layout = self.layout
        p = len(layout.pulleys)
        omega = excitation.order * rpm * RPM
        ripple = None
        if excitation.ripple_pulley is not None:
            ripple = ([q.name for q in layout.pulleys].index(excitation.ripple_pulley),
                      scale * excitation.ripple_torque)
        irregularity = scale * excitation.settings.irregularity_at(rpm) * RPM
        hub_rows = [output_index(p, q, j) for j in range(p) for q in ("hub_force_x", "hub_force_y")]
        torque_rows = [output_index(p, "belt_torque", j) for j in range(p)]
        tension_rows = [output_index(p, "span_tension", j) for j in range(p)]
        hub, torque, tension, arm, damping, stuck, swing = [], [], [], [], [], [], []
        for instant in self.instants:
            y, amplitude, friction = instant.respond(omega, irregularity, ripple)
            swing.append(friction.swing if friction is not None else amplitude)
            xy = y[hub_rows].reshape(p, 2)
            hub.append(hub_load_amplitude(self.hub, xy[:, 0], xy[:, 1]))
            torque.append(np.abs(y[torque_rows]))
            tension.append(np.abs(y[tension_rows]))
            arm.append(amplitude)
            damping.append(friction.damping if friction is not None else 0.0)
            stuck.append(friction is not None and friction.stuck)
        belt_torque = np.mean(torque, axis=0)
        return SpeedResponse(rpm, omega / (2 * math.pi), float(np.mean(arm)), float(np.mean(damping)),
                             float(np.mean(stuck)), np.mean(hub, axis=0), belt_torque, np.mean(tension, axis=0),
                             (self.torque + belt_torque) / np.maximum(self.capacity, 1e-300), float(np.mean(swing)))


@dataclass(frozen=True)
class _LumpedLinear:
    """The lumped model's linear response at one frequency, per unit amplitude of its
    excitation (``source``) and of a torque on the arm: the arm angle [rad] and the outputs
    (:class:`LumpedAnchor`)."""

    arm: complex
    outputs: np.ndarray
    arm_unit_outputs: np.ndarray  # the outputs per unit torque on the arm
    receptances: list  # the arm's, at the odd harmonics 1, 3, ...: the first is its own response to that torque

    def blend(self, other: "_LumpedLinear", t: float) -> "_LumpedLinear":
        """This one weighted ``1 - t`` and ``other`` ``t``."""
        return _LumpedLinear(_mix(self.arm, other.arm, t), _mix(self.outputs, other.outputs, t),
                             _mix(self.arm_unit_outputs, other.arm_unit_outputs, t),
                             [_mix(a, b, t) for a, b in zip(self.receptances, other.receptances)])


class _LumpedResponding(_Responding):
    """The lumped model's response from its linear one (``_linear(omega, source)``, a
    :class:`_LumpedLinear`), with the arm's friction and the outputs as :class:`Anchor`'s:
    each pulley's hub force amplitude projected on its steady hub force ``hub`` (p, 2), its
    belt torque amplitude ``r (dT_in - dT_out)`` from its spans' tensions."""

    def _belt_torque(self, tension):
        """|r_j (T_(j-1) - T_j)| [N m]: each pulley's belt torque from its spans' tensions."""
        return np.abs(self.radii * (np.roll(tension, 1) - tension))

    def _respond(self, rpm: float, excitation: Excitation, scale: float) -> SpeedResponse:
        """The linear response to ``excitation``, its amplitude times ``scale``, at crank
        speed ``rpm``."""
        omega = excitation.order * rpm * RPM
        if excitation.ripple_pulley is None:
            source, amplitude = "crank_speed", scale * excitation.settings.irregularity_at(rpm) * RPM
        else:
            source, amplitude = "water_pump_torque", scale * excitation.ripple_torque
        linear = self._linear(omega, source)
        arm, y = linear.arm * amplitude, linear.outputs * amplitude
        friction = None
        if self.has_arm:
            friction = stick_slip(arm, linear.receptances, omega, self.friction_level, self.stuck_damping)
            arm = arm + linear.receptances[0] * friction.torque
            y = y + linear.arm_unit_outputs * friction.torque
        hub = hub_load_amplitude(self.hub, y[self.rows["hub_force_x"]], y[self.rows["hub_force_y"]])
        tension = y[self.rows["span_tension"]]
        belt_torque = self._belt_torque(tension)
        return SpeedResponse(rpm, omega / (2 * math.pi), abs(arm) if self.has_arm else 0.0,
                             friction.damping if friction is not None else 0.0,
                             float(friction is not None and friction.stuck), hub, belt_torque, np.abs(tension),
                             (self.torque + belt_torque) / np.maximum(self.capacity, 1e-300),
                             friction.swing if friction is not None else abs(arm) if self.has_arm else 0.0)


class LumpedAnchor(_LumpedResponding):
    """The lumped model's own step linearized about its steady running state at one crank
    speed (:mod:`belt_fmu.analysis.lumped_linearization`), its frequency response from one
    factorization (:class:`~belt_fmu.analysis.lumped_linearization.Resolvent`)."""

    def __init__(self, drive, rpm: float, water_pump_torque: float):
        from ..model.outputs import pulley_output_name, span_output_name, spans
        from ..model.parameters import effective_mu
        from .lumped_linearization import Resolvent, linearize_lumped
        from .operating_point import capstan

        layout = drive.layout
        crank_speed = rpm * RPM
        drive.reset(crank_speed, water_pump_torque)
        self.linear = linear = linearize_lumped(drive, crank_speed, water_pump_torque)
        self.resolvent = Resolvent(linear)
        self.layout = layout
        self.has_arm = linear.arm is not None
        self.stuck_damping = arm_stuck_damping(drive)
        tensioner = drive.parameters.tensioner[0]
        self.friction_level = 0.5 * (tensioner["friction_away"] + tensioner["friction_toward"])
        p = len(layout.pulleys)
        index = {name: k for k, name in enumerate(drive.output_names)}
        names = [q.name for q in layout.pulleys]
        self.rows = {q: [index[pulley_output_name(q, name)] for name in names] for q in ("hub_force_x", "hub_force_y")}
        self.rows["span_tension"] = [index[span_output_name("span_tension", a, b)] for a, b in spans(names)]
        self.hub = np.column_stack([linear.outputs[self.rows["hub_force_x"]],
                                    linear.outputs[self.rows["hub_force_y"]]])
        self.radii = drive.parameters.pulleys["radius"]
        tension = linear.outputs[self.rows["span_tension"]]
        centrifugal = layout.belt.mass_per_length_kg_per_m * (crank_speed * self.radii[layout.crank_index]) ** 2
        wraps = drive.arrays["wrap"]
        self.torque = self._belt_torque(tension)
        self.capacity = np.array([
            capstan(max(tension[j - 1], tension[j]), min(tension[j - 1], tension[j]), centrifugal,
                    effective_mu(layout, layout.pulleys[j]), wraps[j], self.radii[j])[1] for j in range(p)])
        self._solved = None  # ((omega, source), its _LumpedLinear): kept for the next call at that frequency

    def _linear(self, omega: float, source: str) -> _LumpedLinear:
        """The linear response at ``omega`` to ``source`` and to a torque on the arm (None
        without an arm), kept for a next call at the same frequency (the second pass under
        the crank wrap's limit, :class:`_Responding`, and the blends with the neighbouring
        anchors)."""
        if self._solved is None or self._solved[0] != (omega, source):
            resolvent, arm = self.resolvent, self.linear.arm
            if arm is None:
                (_, y), = resolvent.respond(omega, source)
                linear = _LumpedLinear(0j, y, np.zeros_like(y), [])
            else:
                (x, y), (u, u_out) = resolvent.respond(omega, source, "arm_torque")
                receptances = [complex(u[arm])] + [resolvent.arm(h * omega, "arm_torque")
                                                   for h in range(3, 2 * HARMONICS, 2)]
                linear = _LumpedLinear(complex(x[arm]), y, u_out, receptances)
            self._solved = ((omega, source), linear)
        return self._solved[1]

    def between(self, other: "LumpedAnchor", t: float) -> "_LumpedBlend":
        """The drive between this anchor and the next, ``other``, a fraction ``t`` of the way
        (module docstring)."""
        return _LumpedBlend(self, other, t)


class _LumpedBlend(_LumpedResponding):
    """The lumped model between two anchors: their linear responses and steady loads weighted
    ``1 - t`` and ``t`` (module docstring), the arm's friction and the crank wrap's limit
    solved at the speed itself."""

    def __init__(self, a: LumpedAnchor, b: LumpedAnchor, t: float):
        self.a, self.b, self.t = a, b, t
        self.layout, self.has_arm, self.rows, self.radii = a.layout, a.has_arm, a.rows, a.radii
        self.stuck_damping, self.friction_level = a.stuck_damping, a.friction_level
        self.hub, self.torque, self.capacity = (_mix(a.hub, b.hub, t), _mix(a.torque, b.torque, t),
                                                _mix(a.capacity, b.capacity, t))

    def _linear(self, omega: float, source: str) -> _LumpedLinear:
        return self.a._linear(omega, source).blend(self.b._linear(omega, source), self.t)


def anchor_speeds(rpms) -> np.ndarray:
    """The speeds [rpm] the operating points are computed at: ``rpms`` themselves if they lie
    no further apart than :data:`ANCHOR_SPACING`, else evenly spaced over their range that far
    apart at most."""
    rpms = np.unique(np.asarray(rpms, dtype=float))
    low, high = rpms[0], rpms[-1]
    count = int(math.ceil((high - low) / ANCHOR_SPACING)) + 1
    if len(rpms) <= count:
        return rpms
    return np.linspace(low, high, count)


def _bracket(anchors: np.ndarray, rpm: float) -> tuple[int, float]:
    """(k, t): ``rpm`` lies a fraction ``t`` of the way from anchor k to anchor k + 1 (t = 0
    at an anchor and beyond the last)."""
    k = min(int(np.searchsorted(anchors, rpm, side="right")) - 1, len(anchors) - 1)
    if anchors[k] == rpm or k + 1 == len(anchors):
        return k, 0.0
    return k, float((rpm - anchors[k]) / (anchors[k + 1] - anchors[k]))


def _mix(a, b, t: float):
    """``a`` and ``b`` (numbers or arrays) weighted ``1 - t`` and ``t``: linear in speed
    between two anchors."""
    return (1.0 - t) * a + t * b


def _interpolate(a: SpeedResponse, b: SpeedResponse, t: float) -> SpeedResponse:
    """``a`` and ``b`` (the same speed from two anchors) weighted ``1 - t`` and ``t``."""
    def mix(x, y):
        return _mix(x, y, t)

    return SpeedResponse(a.rpm, a.frequency, mix(a.arm_first_harmonic, b.arm_first_harmonic),
                         mix(a.arm_damping, b.arm_damping), mix(a.arm_stuck, b.arm_stuck), mix(a.hub_force, b.hub_force),
                         mix(a.belt_torque, b.belt_torque), mix(a.span_tension, b.span_tension),
                         mix(a.slip_utilisation, b.slip_utilisation), mix(a.arm_amplitude, b.arm_amplitude))


@dataclass(frozen=True)
class Response:
    """The harmonic response over crank speed (module docstring)."""

    layout: object
    excitation: Excitation
    speeds: tuple[SpeedResponse, ...]
    anchors: tuple[float, ...]  # [rpm] the operating points' speeds

    @property
    def peak(self) -> SpeedResponse:
        """The speed of the largest tensioner arm amplitude."""
        return max(self.speeds, key=lambda s: s.arm_amplitude)

    def table(self):
        """The response as a :class:`belt_fmu.simulation.Results` table (CSV and MAT writers):
        one row per speed, SI units (the arm amplitude also in degrees)."""
        from ..model.outputs import spans
        from ..simulation import Results

        names = [p.name for p in self.layout.pulleys]
        columns = {"rpm": ("rpm", "crank speed", [s.rpm for s in self.speeds]),
                   "frequency": ("Hz", "excitation frequency", [s.frequency for s in self.speeds])}
        if self.layout.tensioner is not None:
            columns["tensioner_amplitude"] = ("rad", "tensioner arm amplitude: half the peak-to-peak, all "
                                                     "harmonics (as the sweep's)", [s.arm_amplitude for s in self.speeds])
            columns["tensioner_amplitude_deg"] = ("deg", "tensioner arm amplitude in degrees",
                                                  [math.degrees(s.arm_amplitude) for s in self.speeds])
            columns["tensioner_first_harmonic_deg"] = ("deg", "the tensioner arm angle's first harmonic",
                                                       [math.degrees(s.arm_first_harmonic) for s in self.speeds])
            columns["arm_friction_damping"] = ("N.m.s/rad", "the arm friction's equivalent viscous damping",
                                               [s.arm_damping for s in self.speeds])
            columns["arm_stuck"] = ("1", "share of the polygon instants at which the arm sticks",
                                    [s.arm_stuck for s in self.speeds])
        for j, name in enumerate(names):
            columns[f"hub_force_amplitude_{name}"] = ("N", f"amplitude of the hub force magnitude on {name}",
                                                      [s.hub_force[j] for s in self.speeds])
            columns[f"belt_torque_amplitude_{name}"] = ("N.m", f"amplitude of the belt torque on {name}",
                                                        [s.belt_torque[j] for s in self.speeds])
            columns[f"slip_utilisation_{name}"] = ("1", f"(steady + dynamic torque) / capacity on {name}",
                                                   [s.slip_utilisation[j] for s in self.speeds])
        for j, (a, b) in enumerate(spans(names)):
            columns[f"span_tension_amplitude_{a}_{b}"] = ("N", f"tension amplitude of the span {a} -> {b}",
                                                          [s.span_tension[j] for s in self.speeds])
        return Results({k: np.array(v[2], dtype=float) for k, v in columns.items()},
                       {k: v[0] for k, v in columns.items()}, {k: v[1] for k, v in columns.items()}, 0.0)


def response(layout, rpms, excitation: Excitation, phases: int = RESPONSE_PHASES, drive=None, progress=None) -> Response:
    """The steady harmonic response of ``layout`` to ``excitation`` at crank speeds ``rpms``
    [rpm] (module docstring): of the discretized model's linearization (its belt refined,
    :func:`~belt_fmu.analysis.linearization.linearization_layout`), or with ``[drive] model =
    "lumped"`` of the lumped model's own step (:class:`LumpedAnchor`). ``drive``: a
    :class:`BeltDrive` of the refined layout (or a ``LumpedDrive`` of ``layout``) to reuse;
    ``progress(done, total)`` is called as anchors finish."""
    from ..model.system import BeltDrive
    from .operating_point import operating_point

    problem = check_excitation(layout, excitation)
    if problem is not None:
        raise ValueError(problem)
    rpms = np.asarray(sorted(float(r) for r in rpms))
    if layout.drive.model == "lumped":
        from ..model.lumped_system import LumpedDrive
        from .lumped_linearization import one_blas_thread

        drive = drive if drive is not None else LumpedDrive(layout)
        anchors = anchor_speeds(rpms)
        with one_blas_thread():
            def lumped_anchor(rpm):
                return LumpedAnchor(drive, rpm, water_pump_torque(layout, rpm, excitation))

            models = _anchor_models(anchors, lumped_anchor, progress)
            speeds = []
            for rpm in rpms:
                k, t = _bracket(anchors, rpm)
                speeds.append((models[k] if t == 0.0 else models[k].between(models[k + 1], t)).respond(rpm, excitation))
        return Response(layout, excitation, tuple(speeds), tuple(float(a) for a in anchors))
    anchors = anchor_speeds(rpms)
    linearized = linearization_layout(layout)
    drive = drive if drive is not None else BeltDrive(linearized)

    def anchor(rpm):
        return Anchor(operating_point(linearized, rpm, water_pump_torque(layout, rpm, excitation), drive=drive,
                                      statistics=False), phases)

    models = _anchor_models(anchors, anchor, progress)
    speeds = []
    for rpm in rpms:
        k, t = _bracket(anchors, rpm)
        here = models[k].respond(rpm, excitation)
        speeds.append(here if t == 0.0 else _interpolate(here, models[k + 1].respond(rpm, excitation), t))
    return Response(layout, excitation, tuple(speeds), tuple(float(a) for a in anchors))


def _anchor_models(anchors, build, progress) -> list:
    """``build(rpm)`` at each anchor speed, ``progress(done, total)`` called as they finish."""
    models = []
    for k, rpm in enumerate(anchors):
        models.append(build(rpm))
        if progress is not None:
            progress(k + 1, len(anchors))
    return models


#: the arm friction of the modes at rest (0 rpm): the excitation, at an order of the crank
#: speed, has no frequency there, so nothing moves the arm and it sticks
AT_REST = "stuck"


def excited_arm_friction(point, excitation: Excitation, phases: int = RESPONSE_PHASES) -> float | str:
    """[N m s/rad] the arm friction's equivalent damping at ``point`` under ``excitation`` (at
    the point's speed), for :func:`belt_fmu.analysis.modes.modes`; :data:`AT_REST` at 0 rpm."""
    if point.rpm == 0.0:
        return AT_REST
    return Anchor(point, phases).respond(point.rpm, excitation).arm_damping


def excited_lumped_arm_friction(drive, rpm: float, water_pump_torque: float, excitation: Excitation) -> float | str:
    """:func:`excited_arm_friction` of the lumped ``drive`` at ``rpm`` [rpm] and
    ``water_pump_torque`` [N m] (:class:`LumpedAnchor`); the drive is left at its steady
    running state there."""
    if rpm == 0.0:
        drive.reset(0.0, water_pump_torque)
        return AT_REST
    return LumpedAnchor(drive, rpm, water_pump_torque).respond(rpm, excitation).arm_damping
