r"""Power unit (engine) FMU slave: a crankshaft with speed governor and firing-order pulsation.

The crankshaft, flywheel and the engine's rotating masses form one inertia J loaded by the
belt drive (input ``crank_torque``, positive against the rotation) and by the engine's own
viscous friction c:

.. math::

    J \dot\omega = T_{engine} - T_{belt} - c\,\omega, \qquad \dot\theta = \omega

    T_{engine} = T_{gov} + A \sin(n\,\theta)

    T_{gov} = K_p (\omega_{set} - \omega) + I, \qquad \dot I = K_i (\omega_{set} - \omega)

* **Governor**: a PI controller holds the mean speed at ``speed_setpoint``. Its gains place
  the closed speed loop's poles at ``governor_frequency`` w_c with ``governor_damping``
  zeta: K_p = 2 zeta w_c J - c, K_i = w_c^2 J, so J s^2 + (c + K_p) s + K_i =
  J (s^2 + 2 zeta w_c s + w_c^2). With w_c far below the firing frequency it acts on the
  mean speed.
* **Firing-order pulsation**: n = ``irregularity_order`` (2 for a four-stroke 4-cylinder
  engine, 3 for a 6-cylinder: docs/references.md R8), phased on the crank angle theta.
  Its amplitude A is set so that the linear model above oscillates at the firing frequency
  Omega = n w_set with the speed amplitude a = ``irregularity_amplitude``:
  A = a |Z(j Omega)|, Z(j Omega) = J (2 zeta w_c + j (Omega - w_c^2 / Omega)), the
  impedance of inertia, friction and governor. The belt drive adds the inertia of its
  accessories and its own dynamics, so the coupled amplitude is close to a, not exactly a.
* **Start**: at the end of initialization the engine is in the periodic steady state of the
  linear model, speed w_set + Im(W) at theta = 0 with W = A / Z(j Omega) the ripple phasor,
  and the governor's integral state balances the load torque input then present,
  I = T_belt + c w_set - P + K_i Re(W) / Omega, where P = -A n Re(W) / (2 Omega) is the
  mean of the pulsation over a firing period (nonzero because the crank angle carries the
  speed ripple; second order in a / w_set). At the first step I is set again from the input
  then: the belt-drive FMU reports its crank torque only once initialized, so that is the
  first time the engine sees its load, and the coupled system starts without a start-up
  transient of the engine.
* **Integration**: classical Runge-Kutta (RK4) with the inputs held over the communication
  step, in equal internal steps of at most :data:`MAX_STEP`.

Errors never leave the slave as exceptions: PythonFMU 0.7.0 releases the slave's Python
objects when one does and releases them again when the instance is freed, which corrupts
the interpreter's memory. Parameters out of range are logged at error level when
initialization ends and every step is then refused (fmi2Discard) with that message; so is a
non-finite input.

Variables (SI units): parameters above (fixed), input ``crank_torque`` [N.m], outputs
``crank_speed`` [rad/s], ``crank_angle`` [rad] (from 0 at the start) and ``engine_torque``
[N.m] (governor plus pulsation). The FMU state (get/set/serialize) holds everything needed
to continue exactly.

``build_ssp.py`` packs this script into ``PowerUnit.fmu`` under a module name unique to its
content.
"""
import math

from pythonfmu import DefaultExperiment, Fmi2Causality, Fmi2Initial, Fmi2Slave, Fmi2Variability, Real
from pythonfmu.enums import Fmi2Status

MAX_STEP = 1e-4  # [s] largest internal integration step

# PythonFMU 0.7.0 runs this script again at every instantiation and then releases a
# reference to this module's namespace that it never took (findClass: Py_DECREF of the
# borrowed PyModule_GetDict); after a few instances the namespace would be freed under it.
# Each run keeps one more reference, so the count stays balanced.
globals().setdefault("_NAMESPACE_REFERENCES", []).append(globals())

#: name, start value, unit, description (the unit strings build_ssp.py declares)
PARAMETERS = (
    ("speed_setpoint", 800 * math.pi / 30, "rad/s", "mean crank speed the governor holds (default 800 rpm)"),
    ("crank_inertia", 1.0, "kg.m2", "inertia of crankshaft, flywheel and engine rotating masses"),
    ("friction_damping", 0.5, "N.m.s/rad", "viscous engine friction c: friction torque c * crank_speed"),
    ("governor_frequency", 4 * math.pi, "rad/s", "natural frequency w_c of the governed speed loop"),
    ("governor_damping", 0.7, "1", "damping ratio of the governed speed loop"),
    ("irregularity_order", 2.0, "1", "firing order n: pulsation sin(n * crank_angle), cycles per revolution"),
    ("irregularity_amplitude", 2.0, "rad/s", "crank speed amplitude of the firing-order irregularity "
                                             "(linear engine model)"),
)
#: unit of every variable
UNITS = {**{name: unit for name, _, unit, _ in PARAMETERS},
         "crank_torque": "N.m", "crank_speed": "rad/s", "crank_angle": "rad", "engine_torque": "N.m"}


class PowerUnit(Fmi2Slave):
    """Engine crankshaft with PI speed governor and firing-order torque pulsation."""

    author = "belt_fmu examples"
    description = "Power unit: crankshaft inertia, PI speed governor, firing-order pulsation"
    default_experiment = DefaultExperiment(start_time=0.0, stop_time=1.0, step_size=MAX_STEP)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for name, start, _, text in PARAMETERS:
            setattr(self, name, start)
            self.register_variable(Real(name, causality=Fmi2Causality.parameter,
                                        variability=Fmi2Variability.fixed, description=text))
        self.crank_torque = 0.0
        self.register_variable(Real("crank_torque", causality=Fmi2Causality.input,
                                    variability=Fmi2Variability.continuous,
                                    description="load torque of the belt drive, positive against the rotation"))
        outputs = (("crank_speed", "crank speed", lambda: self.omega),
                   ("crank_angle", "crank angle from the start", lambda: self.theta),
                   ("engine_torque", "engine torque: governor plus firing pulsation",
                    lambda: self._engine_torque(self.theta, self.omega, self.integral)))
        for name, text, getter in outputs:
            self.register_variable(Real(name, causality=Fmi2Causality.output, variability=Fmi2Variability.continuous,
                                        initial=Fmi2Initial.calculated, description=text,
                                        getter=lambda g=getter, n=name: g() if self.started else self._initial()[n]))
        self.started = False  # initialization ended
        self.governed = False  # the governor's integral state was set at the first step
        self.theta = self.omega = self.integral = 0.0
        self.design = None  # _design_from_parameters() once initialized (parameters are fixed then)
        self.refused = ""  # why the parameters were refused at initialization, if they were

    # ------------------------------------------------------------------ model
    def _design_from_parameters(self) -> dict:
        """Governor gains K_p, K_i, pulsation amplitude A and the linear model's speed ripple
        phasor W = A / Z(j Omega) (forcing A sin(Omega t) = Im A e^{j Omega t}), from the
        parameters (in range: :meth:`_check_parameters`)."""
        j, wc, zeta = self.crank_inertia, self.governor_frequency, self.governor_damping
        omega_fire = self.irregularity_order * self.speed_setpoint
        impedance = j * complex(2 * zeta * wc, omega_fire - wc * wc / omega_fire)
        amplitude = self.irregularity_amplitude * abs(impedance)
        return {"kp": 2 * zeta * wc * j - self.friction_damping, "ki": wc * wc * j, "amplitude": amplitude,
                "ripple": amplitude / impedance, "omega_fire": omega_fire}

    def _initial(self) -> dict:
        """Outputs at the end of initialization: the periodic steady state at theta = 0 (with
        parameters out of range, the set point and zeros: exitInitializationMode refuses them)."""
        if self._check_parameters():
            return {"crank_speed": self.speed_setpoint, "crank_angle": 0.0, "engine_torque": 0.0}
        d = self._design_from_parameters()
        omega = self.speed_setpoint + d["ripple"].imag
        torque = d["kp"] * (self.speed_setpoint - omega) + self._balance(self.crank_torque, d)
        return {"crank_speed": omega, "crank_angle": 0.0, "engine_torque": torque}

    def _balance(self, load: float, d: dict) -> float:
        """Governor integral state in the periodic steady state under a constant ``load``
        (``d``: :meth:`_design_from_parameters`)."""
        ripple = d["ripple"]
        mean_pulsation = -d["amplitude"] * self.irregularity_order * ripple.real / (2 * d["omega_fire"])
        return (load + self.friction_damping * self.speed_setpoint - mean_pulsation
                + d["ki"] * ripple.real / d["omega_fire"])

    def _engine_torque(self, theta: float, omega: float, integral: float) -> float:
        d = self.design
        return (d["kp"] * (self.speed_setpoint - omega) + integral
                + d["amplitude"] * math.sin(self.irregularity_order * theta))

    def _derivatives(self, theta: float, omega: float, integral: float, load: float) -> tuple:
        torque = self._engine_torque(theta, omega, integral)
        return (omega, (torque - load - self.friction_damping * omega) / self.crank_inertia,
                self.design["ki"] * (self.speed_setpoint - omega))

    def _rk4(self, h: float, load: float) -> None:
        y = (self.theta, self.omega, self.integral)
        k1 = self._derivatives(*y, load)
        k2 = self._derivatives(*(v + 0.5 * h * d for v, d in zip(y, k1)), load)
        k3 = self._derivatives(*(v + 0.5 * h * d for v, d in zip(y, k2)), load)
        k4 = self._derivatives(*(v + h * d for v, d in zip(y, k3)), load)
        self.theta, self.omega, self.integral = (
            v + h / 6 * (a + 2 * b + 2 * c + d) for v, a, b, c, d in zip(y, k1, k2, k3, k4))

    def _check_parameters(self) -> list:
        problems = [f"{name} = {getattr(self, name)!r} must be finite and > 0" for name in
                    ("speed_setpoint", "crank_inertia", "governor_frequency", "governor_damping", "irregularity_order")
                    if not (getattr(self, name) > 0 and math.isfinite(getattr(self, name)))]
        problems += [f"{name} = {getattr(self, name)!r} must be finite and >= 0" for name in
                     ("friction_damping", "irregularity_amplitude")
                     if not (getattr(self, name) >= 0 and math.isfinite(getattr(self, name)))]
        if not problems and not self.irregularity_amplitude < self.speed_setpoint:
            problems.append(f"irregularity_amplitude = {self.irregularity_amplitude!r} rad/s must be below "
                            f"speed_setpoint = {self.speed_setpoint!r} rad/s")
        return problems

    # ------------------------------------------------------------------ FMI calls
    def exit_initialization_mode(self):
        problems = self._check_parameters()
        if problems:
            self.refused = "power unit parameters refused: " + "; ".join(problems)
            self.log(self.refused, Fmi2Status.error)
            return
        self.design = self._design_from_parameters()
        self.theta, self.omega = 0.0, self._initial()["crank_speed"]
        self.integral = self._balance(self.crank_torque, self.design)
        self.started = True

    def do_step(self, current_time: float, step_size: float) -> bool:
        if self.refused:
            self.log(f"step from t = {current_time:.9g} s refused: {self.refused}", Fmi2Status.error)
            return False
        load = self.crank_torque
        if not (math.isfinite(load) and step_size >= 0 and math.isfinite(step_size)):
            self.log(f"step from t = {current_time:.9g} s by {step_size!r} s refused: crank_torque = {load!r} "
                     "N.m must be finite and the step finite and >= 0", Fmi2Status.error)
            return False
        if not self.governed:
            self.integral = self._balance(load, self.design)
            self.governed = True
        if step_size > 0:
            n = max(1, math.ceil(step_size / MAX_STEP - 1e-9))
            for _ in range(n):
                self._rk4(step_size / n, load)
        if not math.isfinite(self.omega):
            self.log(f"integration diverged in the step from t = {current_time:.9g} s", Fmi2Status.error)
            return False
        return True

    # ------------------------------------------------------------------ FMU state
    _STATE = ("theta", "omega", "integral", "started", "governed", "refused", "crank_torque",
              *(p[0] for p in PARAMETERS))

    def _get_fmu_state(self) -> dict:
        return {name: getattr(self, name) for name in self._STATE}

    def _set_fmu_state(self, state: dict):
        for name in self._STATE:
            setattr(self, name, state[name])
        self.design = self._design_from_parameters() if self.started else None
