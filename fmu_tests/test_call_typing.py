"""numba's typing of calls once per kind (belt_fmu/call_typing.py): kernels typed from the
memo compute what the Python functions compute, a call typed once is not typed again, and
calls under other compiler flags or of other literal values are typed apart."""
import math

import numba
import numpy as np
import pytest
from numba import njit

from belt_fmu import call_typing

pytestmark = pytest.mark.skipif(not call_typing.install(),
                                reason=f"numba {numba.__version__}: numba's own typing of calls")


def _mixed(values, count):
    # operators, math and numpy functions and builtins on integers, floats and arrays, and a
    # heterogeneous tuple indexed by constants (the index's literal value decides the type)
    pair = (count, 0.5 * count)
    total = 0.0
    for i in range(values.shape[0]):
        total += math.exp(-values[i]) * np.sqrt(values[i]) + min(values[i], pair[1])
    return total, pair[0] // 2, pair[1] / 2, abs(-count), np.maximum(values, 2.0)


def test_kernels_typed_from_the_memo_compute_what_python_computes(monkeypatch):
    """The same function compiled twice, the second time with every call typed from the
    memo (nothing new typed): both compute the Python function's results exactly, an integer
    stays an integer where the tuple's literal index picks its integer member."""
    monkeypatch.setattr(call_typing, "_typed", {})
    values = np.array([0.25, 1.0, 4.0, 9.0])
    expected = _mixed(values, 7)
    first = njit(_mixed)(values, 7)
    typed = len(call_typing._typed)
    assert typed > 10
    second = njit(_mixed)(values, 7)
    assert len(call_typing._typed) == typed
    for result in (first, second):
        assert result[:4] == expected[:4]
        assert isinstance(result[1], int) and isinstance(result[3], int)
        np.testing.assert_array_equal(result[4], expected[4])


def test_calls_under_other_flags_are_typed_apart(monkeypatch):
    """A kernel compiled with numpy's error model after the same kernel with Python's types
    its calls anew (the flags are part of the key), and each keeps its own behaviour on a
    division by zero."""
    monkeypatch.setattr(call_typing, "_typed", {})

    def ratio(a, b):
        return a / b

    python_model = njit(ratio)
    assert python_model(1.0, 4.0) == 0.25
    typed = len(call_typing._typed)
    numpy_model = njit(error_model="numpy")(ratio)
    assert numpy_model(1.0, 0.0) == math.inf
    assert len(call_typing._typed) > typed
    with pytest.raises(ZeroDivisionError):
        python_model(1.0, 0.0)
