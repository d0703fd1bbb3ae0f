r"""Alternator FMU slave: the drive torque an alternator takes to feed an electrical load.

The electrical side is a current demand at the system voltage (the battery and voltage
regulator hold the voltage; the consumers draw ``load_current``, stepping to
``load_step_current`` at ``load_step_time``, as when a blower or the headlamps switch on).
The alternator delivers that power through its efficiency, so the shaft torque is

.. math::

    T_{alt} = T_0 + \frac{U\,I}{\eta\,\max(\omega, \omega_{min})}

with ``alternator_T0`` the friction and fan torque, U ``system_voltage``, I the current
demand, eta ``alternator_efficiency`` and omega the alternator speed (``alternator_speed``
from the belt drive's port ``alternator1_speed``); below ``min_speed`` the torque is held at
its value there instead of growing without bound (a real machine's output collapses below
its cut-in speed; the example's drive never runs that slow). Output ``alternator_torque``
[N.m] goes to the belt drive's port input ``alternator1_torque`` (positive against the
rotation), ``alternator_current`` [A] and ``alternator_power`` [W] are for plots. No states:
the rotor's inertia is the belt drive's alternator pulley.

Parameters out of range are logged at error level when initialization ends and every step is
then refused (fmi2Discard); the slave never raises (see power_unit.py: PythonFMU 0.7.0
corrupts memory when a slave raises).

``build_ssp.py`` packs this script into ``Alternator.fmu`` under a module name unique to its
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

#: name, start value, unit, description, lower bound (exclusive when the flag is set)
PARAMETERS = (
    ("system_voltage", 28.0, "V", "electrical system voltage held by the regulator (24 V truck system)", 0.0, True),
    ("alternator_efficiency", 0.6, "1", "alternator efficiency: electrical over shaft power", 0.0, True),
    ("alternator_T0", 0.3, "N.m", "friction and fan torque", 0.0, False),
    ("min_speed", 50.0, "rad/s", "speed below which the electrical torque is held at its value there", 0.0, True),
    ("load_current", 10.0, "A", "current demand of the electrical consumers", 0.0, False),
    ("load_step_current", 10.0, "A", "current demand from load_step_time on (a load step)", 0.0, False),
    ("load_step_time", 1.0e9, "s", "time of the current demand step", -math.inf, False),
)
#: unit of every variable
UNITS = {**{name: unit for name, _, unit, *_ in PARAMETERS},
         "alternator_speed": "rad/s", "alternator_torque": "N.m", "alternator_current": "A", "alternator_power": "W"}


class Alternator(Fmi2Slave):
    """Alternator drive torque from the electrical current demand and the alternator speed."""

    author = "belt_fmu examples"
    description = "Alternator: drive torque T0 + U I / (eta w) for a current demand I at voltage U"
    default_experiment = DefaultExperiment(start_time=0.0, stop_time=1.0, step_size=1e-4)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for name, start, _, text, *_ in PARAMETERS:
            setattr(self, name, start)
            self.register_variable(Real(name, causality=Fmi2Causality.parameter,
                                        variability=Fmi2Variability.fixed, description=text))
        self.alternator_speed = 0.0
        self.time = 0.0  # [s] communication point reached
        self.refused = ""  # why the parameters were refused at initialization, if they were
        self.register_variable(Real("alternator_speed", causality=Fmi2Causality.input,
                                    variability=Fmi2Variability.continuous,
                                    description="alternator speed in its running direction"))
        for name, getter, text in (
                ("alternator_torque", self.torque, "alternator drive torque, positive against its rotation"),
                ("alternator_current", self.current, "current delivered to the electrical system"),
                ("alternator_power", lambda: self.torque() * self.alternator_speed,
                 "power the alternator takes from the belt drive")):
            self.register_variable(Real(name, causality=Fmi2Causality.output, variability=Fmi2Variability.continuous,
                                        initial=Fmi2Initial.calculated, description=text, getter=getter))

    def current(self) -> float:
        """The current demand [A] at the FMU's time."""
        return self.load_step_current if self.time >= self.load_step_time else self.load_current

    def torque(self) -> float:
        """T0 + U I / (eta max(w, w_min)) [N.m] at the current input."""
        speed = max(self.alternator_speed, self.min_speed)
        return self.alternator_T0 + self.system_voltage * self.current() / (self.alternator_efficiency * speed)

    def setup_experiment(self, start_time, stop_time=None, tolerance=None):
        self.time = start_time

    def exit_initialization_mode(self):
        problems = []
        for name, _, unit, _, low, exclusive in PARAMETERS:
            value = getattr(self, name)
            if not (math.isfinite(value) and (value > low if exclusive else value >= low)):
                problems.append(f"{name} = {value!r} {unit} must be finite and {'>' if exclusive else '>='} {low:g}")
        if self.alternator_efficiency > 1.0:
            problems.append(f"alternator_efficiency = {self.alternator_efficiency!r} must be <= 1")
        if problems:
            self.refused = "alternator parameters refused: " + "; ".join(problems)
            self.log(self.refused, Fmi2Status.error)

    def do_step(self, current_time: float, step_size: float) -> bool:
        problem = self.refused or (not math.isfinite(self.alternator_speed)
                                   and f"alternator_speed = {self.alternator_speed!r} rad/s must be finite")
        if problem:
            self.log(f"step from t = {current_time:.9g} s refused: {problem}", Fmi2Status.error)
            return False
        self.time = current_time + step_size
        return True

    def _get_fmu_state(self) -> dict:
        return {name: getattr(self, name)
                for name in ("alternator_speed", "time", "refused", *(p[0] for p in PARAMETERS))}

    def _set_fmu_state(self, state: dict):
        for name, value in state.items():
            setattr(self, name, value)
