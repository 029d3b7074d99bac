"""Buffers pickled before the buffer was laid out by concept load with today's code and serve on as before.

``tests/data/legacy_pickles.npz`` holds, per draw strategy, a buffer pickled by the earlier layout (commit cf051ef,
``tests/legacy_pickles.py``) and the rows it served next; loaded here, it must serve exactly those rows, with the
compiled draw and with the numpy code.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from legacy_pickles import CASES, LEGACY
from served_rows import CASES as FILLS
from served_rows import served

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws import ExactIndexDraw, FirstReachDraw, HerDraw, StoredDraws, WindowDraw

STRATEGY = {"exact_k3": ExactIndexDraw, "first_reach_k1": FirstReachDraw, "window_k2": WindowDraw,
            "stored_k2": StoredDraws, "her_bitflip": HerDraw, "her_terminating": HerDraw}


@pytest.fixture(scope="module")
def legacy() -> dict[str, np.ndarray]:
    with np.load(LEGACY) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("jit", [pytest.param(True, marks=pytest.mark.skipif(not compiled.AVAILABLE,
                                                                              reason="numba is not importable here")),
                                 False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_buffers_pickled_by_the_earlier_layout_serve_on_as_before(name: str, jit: bool,
                                                                   legacy: dict[str, np.ndarray]) -> None:
    buffer = pickle.loads(legacy[f"{name}/pickle"].tobytes())
    make_venv = FILLS[CASES[name][0]][0]
    if buffer.goal_env:  # as SB3's load_replay_buffer gives a HER buffer its env back
        buffer.set_env(make_venv())
    assert type(buffer._draws) is STRATEGY[name]
    assert not {"_meta", "_field", "batched_draws", "jit"} & set(vars(buffer))  # the earlier keys are gone
    buffer.jit = jit
    expected = {key.split("/", 1)[1]: value for key, value in legacy.items()
                if key.startswith(f"{name}/") and not key.endswith("/pickle")}
    got = served(buffer)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=f"{name}: {key}")
    # Pickled again by today's code, it loads as today's buffer and serves on identically.
    clone = pickle.loads(pickle.dumps(buffer))
    clone.jit = jit
    if clone.goal_env:
        clone.set_env(make_venv())
    np.testing.assert_array_equal(clone._index.meta, buffer._index.meta)
    again, original = served(clone), served(buffer)
    for key, value in original.items():
        np.testing.assert_array_equal(again[key], value, err_msg=f"{name} (pickled again): {key}")
