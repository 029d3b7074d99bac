"""Relabeler tests: replay reproduces the env's reward/termination logic; HIR's five steps hold as properties.

The reference env logic (``reference_rollout``) is a plain per-step loop, independent of the vectorised code:
walk the achieved values, reward and mask the active goal when it is reached, terminate when all goals are
reached (or the agent falls into a hole), truncate at the time limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sb3_hir import plugins
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.episodes import Episode
from sb3_hir.goals import ExactGoalSpec, GoalSpec, ToleranceGoalSpec
from sb3_hir.relabel import HindsightInstructionRelabeler, InstructionRelabeler

EXACT = ExactGoalSpec()
TOLERANCE = 0.3
CONTINUOUS = ToleranceGoalSpec(tolerance=TOLERANCE)
MOVES = np.array([[0, -1], [-1, 0], [0, 1], [1, 0], [0, 0]])


@cache
def relabeler(k: int, strategy: str = "some", continuous: bool = False) -> HindsightInstructionRelabeler:
    return HindsightInstructionRelabeler(k, strategy=strategy, goal_spec=CONTINUOUS if continuous else EXACT)


def exact_reached(achieved: np.ndarray, goal: np.ndarray) -> bool:
    return bool(np.array_equal(achieved, goal))


def tolerance_reached(achieved: np.ndarray, goal: np.ndarray) -> bool:
    return math.dist(achieved.tolist(), goal.tolist()) <= TOLERANCE


# ---------------------------------------------------------------------------------------------- reference env
@dataclass
class Walk:
    """A random walk and the env parameters an episode was produced with."""

    positions: np.ndarray  # (N+1, 2) achieved values along the walk
    actions: np.ndarray  # (N,)
    time_limit: int
    hole: np.ndarray | None
    continuous: bool

    @property
    def reached(self) -> Callable[[np.ndarray, np.ndarray], bool]:
        return tolerance_reached if self.continuous else exact_reached


def reference_rollout(walk: Walk, goals: np.ndarray) -> Episode:
    """Per-step env logic under ``goals`` along ``walk`` (stops at termination, truncation or walk end)."""
    goals = np.asarray(goals, dtype=np.float32 if walk.continuous else np.int32)
    k = len(goals)
    shown = goals.copy()
    goals_obs, rewards, terminated, truncated = [shown.copy()], [], [], []
    active = 0
    for t in range(1, len(walk.positions)):
        position = walk.positions[t]
        reward = 0.0
        if active < k and walk.reached(position, goals[active]):
            reward = 1.0
            shown[active] = -1
            active += 1
        fell = walk.hole is not None and np.array_equal(position, walk.hole)
        goals_obs.append(shown.copy())
        rewards.append(reward)
        terminated.append(active == k or fell)
        truncated.append(t >= walk.time_limit)
        if terminated[-1] or truncated[-1]:
            break
    length = len(rewards)
    positions = walk.positions[: length + 1]
    obs = np.concatenate([positions, np.arange(length + 1)[:, None] / walk.time_limit], axis=1)
    return Episode(
        observations={
            "obs": obs.astype(np.float32),
            "goals": np.stack(goals_obs),
            "achieved": positions[:, None, :].copy(),
        },
        actions=walk.actions[:length].copy(),
        rewards=np.array(rewards, dtype=np.float32),
        terminated=np.array(terminated),
        truncated=np.array(truncated),
        infos=[{"t": t} for t in range(1, length + 1)],
    )


@dataclass
class Case:
    walk: Walk
    episode: Episode
    k: int


@st.composite
def synthetic_cases(draw: st.DrawFn, continuous: bool | None = None) -> Case:
    """A random walk on a small grid with a random instruction, turned into an episode by the reference env."""
    grid = draw(st.integers(2, 5))
    k = draw(st.integers(1, 4))
    time_limit = draw(st.integers(1, 40))
    with_hole = draw(st.booleans())
    if continuous is None:
        continuous = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    actions = rng.integers(0, 5, size=time_limit)
    cells = [rng.integers(0, grid, size=2)]
    for action in actions:  # the grid border stops a move
        cells.append(np.clip(cells[-1] + MOVES[action], 0, grid - 1))
    cells = np.stack(cells)
    all_cells = np.stack(np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij"), axis=-1).reshape(-1, 2)
    hole = all_cells[rng.integers(len(all_cells))] if with_hole else None
    # Goals never sit on the hole, so "terminated by a goal" and "terminated by the hole" never coincide.
    allowed = all_cells if hole is None else all_cells[np.any(all_cells != hole, axis=1)]
    goals = allowed[rng.integers(len(allowed), size=k)]
    if continuous:
        positions = (cells + rng.uniform(-0.2, 0.2, size=cells.shape)).astype(np.float32)
        goals = goals.astype(np.float32)
        hole_value = None  # a continuous walk never lands exactly on a point
    else:
        positions = cells.astype(np.int32)
        hole_value = hole
    walk = Walk(positions, actions, time_limit, hole_value, continuous)
    return Case(walk, reference_rollout(walk, goals), k)


def assert_same_episode(actual: Episode, expected: Episode) -> None:
    assert len(actual) == len(expected)
    assert actual.observations.keys() == expected.observations.keys()
    for key, value in expected.observations.items():
        assert actual.observations[key].dtype == value.dtype, key
        np.testing.assert_array_equal(actual.observations[key], value, err_msg=key)
    np.testing.assert_array_equal(actual.actions, expected.actions)
    np.testing.assert_array_equal(actual.rewards, expected.rewards)
    assert actual.rewards.dtype == np.float32
    np.testing.assert_array_equal(actual.terminated, expected.terminated)
    np.testing.assert_array_equal(actual.truncated, expected.truncated)


def loop_reach_steps(achieved: np.ndarray, goals: np.ndarray, reached: Callable) -> np.ndarray:
    steps = np.full(len(goals), -1)
    j = 0
    for t in range(1, len(achieved)):
        if j < len(goals) and reached(achieved[t], goals[j]):
            steps[j] = t
            j += 1
    return steps


def achieved_of(episode: Episode) -> np.ndarray:
    return episode.observations["achieved"][:, 0]


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------- reach steps
@SETTINGS
@given(case=synthetic_cases(), data=st.data())
def test_reach_steps_matches_a_per_step_loop(case: Case, data: st.DataObject) -> None:
    achieved = achieved_of(case.episode)
    picks = data.draw(st.lists(st.integers(0, len(achieved) - 1), min_size=case.k, max_size=case.k))
    goals = achieved[picks]  # goals the walk visits, in any order, sometimes repeated
    rel = relabeler(case.k, continuous=case.walk.continuous)
    steps = rel.reach_steps(case.episode.observations["achieved"], goals)
    assert steps.dtype == np.int64
    np.testing.assert_array_equal(steps, loop_reach_steps(achieved, goals, case.walk.reached))
    counts = InstructionRelabeler.reach_counts(steps, len(case.episode))
    expected_counts = [int(np.sum((steps > 0) & (steps <= t))) for t in range(len(case.episode) + 1)]
    np.testing.assert_array_equal(counts, expected_counts)


def test_reach_steps_one_goal_per_step_and_never_at_reset() -> None:
    rel = relabeler(3)
    achieved = np.array([[5, 5], [1, 1], [1, 1], [2, 2], [9, 9]])
    # Goal 0 and goal 1 are the same cell: the second needs a later visit; the reset cell never counts.
    np.testing.assert_array_equal(rel.reach_steps(achieved, np.array([[1, 1], [1, 1], [2, 2]])), [1, 2, 3])
    np.testing.assert_array_equal(rel.reach_steps(achieved, np.array([[5, 5], [1, 1], [2, 2]])), [-1, -1, -1])
    np.testing.assert_array_equal(rel.reach_steps(achieved, np.array([[2, 2], [1, 1], [9, 9]])), [3, -1, -1])
    np.testing.assert_array_equal(InstructionRelabeler.reach_counts(np.array([1, 3, -1]), 4), [0, 1, 1, 2, 2])
    np.testing.assert_array_equal(InstructionRelabeler.reach_counts(np.array([-1, -1]), 2), [0, 0, 0])


# ---------------------------------------------------------------------------------------------- replay
@SETTINGS
@given(case=synthetic_cases())
def test_replay_under_own_goals_is_the_identity(case: Case) -> None:
    rel = relabeler(case.k, continuous=case.walk.continuous)
    replayed = rel.replay(case.episode, case.episode.instruction())
    assert_same_episode(replayed, case.episode)
    assert replayed.infos == case.episode.infos


@SETTINGS
@given(case=synthetic_cases(), data=st.data())
def test_replay_under_any_goals_matches_the_reference_env(case: Case, data: st.DataObject) -> None:
    achieved = achieved_of(case.episode)
    grid_goals = data.draw(st.booleans())
    if grid_goals:
        goals = np.array(data.draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=case.k,
                                            max_size=case.k)), dtype=achieved.dtype)
    else:
        goals = achieved[data.draw(st.lists(st.integers(1, len(achieved) - 1), min_size=case.k, max_size=case.k))]
    rel = relabeler(case.k, continuous=case.walk.continuous)
    replayed = rel.replay(case.episode, goals)
    expected = reference_rollout(
        Walk(achieved, case.walk.actions[: len(case.episode)], case.walk.time_limit, case.walk.hole,
             case.walk.continuous),
        goals,
    )
    assert_same_episode(replayed, expected)
    if np.all(rel.reach_steps(achieved, goals) > 0):
        assert replayed.terminated[-1] and replayed.rewards.sum() == case.k


def test_replay_cuts_at_the_kth_goal_and_keeps_non_goal_terminations() -> None:
    rel = relabeler(2)
    achieved = np.array([[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]], dtype=np.int32)
    own = np.array([[3, 3], [4, 4]], dtype=np.int32)
    episode = Episode(
        observations={"goals": np.repeat(own[None], 5, axis=0), "achieved": achieved[:, None],
                      "obs": np.arange(5, dtype=np.float32)[:, None]},
        actions=np.arange(4), rewards=np.zeros(4), terminated=[False, False, False, True],
        truncated=np.zeros(4, bool), infos=[{"i": i} for i in range(4)],
    )
    cut = rel.replay(episode, np.array([[0, 1], [1, 1]]))
    assert len(cut) == 2 and cut.infos == [{"i": 0}, {"i": 1}]
    np.testing.assert_array_equal(cut.rewards, [1, 1])
    np.testing.assert_array_equal(cut.terminated, [False, True])
    np.testing.assert_array_equal(cut.truncated, [False, False])
    np.testing.assert_array_equal(cut.observations["goals"][:, :, 0], [[0, 1], [-1, 1], [-1, -1]])
    np.testing.assert_array_equal(cut.observations["obs"], [[0], [1], [2]])
    # One goal reached: no cut, and the original last-step termination (not a goal's doing) is kept.
    partial = rel.replay(episode, np.array([[1, 0], [9, 9]]))
    assert len(partial) == 4
    np.testing.assert_array_equal(partial.rewards, [0, 0, 1, 0])
    np.testing.assert_array_equal(partial.terminated, [False, False, False, True])
    # The replay copies: writing into it leaves the episode untouched.
    partial.observations["obs"][:] = 7
    assert episode.observations["obs"][0, 0] == 0


def test_replay_drops_a_termination_the_own_goals_caused() -> None:
    rel = relabeler(1)
    achieved = np.array([[0, 0], [0, 1], [1, 1]], dtype=np.int32)
    goals_obs = np.array([[[1, 1]], [[1, 1]], [[-1, -1]]], dtype=np.int32)
    episode = Episode({"goals": goals_obs, "achieved": achieved[:, None]}, np.zeros(2), [0, 1],
                      [False, True], [False, False])
    replayed = rel.replay(episode, np.array([[7, 7]]))
    np.testing.assert_array_equal(replayed.terminated, [False, False])
    np.testing.assert_array_equal(replayed.rewards, [0, 0])


# ---------------------------------------------------------------------------------------------- relabel
@SETTINGS
@given(case=synthetic_cases(), seed=st.integers(0, 2**32 - 1))
def test_none_changes_nothing(case: Case, seed: int) -> None:
    rel = relabeler(case.k, "none", continuous=case.walk.continuous)
    rng = np.random.default_rng(seed)
    assert rel.relabel_goals(case.episode, rng) is None
    assert rel.relabel(case.episode, rng) is case.episode


@SETTINGS
@given(case=synthetic_cases(), seed=st.integers(0, 2**32 - 1))
def test_all_turns_every_long_enough_episode_into_a_full_success(case: Case, seed: int) -> None:
    rel = relabeler(case.k, "all", continuous=case.walk.continuous)
    episode = case.episode
    relabeled = rel.relabel(episode, np.random.default_rng(seed))
    if len(episode) < case.k:  # fewer steps than goals: cannot be a full success (one goal per step)
        assert relabeled.rewards.sum() >= episode.rewards.sum()
        return
    assert relabeled.rewards.sum() == case.k
    assert relabeled.terminated[-1]
    assert EXACT.is_masked(relabeled.observations["goals"][-1]).all()
    steps = rel.reach_steps(relabeled.observations["achieved"], relabeled.instruction())
    assert steps[-1] == len(relabeled)  # it ends at its k-th goal
    # The relabeled episode is what the env would have produced under the new instruction.
    expected = reference_rollout(case.walk, relabeled.instruction())
    assert_same_episode(relabeled, expected)


@SETTINGS
@given(case=synthetic_cases(), seed=st.integers(0, 2**32 - 1))
def test_some_never_lowers_the_return_and_matches_the_reference_env(case: Case, seed: int) -> None:
    rel = relabeler(case.k, "some", continuous=case.walk.continuous)
    relabeled = rel.relabel(case.episode, np.random.default_rng(seed))
    assert relabeled.rewards.sum() >= case.episode.rewards.sum()
    assert_same_episode(relabeled, reference_rollout(case.walk, relabeled.instruction()))


@SETTINGS
@given(case=synthetic_cases(), seed=st.integers(0, 2**32 - 1), strategy=st.sampled_from(["some", "all"]))
def test_relabeled_goals_are_achieved_values_reached_in_time_order(case: Case, seed: int, strategy: str) -> None:
    rel = relabeler(case.k, strategy, continuous=case.walk.continuous)
    episode = case.episode
    achieved = achieved_of(episode)
    own = episode.instruction()
    n = int(np.sum(rel.reach_steps(achieved, own) > 0))
    goals = rel.relabel_goals(episode, np.random.default_rng(seed))
    if goals is None:
        assert strategy == "some" or n == min(case.k, len(episode))  # "all" with no step left to pick
        return
    assert goals.shape == own.shape and goals.dtype == own.dtype
    steps = rel.reach_steps(achieved, goals)
    reached = int(np.sum(steps > 0))
    assert reached >= min(n + 1, len(episode))
    # Every slot that changed is among the reached prefix; the rest keep the episode's own goals.
    changed = np.flatnonzero(np.any(goals.reshape(case.k, -1) != own.reshape(case.k, -1), axis=1))
    assert np.all(changed < reached)
    # Reached goals are values achieved at strictly increasing steps of 1..T.
    assert np.all(np.diff(steps[:reached]) > 0) and np.all(steps[:reached] >= 1)
    for j in range(reached):
        assert case.walk.reached(achieved[steps[j]], goals[j])
    if strategy == "all":
        assert reached == min(case.k, len(episode))


def line_episode(length: int, own: np.ndarray) -> Episode:
    """Walk along row 0 visiting distinct cells (0, 1), ..., (0, length); the instruction is ``own``."""
    achieved = np.stack([np.zeros(length + 1), np.arange(length + 1)], axis=-1).astype(np.int32)
    return reference_rollout(Walk(achieved, np.zeros(length, int), 10**6, None, False), own)


def test_some_draws_h_uniformly_from_zero_to_k_minus_n() -> None:
    episode = line_episode(30, np.array([[0, 4], [9, 9], [9, 8]], dtype=np.int32))  # n = 1
    rel = relabeler(3, "some")
    rng = np.random.default_rng(0)
    draws = 4000
    gained = [rel.relabel(episode, rng).rewards.sum() - 1 for _ in range(draws)]
    frequencies = np.bincount(np.asarray(gained, dtype=int), minlength=3) / draws
    assert frequencies.shape == (3,)  # h in {0, 1, 2}: never more goals than the k - n free slots
    np.testing.assert_allclose(frequencies, 1 / 3, atol=0.03)


def test_alternatives_are_uniform_over_steps_excluding_reached_ones() -> None:
    length = 10
    episode = line_episode(length, np.array([[0, 4], [9, 9]], dtype=np.int32))  # own goal 0 reached at step 4
    rel = relabeler(2, "all")
    rng = np.random.default_rng(1)
    draws = 5000
    picked = []
    for _ in range(draws):
        goals = rel.relabel_goals(episode, rng)
        cols = sorted(goals[:, 1].tolist())
        assert 4 in cols  # the reached goal stays, merged in time order
        assert goals[0, 1] < goals[1, 1]
        cols.remove(4)
        picked.append(cols[0])
    counts = np.bincount(picked, minlength=length + 1)
    assert counts[0] == 0 and counts[4] == 0  # never the reset observation, never a reached step
    candidates = [t for t in range(1, length + 1) if t != 4]
    np.testing.assert_allclose(counts[candidates] / draws, 1 / len(candidates), atol=0.025)


def test_fewer_candidate_steps_than_h_uses_all_of_them() -> None:
    episode = line_episode(1, np.array([[5, 5], [6, 6], [7, 7]], dtype=np.int32))  # T = 1, n = 0
    goals = relabeler(3, "all").relabel_goals(episode, np.random.default_rng(0))
    np.testing.assert_array_equal(goals, [[0, 1], [6, 6], [7, 7]])
    relabeled = relabeler(3, "all").relabel(episode, np.random.default_rng(0))
    np.testing.assert_array_equal(relabeled.rewards, [1])
    assert not relabeled.terminated[-1]


def test_relabel_is_reproducible_from_the_seed() -> None:
    episode = line_episode(50, np.array([[1, 1], [2, 2], [3, 3]], dtype=np.int32))
    rel = relabeler(3, "some")
    first = [rel.relabel_goals(episode, np.random.default_rng(7)) for _ in range(3)]
    for goals in first[1:]:
        np.testing.assert_array_equal(goals, first[0])


# ---------------------------------------------------------------------------------------------- MazeRunner
def maze_episode(seed: int, k: int, time_limit: int, expert_probability: float) -> Episode:
    """A real MazeRunner episode: expert moves mixed with random ones, so some goals get reached."""
    env = MazeRunnerEnv(maze_dim=7, num_goals=k, time_limit=time_limit)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    observations, actions, rewards, terminated, truncated, infos = [obs], [], [], [], [], []
    done = False
    while not done:
        action = env.expert_action() if rng.random() < expert_probability else int(rng.integers(5))
        obs, reward, term, trunc, info = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        terminated.append(term)
        truncated.append(trunc)
        infos.append(info)
        done = term or trunc
    return Episode(
        observations={key: np.stack([o[key] for o in observations]) for key in observations[0]},
        actions=np.array(actions),
        rewards=np.array(rewards, dtype=np.float32),
        terminated=np.array(terminated),
        truncated=np.array(truncated),
        infos=infos,
    )


maze_cases = st.tuples(st.integers(0, 10**6), st.integers(1, 3), st.integers(1, 40), st.floats(0.0, 1.0))
MAZE_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@MAZE_SETTINGS
@given(params=maze_cases, seed=st.integers(0, 2**32 - 1))
def test_mazerunner_replay_identity_and_relabel_properties(params: tuple, seed: int) -> None:
    env_seed, k, time_limit, expert_probability = params
    episode = maze_episode(env_seed, k, time_limit, expert_probability)
    assert episode.rewards.sum() == episode.infos[-1]["goals_reached"]
    achieved = achieved_of(episode)
    own = episode.instruction()

    assert_same_episode(relabeler(k).replay(episode, own), episode)

    rng = np.random.default_rng(seed)
    assert relabeler(k, "none").relabel(episode, rng) is episode

    some = relabeler(k, "some").relabel(episode, rng)
    assert some.rewards.sum() >= episode.rewards.sum()

    full = relabeler(k, "all").relabel(episode, rng)
    if len(episode) >= k:
        assert full.rewards.sum() == k and full.terminated[-1]
        assert relabeler(k).reach_steps(full.observations["achieved"], full.instruction())[-1] == len(full)
    goals = full.instruction()
    steps = relabeler(k).reach_steps(achieved, goals)
    reached = steps[steps > 0]
    assert np.all(np.diff(reached) > 0)
    np.testing.assert_array_equal(achieved[reached], goals[: len(reached)])


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("num_goals", [0, -1, 1.5, True, "3", None])
def test_bad_num_goals(num_goals: object) -> None:
    with pytest.raises(ValueError, match="num_goals"):
        HindsightInstructionRelabeler(num_goals, goal_spec=EXACT)  # type: ignore[arg-type]


def test_bad_strategy_names_the_accepted_values() -> None:
    with pytest.raises(ValueError, match=r"strategy.*'some'.*'all'.*'none'.*'most'"):
        HindsightInstructionRelabeler(2, strategy="most")


def test_bad_goal_spec() -> None:
    with pytest.raises(ValueError, match="goal_spec"):
        HindsightInstructionRelabeler(2, goal_spec=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="goal_spec 'no-such-spec'"):
        HindsightInstructionRelabeler(2, goal_spec="no-such-spec")


def test_goal_spec_names_resolve_through_plugins() -> None:
    assert isinstance(HindsightInstructionRelabeler(2).goal_spec, ExactGoalSpec)
    spec = HindsightInstructionRelabeler(2, goal_spec="tolerance").goal_spec
    assert isinstance(spec, ToleranceGoalSpec) and spec.tolerance == 0.05
    rel = plugins.create("relabeler", "hindsight-instruction", num_goals=3, strategy="all", goal_spec=CONTINUOUS)
    assert isinstance(rel, HindsightInstructionRelabeler)
    assert rel.num_goals == 3 and rel.strategy == "all" and rel.goal_spec is CONTINUOUS
    assert isinstance(rel.goal_spec, GoalSpec)


def test_bad_episode_and_goals() -> None:
    rel = relabeler(2)
    episode = line_episode(5, np.array([[0, 1], [0, 2]], dtype=np.int32))
    with pytest.raises(ValueError, match=r"goals must have shape \(2, 2\)"):
        rel.replay(episode, np.zeros((3, 2), dtype=np.int32))
    no_achieved = Episode({"goals": episode.observations["goals"], "obs": episode.observations["obs"]},
                          episode.actions, episode.rewards, episode.terminated, episode.truncated)
    with pytest.raises(ValueError, match=r"missing the goal spec's keys \['achieved'\].*\['goals', 'obs'\]"):
        rel.relabel(no_achieved, np.random.default_rng(0))
    with pytest.raises(ValueError, match="num_goals=3"):
        relabeler(3).replay(episode, np.zeros((2, 2), dtype=np.int32))
    wide = np.zeros((len(episode) + 1, 3), np.int32)
    bad_achieved = Episode({"goals": episode.observations["goals"], "achieved": wide},
                           episode.actions, episode.rewards, episode.terminated, episode.truncated)
    with pytest.raises(ValueError, match="'achieved' values must have shape"):
        rel.replay(bad_achieved, episode.instruction())


# -- per-sample draws (the buffer's batched hook) --------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 4),
    length=st.integers(1, 12),
    n_reached=st.integers(0, 4),
    strategy=st.sampled_from(["some", "all", "none"]),
    selection=st.sampled_from(["future", "episode"]),
    seed=st.integers(0, 2**16),
)
def test_draw_goal_steps_invariants(k, length, n_reached, strategy, selection, seed) -> None:
    rng = np.random.default_rng(seed)
    n = min(n_reached, k, length)
    own = np.full((64, k), -1)
    if n:
        own[:, :n] = np.sort(rng.choice(np.arange(1, length + 1), size=n, replace=False))
    t = rng.integers(0, length, size=64)
    steps = HindsightInstructionRelabeler(k, strategy=strategy).draw_goal_steps(
        own, np.full(64, length), t, rng, selection)
    assert steps.shape == (64, k)
    for row, step_t in zip(steps, t, strict=True):
        drawn = row[row > 0]
        if strategy == "none" or not len(drawn):
            assert (row == -1).all()
            continue
        assert (row[: len(drawn)] == drawn).all() and (np.diff(drawn) > 0).all()  # increasing prefix
        assert drawn.max() <= length
        assert set(own[0, :n].tolist()) <= set(drawn.tolist())  # reached goals stay
        extra = sorted(set(drawn.tolist()) - set(own[0, :n].tolist()))
        assert 1 <= len(extra) <= k - n
        if strategy == "all":
            assert len(extra) == min(k - n, length - n) or selection == "future"
        if selection == "future":
            assert max(extra) >= step_t + 1  # the completing goal comes from at or after the transition


def test_future_draw_with_one_goal_is_uniform_over_later_steps() -> None:
    rng = np.random.default_rng(0)
    relabeler = HindsightInstructionRelabeler(1, strategy="all")
    steps = relabeler.draw_goal_steps(np.full((60_000, 1), -1), np.full(60_000, 10), np.full(60_000, 6), rng)
    counts = np.bincount(steps[:, 0], minlength=11)
    assert counts[:7].sum() == 0
    np.testing.assert_allclose(counts[7:] / 60_000, 0.25, atol=0.01)  # HER's future rule: uniform on 7..10


def test_draw_goal_steps_rejects_bad_arguments() -> None:
    relabeler = HindsightInstructionRelabeler(2)
    with pytest.raises(ValueError, match=r"^goal_selection must be one of 'future', 'episode'; got 'final'$"):
        relabeler.draw_goal_steps(np.full((1, 2), -1), np.ones(1), np.zeros(1), np.random.default_rng(), "final")
    with pytest.raises(ValueError, match="own_steps"):
        relabeler.draw_goal_steps(np.full((1, 3), -1), np.ones(1), np.zeros(1), np.random.default_rng())


class ProtocolOnlySpec:
    """A goal spec plugin without the GoalSpec base class (so no ``is_padding``, ``is_complete`` or ``ordered``):
    :class:`sb3_hir.protocols.GoalSpecProtocol` and the ``achieved_values`` the relabeler reads, exact equality on
    (x, y) cells."""

    goals_key, achieved_key, mask_value, goal_reward, step_reward, goal_ndim = "goals", "achieved", -1, 1.0, 0.0, 1

    def reached(self, achieved, goal):
        return (np.asarray(achieved) == np.asarray(goal)).all(axis=-1)

    def is_masked(self, goals):
        return (np.asarray(goals) == self.mask_value).all(axis=-1)

    def validate_space(self, observation_space):
        return ExactGoalSpec().validate_space(observation_space)

    def achieved_values(self, achieved, goal_shape, leading_ndim=1):
        return ExactGoalSpec().achieved_values(achieved, goal_shape, leading_ndim)


def test_a_protocol_only_goal_spec_still_replays_relabels_and_passes_the_env_check():
    """Padding and groups read optional parts of a spec; a plugin spec that keeps only the protocol is served as
    before: the same replays and draws as the exact spec, and check_instruction_env holds."""
    from sb3_hir.envs import MazeRunnerEnv
    from sb3_hir.testing import check_instruction_env

    with pytest.warns(DeprecationWarning, match=r"ProtocolOnlySpec lacks nothing_value, .*, ordered .*from sb3-hir "
                                                r"0\.3 a goal spec without them is refused"):
        plain = HindsightInstructionRelabeler(3, "some", ProtocolOnlySpec())
    exact = HindsightInstructionRelabeler(3, "some", ExactGoalSpec())
    env = MazeRunnerEnv(maze_dim=7, num_goals=3, time_limit=30)
    for seed in range(5):
        episode = Episode.record(env, lambda _obs: env.action_space.sample(), seed=seed, max_steps=30)
        goals = plain.relabel_goals(episode, np.random.default_rng(seed))
        np.testing.assert_array_equal(goals, exact.relabel_goals(episode, np.random.default_rng(seed)))
        if goals is not None:
            mine, theirs = plain.replay(episode, goals), exact.replay(episode, goals)
            np.testing.assert_array_equal(mine.rewards, theirs.rewards)
            np.testing.assert_array_equal(mine.terminated, theirs.terminated)
    check_instruction_env(MazeRunnerEnv(maze_dim=7, num_goals=3, time_limit=30), relabeler=plain, n_episodes=3)


def test_the_protocol_declares_the_semantics_flags_and_a_spec_that_cannot_take_them_is_refused():
    """GoalSpecProtocol lists the flags every part of sb3-hir reads as attributes; GoalSpec declares them all, a
    protocol-only spec gets their defaults (above), and one that cannot hold them is refused, naming them."""
    from sb3_hir.protocols import GOAL_SPEC_FLAGS, GoalSpecProtocol, missing_members
    from sb3_hir.resolvers import resolve_goal_spec

    assert set(GOAL_SPEC_FLAGS) <= set(missing_members(object(), GoalSpecProtocol))
    assert missing_members(ExactGoalSpec(), GoalSpecProtocol) == []
    assert {name: getattr(ExactGoalSpec(), name) for name in GOAL_SPEC_FLAGS} == GOAL_SPEC_FLAGS

    class Frozen:
        __slots__ = ("achieved_key", "goal_ndim", "goal_reward", "goals_key", "mask_value", "step_reward")

        def __init__(self):
            self.goals_key, self.achieved_key, self.mask_value = "goals", "achieved", -1
            self.goal_reward, self.step_reward, self.goal_ndim = 1.0, 0.0, 1

        reached = ProtocolOnlySpec.reached
        is_masked = ProtocolOnlySpec.is_masked
        validate_space = ProtocolOnlySpec.validate_space
        achieved_values = ProtocolOnlySpec.achieved_values

    with pytest.raises(ValueError, match=r"^goal_spec: Frozen lacks nothing_value, wildcard_value, .*ordered "
                                         r"\(GoalSpecProtocol's semantics flags\) and cannot take their defaults"):
        resolve_goal_spec(Frozen())
    class Partial(Frozen):  # takes the first two flags, then refuses the rest: the refused spec keeps neither
        __slots__ = ("nothing_value", "wildcard_value")

    partial = Partial()
    with pytest.raises(ValueError, match=r"^goal_spec: Partial lacks nothing_value, wildcard_value, "):
        resolve_goal_spec(partial)
    assert not hasattr(partial, "nothing_value") and not hasattr(partial, "wildcard_value")
    with pytest.warns(DeprecationWarning):
        spec = resolve_goal_spec(ProtocolOnlySpec())
    assert {name: getattr(spec, name) for name in GOAL_SPEC_FLAGS} == GOAL_SPEC_FLAGS
