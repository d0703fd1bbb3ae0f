"""The polygon effect of the discretized belt ([Scania thesis] section 7, docs/references.md R6).

n nodes running onto a pulley modulate the forces at f = R w n / l. It must show in the
hub-force spectrum at that frequency, and the thesis's filter (low-pass at f/2) must remove it.
"""
import numpy as np
import pytest

from belt_fmu import load_layout
from belt_fmu.model.system import BeltDrive
from belt_fmu.postprocess import polygon_filter, polygon_frequency
from belt_fmu.simulation import RPM, simulate

SAMPLE = 1e-4  # [s]


@pytest.fixture(scope="module")
def run():
    layout = load_layout()
    drive = BeltDrive(layout)
    results = simulate(rpm=800, t_end=0.15, water_pump_torque=2.0, output_interval=SAMPLE, drive=drive)
    crank = layout.crank_index
    f_poly = polygon_frequency(drive.geometry.radii[crank], 800 * RPM, layout.belt.n_elements,
                               drive.current_path().length)
    return results, f_poly


def amplitude_spectrum(signal):
    x = signal - signal.mean()
    return np.fft.rfftfreq(len(x), SAMPLE), 2 * np.abs(np.fft.rfft(x * np.hanning(len(x)))) / len(x)


def test_hub_force_spectrum_peaks_at_the_polygon_frequency(run):
    """The strongest line between f/2 and 1.5 f lies within 2 % of f (790 Hz here; the
    spectral resolution of 0.15 s is 6.7 Hz, under 1 %)."""
    results, f_poly = run
    freq, amp = amplitude_spectrum(results["hub_force_crank"])
    band = (freq > 0.5 * f_poly) & (freq < 1.5 * f_poly)
    peak = freq[band][np.argmax(amp[band])]
    assert peak == pytest.approx(f_poly, rel=0.02)
    assert amp[band].max() > 10 * np.median(amp[band])


def test_polygon_filter_removes_the_line(run):
    results, f_poly = run
    raw = results["hub_force_crank"]
    filtered = polygon_filter(raw, SAMPLE, f_poly)
    freq, amp_raw = amplitude_spectrum(raw)
    _, amp_filtered = amplitude_spectrum(filtered)
    near = np.abs(freq - f_poly) < 0.03 * f_poly
    assert amp_filtered[near].max() < 0.01 * amp_raw[near].max()
    assert filtered.mean() == pytest.approx(raw.mean(), rel=1e-3)  # the mean load is kept
