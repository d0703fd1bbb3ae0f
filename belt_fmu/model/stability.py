"""The explicit part's stable time step (pure Python: the layout check uses it before any
kernel is compiled, :func:`belt_fmu.model.integrator.stable_time_step` for the model).

Symplectic Euler on an oscillator of frequency w is stable for ``w dt < 2``; with damping of
ratio z, for ``w dt < 2 (sqrt(1 + z^2) - z)`` (Hairer, Lubich & Wanner, "Geometric numerical
integration", 2006, for the undamped limit). The belt's axial stiffness is integrated
implicitly, so the fastest explicit modes are a node rotating against its neighbours'
bending stiffness (``w = 2 sqrt(4 EI / (l0 J))``), shearing between them
(``2 sqrt(12 EI / (l0^3 m))``), bouncing on its contact spring (at
:data:`STABLE_PENETRATION`), and, with the bristle law, on its bristle spring.
"""
from __future__ import annotations

import math
from typing import NamedTuple

#: accuracy bound on the time step [s]: the implicit axial part damps modes with
#: w dt ~ 1 numerically, so keep w dt < 0.1 up to ~800 Hz (polygon frequencies are higher)
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

#: the layout keys that set each explicit mode's frequency, and which way to change them for
#: a longer stable step (the layout check's advice)
MODE_ADVICE = {
    "bending rotation": "lower belt.bending_stiffness_Nm2 or belt.bending_damping_Nm2s, or use fewer "
                        "belt.n_elements (longer elements), or check belt.mass_per_length_kg_per_m and thickness_m",
    "bending shear": "lower belt.bending_stiffness_Nm2, or use fewer belt.n_elements (longer elements), or check "
                     "belt.mass_per_length_kg_per_m",
    "contact": "lower contact.stiffness_linear_N_per_m2, stiffness_quadratic_N_per_m3 or damping_Ns_per_m2, or "
               "check belt.mass_per_length_kg_per_m",
    "bristle": "lower friction.bristle_stiffness_N_per_m2, or check belt.mass_per_length_kg_per_m",
}


class Mode(NamedTuple):
    name: str  # a key of MODE_ADVICE
    frequency: float  # w [rad/s]
    damping_ratio: float  # z


def explicit_modes(node_mass, node_inertia, rest_length, bending_stiffness, bending_damping, contact_linear,
                   contact_quadratic, contact_damping, bristle_stiffness=0.0) -> list[Mode]:
    """The fastest explicit modes of a node (per-node values, SI units; module docstring)."""
    m, l0, ei = node_mass, rest_length, bending_stiffness
    k_rot = 4.0 * ei / l0
    w_rot = 2.0 * math.sqrt(k_rot / node_inertia)
    z_rot = bending_damping / l0 * 4.0 * w_rot / (2.0 * k_rot)
    w_shear = 2.0 * math.sqrt(12.0 * ei / (l0 ** 3 * m))
    k_contact = contact_linear + 2.0 * contact_quadratic * STABLE_PENETRATION
    w_contact = math.sqrt(k_contact / m)
    z_contact = contact_damping / (2.0 * math.sqrt(k_contact * m))
    modes = [Mode("bending rotation", w_rot, z_rot), Mode("bending shear", w_shear, 0.0),
             Mode("contact", w_contact, z_contact)]
    if bristle_stiffness > 0.0:
        modes.append(Mode("bristle", math.sqrt(bristle_stiffness / m), 0.0))
    return modes


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
