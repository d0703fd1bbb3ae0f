"""The model's arrays: the state vector and the work buffers, each laid out by one table.

The whole dynamic state lives in ONE flat float64 vector ``y`` (saving and restoring it, e.g.
as FMU state, is a copy); diagnostics of the last step and scratch live in one float and one
integer work buffer. The tables below are the only place their layout is written: the
buffer sizes, the offsets and the named views (:class:`StateViews`, :class:`Work`) are
generated from them, in table order, each view a reshaped slice of its buffer. Shapes are
in the dimensions ``n`` (belt nodes), ``p`` (pulleys), ``np`` (their product: one entry per
possible contact) and ``k`` (friction states per contact, :func:`friction_slots`) or fixed
sizes.

Kernels take the views; the entries called from Python (:func:`belt_fmu.model.integrator.
run`) take the flat buffers and make the views in compiled code, because numba types a
named tuple of 30 arrays slowly on every call from Python.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from .belt import IMPLICIT_WORK_COLUMNS, SEPARATOR_WORK_SIZE
from .friction import BATCH_COLUMNS, friction_state_count

#: the state vector y: (name, shape, meaning)
STATE_LAYOUT = (
    ("q", ("n", 3), "belt node x [m], y [m], phi [rad] (cord line, CCW)"),
    ("u", ("n", 3), "their time derivatives [m/s, m/s, rad/s]"),
    ("theta", ("p",), "pulley rotation angles [rad], CCW"),
    ("omega", ("p",), "pulley angular velocities [rad/s], CCW"),
    ("arm", (2,), "tensioner arm angle psi [rad] (polar angle of the pulley centre about the "
                  "pivot, CCW) and its rate [rad/s]"),
    ("friction", ("n", "p", "k"), "friction states per belt node and pulley; zero out of contact"),
    ("slip", ("n", "p"), "slip velocity of each contact at the end of the last step, node minus "
                         "pulley surface [m/s]; zero out of contact. The friction solve starts "
                         "from it, so it is state: the next step's rounding depends on it"),
    ("friction_force", ("n", "p"), "friction force of each contact on the node along the pulley's CCW "
                                   "tangent in the last step [N]; zero out of contact. The next step's "
                                   "friction sweep starts the pulleys from it (friction.friction_impulses), "
                                   "so it is state"),
)
#: the state's leading views: all that the outputs read of a state (outputs.evaluate_outputs),
#: so that the averaged outputs' copy of a step's start copies these alone
MOTION = ("q", "u", "theta", "omega", "arm")
assert tuple(name for name, _, _ in STATE_LAYOUT[:len(MOTION)]) == MOTION, "the motion views lead the state"

#: the float work buffer: diagnostics of the last step (overwritten every step) and scratch
WORK_LAYOUT = (
    ("node_force", ("n", 3), "force/moment on each node, friction excluded [N, N m]"),
    ("axial_force", ("n",), "axial force of element i (node i -> i+1), tension positive [N]"),
    ("element_direction", ("n", 2), "unit chord direction of element i"),
    ("implicit_work", ("n", IMPLICIT_WORK_COLUMNS), "scratch of the implicit belt solves (belt.implicit_belt_correction, "
                                                   "belt.implicit_axial_correction)"),
    ("element_load", (8, "n"), "scratch, a column per quantity (stored element by element, read contiguously): "
                               "element i's axial force, chord direction, force on node i (x, y; node i+1 gets "
                               "its opposite), the moments it takes from nodes i, i+1 and its inverse chord "
                               "length [1/m] (belt.element_loads)"),
    ("normal_force", ("n", "p"), "contact normal force [N]"),
    ("friction_work", ("k",), "scratch: trial friction states of one contact"),
    ("arm_work", (1,), "scratch: the (stateless) friction solves of the arm and the loads"),
    ("contact_frame", ("np", 3), "contact k's unit normal x, y (pulley centre to node) and "
                                 "distance [m], k < contact_count[0]"),
    ("hub_force", ("p", 2), "force of the belt on each pulley [N]"),
    ("belt_torque", ("p",), "torque of the belt on each pulley, CCW [N m]"),
    ("centers", ("p", 2), "current pulley centres [m]"),
    ("center_velocity", ("p", 2), "their velocities [m/s]"),
    ("port_torque", ("p",), "input load torque on each pulley, against its running direction [N m] (the "
                            "accessories' inputs; a torque-driven crank's: minus the engine torque); set "
                            "before each advance, 0 where there is no input"),
    ("lists_valid_for", (1,), "time [s] the neighbour lists stay valid (contact.rebuild_neighbour_lists); "
                              "they are rebuilt before a step it does not cover"),
    ("separator_work", (SEPARATOR_WORK_SIZE,), "scratch of the implicit belt solve's separator system "
                                               "(belt.implicit_belt_correction)"),
    ("contact_batch", (BATCH_COLUMNS, "np"), "scratch: the contacts of a velocity law solved at once, a column "
                                            "per quantity (friction.velocity_batch)"),
)

#: the integer work buffer: neighbour lists (rebuilt every few steps) and this step's contacts
INDEX_LAYOUT = (
    ("candidates", ("p", "n"), "nodes near pulley j, the first candidate_count[j] valid"),
    ("candidate_count", ("p",), "number of candidates of each pulley"),
    ("contact_node", ("np",), "node of contact k, k < contact_count[0]"),
    ("contact_pulley", ("np",), "pulley of contact k"),
    ("contact_count", (1,), "contacts of this step"),
    ("contact_start", ("p",), "first contact of pulley j in the list (friction.pulley_contacts)"),
    ("span_members", ("n",), "scratch: elements of the span being measured"),
    ("span_first_member", ("p",), "where the search for each span's middle elements starts (outputs.span_tension): "
                                  "the first of them when last measured"),
)

_DIMENSIONS = {"n": -1, "p": -2, "k": -3, "np": -4}  # codes of the symbolic extents in the arrays below


def _extents(layout) -> np.ndarray:
    """(views, 3) extents of each view, symbols as negative codes, padded with 1."""
    out = np.ones((len(layout), 3), dtype=np.int64)
    for i, (_, shape, _) in enumerate(layout):
        for d, extent in enumerate(shape):
            out[i, d] = _DIMENSIONS.get(extent, extent)
    return out


STATE_EXTENTS = _extents(STATE_LAYOUT)
WORK_EXTENTS = _extents(WORK_LAYOUT)
INDEX_EXTENTS = _extents(INDEX_LAYOUT)

StateViews = namedtuple("StateViews", [name for name, _, _ in STATE_LAYOUT], module=__name__)
StateViews.__doc__ = "Named views into the flat state vector ``y`` (:data:`STATE_LAYOUT`)."
Work = namedtuple("Work", [name for name, _, _ in WORK_LAYOUT + INDEX_LAYOUT], module=__name__)
Work.__doc__ = "Named views into the float and integer work buffers (:data:`WORK_LAYOUT`, :data:`INDEX_LAYOUT`)."


@njit(cache=True)
def friction_slots(friction) -> int:
    """Friction states stored per contact for the FRICTION_LAW record ``friction`` (1,): at
    least one, so every law has the same views."""
    return max(1, friction_state_count(friction[0].law, friction[0].gms_count))


@njit(cache=True)
def dimensions(parameters):
    """(n, p, k) of a drive's :class:`~belt_fmu.model.parameters.Parameters`."""
    return parameters.belt[0].n_nodes, parameters.pulleys.shape[0], friction_slots(parameters.friction)


@njit(cache=True)
def _extent(code, n, p, k):
    if code == -1:
        return n
    if code == -2:
        return p
    if code == -3:
        return k
    if code == -4:
        return n * p
    return code


@njit(cache=True)
def offsets(extents, n, p, k):
    """Start of each view in its buffer, and the buffer's size as the last entry."""
    out = np.zeros(extents.shape[0] + 1, dtype=np.int64)
    for i in range(extents.shape[0]):
        size = 1
        for d in range(extents.shape[1]):
            size *= _extent(extents[i, d], n, p, k)
        out[i + 1] = out[i] + size
    return out


@njit(cache=True)
def buffer_sizes(n, p, k):
    """Sizes of the state vector and of the float and integer work buffers."""
    return (offsets(STATE_EXTENTS, n, p, k)[-1], offsets(WORK_EXTENTS, n, p, k)[-1],
            offsets(INDEX_EXTENTS, n, p, k)[-1])


# One helper per rank: view i of a buffer, shaped by its row of the extents table. The
# unpack functions below call them in table order; fmu_tests/test_state.py checks that the
# views have the tables' shapes and tile their buffers. Inlined: compiled apart, numba
# compiled one for each constant i it was called with (31 of them).
@njit(cache=True, inline="always")
def _vector(buffer, starts, extents, i, n, p, k):
    return buffer[starts[i]:starts[i + 1]]


@njit(cache=True, inline="always")
def _matrix(buffer, starts, extents, i, n, p, k):
    return buffer[starts[i]:starts[i + 1]].reshape((_extent(extents[i, 0], n, p, k),
                                                    _extent(extents[i, 1], n, p, k)))


@njit(cache=True, inline="always")
def _block(buffer, starts, extents, i, n, p, k):
    return buffer[starts[i]:starts[i + 1]].reshape((_extent(extents[i, 0], n, p, k),
                                                    _extent(extents[i, 1], n, p, k),
                                                    _extent(extents[i, 2], n, p, k)))


@njit(cache=True)
def unpack_state(y, n, p, k):
    """:class:`StateViews` of the flat state vector ``y`` (:data:`STATE_LAYOUT`)."""
    o, e = offsets(STATE_EXTENTS, n, p, k), STATE_EXTENTS
    return StateViews(
        _matrix(y, o, e, 0, n, p, k),  # q
        _matrix(y, o, e, 1, n, p, k),  # u
        _vector(y, o, e, 2, n, p, k),  # theta
        _vector(y, o, e, 3, n, p, k),  # omega
        _vector(y, o, e, 4, n, p, k),  # arm
        _block(y, o, e, 5, n, p, k),  # friction
        _matrix(y, o, e, 6, n, p, k),  # slip
        _matrix(y, o, e, 7, n, p, k),  # friction_force
    )


@njit(cache=True, _nrt=False, inline="always")
def motion_size(s):
    """Length of the state vector's leading part, the views :data:`MOTION` (``s``: the state's
    views)."""
    return s.q.size + s.u.size + s.theta.size + s.omega.size + s.arm.size


@njit(cache=True)
def unpack_work(work, index_work, n, p, k):
    """:class:`Work` views of the float and integer work buffers (:data:`WORK_LAYOUT`, then
    :data:`INDEX_LAYOUT`)."""
    f, e = offsets(WORK_EXTENTS, n, p, k), WORK_EXTENTS
    i, x = offsets(INDEX_EXTENTS, n, p, k), INDEX_EXTENTS
    return Work(
        _matrix(work, f, e, 0, n, p, k),  # node_force
        _vector(work, f, e, 1, n, p, k),  # axial_force
        _matrix(work, f, e, 2, n, p, k),  # element_direction
        _matrix(work, f, e, 3, n, p, k),  # implicit_work
        _matrix(work, f, e, 4, n, p, k),  # element_load
        _matrix(work, f, e, 5, n, p, k),  # normal_force
        _vector(work, f, e, 6, n, p, k),  # friction_work
        _vector(work, f, e, 7, n, p, k),  # arm_work
        _matrix(work, f, e, 8, n, p, k),  # contact_frame
        _matrix(work, f, e, 9, n, p, k),  # hub_force
        _vector(work, f, e, 10, n, p, k),  # belt_torque
        _matrix(work, f, e, 11, n, p, k),  # centers
        _matrix(work, f, e, 12, n, p, k),  # center_velocity
        _vector(work, f, e, 13, n, p, k),  # port_torque
        _vector(work, f, e, 14, n, p, k),  # lists_valid_for
        _vector(work, f, e, 15, n, p, k),  # separator_work
        _matrix(work, f, e, 16, n, p, k),  # contact_batch
        _matrix(index_work, i, x, 0, n, p, k),  # candidates
        _vector(index_work, i, x, 1, n, p, k),  # candidate_count
        _vector(index_work, i, x, 2, n, p, k),  # contact_node
        _vector(index_work, i, x, 3, n, p, k),  # contact_pulley
        _vector(index_work, i, x, 4, n, p, k),  # contact_count
        _vector(index_work, i, x, 5, n, p, k),  # contact_start
        _vector(index_work, i, x, 6, n, p, k),  # span_members
        _vector(index_work, i, x, 7, n, p, k),  # span_first_member
    )


@njit(cache=True)
def unpack(parameters, y, work, index_work):
    """(:class:`StateViews`, :class:`Work`) of a drive's buffers."""
    n, p, k = dimensions(parameters)
    return unpack_state(y, n, p, k), unpack_work(work, index_work, n, p, k)
