"""The state vector and work buffers are laid out by one table each (belt_fmu.model.state):
the views made in compiled code have the tables' shapes and tile their buffers exactly; the
contact list in them is split by pulley."""
from collections import namedtuple

import numpy as np
import pytest
from numba import njit

from belt_fmu import BeltDrive, load_layout
from belt_fmu.model.friction import pulley_contacts
from belt_fmu.model.state import (INDEX_LAYOUT, STATE_LAYOUT, WORK_LAYOUT, StateViews, Work, buffer_sizes,
                                  unpack, unpack_state, unpack_work)


def table_shape(shape, n, p, k):
    extents = {"n": n, "p": p, "k": k, "np": n * p}
    return tuple(extents.get(extent, extent) for extent in shape)


def assert_tiles(buffer, views, layout, n, p, k):
    """Each view has its table shape, and writing view i's number into it marks the buffer as
    the table's consecutive blocks: every element in exactly one view, in table order."""
    assert [name for name, _, _ in layout] == list(views._fields)
    buffer[:] = 0
    expected = []
    for i, ((name, shape, _), view) in enumerate(zip(layout, views)):
        assert view.shape == table_shape(shape, n, p, k), name
        assert np.shares_memory(view, buffer), name
        view[...] = i + 1
        expected += [i + 1] * view.size
    assert buffer.tolist() == expected


@pytest.mark.parametrize("n, p, k", [(12, 2, 1), (13, 3, 6), (150, 7, 1)])
def test_views_tile_the_buffers_exactly(n, p, k):
    n_state, n_work, n_index = buffer_sizes(n, p, k)
    y, work, index_work = np.zeros(n_state), np.zeros(n_work), np.zeros(n_index, dtype=np.int64)
    state = unpack_state(y, n, p, k)
    assert isinstance(state, StateViews)
    assert_tiles(y, state, STATE_LAYOUT, n, p, k)
    views = unpack_work(work, index_work, n, p, k)
    assert isinstance(views, Work)
    floats = len(WORK_LAYOUT)
    assert_tiles(work, _part(views, 0, floats), WORK_LAYOUT, n, p, k)
    assert_tiles(index_work, _part(views, floats, len(views)), INDEX_LAYOUT, n, p, k)


def _part(views, start, stop):
    """The views ``start:stop`` as a named tuple of their own (for assert_tiles)."""
    return namedtuple("Part", views._fields[start:stop])(*views[start:stop])


def test_state_vector_holds_nodes_pulleys_arm_and_friction_states():
    """6 per node (x, y, phi and their rates), 2 per pulley, 2 for the arm, k friction
    states, the slip and the friction force per contact."""
    assert buffer_sizes(150, 7, 2)[0] == 6 * 150 + 2 * 7 + 2 + 150 * 7 * (2 + 2)


@njit(cache=False)
def contact_ranges(parameters, y, work, index_work):
    """friction.pulley_contacts of every pulley, (first, end) per row."""
    _, w = unpack(parameters, y, work, index_work)
    out = np.empty((parameters.pulleys.shape[0], 2), dtype=np.int64)
    for j in range(out.shape[0]):
        out[j, 0], out[j, 1] = pulley_contacts(w, j)
    return out


def test_contact_list_is_split_by_pulley():
    """After a step of the built-in drive, friction.pulley_contacts gives each pulley a range
    of the contact list that holds its contacts and no other's, the ranges tile the list in
    pulley order (the friction sweep, which interleaves them, visits every contact once), and
    every pulley has contacts."""
    drive = BeltDrive(load_layout())
    drive.reset(80.0, settle_time=0.0)
    drive.advance(drive.dt, 80.0)
    ranges = contact_ranges(drive.parameters, drive.y, drive.work, drive.index_work)
    w = drive.arrays
    assert ranges[0, 0] == 0 and ranges[-1, 1] == w.contact_count[0]
    assert np.array_equal(ranges[1:, 0], ranges[:-1, 1])
    for j, (first, end) in enumerate(ranges):
        assert end > first
        assert np.all(w.contact_pulley[first:end] == j)
