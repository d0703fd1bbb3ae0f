"""Brent's root finder of the initialization (belt_fmu.model.roots), on functions with known
roots, and the FMU runtime's independence of scipy that it exists for."""
import math
import subprocess
import sys

import pytest

from belt_fmu.model.roots import brent_root


@pytest.mark.parametrize("func, a, b, root", [
    (lambda x: math.cos(x) - x, 0.0, 1.0, 0.7390851332151607),  # Dottie number
    (lambda x: x ** 3 - 2.0 * x - 5.0, 2.0, 3.0, 2.0945514815423265),  # Wallis' cubic (Newton 1669)
    (lambda x: 3.0 * x - 1.0, -10.0, 10.0, 1.0 / 3.0),
    (lambda x: math.exp(x) - 1e-3, -20.0, 0.0, math.log(1e-3)),
])
def test_root_to_the_requested_tolerance(func, a, b, root):
    """The root within xtol + 4 eps |x| (xtol 1e-13): the closure conditions of the
    initialization need lengths to 1e-13 m."""
    assert brent_root(func, a, b, xtol=1e-13) == pytest.approx(root, abs=1e-13 + 1e-15 * abs(root))


def test_superlinear_on_a_smooth_function_and_bisection_bounded_on_a_step():
    calls = []

    def smooth(x):
        calls.append(x)
        return x ** 3 - 2.0 * x - 5.0

    brent_root(smooth, 2.0, 3.0, xtol=1e-13)
    assert len(calls) <= 12  # bisection alone needs 44 for a unit bracket to 1e-13

    calls.clear()

    def step(x):
        calls.append(x)
        return -1.0 if x < 0.123456789 else 1.0

    assert brent_root(step, 0.0, 1.0, xtol=1e-12) == pytest.approx(0.123456789, abs=2e-12)
    assert len(calls) <= 2 * 41  # never much worse than bisection (log2(1e12) = 40)


def test_no_sign_change_is_refused():
    with pytest.raises(ValueError, match="no sign change in the bracket"):
        brent_root(lambda x: x * x + 1.0, -1.0, 1.0)


RUNTIME_WITHOUT_SCIPY = """
import sys
sys.modules["scipy"] = None  # any import of scipy now fails
from belt_fmu.layout import load_layout
import belt_fmu.slave
from belt_fmu.model.system import BeltDrive
drive = BeltDrive(load_layout())
drive.reset(83.8, 2.0, settle_time=1e-3)
drive.advance(1e-4, 83.8, 2.0)
print("ran without scipy")
"""


def test_the_fmu_runtime_does_not_import_scipy():
    """The FMU's slave, layout reading, initialization and integration run in a Python
    without scipy (docs/native-hosts.md explains why the FMU must not load it)."""
    run = subprocess.run([sys.executable, "-c", RUNTIME_WITHOUT_SCIPY], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "ran without scipy" in run.stdout
