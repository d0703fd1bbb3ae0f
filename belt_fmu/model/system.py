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
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from . import initialization as init
from .drive import steady_load_torques
from .geometry import BeltPath
from .inputs import CRANK_SPEED_RANGE, WATER_PUMP_TORQUE_RANGE, check_inputs  # noqa: F401 (re-exported)
from .integrator import NOT_FINITE, OK, OVERSTRETCHED, STRAIN_LIMIT, report, run, stable_time_step
from .outputs import output_specs
from .parameters import translate
from .state import buffer_sizes, dimensions, unpack_state, unpack_work

#: time [s] the reset lets the drive run at its initial inputs to settle (dynamic relaxation)
SETTLE_TIME = 0.15
#: the reset lets the tensioner arm, this much lighter and less damped, come to rest under its
#: friction for
#: RATCHET_TIME [s] (BeltDrive._light_arm): what takes the real arm seconds
RATCHET_SPEEDUP = 40.0
RATCHET_TIME = 0.15


#: a pulley whose cord surface runs faster than this multiple of the belt speed plus
#: RUNAWAY_SPEED_MARGIN [m/s] has run away (creep slip is a few percent; the margin covers
#: the crank at rest)
RUNAWAY_SPEED_RATIO = 1.5
RUNAWAY_SPEED_MARGIN = 5.0


class DivergenceError(RuntimeError):
    """The integration produced non-finite values or tore the belt apart."""


class BeltDrive:
    """A belt drive built from a layout: reset it, advance it, read its outputs.

    Inputs: ``crank_speed`` [rad/s] in the crank's running direction and
    ``water_pump_torque`` [N m] opposing the water pump's rotation.

    :attr:`parameters` are the kernels' records (:class:`~belt_fmu.model.parameters.
    Parameters`), :attr:`geometry` the installed drive the initialization works on,
    :attr:`views` and :attr:`arrays` named views of the state vector :attr:`y` and of the
    work buffers (:mod:`belt_fmu.model.state`).
    """

    def __init__(self, layout):
        self.layout = layout
        self.pulley_names = [p.name for p in layout.pulleys]
        self.parameters, self.geometry = translate(layout)
        n, p, k = dimensions(self.parameters)
        n_state, n_work, n_index = buffer_sizes(n, p, k)
        self.y = np.zeros(n_state)  # the state vector
        self.work = np.zeros(n_work)  # diagnostics and scratch
        self.index_work = np.zeros(n_index, dtype=np.int64)
        # the arrays the compiled entries take, and named views of the same memory
        self._kernel_args = (self.y, self.work, self.index_work, self.parameters)
        self.views = unpack_state(self.y, n, p, k)
        self.arrays = unpack_work(self.work, self.index_work, n, p, k)
        self.dt = stable_time_step(self.parameters)
        self.time = 0.0
        self.specs = output_specs(self.pulley_names, layout.headline_pulley_name)
        self.output_names = [spec.name for spec in self.specs]
        self._output_buffer = np.zeros(len(self.specs))
        self._outputs_current = False
        self._trial_y = np.zeros(n_state)  # the trial step of the outputs runs on this copy
        self._inputs = np.zeros(2)  # the inputs the state runs at: crank omega CCW [rad/s], pump torque [N m]

    @property
    def rest_length(self) -> float:
        """Unstretched element length l0 [m]."""
        return float(self.parameters.belt[0]["rest_length"])

    @property
    def drive(self) -> np.ndarray:
        """The TENSIONER record (:attr:`parameters`.tensioner), under the name the FMU side
        (belt_fmu/build/fmu.py, fmu_tests/test_fmu.py) reads ``spring_sense`` and
        ``spring_preload`` by; remove once they read ``parameters.tensioner``."""
        return self.parameters.tensioner

    # ------------------------------------------------------------------ running
    def load_torques(self, speeds: np.ndarray, water_pump_torque: float) -> np.ndarray:
        """Steady load torque of every pulley at running speeds ``speeds`` [N m]."""
        return steady_load_torques(self.parameters, speeds, water_pump_torque)

    def reset(self, crank_speed: float = 0.0, water_pump_torque: float = 0.0, settle_time: float = SETTLE_TIME):
        """Start at time 0 from the steady running state for these inputs.

        The state is first built analytically (:mod:`belt_fmu.model.initialization`) and
        then relaxed by running the model itself for ``settle_time`` [s] at these inputs, so
        that the run starts from the model's own equilibrium without a start-up transient.
        With a tensioner whose arm has Coulomb friction, the drive settles first without that
        friction and then with it and a lighter arm (:meth:`_light_arm`), so that the arm
        starts where its friction holds it against the drive's vibration.
        """
        check_inputs(crank_speed, water_pump_torque)
        init.place_running_state(self.views, self.geometry, self.parameters, crank_speed, water_pump_torque)
        self.arrays.rebuild_countdown[0] = 0
        self._set_inputs(crank_speed, water_pump_torque)
        self.time = 0.0
        if settle_time <= 0.0:
            return
        record = self.parameters.tensioner[0]
        if self.geometry.tensioner < 0 or record["friction_away"] == record["friction_toward"] == 0.0:
            self.advance(settle_time, crank_speed, water_pump_torque)
        else:
            with self._arm_without_friction():
                self.advance(settle_time, crank_speed, water_pump_torque)
            with self._light_arm():
                self.advance(RATCHET_TIME, crank_speed, water_pump_torque)
        self.time = 0.0

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

    def advance(self, interval: float, crank_speed: float, water_pump_torque: float) -> None:
        """Advance by ``interval`` [s] with constant inputs (internal steps of at most ``dt``)."""
        check_inputs(crank_speed, water_pump_torque)
        if not (interval >= 0.0 and math.isfinite(interval)):
            raise ValueError(f"interval must be a finite time >= 0 s, got {interval!r}")
        self._set_inputs(crank_speed, water_pump_torque)
        if interval == 0.0:
            return
        n_steps = max(1, math.ceil(interval / self.dt - 1e-9))
        dt = interval / n_steps
        status, taken = run(*self._kernel_args, n_steps, dt, self._inputs[0], water_pump_torque)
        if status != OK:
            when = self.time + taken * dt
            what = {NOT_FINITE: "non-finite state values", OVERSTRETCHED: "an element stretched beyond "
                    f"{100 * STRAIN_LIMIT:.0f} % (the belt would have broken)"}[status]
            raise DivergenceError(f"integration diverged at t = {when:.6g} s: {what}; "
                                  f"inputs crank_speed={crank_speed!r} rad/s, water_pump_torque="
                                  f"{water_pump_torque!r} N.m, step {dt:.3g} s")
        self.time += interval
        self._check_runaway(crank_speed, water_pump_torque)

    def _check_runaway(self, crank_speed: float, water_pump_torque: float) -> None:
        """Raise DivergenceError if a pulley runs away: its cord surface faster than
        :data:`RUNAWAY_SPEED_RATIO` times the belt speed the crank gives plus
        :data:`RUNAWAY_SPEED_MARGIN`. The belt cannot drive a pulley that fast, so its load
        torque drives it (a negative load beyond what the belt can hold back)."""
        surface = np.abs(self.views.omega) * self.geometry.radii
        belt_speed = abs(crank_speed) * self.geometry.radii[self.geometry.crank]
        j = int(np.argmax(surface))
        if not surface[j] <= RUNAWAY_SPEED_RATIO * belt_speed + RUNAWAY_SPEED_MARGIN:
            raise DivergenceError(
                f"pulley {self.pulley_names[j]} ran away by t = {self.time:.6g} s: its surface runs at "
                f"{surface[j]:.4g} m/s ({abs(self.views.omega[j]):.4g} rad/s), the belt at {belt_speed:.4g} m/s; its "
                f"load torque drives it and the belt cannot hold it back (inputs crank_speed={crank_speed!r} rad/s, "
                f"water_pump_torque={water_pump_torque!r} N.m)")

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
        if not self._outputs_current:
            report(*self._kernel_args, self._trial_y, self.dt, self._inputs[0], self._inputs[1],
                   self._output_buffer)
            self._outputs_current = True
        return self._output_buffer

    def evaluate_outputs(self) -> np.ndarray:
        """Recompute :attr:`output_values` now (reading them does when the state changed)."""
        self._outputs_current = False
        return self.output_values

    def _set_inputs(self, crank_speed: float, water_pump_torque: float) -> None:
        self._inputs[0] = self.parameters.roles[0]["crank_sense"] * crank_speed
        self._inputs[1] = water_pump_torque
        self._outputs_current = False

    # ------------------------------------------------------------------ state
    def get_state(self) -> np.ndarray:
        """Everything needed to continue exactly: time, the inputs the state runs at and
        the state vector (outputs are a function of these)."""
        return np.concatenate([[self.time], self._inputs, self.y])

    def set_state(self, saved: np.ndarray) -> None:
        expected = 1 + self._inputs.size + self.y.size
        saved = np.asarray(saved, dtype=float)
        if saved.shape != (expected,):
            raise ValueError(f"state vector has {saved.size} values, this drive needs {expected}")
        self.time = float(saved[0])
        self._inputs[:] = saved[1:3]
        self.y[:] = saved[3:]
        self.arrays.rebuild_countdown[0] = 0  # neighbour lists are rebuilt from the state
        self._outputs_current = False

