"""The static design chain of a drive at a duty point, in two conventions, and the tensioner
position table.

Both conventions share the torque balance of every pulley in steady running: going along the
belt, the tension rises across driven pulley j by its load torque over its cord radius,
``(T_out - T_in) R_j = Q_j`` (load: the duty point's torque or the layout's table, plus the
bearing drag), and drops across the crank by the sum. They differ in where the tensioner arm
stands, which sets the tension level:

* **nominal**: the arm at its installed (nominal) angle psi0, the drive's drawn geometry; the
  level follows from the arm's moment balance there, ``M_spring(psi0) + r x F_hub = 0``, the
  hub force of the two spans at the tensioner pulley with their tensions less the
  centrifugal part ``m'v^2`` (the belt's own inertia carries it round the wrap: Firbank,
  "Mechanics of the belt drive", Int. J. Mech. Sci. 12, 1970). Without a tensioner the
  spans' length-weighted mean tension is the pretension. The belt is inextensible here: this
  is the convention of a hand calculation or a supplier's sheet that quotes tensions "at
  nominal tensioner position".
* **elastic**: the arm where the loaded, stretching belt puts it: the lumped model's steady
  state (:meth:`belt_fmu.model.lumped_system.LumpedDrive.steady_state`): the same torque and
  moment balances, and the belt's unstretched length closing the loop with every span and
  wrap stretched by its tension (EA), the sliding arcs' creep and the wraps' sink into the
  contact. As the belt stiffens (EA and the contact's stiffness) it tends to the nominal
  convention.

Per pulley, in either: the hub load, the vector sum of the two spans' pulls less ``m'v^2``,
of magnitude ``sqrt(Ta'^2 + Tb'^2 - 2 Ta' Tb' cos theta)`` (theta the wrap angle) and its
direction (polar angle in the drawing); and the *slip safety* ``S = Q_max / |Q|``: the
largest torque the wrap transmits at the same tension sum before gross slip over its
transmitted torque. By the capstan (Euler-Eytelwein) law with centrifugal tension (L. Euler,
"Remarques sur l'effect du frottement dans l'equilibre", Mem. Acad. Sci. Berlin, 1762;
J. A. Eytelwein, "Handbuch der Statik fester Koerper", 1808; Firbank 1970),
``(T_t - m'v^2) = (T_s - m'v^2) e^{mu_eff theta}`` at gross slip, so

    Q_max = R (T_t + T_s - 2 m'v^2) (e^{mu_eff theta} - 1) / (e^{mu_eff theta} + 1),

``mu_eff = mu / sin(beta/2)`` on the ribbed side of a poly-V belt of groove angle beta
(docs/references.md R2), ``mu_back`` on the back. ``S > 1`` transmits; below 1 the belt slips
grossly. The tension ratio ``(T_t - m'v^2)/(T_s - m'v^2)`` against its limit
``e^{mu_eff theta}`` is reported beside it.

The *tensioner position table* (:func:`tensioner_positions`) is static (belt at rest, no
load): at each arm angle the belt's cord-line length is the path's, the pulley centre on its
circle about the pivot, ``c = p + l (cos psi, sin psi)``; the spans' common tension balances
the spring's moment. Rows: the spring's free angle (no torque), installed, the longest and
the shortest belt within the length tolerance (the arm where the path is that long), and
the load stop (the end stop away from the belt).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..model.geometry import BeltPath
from ..model.layout_checks import steady_loads
from ..model.tensioner import spring_torque
from .operating_point import capstan
from .rotational import arm_geometry, path_at

#: belt length tolerance as a share of the length, where the layout gives none: a round
#: default, not a standard's figure (a belt supplier's tolerance replaces it)
LENGTH_TOLERANCE = 0.005
NOMINAL = "nominal"
ELASTIC = "elastic"
CONVENTIONS = (NOMINAL, ELASTIC)


@dataclass(frozen=True)
class StaticPoint:
    """The static design chain of one duty point in one convention (module docstring); span i
    runs from pulley i to i + 1 in travel order."""

    convention: str
    crank_speed: float  # [rad/s]
    centrifugal_tension: float  # m'v^2 [N]
    arm_angle: float | None  # [rad] absolute (None: no tensioner)
    arm_angle_rel: float | None  # [rad] from installed
    spring_torque: float | None  # [N m] magnitude
    span_tension: np.ndarray  # (p,) [N]
    hub_force: np.ndarray  # (p, 2) [N] belt on pulley, drawing frame
    wrap_angle: np.ndarray  # (p,) [rad]
    torque: np.ndarray  # (p,) [N m] load torque (crank: minus the sum, driving)
    effective_mu: np.ndarray  # (p,)
    capacity: np.ndarray  # (p,) Q_max [N m]
    tension_ratio: np.ndarray  # (p,) (T_t - m'v^2)/(T_s - m'v^2)
    belt_length: float  # [m] cord-line path length at the arm angle

    @property
    def hub_magnitude(self) -> np.ndarray:
        return np.hypot(self.hub_force[:, 0], self.hub_force[:, 1])

    @property
    def hub_direction(self) -> np.ndarray:
        """[rad] polar angle of each hub force in the drawing's frame."""
        return np.arctan2(self.hub_force[:, 1], self.hub_force[:, 0])

    @property
    def capstan_limit(self) -> np.ndarray:
        return np.exp(self.effective_mu * self.wrap_angle)

    @property
    def slip_safety(self) -> np.ndarray:
        """Q_max / |Q| (inf where the pulley transmits no torque)."""
        q = np.abs(self.torque)
        with np.errstate(divide="ignore"):
            return np.where(q > 1e-9, self.capacity / np.maximum(q, 1e-300), np.inf)


def hub_forces(path, tension, centrifugal: float) -> np.ndarray:
    """(p, 2) [N] force of the belt on each pulley: its two spans pulling along their lines with
    ``T - m'v^2``."""
    return np.array([path.hub_force(j, tension[j - 1] - centrifugal, tension[j] - centrifugal)
                     for j in range(path.n_pulleys)])


def _arm_moment(layout, path, tension, centrifugal: float) -> float:
    """Moment [N m, CCW] of the belt's hub load on the tensioner pulley about the pivot."""
    t = layout.tensioner_index
    return path.hub_moment(t, layout.tensioner.pivot_m, tension[t - 1] - centrifugal, tension[t] - centrifugal)


def load_torques(layout, crank_speed: float) -> np.ndarray:
    """(p,) [N m] steady load torque of every pulley at ``crank_speed`` [rad/s]: bearing drag and
    the layout's loads (:func:`belt_fmu.model.layout_checks.steady_loads`); the crank's is
    minus the sum of the others (it drives them)."""
    path = BeltPath.from_layout(layout)
    radii = path.radii
    crank = layout.crank_index
    torques = steady_loads(layout, abs(crank_speed), path=path)
    torques[crank] = -float(np.sum(np.delete(torques, crank) * radii[crank] / np.delete(radii, crank)))
    return torques


def _offsets(radii, crank: int, torques) -> np.ndarray:
    """Span tensions relative to the crank's slack span (the one leaving it) [N]."""
    p = len(radii)
    offsets = np.zeros(p)
    for k in range(1, p):
        j = (crank + k) % p
        offsets[j] = offsets[j - 1] + torques[j] / radii[j]
    return offsets


def _finish(layout, parameters, convention, crank_speed, psi, tension, torques) -> StaticPoint:
    path = path_at(layout, psi)
    radii = path.radii
    belt_speed = abs(crank_speed) * radii[layout.crank_index]
    centrifugal = layout.belt.mass_per_length_kg_per_m * belt_speed ** 2
    mu = np.asarray(parameters.pulleys["effective_mu"], dtype=float)
    capacity, ratio = [], []
    for j in range(len(radii)):
        tight, slack = max(tension[j - 1], tension[j]), min(tension[j - 1], tension[j])
        capacity.append(capstan(tight, slack, centrifugal, mu[j], path.wrap_angle[j], radii[j])[1])
        ratio.append((tight - centrifugal) / (slack - centrifugal) if slack > centrifugal else math.inf)
    spring = rel = None
    if layout.tensioner is not None:
        arm = parameters.tensioner[0]
        spring = abs(spring_torque(arm, psi))
        rel = psi - float(arm["installed_angle"])
    return StaticPoint(convention, crank_speed, centrifugal, psi, rel, spring, np.asarray(tension, dtype=float),
                       hub_forces(path, tension, centrifugal), np.asarray(path.wrap_angle, dtype=float),
                       np.asarray(torques, dtype=float), mu, np.array(capacity), np.array(ratio), float(path.length))


def nominal_point(layout, crank_speed: float) -> StaticPoint:
    """The nominal convention (module docstring) at ``crank_speed`` [rad/s] with ``layout``'s
    loads (a duty point's: :func:`belt_fmu.duty.loaded_layout`)."""
    from ..model.parameters import translate

    parameters = translate(layout)[0]
    torques = load_torques(layout, crank_speed)
    psi = None
    if layout.tensioner is not None:
        psi = arm_geometry(layout)[2]
    path = path_at(layout, psi)
    offsets = _offsets(path.radii, layout.crank_index, torques)
    belt_speed = abs(crank_speed) * path.radii[layout.crank_index]
    centrifugal = layout.belt.mass_per_length_kg_per_m * belt_speed ** 2
    if layout.tensioner is not None:
        spring = spring_torque(parameters.tensioner[0], psi)
        # the moment is affine in the tension level
        m0 = _arm_moment(layout, path, offsets, centrifugal)
        m1 = _arm_moment(layout, path, offsets + 1.0, centrifugal)
        level = -(spring + m0) / (m1 - m0)
    else:
        pretension = layout.belt.pretension_N
        if pretension is None:  # the belt is given by its length: only the elastic convention applies
            return dataclasses.replace(elastic_point(layout, crank_speed), convention=NOMINAL)
        weights = path.span_length / np.sum(path.span_length)
        level = pretension - float(weights @ offsets)
    return _finish(layout, parameters, NOMINAL, crank_speed, psi, offsets + level, torques)


def _lumped_layout(layout):
    """``layout`` as the lumped model takes it: speed-driven crank, no gravity, ports as
    (zero) tables (the static chain reads loads from the tables: :func:`belt_fmu.duty.loaded_layout`)."""
    pulleys = tuple(dataclasses.replace(p, load="table", torque_table_speed_rad_per_s=(0.0, 1.0),
                                        torque_table_Nm=(0.0, 0.0)) if p.load == "input" else p
                    for p in layout.pulleys)
    return dataclasses.replace(layout, pulleys=pulleys).with_drive(model="lumped", crank_input="speed",
                                                                   gravity_m_per_s2=(0.0, 0.0))


def elastic_point(layout, crank_speed: float) -> StaticPoint:
    """The elastic convention (module docstring) at ``crank_speed`` [rad/s]."""
    from ..model.lumped_system import LumpedDrive

    lumped = _lumped_layout(layout)
    drive = LumpedDrive(lumped)
    torques = load_torques(lumped, crank_speed)
    psi, tension = drive.steady_state(abs(crank_speed), 0.0)
    return _finish(lumped, drive.parameters, ELASTIC, crank_speed, float(psi) if layout.tensioner else None,
                   tension, torques)


def static_points(layout, crank_speed: float) -> dict:
    """Both conventions: {convention: StaticPoint}."""
    return {NOMINAL: nominal_point(layout, crank_speed), ELASTIC: elastic_point(layout, crank_speed)}


# ------------------------------------------------------------------ tensioner position table
@dataclass(frozen=True)
class ArmPosition:
    """One row of the tensioner position table (module docstring)."""

    label: str
    arm_angle: float  # [rad] absolute
    arm_angle_rel: float  # [rad] from installed
    spring_torque: float  # [N m] magnitude
    span_tension: float  # [N] the belt's static tension (nan where no belt path exists)
    hub_force: tuple  # (x, y) [N] on the tensioner pulley
    wrap_angle: float  # [rad] on the tensioner pulley
    belt_length: float  # [m] cord-line length of the path at that arm angle
    note: str = ""

    @property
    def hub_magnitude(self) -> float:
        return float(math.hypot(*self.hub_force))

    @property
    def hub_direction(self) -> float:
        return float(math.atan2(self.hub_force[1], self.hub_force[0]))


def length_tolerance(layout, length: float) -> float:
    """[m] the belt length tolerance: ``[belt] length_tolerance_m`` if the layout has it, else
    :data:`LENGTH_TOLERANCE` of ``length``. (The longest and shortest belts are about the
    nominal length, ``[belt] length_m`` where the layout has it, else the installed path's.)"""
    given = getattr(layout.belt, "length_tolerance_m", None)
    return float(given) if given is not None else LENGTH_TOLERANCE * length


def _valid_path(layout, psi: float):
    """The cord path at arm angle ``psi``, or None where the tensioner pulley has swung
    through the belt line (no wrap, or a back-side wrap beyond half a turn)."""
    path = path_at(layout, psi)
    t = layout.tensioner_index
    wrap = path.wrap_angle[t]
    if not (np.all(np.isfinite(path.wrap_angle)) and 0.0 < wrap < math.pi):
        return None
    return path


def _position(layout, arm, label: str, psi: float, note: str = "") -> ArmPosition:
    t = layout.tensioner_index
    spring = spring_torque(arm, psi)
    path = _valid_path(layout, psi)
    installed = float(arm["installed_angle"])
    tension = math.nan
    if path is not None:
        unit = np.ones(path.n_pulleys)
        moment = _arm_moment(layout, path, unit, 0.0)  # per newton of tension
        tension = -spring / moment if moment != 0.0 else math.nan
    if not tension > 0.0:
        return ArmPosition(label, psi, psi - installed, abs(spring), math.nan, (math.nan, math.nan), math.nan,
                           math.nan if path is None else float(path.length),
                           note or "the belt does not hold the arm here (it leaves the tensioner pulley)")
    force = hub_forces(path, tension * np.ones(path.n_pulleys), 0.0)[t]
    return ArmPosition(label, psi, psi - installed, abs(spring), float(tension), (float(force[0]), float(force[1])),
                       float(path.wrap_angle[t]), float(path.length), note)


def _arm_for_length(layout, installed: float, stops, target: float):
    """Arm angle [rad] where the path is ``target`` [m] long, searched outward from the
    installed angle toward each stop on a grid, then refined (None if no valid path reaches it)."""
    from scipy.optimize import brentq

    def excess(psi):
        path = _valid_path(layout, psi)
        return None if path is None else path.length - target

    start = excess(installed)
    for stop in stops:
        previous = installed
        for psi in np.linspace(installed, stop, 101)[1:]:
            value = excess(psi)
            if value is None:
                break
            if value * start <= 0.0:
                return brentq(lambda a: excess(a), previous, psi, xtol=1e-12)
            previous = psi
    return None


def tensioner_positions(layout) -> list[ArmPosition]:
    """The tensioner position table (module docstring); empty without a tensioner."""
    from ..model.parameters import translate

    if layout.tensioner is None:
        return []
    arm = translate(layout)[0].tensioner[0]
    installed = float(arm["installed_angle"])
    sense = float(arm["spring_sense"])
    lo, hi = float(arm["stop_min"]), float(arm["stop_max"])
    free = installed + sense * float(arm["spring_preload"]) / float(arm["spring_rate"])
    rows = [_position(layout, arm, "free arm (spring torque 0)", free,
                      "" if lo <= free <= hi else "beyond the stops: the unloaded arm rests on a stop")]
    rows.append(_position(layout, arm, "installed (nominal)", installed))
    # the belt's nominal length: a data sheet's where the layout gives one, else the drawn path's
    length = getattr(layout.belt, "length_m", None) or path_at(layout, installed).length
    tolerance = length_tolerance(layout, length)
    for label, target in ((f"longest belt (+{tolerance * 1e3:.2f} mm)", length + tolerance),
                          (f"shortest belt (-{tolerance * 1e3:.2f} mm)", length - tolerance)):
        psi = _arm_for_length(layout, installed, (lo, hi), target)
        if psi is None:
            rows.append(ArmPosition(label, math.nan, math.nan, math.nan, math.nan, (math.nan, math.nan), math.nan,
                                    target, "no arm angle between the stops, with the belt on the tensioner "
                                    "pulley, fits this length"))
        else:
            rows.append(_position(layout, arm, label, psi))
    load_stop = lo if sense > 0 else hi  # away from the belt is against the spring
    rows.append(_position(layout, arm, "load stop", load_stop))
    return rows
