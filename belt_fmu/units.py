"""Unit conversions used across the package (the model itself is SI throughout)."""
import math

RPM = 2.0 * math.pi / 60.0  # rad/s per rpm
