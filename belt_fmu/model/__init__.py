"""The model: numba kernels and the objects that own their state. Importing it puts the
package's kernel cache locator (:mod:`belt_fmu.kernel_cache`) and numba's inlining in linear
time (:mod:`belt_fmu.inlining`) in place before any kernel is decorated."""
from .. import inlining, kernel_cache

kernel_cache.install()
inlining.install()
