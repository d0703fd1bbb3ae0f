r"""Water pump FMU slave: the hydraulic load torque of a centrifugal coolant pump.

.. math::

    T_{pump} = T_0 + k\,\omega^2

with ``pump_T0`` the speed-independent part (seals, bearings) and ``pump_k`` the hydraulic
part (head and flow both grow with speed, so power grows with the cube of the speed;
docs/references.md R8: roughly 0.2-1 kW at high speed). For load-step tests the
hydraulic coefficient is multiplied by ``pump_step_factor`` from ``pump_step_time`` on
(default: never), as when a thermostat opens the radiator circuit. The pump's rotor inertia belongs
to the belt drive, whose water-pump pulley carries it; this FMU is the load only, without
states: input ``water_pump_speed`` [rad/s] from the belt drive, outputs
``water_pump_torque`` [N.m] (positive against the rotation, to the belt drive) and
``water_pump_power`` [W], both direct functions of the input.

Parameters out of range (negative or not finite) are logged at error level when
initialization ends and every step is then refused (fmi2Discard); the slave never raises
(see power_unit.py: PythonFMU 0.7.0 corrupts memory when a slave raises).

``build_ssp.py`` packs this script into ``WaterPump.fmu`` under a module name unique to its
content.
"""
import math

from pythonfmu import DefaultExperiment, Fmi2Causality, Fmi2Initial, Fmi2Slave, Fmi2Variability, Real
from pythonfmu.enums import Fmi2Status

# PythonFMU 0.7.0 runs this script again at every instantiation and then releases a
# reference to this module's namespace that it never took (findClass: Py_DECREF of the
# borrowed PyModule_GetDict); after a few instances the namespace would be freed under it.
# Each run keeps one more reference, so the count stays balanced.
globals().setdefault("_NAMESPACE_REFERENCES", []).append(globals())

#: name, start value, unit, description (the unit strings build_ssp.py declares)
PARAMETERS = (
    ("pump_T0", 0.3, "N.m", "speed-independent pump torque T0 (seals, bearings)"),
    ("pump_k", 1.5e-5, "N.m.s2/rad2", "hydraulic torque coefficient k: torque T0 + k * speed^2"),
    ("pump_step_time", 1.0e9, "s", "time from which k is multiplied by pump_step_factor (a load step)"),
    ("pump_step_factor", 1.0, "1", "factor on the hydraulic coefficient k from pump_step_time on"),
)
#: unit of every variable
UNITS = {**{name: unit for name, _, unit, _ in PARAMETERS},
         "water_pump_speed": "rad/s", "water_pump_torque": "N.m", "water_pump_power": "W"}


class WaterPump(Fmi2Slave):
    """Coolant pump load torque T0 + k w^2 from the pump speed."""

    author = "belt_fmu examples"
    description = "Water pump: load torque T0 + k w^2 from the pump speed"
    default_experiment = DefaultExperiment(start_time=0.0, stop_time=1.0, step_size=1e-4)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for name, start, _, text in PARAMETERS:
            setattr(self, name, start)
            self.register_variable(Real(name, causality=Fmi2Causality.parameter,
                                        variability=Fmi2Variability.fixed, description=text))
        self.water_pump_speed = 0.0
        self.time = 0.0  # [s] communication point reached
        self.refused = ""  # why the parameters were refused at initialization, if they were
        self.register_variable(Real("water_pump_speed", causality=Fmi2Causality.input,
                                    variability=Fmi2Variability.continuous,
                                    description="pump speed in its running direction"))
        self.register_variable(Real("water_pump_torque", causality=Fmi2Causality.output,
                                    variability=Fmi2Variability.continuous, initial=Fmi2Initial.calculated,
                                    description="pump load torque, positive against the rotation",
                                    getter=self.torque))
        self.register_variable(Real("water_pump_power", causality=Fmi2Causality.output,
                                    variability=Fmi2Variability.continuous, initial=Fmi2Initial.calculated,
                                    description="power the pump takes from the belt drive",
                                    getter=lambda: self.torque() * self.water_pump_speed))

    def torque(self) -> float:
        """T0 + k w^2 [N.m] at the current input (k times the step factor after the step)."""
        k = self.pump_k * (self.pump_step_factor if self.time >= self.pump_step_time else 1.0)
        return self.pump_T0 + k * self.water_pump_speed ** 2

    def setup_experiment(self, start_time, stop_time=None, tolerance=None):
        self.time = start_time

    def exit_initialization_mode(self):
        problems = [f"{name} = {getattr(self, name)!r} must be finite and >= 0" for name, *_ in PARAMETERS
                    if not (getattr(self, name) >= 0 and math.isfinite(getattr(self, name)))]
        if problems:
            self.refused = "water pump parameters refused: " + "; ".join(problems)
            self.log(self.refused, Fmi2Status.error)

    def do_step(self, current_time: float, step_size: float) -> bool:
        problem = self.refused or (not math.isfinite(self.water_pump_speed)
                                   and f"water_pump_speed = {self.water_pump_speed!r} rad/s must be finite")
        if problem:
            self.log(f"step from t = {current_time:.9g} s refused: {problem}", Fmi2Status.error)
            return False
        self.time = current_time + step_size
        return True

    def _get_fmu_state(self) -> dict:
        return {name: getattr(self, name)
                for name in ("water_pump_speed", "time", "refused", *(p[0] for p in PARAMETERS))}

    def _set_fmu_state(self, state: dict):
        for name, value in state.items():
            setattr(self, name, value)
