"""The lumped model's step as a C function: what the FMU's native loader calls on its fast path.

:data:`advance` is a numba ``cfunc`` around :func:`belt_fmu.model.lumped.run` and nothing
else: it rebuilds the arrays ``run`` takes from raw addresses (``numba.carray``) and calls
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
copy of ``run``, and does not notice a change of lumped.py: after editing the lumped
kernels, delete the caches (``find belt_fmu -name "*.nb?" -delete``). FMUs are not affected:
each build ships the package under a new name, with a cache of its own.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import carray, cfunc, types
from numba.extending import intrinsic

from . import lumped
from .belt import BELT
from .contact import CONTACT
from .drive import PULLEY, ROLES
from .friction import FRICTION_LAW
from .parameters import Parameters
from .tensioner import TENSIONER

#: the words of the argument array, in order: (name, what)
ARGUMENTS = (
    ("y", "address of the state vector (float64)"), ("n_y", "its size"),
    ("work", "address of the work buffer (float64)"), ("n_work", "its size"),
    ("so", "address of the state offsets (int64)"), ("n_so", "their count"),
    ("wo", "address of the work offsets (int64)"), ("n_wo", "their count"),
    ("belt", "address of Parameters.belt (1 record)"),
    ("contact", "Parameters.contact (1 record)"),
    ("friction", "Parameters.friction (1 record)"),
    ("pulleys", "Parameters.pulleys (records)"), ("n_pulleys", "their count"),
    ("load_table", "Parameters.load_table (float64, rows x 2)"), ("n_load_rows", "its rows"),
    ("roles", "Parameters.roles (1 record)"),
    ("tensioner", "Parameters.tensioner (1 record)"),
    ("arm_friction", "Parameters.arm_friction (1 record)"),
    ("load_friction", "Parameters.load_friction (1 record)"),
    ("lumped_belt", "the LUMPED_BELT record (1)"),
    ("out", "address of the outputs (float64)"), ("n_out", "their count"),
)


def _pointer(element):
    """An intrinsic turning an int64 address into a pointer to ``element`` values (numba's
    carray takes a typed pointer; records cannot be given to it as a dtype)."""

    @intrinsic
    def cast(typingctx, address):
        signature = types.CPointer(element)(types.int64)

        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

        return signature, codegen

    return cast


_f64 = _pointer(types.float64)
_i64 = _pointer(types.int64)
_belt = _pointer(numba.from_dtype(BELT))
_contact = _pointer(numba.from_dtype(CONTACT))
_friction = _pointer(numba.from_dtype(FRICTION_LAW))
_pulley = _pointer(numba.from_dtype(PULLEY))
_roles = _pointer(numba.from_dtype(ROLES))
_tensioner = _pointer(numba.from_dtype(TENSIONER))
_lumped_belt = _pointer(numba.from_dtype(lumped.LUMPED_BELT))

SIGNATURE = types.int64(types.CPointer(types.int64), types.int64, types.float64, types.float64, types.float64,
                        types.CPointer(types.int64))


@cfunc(SIGNATURE, cache=True)
def advance(a, n_steps, dt, crank_omega, water_pump_torque, taken):
    """``lumped.run`` on the arrays whose addresses ``a`` holds (:data:`ARGUMENTS`)."""
    y = carray(_f64(a[0]), (a[1],))
    work = carray(_f64(a[2]), (a[3],))
    so = carray(_i64(a[4]), (a[5],))
    wo = carray(_i64(a[6]), (a[7],))
    p = Parameters(carray(_belt(a[8]), (1,)), carray(_contact(a[9]), (1,)), carray(_friction(a[10]), (1,)),
                   carray(_pulley(a[11]), (a[12],)), carray(_f64(a[13]), (a[14], 2)), carray(_roles(a[15]), (1,)),
                   carray(_tensioner(a[16]), (1,)), carray(_friction(a[17]), (1,)), carray(_friction(a[18]), (1,)))
    lb = carray(_lumped_belt(a[19]), (1,))
    out = carray(_f64(a[20]), (a[21],))
    status, steps = lumped.run(y, work, so, wo, p, lb, n_steps, dt, crank_omega, water_pump_torque, out)
    taken[0] = steps
    return status


def arguments(y, work, so, wo, parameters: Parameters, lumped_belt, out) -> np.ndarray:
    """The argument words of :data:`advance` for these arrays (:data:`ARGUMENTS`); the arrays
    must be C-contiguous and of the types ``run`` is compiled for, and outlive the words."""
    p = parameters
    arrays = {"y": y, "work": work, "so": so, "wo": wo, **p._asdict(), "lumped_belt": lumped_belt, "out": out}
    expected = {"y": np.float64, "work": np.float64, "so": np.int64, "wo": np.int64, "load_table": np.float64,
                "out": np.float64, "belt": BELT, "contact": CONTACT, "friction": FRICTION_LAW, "pulleys": PULLEY,
                "roles": ROLES, "tensioner": TENSIONER, "arm_friction": FRICTION_LAW, "load_friction": FRICTION_LAW,
                "lumped_belt": lumped.LUMPED_BELT}
    for name, array in arrays.items():
        if array.dtype != np.dtype(expected[name]) or not array.flags.c_contiguous:
            raise ValueError(f"{name}: a C-contiguous {np.dtype(expected[name])} array is needed")
    words = []
    for name, _ in ARGUMENTS:
        if name.startswith("n_"):
            array = arrays[{"n_pulleys": "pulleys", "n_load_rows": "load_table"}.get(name, name[2:])]
            words.append(array.shape[0])
        else:
            words.append(arrays[name].ctypes.data)
    return np.array(words, dtype=np.int64)
