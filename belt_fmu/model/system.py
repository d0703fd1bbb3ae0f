"""``BeltDrive``: the belt-drive model object that owns state and parameters.

It translates a :class:`~belt_fmu.layout.Layout` into the kernels' parameter records
(:mod:`belt_fmu.model.parameters`), allocates the state vector and work buffers
(:mod:`belt_fmu.model.state`), starts from the steady running state
(:mod:`belt_fmu.model.initialization`), advances it (:mod:`belt_fmu.model.integrator`) and
reports outputs (:mod:`belt_fmu.model.outputs`). The FMU slave and ``simulate`` are thin
users of it.

Typical use::

    drive = BeltDrive(load_layout())
    drive.reset(crank_speed=83.8)               # steady running state at 800 rpm
    drive.advance(0.01, crank_speed=83.8, water_pump_torque=2.0)
    drive.outputs()["bearing_force"]

A drive's inputs (:attr:`BeltDrive.inputs`, :mod:`belt_fmu.model.inputs`) depend on its
layout: the accessories with ``load = "input"`` take their load torque by keyword,
``drive.advance(0.01, 83.8, alternator1_torque=4.0)``; a torque-driven crank
(``crank_input = "torque"``) takes ``engine_torque`` instead of ``crank_speed``,
``drive.advance(0.01, engine_torque=20.0)``, its speed and angle being outputs.
"""
from __future__ import annotations

import contextlib
import math

import numba
import numpy as np

from .. import kernel_cache
from ..units import RPM
from . import initialization as init
from .drive import steady_load_torques
from .geometry import BeltPath
from .inputs import check_inputs, has_native_step, input_specs
from .integrator import (AVERAGE_DT, AVERAGE_TIME, AVERAGING, CONTROL_SIZE, CRANK_OMEGA, MAX_CRANK_OMEGA,
                         NOMINAL_DT, NOT_FINITE, OK, OUTPUT_DT, OUTPUTS_CURRENT, OVERSTRETCHED, RUNAWAY, STRAIN_LIMIT,
                         TRIAL_TAKEN, choose_bending_scheme, communicate, control_size, stable_time_step)
from .outputs import SPAN_OFFSET_FRACTION, SPAN_OFFSET_MIN, output_specs, span_end_points
from .parameters import translate
from .state import buffer_sizes, dimensions, unpack_state, unpack_work

#: time [s] the reset lets the drive run at its initial inputs to settle (dynamic relaxation)
SETTLE_TIME = 0.15
#: the reset lets the tensioner arm, this much lighter and less damped, come to rest under its
#: friction for
#: RATCHET_TIME [s] (BeltDrive._light_arm): what takes the real arm seconds
RATCHET_SPEEDUP = 40.0
RATCHET_TIME = 0.15


def internal_steps(interval: float, max_step: float) -> tuple[int, float]:
    """The internal steps of a communication step of ``interval`` [s] with steps of at most
    ``max_step`` [s]: their number and length [s], ``interval`` split evenly. An interval a
    rounding error longer than a whole number of steps takes that number (1e-9 of a step)."""
    n_steps = max(1, math.ceil(interval / max_step - 1e-9))
    return n_steps, interval / n_steps


class DivergenceError(RuntimeError):
    """The integration produced non-finite values or tore the belt apart."""


@contextlib.contextmanager
def settling(crank_speed: float, water_pump_torque: float):
    """A failure while a drive settles to its operating point before a run (``reset``, the
    drive's clock running up to 0 from minus the settling time) says so, with the operating
    point: "while settling to the operating point ..." (the failure's own time, negative, is
    then before the run's start)."""
    try:
        yield
    except DivergenceError as err:
        raise DivergenceError(f"while settling to the operating point (crank {crank_speed / RPM:.6g} rpm, water-pump "
                              f"torque {water_pump_torque:g} N.m) before the run starts at t = 0: {err}") from None


class BeltDrive:
    """A belt drive built from a layout: reset it, advance it, read its outputs.

    Inputs (:attr:`inputs`): ``crank_speed`` [rad/s] in the crank's running direction (or,
    for a torque-driven crank, ``engine_torque`` [N m] driving it), ``water_pump_torque``
    [N m] opposing the water pump's rotation, and ``{pulley}_torque`` [N m] opposing the
    rotation of each accessory with ``load = "input"``; the torques other than the water
    pump's are given by keyword, and one not given is 0.

    :attr:`parameters` are the kernels' records (:class:`~belt_fmu.model.parameters.
    Parameters`), :attr:`geometry` the installed drive the initialization works on,
    :attr:`views` and :attr:`arrays` named views of the state vector :attr:`y` and of the
    work buffers (:mod:`belt_fmu.model.state`).
    """

    def __init__(self, layout):
        with kernel_cache.compiling("discretized"):  # the kernels load (or compile, once) here
            self._build(layout)

    def _build(self, layout) -> None:
        self.layout = layout
        self.pulley_names = [p.name for p in layout.pulleys]
        self.inputs = input_specs(layout)
        self.torque_driven_crank = layout.torque_driven_crank
        # the keyword inputs: name -> (spec, pulley index, sign of its load torque)
        index = {name: j for j, name in enumerate(self.pulley_names)}
        self._torque_inputs = {spec.name: (spec, index[spec.pulley], -1.0 if j == 0 else 1.0)
                               for j, spec in enumerate(self.inputs) if spec.pulley is not None}
        self.parameters, self.geometry = translate(layout)
        n, p, k = dimensions(self.parameters)
        n_state, n_work, n_index = buffer_sizes(n, p, k)
        self.y = np.zeros(n_state)  # the state vector
        self.work = np.zeros(n_work)  # diagnostics and scratch
        self.index_work = np.zeros(n_index, dtype=np.int64)
        # named views of the buffers' memory
        self.views = unpack_state(self.y, n, p, k)
        self.arrays = unpack_work(self.work, self.index_work, n, p, k)
        # the inputs the state runs at, the nominal step, the outputs' trial step and its
        # bookkeeping: kept by the compiled entry integrator.communicate
        # (the table at integrator.CRANK_OMEGA), so that a native caller shares them
        self.specs = output_specs(self.pulley_names, layout.headline_pulley_name)
        self.control = np.zeros(control_size(len(self.specs)))
        self.control[AVERAGING] = layout.drive.output_mode == "average"
        self._integral = self.control[CONTROL_SIZE:CONTROL_SIZE + len(self.specs)]  # integrator.average_buffers
        # a view of the inputs the state runs at, crank omega CCW [rad/s] and pump torque [N m],
        # and of the length [s] of the internal steps it runs with (the outputs' trial step's)
        self._inputs = self.control[CRANK_OMEGA:OUTPUT_DT + 1]
        self.dt = stable_time_step(self.parameters)
        self._inputs[2] = self.dt
        choose_bending_scheme(self.parameters, self.dt)
        self.time = 0.0
        self.output_names = [spec.name for spec in self.specs]
        self._output_buffer = np.zeros(len(self.specs))
        self._trial_y = np.zeros(n_state)  # the trial step of the outputs runs on this copy
        self._trial_start = np.zeros(n_state)  # ... from this state
        # the arrays the compiled entry (integrator.communicate) takes first
        self._kernel_args = (self.y, self.work, self.index_work, self.parameters, self._trial_y, self._trial_start,
                             self.control)
        # the compiled entry for these arguments' types (compiled_entry)
        self._communicate = compiled_entry(communicate, (*self._kernel_args, 1, 1.0, 1.0, 1.0, self._output_buffer))

    @property
    def dt(self) -> float:
        """Nominal (longest) internal step [s] (in :attr:`control`: the outputs' trial step
        takes it after an interval too short to resolve the forces)."""
        return float(self.control[NOMINAL_DT])

    @dt.setter
    def dt(self, value: float) -> None:
        self.control[NOMINAL_DT] = value

    @property
    def rest_length(self) -> float:
        """Unstretched element length l0 [m]."""
        return float(self.parameters.belt[0]["rest_length"])

    # ------------------------------------------------------------------ running
    def load_torques(self, speeds: np.ndarray, water_pump_torque: float, **torques) -> np.ndarray:
        """Steady load torque of every pulley at running speeds ``speeds`` [N m], with the
        keyword torque inputs ``torques`` (:attr:`inputs`)."""
        return steady_load_torques(self.parameters, speeds, water_pump_torque, self._port_torques(torques))

    def reset(self, crank_speed: float | None = None, water_pump_torque: float = 0.0,
              settle_time: float = SETTLE_TIME, **torques):
        """Start at time 0 from the steady running state for these inputs, pulley angles 0.

        The state is first built analytically (:mod:`belt_fmu.model.initialization`) and
        then relaxed by running the model itself for ``settle_time`` [s] at these inputs, so
        that the run starts from the model's own equilibrium without a start-up transient.
        With a tensioner whose arm has Coulomb friction, the drive settles first without that
        friction and then with it and a lighter arm (:meth:`_light_arm`), so that the arm
        starts where its friction holds it against the drive's vibration.
        ``crank_speed`` [rad/s] is the crank speed input, or the speed a torque-driven crank
        starts at (None: 0, or the layout's ``initial_crank_speed_rad_per_s``); the
        torque-driven crank is held at it while the drive settles.
        """
        if crank_speed is None:
            crank_speed = self.layout.drive.initial_crank_speed_rad_per_s if self.torque_driven_crank else 0.0
        check_inputs(crank_speed, water_pump_torque)
        ports = self._port_torques(torques)
        init.place_running_state(self.views, self.geometry, self.parameters, crank_speed, water_pump_torque,
                                 port_torque=ports)
        self._state_replaced()
        self._set_inputs(crank_speed, water_pump_torque, ports)
        self.time = 0.0
        if settle_time > 0.0:
            roles = self.parameters.roles[0]
            roles["crank_speed_input"] = 1  # settle at this crank speed, whatever drives the crank
            record = self.parameters.tensioner[0]
            ratchet = self.geometry.tensioner >= 0 and not record["friction_away"] == record["friction_toward"] == 0.0
            self.time = -(settle_time + (RATCHET_TIME if ratchet else 0.0))  # the run starts at 0
            try:
                with settling(crank_speed, water_pump_torque):
                    if not ratchet:
                        self._advance(settle_time, crank_speed, water_pump_torque, ports)
                    else:
                        with self._arm_without_friction():
                            self._advance(settle_time, crank_speed, water_pump_torque, ports)
                        with self._light_arm():
                            self._advance(RATCHET_TIME, crank_speed, water_pump_torque, ports)
            finally:
                roles["crank_speed_input"] = 0 if self.torque_driven_crank else 1
        self.time = 0.0
        self.views.theta[:] = 0.0  # the angles count from the start
        self.control[AVERAGE_TIME] = 0.0  # no interval yet: the outputs at the start are sampled
        self.control[OUTPUTS_CURRENT] = 0.0

    @contextlib.contextmanager
    def _arm_without_friction(self):
        """The tensioner arm with its Coulomb friction off, for the first settling of
        :meth:`reset`: the arm moves to its balance freely instead of being caught by its
        friction wherever the start's transient leaves it."""
        record = self.parameters.tensioner[0]
        saved = (record["friction_away"], record["friction_toward"])
        record["friction_away"] = record["friction_toward"] = 0.0
        try:
            yield
        finally:
            record["friction_away"], record["friction_toward"] = saved

    @contextlib.contextmanager
    def _light_arm(self):
        """The tensioner arm's inertia divided by :data:`RATCHET_SPEEDUP`, for the second
        settling of :meth:`reset`: where the arm comes to rest under its Coulomb friction.

        The belt's hub load on the arm is not steady: the belt's nodes run onto the pulley
        one by one (the polygon effect of the discretized belt) and its spans vibrate, and
        those load peaks are one-sided. A peak beyond the friction in its direction moves the
        arm a little and nothing moves it back, so from its frictionless balance the arm
        ratchets, over seconds, until no peak passes its friction any more; there it sticks.
        Where it sticks depends neither on its inertia nor on its viscous damping (a stuck arm
        does not move: the friction balances the load whatever they are); how fast it gets
        there does: the arm's motion per peak is inversely proportional to them, so both are
        divided here and every time scale of the arm's own motion shrinks alike."""
        record = self.parameters.tensioner[0]
        saved = (record["arm_inertia"], record["damping"])
        record["arm_inertia"] /= RATCHET_SPEEDUP
        record["damping"] /= RATCHET_SPEEDUP  # a damped arm creeps at a pace set by its damper
        try:
            yield
        finally:
            record["arm_inertia"], record["damping"] = saved

    def advance(self, interval: float, crank_speed: float | None = None, water_pump_torque: float = 0.0,
                **torques) -> None:
        """Advance by ``interval`` [s] with constant inputs (internal steps of at most ``dt``):
        ``crank_speed`` [rad/s] (not for a torque-driven crank), ``water_pump_torque`` [N m]
        and the keyword torque inputs of :attr:`inputs` (``engine_torque``,
        ``{pulley}_torque``), 0 where not given."""
        if self.torque_driven_crank:
            if crank_speed is not None:
                raise ValueError("crank_speed is an output of this drive (drive.crank_input = \"torque\"); give "
                                 "engine_torque [N.m] instead")
            crank_speed = 0.0
        elif crank_speed is None:
            raise ValueError("crank_speed [rad/s] is required (the crank's speed is this drive's input)")
        check_inputs(crank_speed, water_pump_torque)
        self._advance(interval, crank_speed, water_pump_torque, self._port_torques(torques))

    def advance_sampled(self, interval: float, inputs: np.ndarray, table: np.ndarray) -> None:
        """Advance by ``len(inputs)`` samples of ``interval`` [s], sample i at the inputs
        ``inputs[i]`` held (columns as :attr:`inputs`), its outputs into ``table[i]``
        (columns as :attr:`specs`): :meth:`advance` and :attr:`output_values` per sample."""
        names = [spec.name for spec in self.inputs]
        ports = [j for j, spec in enumerate(self.inputs) if spec.pulley is not None]
        for row, out in zip(inputs, table):
            self.advance(interval, None if self.torque_driven_crank else row[0], row[1],
                         **{names[j]: row[j] for j in ports})
            out[:] = self.output_values

    def _advance(self, interval: float, crank_speed: float, water_pump_torque: float, ports: np.ndarray) -> None:
        if not (interval >= 0.0 and math.isfinite(interval)):
            raise ValueError(f"interval must be a finite time >= 0 s, got {interval!r}")
        self._set_inputs(crank_speed, water_pump_torque, ports)
        if interval == 0.0:
            return
        n_steps, dt = internal_steps(interval, self.dt)
        status, taken = self._communicate(*self._kernel_args, n_steps, float(dt), float(self._inputs[0]),
                                          float(water_pump_torque), self._output_buffer)
        if status == RUNAWAY:
            self.time += interval
            raise self._runaway(crank_speed, water_pump_torque, ports)
        if status != OK:
            when = self.time + taken * dt
            what = {NOT_FINITE: "non-finite state values", OVERSTRETCHED: "an element stretched beyond "
                    f"{100 * STRAIN_LIMIT:.0f} % (the belt would have broken)"}[status]
            raise DivergenceError(f"integration diverged at t = {when:.6g} s: {what}; inputs "
                                  f"{self._describe_inputs(crank_speed, water_pump_torque, ports)}, step {dt:.3g} s")
        self.time += interval

    def native_step(self) -> "NativeStep":
        """What a native caller needs to advance this drive as :meth:`advance` does, without
        Python (the FMU's native loader: docs/native-hosts.md, "The fast path"); a drive with
        inputs beyond ``crank_speed`` and ``water_pump_torque`` has none (ValueError)."""
        return NativeStep(self)

    def _describe_inputs(self, crank_speed: float, water_pump_torque: float, ports: np.ndarray) -> str:
        """The inputs a run failed at, for its error message."""
        text = "" if self.torque_driven_crank else f"crank_speed={float(crank_speed)!r} rad/s, "
        text += f"water_pump_torque={float(water_pump_torque)!r} N.m"
        for name, (spec, j, sign) in self._torque_inputs.items():
            text += f", {name}={float(sign * ports[j])!r} {spec.unit}"
        return text

    def _runaway(self, crank_speed: float, water_pump_torque: float, ports: np.ndarray) -> DivergenceError:
        """The error of a run that ended with a pulley running away (:func:`belt_fmu.model.
        integrator.runaway` found it), naming the fastest pulley."""
        surface = np.abs(self.views.omega) * self.geometry.radii
        crank = self.geometry.crank
        crank_omega = abs(float(self.views.omega[crank]))
        if not crank_omega <= MAX_CRANK_OMEGA:
            return DivergenceError(
                f"the crank ran away by t = {self.time:.6g} s: {crank_omega:.4g} rad/s ({crank_omega / RPM:.4g} "
                f"rpm), beyond the model's range of {MAX_CRANK_OMEGA:g} rad/s ({MAX_CRANK_OMEGA / RPM:.0f} rpm); "
                f"the engine torque drives it and no load holds it back (inputs "
                f"{self._describe_inputs(crank_speed, water_pump_torque, ports)})")
        belt_speed = crank_omega * self.geometry.radii[crank]  # prescribed or torque-driven
        j = int(np.argmax(surface))
        return DivergenceError(
            f"pulley {self.pulley_names[j]} ran away by t = {self.time:.6g} s: its surface runs at "
            f"{surface[j]:.4g} m/s ({abs(self.views.omega[j]):.4g} rad/s), the belt at {belt_speed:.4g} m/s; its "
            f"load torque drives it and the belt cannot hold it back (inputs "
            f"{self._describe_inputs(crank_speed, water_pump_torque, ports)})")

    def _port_torques(self, torques: dict) -> np.ndarray:
        """The load torque of every pulley from the keyword torque inputs (others 0); a
        ValueError names an unknown input or a value out of its range."""
        ports = np.zeros(len(self.pulley_names))
        for name, value in torques.items():
            entry = self._torque_inputs.get(name)
            if entry is None:
                known = ", ".join(self._torque_inputs) or "none"
                raise ValueError(f"{name} is not an input of this drive; its torque inputs: {known}")
            spec, j, sign = entry
            problem = spec.problem(value)
            if problem is not None:
                raise ValueError(problem)
            ports[j] = sign * value
        return ports

    # ------------------------------------------------------------------ inspection and excitation
    # Belt nodes are numbered 0 .. n-1 along the belt in its travel direction; positions and
    # velocities are the cord line's, in the drawing's frame (docs/layout-format.md).
    def node_positions(self) -> np.ndarray:
        """Positions of the belt nodes [m], (n, 2): a copy."""
        return self.views.q[:, :2].copy()

    def node_velocities(self) -> np.ndarray:
        """Velocities of the belt nodes [m/s], (n, 2): a copy."""
        return self.views.u[:, :2].copy()

    def span_nodes(self, a: str, b: str, window: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
        """Indices of the nodes now in the free span from pulley ``a`` to pulley ``b`` (the
        next pulley in travel order), ordered along it: the nodes whose projection on the
        straight span lies within ``window`` (fractions of its length from ``a``) and near
        the line (within the offset rule of the span tension, :mod:`belt_fmu.model.outputs`)."""
        names = self.pulley_names
        if a not in names or b not in names or names.index(b) != (names.index(a) + 1) % len(names):
            spans = ", ".join(f"{x} -> {y}" for x, y in zip(names, names[1:] + names[:1]))
            raise ValueError(f"no free span {a} -> {b}; the spans are {spans}")
        j = names.index(a)
        pulleys = self.parameters.pulleys
        x0, y0, x1, y1 = span_end_points(self.arrays.centers, pulleys["radius"], pulleys["sense"], j,
                                         (j + 1) % len(names))
        start, direction = np.array([x0, y0]), np.array([x1 - x0, y1 - y0])
        length = float(np.hypot(*direction))
        relative = self.views.q[:, :2] - start
        along = relative @ direction / length ** 2
        offset = np.abs(relative[:, 0] * direction[1] - relative[:, 1] * direction[0]) / length
        inside = ((window[0] <= along) & (along <= window[1])
                  & (offset < SPAN_OFFSET_FRACTION * length + SPAN_OFFSET_MIN))
        nodes = np.nonzero(inside)[0]
        return nodes[np.argsort(along[nodes])]

    def apply_impulse(self, nodes, impulse) -> None:
        """Strike the belt: add the impulse ``impulse`` [N s] (x, y in the drawing's frame; one
        for all ``nodes`` or one row per node) to the belt nodes ``nodes``, as a modal hammer
        does; their velocities change by impulse / node mass at once."""
        self.apply_velocity(nodes, np.asarray(impulse, dtype=float) / self.parameters.belt[0]["node_mass"])

    def apply_velocity(self, nodes, velocity) -> None:
        """Add ``velocity`` [m/s] (x, y; one for all ``nodes`` or one row per node) to the
        velocities of the belt nodes ``nodes`` (a velocity impulse)."""
        nodes = np.atleast_1d(np.asarray(nodes, dtype=np.int64))
        velocity = np.asarray(velocity, dtype=float)
        n = self.views.q.shape[0]
        if nodes.size and (nodes.min() < -n or nodes.max() >= n):
            raise ValueError(f"belt node indices must be in [0, {n}), got {nodes.tolist()}")
        if velocity.shape not in ((2,), (nodes.size, 2)) or not np.all(np.isfinite(velocity)):
            raise ValueError(f"the velocity or impulse must be finite (x, y) values, one pair or one per node; got "
                             f"shape {velocity.shape}")
        self.views.u[nodes, :2] += velocity
        self.control[OUTPUTS_CURRENT] = 0.0

    # ------------------------------------------------------------------ outputs
    def current_path(self) -> BeltPath:
        """Nominal cord path for the current tensioner position."""
        return BeltPath.from_circles(self.arrays.centers, self.geometry.radii, self.geometry.senses)

    def outputs(self) -> dict:
        """Current values of every output in :attr:`specs` (SI units), by name."""
        return dict(zip(self.output_names, self.output_values.tolist()))

    @property
    def output_values(self) -> np.ndarray:
        """Every output in :attr:`specs` order (SI units) for the current state and inputs,
        computed when first read after a change (:func:`belt_fmu.model.integrator.report`:
        a function of the state and the inputs, not of the steps that led there)."""
        if not self.control[OUTPUTS_CURRENT]:
            self._communicate(*self._kernel_args, 0, 0.0, 0.0, 0.0, self._output_buffer)  # 0 steps: the outputs
        return self._output_buffer

    def evaluate_outputs(self) -> np.ndarray:
        """Recompute :attr:`output_values` now (reading them does when the state changed)."""
        self.control[OUTPUTS_CURRENT] = 0.0
        return self.output_values

    def _set_inputs(self, crank_speed: float, water_pump_torque: float, ports: np.ndarray) -> None:
        self._inputs[0] = self.parameters.roles[0]["crank_sense"] * crank_speed
        self._inputs[1] = water_pump_torque
        if self._torque_inputs and not np.array_equal(self.arrays.port_torque, ports):
            self.control[TRIAL_TAKEN] = 0.0  # the outputs' trial step had the torques before
        self.arrays.port_torque[:] = ports  # the kernels read the pulleys' input torques there
        self.control[OUTPUTS_CURRENT] = 0.0

    # ------------------------------------------------------------------ state
    @property
    def output_mode(self) -> str:
        """``sample`` (outputs at the communication point) or ``average`` (each averaged
        output's mean over the last communication interval), from ``[drive] output_mode``."""
        return "average" if self.control[AVERAGING] else "sample"

    def _average(self) -> np.ndarray:
        """The outputs' running integral's time and step [s] and its values (integrator.AVERAGING)."""
        return np.concatenate([self.control[AVERAGE_TIME:AVERAGE_DT + 1], self._integral])

    def get_state(self) -> np.ndarray:
        """Everything needed to continue exactly: time, the inputs the state runs at (crank
        and pump), the length of its internal steps, every pulley's input torque, the state
        vector and the outputs' running integral over the last communication interval
        (outputs are a function of these)."""
        return np.concatenate([[self.time], self._inputs, self.arrays.port_torque, self.y, self._average()])

    def set_state(self, saved: np.ndarray) -> None:
        ports = self.arrays.port_torque
        average = self._average().size
        expected = 1 + self._inputs.size + ports.size + self.y.size + average
        saved = np.asarray(saved, dtype=float)
        if saved.shape != (expected,):
            raise ValueError(f"state vector has {saved.size} values, this drive needs {expected}")
        self.time = float(saved[0])
        k = 1 + self._inputs.size
        self._inputs[:] = saved[1:k]
        ports[:] = saved[k:k + ports.size]
        k += ports.size
        self.y[:] = saved[k:k + self.y.size]
        k += self.y.size
        self.control[AVERAGE_TIME:AVERAGE_DT + 1] = saved[k:k + 2]
        self._integral[:] = saved[k + 2:]
        self._state_replaced()
        self.control[OUTPUTS_CURRENT] = 0.0

    def _state_replaced(self) -> None:
        """What the work buffers knew of the state is void (after reset and set_state): the
        neighbour lists are rebuilt from the state before the next step, no pair carries a
        normal force until a step finds it in contact (contact.build_candidates relies on
        that), and the outputs' trial step is not that step."""
        self.arrays.lists_valid_for[0] = 0.0
        self.arrays.normal_force[...] = 0.0
        self.control[TRIAL_TAKEN] = 0.0


class NativeStep:
    """The compiled communication step of a :class:`BeltDrive` for native callers:
    :attr:`address` of the C function :data:`belt_fmu.model.discretized_native.advance` and
    :attr:`arguments`, its argument words (addresses of the drive's arrays; valid while this
    object lives). A caller advancing the drive by ``interval`` with the inputs
    ``crank_speed`` and ``water_pump_torque`` does what :meth:`BeltDrive.advance` does:
    ``n_steps, dt = internal_steps(interval, max_step)``,
    ``crank_omega = crank_sense * crank_speed``, and adds ``interval`` to the drive's time
    on success. On a status other than :data:`belt_fmu.model.integrator.OK` (a divergence,
    a pulley running away) the drive is not usable: the caller restores the arrays
    :attr:`saved` from a copy taken before the step (they are all the step changes) and lets
    Python take the step again, which raises the DivergenceError. The drive's outputs
    :attr:`outputs` are current only after a call with 0 steps (:attr:`report_outputs`):
    :meth:`BeltDrive.output_values`, lazily, as Python does.

    Only for a drive whose inputs are ``crank_speed`` and ``water_pump_torque``: the C
    function takes no pulley input torques, and a torque-driven crank's speed is no input."""

    report_outputs = True

    def __init__(self, drive: BeltDrive):
        if not has_native_step(drive.inputs):
            raise ValueError(f"the native step takes crank_speed and water_pump_torque; this drive's inputs are "
                             f"{', '.join(spec.name for spec in drive.inputs)}")
        with kernel_cache.compiling("discretized native step", detect=False):
            from . import discretized_native

        self.drive = drive
        self.address = discretized_native.advance.address
        self.arguments = discretized_native.arguments(*drive._kernel_args, drive._output_buffer)
        self.max_step = drive.dt
        self.crank_sense = float(drive.parameters.roles[0]["crank_sense"])
        self.outputs = drive._output_buffer
        # the implicit solves' and the friction batch's scratch is written before it is read in
        # every step, so a failed step need not restore it (at 150 elements 104 and 76 of the
        # work buffer's 231 kB)
        work_kept = _outside(drive.work, drive.arrays.implicit_work, drive.arrays.separator_work,
                             drive.arrays.contact_batch)
        self.saved = (drive.y, *work_kept, drive.index_work, drive.control)


def _outside(buffer: np.ndarray, *views: np.ndarray) -> tuple:
    """The pieces of the flat array ``buffer`` outside ``views`` (contiguous views of it), in order."""
    base = buffer.ctypes.data
    spans = sorted(((view.ctypes.data - base) // buffer.itemsize, view.size) for view in views)
    pieces, at = [], 0
    for start, size in spans:
        if start > at:
            pieces.append(buffer[at:start])
        at = start + size
    if at < buffer.size:
        pieces.append(buffer[at:])
    return tuple(pieces)


def make_drive(layout):
    """The model of ``layout`` its ``[drive] model`` selects: :class:`BeltDrive` (the
    discretized belt) or :class:`belt_fmu.model.lumped_system.LumpedDrive` (the lumped
    rotational model); both have the same interface and outputs."""
    if layout.drive.model == "lumped":
        from .lumped_system import LumpedDrive

        return LumpedDrive(layout)
    return BeltDrive(layout)


def compiled_entry(kernel, args):
    """The compiled version of the numba function ``kernel`` for the types of ``args`` (from
    numba's cache, or compiled), to call directly. Through the dispatcher, every call types
    its arguments in Python, and the parameter records (a named tuple of record arrays) cost
    about 1 ms per call in the FMU's copy of the package, ten times the physics of a 1e-4 s
    communication step. The caller must pass arguments of exactly these types."""
    return kernel.compile(tuple(numba.typeof(arg) for arg in args))
