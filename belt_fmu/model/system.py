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

import math

import numpy as np

from . import initialization as init
from .drive import steady_load_torques
from .geometry import BeltPath
from .integrator import NOT_FINITE, OK, OVERSTRETCHED, STRAIN_LIMIT, report, run, stable_time_step
from .outputs import output_specs
from .parameters import translate
from .state import buffer_sizes, dimensions, unpack_state, unpack_work

#: Inputs the model accepts: the crank turns forwards (the initialization builds a running
#: state in the running direction) and below 1500 rad/s (14 300 rpm; belt speeds beyond that
#: are outside any automotive drive); water-pump torque magnitudes up to 1 kN m.
CRANK_SPEED_RANGE = (0.0, 1500.0)  # [rad/s]
WATER_PUMP_TORQUE_RANGE = (-1000.0, 1000.0)  # [N m]
#: time [s] the reset lets the drive run at its initial inputs to settle (dynamic relaxation)
SETTLE_TIME = 0.15


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
        self.output_values = np.zeros(len(self.specs))

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
        """
        check_inputs(crank_speed, water_pump_torque)
        init.place_running_state(self.views, self.geometry, self.parameters, crank_speed, water_pump_torque)
        self.arrays.rebuild_countdown[0] = 0
        self.time = 0.0
        if settle_time > 0.0:
            self.advance(settle_time, crank_speed, water_pump_torque)
            self.time = 0.0
        else:
            self.evaluate_outputs()

    def advance(self, interval: float, crank_speed: float, water_pump_torque: float) -> None:
        """Advance by ``interval`` [s] with constant inputs (internal steps of at most ``dt``)."""
        check_inputs(crank_speed, water_pump_torque)
        if not (interval >= 0.0 and math.isfinite(interval)):
            raise ValueError(f"interval must be a finite time >= 0 s, got {interval!r}")
        if interval == 0.0:
            return
        n_steps = max(1, math.ceil(interval / self.dt - 1e-9))
        dt = interval / n_steps
        omega = self.parameters.roles[0]["crank_sense"] * crank_speed
        status, taken = run(*self._kernel_args, n_steps, dt, omega, water_pump_torque, self.output_values)
        if status != OK:
            when = self.time + taken * dt
            what = {NOT_FINITE: "non-finite state values", OVERSTRETCHED: "an element stretched beyond "
                    f"{100 * STRAIN_LIMIT:.0f} % (the belt would have broken)"}[status]
            raise DivergenceError(f"integration diverged at t = {when:.6g} s: {what}; "
                                  f"inputs crank_speed={crank_speed!r} rad/s, water_pump_torque="
                                  f"{water_pump_torque!r} N.m, step {dt:.3g} s")
        self.time += interval

    # ------------------------------------------------------------------ outputs
    def current_path(self) -> BeltPath:
        """Nominal cord path for the current tensioner position."""
        return BeltPath.from_circles(self.arrays.centers, self.geometry.radii, self.geometry.senses)

    def outputs(self) -> dict:
        """Current values of every output in :attr:`specs` (SI units), by name."""
        return dict(zip(self.output_names, self.output_values.tolist()))

    def evaluate_outputs(self) -> np.ndarray:
        """Recompute :attr:`output_values` (outputs in :attr:`specs` order) from the state;
        :meth:`advance`, :meth:`reset` and :meth:`set_state` keep them current already."""
        report(*self._kernel_args, self.output_values)
        return self.output_values

    # ------------------------------------------------------------------ state
    def get_state(self) -> np.ndarray:
        """Everything needed to continue exactly: time, state vector and the diagnostics
        of the last step (outputs are computed from them)."""
        return np.concatenate([[self.time], self.y, self.work])

    def set_state(self, saved: np.ndarray) -> None:
        expected = 1 + self.y.size + self.work.size
        saved = np.asarray(saved, dtype=float)
        if saved.shape != (expected,):
            raise ValueError(f"state vector has {saved.size} values, this drive needs {expected}")
        self.time = float(saved[0])
        self.y[:] = saved[1:1 + self.y.size]
        self.work[:] = saved[1 + self.y.size:]
        self.arrays.rebuild_countdown[0] = 0  # neighbour lists are rebuilt from the state
        self.evaluate_outputs()


def check_inputs(crank_speed, water_pump_torque) -> None:
    """Refuse inputs the model is not made for, naming the input, the value and the range."""
    for name, value, (low, high), unit in (("crank_speed", crank_speed, CRANK_SPEED_RANGE, "rad/s"),
                                           ("water_pump_torque", water_pump_torque, WATER_PUMP_TORQUE_RANGE, "N.m")):
        if not isinstance(value, (int, float, np.floating)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        if not low <= value <= high:
            raise ValueError(f"{name} = {value:.6g} {unit} is outside the allowed range [{low:g}, {high:g}] {unit}")


def make_drive(layout):
    """The model of ``layout`` its ``[drive] model`` selects: :class:`BeltDrive` (the
    discretized belt) or :class:`belt_fmu.model.lumped_system.LumpedDrive` (the lumped
    rotational model); both have the same interface and outputs."""
    if layout.drive.model == "lumped":
        from .lumped_system import LumpedDrive

        return LumpedDrive(layout)
    return BeltDrive(layout)
