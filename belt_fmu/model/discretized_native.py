"""The discretized model's communication step as a C function: what the FMU's native loader
calls on its fast path.

:data:`advance` is a numba ``cfunc`` around :func:`belt_fmu.model.integrator.communicate`
and nothing else: it rebuilds the arrays it takes from raw addresses
(:mod:`belt_fmu.model.native_arrays`) and calls the same compiled entry
:class:`~belt_fmu.model.system.BeltDrive` calls from Python (the same overload: the arrays
have the same types), so both paths give the same bits, and share the
drive's ``control`` words (the inputs the state runs at and the outputs' trial step). It
needs no GIL and no Python object. Its C signature (that of
:data:`belt_fmu.model.lumped_native.advance`)::

    int64_t advance(const int64_t *arguments, int64_t n_steps, double dt, double crank_omega,
                    double water_pump_torque, int64_t *taken)

With ``n_steps`` > 0, a communication step: returns its status
(:data:`belt_fmu.model.integrator.OK`, ``NOT_FINITE``, ``OVERSTRETCHED`` or ``RUNAWAY``)
and stores the number of steps taken in ``*taken``; the outputs are then out of date. With
``n_steps`` = 0, brings the outputs up to date (the trial step, when
they are not current) and returns OK; the other numbers are not used. ``arguments`` is the
word array of :func:`arguments` (:data:`ARGUMENTS`), which must live as long as the drive.
This module is imported only when a fast path is published (it compiles, or loads from
numba's cache, the cfunc at import).

If the entry's arguments change, change :data:`advance`, :data:`ARGUMENTS` and
:func:`arguments` with them (a cfunc that no longer compiles leaves the FMU on the Python
path; fmu_tests/test_fast_path.py then fails). numba caches :data:`advance` with its own
copy of the kernels; a change to any of them starts a new kernel folder
(:mod:`belt_fmu.kernel_cache`), so it is compiled again.
"""
from __future__ import annotations

import numpy as np
from numba import carray, cfunc

from .integrator import communicate
from .native_arrays import PARAMETER_WORDS, SIGNATURE, f64, i64, parameters_at, words
from .parameters import Parameters

#: the words of the argument array, in order: (name, what)
ARGUMENTS = (
    ("y", "address of the state vector (float64)"), ("n_y", "its size"),
    ("work", "address of the work buffer (float64)"), ("n_work", "its size"),
    ("index_work", "address of the index work buffer (int64)"), ("n_index_work", "its size"),
    *PARAMETER_WORDS,  # words 6 to 16
    ("trial_y", "address of the outputs' trial state (float64, the size of y)"),
    ("trial_start", "address of the state it started from (float64, the size of y)"),
    ("control", "address of the control words and the outputs' running integral (float64, "
                "integrator.control_size)"), ("n_control", "their count"),
    ("out", "address of the outputs (float64)"), ("n_out", "their count"),
)


@cfunc(SIGNATURE, cache=True)
def advance(a, n_steps, dt, crank_omega, water_pump_torque, taken):
    """``communicate`` on the arrays whose addresses ``a`` holds (:data:`ARGUMENTS`)."""
    y = carray(f64(a[0]), (a[1],))
    work = carray(f64(a[2]), (a[3],))
    index_work = carray(i64(a[4]), (a[5],))
    p = parameters_at(a, 6)
    trial_y = carray(f64(a[17]), (a[1],))
    trial_start = carray(f64(a[18]), (a[1],))
    control = carray(f64(a[19]), (a[20],))
    out = carray(f64(a[21]), (a[22],))
    status, steps = communicate(y, work, index_work, p, trial_y, trial_start, control, n_steps, dt, crank_omega,
                                water_pump_torque, out)
    taken[0] = steps
    return status


def arguments(y, work, index_work, parameters: Parameters, trial_y, trial_start, control, out) -> np.ndarray:
    """The argument words of :data:`advance` for these arrays (:data:`ARGUMENTS`); the arrays
    must be C-contiguous and of the types the entry is compiled for, and outlive the words."""
    if not (trial_y.shape == trial_start.shape == y.shape):
        raise ValueError("the trial state and its start must have the state vector's size")
    arrays = {"y": y, "work": work, "index_work": index_work, **parameters._asdict(), "trial_y": trial_y,
              "trial_start": trial_start, "control": control, "out": out}
    return words(ARGUMENTS, arrays, {"y": np.float64, "work": np.float64, "index_work": np.int64,
                                     "trial_y": np.float64, "trial_start": np.float64, "control": np.float64,
                                     "out": np.float64})
