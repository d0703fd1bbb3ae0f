"""Arrays from raw addresses, for the C functions the FMU's native loader calls on its fast
path (:mod:`belt_fmu.model.lumped_native`, :mod:`belt_fmu.model.discretized_native`).

Such a C function (a numba ``cfunc``) gets its arrays as an int64 word array: addresses and
sizes, in the order of a table of ``(name, what)`` (the module's ``ARGUMENTS``). It rebuilds
them with ``numba.carray`` (:func:`parameters_at` for the drive's parameter records) and
calls the same compiled kernel the drive calls from Python: the arrays have the same types,
so it is the same overload and gives the same bits. :func:`words` makes the word array from
the drive's arrays and checks their types.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

from .belt import BELT
from .contact import CONTACT
from .drive import PULLEY, ROLES
from .friction import FRICTION_LAW
from .parameters import Parameters
from .tensioner import TENSIONER

#: the words of :class:`~belt_fmu.model.parameters.Parameters`, in order (11 words)
PARAMETER_WORDS = (
    ("belt", "address of Parameters.belt (1 record)"),
    ("contact", "Parameters.contact (1 record)"),
    ("friction", "Parameters.friction (1 record)"),
    ("pulleys", "Parameters.pulleys (records)"), ("n_pulleys", "their count"),
    ("load_table", "Parameters.load_table (float64, rows x 2)"), ("n_load_rows", "its rows"),
    ("roles", "Parameters.roles (1 record)"),
    ("tensioner", "Parameters.tensioner (1 record)"),
    ("arm_friction", "Parameters.arm_friction (1 record)"),
    ("load_friction", "Parameters.load_friction (1 record)"),
)
#: the dtype every array of a word table must have
DTYPES = {"load_table": np.float64, "belt": BELT, "contact": CONTACT, "friction": FRICTION_LAW, "pulleys": PULLEY,
          "roles": ROLES, "tensioner": TENSIONER, "arm_friction": FRICTION_LAW, "load_friction": FRICTION_LAW}
#: the size words that are not "n_" + the array's name
SIZE_OF = {"n_pulleys": "pulleys", "n_load_rows": "load_table"}


def pointer(element):
    """An intrinsic turning an int64 address into a pointer to ``element`` values (numba's
    carray takes a typed pointer; records cannot be given to it as a dtype)."""

    @intrinsic
    def cast(typingctx, address):
        signature = types.CPointer(element)(types.int64)

        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

        return signature, codegen

    return cast


f64 = pointer(types.float64)
i64 = pointer(types.int64)
_belt = pointer(numba.from_dtype(BELT))
_contact = pointer(numba.from_dtype(CONTACT))
_friction = pointer(numba.from_dtype(FRICTION_LAW))
_pulley = pointer(numba.from_dtype(PULLEY))
_roles = pointer(numba.from_dtype(ROLES))
_tensioner = pointer(numba.from_dtype(TENSIONER))

#: the C signature of the loader's kernels (FastKernel in belt_fmu/build/native_loader/loader.c)
SIGNATURE = types.int64(types.CPointer(types.int64), types.int64, types.float64, types.float64, types.float64,
                        types.CPointer(types.int64))


@njit(inline="always")
def parameters_at(a, k):
    """The :class:`~belt_fmu.model.parameters.Parameters` whose words (:data:`PARAMETER_WORDS`)
    start at ``a[k]``."""
    return Parameters(carray(_belt(a[k]), (1,)), carray(_contact(a[k + 1]), (1,)), carray(_friction(a[k + 2]), (1,)),
                      carray(_pulley(a[k + 3]), (a[k + 4],)), carray(f64(a[k + 5]), (a[k + 6], 2)),
                      carray(_roles(a[k + 7]), (1,)), carray(_tensioner(a[k + 8]), (1,)),
                      carray(_friction(a[k + 9]), (1,)), carray(_friction(a[k + 10]), (1,)))


def words(table, arrays: dict, dtypes: dict) -> np.ndarray:
    """The word array of ``table`` ((name, what) pairs) for ``arrays`` (name -> array; the
    parameter records by their field names): an array's address, or the size of its first
    axis for a word "n_<name>". Every array must be C-contiguous with the dtype ``dtypes``
    (or :data:`DTYPES`) gives it, and outlive the words."""
    expected = {**DTYPES, **dtypes}
    for name, array in arrays.items():
        if array.dtype != np.dtype(expected[name]) or not array.flags.c_contiguous:
            raise ValueError(f"{name}: a C-contiguous {np.dtype(expected[name])} array is needed")
    values = []
    for name, _ in table:
        if name.startswith("n_"):
            values.append(arrays[SIZE_OF.get(name, name[2:])].shape[0])
        else:
            values.append(arrays[name].ctypes.data)
    return np.array(values, dtype=np.int64)
