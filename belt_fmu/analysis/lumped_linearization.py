"""The lumped model's step, linearized about its steady running state, for the harmonic response.

The lumped model (:mod:`belt_fmu.model.lumped`) advances its state ``x`` (the state vector and
what its work buffer carries from one step to the next) by one step of ``dt`` at the crank
speed ``w_c`` and the water-pump torque ``Q_p`` held over the step:
``x_(k+1) = F(x_k, w_c, Q_p)``, ``y_(k+1) = H(x_k, w_c, Q_p)`` its outputs after the step.
About the steady running state the step is linear,

    dx_(k+1) = A dx_k + b_c dw_c + b_p dQ_p + b_a dT_a,    dy_(k+1) = C dx_k + ...,

with ``T_a`` a torque on the tensioner arm (the spring's preload moved), the input that the
arm's Coulomb friction enters by (:func:`belt_fmu.analysis.arm_friction.stick_slip`). The
columns are central differences of the compiled step itself, so the linear model is the time
domain's own, creep on the wraps and sliding arcs included; the arm's friction is left out
(its levels set to 0) and added by the response. A harmonic input ``u_k = Re(U e^{i w k dt})``
gives the steady response ``X = (z I - A)^-1 b U``, ``z = e^{i w dt}`` (the z-transform of
the linear recurrence; Franklin, Powell and Workman, "Digital control of dynamic systems",
1998, chapter 4), and the outputs ``Y = (C X + d U) / z``.

The step is :data:`STEP` long: short against the periods of the excitation (at 100 Hz a
100th), so that the discrete frequency response is the continuous one within 0.01 % in
frequency, as the sweep's runs step at their output interval.

Components of ``x`` that no step reads before it writes them (the Newton solve's scratch)
give zero columns and are dropped: the built-in drive keeps 266 of its 557 numbers. A drive
linearized again (the next speed of a response or a Campbell diagram) differences only the
components the last linearization kept, after one step from the state with all the others
moved at once has given the unmoved step's bits: what a step does not read cannot change it
(were one read, every column is differenced again).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
from scipy.linalg import matrix_balance, rsf2csf, schur
from scipy.linalg.lapack import ztrtrs


#: [s] the step the model is linearized over (module docstring)
STEP = 1e-4
#: relative size of the central differences' perturbation (of a component's magnitude, at
#: least 1e-3). The idlers carry almost no torque, and the creep speed of a sliding arc,
#: ``|q| |T_j - T_(j-1)| / EA``, has a kink where the tension difference is zero: at 1e-6
#: the differences straddled it at some speeds and not at their neighbours' (the arm's
#: receptance jumped by 4 % from one speed to the next); at 1e-4 and 1e-3 the response is
#: smooth in speed, and the two agree within 1 % (built-in drive, +-40 rpm, 700-950 rpm)
PERTURBATION = 1e-4

#: drive -> the components of its x (positions in ``(y, work)``) its last linearization kept
_LAST_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class LumpedLinearization:
    """The linear step of a lumped drive about its steady state (module docstring); ``x`` the
    kept components of the drive's ``(y, work)``."""

    dt: float  # [s] the step
    a: np.ndarray  # (m, m)
    inputs: dict  # name -> (b (m,), d (q,)): "crank_speed" [per rad/s], "water_pump_torque", "arm_torque" [per N m]
    c: np.ndarray  # (q, m) the outputs after a step per state component before it
    outputs: np.ndarray  # (q,) the outputs at the steady state
    arm: int | None  # index in x of the arm angle
    kept: np.ndarray  # (m,) position of each component of x in the drive's (y, work)


def linearize_lumped(drive, crank_speed: float, water_pump_torque: float,
                     arm_friction: str | float = "sliding") -> LumpedLinearization:
    """The step of the lumped ``drive`` (a :class:`~belt_fmu.model.lumped_system.LumpedDrive`,
    reset to its steady running state at ``crank_speed`` [rad/s] and ``water_pump_torque``
    [N m]) linearized there. ``arm_friction``: "sliding", its arm's Coulomb friction left out;
    "stuck", kept (its regularized law's slope at rest); a number, left out and that viscous
    damping [N m s/rad] added to the arm's damper. The drive's state is restored afterwards."""
    saved = drive.get_state()
    tensioner = drive.parameters.tensioner
    levels = (float(tensioner[0]["friction_away"]), float(tensioner[0]["friction_toward"]))
    damper = float(tensioner[0]["damping"])
    spring = float(tensioner[0]["spring_preload"])
    x, outputs = drive.carried, drive.output_values  # what a step moves, and its outputs
    x0 = x.copy()
    advance = drive.stepper(STEP)

    def step(components=None, delta=0.0, crank=crank_speed, pump=water_pump_torque, preload=spring):
        """One step from x0 with ``delta`` added to its ``components``, at these inputs and
        spring preload: its end in ``x``, its outputs in ``outputs``."""
        x[:] = x0
        if components is not None:
            x[components] += delta
        if preload != spring:
            tensioner[0]["spring_preload"] = preload
        advance(crank, pump)
        if preload != spring:
            tensioner[0]["spring_preload"] = spring

    plus_x, plus_y = np.empty_like(x), np.empty_like(outputs)

    def central(h, change):
        """Central differences of (x after a step, outputs) in a change ``h`` of what
        ``change(delta)`` (the keyword arguments of ``step``) moves."""
        step(**change(h))
        plus_x[:], plus_y[:] = x, outputs
        step(**change(-h))
        return (plus_x - x) / (2 * h), (plus_y - outputs) / (2 * h)

    try:
        if arm_friction != "stuck":
            tensioner[0]["friction_away"] = tensioner[0]["friction_toward"] = 0.0
        if not isinstance(arm_friction, str):
            tensioner[0]["damping"] = damper + float(arm_friction)
        scale = np.maximum(np.abs(x0), 1e-3)
        used = drive.in_use  # x's values the drive has (ascending); no step reads or writes the others
        differenced = _components_read(step, x, outputs, scale, used, _LAST_KEPT.get(drive))
        a = np.zeros((used.size, used.size))  # rows and columns: x's values at used
        c = np.zeros((outputs.size, used.size))
        for k, i in zip(np.searchsorted(used, differenced), differenced):
            moved, c[:, k] = central(PERTURBATION * scale[i], lambda d, i=i: {"components": i, "delta": d})
            a[:, k] = moved[used]
        inputs = {
            "crank_speed": central(PERTURBATION * max(abs(crank_speed), 1.0),
                                   lambda d: {"crank": crank_speed + d}),
            "water_pump_torque": central(PERTURBATION * max(abs(water_pump_torque), 1.0),
                                         lambda d: {"pump": water_pump_torque + d}),
        }
        arm = None
        if drive.layout.tensioner is not None:
            # a torque T on the arm: the spring's preload moved by T / spring_sense
            sense = float(tensioner[0]["spring_sense"])
            inputs["arm_torque"] = central(PERTURBATION * max(abs(spring), 1.0),
                                           lambda d: {"preload": spring + d / sense})
            arm = drive.state_offset("arm")  # its angle
    finally:
        tensioner[0]["spring_preload"] = spring
        tensioner[0]["friction_away"], tensioner[0]["friction_toward"] = levels
        tensioner[0]["damping"] = damper
        drive.set_state(saved)
    # keep the components some step reads: their columns are not zero
    read = np.flatnonzero(np.any(a != 0.0, axis=0) | np.any(c != 0.0, axis=0))
    kept = used[read]
    _LAST_KEPT[drive] = kept
    arm_index = None
    if arm is not None:
        if arm not in kept:
            raise ArithmeticError("the arm angle does not enter the lumped model's step")
        arm_index = int(np.searchsorted(kept, arm))
    return LumpedLinearization(STEP, a[np.ix_(read, read)],
                               {name: (b[kept], d) for name, (b, d) in inputs.items()},
                               c[:, read], drive.output_values.copy(), arm_index, kept)


def _components_read(step, x, outputs, scale: np.ndarray, everything: np.ndarray,
                     candidates: np.ndarray | None) -> np.ndarray:
    """The components of the drive's ``x`` to difference: ``candidates`` (the last
    linearization's kept ones) if a ``step`` with all the others in use (``everything``; the
    work record's room for more pulleys is not) moved by their perturbation, alternately up
    and down, gives the bits (``x`` and ``outputs``) of the unmoved step (module docstring);
    else all."""
    if candidates is None:
        return everything
    others = np.setdiff1d(everything, candidates)
    if others.size == 0:
        return everything
    signs = np.where(np.arange(others.size) % 2 == 0, 1.0, -1.0)
    step()
    still = np.concatenate([x, outputs])
    step(others, signs * PERTURBATION * scale[others])
    if np.array_equal(still, np.concatenate([x, outputs])):
        return candidates
    return everything


def one_blas_thread():
    """A context in which numpy's and scipy's BLAS run on one thread: the lumped model's
    solves are small (a few hundred unknowns), and OpenBLAS's threads made its response six
    times slower on two cores (0.18 against 1.15 s, built-in drive, 60 speeds)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


class Resolvent:
    """``(z I - A)^-1`` of a :class:`LumpedLinearization` at any frequency, for its inputs'
    responses (module docstring), from one factorization. A is balanced, ``B = T^-1 A T``
    with T a permutation times a diagonal scaling (Parlett and Reinsch, "Balancing a matrix
    for calculation of eigenvalues and eigenvectors", Numer. Math. 13, 1969): the permutation
    makes B upper triangular but for a core block (its components that feed back on
    themselves: 66 of 214 on the built-in drive), the scaling evens the state's mix of
    angles, speeds and tensions (A's norm of about 1e7 became about 20). The core's complex
    Schur form ``Q T_c Q^H`` (Golub and Van Loan, "Matrix computations", 4th ed. 2013,
    section 7.1) makes all of B triangular, ``B = U R U^H`` with U the identity but for Q on
    the core. Each frequency is then one triangular solve,

        X = T U (z I - R)^-1 U^H T^-1 b,

    about 0.03 ms against 0.8 ms for a factorization of ``z I - A``."""

    def __init__(self, linear: LumpedLinearization):
        balanced, (scale, order) = matrix_balance(linear.a, separate=True)  # (T y)[order[k]] = scale[k] y[k]
        below = np.nonzero(np.tril(balanced, -1))
        low, high = (int(below[1].min()), int(below[0].max()) + 1) if below[0].size else (0, 0)
        core = slice(low, high)
        triangle = balanced.astype(complex)
        if high > low:
            triangle[core, core], q = rsf2csf(*schur(balanced[core, core]))  # real, then complex: the faster
            triangle[:low, core] = triangle[:low, core] @ q
            triangle[core, high:] = q.conj().T @ triangle[core, high:]
        else:
            q = np.zeros((0, 0))
        self.linear = linear
        self._core, self._q, self._scale, self._order = core, q, scale, order
        self._eigenvalues = np.diag(triangle).copy()
        self._shifted = np.asfortranarray(-triangle)  # z I - R: its diagonal set per frequency
        self._inputs = {name: self._forward(b) for name, (b, _) in linear.inputs.items()}  # U^H T^-1 b
        if linear.arm is not None:  # the arm angle's row of T U
            k = int(np.flatnonzero(order == linear.arm)[0])
            self._arm_row = np.zeros(len(order), dtype=complex)
            if low <= k < high:
                self._arm_row[core] = scale[k] * q[k - low]
            else:
                self._arm_row[k] = scale[k]

    def _forward(self, b: np.ndarray) -> np.ndarray:
        """``U^H T^-1 b``."""
        c = (b[self._order] / self._scale).astype(complex)
        c[self._core] = self._q.conj().T @ c[self._core]
        return c

    def _back(self, y: np.ndarray) -> np.ndarray:
        """``T U y`` (columns)."""
        w = y.copy()
        w[self._core] = self._q @ y[self._core]
        x = np.empty_like(w)
        x[self._order] = self._scale[:, None] * w
        return x

    def _solve(self, omega: float, names) -> tuple:
        """(z, (z I - R)^-1 U^H T^-1 b for each input of ``names``, columns)."""
        z = np.exp(1j * omega * self.linear.dt)
        shifted = self._shifted
        np.fill_diagonal(shifted, z - self._eigenvalues)
        solved, info = ztrtrs(shifted, np.column_stack([self._inputs[name] for name in names]))
        if info != 0:
            raise ArithmeticError(f"the lumped model's step has an eigenvalue at {omega:g} rad/s")
        return z, solved

    def respond(self, omega: float, *names: str) -> list[tuple]:
        """(X (m,), Y (q,)) complex amplitudes of the state and the outputs for a unit harmonic
        amplitude at ``omega`` [rad/s] of each input of ``names`` (module docstring)."""
        z, solved = self._solve(omega, names)
        states = self._back(solved)
        outputs = self.linear.c @ states
        return [(states[:, k], (outputs[:, k] + self.linear.inputs[name][1]) / z) for k, name in enumerate(names)]

    def arm(self, omega: float, name: str) -> complex:
        """The arm angle's complex amplitude for a unit harmonic amplitude at ``omega`` of the
        input ``name``."""
        _, solved = self._solve(omega, (name,))
        return complex(self._arm_row @ solved[:, 0])


#: [Hz] modes below this are the step's integrators (the pulley angles) and creeps
MIN_FREQUENCY = 1.0


def natural_modes(linear: LumpedLinearization, drive, count: int) -> tuple:
    """The ``count`` lowest oscillating modes of the linearized step, ascending
    (:class:`belt_fmu.analysis.modes.Mode`: no shape, no polygon spread). An eigenvalue ``mu`` of A is
    the continuous ``s = ln(mu) / dt`` (the step's map over dt), kept if it oscillates
    (``Im s > 0``) between :data:`MIN_FREQUENCY` and a quarter of the step's rate, beyond which
    the step no longer resolves a motion; ``f = |s| / 2 pi``, ``zeta = -Re s / |s|``. The
    shares are those of the pulleys' and the arm's rotation (``rotational``), of the spans'
    belt (``belt axial``, its flows) and of the tensioner spans' string modes (``span a_b``,
    ``m' L |q'|^2 / 4``: :func:`belt_fmu.model.lumped.prepare_strings`) in the mode's kinetic
    energy."""
    from .modes import AXIAL, ROTATIONAL, Mode, classify, span_label

    values, vectors = np.linalg.eig(linear.a)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.log(values.astype(complex)) / linear.dt
    size = np.abs(s)
    keep = np.flatnonzero((s.imag > 1e-6 * size) & (size > 2 * np.pi * MIN_FREQUENCY)
                          & (s.imag < 0.5 * np.pi / linear.dt))
    keep = keep[np.argsort(size[keep])][:count]
    layout = drive.layout
    position = {int(k): i for i, k in enumerate(linear.kept)}

    def rows(view, n):
        return [position.get(drive.state_offset(view) + j) for j in range(n)]

    p = len(layout.pulleys)
    inertia = np.array([q.inertia_kgm2 for q in layout.pulleys])
    spans = drive.arrays["span_length"] * layout.belt.mass_per_length_kg_per_m
    rate, flow, string = rows("omega", p), rows("flow", p), rows("string_rate", p)
    arm = rows("arm", 2)[1] if layout.tensioner is not None else None
    names = [q.name for q in layout.pulleys]
    strings = [(span_label(names[j], names[(j + 1) % p]), spans[j] / 2.0, i) for j, i in enumerate(string)
               if i is not None]
    found = []
    for k in keep:
        v = vectors[:, k]
        turning = sum(inertia[j] * abs(v[i]) ** 2 for j, i in enumerate(rate) if i is not None)
        if arm is not None:
            turning += layout.tensioner.arm_inertia_kgm2 * abs(v[arm]) ** 2
        energy = {ROTATIONAL: turning, AXIAL: sum(spans[j] * abs(v[i]) ** 2 for j, i in enumerate(flow) if i is not None)}
        energy.update({label: mass * abs(v[i]) ** 2 for label, mass, i in strings})
        total = sum(energy.values())
        shares = {name: e / total for name, e in energy.items()} if total > 0 else {name: 0.0 for name in energy}
        found.append(Mode(float(size[k] / (2 * np.pi)), float(-s[k].real / size[k]), np.zeros(0), shares,
                          classify(shares)))
    return tuple(found)


def lumped_modes(drive, rpm: float, water_pump_torque: float, count: int, arm_friction="stuck", excitation=None):
    """(the arm friction used, :class:`belt_fmu.analysis.modes.Modes` of :func:`natural_modes`,
    without operating point or coordinates) of the lumped ``drive`` at its steady
    running state at ``rpm`` [rpm] and ``water_pump_torque`` [N m]: the arm's friction
    "stuck", "sliding" (:func:`linearize_lumped`), or "excited": the equivalent damping
    [N m s/rad] the harmonic response gives under ``excitation`` at this speed
    (:func:`belt_fmu.analysis.response.excited_lumped_arm_friction`)."""
    from ..units import RPM
    from .modes import AXIAL, ROTATIONAL, Modes
    from .response import excited_lumped_arm_friction

    speed = rpm * RPM
    if arm_friction == "excited":  # it leaves the drive at its steady state
        arm_friction = excited_lumped_arm_friction(drive, rpm, water_pump_torque, excitation)
    else:
        drive.reset(speed, water_pump_torque)
    found = natural_modes(linearize_lumped(drive, speed, water_pump_torque, arm_friction), drive, count)
    return arm_friction, Modes(None, np.zeros(0), found, (ROTATIONAL, AXIAL), str(arm_friction))
