"""The model: numba kernels and the objects that own their state. Importing it puts the
package's kernel cache locator (:mod:`belt_fmu.kernel_cache`), numba's inlining in linear
time (:mod:`belt_fmu.inlining`) and its typing of calls once per kind (:mod:`belt_fmu.call_typing`)
in place before any kernel is decorated."""
from .. import call_typing, inlining, kernel_cache

kernel_cache.install()
inlining.install()
call_typing.install()
