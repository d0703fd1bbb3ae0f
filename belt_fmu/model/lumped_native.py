"""The lumped model's step as a C function: what the FMU's native loader calls on its fast path.

:data:`advance` is a numba ``cfunc`` around :func:`belt_fmu.model.lumped.run` and nothing
else: it rebuilds the arrays ``run`` takes from raw addresses (``numba.carray``,
:mod:`belt_fmu.model.native_arrays`) and calls
the same compiled ``run`` :class:`~belt_fmu.model.lumped_system.LumpedDrive` calls from
Python (the same overload: the arrays have the same types), so both paths give the same
bits. It needs no GIL and no Python object. Its C signature::

    int64_t advance(const int64_t *arguments, int64_t n_steps, double dt, double crank_omega,
                    double water_pump_torque, int64_t *taken)

returns ``run``'s status (:data:`belt_fmu.model.lumped.OK` or ``NOT_FINITE``) and stores the
number of steps taken in ``*taken``. ``arguments`` is the word array of
:func:`arguments` (:data:`ARGUMENTS`: addresses and sizes of the drive's arrays), which
must live as long as the drive. This module is imported only when a fast path is published
(it compiles, or loads from numba's cache, the cfunc at import: about 0.4 s from the cache).

If ``run``'s arguments change, change :data:`advance`, :data:`ARGUMENTS` and
:func:`arguments` with them (a cfunc that no longer compiles leaves the FMU on the Python
path; fmu_tests/test_fast_path.py then fails). numba caches :data:`advance` with its own
copy of ``run``; a change to the lumped kernels starts a new kernel folder
(:mod:`belt_fmu.kernel_cache`), so it is compiled again.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import carray, cfunc

from . import lumped
from .native_arrays import PARAMETER_WORDS, SIGNATURE, f64, parameters_at, pointer, words
from .parameters import Parameters

#: the words of the argument array, in order: (name, what)
ARGUMENTS = (
    ("state", "address of the state record (LUMPED_STATE, 1)"),
    ("work", "address of the work record (LUMPED_WORK, 1)"),
    *PARAMETER_WORDS,  # words 2 to 12
    ("lumped_belt", "the LUMPED_BELT record (1)"),
    ("out", "address of the outputs (float64)"), ("n_out", "their count"),
    ("crank_omega", "address of the call's crank speed (float64, 1)"),
    ("water_pump_torque", "address of the call's water-pump torque (float64, 1)"),
)

_lumped_belt = pointer(numba.from_dtype(lumped.LUMPED_BELT))
_lumped_state = pointer(numba.from_dtype(lumped.LUMPED_STATE))
_lumped_work = pointer(numba.from_dtype(lumped.LUMPED_WORK))


@cfunc(SIGNATURE, cache=True)
def advance(a, n_steps, dt, crank_omega, water_pump_torque, taken):
    """``lumped.run`` of one sample on the arrays whose addresses ``a`` holds (:data:`ARGUMENTS`)."""
    state = carray(_lumped_state(a[0]), (1,))
    work = carray(_lumped_work(a[1]), (1,))
    p = parameters_at(a, 2)
    lb = carray(_lumped_belt(a[13]), (1,))
    out = carray(f64(a[14]), (1, a[15]))
    crank = carray(f64(a[16]), (1,))
    pump = carray(f64(a[17]), (1,))
    crank[0] = crank_omega
    pump[0] = water_pump_torque
    status, _, steps = lumped.run(state, work, p, lb, n_steps, dt, crank, pump, out)
    taken[0] = steps
    return status


def arguments(state, work, parameters: Parameters, lumped_belt, out, crank_omega, water_pump_torque) -> np.ndarray:
    """The argument words of :data:`advance` for these arrays (:data:`ARGUMENTS`); the arrays
    must be C-contiguous and of the types ``run`` is compiled for, and outlive the words."""
    arrays = {"state": state, "work": work, **parameters._asdict(), "lumped_belt": lumped_belt, "out": out,
              "crank_omega": crank_omega, "water_pump_torque": water_pump_torque}
    return words(ARGUMENTS, arrays, {"state": lumped.LUMPED_STATE, "work": lumped.LUMPED_WORK,
                                     "out": np.float64, "lumped_belt": lumped.LUMPED_BELT,
                                     "crank_omega": np.float64, "water_pump_torque": np.float64})
