"""The model: numba kernels and the objects that own their state. Importing it puts the
package's kernel cache locator in place (:mod:`belt_fmu.kernel_cache`) before any kernel is
decorated."""
from .. import kernel_cache

kernel_cache.install()
