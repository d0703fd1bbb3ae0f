"""Shared builders of small test drives (layouts as TOML text, as users write them), the
session's FMU and the FMI status helper.

The suite compiles the model's kernels once per machine and version, into the per-user kernel
folder (belt_fmu.kernel_cache) that the package and the FMUs it builds share; set
BELT_FMU_CACHE to keep them elsewhere."""
from __future__ import annotations

import pytest

from belt_fmu.layout import load_layout_text

BELT = """
[belt]
mass_per_length_kg_per_m = {mass}
axial_stiffness_N = {ea}
bending_stiffness_Nm2 = 0.02
axial_damping_Ns = 0.3
thickness_m = 4.5e-3
cord_offset_m = 1.0e-3
groove_angle_rad = 3.141592653589793   # flat belt: mu_eff = mu
n_elements = {n}
pretension_N = {pretension}

[contact]
stiffness_linear_N_per_m2 = 2.0e9
damping_Ns_per_m2 = 6.0e3
"""

FRICTION = {
    # regularizations chosen well below the 0.4 % creep the tests resolve
    "tanh": 'law = "tanh"\nvelocity_threshold_m_per_s = 1.0e-3',
    "creep_polynomial": 'law = "creep_polynomial"\nslip_peak = 2.0e-4\nslip_saturation = 1.0e-3\n'
                        'saturation_ratio = 1.0',
    "bristle": 'law = "bristle"\nbristle_stiffness_N_per_m2 = 2.0e8',
}


def two_pulley_text(law="tanh", mu=0.5, n=100, pretension=550.0, ea=1.2e5, mass=0.12,
                    driven_inertia=0.02, distance=0.35, extra_pulleys=""):
    """Two equal pulleys (cord radius 0.1 m) ``distance`` apart, crank "driver" driving a
    loaded pulley "driven" (role water_pump, so the water-pump torque input loads it); wrap
    angle pi on both, unless ``extra_pulleys`` (TOML [[pulleys]] tables, travelled after
    the driven pulley) deflect the belt."""
    return BELT.format(mass=mass, ea=ea, n=n, pretension=pretension) + f"""
[friction]
mu = {mu}
{FRICTION[law]}

[[pulleys]]
name = "driver"
role = "crankshaft"
center_m = [0.0, 0.0]
radius_m = 0.099

[[pulleys]]
name = "driven"
role = "water_pump"
center_m = [{distance}, 0.0]
radius_m = 0.099
inertia_kgm2 = {driven_inertia}
bearing_damping_Nms_per_rad = 0.0
{extra_pulleys}"""


@pytest.fixture(scope="session", autouse=True)
def kernels_compiled_at_once(request):
    """On a machine without this code's kernels, build the FMU (:func:`fmu`) before the
    first test: its build compiles the discretized and the lumped model in two processes at
    once, and the tests then load them, instead of compiling them one after the other as
    they meet them."""
    from belt_fmu import kernel_cache

    if not all(kernel_cache.is_compiled(part) for part in ("discretized", "lumped")):
        request.getfixturevalue("fmu")


@pytest.fixture(scope="session")
def fmu(tmp_path_factory):
    """The FMU of the built-in layout, inputs starting at 800 rpm and 2 N m, built once per
    session (with its compiled kernels, which the suite's own runs of the model share:
    belt_fmu.kernel_cache)."""
    from belt_fmu.build import build_fmu
    from belt_fmu.units import RPM

    return build_fmu(None, tmp_path_factory.mktemp("fmu") / "BeltDrive.fmu", crank_speed=800 * RPM,
                     water_pump_torque=2.0)


@pytest.fixture
def two_pulley_layout():
    """Factory: ``two_pulley_layout(law="tanh", ...)`` -> Layout."""
    return lambda **kw: load_layout_text(two_pulley_text(**kw), source="<two-pulley test drive>")


def status_of(call) -> int:
    """The FMI status a call returned (0 OK; fmpy raises for worse than warning)."""
    from fmpy.fmi1 import FMICallException

    try:
        call()
    except FMICallException as err:
        return err.status
    return 0
