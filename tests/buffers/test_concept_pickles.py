"""Buffers pickled by two earlier states load with today's code and serve on exactly as before: before the storage
owned the rows (``_layout`` and the cursor on the buffer, the serving reading its settings from it, the draws reading
the buffer), and by 0.2 (sources holding the parts, views reading the buffer, the settings copied onto it).

``tests/data/concept_pickles.npz`` and ``tests/data/source_pickles.npz`` hold, per case (every draw strategy, both
layouts, 1-step and n-step serving, instruction and GoalEnv mode, demonstrations), a buffer pickled at commit a8ff4f8
(``tests/concept_pickles.py``) or c3075a3 (``tests/source_pickles.py``) and the rows it served next.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from concept_pickles import CASES, CONCEPT
from served_rows import CASES as FILLS
from served_rows import served
from source_pickles import SOURCE

from sb3_hir.buffers import compiled
from sb3_hir.buffers.serving import NSteps
from sb3_hir.buffers.storage import Storage


@pytest.fixture(scope="module", params=[CONCEPT, SOURCE], ids=["a8ff4f8", "c3075a3"])
def pickles(request: pytest.FixtureRequest) -> dict[str, np.ndarray]:
    with np.load(request.param) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("jit", [pytest.param(True, marks=pytest.mark.skipif(not compiled.AVAILABLE,
                                                                              reason="numba is not importable here")),
                                 False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_buffers_pickled_by_earlier_states_serve_on_as_before(name: str, jit: bool,
                                                              pickles: dict[str, np.ndarray]) -> None:
    buffer = pickle.loads(pickles[f"{name}/pickle"].tobytes())
    make_venv = FILLS[CASES[name][0]][0]
    if buffer.goal_env:  # as SB3's load_replay_buffer gives a HER buffer its env back
        buffer.set_env(make_venv())
    assert isinstance(buffer._storage, Storage) and "_layout" not in vars(buffer) and "pos" not in vars(buffer)
    assert buffer._storage.observations is buffer.observations and buffer._index.storage is buffer._storage
    assert isinstance(buffer._serving.windows, NSteps) == (buffer.n_steps > 1)
    buffer.jit = jit
    expected = {key.split("/", 1)[1]: value for key, value in pickles.items()
                if key.startswith(f"{name}/") and not key.endswith("/pickle")}
    got = served(buffer)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=f"{name}: {key}")
    clone = pickle.loads(pickle.dumps(buffer))  # pickled again by today's code: the rows and the cursor stay shared
    assert clone._storage.observations is clone.observations and clone._storage.cursor is clone._cursor
    clone.jit = jit
    if clone.goal_env:
        clone.set_env(make_venv())
    again, original = served(clone), served(buffer)
    for key, value in original.items():
        np.testing.assert_array_equal(again[key], value, err_msg=f"{name} (pickled again): {key}")
