"""Driving a belt_fmu FMU from Python with fmpy: the master side.

:class:`FmuInstance` is one FMU instance addressed by variable names (set inputs and
parameters, step, read outputs, save and restore its state); :func:`cosimulate` runs a
fixed-step co-simulation to a :class:`~belt_fmu.simulation.Results` table, the same table
``simulate`` gives for the Python model.

An FMU built by ``belt-fmu build`` can be loaded, freed, unloaded and loaded again in one
process, and the process exits normally (its native loader handles PythonFMU's exit-time
bugs: docs/native-hosts.md).
"""
from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np

from .simulation import RPM, Results, Signal, _signal, input_columns, table_problem

LOG_LEVELS = ("OK", "WARNING", "DISCARD", "ERROR", "FATAL", "PENDING")
#: what makes an FMU a belt_fmu FMU: its inputs (the crank's, either one, and the water
#: pump's), and the layout it carries
CRANK_INPUTS = ("crank_speed", "engine_torque")
REQUIRED_INPUTS = ("water_pump_torque",)
LAYOUT_MEMBER = "resources/layout.json"


class FmuError(RuntimeError):
    """An FMU that cannot be used (not an FMU, not a belt_fmu FMU) or that failed a call; the
    message names the file and, for a failed call, the FMU's own error messages."""


def check_fmu(fmu_path) -> None:
    """Raise :class:`FmuError` unless ``fmu_path`` is an FMI 2.0 co-simulation FMU built by
    ``belt-fmu build`` (a zip archive with a model description, the inputs
    one of :data:`CRANK_INPUTS`, :data:`REQUIRED_INPUTS` and the layout it carries)."""
    import zipfile

    from fmpy import read_model_description

    path = Path(fmu_path)
    if not zipfile.is_zipfile(path):
        raise FmuError(f"{path} is not an FMU (an FMU is a zip archive; build one with belt-fmu build)")
    with zipfile.ZipFile(path) as archive:
        if "modelDescription.xml" not in archive.namelist():
            raise FmuError(f"{path} is a zip archive but not an FMU: it has no modelDescription.xml")
    try:
        description = read_model_description(str(path))
    except Exception as err:  # fmpy raises plain exceptions for every kind of damage
        raise FmuError(f"{path} is not a readable FMU: {type(err).__name__}: {err}") from None
    if description.coSimulation is None:
        raise FmuError(f"{path} ({description.modelName}) is not a co-simulation FMU")
    inputs = {v.name for v in description.modelVariables if v.causality == "input"}
    with zipfile.ZipFile(path) as archive:
        has_layout = LAYOUT_MEMBER in archive.namelist()
    missing = [name for name in REQUIRED_INPUTS if name not in inputs]
    if not any(name in inputs for name in CRANK_INPUTS):
        missing.insert(0, " or ".join(CRANK_INPUTS))
    if missing or not has_layout:
        lacks = ([f"input {', '.join(missing)}"] if missing else []) + ([LAYOUT_MEMBER] if not has_layout else [])
        raise FmuError(f"{path} (model {description.modelName!r}) is not a belt_fmu FMU: it lacks "
                       f"{' and '.join(lacks)}; give an FMU written by belt-fmu build")


def parse_parameters(texts: list[str], description) -> dict:
    """FMU parameter start values from ``NAME=VALUE`` texts (like fmpy's ``--start-values``),
    each converted to its variable's type and checked against its declared min and max;
    ValueError for an unknown name (listing the parameters), a value of the wrong type or
    outside its range."""
    parameters = {v.name: v for v in description.modelVariables if v.causality == "parameter"}
    values = {}
    for text in texts:
        name, sep, value = text.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise ValueError(f"{text!r}: give NAME=VALUE")
        var = parameters.get(name)
        if var is None:
            raise ValueError(f"{text!r}: {name!r} is not a parameter of this FMU; its parameters: "
                             + ", ".join(parameters))
        if var.type == "String":
            values[name] = value
            continue
        try:
            number = int(value) if var.type == "Integer" else float(value)
        except ValueError:
            raise ValueError(f"{text!r}: {name} takes {'an integer' if var.type == 'Integer' else 'a number'}"
                             + (f" [{var.unit}]" if var.unit else "")) from None
        low = -math.inf if var.min is None else float(var.min)
        high = math.inf if var.max is None else float(var.max)
        if not (math.isfinite(number) and low <= number <= high):
            allowed = f">= {low:g}" if high == math.inf else f"<= {high:g}" if low == -math.inf else f"in [{low:g}, {high:g}]"
            raise ValueError(f"{text!r}: {name} must be a number {allowed}" + (f" {var.unit}" if var.unit else ""))
        values[name] = number
    return values


class FmuInstance:
    """One instance of an FMI 2.0 co-simulation FMU, driven through fmpy.

    ``unzip_directory``: an already extracted copy to share between instances (extracted
    here otherwise). Log messages are kept in :attr:`messages` as (level, text) and passed
    to ``log`` if given.
    """

    def __init__(self, fmu_path, instance_name: str = "belt_drive", unzip_directory=None,
                 log: Callable[[str, str], None] | None = None):
        from fmpy import extract, read_model_description
        from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, defaultCallbacks

        self.path = Path(fmu_path)
        self.description = read_model_description(str(self.path))
        self.unzip_directory = unzip_directory or extract(str(self.path))
        self._own_directory = unzip_directory is None  # removed by close()
        layout = Path(self.unzip_directory) / "resources" / "layout.json"
        #: the layout a belt FMU carries (its resources/layout.json; None for other FMUs)
        self.layout_data = json.loads(layout.read_text()) if layout.is_file() else None
        self.variables = {v.name: v for v in self.description.modelVariables}
        self.messages: list[tuple[str, str]] = []
        self._log = log

        def logger(component, instance, status, category, message):
            text = message.decode("utf-8", "replace").replace("%%", "%")  # FMI messages are formats
            self.messages.append((LOG_LEVELS[status], text))
            if self._log is not None:
                self._log(LOG_LEVELS[status], text)

        self._callbacks = fmi2CallbackFunctions()
        self._callbacks.logger = fmi2CallbackLoggerTYPE(logger)
        self._callbacks.allocateMemory = defaultCallbacks.allocateMemory
        self._callbacks.freeMemory = defaultCallbacks.freeMemory
        self.fmu = FMU2Slave(guid=self.description.guid, unzipDirectory=self.unzip_directory,
                             modelIdentifier=self.description.coSimulation.modelIdentifier,
                             instanceName=instance_name)
        self.fmu.instantiate(callbacks=self._callbacks, loggingOn=True)
        self.time = 0.0


    def names(self, causality: str) -> list[str]:
        return [v.name for v in self.description.modelVariables if v.causality == causality]

    def initialize(self, values: dict | None = None, start_time: float = 0.0) -> None:
        """Set parameters and inputs (name -> value) and initialize at ``start_time``."""
        self.fmu.setupExperiment(startTime=start_time)
        self.fmu.enterInitializationMode()
        self.set(values or {})
        self.fmu.exitInitializationMode()
        self.time = start_time

    def set(self, values: dict) -> None:
        """Set variables by name: Real, Integer or String."""
        for name, value in values.items():
            var = self.variables[name]
            if var.type == "Real":
                self.fmu.setReal([var.valueReference], [float(value)])
            elif var.type == "Integer":
                self.fmu.setInteger([var.valueReference], [int(value)])
            elif var.type == "String":
                self.fmu.setString([var.valueReference], [str(value)])
            else:
                raise TypeError(f"cannot set {name!r} of type {var.type}")

    def get(self, names: list[str]) -> list[float]:
        """Values of Real variables by name."""
        return self.fmu.getReal([self.variables[n].valueReference for n in names])

    def step(self, step_size: float) -> None:
        """One communication step from :attr:`time`; fmpy raises on discard or error."""
        self.fmu.doStep(currentCommunicationPoint=self.time, communicationStepSize=step_size)
        self.time += step_size

    def exchange(self, inputs: list[str], outputs: list[str], rows: int) -> "Exchange":
        """A master loop's calls on arrays made once: these Real inputs set, a step, these
        outputs recorded into a table of ``rows`` rows (:class:`Exchange`)."""
        return Exchange(self, inputs, outputs, rows)

    def get_state(self):
        return self.fmu.getFMUstate(), self.time

    def set_state(self, state) -> None:
        fmu_state, self.time = state
        self.fmu.setFMUstate(fmu_state)

    def serialize_state(self, state) -> bytes:
        return bytes(self.fmu.serializeFMUstate(state[0]))

    def deserialize_state(self, data: bytes, time_s: float):
        return self.fmu.deSerializeFMUstate(data), time_s

    def free_state(self, state) -> None:
        self.fmu.freeFMUstate(state[0])

    def close(self) -> None:
        """Terminate and free the instance and unload its library (fmpy's freeInstance); a
        refused terminate (an instance that failed) does not keep it from being freed."""
        from fmpy.fmi1 import FMICallException

        try:
            self.fmu.terminate()
        except FMICallException:
            pass
        self.fmu.freeInstance()
        if self._own_directory:
            shutil.rmtree(self.unzip_directory, ignore_errors=True)


class Exchange:
    """The calls of a co-simulation master's loop on one instance, on ctypes arrays made
    once: :meth:`step` sets the inputs and takes a step, :meth:`record` reads the outputs
    into a row of :attr:`table`.

    fmpy's FMU2Slave methods (setReal, doStep, getReal) build ctypes arrays and Python lists
    at every call: about 14 us of a 1 ms step of the lumped FMU, whose own step takes 1.5 us.
    Its ``fmi2*`` functions on arrays made once still add about 0.35 us a call (a lookup and
    the call logger's check). These are the typed ctypes functions of the library fmpy loaded
    (``FMU2Slave.dll``), the status checked as fmpy checks it: FMICallException on
    fmi2Discard, fmi2Error and fmi2Fatal. fmi2GetReal writes straight into the table's row
    (its address passed as a plain pointer), not into an array copied there after the call:
    the copy was 0.3 us of a lumped 1 ms step."""

    def __init__(self, instance: FmuInstance, inputs: list[str], outputs: list[str], rows: int):
        import ctypes

        self.instance = instance
        library = instance.fmu.dll  # its functions typed by fmpy when it loaded them
        self._component = instance.fmu.component
        self._set_real, self._do_step = library.fmi2SetReal, library.fmi2DoStep
        # fmi2GetReal(component, vr, nvr, value) with the value array as an address
        get_real = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
                                    ctypes.c_void_p)
        self._get_real = ctypes.cast(library.fmi2GetReal, get_real)
        self._n_in, self._n_out = len(inputs), len(outputs)
        self._in_vr = (ctypes.c_uint * self._n_in)(*(instance.variables[n].valueReference for n in inputs))
        self._in_value = (ctypes.c_double * self._n_in)()
        self._out_vr = (ctypes.c_uint * self._n_out)(*(instance.variables[n].valueReference for n in outputs))
        #: the recorded outputs: a row per :meth:`record`, a column per output (C order)
        self.table = np.zeros((rows, self._n_out))
        self._rows = rows
        self._table_address = self.table.ctypes.data
        self._row_bytes = self.table.strides[0]

    def step(self, step_size: float, *values: float) -> None:
        """Set the inputs to ``values`` (one per input, in their order) and step from the
        instance's time."""
        for i, value in enumerate(values):
            self._in_value[i] = value
        _check("fmi2SetReal", self._set_real(self._component, self._in_vr, self._n_in, self._in_value))
        _check("fmi2DoStep", self._do_step(self._component, self.instance.time, step_size, 1))
        self.instance.time += step_size

    def record(self, row: int) -> None:
        """The outputs now into row ``row`` of :attr:`table`."""
        if not 0 <= row < self._rows:  # the FMU writes at the address: never outside the table
            raise IndexError(f"row {row} outside the table's {self._rows} rows")
        _check("fmi2GetReal", self._get_real(self._component, self._out_vr, self._n_out,
                                             self._table_address + row * self._row_bytes))


def _check(function: str, status: int) -> None:
    """fmpy's check of an FMI call's status: FMICallException worse than fmi2Warning (1)."""
    if status > 1:
        from fmpy.fmi1 import FMICallException

        raise FMICallException(function=function, status=status)


def cosimulate(fmu_path, *, rpm: float | None = None, crank_speed: Signal | None = None,
               water_pump_torque: Signal = 0.0, inputs: dict | None = None, t_end: float = 1.0,
               step_size: float = 1e-4, output_interval: float | None = None, parameters: dict | None = None,
               progress: Callable[[float], None] | None = None, log=None) -> Results:
    """Co-simulate the FMU at ``fmu_path`` with fixed communication steps ``step_size`` [s].

    Inputs as for :func:`belt_fmu.simulate` (numbers or functions of time, held over each
    step): the crank speed as ``crank_speed`` [rad/s] or ``rpm``, the water-pump torque, and
    ``inputs`` the FMU's other inputs by name (``engine_torque``, ``{pulley}_torque``; 0
    where not given). An FMU whose crank is torque-driven (input ``engine_torque``) takes
    ``rpm`` or a constant ``crank_speed`` as its start speed, the parameter
    ``initial_crank_speed``, unless ``parameters`` set it. ``parameters`` are set before
    initialization. Outputs are recorded every ``output_interval`` (default: every step), a
    multiple of ``step_size``. ``Results.load_time`` is the wall time from loading the FMU to
    the end of its initialization.
    """
    if (crank_speed is None) == (rpm is None):
        raise ValueError("give exactly one of crank_speed [rad/s] and rpm")
    crank = _signal(rpm * RPM if rpm is not None else crank_speed, "crank_speed")
    torque = _signal(water_pump_torque, "water_pump_torque")
    output_interval = step_size if output_interval is None else output_interval
    stride = int(round(output_interval / step_size))
    if not (step_size > 0 and t_end > 0 and math.isfinite(t_end) and stride >= 1
            and abs(stride * step_size - output_interval) < 1e-9 * output_interval):
        raise ValueError("need t_end > 0, step_size > 0 and output_interval a multiple of step_size")
    if (problem := step_problem(t_end, step_size)) is not None:
        raise ValueError(problem)
    n_steps = int(round(t_end / step_size))
    check_fmu(fmu_path)
    from fmpy.fmi1 import FMICallException

    start = time.perf_counter()
    messages = []

    def keep(level, text):
        messages.append((level, text))
        if log is not None:
            log(level, text)

    try:
        instance = FmuInstance(fmu_path, log=keep)
    except Exception as err:  # fmpy: "Failed to instantiate model", a library that does not load, ...
        raise FmuError(_failure(fmu_path, "instantiation", err, messages)) from None
    names = instance.names("input")
    outputs = instance.names("output")
    if (problem := table_problem(t_end, output_interval, 1 + len(names) + len(outputs))) is not None:
        instance.close()
        raise ValueError(problem)
    signals = {name: _signal(value, name) for name, value in (inputs or {}).items()}
    unknown = [name for name in signals if name not in names or name in ("crank_speed", "water_pump_torque")]
    if unknown:
        instance.close()
        raise ValueError(f"{', '.join(unknown)}: not among the FMU's other inputs ({', '.join(names)})")
    signals["water_pump_torque"] = torque
    start_values = dict(parameters or {})
    if "crank_speed" in names:
        signals["crank_speed"] = crank
    elif "initial_crank_speed" not in start_values:
        if callable(crank_speed):
            instance.close()
            raise ValueError("the FMU's crank is torque-driven: its crank speed is an output; give its start speed "
                             "as a number")
        start_values["initial_crank_speed"] = crank(0.0)
    functions = [signals.get(name, _signal(0.0, name)) for name in names]
    try:
        instance.initialize({**start_values, **{name: f(0.0) for name, f in zip(names, functions)}})
    except FMICallException as err:
        instance.close()
        raise FmuError(_failure(fmu_path, "initialization", err, instance.messages)) from None
    load_time = time.perf_counter() - start
    n_rows = n_steps // stride + 1
    times = np.arange(n_rows) * stride * step_size  # (k + 1) * step_size at each recorded step k
    exchange = instance.exchange(names, outputs, n_rows)
    step, record, table = exchange.step, exchange.record, exchange.table
    record(0)
    applied = [[f(0.0) for f in functions]]  # the inputs of each recorded step
    reporting = 0.0  # wall time spent in the progress callback, not stepping
    start = time.perf_counter()
    try:
        for k in range(n_steps):
            t = k * step_size
            values = [f(t) for f in functions]
            try:
                step(step_size, *values)
            except FMICallException as err:
                raise FmuError(_failure(fmu_path, f"the step from t = {t:.6g} s", err, instance.messages)) from None
            if (k + 1) % stride == 0:
                record((k + 1) // stride)
                applied.append(values)
                if progress is not None:
                    tick = time.perf_counter()
                    progress((k + 1) * step_size)
                    reporting += time.perf_counter() - tick
        wall = time.perf_counter() - start - reporting
    finally:
        instance.close()
    applied = np.array(applied, dtype=float)
    columns, units, descriptions = {"time": times}, {"time": "s"}, {"time": "communication point"}
    specs = [SimpleNamespace(name=name, unit=_unit(instance.variables[name]),
                             description=instance.variables[name].description or name) for name in names]
    for i, (name, unit, description) in enumerate(input_columns(specs)):  # as simulate names them
        columns[name], units[name], descriptions[name] = applied[:, i], unit, description
    for i, name in enumerate(outputs):
        var = instance.variables[name]
        columns[name] = table[:, i]
        units[name] = _unit(var)
        descriptions[name] = var.description or ""
    results = Results(columns, units, descriptions, wall)
    results.load_time = load_time
    results.layout_data = instance.layout_data
    results.messages = instance.messages
    return results


def step_problem(t_end: float, step_size: float) -> str | None:
    """Why fixed communication steps of ``step_size`` [s] cannot end at ``t_end`` [s], or
    None: the run is a whole number of steps (to 1e-9 of a step), at least one."""
    steps = t_end / step_size
    if steps >= 0.5 and abs(steps - round(steps)) <= 1e-9 * max(1.0, steps):
        return None
    shorter, longer = math.floor(steps) * step_size, math.ceil(steps) * step_size
    choices = f"--t-end {longer:.6g}" if shorter <= 0 else f"--t-end {shorter:.6g} or {longer:.6g}"
    return (f"{t_end:g} s is not a whole number of communication steps of {step_size:g} s ({steps:.6g}); "
            f"choose {choices}, or a step that divides it")


def _failure(fmu_path, what: str, err, messages) -> str:
    """The message of a failed FMU call: what failed, fmpy's status and the FMU's last errors."""
    errors = [text for level, text in messages if level in ("ERROR", "FATAL", "DISCARD")][-3:]
    said = "; ".join(errors) if errors else "no message from the FMU"
    return f"{fmu_path}: {what} failed ({err}): {said}"


def _unit(variable) -> str:
    """A variable's unit, its own or its declared type's ("1" for none)."""
    return variable.unit or getattr(getattr(variable, "declaredType", None), "unit", None) or "1"
