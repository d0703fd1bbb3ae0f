"""numba's inlining in linear time (belt_fmu/inlining.py): the inlined code computes what
numba's own inlining computes, and each inlined function's untyped passes run once."""
import numba
import numpy as np
import pytest
from numba import njit

from belt_fmu import inlining

pytestmark = pytest.mark.skipif(not inlining.install(), reason=f"numba {numba.__version__}: numba's own inlining")


@njit(inline="always")
def _scaled(x, factor):
    total = x * factor
    if total > 10:
        total -= 10
    return total


@njit(inline="always")
def _accumulate(values, factor):
    total = 0.0
    for value in values:
        total += _scaled(value, factor)
    return total


@njit(inline="always")
def _doubled(x):
    twice = x + x
    return twice


@njit
def _caller(values, count):
    # callees at several sites, with integer, float and array arguments: each site's
    # variables keep their own names and types
    first = _accumulate(values, 2)
    second = _accumulate(values, 0.5)
    third = _scaled(count, 3)
    return first, second, third, _scaled(2.5, 1.5), _doubled(count), _doubled(values)


def test_inlined_sites_compute_what_python_computes():
    """Functions inlined at several sites, nested two deep, with integer, float and array
    arguments: the compiled results equal the Python function's exactly (the operations
    are the same, in the same order), an integer stays an integer."""
    values = np.array([1.0, 4.0, 7.5, 12.0])
    *scalars, count, array = _caller(values, 5)
    *expected_scalars, expected_count, expected_array = _caller.py_func(values, 5)
    assert scalars == expected_scalars
    assert isinstance(count, int) and count == expected_count
    np.testing.assert_array_equal(array, expected_array)


def test_untyped_passes_run_once_per_function(monkeypatch):
    """A function inlined at several sites runs through numba's untyped passes once (the
    inliner keeps its IR); the second caller compiled with the same flags runs them for no
    inlined function again."""
    from numba.core import inline_closurecall

    runs = []
    monkeypatch.setattr(inlining, "_untyped_ir", {})
    original = inline_closurecall.InlineWorker.run_untyped_passes

    def counted(self, func, enable_ssa=False):
        before = len(inlining._untyped_ir)
        result = original(self, func, enable_ssa)
        if len(inlining._untyped_ir) > before:
            runs.append(func.__name__)
        return result

    monkeypatch.setattr(inline_closurecall.InlineWorker, "run_untyped_passes", counted)

    @njit
    def twice(values):
        return _accumulate(values, 1.0) + _accumulate(values, 2.0) + _scaled(1.0, 2.0)

    @njit
    def again(values):
        return _accumulate(values, 3.0)

    values = np.array([3.0, 8.0])
    assert twice(values) == twice.py_func(values)
    assert again(values) == again.py_func(values)
    assert sorted(runs) == ["_accumulate", "_scaled"]
