"""numba's typing of calls to its own functions, each kind of call typed once per process.

numba (0.68, ``numba.core.types.functions.BaseFunction.get_call_type``) types a call of one
of its functions (an operator such as ``*`` or ``<``, ``math.exp``, ``np.sqrt``, ``range``,
``min``) by trying the function's typing templates one after another until one accepts the
argument types, at every call site of every kernel and of every inlined copy: the same
``float64 * float64`` is typed anew thousands of times. The model's kernels make 12 700 such
calls in the lumped model's compile (429 distinct), 26 000 in the discretized model's (1 850
distinct); most templates reject the arguments after trying their cases, and memoizing the
search cut a cold compile by 14-20 % (docs/performance.md, "Where a cold start's time goes").

:func:`install` wraps the method for this process: a call typed before, with the same
function, argument types (literal values included), keyword argument types and compiler
flags, returns the signature typed then and records the same implementation key for the
lowering, as numba's own run records it (the templates' own caches key an overloaded
function's compiled implementation by the same flags). Calls whose typing fails, and those of
overloads numba inlines itself (their inlining information is stored at typing), are typed by
numba every time. The compiled code is the same (``fmu_tests/test_call_typing.py``; the
model's kernels: docs/performance.md).
"""
from __future__ import annotations

from .inlining import flags_key, patch_once

#: the numba releases whose BaseFunction.get_call_type :func:`install` wraps as described
VERIFIED_NUMBA = ((0, 68), (0, 68))

#: signature and implementation key of each call typed, by function, context, argument types,
#: keyword argument types and compiler flags
_typed: dict = {}

#: the compiler flags' key per flags object (numba types each function under its own copy of
#: the flags, unchanged while it compiles), the object kept so that its id stays its own
_flag_keys: dict = {}


def _flags_key(flags):
    """The compiler flags' :func:`~belt_fmu.inlining.flags_key`, computed once per flags
    object."""
    if flags is None:
        return None
    known = _flag_keys.get(id(flags))
    if known is None or known[0] is not flags:
        known = _flag_keys[id(flags)] = (flags, flags_key(flags))
    return known[1]


def install() -> bool:
    """Wrap numba's typing of calls for this process (once) where its version is verified
    (:data:`VERIFIED_NUMBA`); returns whether it is wrapped."""
    from numba.core.types import functions

    return patch_once(functions.BaseFunction, "_belt_fmu_call_typing", VERIFIED_NUMBA, _wrap_typing)


def _wrap_typing(base) -> None:
    """Wrap ``BaseFunction.get_call_type`` (module docstring)."""
    from numba.core import targetconfig
    from numba.core.typing.templates import _EmptyImplementationEntry

    numba_get_call_type = base.get_call_type

    def get_call_type(self, context, args, kws):
        """numba's, once per function, argument types and flags (module docstring)."""
        key = (self, context, tuple(args), tuple(kws.items()),
               _flags_key(targetconfig.ConfigStack.top_or_none()))
        try:
            typed = _typed.get(key)
        except TypeError:  # an argument type numba cannot hash: numba's own run
            return numba_get_call_type(self, context, args, kws)
        if typed is not None:
            signature, implementation = typed
            self._impl_keys[signature.args] = implementation
            return signature
        signature = numba_get_call_type(self, context, args, kws)
        if signature is not None:
            implementation = self._impl_keys[signature.args]
            if not isinstance(implementation, _EmptyImplementationEntry):
                _typed[key] = (signature, implementation)
        return signature

    base.get_call_type = get_call_type
