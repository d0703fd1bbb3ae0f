"""The operating point: the drive's steady running state at constant inputs, as a table.

The state is the model's own: :meth:`belt_fmu.model.system.BeltDrive.reset` builds the
steady running state analytically and relaxes it by running the model (dynamic relaxation),
so the operating point, the modes linearized about it and a time run from it describe the
same drive. Reported from it (SI units, sign conventions of :mod:`belt_fmu.model.outputs`):

* each free span's tension [N] (the model's ``span_tension`` outputs);
* each pulley's hub force x, y, magnitude [N] and wrap angle [rad] on the loaded path;
* the tensioner arm angle [rad] and its spring torque [N m];
* each pulley's torque ``Q`` [N m]: its steady load (bearing loss, torque table, water-pump
  input) for a driven pulley, the crank torque for the crank; its slip arc and slip margin. Capstan (Euler-Eytelwein) theory with centrifugal tension (Firbank,
  "Mechanics of the belt drive", Int. J. Mech. Sci. 12, 1970): the tension changes only on a
  slip arc at the wrap's exit, ``(T_t - m'v^2) = (T_s - m'v^2) exp(mu phi_s)``, so

      phi_s = ln((T_t - m'v^2) / (T_s - m'v^2)) / mu,

  ``mu`` the effective coefficient (ribbed side ``mu / sin(beta/2)``, the poly-V wedge of
  groove angle beta; back side ``mu_back``). Gross slip starts when the slip arc fills the
  wrap angle theta. The tight and slack tensions are those of the two spans' mean,
  ``T_t,s = (T_in + T_out)/2 +- |Q|/(2r)`` (the measured span tensions also carry the
  model's losses at wrap entry and exit, which no single pulley's torque explains). Holding
  that sum (the belt's length and the tensioner keep the mean tension), the torque the
  pulley can carry is

      Q_max = r (T_t + T_s - 2 m'v^2) (e^{mu theta} - 1) / (e^{mu theta} + 1),

  and the slip margin is ``Q_max - |Q|`` [N m]; a pulley whose margin is not positive (or
  whose slack side has lost its tension) is flagged;
* the crank torque [N m] and power [W].

The discretized belt's forces carry the polygon ripple: the state is an instant of a motion
periodic at the node passage frequency ``f = R w n / l`` (crank cord radius, crank speed,
element count, belt length; :func:`belt_fmu.model.geometry.drive_polygon_frequency`).
:attr:`OperatingPoint.statistics` gives every output's mean and range (min, max) over one such
period, sampled at :data:`PERIOD_SAMPLES` instants by running the drive on from the state and
restoring it after: the values above are the state's own (the modes and the forced response
linearize about it), the means what a measurement low-pass filtered below the polygon
frequency sees.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..model.outputs import pulley_output_name, span_output_name, spans
from ..units import RPM

#: instants over one polygon period the statistics are taken at
PERIOD_SAMPLES = 32


@dataclass(frozen=True)
class PulleyPoint:
    """One pulley at the operating point (module docstring)."""

    name: str
    role: str
    speed: float  # [rad/s], running direction
    hub_force_x: float  # [N]
    hub_force_y: float  # [N]
    hub_force: float  # [N]
    wrap_angle: float  # [rad]
    torque: float  # [N m]: > 0 a load the belt drives, < 0 the crank driving the belt
    effective_mu: float  # [-]
    slip_arc: float  # [rad]
    capacity: float  # Q_max [N m]
    margin: float  # Q_max - |Q| [N m]

    @property
    def flagged(self) -> bool:
        """No slip margin: gross slip at (or beyond) this operating point."""
        return not (self.margin > 0.0 and self.slip_arc < self.wrap_angle)


@dataclass(frozen=True)
class OperatingPoint:
    """The steady running state of a drive (module docstring). ``drive`` is the
    :class:`~belt_fmu.model.system.BeltDrive` holding that state."""

    drive: object
    rpm: float
    water_pump_torque: float  # [N m]
    belt_speed: float  # [m/s] cord line speed at the crank
    centrifugal_tension: float  # m' v^2 [N]
    span_names: tuple[str, ...]  # "a -> b" in travel order
    span_tension: np.ndarray  # [N]
    pulleys: tuple[PulleyPoint, ...]
    arm_angle: float | None  # [rad], absolute (None: no tensioner)
    arm_angle_rel: float | None  # [rad], from the installed angle
    spring_torque: float | None  # [N m], magnitude, into the belt
    crank_torque: float  # [N m], against the crank's rotation
    crank_power: float  # [W]
    statistics: dict | None = None  # output name -> (mean, min, max) over one polygon period
    port_torques: dict | None = None  # {pulley}_torque inputs held [N m]

    @property
    def layout(self):
        return self.drive.layout

    @property
    def flagged(self) -> list[str]:
        return [p.name for p in self.pulleys if p.flagged]

    def hold(self, interval: float) -> None:
        """Run the drive on for ``interval`` [s] at this point's inputs: the crank at its speed,
        or, torque-driven, with the engine torque that balances the belt's at this point."""
        ports = self.port_torques or {}
        if self.drive.torque_driven_crank:
            self.drive.advance(interval, water_pump_torque=self.water_pump_torque, engine_torque=self.crank_torque,
                               **ports)
        else:
            self.drive.advance(interval, self.rpm * RPM, self.water_pump_torque, **ports)

    def mean(self, name: str) -> float:
        """Mean of output ``name`` over one polygon period."""
        return self.statistics[name][0]

    def period_statistics(self) -> dict:
        """{output: (mean, min, max)} over one polygon period from this state (module
        docstring); the drive is left in this state."""
        from ..model.geometry import drive_polygon_frequency

        drive = self.drive
        frequency = drive_polygon_frequency(self.layout, self.rpm * RPM)
        saved = drive.get_state()
        samples = [drive.output_values.copy()]
        try:
            # a belt at rest has no polygon period: its outputs are the state's
            for _ in range(PERIOD_SAMPLES - 1 if frequency > 0.0 else 0):
                period = 1.0 / frequency
                self.hold(period / PERIOD_SAMPLES)
                samples.append(drive.output_values.copy())
        finally:
            drive.set_state(saved)
        values = np.array(samples)
        return {name: (float(np.mean(values[:, k])), float(np.min(values[:, k])), float(np.max(values[:, k])))
                for k, name in enumerate(drive.output_names)}


def capstan(tight: float, slack: float, centrifugal: float, mu: float, wrap: float, radius: float):
    """(slip arc [rad], torque capacity Q_max [N m]) of a wrap (module docstring)."""
    a, b = tight - centrifugal, slack - centrifugal
    e = math.exp(mu * wrap)
    capacity = radius * (a + b) * (e - 1.0) / (e + 1.0)
    if b <= 0.0:
        return math.inf, capacity
    return math.log(max(a, b) / b) / mu, capacity


def operating_point(layout, rpm: float, water_pump_torque: float = 0.0, settle_time: float | None = None,
                    drive=None, statistics: bool = True, **torques) -> OperatingPoint:
    """The operating point of ``layout`` at crank speed ``rpm`` [rpm] and water-pump torque
    [N m]: the drive reset to its steady running state (``settle_time`` [s] of dynamic
    relaxation, default :data:`belt_fmu.model.system.SETTLE_TIME`). ``drive``: a
    :class:`BeltDrive` of ``layout`` to reuse (its kernels are compiled, its buffers reused);
    ``statistics``: also the outputs' means and ranges over a polygon period; ``torques``:
    the accessory ports' inputs ``{pulley}_torque`` [N m]."""
    from ..model.system import SETTLE_TIME, BeltDrive
    from ..model.tensioner import spring_torque

    if drive is None:
        drive = BeltDrive(layout)
    drive.reset(rpm * RPM, water_pump_torque, SETTLE_TIME if settle_time is None else settle_time, **torques)
    out = drive.outputs()
    names = [p.name for p in layout.pulleys]
    pairs = spans(names)
    tension = np.array([out[span_output_name("span_tension", a, b)] for a, b in pairs])
    params = drive.parameters
    crank = layout.crank_index
    radii = params.pulleys["radius"]
    belt_speed = rpm * RPM * radii[crank]
    centrifugal = layout.belt.mass_per_length_kg_per_m * belt_speed ** 2
    path = drive.current_path()
    speeds = np.array([out[pulley_output_name("speed", p.name)] for p in layout.pulleys])
    loads = drive.load_torques(speeds, water_pump_torque, **torques)
    loads[crank] = -out["crank_torque"]
    pulleys = []
    for j, pulley in enumerate(layout.pulleys):
        mean = 0.5 * (tension[j - 1] + tension[j])
        torque = float(loads[j])
        half = 0.5 * abs(torque) / radii[j]
        mu = float(params.pulleys[j]["effective_mu"])
        arc, capacity = capstan(mean + half, mean - half, centrifugal, mu, path.wrap_angle[j], radii[j])
        pulleys.append(PulleyPoint(
            pulley.name, pulley.role, out[pulley_output_name("speed", pulley.name)],
            out[pulley_output_name("hub_force_x", pulley.name)], out[pulley_output_name("hub_force_y", pulley.name)],
            out[pulley_output_name("hub_force", pulley.name)], float(path.wrap_angle[j]), float(torque), mu,
            float(arc), float(capacity), float(capacity - abs(torque))))
    arm = rel = spring = None
    if layout.tensioner is not None:
        arm = out["tensioner_angle"]
        rel = out["tensioner_angle_rel"]
        spring = abs(float(spring_torque(params.tensioner[0], arm)))
    crank_torque = out["crank_torque"]
    point = OperatingPoint(drive, rpm, water_pump_torque, belt_speed, centrifugal,
                           tuple(f"{a} -> {b}" for a, b in pairs), tension, tuple(pulleys), arm, rel, spring,
                           crank_torque, crank_torque * rpm * RPM, None, dict(torques) or None)
    if statistics:
        point = dataclasses.replace(point, statistics=point.period_statistics())
    return point


def _stat(point, name: str, value: float, digits: str = ".1f", spread: bool = True, scale: float = 1.0) -> str:
    """``mean (min..max)`` over the polygon period (``spread`` False: the mean alone), or the
    instant's value without statistics; each times ``scale``."""
    if point.statistics is None or name not in point.statistics:
        return format(scale * value, digits)
    mean, low, high = (scale * x for x in point.statistics[name])
    return f"{mean:{digits}} ({low:{digits}}..{high:{digits}})" if spread else format(mean, digits)


def report(point: OperatingPoint, table) -> str:
    """The operating point as text tables; ``table(header, rows)`` formats one table. Forces,
    tensions and torques are means over one polygon period with their range in brackets."""
    from ..model.geometry import drive_polygon_frequency, small_wraps_note

    names = [p.name for p in point.layout.pulleys]
    pairs = spans(names)
    lines = [f"operating point: crank {point.rpm:g} rpm, water-pump torque {point.water_pump_torque:g} N.m",
             f"belt speed {point.belt_speed:.4g} m/s, centrifugal tension m'v^2 {point.centrifugal_tension:.4g} N"]
    frequency = drive_polygon_frequency(point.layout, point.rpm * RPM)
    if point.statistics is not None and frequency > 0.0:
        lines.append(f"values: mean (min..max) over one polygon period, 1/{frequency:.4g} Hz "
                     f"({PERIOD_SAMPLES} instants); pulley speeds and hub force components: means; torque, "
                     "slip arc, capacity and margin: the state's")
    lines += ["", "free spans, in belt travel order:",
              table(["span", "tension [N]"],
                    [[name, _stat(point, span_output_name("span_tension", a, b), t)]
                     for name, (a, b), t in zip(point.span_names, pairs, point.span_tension)]),
              "", "pulleys:"]
    rows = []
    for p in point.pulleys:
        rows.append([p.name, p.role, _stat(point, pulley_output_name("speed", p.name), p.speed, ".2f", False),
                     _stat(point, pulley_output_name("hub_force_x", p.name), p.hub_force_x, spread=False),
                     _stat(point, pulley_output_name("hub_force_y", p.name), p.hub_force_y, spread=False),
                     _stat(point, pulley_output_name("hub_force", p.name), p.hub_force),
                     f"{math.degrees(p.wrap_angle):.1f}", f"{p.torque:.3g}",
                     f"{p.effective_mu:.3g}",
                     "all" if not math.isfinite(p.slip_arc) else f"{math.degrees(p.slip_arc):.1f}",
                     f"{p.capacity:.3g}", f"{p.margin:.3g}", "NO MARGIN" if p.flagged else "ok"])
    lines.append(table(["pulley", "role", "speed [rad/s]", "hub Fx [N]", "hub Fy [N]", "hub |F| [N]", "wrap [deg]",
                        "torque [N.m]", "mu_eff", "slip arc [deg]", "capacity [N.m]", "margin [N.m]", "slip"],
                       rows))
    lines.append("")
    if point.arm_angle is not None:
        relative = _stat(point, "tensioner_angle_rel", point.arm_angle_rel, "+.3f", scale=180.0 / math.pi)
        lines.append(f"tensioner arm: angle {point.arm_angle:.5g} rad ({math.degrees(point.arm_angle):.2f} deg), "
                     f"{relative} deg from installed; spring torque {point.spring_torque:.4g} N.m")
    lines.append(f"crank: torque {_stat(point, 'crank_torque', point.crank_torque, '.4g')} N.m, "
                 f"power {point.crank_power:.4g} W")
    note = small_wraps_note(point.layout, point.drive.current_path())
    if note:
        lines.append(note)
    flagged = point.flagged
    if flagged:
        lines.append(f"warning: no slip margin on {', '.join(flagged)}: the belt slips grossly there")
    return "\n".join(lines)
