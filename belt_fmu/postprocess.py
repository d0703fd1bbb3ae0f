"""Post-processing of results as seed 000 (section 7) prescribes.

A belt of n elements meets a pulley like a chain: its speed and forces are modulated at the
polygon frequency ``f = R w n / l`` (seed 000 eq. 4.14; REFERENCES.md section 6), an artefact
of the discretization, not of the drive. Force signals are therefore low-pass filtered with a
cutoff of half that frequency before they are compared or reported.
"""
from __future__ import annotations

import numpy as np
from scipy.signal import butter, sosfiltfilt


def polygon_frequency(radius_m: float, speed_rad_per_s: float, n_elements: int, belt_length_m: float) -> float:
    """Polygon-effect frequency [Hz], ``R w n / l`` (seed 000 eq. 4.14): with ``R w`` the belt
    speed and ``l / n`` the element length, the number of nodes running onto a pulley per
    second. R is the pitch (cord) radius of the pulley whose speed w [rad/s] is given."""
    return radius_m * abs(speed_rad_per_s) * n_elements / belt_length_m


def lowpass(signal, sample_interval_s: float, cutoff_hz: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass of ``signal`` sampled every ``sample_interval_s``."""
    signal = np.asarray(signal, dtype=float)
    nyquist = 0.5 / sample_interval_s
    if not 0.0 < cutoff_hz < nyquist:
        raise ValueError(f"cutoff {cutoff_hz:.4g} Hz must lie between 0 and the Nyquist frequency "
                         f"{nyquist:.4g} Hz of the samples")
    sos = butter(order, cutoff_hz / nyquist, output="sos")
    return sosfiltfilt(sos, signal)


def polygon_filter(signal, sample_interval_s: float, polygon_hz: float) -> np.ndarray:
    """Remove the polygon effect: low-pass at half the polygon frequency (seed 000 section 7)."""
    return lowpass(signal, sample_interval_s, 0.5 * polygon_hz)
