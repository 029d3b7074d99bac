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


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from([np.int8, np.uint8, np.int32, np.int64]),
    rows=st.integers(0, 12),
    width=st.integers(1, 6),
    filled=st.integers(0, 12),
    low=st.integers(-3, 3),
    high=st.integers(2, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_draw_kernels_bounds_check_decides_as_min_and_max(dtype: Any, rows: int, width: int, filled: int,
                                                              low: int, high: int, seed: int) -> None:
    """``draw_rounds``' verdict on the rows it filled (``GoalsInside``), rows past them ignored."""
    from sb3_hir.buffers.draws.base import _goals_inside

    rng = np.random.default_rng(seed)
    low = max(low, 0) if np.dtype(dtype).kind == "u" else low
    goals = rng.integers(max(low - 2, 0) if np.dtype(dtype).kind == "u" else low - 2, high + 3,
                         size=(rows, width)).astype(dtype)
    filled = min(filled, rows)
    cfg = compiled.config(goals_bounded=1, goals_lo=low, goals_hi=high)
    part = goals[:filled]
    expected = bool(not filled or (part.min() >= low and part.max() <= high))
    assert compiled.call(set(), _goals_inside, goals, filled, cfg) == expected
    unbounded = compiled.config(goals_bounded=0, goals_lo=0, goals_hi=0)
    assert not compiled.call(set(), _goals_inside, goals, filled, unbounded)  # no bounds: the buffer's check decides


def test_goal_bounds_are_those_of_integer_boxes_with_one_low_and_one_high() -> None:
    from gymnasium import spaces

    from sb3_hir.buffers.draws.base import goal_bounds

    assert goal_bounds(spaces.Box(-1, 10, (3, 2), np.int32)) == {"goals_bounded": 1, "goals_lo": -1, "goals_hi": 10}
    assert goal_bounds(spaces.Box(-1.0, 10.0, (2,), np.float32))["goals_bounded"] == 0
    assert goal_bounds(spaces.Box(np.array([0, 0]), np.array([5, 6]), dtype=np.int64))["goals_bounded"] == 0
    assert goal_bounds(spaces.MultiBinary(4))["goals_bounded"] == 0


@pytest.mark.parametrize("name", ["maze_k3_some_future", "maze_k1_some_future"])
def test_a_compiled_draw_inside_the_goals_box_says_so_and_the_buffer_skips_its_own_check(name: str) -> None:
    from served_rows import filled_buffer

    from sb3_hir.buffers.draws.base import GoalsInside

    buffer = filled_buffer(name)
    buffer.jit = True
    space = buffer.observation_space["goals"]
    verdicts = []
    for _ in range(6):
        buffer.sample(64)
        relabeled = buffer._mixture.last_online.relabeled
        assert relabeled is not None
        inside = bool(relabeled.goals.min() >= space.low.min() and relabeled.goals.max() <= space.high.max())
        assert isinstance(relabeled, GoalsInside) == inside
        verdicts.append(inside)
    assert all(verdicts)  # MazeRunner's drawn goals are cells of its grid
