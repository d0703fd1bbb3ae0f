"""Engineering outputs of a drive state: span tensions, hub forces, speeds, slip.

The output registry, :data:`DRIVE_OUTPUTS`, :data:`PULLEY_OUTPUTS` and :data:`SPAN_OUTPUTS`,
is the one place an output is declared: its name (or the prefix of a pulley's or a span's),
its unit, its description and the statistics a sweep reports of it. Generated from it:
the outputs of a drive in order (:func:`output_specs`: the results table, the CLI, the FMU's
variables and units), the positions the compiled :func:`evaluate_outputs` writes each one to
(the constants below), and the sweep's metric names
(:func:`belt_fmu.postprocess.cycle_metric_specs`). The output vector holds the drive
outputs, then each pulley's block in travel order, then each span's block; span j runs from
pulley j to pulley j + 1 (cyclic).

Sign conventions (README): speeds are positive in each pulley's running direction;
``crank_torque`` is the torque the belt drive loads the crankshaft with, positive against
its rotation; hub forces are the force of the belt on the pulley (its bearing load in
steady running) in the drawing's x-y frame; the tensioner angle is the polar angle of the
tensioner pulley centre about the arm pivot, CCW positive.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .drive import update_pulley_centers
from .geometry import BeltPath


@dataclass(frozen=True)
class Output:
    """One kind of output. ``description`` may name ``{headline}`` (the headline pulley),
    ``{pulley}`` (a pulley's output) or ``{a}`` and ``{b}`` (a span's ends). ``statistics``:
    what a sweep reports of it over the evaluated engine cycles ("min", "max", "mean").
    ``averaged``: with ``[drive] output_mode = "average"`` it is reported as its mean over the
    last communication interval (a quantity whose mean means something: forces, torques,
    tensions, speeds, angles); False for a value whose mean would not (a counter, a flag),
    reported as sampled."""

    key: str
    unit: str
    description: str
    statistics: tuple[str, ...] = ()
    averaged: bool = True


#: one value per drive, named by its key
DRIVE_OUTPUTS = (
    Output("tensioner_angle", "rad", "tensioner arm angle: polar angle of the tensioner pulley centre about "
                                     "the pivot, CCW"),
    Output("tensioner_angle_rel", "rad", "tensioner arm angle relative to the installed position, CCW"),
    Output("bearing_force", "N", "hub (bearing) load magnitude of the headline pulley '{headline}'",
           ("max", "min", "mean")),
    Output("crank_torque", "N.m", "torque the belt drive loads the crankshaft with, positive against its "
                                  "rotation", ("mean", "min", "max")),
    Output("belt_speed", "m/s", "mean belt (cord line) speed along its path"),
)
#: one value per pulley, named ``{key}_{pulley}``
PULLEY_OUTPUTS = (
    Output("speed", "rad/s", "speed of pulley '{pulley}', positive in its running direction"),
    Output("angle", "rad", "rotation angle of pulley '{pulley}' since the start, positive in its running "
                           "direction"),
    Output("slip", "1", "speed loss of pulley '{pulley}' relative to the crankshaft by the effective-radius "
                        "ratio, 1 - w r / (w_crank r_crank)", ("mean", "max")),
    Output("hub_force_x", "N", "x component of the belt's force on pulley '{pulley}'"),
    Output("hub_force_y", "N", "y component of the belt's force on pulley '{pulley}'"),
    Output("hub_force", "N", "magnitude of the belt's force on pulley '{pulley}'"),
)
#: one value per free span, named ``{key}_{a}_{b}`` for the span from pulley a to pulley b
SPAN_OUTPUTS = (
    Output("span_tension", "N", "belt tension in the free span {a} -> {b}", ("min", "max")),
)


def _position(outputs, key: str) -> int:
    return [output.key for output in outputs].index(key)


# Where evaluate_outputs writes each output, generated from the registry: the drive outputs
# first, then a block of PULLEY_STRIDE per pulley, then a block of SPAN_STRIDE per span.
TENSIONER_ANGLE = _position(DRIVE_OUTPUTS, "tensioner_angle")
TENSIONER_ANGLE_REL = _position(DRIVE_OUTPUTS, "tensioner_angle_rel")
BEARING_FORCE = _position(DRIVE_OUTPUTS, "bearing_force")
CRANK_TORQUE = _position(DRIVE_OUTPUTS, "crank_torque")
BELT_SPEED = _position(DRIVE_OUTPUTS, "belt_speed")
PULLEY_BLOCK = len(DRIVE_OUTPUTS)
PULLEY_STRIDE = len(PULLEY_OUTPUTS)
SPEED = _position(PULLEY_OUTPUTS, "speed")
ANGLE = _position(PULLEY_OUTPUTS, "angle")
SLIP = _position(PULLEY_OUTPUTS, "slip")
HUB_FORCE_X = _position(PULLEY_OUTPUTS, "hub_force_x")
HUB_FORCE_Y = _position(PULLEY_OUTPUTS, "hub_force_y")
HUB_FORCE = _position(PULLEY_OUTPUTS, "hub_force")
SPAN_STRIDE = len(SPAN_OUTPUTS)
SPAN_TENSION = _position(SPAN_OUTPUTS, "span_tension")
# which outputs the "average" output mode averages, per block (constants to the kernels)
DRIVE_AVERAGED = tuple(output.averaged for output in DRIVE_OUTPUTS)
PULLEY_AVERAGED = tuple(output.averaged for output in PULLEY_OUTPUTS)
SPAN_AVERAGED = tuple(output.averaged for output in SPAN_OUTPUTS)


@njit(cache=True, _nrt=False)
def output_count(p):
    """Length of the output vector of a drive with ``p`` pulleys."""
    return PULLEY_BLOCK + p * (PULLEY_STRIDE + SPAN_STRIDE)


@njit(cache=True, _nrt=False, inline="always")
def is_averaged(i, p):
    """Whether output ``i`` of a drive with ``p`` pulleys is averaged (:attr:`Output.averaged`)."""
    if i < PULLEY_BLOCK:
        return DRIVE_AVERAGED[i]
    if i < PULLEY_BLOCK + p * PULLEY_STRIDE:
        return PULLEY_AVERAGED[(i - PULLEY_BLOCK) % PULLEY_STRIDE]
    return SPAN_AVERAGED[(i - PULLEY_BLOCK - p * PULLEY_STRIDE) % SPAN_STRIDE]


@njit(cache=True, _nrt=False, inline="always")
def accumulate_outputs(integral, sample, weight):
    """``integral += weight * sample``: one quadrature term of the outputs' running
    time-integral [output unit x s]."""
    for i in range(integral.shape[0]):
        integral[i] += weight * sample[i]


@njit(cache=True, _nrt=False, inline="always")
def mean_outputs(integral, end_weight, sample, duration, out, p):
    """``out``: each averaged output's mean over ``duration`` [s], ``(integral + end_weight x
    sample) / duration`` (the integral completed by its last quadrature term, the outputs
    ``sample`` at the interval's end weighing ``end_weight`` [s]), the others as sampled.
    ``out`` may be ``sample``."""
    per_duration = 1.0 / duration
    for i in range(out.shape[0]):
        out[i] = (integral[i] + end_weight * sample[i]) * per_duration if is_averaged(i, p) else sample[i]


def spans(pulley_names) -> list[tuple[str, str]]:
    """The free spans as (from, to) pulley names, in belt travel order."""
    names = list(pulley_names)
    return list(zip(names, [*names[1:], names[0]]))


def pulley_output_name(key: str, pulley: str) -> str:
    """Name of the output ``key`` (a :data:`PULLEY_OUTPUTS` key) of pulley ``pulley``."""
    return f"{key}_{pulley}"


def span_output_name(key: str, a: str, b: str) -> str:
    """Name of the output ``key`` (a :data:`SPAN_OUTPUTS` key) of the span from ``a`` to ``b``."""
    return f"{key}_{a}_{b}"


def statistic_name(output_name: str, statistic: str) -> str:
    """Name of the sweep metric ``statistic`` (one of ``Output.statistics``) of the output
    ``output_name``: ``bearing_force_max``, ``slip_alternator1_mean``."""
    return f"{output_name}_{statistic}"


@dataclass(frozen=True)
class OutputSpec:
    """One output of a drive: its name, unit and description, the registry entry it comes
    from, the pulley or span it belongs to (else None) and its position in the output vector
    (``BeltDrive.output_values``)."""

    name: str
    unit: str
    description: str
    output: Output
    pulley: str | None = None
    span: tuple[str, str] | None = None
    index: int = 0


def output_specs(pulley_names, headline: str) -> list[OutputSpec]:
    """All outputs of a drive with these pulleys (in travel order) and headline pulley, in the
    order of the output vector."""
    specs = [(output, output.key, {}, None, None) for output in DRIVE_OUTPUTS]
    for name in pulley_names:
        specs += [(output, pulley_output_name(output.key, name), {"pulley": name}, name, None)
                  for output in PULLEY_OUTPUTS]
    for a, b in spans(pulley_names):
        specs += [(output, span_output_name(output.key, a, b), {"a": a, "b": b}, None, (a, b))
                  for output in SPAN_OUTPUTS]
    return [OutputSpec(name, output.unit, output.description.format(headline=headline, **fields), output, pulley,
                       span, index)
            for index, (output, name, fields, pulley, span) in enumerate(specs)]


def fmu_output_specs(pulley_names, headline: str, water_pump: str | None, ports=(),
                     torque_crank: str | None = None) -> list[OutputSpec]:
    """The FMU's output variables: every output of :func:`output_specs` and, under the names
    a system model connects them by (second names of the same values):

    * ``water_pump_speed``, for a drive with a water pump (the pump pulley's speed);
    * ``{pulley}_speed`` and ``{pulley}_angle`` of each pulley in ``ports`` (the accessories
      whose load torque is an input, :func:`belt_fmu.model.inputs.input_specs`);
    * ``crank_speed`` and ``crank_angle`` of the crank pulley ``torque_crank``, when the
      engine torque drives it.
    """
    specs = output_specs(pulley_names, headline)
    by_name = {spec.name: spec for spec in specs}
    aliases = []
    if water_pump is not None:
        aliases.append(("water_pump_speed", "speed", water_pump, "water-pump speed in its running direction"))
    for name in ports:
        aliases.append((f"{name}_speed", "speed", name, f"speed of accessory '{name}' (its port), positive in its "
                        "running direction"))
        aliases.append((f"{name}_angle", "angle", name, f"rotation angle of accessory '{name}' (its port) since "
                        "the start, positive in its running direction"))
    if torque_crank is not None:
        aliases.append(("crank_speed", "speed", torque_crank, "crank speed in its running direction (the engine "
                        "torque drives the crank)"))
        aliases.append(("crank_angle", "angle", torque_crank, "crank rotation angle since the start, positive "
                        "in its running direction"))
    for alias, key, pulley, description in aliases:
        spec = by_name[pulley_output_name(key, pulley)]
        specs.append(OutputSpec(alias, spec.unit, description, spec.output, pulley, None, spec.index))
    return specs


def span_elements(q: np.ndarray, path: BeltPath) -> list[np.ndarray]:
    """Indices of the elements whose mean axial force :func:`evaluate_outputs` reports as
    each span's tension (:func:`span_tension`), for analysis. Span j runs from pulley j to
    j+1 on ``path`` (built for the current pulley centres)."""
    p = path.n_pulleys
    members = np.empty(q.shape[0], dtype=np.int64)
    first_member = np.zeros(p, dtype=np.int64)
    senses = path.senses.astype(float)
    elements = []
    for j in range(p):
        ends = span_end_points(path.centers, path.radii, senses, j, (j + 1) % p)
        _, count = span_tension(q, np.zeros(q.shape[0]), *ends, members, first_member, j)
        elements.append(members[:count].copy())
    return elements


@njit(cache=True, _nrt=False)
def effective_radius(radius, chord):
    """Radius [m] at which a belt of chords ``chord`` long runs on a cord circle ``radius``:
    each chord spans 2 asin(chord / 2 radius) of the pulley, so belt speed / pulley speed =
    chord / that angle, a little less than the radius (0.4 % for 9 mm chords on a 29 mm
    alternator). Slips measured with it show the belt's creep and slip, not the polygon."""
    return chord / (2.0 * np.arcsin(0.5 * chord / radius))


@njit(cache=True, _nrt=False)
def span_end_points(centers, radii, senses, a, b):
    """Departure point (x0, y0) on pulley a and arrival point (x1, y1) on pulley b [m] of the
    span a -> b, for cord circles ``centers``, ``radii`` and wrap ``senses`` (the one formula
    of :mod:`belt_fmu.model.geometry`)."""
    dx = centers[b, 0] - centers[a, 0]
    dy = centers[b, 1] - centers[a, 1]
    dist = np.sqrt(dx * dx + dy * dy)
    s_a = senses[a]
    s_b = senses[b]
    rho_a = radii[a]
    rho_b = radii[b]
    k = rho_a - s_a * s_b * rho_b
    alpha = np.arctan2(dy, dx) - s_a * np.arccos(min(max(k / dist, -1.0), 1.0))
    ca, sa = np.cos(alpha), np.sin(alpha)
    flip = 1.0 if s_a == s_b else -1.0
    return (centers[a, 0] + rho_a * ca, centers[a, 1] + rho_a * sa,
            centers[b, 0] + flip * rho_b * ca, centers[b, 1] + flip * rho_b * sa)


@njit(cache=True, _nrt=False, error_model="numpy")
def evaluate_outputs(parameters, s, w, out):
    """All outputs of :func:`output_specs`, at their positions, into ``out`` (SI units).

    Reads the state views ``s`` and the diagnostics of the last step in ``w``.
    """
    roles = parameters.roles[0]
    pulleys = parameters.pulleys
    p = pulleys.shape[0]
    n = s.q.shape[0]
    crank = roles.crank
    update_pulley_centers(parameters, s, w)
    t = roles.tensioner
    out[TENSIONER_ANGLE] = s.arm[0] if t >= 0 else 0.0
    out[TENSIONER_ANGLE_REL] = s.arm[0] - parameters.tensioner[0].installed_angle if t >= 0 else 0.0
    h = roles.headline
    out[BEARING_FORCE] = np.sqrt(w.hub_force[h, 0] ** 2 + w.hub_force[h, 1] ** 2)
    out[CRANK_TORQUE] = -pulleys[crank].sense * w.belt_torque[crank]
    speed = 0.0
    for i in range(n):
        speed += s.u[i, 0] * w.element_direction[i, 0] + s.u[i, 1] * w.element_direction[i, 1]
    out[BELT_SPEED] = speed / n
    l0 = parameters.belt[0].rest_length
    reference = pulleys[crank].sense * s.omega[crank] * effective_radius(pulleys[crank].radius, l0)
    for j in range(p):
        k = PULLEY_BLOCK + j * PULLEY_STRIDE
        running = pulleys[j].sense * s.omega[j]
        out[k + SPEED] = running
        out[k + ANGLE] = pulleys[j].sense * s.theta[j]
        out[k + SLIP] = 1.0 - running * effective_radius(pulleys[j].radius, l0) / reference if reference != 0.0 else 0.0
        out[k + HUB_FORCE_X] = w.hub_force[j, 0]
        out[k + HUB_FORCE_Y] = w.hub_force[j, 1]
        out[k + HUB_FORCE] = np.sqrt(w.hub_force[j, 0] ** 2 + w.hub_force[j, 1] ** 2)
    # span tensions: mean axial force of the elements in the middle of each span
    radii, senses = pulleys.radius, pulleys.sense
    for j in range(p):
        b = j + 1 if j + 1 < p else 0
        x0, y0, x1, y1 = span_end_points(w.centers, radii, senses, j, b)
        k = PULLEY_BLOCK + p * PULLEY_STRIDE + j * SPAN_STRIDE
        out[k + SPAN_TENSION] = span_tension(s.q, w.axial_force, x0, y0, x1, y1, w.span_members,
                                             w.span_first_member, j)[0]


#: a span's tension is the mean axial force of the elements whose midpoints lie in this part
#: of its length (the middle half): away from the wraps, where the tension changes, and long
#: enough to average over the polygon effect
SPAN_WINDOW = (0.25, 0.75)
#: ... and within SPAN_OFFSET_FRACTION of the span length plus SPAN_OFFSET_MIN [m] of the
#: straight span line: a vibrating or sagging span keeps its own elements, elements of the
#: other spans and of the wraps stay out, and a short span still finds some (a choice of
#: this model, not a quantity from a source)
SPAN_OFFSET_FRACTION = 0.05
SPAN_OFFSET_MIN = 2e-3


@njit(cache=True, _nrt=False, inline="always")
def _element_place(q, e, x0, y0, dx, dy, inv_length2, inv_length):
    """(along, off, centre): where element e's midpoint lies relative to the span from (x0, y0)
    along (dx, dy): the fraction of the span's length along it, the distance [m] from its
    line, the squared distance [m^2] from its midpoint."""
    f = e + 1 if e + 1 < q.shape[0] else 0
    mx = 0.5 * (q[e, 0] + q[f, 0]) - x0
    my = 0.5 * (q[e, 1] + q[f, 1]) - y0
    return ((mx * dx + my * dy) * inv_length2, abs(mx * dy - my * dx) * inv_length,
            (mx - 0.5 * dx) ** 2 + (my - 0.5 * dy) ** 2)


@njit(cache=True, _nrt=False, error_model="numpy")
def span_tension(q, axial_force, x0, y0, x1, y1, members, first_member, span):
    """Tension [N] of the free span from (x0, y0) to (x1, y1): the mean axial force of the
    elements whose midpoints lie in its middle (:data:`SPAN_WINDOW`, within the offset
    :data:`SPAN_OFFSET_FRACTION` x length + :data:`SPAN_OFFSET_MIN` of the span line;
    averaging there smooths the polygon effect); a span too short to hold one there reports
    the element nearest its midpoint.

    The middle elements are consecutive along the belt and move by about one per element the
    belt travels, so the search starts where they began when the span was last measured,
    ``first_member[span]`` (updated), and walks the belt from there instead of testing every
    element: in the run of elements through the span's middle (off its line by at most half
    its length, where a vibrating span's elements stay), from its start. Outputs computed
    at every step (averaged outputs) then cost a few elements per span, not the belt's
    length; the sum runs from the run's first element, so the tension does not depend on
    where the search started.
    The elements used go to ``members[:count]``; returns (tension, count), NaN for a span
    without geometry (non-finite state)."""
    n = q.shape[0]
    dx = x1 - x0
    dy = y1 - y0
    length2 = dx * dx + dy * dy
    if not length2 > 0.0:
        return np.nan, 0
    length = np.sqrt(length2)
    inv_length2 = 1.0 / length2  # (multiplications in the loops over elements, not divisions)
    inv_length = 1.0 / length
    tolerance = SPAN_OFFSET_FRACTION * length + SPAN_OFFSET_MIN
    band = 0.5 * length + tolerance
    start = min(max(first_member[span], 0), n - 1)
    found = -1
    for d in range(n):  # start, start - 1, start + 1, start - 2, ...: every element once
        e = (start - (d + 1) // 2 if d % 2 else start + d // 2) % n
        along, off, _ = _element_place(q, e, x0, y0, dx, dy, inv_length2, inv_length)
        if SPAN_WINDOW[0] < along < SPAN_WINDOW[1] and off < tolerance:
            found = e
            break
    if found < 0:
        nearest = 0
        nearest_dist = np.inf
        for e in range(n):
            centre = _element_place(q, e, x0, y0, dx, dy, inv_length2, inv_length)[2]
            if centre < nearest_dist:
                nearest_dist = centre
                nearest = e
        members[0] = nearest
        first_member[span] = nearest
        return axial_force[nearest], 1
    first = found
    for _ in range(n - 1):  # back to the start of the run through the middle
        e = (first - 1) % n
        along, off, _ = _element_place(q, e, x0, y0, dx, dy, inv_length2, inv_length)
        if not (SPAN_WINDOW[0] < along < SPAN_WINDOW[1] and off < band) or e == found:
            break
        first = e
    first_member[span] = first
    total = 0.0
    count = 0
    e = first
    for _ in range(n):
        along, off, _ = _element_place(q, e, x0, y0, dx, dy, inv_length2, inv_length)
        if not (SPAN_WINDOW[0] < along < SPAN_WINDOW[1] and off < band):
            break
        if off < tolerance:
            total += axial_force[e]
            members[count] = e
            count += 1
        e = e + 1 if e + 1 < n else 0
    return total / count, count
