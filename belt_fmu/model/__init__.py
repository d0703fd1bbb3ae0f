"""The model: numba kernels and the objects that own their state. Importing it puts the
package's kernel cache locator (:mod:`belt_fmu.kernel_cache`), numba's inlining in linear
time (:mod:`belt_fmu.inlining`), its typing of calls once per kind (:mod:`belt_fmu.call_typing`)
and the internal linkage of kernels compiled apart (:mod:`belt_fmu.linking`) in place before
any kernel is decorated."""
from .. import call_typing, inlining, kernel_cache, linking

kernel_cache.install()
inlining.install()
call_typing.install()
linking.install()
