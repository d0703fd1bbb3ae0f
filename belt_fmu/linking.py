"""Kernels compiled apart, called with only the arguments they use: internal linkage for the
functions a numba library links in from its callees' libraries.

numba (0.68) compiles each kernel into a library of its own and links a callee's code into
its caller's module with the callee's functions marked ``linkonce_odr``
(``numba.core.codegen.CPUCodeLibrary._get_module_for_linking``), so that copies may merge.
LLVM keeps the signature of a function of that linkage, since another module may call it:
its dead-argument elimination and argument promotion only change functions no other module
sees, and its inliner takes a function's last call site more readily when the function is
local. numba passes an array by value as its seven members (meminfo, parent, size, item
size, data, shape, strides), each an argument: a kernel handed the lumped model's bundles
of named views (about 50 arrays) takes some 350 arguments at every call, of which it reads
a few data pointers, and the caller stores them all to its stack first.

:func:`install` gives those linked-in functions internal linkage in the caller's final
module before numba optimizes it: each copy becomes the caller's own, LLVM drops the
arguments a copy never reads and inlines a copy whose call sites are few. The kernel
compiled apart is still typed and lowered once, so the compile takes no longer; the
library's own entry points keep their linkage. The arithmetic is the same, evaluated in the
same order (no fast-math flags: LLVM may not reassociate), so the results are the same bits
(docs/performance.md, "Kernels compiled apart").
"""
from __future__ import annotations

from .inlining import patch_once

#: the numba releases whose CPUCodeLibrary._optimize_final_module :func:`install` wraps
VERIFIED_NUMBA = ((0, 68), (0, 68))


def internalize_linked(module) -> int:
    """Give every function of the LLVM ``module`` (llvmlite.binding) defined with
    ``linkonce_odr`` linkage, numba's mark of a function linked in from another library,
    internal linkage; returns how many."""
    import llvmlite.binding as ll

    count = 0
    for function in module.functions:
        if not function.is_declaration and function.linkage == ll.Linkage.linkonce_odr:
            function.linkage = "internal"
            count += 1
    return count


def install() -> bool:
    """Wrap numba's optimization of a library's final module for this process (once) where
    its version is verified (:data:`VERIFIED_NUMBA`); returns whether it is wrapped."""
    from numba.core import codegen

    return patch_once(codegen.CPUCodeLibrary, "_belt_fmu_linking", VERIFIED_NUMBA, _wrap_optimization)


def _wrap_optimization(library) -> None:
    """Wrap ``CPUCodeLibrary._optimize_final_module`` (module docstring)."""
    numba_optimize = library._optimize_final_module

    def _optimize_final_module(self):
        """numba's, after the linked-in functions are made internal (module docstring)."""
        internalize_linked(self._final_module)
        numba_optimize(self)

    library._optimize_final_module = _optimize_final_module
