"""The compiled bounds check of the drawn goals (``draw_checks.goals_within``) decides as the numpy reductions do."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draw_checks import goals_within

pytestmark = [pytest.mark.once("dagger"),
              pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not importable here")]


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from([np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float32, np.float64]),
    size=st.integers(1, 40),
    low=st.sampled_from([-1.0, 0.0, 3.0, -np.inf]),
    high=st.sampled_from([10.0, 2.0, 255.0, np.inf]),
    nan=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_goals_within_decides_as_min_and_max(dtype: Any, size: int, low: float, high: float, nan: bool,
                                             seed: int) -> None:
    rng = np.random.default_rng(seed)
    goals = rng.integers(0, 12, size=size).astype(dtype)
    if nan and np.dtype(dtype).kind == "f":
        goals[rng.integers(size)] = np.nan
    expected = bool(goals.min() >= low and goals.max() <= high)
    assert compiled.call(set(), goals_within, goals, low, high) == expected
