"""Internal linkage for the kernels a numba library links in (belt_fmu/linking.py): only the
linked-in definitions change linkage, a kernel compiled apart is linked into its caller that
way, and the caller computes what the Python functions compute."""
import math

import llvmlite.binding as ll
import numba
import numpy as np
import pytest
from numba import njit

from belt_fmu import linking

pytestmark = pytest.mark.skipif(not linking.install(),
                                reason=f"numba {numba.__version__}: numba's own linkage")

MODULE = """
define linkonce_odr double @linked(double %x) {
  %y = call double @exp(double %x)
  ret double %y
}
define double @entry(double %x) {
  %y = call double @linked(double %x)
  ret double %y
}
declare double @exp(double)
"""


def test_only_linked_in_definitions_become_internal():
    """The ``linkonce_odr`` definition becomes internal; the library's own entry keeps its
    external linkage and a declaration stays as it is."""
    ll.initialize_native_target()
    module = ll.parse_assembly(MODULE)
    assert linking.internalize_linked(module) == 1
    linkage = {function.name: function.linkage for function in module.functions}
    assert linkage == {"linked": ll.Linkage.internal, "entry": ll.Linkage.external, "exp": ll.Linkage.external}
    module.verify()


@njit(_nrt=False)
def _weighted(bundle, shift):
    # compiled apart; reads two of the bundle's ten arrays, as the model's kernels read a few
    # of their views
    values = bundle[3]
    total = 0.0
    for k in range(values.shape[0]):
        total += math.exp(-values[k] * (k + shift)) * bundle[7][k]
    return total


def _caller(bundle):
    return _weighted(bundle, 1) + 2.0 * _weighted(bundle, 2) - _weighted(bundle, 3)


def test_a_kernel_compiled_apart_is_linked_in_with_internal_linkage(monkeypatch):
    """A kernel calling another compiled apart (a bundle of ten arrays, three call sites):
    the callee's copy in the caller's module is made internal before numba optimizes it, and
    the caller computes what the Python caller computes to the last bit."""
    made_internal = []
    internalize = linking.internalize_linked

    def spy(module):
        made_internal.extend(f.name for f in module.functions
                             if not f.is_declaration and f.linkage == ll.Linkage.linkonce_odr)
        return internalize(module)

    monkeypatch.setattr(linking, "internalize_linked", spy)
    bundle = tuple(np.linspace(0.1, 1.0 + j, 6) for j in range(10))
    result = njit(_nrt=False)(_caller)(bundle)  # a new caller: compiled in this test
    assert any("_weighted" in name for name in made_internal)
    assert result == _caller(bundle)
