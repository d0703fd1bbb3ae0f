"""belt_fmu: planar multibody belt-drive dynamics as a co-simulation FMU.

Public API::

    from belt_fmu import load_layout, BeltDrive, simulate
    results = simulate(load_layout(), rpm=800, t_end=0.5)
"""
from .layout import Layout, LayoutError, load_layout
from .model.system import BeltDrive, DivergenceError
from .simulate import Results, simulate

__all__ = ["BeltDrive", "DivergenceError", "Layout", "LayoutError", "Results", "load_layout", "simulate"]
__version__ = "0.1.0"
