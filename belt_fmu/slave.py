"""FMI 2.0 co-simulation slave: a thin PythonFMU adapter over :class:`BeltDrive`.

No physics here. The slave holds the FMU's inputs and parameters, builds the model from the
layout shipped in the FMU's resources when initialization ends, advances it in ``do_step``
and reads its outputs. ``belt-fmu build`` (:mod:`belt_fmu.build`) packs it into an FMU.

Variables (SI units; names and descriptions in modelDescription.xml):

* inputs ``crank_speed`` [rad/s] (crank running direction) and ``water_pump_torque`` [N.m]
  (load, positive against the pump's rotation);
* outputs: every output of :func:`belt_fmu.model.outputs.output_specs` (tensioner angle,
  ``bearing_force``, ``crank_torque``, hub forces, span tensions, speeds, slip) and
  ``water_pump_speed``;
* parameters, settable before initialization (variability fixed): the physically meaningful
  layout values of :data:`PARAMETERS` and the structural ``n_elements`` and ``friction_law``;
  the layout file gives their start values.

Errors: a bad input, a parameter the layout rules reject or a diverging step is logged at
error level with what was wrong and what is allowed; ``do_step`` then returns False
(fmi2Discard), so the host can roll back (FMU state) or stop, and survives. The slave never
raises once instantiated (PythonFMU 0.7.0 frees a raising slave's objects twice).

Initialization: the model starts from its steady running state at the inputs it has when
initialization ends, or earlier if the master reads outputs in initialization mode (FMI 2.0
InitialUnknowns: the outputs are then the running state's, e.g. the crank torque a power-unit
model needs from the start); it is restarted at the end if inputs or parameters changed.
"""
from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import numpy as np
from pythonfmu import Fmi2Causality, Fmi2Initial, Fmi2Slave, Fmi2Variability, Integer, Real, String
from pythonfmu.enums import Fmi2Status

from .layout import LayoutError, load_layout_data
from .model.outputs import output_specs
from .model.initialization import InitializationError
from .model.system import BeltDrive, DivergenceError, check_inputs

#: namespaces of the FMU slave scripts kept alive (see belt_fmu.build.slave_script)
SCRIPT_NAMESPACES: list = []

LAYOUT_RESOURCE = "layout.json"
INPUTS_RESOURCE = "inputs.json"  # start values of the inputs, chosen at build time


@dataclasses.dataclass(frozen=True)
class Parameter:
    """An FMU parameter that sets one layout value."""

    name: str
    table: str  # layout table
    key: str  # key in that table
    unit: str
    description: str
    kind: type = float


PARAMETERS = (
    Parameter("belt_pretension", "belt", "pretension_N", "N",
              "installation span tension; sets the unstretched belt length (seed 000 eq. 12.22)"),
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
)

_VARIABLE = {float: Real, int: Integer, str: String}


class BeltDriveSlave(Fmi2Slave):
    """Belt drive of the layout in the FMU resources, driven by crank speed and pump torque."""

    author = "belt_fmu"
    description = "Planar multibody belt-drive dynamics (front-end accessory drive), belt_fmu"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        resources = Path(self.resources)
        source = str(resources / LAYOUT_RESOURCE)
        self.layout_data = json.loads((resources / LAYOUT_RESOURCE).read_text())
        self.layout_source = source
        layout = load_layout_data(self.layout_data, source)
        inputs = json.loads((resources / INPUTS_RESOURCE).read_text())
        self.crank_speed = float(inputs["crank_speed"])
        self.water_pump_torque = float(inputs["water_pump_torque"])
        self.drive: BeltDrive | None = None
        self.failure: str | None = None  # why the model could not start
        self._initializing = False
        self._started_with = None  # (parameters, inputs) the model was started with

        self.register_variable(Real("crank_speed", causality=Fmi2Causality.input,
                                    variability=Fmi2Variability.continuous,
                                    description="crank speed in its running direction"))
        self.register_variable(Real("water_pump_torque", causality=Fmi2Causality.input,
                                    variability=Fmi2Variability.continuous,
                                    description="water-pump load torque, positive against its rotation"))

        self.parameters = [p for p in PARAMETERS if self.layout_data.get(p.table, {}).get(p.key) is not None]
        for p in self.parameters:
            setattr(self, p.name, p.kind(self.layout_data[p.table][p.key]))
            self.register_variable(_VARIABLE[p.kind](p.name, causality=Fmi2Causality.parameter,
                                                     variability=Fmi2Variability.fixed, description=p.description))

        specs = output_specs([p.name for p in layout.pulleys], layout.headline_pulley_name)
        outputs = [(s.name, s.description, i) for i, s in enumerate(specs)]
        if layout.water_pump_index is not None:
            pump = layout.pulleys[layout.water_pump_index].name
            index = [s.name for s in specs].index(f"speed_{pump}")
            outputs.append(("water_pump_speed", "water-pump speed in its running direction", index))
        for name, description, index in outputs:
            self.register_variable(Real(name, causality=Fmi2Causality.output, variability=Fmi2Variability.continuous,
                                        initial=Fmi2Initial.calculated, description=description,
                                        getter=lambda i=index: self._output(i)))

    # ------------------------------------------------------------------ FMI calls
    def enter_initialization_mode(self):
        self._initializing = True

    def exit_initialization_mode(self):
        self._initializing = False
        self._start()

    def do_step(self, current_time: float, step_size: float) -> bool:
        if self.drive is None:
            self.log(f"step from t = {current_time:.9g} s refused: the model did not initialize: {self.failure}",
                     Fmi2Status.error)
            return False
        try:
            self.drive.advance(step_size, self.crank_speed, self.water_pump_torque)
        except (ValueError, DivergenceError) as err:
            self.log(f"step from t = {current_time:.9g} s by {step_size:.3g} s refused: {err}", Fmi2Status.error)
            return False
        return True

    # ------------------------------------------------------------------ helpers
    def _start(self) -> None:
        """Build the model from the layout and parameters and start it from its steady
        running state at the current inputs, unless it already stands there (outputs read
        during initialization started it). A failure is logged, never raised: PythonFMU
        0.7.0 frees a raising slave's objects twice."""
        parameters = tuple(getattr(self, p.name) for p in self.parameters)
        inputs = (self.crank_speed, self.water_pump_torque)
        if self.drive is not None and self._started_with == (parameters, inputs):
            return
        try:
            drive = self.drive if self.drive is not None and self._started_with[0] == parameters else None
            drive = drive or BeltDrive(self._layout())
            check_inputs(*inputs)
            drive.reset(*inputs)
        except (LayoutError, InitializationError, ValueError, DivergenceError) as err:
            self.failure = str(err)
            self.drive = None
            self.log(f"initialization failed: {err}", Fmi2Status.error)
            return
        self.drive, self._started_with, self.failure = drive, (parameters, inputs), None

    def _layout(self):
        """The layout with the parameter values set through the FMU (LayoutError if invalid)."""
        data = json.loads(json.dumps(self.layout_data))
        for p in self.parameters:
            data[p.table][p.key] = getattr(self, p.name)
        return load_layout_data(data, f"{self.layout_source} with the FMU parameters")

    def _output(self, index: int) -> float:
        if self.drive is None and self._initializing and self.failure is None:
            self._start()  # outputs asked for in initialization mode: FMI 2.0 InitialUnknowns
        return 0.0 if self.drive is None else float(self.drive.output_values[index])

    # ------------------------------------------------------------------ FMU state
    def _get_fmu_state(self) -> dict:
        """Inputs, parameters and the whole model state (belt nodes, pulleys, tensioner,
        friction states, last-step diagnostics), exactly (float64 bytes, base64)."""
        state = {"crank_speed": self.crank_speed, "water_pump_torque": self.water_pump_torque,
                 "parameters": {p.name: getattr(self, p.name) for p in self.parameters}}
        if self.drive is not None:
            state["drive"] = base64.b64encode(self.drive.get_state().tobytes()).decode("ascii")
        return state

    def _set_fmu_state(self, state: dict):
        self.crank_speed = state["crank_speed"]
        self.water_pump_torque = state["water_pump_torque"]
        rebuild = any(getattr(self, name) != value for name, value in state["parameters"].items())
        for name, value in state["parameters"].items():
            setattr(self, name, value)
        if "drive" in state:
            if self.drive is None or rebuild:
                self.drive = BeltDrive(self._layout())
            self.drive.set_state(np.frombuffer(base64.b64decode(state["drive"]), dtype=np.float64).copy())
            self._started_with = None
        else:
            self.drive = None
