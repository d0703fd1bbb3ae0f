"""Hub (bearing) load of an idler at high belt speed (docs/references.md R4).

At 30 m/s the centrifugal tension m'v^2 = 108 N is a fifth of the span tension: the bearing
feels the span tensions reduced by it. The model has no such formula inside: the reduction
comes from the belt nodes' own mass running round the idler.
"""
import numpy as np
import pytest

from belt_fmu.layout import load_layout_text
from belt_fmu.model.geometry import BeltPath
from belt_fmu.model.system import BeltDrive

from conftest import two_pulley_text

MASS = 0.12

IDLER = """
[[pulleys]]
name = "idler"
role = "idler"
center_m = [0.22, 0.20]
radius_m = 0.059
inertia_kgm2 = 2.0e-4
bearing_damping_Nms_per_rad = 0.0
"""


def test_idler_hub_force_is_the_centrifugally_corrected_vector_sum():
    """Mean hub force over 50 ms (about 140 polygon periods) equals
    sqrt(Ta^2 + Tb^2 - 2 Ta Tb cos(theta)), Ta,b = span tension - m'v^2, within 2 %; the
    uncorrected sum is 18 % higher, so the check discriminates. The mean is taken after
    50 ms of running: the formula is the steady state's, and the start's transient put the
    first 50 ms' mean 2.3 % high on one processor (AVX-512; within 2 % on another, by the
    rounding alone), the next 50-ms windows 0.1-0.5 %."""
    text = two_pulley_text(n=120, mass=MASS, distance=0.45, extra_pulleys=IDLER)
    layout = load_layout_text(text, source="<idler test drive>")
    wrap = BeltPath.from_layout(layout).wrap_angle[2]
    drive = BeltDrive(layout)
    crank, load = 300.0, 30.0  # belt at 30 m/s
    drive.reset(crank, load)
    drive.advance(0.05, crank, load)  # settled
    rows = []
    for _ in range(500):
        drive.advance(1e-4, crank, load)
        out = drive.outputs()
        rows.append((out["span_tension_driven_idler"], out["span_tension_idler_driver"], out["hub_force_idler"],
                     out["belt_speed"]))
    t_in, t_out, hub, speed = np.mean(rows, axis=0)
    assert speed == pytest.approx(30.0, rel=0.01)
    ta, tb = t_in - MASS * speed ** 2, t_out - MASS * speed ** 2
    expected = np.sqrt(ta ** 2 + tb ** 2 - 2 * ta * tb * np.cos(wrap))
    uncorrected = np.sqrt(t_in ** 2 + t_out ** 2 - 2 * t_in * t_out * np.cos(wrap))
    assert hub == pytest.approx(expected, rel=0.02)
    assert abs(hub - uncorrected) > 0.1 * uncorrected
