"""belt_fmu: planar multibody belt-drive dynamics as a co-simulation FMU.

Public API::

    from belt_fmu import load_layout, BeltDrive, simulate
    results = simulate(load_layout(), rpm=800, t_end=0.5)

The model (numba) loads on first use of ``BeltDrive`` or ``simulate``, so importing the
package and reading layouts stays fast.
"""
from .layout import Layout, LayoutError, load_layout

__all__ = ["BeltDrive", "DivergenceError", "InitializationError", "Layout", "LayoutError", "Results",
           "load_layout", "simulate"]
__version__ = "0.1.0"

_LAZY = {
    "BeltDrive": ".model.system",
    "DivergenceError": ".model.system",
    "InitializationError": ".model.initialization",
    "Results": ".simulation",
    "simulate": ".simulation",
}


def __getattr__(name):  # PEP 562: import the model only when it is asked for
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
