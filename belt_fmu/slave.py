"""FMI 2.0 co-simulation slave: a thin PythonFMU adapter over :class:`BeltDrive`.

No physics here. The slave holds the FMU's inputs and parameters, builds the model from the
layout shipped in the FMU's resources when initialization ends, advances it in ``do_step``
and reads its outputs. ``belt-fmu build`` (:mod:`belt_fmu.build`) packs it into an FMU.

Variables (SI units; names, units and descriptions in modelDescription.xml):

* inputs: those of the layout, :func:`belt_fmu.model.inputs.input_specs`: ``crank_speed``
  [rad/s] (crank running direction; a torque-driven crank has ``engine_torque`` [N.m]
  instead), ``water_pump_torque`` [N.m] (load, positive against the pump's rotation) and
  ``{pulley}_torque`` [N.m] for each accessory with ``load = "input"``;
* outputs: those of :func:`belt_fmu.model.outputs.fmu_output_specs`: every output of
  :func:`belt_fmu.model.outputs.output_specs` (tensioner angle,
  ``bearing_force``, ``crank_torque``, hub forces, span tensions, speeds, slip) and
  ``water_pump_speed``;
* parameters :data:`PARAMETERS` (variability fixed: set them before initialization ends):
  the physically meaningful layout values and the structural ``n_elements``,
  ``friction_law`` and ``model`` (the fidelity level: ``discretized`` or ``lumped``, same
  outputs); the layout file gives their start values.

FMI status codes. The slave never raises once PythonFMU has created it: PythonFMU 0.7.0
releases a raising slave's Python objects, and releases them again when the instance is
freed, which crashes the host. Every refused call is instead logged at error level with the
call, the variable and what is allowed; the FMU's native loader
(``belt_fmu/build/native_loader/loader.c``) returns fmi2Error for a call that logged an error:

* an unknown value reference, a variable of another type, setting an output, a non-finite
  or out-of-range value, a fixed parameter set after initialization: fmi2Error, nothing of
  the call applied;
* a model that cannot start (a parameter the layout rules reject, no steady running state):
  fmi2ExitInitializationMode returns fmi2Error; every later step and output read too, until
  fmi2Reset or a saved state is restored;
* ``fmi2DoStep`` from a time other than the FMU's (beyond rounding), or with a step that is
  not a finite positive time: fmi2Error; a step on which the integration diverges:
  fmi2Discard (the host may restore a saved state), later steps fmi2Error until it does;
* a state to restore is checked entirely (it was made by this FMU, its parameters are valid,
  its model state has the right size and finite values) before any of it is applied.

Speed: the native loader answers the step's fmi2SetReal of the inputs, fmi2GetReal and
fmi2DoStep itself, on this slave's arrays, through the exchange block of
:mod:`belt_fmu.fast_path` (published after every call by :func:`fmi_call`), for the lumped
model and for the discretized one with the inputs crank_speed and water_pump_torque only;
any call it is not sure of, and every other call, comes here as before.

Initialization: the model starts from its steady running state at the inputs it has when
initialization ends, or earlier if the master reads outputs in initialization mode (FMI 2.0
InitialUnknowns: the outputs are then the running state's, e.g. the crank torque a power-unit
model needs from the start); it is restarted at the end if inputs or parameters changed.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
import math
import time
from pathlib import Path

import numpy as np
from pythonfmu import Fmi2Causality, Fmi2Initial, Fmi2Slave, Fmi2Variability, Integer, Real, String
from pythonfmu.enums import Fmi2Status

from . import kernel_cache
from . import layout as layout_module
from .fast_path import EXCHANGE_DESCRIPTION, EXCHANGE_VARIABLE, FastPath
from .layout import LayoutError, load_layout_data
from .model.initialization import InitializationError
from .model.inputs import Input, input_specs
from .model.geometry import drive_polygon_frequency
from .model.outputs import fmu_output_specs, pulley_output_name
from .model.system import BeltDrive, DivergenceError, make_drive

LAYOUT_RESOURCE = "layout.json"
INPUTS_RESOURCE = "inputs.json"  # start values of the inputs, chosen at build time
STATE_FORMAT = "belt_fmu FMU state 1"  # marks the states this slave writes
#: a communication point may differ from the FMU's time by this fraction of max(1 s, |t|)
#: (hosts that compute t = t0 + k h instead of summing steps differ by rounding only)
TIME_TOLERANCE = 1e-9


@dataclasses.dataclass(frozen=True)
class Parameter:
    """An FMU parameter that sets one layout value (its rule: :mod:`belt_fmu.layout`)."""

    name: str
    table: str  # layout table
    key: str  # key in that table
    unit: str
    description: str
    kind: type = float
    crank_input: str | None = None  # an FMU parameter only for this crank causality (None: always)

    @property
    def rule(self):
        """The layout's rule for this value (type, range; ``problem(value)`` says what is wrong)."""
        table = layout_module.TABLES[self.table]
        return {f.name: f for f in dataclasses.fields(table)}[self.key].metadata["rule"]


PARAMETERS = (
    Parameter("belt_pretension", "belt", "pretension_N", "N",
              "installation span tension; sets the unstretched belt length ([Scania thesis] eq. 12.22)"),
    Parameter("belt_unstretched_length", "belt", "unstretched_length_m", "m", "unstretched belt (cord) length"),
    Parameter("friction_mu", "friction", "mu", "1",
              "belt-pulley friction coefficient (ribbed side: mu/sin(groove angle/2))"),
    Parameter("tensioner_spring_rate", "tensioner", "spring_rate_Nm_per_rad", "N.m/rad",
              "torsional spring rate of the tensioner arm"),
    Parameter("tensioner_preload", "tensioner", "preload_Nm", "N.m",
              "tensioner spring torque at the installed arm angle"),
    Parameter("tensioner_damping", "tensioner", "damping_Nms_per_rad", "N.m.s/rad", "viscous damping of the arm"),
    Parameter("tensioner_friction_torque", "tensioner", "friction_torque_Nm", "N.m",
              "Coulomb torque of the arm moving away from the belt"),
    Parameter("tensioner_friction_torque_return", "tensioner", "friction_torque_return_Nm", "N.m",
              "Coulomb torque of the arm moving toward the belt"),
    Parameter("n_elements", "belt", "n_elements", "", "number of belt elements (structural)", int),
    Parameter("friction_law", "friction", "law", "",
              "friction law (structural): creep_polynomial, tanh, bristle, dahl, lugre or gms",
              str),
    Parameter("initial_crank_speed", "drive", "initial_crank_speed_rad_per_s", "rad/s",
              "speed the torque-driven crank starts at (held there while the drive settles)",
              crank_input="torque"),
    Parameter("model", "drive", "model", "",
              "fidelity level (structural): discretized (beam-element belt) or lumped (rotational model)", str),
    Parameter("output_mode", "drive", "output_mode", "",
              "what the outputs are (structural): sample (values at the communication point) or average (each "
              "output's mean over the last communication step: the discretized belt's polygon ripple cannot "
              "alias)", str),
)

_VARIABLE = {float: Real, int: Integer, str: String}
FMI_TYPE = {float: "Real", int: "Integer", str: "String"}


class InvalidState:
    """What :meth:`BeltDriveSlave._fmu_state_from_bytes` gives for bytes it cannot read: the
    native loader reads :attr:`problem` and refuses the deserialization with it."""

    def __init__(self, problem: str):
        self.problem = problem


def fmi_call(name: str, default=None):
    """Decorate a method PythonFMU calls: an unexpected exception becomes an error message
    naming the FMI function (and the slave's result ``default``), never an exception. Around
    the call, the native loader's fast path is kept consistent with the slave
    (:mod:`belt_fmu.fast_path`): what the loader changed is taken first, the block is
    published again after."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args):
            fast = self.__dict__.get("_fast")
            try:
                if fast is not None:
                    fast.pull(self)
                return method(self, *args)
            except Exception as err:  # noqa: BLE001: nothing may leave the slave (module docstring)
                self._error(f"{name}: unexpected {type(err).__name__}: {err} (please report this as a belt_fmu "
                            "bug)")
                return default(*args) if callable(default) else default
            finally:
                if fast is not None:
                    self._publish(fast)
        return wrapper

    return decorate


class BeltDriveSlave(Fmi2Slave):
    """Belt drive of the layout in the FMU resources, driven by crank speed and pump torque."""

    author = "belt_fmu"
    description = "Planar multibody belt-drive dynamics (front-end accessory drive), belt_fmu"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.drive: BeltDrive | None = None
        self.failure: str | None = None  # why the model could not start, or why it stopped
        self.phase = "instantiated"  # -> "initialization" -> "stepping" (-> "terminated")
        self.time = 0.0  # the FMU's time [s]
        self._started_with = None  # (parameters, inputs) the model was started with
        self._kind: dict[int, tuple] = {}  # value reference -> (role, what, type)
        self._vr: dict[str, int] = {}  # variable name -> value reference
        self._input: dict[int, Input] = {}  # value reference of an input -> its Input
        self._real_source: dict[int, int | str] = {}  # Real variable -> its output's index, or its attribute
        self._compile_pending = False  # the model's kernels compile at initialization (_note_compile)
        self._compile_noted: str | None = None  # the part the host was told compiles (_note_compile)
        self._sampling_checked = True  # set False when a model starts: its first step checks the step size
        try:
            self._register_variables()
            self._fast = FastPath(self)  # the native loader's fast path (belt_fmu/fast_path.py)
            self._note_compile()
        except Exception as err:  # noqa: BLE001: a raising constructor would be freed twice on fmi2Reset
            self.failure = f"the FMU's resources could not be read: {type(err).__name__}: {err}"
            self._error(f"fmi2Instantiate: {self.failure}")

    def _note_compile(self) -> None:
        """Warn the host when the model's kernels are not compiled for this machine yet
        (belt_fmu.kernel_cache): they then compile when initialization ends, once per machine,
        and the host would otherwise wait with no word. Called as the FMU loads, for the
        model of its start values, and when the host sets the parameter ``model``: PythonFMU
        hands the host a call's messages as the call returns, so the one that compiles
        (fmi2ExitInitializationMode) could not warn before it."""
        part = "lumped" if getattr(self, "model", "") == "lumped" else "discretized"
        if kernel_cache.is_compiled(part) or part == self._compile_noted:
            return
        self._compile_noted = part
        what, estimate = kernel_cache.PARTS[part][0], kernel_cache.estimate(part)
        why = kernel_cache.compile_reason or "this machine has not compiled this version's kernels yet"
        self._compile_pending = True
        self.log(f"compiling {what} for this machine, once, when initialization ends: about {estimate:.0f} s "
                 f"({why})", Fmi2Status.warning)

    def _register_variables(self) -> None:
        resources = Path(self.resources)
        self.layout_source = str(resources / LAYOUT_RESOURCE)
        self.layout_data = json.loads((resources / LAYOUT_RESOURCE).read_text())
        layout = load_layout_data(self.layout_data, self.layout_source)
        starts = json.loads((resources / INPUTS_RESOURCE).read_text())
        self.inputs = input_specs(layout)
        self._torque_driven_crank = layout.torque_driven_crank
        self._torque_inputs = tuple(spec.name for spec in self.inputs if spec.pulley is not None)
        for spec in self.inputs:
            setattr(self, spec.name, float(starts.get(spec.name, 0.0)))
            self._register(Real(spec.name, causality=Fmi2Causality.input, variability=Fmi2Variability.continuous,
                                description=spec.description), ("input", spec, float))

        self.parameters = [p for p in PARAMETERS if self.layout_data.get(p.table, {}).get(p.key) is not None
                           and p.crank_input in (None, layout.drive.crank_input)]
        for p in self.parameters:
            setattr(self, p.name, p.kind(self.layout_data[p.table][p.key]))
            self._register(_VARIABLE[p.kind](p.name, causality=Fmi2Causality.parameter,
                                             variability=Fmi2Variability.fixed, description=p.description),
                           ("parameter", p, p.kind))

        for name, description, index in ((s.name, s.description, s.index) for s in fmu_outputs(layout)):
            self._register(Real(name, causality=Fmi2Causality.output, variability=Fmi2Variability.continuous,
                                initial=Fmi2Initial.calculated, description=description,
                                getter=lambda i=index: self._output(i)),
                           ("output", index, float))
        self._register(String(EXCHANGE_VARIABLE, causality=Fmi2Causality.local, variability=Fmi2Variability.discrete,
                              initial=Fmi2Initial.calculated, description=EXCHANGE_DESCRIPTION),
                       ("internal", None, str))

    def _register(self, variable, kind) -> None:
        self.register_variable(variable)
        vr = variable.value_reference
        self._kind[vr] = kind
        self._vr[variable.name] = vr
        if kind[0] == "input":
            self._input[vr] = kind[1]
        if kind[2] is float:
            self._real_source[vr] = kind[1] if kind[0] == "output" else variable.name

    # ------------------------------------------------------------------ messages
    def _error(self, message: str) -> None:
        self.log(message, Fmi2Status.error)

    def _refuse(self, message: str, default=False):
        self._error(message)
        return default

    def _unusable(self, call: str) -> str | None:
        """Why ``call`` cannot be served now (the model failed or diverged), or None."""
        if self.failure is None:
            return None
        return (f"{call} refused: {self.failure}; fmi2Reset the instance or restore a saved state "
                "(fmi2SetFMUstate)")

    # ------------------------------------------------------------------ FMI calls
    @fmi_call("fmi2SetupExperiment")
    def setup_experiment(self, start_time, stop_time, tolerance):
        if not math.isfinite(start_time):
            return self._refuse(f"fmi2SetupExperiment: startTime = {start_time!r} must be a finite time [s]")
        self.time = float(start_time)

    @fmi_call("fmi2EnterInitializationMode")
    def enter_initialization_mode(self):
        self.phase = "initialization"

    @fmi_call("fmi2ExitInitializationMode")
    def exit_initialization_mode(self):
        if self.phase != "initialization":
            return self._refuse(f"fmi2ExitInitializationMode: called in the {self.phase} state; call "
                                "fmi2EnterInitializationMode first")
        self._start()
        self.phase = "stepping"
        if self.failure is not None:
            self._error(f"fmi2ExitInitializationMode: {self.failure}")

    @fmi_call("fmi2DoStep", default=False)
    def do_step(self, current_time: float, step_size: float) -> bool:
        call = f"fmi2DoStep(t = {current_time:.9g} s, h = {step_size:.3g} s)"
        if self.phase != "stepping":
            return self._refuse(f"{call} refused: the FMU is in the {self.phase} state; initialize it first")
        if (why := self._unusable(call)) is not None:
            return self._refuse(why)
        if not (math.isfinite(step_size) and step_size > 0.0):
            return self._refuse(f"{call} refused: the communication step must be a finite time > 0 s")
        if not (math.isfinite(current_time)
                and abs(current_time - self.time) <= TIME_TOLERANCE * max(1.0, abs(self.time))):
            return self._refuse(f"{call} refused: the FMU is at t = {self.time:.9g} s; a step must start where "
                                "the last one ended (or restore the state saved at that time)")
        if not self._sampling_checked:
            self._check_sampling(step_size)
        try:
            crank = None if self._torque_driven_crank else self.crank_speed
            self.drive.advance(step_size, crank, self.water_pump_torque,
                               **{name: getattr(self, name) for name in self._torque_inputs})
        except DivergenceError as err:
            self.failure = f"the model diverged in the step from t = {current_time:.9g} s: {err}"
            self.log(f"{call} discarded: {err}; restore a saved state (fmi2SetFMUstate) to go on",
                     Fmi2Status.discard)
            return False
        self.time = current_time + step_size  # the host's clock, not a sum of our own roundings
        return True

    def _check_sampling(self, step_size: float) -> None:
        """Warn, at the first step of a started model, when communication steps of
        ``step_size`` sample the discretized model's instantaneous outputs below twice the
        polygon frequency (the belt elements passing the crank pulley, R w n / l, at the crank
        speed now): the polygon ripple of forces, tensions and torques then aliases into slow
        beats and spikes the drive does not have. The lumped model has no polygon; averaged
        outputs (output_mode = "average") keep at most 1 / (pi f h) of a ripple of frequency f
        over steps h of a polygon period or longer."""
        self._sampling_checked = True
        layout = self.drive.layout
        if layout.drive.model != "discretized":
            return
        crank = layout.pulleys[layout.crank_index].name
        speed = self.drive.outputs()[pulley_output_name("speed", crank)]
        polygon = drive_polygon_frequency(layout, speed)
        if layout.drive.output_mode == "average" and step_size * polygon >= 1.0:
            return
        if step_size * 2.0 * polygon > 1.0:
            self.log(f"communication steps of {step_size:.3g} s sample the outputs at {1.0 / step_size:.4g} Hz, below "
                     f"twice the polygon frequency ({polygon:.4g} Hz at {abs(speed) * 30.0 / math.pi:.0f} rpm): the "
                     f"polygon ripple aliases into forces, tensions and torques (spikes and slow beats the drive "
                     f"does not have); step {1.0 / (2.0 * polygon):.3g} s or less, set the parameter output_mode = "
                     f"\"average\" (each output's mean over the step), or low-pass filter the outputs",
                     Fmi2Status.warning)

    @fmi_call("fmi2Terminate")
    def terminate(self):
        self.phase = "terminated"

    # ------------------------------------------------------------------ variables
    def _lookup(self, call: str, vrs, kind: type):
        """(role, what) of every value reference, or None after an error naming the first bad one."""
        found = []
        for vr in vrs:
            entry = self._kind.get(vr)
            if entry is None:
                return self._refuse(f"{call}: value reference {vr} is not a variable of this FMU", None)
            if entry[2] is not kind:
                name, other = self.vars[vr].name, FMI_TYPE[entry[2]]
                return self._refuse(f"{call}: {name} (value reference {vr}) is a {other} variable; use "
                                    f"{call[:7]}{other}", None)
            found.append(entry)
        return found

    def _get(self, call: str, vrs, kind: type, missing):
        entries = self._lookup(call, vrs, kind)
        if entries is None:
            return [missing] * len(vrs)
        values = []
        for vr, (role, what, _) in zip(vrs, entries):
            if role == "internal":
                values.append(self._fast.address() if "_fast" in self.__dict__ else "")
                continue
            if role != "output":
                values.append(getattr(self, what.name))
                continue
            if self.phase == "instantiated":
                self._error(f"{call}: output {self.vars[vr].name} is available from initialization mode on")
                return [missing] * len(vrs)
            value = self._output(what)
            if value is None:
                self._error(self._unusable(f"{call} of {self.vars[vr].name}"))
                return [missing] * len(vrs)
            values.append(value)
        return values

    def _set(self, call: str, vrs, values, kind: type) -> None:
        """Check every value first, then apply them all (an invalid call changes nothing)."""
        entries = self._lookup(call, vrs, kind)
        if entries is None:
            return
        updates = []
        for vr, value, (role, what, _) in zip(vrs, values, entries):
            name = self.vars[vr].name
            if role == "output":
                return self._refuse(f"{call}: {name} is an output; only inputs and parameters can be set")
            if role == "internal":
                return self._refuse(f"{call}: {name} is internal; only inputs and parameters can be set")
            if role == "input":
                if not (math.isfinite(value) and what.low <= value <= what.high):
                    return self._refuse(f"{call}: {name} = {value!r} {what.unit} is not allowed; it must be a "
                                        f"finite number in [{what.low:g}, {what.high:g}] {what.unit}")
            else:
                if self.phase not in ("instantiated", "initialization"):
                    return self._refuse(f"{call}: {name} is a fixed parameter; set it before "
                                        "fmi2ExitInitializationMode (the model is built then), or fmi2Reset first")
                problem = what.rule.problem(value)
                if problem is not None:
                    return self._refuse(f"{call}: {name} = {value!r} {problem} (layout {what.table}.{what.key})")
            updates.append((name, kind(value)))
        changed = {name: value for name, value in updates if self._kind[self._vr[name]][0] == "parameter"}
        if changed:  # the layout rules across values (element length vs pulley size, ...)
            try:
                self._layout({**{p.name: getattr(self, p.name) for p in self.parameters}, **changed})
            except LayoutError as err:
                listed = ", ".join(f"{name} = {value!r}" for name, value in changed.items())
                return self._refuse(f"{call}: {listed} would make an invalid drive: "
                                    + "; ".join(err.problems))
        for name, value in updates:
            setattr(self, name, value)
        if "model" in changed:
            self._note_compile()

    @fmi_call("fmi2GetReal", default=lambda vrs: [math.nan] * len(vrs))
    def get_real(self, vrs):
        # the call of every step: outputs of a running model, and its inputs and parameters for
        # hosts that record every variable at every step (libcosim's observers: the general
        # path took 90 us for the 67 Reals of the SSP example's belt), read without its checks
        if self.drive is not None and self.failure is None and self.phase == "stepping":
            try:
                sources = [self._real_source[vr] for vr in vrs]
            except KeyError:
                sources = None  # not all Real variables: the general path names the problem
            if sources is not None:
                values = self.drive.output_values.tolist()
                return [values[s] if isinstance(s, int) else getattr(self, s) for s in sources]
        return [float(v) for v in self._get("fmi2GetReal", vrs, float, math.nan)]

    @fmi_call("fmi2GetInteger", default=lambda vrs: [0] * len(vrs))
    def get_integer(self, vrs):
        return self._get("fmi2GetInteger", vrs, int, 0)

    @fmi_call("fmi2GetString", default=lambda vrs: [""] * len(vrs))
    def get_string(self, vrs):
        return self._get("fmi2GetString", vrs, str, "")

    @fmi_call("fmi2GetBoolean", default=lambda vrs: [False] * len(vrs))
    def get_boolean(self, vrs):
        return self._refuse("fmi2GetBoolean: this FMU has no Boolean variables", [False] * len(vrs))

    @fmi_call("fmi2SetReal")
    def set_real(self, vrs, values):
        # the call of every step: allowed values of inputs, set without the general checks
        try:
            accepted = [(self._input[vr], value) for vr, value in zip(vrs, values)]
        except KeyError:
            accepted = None
        if accepted is not None and all(spec.low <= value <= spec.high for spec, value in accepted):
            for spec, value in accepted:  # (NaN fails the range test above)
                setattr(self, spec.name, value)
            return
        self._set("fmi2SetReal", vrs, values, float)

    @fmi_call("fmi2SetInteger")
    def set_integer(self, vrs, values):
        self._set("fmi2SetInteger", vrs, values, int)

    @fmi_call("fmi2SetString")
    def set_string(self, vrs, values):
        self._set("fmi2SetString", vrs, values, str)

    @fmi_call("fmi2SetBoolean")
    def set_boolean(self, vrs, values):
        self._refuse("fmi2SetBoolean: this FMU has no Boolean variables")

    # ------------------------------------------------------------------ helpers
    def _publish(self, fast: FastPath) -> None:
        """Publish the fast path's block after a call (:meth:`FastPath.publish`); a model
        whose compiled step cannot be had stays on the Python path."""
        try:
            fast.publish(self, TIME_TOLERANCE)
        except Exception:  # noqa: BLE001: nothing may leave the slave; the Python path serves all
            fast.disable()

    def _start(self) -> None:
        """Build the model from the layout and parameters and start it from its steady
        running state at the current inputs, unless it already stands there (outputs read
        during initialization started it). A failure is kept in :attr:`failure`."""
        parameters = tuple(getattr(self, p.name) for p in self.parameters)
        inputs = tuple(getattr(self, spec.name) for spec in self.inputs)
        if self.drive is not None and self._started_with == (parameters, inputs):
            return
        started = time.perf_counter()
        try:
            drive = self.drive if self.drive is not None and self._started_with[0] == parameters else None
            if drive is None:
                drive = make_drive(self._layout())
                for warning in drive.layout.warnings:  # the layout's checks (belt_fmu.model.layout_checks)
                    # the source is the FMU's unpacked resources: a temporary path that says nothing
                    self.log(f"layout: {warning.removeprefix(drive.layout.source + ': ')}", Fmi2Status.warning)
            crank = None if self._torque_driven_crank else self.crank_speed  # None: the layout's start speed
            drive.reset(crank, self.water_pump_torque, **{name: getattr(self, name) for name in self._torque_inputs})
        except (LayoutError, InitializationError, ValueError, DivergenceError) as err:
            self.drive, self._started_with = None, None
            self.failure = f"the model did not initialize: {err}"
            return
        self.drive, self._started_with, self.failure = drive, (parameters, inputs), None
        self._sampling_checked = False  # the first step checks the step size (_check_sampling)
        if self._compile_pending:
            self._compile_pending = False
            self.log(f"compiled and started the model in {time.perf_counter() - started:.0f} s; later loads on "
                     "this machine load the compiled kernels")

    def _layout(self, parameters: dict | None = None):
        """The layout with the parameter values set through the FMU (LayoutError if invalid)."""
        data = json.loads(json.dumps(self.layout_data))
        for p in self.parameters:
            data[p.table][p.key] = getattr(self, p.name) if parameters is None else parameters[p.name]
        return load_layout_data(data, f"{self.layout_source} with the FMU parameters")

    def _output(self, index: int) -> float | None:
        """An output's value; None if the model cannot give one (:attr:`failure` says why)."""
        if self.drive is None and self.failure is None and self.phase == "initialization":
            self._start()  # outputs asked for in initialization mode: FMI 2.0 InitialUnknowns
        if self.drive is None or self.failure is not None:
            return None
        return float(self.drive.output_values[index])

    # ------------------------------------------------------------------ FMU state
    @fmi_call("fmi2GetFMUstate")
    def _get_fmu_state(self) -> dict:
        """Phase, time, inputs, parameters and the whole model state (belt nodes, pulleys,
        tensioner, friction states, last-step diagnostics), exactly (float64 bytes, base64)."""
        return {
            "format": STATE_FORMAT,
            "phase": self.phase,
            "time": self.time,
            "failure": self.failure,
            "inputs": {spec.name: getattr(self, spec.name) for spec in self.inputs},
            "parameters": {p.name: getattr(self, p.name) for p in self.parameters},
            "drive": None if self.drive is None else base64.b64encode(self.drive.get_state().tobytes()).decode(),
        }

    @fmi_call("fmi2SetFMUstate")
    def _set_fmu_state(self, state) -> None:
        problem, drive, values = self._check_state(state)
        if problem is not None:
            return self._refuse(f"fmi2SetFMUstate: {problem}; nothing was changed")
        for name, value in {**state["inputs"], **state["parameters"]}.items():
            setattr(self, name, value)
        self.phase, self.time, self.failure = state["phase"], float(state["time"]), state["failure"]
        if drive is not None:
            drive.set_state(values)
            self._started_with = None
        self.drive = drive

    def _check_state(self, state):
        """(problem or None, the drive to use, its state vector): the whole state is checked
        before any of it is applied."""
        if isinstance(state, InvalidState):
            return state.problem, None, None
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            return "the state was not made by this FMU", None, None
        inputs, parameters = state.get("inputs"), state.get("parameters")
        if not isinstance(inputs, dict) or set(inputs) != {spec.name for spec in self.inputs}:
            return "the state's inputs do not match this FMU's", None, None
        for spec in self.inputs:
            value = inputs[spec.name]
            if not (isinstance(value, (int, float)) and math.isfinite(value) and spec.low <= value <= spec.high):
                return f"the state's input {spec.name} = {value!r} is not allowed", None, None
        if not isinstance(parameters, dict) or set(parameters) != {p.name for p in self.parameters}:
            return "the state's parameters do not match this FMU's", None, None
        for p in self.parameters:
            problem = p.rule.problem(parameters[p.name])
            if problem is not None:
                return f"the state's parameter {p.name} = {parameters[p.name]!r} {problem}", None, None
        if state.get("phase") not in ("instantiated", "initialization", "stepping", "terminated"):
            return f"the state's phase {state.get('phase')!r} is unknown", None, None
        if not (isinstance(state.get("time"), (int, float)) and math.isfinite(state["time"])):
            return f"the state's time {state.get('time')!r} is not a finite time", None, None
        if not (state.get("failure") is None or isinstance(state["failure"], str)):
            return "the state's failure note is not text", None, None
        if state.get("drive") is None:
            if state["phase"] == "stepping" and state["failure"] is None:
                return "the state of an initialized FMU lacks its model data", None, None
            return None, None, None
        try:
            values = np.frombuffer(base64.b64decode(state["drive"], validate=True), dtype=np.float64).copy()
        except (binascii.Error, ValueError, TypeError) as err:
            return f"the state's model data is damaged ({err})", None, None
        if not np.all(np.isfinite(values)):
            return "the state's model data holds non-finite values", None, None
        same = all(getattr(self, p.name) == parameters[p.name] for p in self.parameters)
        try:
            drive = self.drive if self.drive is not None and same else make_drive(self._layout(parameters))
        except (LayoutError, ValueError) as err:
            return f"the state's parameters do not make a valid drive: {err}", None, None
        if values.size != drive.get_state().size:
            return (f"the state's model data has {values.size} values; a drive with these parameters has "
                    f"{drive.get_state().size}"), None, None
        return None, drive, values

    @staticmethod
    def _fmu_state_to_bytes(state) -> bytes:
        return json.dumps(state).encode("utf-8")

    @staticmethod
    def _fmu_state_from_bytes(data: bytes):
        """The state in ``data``, or an :class:`InvalidState` saying why it cannot be read
        (never an exception: module docstring)."""
        try:
            state = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            return InvalidState(f"the bytes are not a state of this FMU (truncated or damaged? {err})")
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            return InvalidState("the bytes are not a state of this FMU")
        return state


def fmu_outputs(layout):
    """The FMU's output variables of a drive with this layout
    (:func:`belt_fmu.model.outputs.fmu_output_specs`)."""
    names = [p.name for p in layout.pulleys]
    pump = names[layout.water_pump_index] if layout.water_pump_index is not None else None
    crank = names[layout.crank_index] if layout.torque_driven_crank else None
    return fmu_output_specs(names, layout.headline_pulley_name, pump, layout.port_pulleys, crank)
