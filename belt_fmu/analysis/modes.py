"""Natural frequencies, damping ratios and mode shapes of a drive at its operating point.

The linearized equations of motion (:mod:`belt_fmu.analysis.linearization`),

    M q'' + G q' + K q = 0,   G = 2 M E + C_q,   K = K_q + C_q E_d + M E^2,

are a quadratic eigenproblem; as the first-order system ``x' = A x``, ``x = (q, q')``,

    A = [[0, I], [-M^-1 K, -M^-1 G]]

(M is diagonal), solved for its eigenvalues nearest zero (:func:`modes`). An eigenvalue ``lambda = -zeta w +
i w sqrt(1 - zeta^2)`` gives the natural frequency ``f = |lambda| / 2 pi`` [Hz] and damping
ratio ``zeta = -Re(lambda) / |lambda|``. Kept: the oscillating modes (``Im lambda > 0``,
``zeta <`` :data:`MAX_DAMPING_RATIO`) above :data:`MIN_FREQUENCY`. Dropped with them: the rigid-body mode of the belt
travelling around the loop and the pulley angles a velocity friction law does not hold
(eigenvalue 0), and the overdamped relative motions of belt and pulleys where the belt
sticks (large negative real eigenvalues).

Each mode is classified by where its kinetic energy is (the diagonal mass times the squared
modulus of the mode shape, for each coordinate; kinetic energy because it is local with a
diagonal mass matrix, and at a natural frequency of a lightly damped mode its peak equals
the peak strain energy): *rotational* (pulley rotations and the tensioner arm), *belt axial*
(the belt's motion along its path: with a velocity friction law the belt creeps on the
pulleys, and these heavily damped modes move it against them), the *transverse* motion of a named free span (the motion of its nodes
normal to the belt path), *wrap* (the belt's radial motion on the pulleys, against the
contact stiffness). A share of at least :data:`DOMINANT_SHARE` names the mode; otherwise
it is *mixed* and named by its two largest shares.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .linearization import linearize, motion_matrices, node_passage_rate

#: [Hz] modes below this are the rigid-body motions the linearization keeps (eigenvalue ~0)
MIN_FREQUENCY = 1.0
#: modes damped more than this are flagged heavily damped (listed, drawn lighter): a response
#: peak of such a mode is broad and low, and relative motions of belt and pulleys where friction
#: holds them (a damper, not a spring) are among them
HEAVY_DAMPING = 0.25
#: an eigenvalue oscillates if its imaginary part is at least this fraction of its modulus (a
#: real eigenvalue, an overdamped motion, has no frequency to list)
MIN_OSCILLATION = 1e-6
#: [1/s] eigenvalues are searched nearest this real shift: just left of the rigid-body
#: eigenvalues at 0, so that the shifted system is regular
SHIFT = -1.0
#: instants over one node passage period at which the modes are computed and averaged
PHASES = 4
#: extra modes computed at each instant, so that each mode of the first finds its match and a
#: mode whose mean ranks among the lowest is not lost
MATCH_MARGIN = 4
#: a mode at a later instant matches one of the first if their shapes' MAC is at least this
MIN_MAC = 0.6
#: ... and its frequency is within this fraction of the first's: the polygon moves a mode by a
#: few percent over the period, while a rotational mode's shape can resemble that of a
#: heavily damped belt-creep mode of the same pulleys 20 % higher (the two-pulley test drive:
#: the lightly damped 86 Hz mode matched a 109 Hz one at one instant of four, MAC alone)
MAX_FREQUENCY_SHIFT = 0.1
#: [1/s] below this node passage rate the belt stands still: one state, no averaging
MIN_PASSAGE_RATE = 1.0
#: times the eigenvalue search doubles its width to find the modes asked for
SEARCH_WIDENINGS = 2
#: energy share that names a mode after one group
DOMINANT_SHARE = 0.6
ROTATIONAL = "rotational"
AXIAL = "belt axial"
WRAP = "wrap"


@dataclass(frozen=True)
class Mode:
    """One natural mode. ``shape`` is the complex amplitude of every free coordinate
    (:attr:`Modes.coordinates`), scaled to a largest node displacement of 1."""

    frequency: float  # [Hz], undamped natural frequency |lambda| / 2 pi, mean over the polygon period
    damping_ratio: float  # [-], mean over the polygon period
    shape: np.ndarray
    shares: dict  # group -> kinetic energy share
    classification: str
    spread: tuple = (math.nan, math.nan)  # [Hz] least and largest frequency over the polygon period
    instants: int = 1  # instants of the period the mode was found at

    @property
    def heavily_damped(self) -> bool:
        """Damped beyond :data:`HEAVY_DAMPING`."""
        return self.damping_ratio > HEAVY_DAMPING

    @property
    def damped_frequency(self) -> float:
        """[Hz] Im(lambda) / 2 pi."""
        return self.frequency * math.sqrt(max(0.0, 1.0 - self.damping_ratio ** 2))


@dataclass(frozen=True)
class Modes:
    """Modes of a drive at an operating point, ascending in frequency."""

    point: object  # the OperatingPoint
    coordinates: np.ndarray  # generalized coordinates (belt_fmu.analysis.linearization.coordinates)
    modes: tuple[Mode, ...]
    groups: tuple[str, ...]
    arm_friction: str

    def __len__(self):
        return len(self.modes)

    def __getitem__(self, k):
        return self.modes[k]

    @property
    def frequencies(self) -> np.ndarray:
        return np.array([m.frequency for m in self.modes])

    def of_class(self, classification: str) -> list[Mode]:
        return [m for m in self.modes if m.classification == classification]


def span_label(a: str, b: str) -> str:
    """Group name of the transverse motion of the span from pulley a to b: the suffix its
    outputs carry (``span_tension_{a}_{b}``)."""
    return f"span {a}_{b}"


def node_groups(drive) -> tuple[np.ndarray, list[str]]:
    """Group of each node at the operating point: the pulley whose wrap it lies on (its
    contact), or the free span after the last wrap it passed; (group index per node, names)."""
    names = [p.name for p in drive.layout.pulleys]
    p = len(names)
    normal = drive.arrays.normal_force
    on = np.where(normal.max(axis=1) > 0.0, normal.argmax(axis=1), -1)
    n = len(on)
    if not np.any(on >= 0):
        raise ValueError("no belt node touches a pulley: the operating point has no contact")
    group = np.empty(n, dtype=np.int64)
    start = int(np.argmax(on >= 0))
    last = on[start]
    for k in range(n):
        i = (start + k) % n
        if on[i] >= 0:
            last = on[i]
            group[i] = p  # wrap
        else:
            group[i] = last  # span last -> last + 1
    labels = [span_label(names[j], names[(j + 1) % p]) for j in range(p)] + [WRAP]
    return group, labels


def _path_tangents(q) -> np.ndarray:
    """Unit tangent of the belt at each node (mean of the chords meeting there)."""
    d = np.roll(q[:, :2], -1, axis=0) - q[:, :2]
    d /= np.hypot(d[:, 0], d[:, 1])[:, None]
    t = d + np.roll(d, 1, axis=0)
    return t / np.hypot(t[:, 0], t[:, 1])[:, None]


def energy_shares(drive, mass, shape, groups, labels) -> dict:
    """Kinetic energy share of every group (module docstring) in a mode ``shape``."""
    n = drive.parameters.belt[0]["n_nodes"]
    nodes = 3 * n
    q = drive.views.q
    tangent = _path_tangents(q)
    xy = shape[:nodes].reshape(n, 3)
    along = xy[:, 0] * tangent[:, 0] + xy[:, 1] * tangent[:, 1]
    across = -xy[:, 0] * tangent[:, 1] + xy[:, 1] * tangent[:, 0]
    m = mass[:nodes].reshape(n, 3)
    energy = dict.fromkeys([ROTATIONAL, AXIAL, *labels], 0.0)
    energy[ROTATIONAL] += float(np.sum(mass[nodes:] * np.abs(shape[nodes:]) ** 2))
    energy[AXIAL] += float(np.sum(m[:, 0] * np.abs(along) ** 2))
    transverse = m[:, 1] * np.abs(across) ** 2 + m[:, 2] * np.abs(xy[:, 2]) ** 2
    for g, label in enumerate(labels):
        energy[label] += float(np.sum(transverse[groups == g]))
    total = sum(energy.values())
    return {k: v / total for k, v in energy.items()} if total > 0 else energy


def classify(shares: dict) -> str:
    """A mode's name from its energy shares (module docstring)."""
    ranked = sorted(shares.items(), key=lambda kv: -kv[1])
    if ranked[0][1] >= DOMINANT_SHARE:
        return ranked[0][0]
    return f"mixed: {ranked[0][0]} {100 * ranked[0][1]:.0f} % + {ranked[1][0]} {100 * ranked[1][1]:.0f} %"


def snapshot_modes(point, count: int, arm_friction: str = "stuck"):
    """(coordinates, mass, frequencies [Hz], damping ratios, shapes (d, m)) of the ``count``
    lowest modes of the drive's current state, ascending (:func:`modes` says how)."""
    drive = point.drive
    linear = linearize(drive, point.water_pump_torque, arm_friction)
    dofs = linear.coordinates
    mass, gyro, stiffness, _ = motion_matrices(drive, linear)
    d = len(dofs)
    a = _first_order(mass, gyro, stiffness)
    wanted = 2 * count + 2 * (len(drive.parameters.pulleys) + 2) + 16
    for _ in range(SEARCH_WIDENINGS + 1):
        values = _eigenvalues(a, wanted)
        size = np.abs(values)
        zeta = -values.real / np.maximum(size, 1e-300)
        keep = np.flatnonzero((values.imag > MIN_OSCILLATION * size) & (size > 2 * math.pi * MIN_FREQUENCY))
        if len(keep) >= count or wanted >= 2 * d - 2:
            break
        wanted = min(2 * wanted, 2 * d - 2)
    keep = keep[np.argsort(size[keep])][:count]
    shapes = np.column_stack([_eigenvector(a, values[k])[:d] for k in keep]) if len(keep) else np.zeros((d, 0))
    return dofs, mass, size[keep] / (2 * math.pi), zeta[keep], shapes


def mac(mass, a, b) -> float:
    """Modal assurance criterion of two complex shapes, mass-weighted: 1 for the same shape."""
    ab = np.vdot(a, mass * b)
    return float(abs(ab) ** 2 / (np.vdot(a, mass * a).real * np.vdot(b, mass * b).real))


def modes(point, count: int = 20, arm_friction: str = "stuck", phases: int = PHASES) -> Modes:
    """The ``count`` lowest natural modes of the drive at the operating point ``point``
    (:func:`belt_fmu.analysis.operating_point.operating_point`), ascending in frequency.

    The eigenvalues nearest :data:`SHIFT` come from ARPACK in shift-invert mode on the sparse
    first-order system (scipy.sparse.linalg.eigs): the rigid-body and overdamped eigenvalues
    found with them are dropped, and the search widens (at most :data:`SEARCH_WIDENINGS`
    times) until ``count`` modes are kept; fewer are returned if there are not so many.

    The discretized belt is a polygon: as its nodes flow round the drive, each span's free
    length and the contacts at the wraps change with the nodes' phase, periodically with the
    node passage period tau; a mode's frequency at one instant differs from its mean by up to
    the stiffness change of one element (a few percent on a coarse belt). The passage
    frequency 1/tau lies far above the modes, so what a time run shows is the mean over the
    period (averaging of a fast periodic system, Nayfeh and Mook, "Nonlinear oscillations",
    1979, ch. 5). The modes are therefore computed at ``phases`` instants over one period
    (the model running on between them), each followed from the first instant by its
    best-matching shape (:func:`mac`, among the modes within :data:`MAX_FREQUENCY_SHIFT` of its
    frequency), and their frequencies and damping ratios averaged; the
    spread over the period is kept (:attr:`Mode.spread`). Shapes are those of the first
    instant, the operating point itself, to which the drive is returned. The tangent
    matrices themselves are not averaged: a node in contact at one instant and free at the
    next would average into a contact at both."""
    drive = point.drive
    rate = node_passage_rate(drive)
    instants = phases if rate > MIN_PASSAGE_RATE else 1
    saved = drive.get_state()
    try:
        # a few more than asked for: a mode's mean over the period may rank lower than at this instant
        dofs, mass, freq, zeta, shapes = snapshot_modes(point, count + MATCH_MARGIN, arm_friction)
        groups, labels = node_groups(drive)
        seen_f = [[f] for f in freq]
        seen_z = [[z] for z in zeta]
        for _ in range(1, instants):
            point.hold(1.0 / (rate * instants))
            _, _, f_k, z_k, s_k = snapshot_modes(point, count + MATCH_MARGIN, arm_friction)
            for r in range(len(freq)):
                scores = [mac(mass, shapes[:, r], s_k[:, c]) if abs(f_k[c] - freq[r]) <= MAX_FREQUENCY_SHIFT * freq[r]
                          else 0.0 for c in range(len(f_k))]
                if scores and max(scores) >= MIN_MAC:
                    best = int(np.argmax(scores))
                    seen_f[r].append(f_k[best])
                    seen_z[r].append(z_k[best])
    finally:
        drive.set_state(saved)
    n = drive.parameters.belt[0]["n_nodes"]
    found = []
    for r in range(len(freq)):
        shape = shapes[:, r]
        xy = shape[:3 * n].reshape(n, 3)[:, :2]
        j = np.unravel_index(np.argmax(np.abs(xy)), xy.shape)
        # phase: the instant of largest node displacement, so the real part draws the mode
        shape = shape / xy[j]
        shares = energy_shares(drive, mass, shape, groups, labels)
        found.append(Mode(float(np.mean(seen_f[r])), float(np.mean(seen_z[r])), shape, shares, classify(shares),
                          (float(np.min(seen_f[r])), float(np.max(seen_f[r]))), len(seen_f[r])))
    found = sorted(found, key=lambda m: m.frequency)[:count]
    return Modes(point, dofs, tuple(found), tuple([ROTATIONAL, AXIAL, *labels]), arm_friction)


def _first_order(mass, gyro, stiffness):
    """A = [[0, I], [-M^-1 K, -M^-1 G]] as a sparse matrix (CSC)."""
    from scipy import sparse

    d = len(mass)
    inverse = sparse.diags(1.0 / mass)
    return sparse.bmat([[None, sparse.identity(d)], [-inverse @ stiffness, -inverse @ gyro]], format="csc")


def _eigenvalues(a, wanted: int) -> np.ndarray:
    """``wanted`` eigenvalues of ``a`` nearest :data:`SHIFT` (ARPACK, shift-invert), from one
    fixed start vector: from ARPACK's own random one, which changes from call to call, the same
    matrix gave frequencies differing by 1e-4 and a heavily damped mode's damping ratio by a
    tenth of itself (``a`` is far from normal, so its eigenvalues are that sensitive)."""
    from scipy.sparse.linalg import eigs

    start = np.random.default_rng(0).standard_normal(a.shape[0])
    return eigs(a, k=wanted, sigma=SHIFT, which="LM", tol=1e-10, v0=start, return_eigenvectors=False)


def _eigenvector(a, value) -> np.ndarray:
    """The eigenvector of ``a`` to its eigenvalue ``value`` by inverse iteration (two solves
    with the sparse LU of A - value I): much cheaper than ARPACK's Ritz vectors of every
    eigenvalue it returns."""
    from scipy import sparse
    from scipy.sparse.linalg import splu

    size = a.shape[0]
    lu = splu((a - value * sparse.identity(size, format="csc")).astype(complex).tocsc())
    x = np.random.default_rng(0).standard_normal(size) + 0j
    for _ in range(2):
        x = lu.solve(x)
        x /= np.linalg.norm(x)
    return x


def report(result: Modes, table, count: int | None = None) -> str:
    """The modes as a text table; ``table(header, rows)`` formats it."""
    rows = []
    for k, mode in enumerate(result.modes[:count]):
        spread = "-" if math.isnan(mode.spread[0]) else f"{mode.spread[0]:.1f} - {mode.spread[1]:.1f}"
        rows.append([str(k + 1), f"{mode.frequency:.2f}", spread,
                     f"{100 * mode.damping_ratio:.2f}" + (" *" if mode.heavily_damped else ""),
                     mode.classification])
    return table(["mode", "frequency [Hz]", "over polygon period", "damping [%]",
                  "classification (kinetic energy)"], rows)
