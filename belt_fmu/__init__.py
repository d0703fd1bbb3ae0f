"""belt_fmu: planar multibody belt-drive dynamics as a co-simulation FMU."""
from .layout import Layout, LayoutError, load_layout

__version__ = "0.1.0"
