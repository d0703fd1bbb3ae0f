"""Fuzz of the layout loader (hypothesis, fixed seed): mutated built-in layouts are either
refused with a LayoutError, or they build, start and step, or the model says why it cannot
(InitializationError, DivergenceError). Anything else (a ValueError from deep inside, a
MemoryError, a hang) breaks the error contract. Each accepted layout is bounded in cost by
the layout check (element count, minimum time step), so the test's time is bounded too."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from belt_fmu.layout import LayoutError, load_layout_data  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

BASE = tomllib.loads((Path(__file__).resolve().parent.parent / "belt_fmu" / "layouts" / "default.toml").read_text())
#: optional keys the built-in layout leaves out, mutated too
EXTRA = [("friction", "bristle_damping_Ns_per_m2"), ("friction", "law"), ("tensioner", "preload_Nm"),
         ("belt", "unstretched_length_m"), ("drive", "headline_pulley")]


def _leaves(data, prefix=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, prefix + (key,))
    elif isinstance(data, list) and data and isinstance(data[0], dict):
        for i, value in enumerate(data):
            yield from _leaves(value, prefix + (i,))
    else:
        yield prefix


PATHS = sorted(set(_leaves(BASE)) | set(EXTRA), key=str)

NUMBERS = st.one_of(
    st.sampled_from([0, -1, 1, 0.0, -0.0, 1e-30, 1e30, 2 ** 62, 1e9, math.nan, math.inf, -math.inf]),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
    st.integers(min_value=-10 ** 6, max_value=10 ** 6),
)
VALUES = st.one_of(
    NUMBERS,
    st.lists(NUMBERS, min_size=0, max_size=6),
    st.sampled_from(["x", "", "tanh", "bristle", "gms", "back", "ribbed", "cw", True, None]),  # None: remove
)
SCALES = st.floats(min_value=-12.0, max_value=12.0)


@st.composite
def mutated_layouts(draw):
    data = copy.deepcopy(BASE)
    changes = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(PATHS))
        table = data
        for key in path[:-1]:
            table = table[key] if not isinstance(key, str) else table.setdefault(key, {})
        old = table.get(path[-1])
        if isinstance(old, (int, float)) and not isinstance(old, bool) and draw(st.booleans()):
            new = old * 10.0 ** draw(SCALES)  # the same key, another magnitude
            new = int(new) if isinstance(old, int) and abs(new) < 2 ** 63 else new
        else:
            new = draw(VALUES)
        if new is None:
            table.pop(path[-1], None)
        else:
            table[path[-1]] = new
        changes.append((".".join(map(str, path)), new))
    return data, changes


@seed(20261123)
@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(mutated_layouts())
def test_mutated_layouts_fail_only_with_clear_errors(case):
    from belt_fmu.model.initialization import InitializationError
    from belt_fmu.model.system import BeltDrive, DivergenceError

    data, changes = case
    try:
        layout = load_layout_data(data, "fuzz.toml")
    except LayoutError as err:
        assert all(line.startswith("fuzz.toml: ") for line in err.problems), changes
        return
    try:
        drive = BeltDrive(layout)
        drive.reset(80.0, 0.0, settle_time=0.0)
        drive.advance(2e-3, 80.0, 0.0)
    except (InitializationError, DivergenceError) as err:
        assert str(err), changes
