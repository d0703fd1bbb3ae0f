"""The explicit part's stable time step (pure Python: the layout check uses it before any
kernel is compiled, :func:`belt_fmu.model.integrator.stable_time_step` for the model).

Symplectic Euler on an oscillator of frequency w is stable for ``w dt < 2``; with damping of
ratio z, for ``w dt < 2 (sqrt(1 + z^2) - z)`` (Hairer, Lubich & Wanner, "Geometric numerical
integration", 2006, for the undamped limit). The belt's elastic and viscous element forces,
axial, bending and shear, are made stable at any step
(:func:`belt_fmu.model.belt.implicit_belt_correction`: backward Euler on the axial forces, a
stiffness-proportional mass on the bending and shear), so the modes whose frequencies grow
as the elements shorten (:func:`implicit_modes`: a node stretching its elements,
``w = 2 sqrt(EA / (l0 m))``, rotating against its neighbours' bending stiffness,
``2 sqrt(4 EI / (l0 J))``, shearing between them, ``2 sqrt(12 EI / (l0^3 m))``) set no step;
they only bound the implicit solve's conditioning (:data:`MAX_IMPLICIT_STIFFNESS`). The
fastest explicit modes (:func:`explicit_modes`) are a node bouncing on its contact spring
(at :data:`STABLE_PENETRATION`) and, with the bristle law, on its bristle spring: ``k / m``
per node is independent of the element length, and so is the step.

The tension's transverse (string) stiffness ``N / l`` stays explicit, so that the span
vibrations are not damped numerically. Alone it would bring back a limit ``dt < l0 / c``,
``c = sqrt(N / m')``; but at the short wavelengths where that bites, the bending stiffness
``K_b`` dominates, and its mass penalty ``theta dt^2 K_b`` (theta = 1/2,
:data:`belt_fmu.model.belt.BENDING_MASS_THETA`) with it: symplectic Euler with both
stiffnesses explicit and that mass is stable while ``dt^2 (K_b + K_e) <= 4 (m + theta dt^2
K_b)`` (its amplification matrix), i.e. ``dt^2 K_e <= 4 m + dt^2 K_b``, so a transverse wave
of wavenumber k is stable while ``N k^2 dt^2 <= 4 m' + dt^2 EI k^4``, at every k for
``N < 4 sqrt(m' EI) / dt`` (continuum estimate), independent of the element length: 9.6 kN
on the built-in belt at 2e-5 s, far beyond any running tension (a 2000-element belt, the
most a layout allows, 0.7 mm elements, runs at 2e-5 s).
"""
from __future__ import annotations

import math
from typing import NamedTuple

#: accuracy bound on the time step [s]: the implicit part damps modes with
#: w dt ~ 1 numerically, so keep w dt < 0.1 up to ~800 Hz (polygon frequencies are higher).
#: The explicit contact spring is what holds the step here: made implicit (backward Euler)
#: it dissipates and loses stability at 300 elements and more, and a stiffness-proportional
#: mass on its normal moves the hub loads by up to 10 %, resisting the nodes' landing on a
#: pulley (docs/performance.md, "Why the code is as it is").
MAX_STEP = 2.0e-5
#: the pulleys' bearing damping and the tensioner arm's damper and end stops are explicit:
#: stable while c dt / I < 2 and sqrt(k / I) dt < 2 (module docstring). The layout check asks
#: for c / I and sqrt(k / I) below this over :data:`MAX_STEP` (a time constant of 20 us:
#: nothing a bearing or a damper has)
MAX_RATE_STEPS = 1.0

#: [m] the contact stiffness d N / d p = c2 + 2 c1 p grows with the penetration p; the step
#: is made stable up to this penetration, well beyond a node's steady one (microns on the
#: built-in drive) and about the deepest the layout rule allows (5 % of a cord radius,
#: belt_fmu.model.layout_checks.MAX_PENETRATION: 1.4 mm on a 29 mm alternator)
STABLE_PENETRATION = 1e-3

#: the largest ``(w dt)^2 + 2 z w dt`` of an implicit mode at :data:`MAX_STEP`
#: (:func:`implicit_stiffness`): the implicit belt solve's matrix ``M + dt C + dt^2 K`` has
#: about this condition number, and the correction it gives keeps about
#: 16 - log10(MAX_IMPLICIT_STIFFNESS) = 6 significant digits (Golub & Van Loan, "Matrix
#: computations", 2013, 3.5: relative error ~ condition number x unit roundoff). The built-in
#: belt has about 40 (axial, 150 elements) to 3e4 (bending shear, 2000 elements)
MAX_IMPLICIT_STIFFNESS = 1e10

#: the layout keys that set each mode's frequency, and which way to change them for a longer
#: stable step (explicit modes) or a better conditioned implicit solve (implicit modes): the
#: layout check's advice
MODE_ADVICE = {
    "bending rotation": "lower belt.bending_stiffness_Nm2 or belt.bending_damping_Nm2s, or use fewer "
                        "belt.n_elements (longer elements), or check belt.mass_per_length_kg_per_m and thickness_m",
    "bending shear": "lower belt.bending_stiffness_Nm2, or use fewer belt.n_elements (longer elements), or check "
                     "belt.mass_per_length_kg_per_m",
    "axial": "lower belt.axial_stiffness_N or belt.axial_damping_Ns, or use fewer belt.n_elements (longer "
             "elements), or check belt.mass_per_length_kg_per_m",
    "contact": "lower contact.stiffness_linear_N_per_m2, stiffness_quadratic_N_per_m3 or damping_Ns_per_m2, or "
               "check belt.mass_per_length_kg_per_m",
    "bristle": "lower friction.bristle_stiffness_N_per_m2, or check belt.mass_per_length_kg_per_m",
}


class Mode(NamedTuple):
    name: str  # a key of MODE_ADVICE
    frequency: float  # w [rad/s]
    damping_ratio: float  # z


def explicit_modes(node_mass, contact_linear, contact_quadratic, contact_damping, bristle_stiffness=0.0) -> list[Mode]:
    """The fastest explicit modes of a node (per-node values, SI units; module docstring)."""
    m = node_mass
    k_contact = contact_linear + 2.0 * contact_quadratic * STABLE_PENETRATION
    w_contact = math.sqrt(k_contact / m)
    z_contact = contact_damping / (2.0 * math.sqrt(k_contact * m))
    modes = [Mode("contact", w_contact, z_contact)]
    if bristle_stiffness > 0.0:
        modes.append(Mode("bristle", math.sqrt(bristle_stiffness / m), 0.0))
    return modes


def bending_modes(node_mass, node_inertia, rest_length, bending_stiffness, bending_damping) -> list[Mode]:
    """The belt's fastest bending modes (per-node values, SI units; module docstring): a node
    rotating against its neighbours' bending stiffness, and shearing between them."""
    m, l0, ei = node_mass, rest_length, bending_stiffness
    k_rot = 4.0 * ei / l0
    w_rot = 2.0 * math.sqrt(k_rot / node_inertia)
    z_rot = bending_damping / l0 * 4.0 * w_rot / (2.0 * k_rot)
    w_shear = 2.0 * math.sqrt(12.0 * ei / (l0 ** 3 * m))
    return [Mode("bending rotation", w_rot, z_rot), Mode("bending shear", w_shear, 0.0)]


def implicit_modes(node_mass, node_inertia, rest_length, axial_stiffness, axial_damping, bending_stiffness,
                   bending_damping) -> list[Mode]:
    """The fastest modes of the belt's implicit part, those the explicit scheme would be limited
    by (per-node values, SI units; module docstring): the :func:`bending_modes` and a node
    stretching its two elements."""
    m, l0 = node_mass, rest_length
    k_axial = axial_stiffness / l0
    w_axial = 2.0 * math.sqrt(k_axial / m)
    z_axial = axial_damping / l0 * 2.0 * w_axial / (2.0 * 2.0 * k_axial)
    return [*bending_modes(m, node_inertia, l0, bending_stiffness, bending_damping), Mode("axial", w_axial, z_axial)]


def bending_is_implicit(node_mass, node_inertia, rest_length, bending_stiffness, bending_damping, dt,
                        safety) -> bool:
    """Whether the belt's bending and shear must be implicit at the step ``dt`` [s]: whether
    ``safety`` times the explicit stability limit of its bending rotation or shear mode
    (:func:`bending_modes`) is shorter than ``dt``. Where it is not (the built-in belt up to
    about 155 elements), the explicit bending is stable and the implicit solve takes the axial
    forces alone (:func:`belt_fmu.model.belt.implicit_axial_correction`): half the block
    solve's cost."""
    bending = bending_modes(node_mass, node_inertia, rest_length, bending_stiffness, bending_damping)
    return safety * limiting_mode(bending)[0] < dt


def implicit_stiffness(mode: Mode, dt: float) -> float:
    """``(w dt)^2 + 2 z w dt``: the ratio of a mode's stiffness and damping terms to its mass
    in the implicit solve's matrix ``M + dt C + dt^2 K``, the condition number that mode
    gives it; inf for a mode too stiff to compute."""
    w, z = mode.frequency, mode.damping_ratio
    if not (math.isfinite(w) and math.isfinite(z)):
        return math.inf
    wdt = w * dt
    return wdt * wdt + 2.0 * z * wdt


def stability_limit(mode: Mode) -> float:
    """Largest stable step [s] of symplectic Euler on one damped mode (module docstring);
    0 for a mode too stiff to compute (overflow)."""
    w, z = mode.frequency, mode.damping_ratio
    if not (math.isfinite(w) and math.isfinite(z)) or w <= 0.0:
        return 0.0 if not w == 0.0 else math.inf
    # 2 (sqrt(1 + z^2) - z) = 2 / (sqrt(1 + z^2) + z), without cancellation for large z
    return 2.0 / ((math.hypot(1.0, z) + z) * w)


def limiting_mode(modes: list[Mode]) -> tuple[float, Mode]:
    """The smallest stability limit [s] and the mode that sets it."""
    limits = [(stability_limit(mode), mode) for mode in modes]
    return min(limits, key=lambda item: item[0])
