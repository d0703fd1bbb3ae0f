"""``LumpedDrive``: the lumped rotational model (:mod:`belt_fmu.model.lumped`) behind the same
interface as :class:`belt_fmu.model.system.BeltDrive`: ``reset``, ``advance``, ``outputs``,
``output_values``, ``get_state``/``set_state``, with the same outputs, names and units.

Typical use (or ``[drive] model = "lumped"`` in the layout and
:func:`belt_fmu.model.system.make_drive`)::

    drive = LumpedDrive(load_layout())
    drive.reset(crank_speed=83.8)
    drive.advance(0.01, crank_speed=83.8, water_pump_torque=2.0)
    drive.outputs()["bearing_force"]

The steady running state it starts from is the lumped model's own: the span tensions rise by
load torque / radius across each driven pulley (:func:`belt_fmu.model.initialization.
span_tension_offsets`), their level and the arm angle follow from the tensioner's torque
balance (:func:`belt_fmu.model.tensioner.spring_torque`, hub loads with the centrifugal term)
and from the belt's unstretched length (the spans' contents ``G_j / (1 + T_j/EA)`` and the
wraps' ``R_j theta_j / (1 + T_(j-1)/EA)`` less what their sliding arcs release into the spans,
:func:`belt_fmu.model.lumped.steady_arcs`); without a tensioner the length alone sets the
level. The belt runs onto every pulley at its surface speed (creep on the exit arcs only).
"""
from __future__ import annotations

import contextlib
import math

import numba
import numpy as np

from .. import kernel_cache
from ..layout import LayoutError, lumped_model_limits
from . import lumped
from .drive import steady_load_torques
from .geometry import BeltPath
from .initialization import InitializationError, _bracketed_root, span_tension_offsets
from .inputs import check_input_table, input_specs
from .outputs import output_specs
from .parameters import translate, translate_lumped
from .roots import brent_root
from .system import SETTLE_TIME, DivergenceError, check_inputs, compiled_entry, internal_steps, settling
from .tensioner import spring_torque


@contextlib.contextmanager
def scalar_loops():
    """The kernels compiled inside without LLVM's loop vectorizer (``numba.config.LOOP_VECTORIZE``,
    which numba reads as it builds each pass pipeline). The lumped kernels' loops run over a
    drive's pulleys and its outputs, a few to a few dozen values, where a vectorized loop's
    vector body, scalar remainder and tests between them cost more than they save: the step
    is 2-4 % faster without (docs/performance.md, "The work record"). The results are the
    same: without fast-math flags LLVM vectorizes no reduction."""
    vectorize = numba.config.LOOP_VECTORIZE
    numba.config.LOOP_VECTORIZE = 0
    try:
        yield
    finally:
        numba.config.LOOP_VECTORIZE = vectorize


class LumpedDrive:
    """A belt drive of a layout as the lumped rotational model: reset it, advance it, read its
    outputs (the interface of :class:`belt_fmu.model.system.BeltDrive`).

    :attr:`parameters` are the kernels' records (the same translation as the discretized
    model's, :func:`belt_fmu.model.parameters.translate`), :attr:`belt` the LUMPED_BELT record,
    :attr:`views` and :attr:`arrays` the named fields of the state and the work record
    (:data:`belt_fmu.model.lumped.LUMPED_STATE_LAYOUT`, ``LUMPED_WORK_LAYOUT``, cut to the
    drive's pulleys), whose values are :attr:`y` and :attr:`work`, both views of
    :attr:`carried`: everything a step carries to the next (its values in use at
    :attr:`in_use`).
    """

    model = "lumped"

    #: the lumped model's crank is speed-driven (drive.crank_input = "torque" is the
    #: discretized model's only, see :func:`belt_fmu.layout.lumped_model_limits`)
    torque_driven_crank = False

    def __init__(self, layout):
        with kernel_cache.compiling("lumped"), scalar_loops():  # the kernels load (or compile, once) here
            self._build(layout)

    def _build(self, layout) -> None:
        # a layout checked as discretized and switched to lumped (simulate --model lumped)
        data = layout.to_data()
        limits = lumped_model_limits({**data["drive"], "model": "lumped"}, data["pulleys"])
        if limits:
            raise LayoutError(layout.source, [f"{layout.source}: {path}: {value!r} {what}"
                                              for path, value, what in limits])
        self.layout = layout
        self.inputs = input_specs(layout)  # crank_speed and water_pump_torque
        self.pulley_names = [p.name for p in layout.pulleys]
        self.parameters, self.geometry = translate(layout)
        geom = self.geometry
        installed = BeltPath.from_circles(geom.centers, geom.radii, geom.senses)
        self._ends = (lumped.sink_compliances(installed, layout.belt, layout.contact)
                      + lumped.bending_compliances(installed, layout.belt))
        self._carry_the_belt(installed)
        self.belt = translate_lumped(layout, installed, self._ends)
        p = len(self.pulley_names)
        n_state = lumped.LUMPED_STATE.itemsize // 8
        self.carried = np.zeros(n_state + lumped.LUMPED_WORK.itemsize // 8)
        self.y = self.carried[:n_state]
        self.work = self.carried[n_state:]
        # the kernels' views of y and work: an array of one record each
        self._state = self.y.view(lumped.LUMPED_STATE)
        self._work = self.work.view(lumped.LUMPED_WORK)
        self.views = lumped.views(self._state, lumped.LUMPED_STATE_LAYOUT, p)
        self.arrays = lumped.views(self._work, lumped.LUMPED_WORK_LAYOUT, p)
        #: positions in :attr:`carried` of the drive's values, ascending: the records' fields cut
        #: to its pulleys
        self.in_use = np.concatenate([lumped.positions(lumped.LUMPED_STATE_LAYOUT, p),
                                      n_state + lumped.positions(lumped.LUMPED_WORK_LAYOUT, p)])
        self.dt = lumped.MAX_STEP
        self.time = 0.0
        self.specs = output_specs(self.pulley_names, layout.headline_pulley_name)
        self.output_names = [spec.name for spec in self.specs]
        self.output_values = np.zeros(len(self.specs))
        self._bind()
        self._place_reference()

    def _carry_the_belt(self, path) -> None:
        """Add the belt's inertia (:func:`belt_fmu.model.lumped.belt_inertias`) to the
        pulleys' and the arm's in the parameter records (a speed-driven crank's is unused)."""
        p = self.parameters
        tensioner = int(p.roles[0]["tensioner"])
        pivot = (float(p.tensioner[0]["pivot_x"]), float(p.tensioner[0]["pivot_y"]))
        pulleys, arm = lumped.belt_inertias(path, self.layout.belt.mass_per_length_kg_per_m, tensioner, pivot)
        p.pulleys["inertia"] += pulleys
        if tensioner >= 0:
            p.tensioner[0]["arm_inertia"] += arm

    def state_offset(self, view: str) -> int:
        """Where the state view ``view`` (:data:`belt_fmu.model.lumped.LUMPED_STATE_LAYOUT`)
        starts in the state vector ``y``."""
        return lumped.LUMPED_STATE.fields[view][1] // 8

    def _place_reference(self) -> None:
        """The spans' reference ends: the installed tangent points (:func:`lumped.update_springs`),
        and the compliances of the spans' ends (:func:`belt_fmu.model.lumped.sink_compliances`,
        :func:`belt_fmu.model.lumped.bending_compliances`)."""
        self._place(self.geometry.arm_installed, lumped.PLACE_INSTALLED)
        self.arrays["end_compliance"][:] = self._ends

    def _place(self, arm_angle: float, task: int = lumped.PLACE) -> None:
        """The geometry at arm angle ``arm_angle`` [rad] into the work buffer
        (:func:`belt_fmu.model.lumped.place_geometry`, a run of ``task`` steps)."""
        self._run(self._state, self._work, self.parameters, self.belt, task, float(arm_angle),
                  self._crank_omega, self._pump_torque, self._output_row)

    def load_torques(self, speeds: np.ndarray, water_pump_torque: float) -> np.ndarray:
        """Steady load torque of every pulley at running speeds ``speeds`` [N m]."""
        return steady_load_torques(self.parameters, speeds, water_pump_torque)

    # ------------------------------------------------------------------ steady state
    def _springs(self, arm_angle: float) -> np.ndarray:
        """Span spring lengths G_j [m] at this arm angle (the geometry stays in the work buffer)."""
        self._place(arm_angle)
        return self.arrays["spring_length"].copy()

    def _steady_wraps(self, tensions: np.ndarray, centrifugal: float, flow: float) -> tuple[np.ndarray, np.ndarray]:
        """(W_j [m], D_j [m]) in steady running at span tensions ``tensions`` and the
        unstretched flow ``flow`` [m/s], at the wrap angles of the geometry last placed and
        the installed wrap lengths (``bank``, placed with the reference): each wrap's content
        (:func:`belt_fmu.model.lumped.steady_wraps`), and the belt each span's ends release
        into it: the sliding arcs at its two ends (:func:`belt_fmu.model.lumped.wrap_arcs`)
        from the adhesion tension of their wraps' content, its sink and its bending, as a step
        computes them."""
        ea = self.belt[0]["axial_stiffness"]
        pulleys = self.parameters.pulleys
        banks = self.arrays["bank"]
        wraps = np.empty(len(banks))
        lumped.steady_wraps(self.parameters.friction[0], pulleys, banks, tensions, centrifugal, flow, ea, wraps)
        adhesion = lumped.adhesion_tension.py_func(banks, wraps, centrifugal, ea)  # on arrays, uncompiled
        releases = lumped.steady_arcs(pulleys["radius"], pulleys["effective_mu"], self.arrays["wrap"],
                                      tensions - centrifugal, ea, adhesion)[0]
        return wraps, releases + self.arrays["end_compliance"] * np.maximum(tensions - centrifugal, 0.0)

    def _hub_moment(self, arm_angle: float, effective: np.ndarray) -> float:
        """Moment [N m, CCW] about the pivot of the belt's force on the tensioner pulley for
        effective span tensions ``effective`` (T - m'v^2) at this arm angle."""
        self._springs(arm_angle)
        t = self.geometry.tensioner
        i = t - 1 if t > 0 else len(effective) - 1
        a = self.arrays
        fx = -effective[i] * a["direction_x"][i] + effective[t] * a["direction_x"][t]
        fy = -effective[i] * a["direction_y"][i] + effective[t] * a["direction_y"][t]
        r = a["centers"][t] - self.geometry.pivot
        return float(r[0] * fy - r[1] * fx)

    def steady_state(self, crank_speed: float, water_pump_torque: float):
        """(arm angle [rad], span tensions [N]) of the steady running state (module docstring)."""
        geom = self.geometry
        ea = self.belt[0]["axial_stiffness"]
        total = self.belt[0]["unstretched_length"]
        radii = geom.radii
        belt_speed = abs(crank_speed) * radii[geom.crank]
        centrifugal = self.belt[0]["mass_per_length"] * belt_speed ** 2
        path = BeltPath.from_circles(geom.centers, radii, geom.senses)
        loads = steady_load_torques(self.parameters, belt_speed / radii, water_pump_torque)
        offsets = span_tension_offsets(path, geom.crank, loads)

        def content(arm_angle, tensions):
            strain = tensions / ea
            springs = self._springs(arm_angle)
            wraps, releases = self._steady_wraps(tensions, centrifugal, belt_speed / (1.0 + strain[geom.crank - 1]))
            return float(np.sum(springs / (1.0 + strain) + wraps - releases)) - total

        if geom.tensioner < 0:
            def residual(level):
                return content(geom.arm_installed, offsets + level)

            try:
                level = brent_root(residual, -0.05 * ea - offsets.min(), 0.05 * ea, xtol=1e-10)
            except ValueError as exc:
                raise InitializationError(f"no belt tension closes the loop: {exc}") from None
            return geom.arm_installed, offsets + level

        arm = self.parameters.tensioner[0]

        def level_at(psi):
            m0 = self._hub_moment(psi, offsets - centrifugal)
            m1 = self._hub_moment(psi, offsets + 1.0 - centrifugal)
            return -(spring_torque(arm, psi) + m0) / (m1 - m0)

        def residual(psi):
            return content(psi, offsets + level_at(psi))

        psi = _bracketed_root(residual, geom.arm_installed, (arm["stop_min"], arm["stop_max"]), geom.arm_installed)
        return psi, offsets + level_at(psi)

    # ------------------------------------------------------------------ running
    def reset(self, crank_speed: float = 0.0, water_pump_torque: float = 0.0, settle_time: float = SETTLE_TIME,
              **torques):
        """Start at time 0 from the steady running state for these inputs, relaxed by running
        the model for ``settle_time`` [s] (as :meth:`BeltDrive.reset`)."""
        _no_torque_inputs(torques)
        check_inputs(crank_speed, water_pump_torque)
        geom = self.geometry
        ea = self.belt[0]["axial_stiffness"]
        try:
            psi, tension = self.steady_state(crank_speed, water_pump_torque)
            mass = self.belt[0]["mass_per_length"] * (crank_speed * geom.radii[geom.crank]) ** 2
            if np.any(tension - mass <= 0.0):
                raise InitializationError("a span would be slack")
        except InitializationError:  # loads the belt cannot carry: start unloaded (as BeltDrive)
            psi, tension = self.steady_state(crank_speed, 0.0 * water_pump_torque)
        self.y[:] = 0.0
        self.work[:] = 0.0
        self._place_reference()
        springs = self._springs(psi)
        v, a = self.views, self.arrays
        v["arm"][:] = (psi, 0.0)
        strain = tension / ea
        crank = geom.crank
        flow = abs(crank_speed) * geom.radii[crank] / (1.0 + strain[crank - 1])
        v["content"][:] = springs / (1.0 + strain)
        v["wrap_content"][:], v["release"][:] = self._steady_wraps(tension, mass, flow)
        a["tension"][:] = tension
        a["belt_force"][:] = tension - np.roll(tension, 1)  # each pulley's share of the load: steady running
        v["flow"][:] = flow
        v["omega"][:] = geom.senses * flow * (1.0 + np.roll(strain, 1)) / geom.radii
        v["omega"][crank] = self.parameters.roles[0]["crank_sense"] * crank_speed
        self.time = 0.0
        if settle_time > 0.0:
            self.time = -settle_time  # the run starts at 0
            with settling(crank_speed, water_pump_torque):
                self.advance(settle_time, crank_speed, water_pump_torque)
            self.time = 0.0
        self._report_outputs(start=True)  # no interval yet: the outputs at the start are sampled

    def _bind(self) -> None:
        """Resolve the compiled :func:`belt_fmu.model.lumped.run` for these argument types
        once (:func:`belt_fmu.model.system.compiled_entry`): through the dispatcher, typing
        the arguments takes about 9 us per call, longer than a 1 ms communication step of
        this model takes, and numba types the parameters (a named tuple) in Python at every
        call, which kept growing memory: about 14 kB per 1000 restored FMU states, each of
        which reports the outputs. An :meth:`advance` is a run of one sample: its inputs in
        ``_crank_omega`` and ``_pump_torque``, its outputs into ``_output_row``, a view of
        :attr:`output_values`."""
        self._crank_omega = np.zeros(1)
        self._pump_torque = np.zeros(1)
        self._output_row = self.output_values.reshape(1, -1)
        self._run = compiled_entry(lumped.run, (self._state, self._work, self.parameters, self.belt,
                                                0, float(self.dt), self._crank_omega, self._pump_torque,
                                                self._output_row))

    def advance(self, interval: float, crank_speed: float, water_pump_torque: float = 0.0, **torques) -> None:
        """Advance by ``interval`` [s] with constant inputs (internal steps of at most ``dt``)."""
        _no_torque_inputs(torques)
        check_inputs(crank_speed, water_pump_torque)
        if not (interval >= 0.0 and math.isfinite(interval)):
            raise ValueError(f"interval must be a finite time >= 0 s, got {interval!r}")
        if interval == 0.0:
            return
        n_steps, dt = self._steps(interval)
        omega = self.parameters.roles[0]["crank_sense"] * crank_speed
        self._crank_omega[0] = omega
        self._pump_torque[0] = water_pump_torque
        status, _, taken = self._run(self._state, self._work, self.parameters, self.belt, n_steps,
                                     float(dt), self._crank_omega, self._pump_torque, self._output_row)
        if status != lumped.OK:
            raise self._divergence(status, self.time + taken * dt, crank_speed, water_pump_torque, dt)
        self.time += interval

    def stepper(self, interval: float):
        """``advance(crank_speed, water_pump_torque)``: :meth:`advance` by ``interval`` [s]
        without checking the inputs or counting the time, for a caller that steps the same
        state many times at inputs it has checked (the linearization,
        :mod:`belt_fmu.analysis.lumped_linearization`): :meth:`advance` spends three times the
        step's own 2 us checking."""
        n_steps, dt = self._steps(interval)
        sense = self.parameters.roles[0]["crank_sense"]
        run, omega, torque, row = self._run, self._crank_omega, self._pump_torque, self._output_row
        buffers = (self._state, self._work, self.parameters, self.belt, n_steps, float(dt))

        def advance(crank_speed: float, water_pump_torque: float) -> None:
            omega[0] = sense * crank_speed
            torque[0] = water_pump_torque
            status, _, taken = run(*buffers, omega, torque, row)
            if status != lumped.OK:
                raise self._divergence(status, self.time + taken * dt, crank_speed, water_pump_torque, dt)

        return advance

    def advance_sampled(self, interval: float, inputs: np.ndarray, table: np.ndarray) -> None:
        """Advance by ``len(inputs)`` samples of ``interval`` [s], sample i at the inputs
        ``inputs[i]`` held (columns as :attr:`inputs`), its outputs into ``table[i]``
        (columns as :attr:`specs`): :meth:`advance` and :attr:`output_values` per sample, in
        one call of the kernel (:func:`belt_fmu.model.lumped.run`)."""
        check_input_table(self.inputs, inputs)
        if not (interval > 0.0 and math.isfinite(interval)):
            raise ValueError(f"interval must be a finite time > 0 s, got {interval!r}")
        n_steps, dt = self._steps(interval)
        omega = self.parameters.roles[0]["crank_sense"] * np.ascontiguousarray(inputs[:, 0], dtype=float)
        torque = np.ascontiguousarray(inputs[:, 1], dtype=float)
        status, done, taken = self._run(self._state, self._work, self.parameters, self.belt,
                                        n_steps, float(dt), omega, torque, table)
        self.time += done * interval
        if status != lumped.OK:
            raise self._divergence(status, self.time + taken * dt, inputs[done, 0], inputs[done, 1], dt)
        self.output_values[:] = table[-1]

    def _steps(self, interval: float) -> tuple[int, float]:
        """The internal steps of an advance by ``interval``: their number and length [s]."""
        return internal_steps(interval, self.dt)

    @staticmethod
    def _divergence(status: int, when: float, crank_speed: float, water_pump_torque: float,
                    dt: float) -> DivergenceError:
        what = ("non-finite state values" if status == lumped.NOT_FINITE
                else f"a step's implicit equations had no solution within {lumped.MAX_ITERATIONS} Newton iterations "
                     f"nor {lumped.MAX_SWEEPS} Gauss-Seidel sweeps")
        return DivergenceError(f"integration of the lumped model diverged at t = {when:.6g} s: {what}; inputs "
                               f"crank_speed={float(crank_speed)!r} rad/s, water_pump_torque={float(water_pump_torque)!r} "
                               f"N.m, step {dt:.3g} s")

    def native_step(self) -> "NativeStep":
        """What a native caller needs to advance this drive as :meth:`advance` does, without
        Python (the FMU's native loader: docs/native-hosts.md, "The fast path")."""
        return NativeStep(self)

    # ------------------------------------------------------------------ outputs
    def outputs(self) -> dict:
        """Current values of every output in :attr:`specs` (SI units), by name."""
        return dict(zip(self.output_names, self.output_values.tolist()))

    @property
    def output_mode(self) -> str:
        """``sample`` or ``average`` (``[drive] output_mode``: :attr:`output_values` are each
        output's mean over the last :meth:`advance`)."""
        return "average" if self.belt[0]["average_outputs"] else "sample"

    def evaluate_outputs(self) -> np.ndarray:
        """Recompute :attr:`output_values` from the state (averaged: those of the last advance)."""
        return self._report_outputs(start=False)

    def _report_outputs(self, start: bool) -> np.ndarray:
        """The outputs into :attr:`output_values`. Averaged, they are those of the last advance
        (``output_mean``), unless ``start``: there is no advance yet, and they are the sampled
        ones (a run of 0 steps), from now on the next advance's start and the last one's
        means."""
        averaged = self.output_mode == "average"
        if averaged and not start:
            self.output_values[:] = self.arrays["output_mean"]
            return self.output_values
        self._run(self._state, self._work, self.parameters, self.belt, 0, float(self.dt),
                  self._crank_omega, self._pump_torque, self._output_row)
        if averaged:
            self.arrays["output_sample"][:] = self.output_values
            self.arrays["output_mean"][:] = self.output_values
        return self.output_values

    # ------------------------------------------------------------------ state
    def get_state(self) -> np.ndarray:
        """Everything needed to continue exactly: time, state vector and work buffer."""
        return np.concatenate([[self.time], self.y, self.work])

    def set_state(self, saved: np.ndarray) -> None:
        expected = 1 + self.y.size + self.work.size
        saved = np.asarray(saved, dtype=float)
        if saved.shape != (expected,):
            raise ValueError(f"state vector has {saved.size} values, this drive needs {expected}")
        self.time = float(saved[0])
        self.y[:] = saved[1:1 + self.y.size]
        self.work[:] = saved[1 + self.y.size:]  # with the outputs' running mean
        self.evaluate_outputs()


class NativeStep:
    """The compiled step of a :class:`LumpedDrive` for native callers: :attr:`address` of the
    C function :data:`belt_fmu.model.lumped_native.advance` and :attr:`arguments`, its
    argument words (addresses of the drive's arrays; valid while this object lives). A
    caller advancing the drive by ``interval`` does what :meth:`LumpedDrive.advance` does:
    ``n_steps, dt = internal_steps(interval, max_step)`` (:func:`belt_fmu.model.system.internal_steps`),
    ``crank_omega = crank_sense * crank_speed``, and adds ``interval`` to the drive's
    time on success; on a status other than :data:`belt_fmu.model.lumped.OK` the state is
    not usable (the FMU's loader restores the arrays :attr:`saved` from its copy and lets
    Python redo the step). :attr:`outputs` are the drive's output values, current after
    every step (:attr:`report_outputs` False: the function is never called with 0 steps)."""

    report_outputs = False

    def __init__(self, drive: LumpedDrive):
        with kernel_cache.compiling("lumped native step", detect=False), scalar_loops():
            from . import lumped_native

        self.drive = drive
        self.address = lumped_native.advance.address
        self.arguments = lumped_native.arguments(drive._state, drive._work, drive.parameters,
                                                 drive.belt, drive.output_values, drive._crank_omega,
                                                 drive._pump_torque)
        self.max_step = float(drive.dt)
        self.crank_sense = float(drive.parameters.roles[0]["crank_sense"])
        self.outputs = drive.output_values
        self.saved = (drive.y, drive.work, drive.output_values)


def _no_torque_inputs(torques: dict) -> None:
    if torques:
        raise ValueError(f"{', '.join(torques)} is not an input of this drive; the lumped model takes "
                         "crank_speed and water_pump_torque")
