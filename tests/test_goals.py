"""Goal specs: vectorised reached/is_masked, tolerance semantics, observation-space validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sb3_hir import plugins
from sb3_hir.goals import ExactGoalSpec, GoalSpec, ToleranceGoalSpec


def maze_space(k: int = 3, achieved_shape: tuple[int, ...] = (1, 2)) -> spaces.Dict:
    return spaces.Dict(
        {
            "obs": spaces.Box(0.0, 1.0, (7,), np.float32),
            "goals": spaces.Box(-1, 10, (k, 2), np.int32),
            "achieved": spaces.Box(0, 10, achieved_shape, np.int32),
        }
    )


def test_exact_reached_broadcasts_over_leading_dims() -> None:
    spec = ExactGoalSpec()
    achieved = np.array([[0, 0], [1, 2], [2, 1]])  # (T=3, 2)
    goals = np.array([[1, 2], [2, 1], [1, 1], [0, 0]])  # (k=4, 2)
    hit = spec.reached(achieved[:, None], goals[None])
    assert hit.shape == (3, 4) and hit.dtype == bool
    np.testing.assert_array_equal(
        hit, [[False, False, False, True], [True, False, False, False], [False, True, False, False]]
    )
    assert spec.reached(np.array([1, 2]), np.array([1, 2])).shape == ()
    assert not spec.reached(np.array([1, 2]), np.array([2, 1]))


@settings(max_examples=100, deadline=None)
@given(
    dtype=st.sampled_from([np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_, np.float32]),
    goal_shape=st.sampled_from([(2,), (1,), (3,), (2, 2), (4,)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_exact_reached_agrees_with_componentwise_equality(dtype: type, goal_shape: tuple, seed: int) -> None:
    """Small integer goals take a packed fast path; it must give what comparing every component gives."""
    rng = np.random.default_rng(seed)
    spec = ExactGoalSpec(goal_ndim=len(goal_shape))
    achieved = rng.integers(-1, 2, size=(20, 1, *goal_shape)).astype(dtype)
    goals = rng.integers(-1, 2, size=(1, 3, *goal_shape)).astype(dtype)
    expected = (achieved == goals).reshape(20, 3, -1).all(axis=-1)
    np.testing.assert_array_equal(spec.reached(achieved, goals), expected)
    np.testing.assert_array_equal(spec.reached(achieved[::2, 0], goals[0, 1]), expected[::2, 1])  # strided view
    mixed = spec.reached(achieved.astype(np.int64), goals.astype(np.int16))  # different dtypes: generic path
    np.testing.assert_array_equal(mixed, expected)


def test_goal_ndim_controls_the_reduced_dimensions() -> None:
    scalar = ExactGoalSpec(goal_ndim=0)
    np.testing.assert_array_equal(scalar.reached(np.array([1, 2, 3]), np.array([1, 0, 3])), [True, False, True])
    np.testing.assert_array_equal(scalar.is_masked(np.array([-1, 0, -1])), [True, False, True])
    image = ExactGoalSpec(goal_ndim=2)
    goals = np.zeros((4, 2, 2))
    goals[1] = -1
    goals[2, 0, 0] = -1
    np.testing.assert_array_equal(image.is_masked(goals), [False, True, False, False])
    assert image.reached(goals[None], goals[:, None]).shape == (4, 4)


def test_is_masked_requires_every_component_to_be_the_mask() -> None:
    spec = ExactGoalSpec()
    goals = np.array([[[-1, -1], [-1, 3], [2, 2]]])
    mask = spec.is_masked(goals)
    assert mask.shape == (1, 3)
    np.testing.assert_array_equal(mask, [[True, False, False]])
    np.testing.assert_array_equal(ExactGoalSpec(mask_value=99).is_masked(np.array([[99, 99], [-1, -1]])),
                                  [True, False])


def test_tolerance_is_an_inclusive_euclidean_ball() -> None:
    spec = ToleranceGoalSpec(tolerance=0.625)
    goal = np.zeros(2)
    assert spec.reached(np.array([0.625, 0.0]), goal)
    assert spec.reached(np.array([0.375, 0.5]), goal)  # distance exactly 0.625 (all values exact in binary)
    assert not spec.reached(np.array([0.45, 0.45]), goal)  # each coordinate within 0.625, distance ~0.636
    assert not spec.reached(np.array([0.6250001, 0.0]), goal)
    achieved = np.array([[0.0, 0.0], [0.4, 0.0], [1.0, 1.0]], dtype=np.float32)
    np.testing.assert_array_equal(spec.reached(achieved[:, None], np.array([[0.0, 0.0], [1.0, 0.9]])[None]),
                                  [[True, False], [True, False], [False, True]])


@settings(max_examples=200, deadline=None)
@given(
    achieved=hnp.arrays(np.float64, (5, 3), elements=st.floats(-10, 10)),
    goal=hnp.arrays(np.float64, (3,), elements=st.floats(-10, 10)),
    tolerance=st.floats(1e-3, 20),
)
def test_tolerance_matches_the_distance_definition(achieved: np.ndarray, goal: np.ndarray, tolerance: float) -> None:
    spec = ToleranceGoalSpec(tolerance=tolerance)
    hit = spec.reached(achieved, goal)
    for row, result in zip(achieved, hit, strict=True):
        distance = math.dist(row.tolist(), goal.tolist())
        if abs(distance - tolerance) > 1e-9:  # away from the boundary, where round-off may decide
            assert result == (distance <= tolerance)
    assert spec.reached(goal, goal)  # a value always reaches itself


def test_default_tolerance_is_fetchs_distance_threshold() -> None:
    assert ToleranceGoalSpec().tolerance == 0.05


@pytest.mark.parametrize("tolerance", [0, -0.1, math.nan, math.inf, True, "0.1", None])
def test_bad_tolerance(tolerance: object) -> None:
    with pytest.raises(ValueError, match="tolerance must be a finite number > 0"):
        ToleranceGoalSpec(tolerance=tolerance)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"goals_key": ""}, "goals_key"),
        ({"achieved_key": 3}, "achieved_key"),
        ({"goals_key": "x", "achieved_key": "x"}, "must differ"),
        ({"mask_value": "m"}, "mask_value"),
        ({"goal_reward": math.nan}, "goal_reward"),
        ({"goal_reward": None}, "goal_reward"),
        ({"goal_ndim": -1}, "goal_ndim"),
        ({"goal_ndim": 1.0}, "goal_ndim"),
    ],
)
def test_bad_spec_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ExactGoalSpec(**kwargs)


def test_goal_spec_is_abstract() -> None:
    with pytest.raises(TypeError):
        GoalSpec()  # type: ignore[abstract]


def test_plugins_build_both_specs() -> None:
    assert isinstance(plugins.create("goal_spec", "exact"), ExactGoalSpec)
    spec = plugins.create("goal_spec", "tolerance", tolerance=0.5, goals_key="desired", achieved_key="pos")
    assert isinstance(spec, ToleranceGoalSpec)
    assert (spec.tolerance, spec.goals_key, spec.achieved_key, spec.goal_reward) == (0.5, "desired", "pos", 1.0)
    assert "tolerance=0.5" in repr(spec)


# ---------------------------------------------------------------------------------------------- spaces
@pytest.mark.parametrize("achieved_shape", [(1, 2), (2,)])
def test_validate_space_returns_k_and_goal_shape(achieved_shape: tuple[int, ...]) -> None:
    assert ExactGoalSpec().validate_space(maze_space(4, achieved_shape)) == (4, (2,))


def test_validate_space_missing_keys_names_missing_and_present() -> None:
    space = spaces.Dict({"obs": spaces.Box(0, 1, (3,)), "goals": spaces.Box(-1, 5, (2, 2))})
    message = r"missing the goal spec's keys \['achieved'\]; keys present: \['goals', 'obs'\]"
    with pytest.raises(ValueError, match=message):
        ExactGoalSpec().validate_space(space)
    with pytest.raises(ValueError, match=r"\['desired', 'pos'\]"):
        ExactGoalSpec(goals_key="desired", achieved_key="pos").validate_space(space)


def test_validate_space_rejects_non_dict_spaces() -> None:
    with pytest.raises(ValueError, match=r"gymnasium\.spaces\.Dict with keys 'goals' and 'achieved'"):
        ExactGoalSpec().validate_space(spaces.Box(0, 1, (4,)))


@pytest.mark.parametrize("achieved_shape", [(1, 3), (3,), (2, 2), (1, 1, 2)])
def test_validate_space_rejects_mismatched_shapes(achieved_shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"'achieved'.*must have shape \(2,\) or \(1, 2\)"):
        ExactGoalSpec().validate_space(maze_space(3, achieved_shape))


def test_validate_space_checks_goal_dimensions() -> None:
    space = spaces.Dict({"goals": spaces.Box(-1, 5, (3,)), "achieved": spaces.Box(0, 5, (1,))})
    with pytest.raises(ValueError, match=r"'goals'.*\(k, \*goal_shape\).*goal_ndim=1"):
        ExactGoalSpec().validate_space(space)
    assert ExactGoalSpec(goal_ndim=0).validate_space(space) == (3, ())
    empty = spaces.Dict({"goals": spaces.Box(-1, 5, (0, 2)), "achieved": spaces.Box(0, 5, (2,))})
    with pytest.raises(ValueError, match="at least one goal"):
        ExactGoalSpec().validate_space(empty)


def test_achieved_values_squeezes_the_singleton_layout() -> None:
    spec = ExactGoalSpec()
    achieved = np.arange(12).reshape(6, 1, 2)
    np.testing.assert_array_equal(spec.achieved_values(achieved, (2,)), achieved[:, 0])
    np.testing.assert_array_equal(spec.achieved_values(achieved[:, 0], (2,)), achieved[:, 0])
    batched = np.zeros((5, 4, 1, 2))
    assert spec.achieved_values(batched, (2,), leading_ndim=2).shape == (5, 4, 2)
    with pytest.raises(ValueError, match=r"'achieved' values must have shape \(3,\) or \(1, 3\)"):
        spec.achieved_values(achieved, (3,))
