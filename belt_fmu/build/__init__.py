"""Building the FMU: ``belt-fmu build`` (see :mod:`belt_fmu.build.fmu`)."""
from .fmu import build_fmu

__all__ = ["build_fmu"]
