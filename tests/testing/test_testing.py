"""``sb3_hir.testing`` and the pytest plugin: every check is proven able to fail, with the seed, step and values.

The broken components are small real gymnasium envs and relabelers with one deliberate bug each. The base env,
:class:`Corridor`, keeps the instruction contract exactly, so each negative test differs from a passing one by
exactly the bug under test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from sb3_hir import hookimpl, plugins
from sb3_hir.episodes import Episode
from sb3_hir.extras import has
from sb3_hir.goals import ExactGoalSpec
from sb3_hir.relabel import HindsightInstructionRelabeler, InstructionRelabeler
from sb3_hir.testing import (
    check_beta_schedule,
    check_expert,
    check_goal_spec,
    check_instruction_env,
    check_plugin,
    check_relabeler,
    component_names,
    promises_non_decreasing_return,
)

pytest_plugins = ["pytester"]


# ---------------------------------------------------------------------------------------------- a correct env
class Corridor(gym.Env):
    """Cells 0..length-1 on a line; reach ``num_goals`` goal cells in order (MazeRunner's contract, in 1-D).

    ``moves`` are the displacements of the Discrete actions; ``(1,)`` makes the random policy deterministic.
    ``goals``/``start`` fix the instruction and the start cell instead of drawing them from ``np_random``.
    """

    def __init__(self, length: int = 8, num_goals: int = 3, time_limit: int = 40, moves: tuple[int, ...] = (-1, 0, 1),
                 goals: list[int] | None = None, start: int | None = None) -> None:
        self.length, self.num_goals, self.time_limit = length, num_goals, time_limit
        self.moves, self.fixed_goals, self.fixed_start = moves, goals, start
        self.observation_space = spaces.Dict({
            "obs": spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32),
            "goals": spaces.Box(-1, length - 1, shape=(num_goals, 2), dtype=np.int32),
            "achieved": spaces.Box(0, length - 1, shape=(1, 2), dtype=np.int32),
        })
        self.action_space = spaces.Discrete(len(moves))

    def _draw(self, rng: np.random.Generator) -> tuple[int, list[int]]:
        start = int(rng.integers(0, self.length)) if self.fixed_start is None else self.fixed_start
        if self.fixed_goals is not None:
            return start, list(self.fixed_goals)
        cells = [c for c in range(self.length) if c != start]
        return start, [int(c) for c in rng.choice(cells, size=self.num_goals, replace=False)]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.x, self.goal_cells = self._draw(self.np_random)
        self.t, self.reached = 0, 0
        return self._obs(), {"is_success": False, "goals_reached": 0}

    def _goals_obs(self) -> np.ndarray:
        goals = np.array([[0, g] for g in self.goal_cells], dtype=np.int32)
        goals[: self.reached] = -1
        return goals

    def _obs(self) -> dict[str, np.ndarray]:
        return {"obs": np.array([self.x / self.length], dtype=np.float32), "goals": self._goals_obs(),
                "achieved": np.array([[0, self.x]], dtype=np.int32)}

    def step(self, action):
        self.x = int(np.clip(self.x + self.moves[int(action)], 0, self.length - 1))
        self.t += 1
        reward = 0.0
        if self.reached < self.num_goals and self.x == self.goal_cells[self.reached]:
            reward, self.reached = 1.0, self.reached + 1
        terminated = self.reached == self.num_goals
        info = {"is_success": terminated, "goals_reached": self.reached}
        return self._obs(), reward, terminated, self.t >= self.time_limit, info


# ---------------------------------------------------------------------------------------------- broken envs
class RewardsAnyGoal(Corridor):
    """Bug: pays for standing on any unreached goal cell, not only the active one."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if reward == 0.0 and self.x in self.goal_cells[self.reached:]:
            reward = 1.0
        return obs, reward, terminated, truncated, info


class UnseededRandomness(Corridor):
    """Bug: draws the start and goals from a fresh unseeded generator instead of ``self.np_random``."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.x, self.goal_cells = self._draw(np.random.default_rng())
        return self._obs(), {"is_success": False, "goals_reached": 0}


class HardcodedSeed(Corridor):
    """Bug: seeds ``np_random`` with 0 whatever seed it is given (reproducible, but every seed is the same)."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return super().reset(seed=0, options=options)


class Int64Goals(Corridor):
    """Bug: goal observations are int64 while the space declares int32."""

    def _goals_obs(self) -> np.ndarray:
        return super()._goals_obs().astype(np.int64)


class FlatAchieved(Corridor):
    """Bug: achieved observations have shape (2,) while the space declares (1, 2)."""

    def _obs(self) -> dict[str, np.ndarray]:
        obs = super()._obs()
        obs["achieved"] = obs["achieved"].reshape(2)
        return obs


class EarlySuccess(Corridor):
    """Bug: reports success as soon as the first goal is reached."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        info["is_success"] = self.reached >= 1
        return obs, reward, terminated, truncated, info


# ---------------------------------------------------------------------------------------------- goal-taking envs
class GoalTakingCorridor(Corridor):
    """:class:`Corridor` that takes an instruction at reset (``options={"goals": ...}``), as MazeRunner does.

    The defaults put its own goals out of reach (start 0, goals 11, 10, 9, 6 steps), so random-policy episodes
    never reach one: whatever a check finds below, only counterfactual replay under hindsight goals can find.
    """

    accepts_reset_goals = True

    def __init__(self, **kwargs: Any) -> None:
        kwargs = {"length": 12, "num_goals": 3, "time_limit": 6, "start": 0, "goals": [11, 10, 9], **kwargs}
        super().__init__(**kwargs)
        self.given = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = super().reset(seed=seed, options=options)
        self.given = bool(options and "goals" in options)
        if self.given:
            self.goal_cells = [int(g[1]) for g in np.asarray(options["goals"])]
            obs = self._obs()
        return obs, info


class EarlyStop(GoalTakingCorridor):
    """Bug: ends the episode at the first goal (``terminated or reward > 0``), not at the k-th."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or reward > 0, truncated, info


class PaysAnyUnreachedGoal(GoalTakingCorridor):
    """Bug: pays for standing on any unreached goal, not only the active one (progress stays in order)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if reward == 0.0 and self.x in self.goal_cells[self.reached:]:
            reward = 1.0
        return obs, reward, terminated, truncated, info


class IgnoresGoalOrder(GoalTakingCorridor):
    """Bug: any unreached goal of the instruction counts, in whatever order it is reached."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self.done_goals: set[int] = set()
        return super().reset(seed=seed, options=options)

    def _goals_obs(self) -> np.ndarray:
        goals = np.array([[0, g] for g in self.goal_cells], dtype=np.int32)
        for j in getattr(self, "done_goals", ()):
            goals[j] = -1
        return goals

    def step(self, action):
        self.x = int(np.clip(self.x + self.moves[int(action)], 0, self.length - 1))
        self.t += 1
        reward = 0.0
        hit = [j for j, g in enumerate(self.goal_cells) if g == self.x and j not in self.done_goals]
        if hit:
            self.done_goals.add(hit[0])
            self.reached, reward = len(self.done_goals), 1.0
        terminated = self.reached == self.num_goals
        return self._obs(), reward, terminated, self.t >= self.time_limit, {"is_success": terminated,
                                                                          "goals_reached": self.reached}


class WrongMaskUnderGivenGoals(GoalTakingCorridor):
    """Bug: under an instruction given at reset, reached goals are shown as (-1, 0) instead of the mask (-1, -1)."""

    def _goals_obs(self) -> np.ndarray:
        goals = super()._goals_obs()
        if self.given:
            goals[: self.reached, 1] = 0
        return goals


class MazeRunnerEarlyStop(gym.Wrapper):
    """The issue's case: MazeRunner (k = 2) wrapped to stop as soon as the first goal is reached."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated or reward > 0, truncated, info


def _message(excinfo: pytest.ExceptionInfo[AssertionError]) -> str:
    return str(excinfo.value)


# ---------------------------------------------------------------------------------------------- env checks
def test_a_correct_env_passes_every_check():
    check_instruction_env(Corridor(), n_episodes=4)
    check_relabeler(HindsightInstructionRelabeler(3, strategy="all"), Corridor(), n_episodes=4)


def test_reward_disagreeing_with_replay_is_reported_with_seed_step_and_rewards():
    with pytest.raises(AssertionError) as excinfo:
        check_instruction_env(RewardsAnyGoal(), n_episodes=5, seed=3)
    message = _message(excinfo)
    match = re.match(r"check_instruction_env: episode (\d) \(seed=(\d)\), step (\d+): env reward 1\.0 != replayed "
                     r"reward 0\.0 \(goals observed before the step: (.*), achieved after it: \[\[0, (\d)\]\]\)",
                     message)
    assert match, message
    episode, seed, step = (int(match.group(i)) for i in (1, 2, 3))
    assert seed == 3 + episode
    # The message is enough to reproduce the failure by hand: same seed, same step, same cell.
    env = RewardsAnyGoal()
    env.action_space.seed(seed)
    env.reset(seed=seed)
    for _ in range(step):
        _, reward, *_ = env.step(env.action_space.sample())
    assert reward == 1.0
    assert env.x == int(match.group(5))
    assert env.x in env.goal_cells[env.reached:] and env.x != env.goal_cells[env.reached]
    assert "must reproduce the env exactly" in message


def test_a_goal_taking_env_passes_the_counterfactual_check():
    check_instruction_env(GoalTakingCorridor(), n_episodes=4)
    check_instruction_env(GoalTakingCorridor(), relabeler=HindsightInstructionRelabeler(3, strategy="some"))


@pytest.mark.parametrize("env_class, detail", [
    (EarlyStop, r"env terminated=True != replayed terminated=False"),
    (PaysAnyUnreachedGoal, r"env reward 1\.0 != replayed reward 0\.0"),
    (IgnoresGoalOrder, r"env (reward 1\.0 != replayed reward 0\.0|observation\['goals'\] = .* != replayed .*)"),
    (WrongMaskUnderGivenGoals, r"env observation\['goals'\] = \[\[-1, 0\].* != replayed \[\[-1, -1\].*"),
])
def test_counterfactual_replay_catches_envs_that_relabeling_would_misrepresent(env_class, detail):
    # Own instructions are out of reach: the own-goal checks pass, only the hindsight instructions see the bug.
    with pytest.raises(AssertionError) as excinfo:
        check_instruction_env(env_class(), n_episodes=3, seed=4)
    message = _message(excinfo)
    match = re.match(r"check_instruction_env: episode (\d) \(seed=(\d)\), step (\d+): under the instruction "
                     r"(\[\[.*\]\]) \(reset\(seed=\d, options=\{'goals': \.\.\.\}\)\): " + detail, message)
    assert match, message
    assert int(match.group(2)) == 4 + int(match.group(1))
    assert "replay under this instruction disagrees with the env" in message


def test_the_issue_case_mazerunner_stopping_at_the_first_of_two_goals_is_caught():
    from sb3_hir.envs import MazeRunnerEnv

    check_instruction_env(MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=40), n_episodes=3)
    with pytest.raises(AssertionError, match=r"step \d+: under the instruction .*: env terminated=True != replayed "
                                             r"terminated=False"):
        check_instruction_env(MazeRunnerEarlyStop(MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=40)),
                              n_episodes=3)


def test_envs_that_cannot_take_goals_get_the_termination_heuristic():
    class StopsAtFirstGoal(Corridor):  # moves right from 0: reaches goal 1 of 3 at step 2, and stops there
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            return obs, reward, terminated or reward > 0, truncated, info

    with pytest.raises(AssertionError, match=r"episode 0 \(seed=0\), step 2: the env terminated on the step that "
                                             r"reached goal 1 of 3.*accepts_reset_goals = True.*"
                                             r"terminations_unrelated_to_goals = True"):
        check_instruction_env(StopsAtFirstGoal(moves=(1,), start=0, goals=[2, 4, 6]), n_episodes=2)

    class Opted(StopsAtFirstGoal):  # an env whose terminations are declared unrelated to the goals opts out
        terminations_unrelated_to_goals = True

    check_instruction_env(Opted(moves=(1,), start=0, goals=[2, 4, 6]), n_episodes=2)


def test_goals_given_at_reset_are_validated():
    from sb3_hir.envs import MazeRunnerEnv

    env = MazeRunnerEnv(maze_dim=7, num_goals=2)
    with pytest.raises(ValueError, match=r"options\['goals'\] must be 2 integer \(row, col\) cells, shape \(2, 2\)"):
        env.reset(seed=0, options={"goals": np.zeros((3, 2), dtype=np.int32)})
    with pytest.raises(ValueError, match=r"options\['goals'\]: goal \[0, 0\] is a wall"):
        env.reset(seed=0, options={"goals": np.array([[0, 0], [5, 3]])})
    with pytest.raises(ValueError, match=r"options\['goals'\]: goal \[9, 1\] lies outside the 7x7 maze"):
        env.reset(seed=0, options={"goals": np.array([[9, 1], [5, 3]])})
    plain, _ = env.reset(seed=5)
    maze = env.maze.copy()
    given, _ = env.reset(seed=5, options={"goals": np.array([[5, 3], [5, 3]])})
    assert np.array_equal(env.maze, maze) and np.array_equal(given["achieved"], plain["achieved"])
    assert given["goals"].tolist() == [[5, 3], [5, 3]]


def test_check_instruction_env_validates_counterfactual():
    with pytest.raises(ValueError, match="counterfactual must be an int >= 0"):
        check_instruction_env(Corridor(), counterfactual=-1)


def test_an_env_ignoring_its_seed_is_not_reproducible():
    with pytest.raises(AssertionError) as excinfo:
        check_instruction_env(UnseededRandomness(), n_episodes=2, seed=7)
    message = _message(excinfo)
    assert re.search(r"episode 0 \(seed=7\), step 0: not reproducible: re-running it with reset\(seed=7\) and "
                     r"action_space\.seed\(7\) gave observation\['\w+'\] \[.*\] the first time, \[.*\] the second",
                     message), message
    assert "self.np_random" in message


def test_an_env_with_a_hardcoded_seed_is_caught_by_its_rng_state():
    with pytest.raises(AssertionError, match=r"reset\(seed=5\) and reset\(seed=6\): env\.unwrapped\.np_random has the "
                                             r"same state after both: reset ignores its seed"):
        check_instruction_env(HardcodedSeed(), n_episodes=2, seed=5)


def test_wrong_dtype_is_reported_with_key_and_both_dtypes():
    with pytest.raises(AssertionError) as excinfo:
        check_instruction_env(Int64Goals(), seed=2)
    assert re.fullmatch(r"check_instruction_env: episode 0 \(seed=2\), step 0: observation\['goals'\] has dtype int64, "
                        r"but observation_space\['goals'\] declares int32; value \[\[0, \d\], \[0, \d\], \[0, \d\]\]",
                        _message(excinfo)), _message(excinfo)


def test_wrong_shape_is_reported_with_key_and_both_shapes():
    with pytest.raises(AssertionError) as excinfo:
        check_instruction_env(FlatAchieved(), seed=0)
    assert re.fullmatch(r"check_instruction_env: episode 0 \(seed=0\), step 0: observation\['achieved'\] has shape "
                        r"\(2,\), but observation_space\['achieved'\] declares \(1, 2\); value \[0, \d\]",
                        _message(excinfo)), _message(excinfo)


def test_is_success_disagreeing_with_the_goals_reached():
    with pytest.raises(AssertionError) as excinfo:
        check_instruction_env(EarlySuccess(), n_episodes=5, seed=0)
    message = _message(excinfo)
    assert re.search(r"episode \d \(seed=\d\), step \d+: info\['is_success'\] = True but 1 of 3 goals are reached "
                     r"\(observation\['goals'\] = \[\[-1, -1\], \[0, \d\], \[0, \d\]\]\)", message), message


def test_relabeler_with_the_wrong_number_of_goals_is_rejected():
    with pytest.raises(AssertionError, match=r"the env's instructions hold 3 goals but .* has num_goals=2"):
        check_instruction_env(Corridor(), relabeler=HindsightInstructionRelabeler(2))


def test_env_check_validates_its_arguments():
    with pytest.raises(ValueError, match="n_episodes must be an int >= 1"):
        check_instruction_env(Corridor(), n_episodes=0)
    with pytest.raises(ValueError, match="max_steps must be an int >= 1 or None"):
        check_instruction_env(Corridor(), max_steps=-3)


def test_max_steps_cuts_episodes_as_truncations():
    check_instruction_env(Corridor(time_limit=10_000), n_episodes=2, max_steps=5)


# ---------------------------------------------------------------------------------------------- broken relabelers
class InventsGoals(InstructionRelabeler):
    """Bug: replaces the first goal with a cell outside the corridor."""

    def relabel_goals(self, episode: Episode, rng: np.random.Generator) -> np.ndarray:
        goals = episode.instruction().copy()
        goals[0] = (0, 99)
        return goals


class FinalCellFirst(InstructionRelabeler):
    """Bug: puts the last achieved cell *first*, which undoes later credit, while promising not to lower returns."""

    never_lowers_return = True

    def relabel_goals(self, episode: Episode, rng: np.random.Generator) -> np.ndarray:
        goals = episode.instruction().copy()
        goals[0] = episode.observations["achieved"][-1, 0]
        return goals


class ClaimsNone(InstructionRelabeler):
    """Bug: says ``strategy == "none"`` but still credits the final cell (HER "final")."""

    strategy = "none"

    def relabel_goals(self, episode: Episode, rng: np.random.Generator) -> np.ndarray | None:
        goals = episode.instruction().copy()
        achieved = episode.observations["achieved"][:, 0]
        steps = self.reach_steps(achieved, goals)
        n = int((steps > 0).sum())
        if n == self.num_goals or (n and steps[n - 1] == len(episode)):
            return None
        goals[n] = achieved[-1]
        return goals


class DoublesRewards(HindsightInstructionRelabeler):
    """Bug: ``relabel`` doubles the rewards of the replayed episode."""

    def relabel(self, episode: Episode, rng: np.random.Generator) -> Episode:
        out = super().relabel(episode, rng)
        return Episode(out.observations, out.actions, out.rewards * 2, out.terminated, out.truncated, out.infos)


def test_a_relabeler_inventing_goals_is_reported():
    with pytest.raises(AssertionError) as excinfo:
        check_relabeler(InventsGoals(3), Corridor(), seed=4)
    message = _message(excinfo)
    assert re.match(r"check_relabeler: episode 0 \(seed=4\), relabel draw 0 "
                    r"\(rng=np\.random\.default_rng\(\[4, 0\]\)\): relabeled goal 0 = \[0, 99\] \(was \[0, \d\]\) "
                    r"is not reached after the reset; the episode "
                    r"achieves it at steps never of 1\.\.\d+\. Relabeled goals must be values the episode achieved, "
                    r"in time order", message), message


def test_a_relabeler_lowering_returns_while_promising_not_to_is_reported():
    # Deterministic episode: the agent walks right through cells 1..8, reaching goals 2 and 4 but not 9.
    env = Corridor(length=10, time_limit=8, moves=(1,), goals=[2, 4, 9], start=0)
    assert promises_non_decreasing_return(FinalCellFirst(3))
    with pytest.raises(AssertionError) as excinfo:
        check_relabeler(FinalCellFirst(3), env, n_episodes=1, seed=0)
    assert _message(excinfo) == (
        "check_relabeler: episode 0 (seed=0), relabel draw 0 (rng=np.random.default_rng([0, 0])): "
        f"{FinalCellFirst(3)!r} promises never to lower returns (never_lowers_return=True) but the relabeled "
        "return 1.0 < original 2.0 "
        "(original instruction [[0, 2], [0, 4], [0, 9]], relabeled [[0, 8], [0, 4], [0, 9]], original rewards at "
        "steps [2, 4], relabeled at [8])"
    )


def test_a_relabeler_without_the_promise_may_lower_returns():
    env = Corridor(length=10, time_limit=8, moves=(1,), goals=[2, 4, 9], start=0)

    class NoPromise(FinalCellFirst):
        never_lowers_return = False

    check_relabeler(NoPromise(3), env, n_episodes=1)


def test_strategy_none_must_be_the_identity():
    with pytest.raises(AssertionError) as excinfo:
        check_relabeler(ClaimsNone(3), Corridor(), seed=0)
    assert re.match(r"check_relabeler: episode \d \(seed=\d\), step 0: ClaimsNone\(.*\) has strategy 'none' and must "
                    r"return the episode unchanged, but the original and the relabeled episode differ: "
                    r"observation\['goals'\] \[.*\] \(int32\) vs \[.*\] \(int32\)", _message(excinfo)), \
        _message(excinfo)


def test_none_twin_of_a_strategy_class_is_checked_too():
    class NoneIsAll(HindsightInstructionRelabeler):
        """Bug: its "none" variant behaves like "all"."""

        def __init__(self, num_goals, strategy="some", goal_spec="exact"):
            super().__init__(num_goals, strategy="all" if strategy == "none" else strategy, goal_spec=goal_spec)
            self.strategy = strategy

        def relabel_goals(self, episode, rng):
            return HindsightInstructionRelabeler(self.num_goals, "all").relabel_goals(episode, rng)

    with pytest.raises(AssertionError, match=r"NoneIsAll\(.*strategy='none'\) has strategy 'none' and must return"):
        check_relabeler(NoneIsAll(3, strategy="some"), Corridor(), seed=0)


def test_a_relabeled_episode_must_be_self_consistent_under_replay():
    with pytest.raises(AssertionError) as excinfo:
        check_relabeler(DoublesRewards(3, strategy="all"), Corridor(), seed=0)
    assert re.match(r"check_relabeler: episode \d \(seed=\d\), relabel draw 0 \(.*\), step \d+: the relabeled episode "
                    r"is not self-consistent: replaying it under its own instruction .* changes it: relabeled vs "
                    r"replayed rewards 2\.0 vs 1\.0", _message(excinfo)), _message(excinfo)


def test_relabeler_check_refuses_an_env_that_disagrees_with_replay():
    with pytest.raises(AssertionError, match=r"the env disagrees with .*\.replay before any relabeling: env reward "
                                             r"1\.0"):
        check_relabeler(HindsightInstructionRelabeler(3), RewardsAnyGoal(), seed=3)


def test_relabeler_by_name_is_created_for_the_env():
    check_relabeler("hindsight-instruction", Corridor(num_goals=2), n_episodes=2)


# ---------------------------------------------------------------------------------------------- goal specs
class NotVectorised(ExactGoalSpec):
    def reached(self, achieved, goal):
        return bool(np.array_equal(achieved, goal))


class AnyComponentMasked(ExactGoalSpec):
    def is_masked(self, goals):
        return np.any(np.asarray(goals) == self.mask_value, axis=-1)


def test_goal_spec_check_passes_the_builtin_specs():
    check_goal_spec("exact")
    check_goal_spec("tolerance")


def test_goal_spec_must_be_vectorised():
    with pytest.raises(AssertionError, match=r"check_goal_spec: NotVectorised\(.*\), seed=0: reached\(achieved, goal\) "
                                             r"on 6 goals of shape \(2,\) must return a bool array of shape \(6,\), "
                                             r"got bool \(\)"):
        check_goal_spec(NotVectorised())


def test_goal_spec_mask_needs_every_component():
    with pytest.raises(AssertionError, match=r"is_masked must need every component to be the mask value, but "
                                             r"is_masked\(\[-1\.0, \d+\.0\]\) is True"):
        check_goal_spec(AnyComponentMasked())


# ---------------------------------------------------------------------------------------------- beta schedules
def test_beta_schedule_outside_the_unit_interval_is_reported():
    with pytest.raises(AssertionError) as excinfo:
        check_beta_schedule(lambda round_num: 1.0 + 0.25 * round_num if round_num >= 2 else 1.0)
    assert re.fullmatch(r"check_beta_schedule: <lambda>, round 2: beta = 1\.5 lies outside \[0, 1\] \(it is the "
                        r"probability that the expert acts\)", _message(excinfo).replace("test_beta_schedule_outside"
                        "_the_unit_interval_is_reported.<locals>.", "")), _message(excinfo)


def test_beta_schedule_must_be_a_number_deterministic_and_non_increasing():
    with pytest.raises(AssertionError, match=r"round 0: beta must be a finite real number, got NoneType None"):
        check_beta_schedule(lambda round_num: None)
    with pytest.raises(AssertionError, match=r"round 0: beta must be a finite real number, got float nan"):
        check_beta_schedule(lambda round_num: float("nan"))
    draws = iter(np.linspace(0.9, 0.1, 9))
    with pytest.raises(AssertionError, match=r"round 0: not deterministic: beta = 0\.9, then 0\.8"):
        check_beta_schedule(lambda round_num: float(next(draws)))
    with pytest.raises(AssertionError, match=r"round 3: beta rose from 0\.0 \(round 2\) to 1\.0"):
        check_beta_schedule(lambda round_num: 1.0 if round_num % 3 == 0 else 0.0)
    check_beta_schedule(lambda round_num: 1.0 if round_num % 3 == 0 else 0.0, non_increasing=False)


# ---------------------------------------------------------------------------------------------- experts
class FixedExpert:
    """Always answers ``action`` for every env."""

    def __init__(self, action: Any) -> None:
        self.action = action

    def predict(self, observation, state=None, episode_start=None, deterministic=True):
        n = len(next(iter(observation.values())))
        return np.array([self.action] * n), state


def test_expert_check_reports_an_action_outside_the_space():
    with pytest.raises(AssertionError, match=r"check_expert: seed=0, step 1: FixedExpert\.predict returned action 7 "
                                             r"\(int64\), which is not in the action space Discrete\(3\)"):
        check_expert(FixedExpert(7), Corridor())


def test_expert_check_reports_a_low_success_rate():
    with pytest.raises(AssertionError, match=r"FixedExpert succeeded in 0 of 5 finished episodes \(rate 0\.00\), "
                                             r"below min_success_rate=0\.5"):
        check_expert(FixedExpert(1), Corridor(), n_steps=200, min_success_rate=0.5)


def test_expert_check_passes_the_shortest_path_expert():
    from sb3_hir.envs import MazeRunnerEnv

    check_expert("shortest-path", MazeRunnerEnv(maze_dim=7, time_limit=60), n_steps=120, min_success_rate=1.0)


# ---------------------------------------------------------------------------------------------- plugins
def test_check_plugin_names_a_missing_distribution():
    with pytest.raises(AssertionError, match=r"check_plugin: sb3-hir-no-such-plugin: no such distribution is "
                                             r"installed"):
        check_plugin("sb3-hir-no-such-plugin")


def _install_fake_distribution(root: Path, name: str, module: str, source: str) -> None:
    """A real installed distribution: dist-info metadata with an ``sb3_hir`` entry point, on sys.path."""
    dist_info = root / f"{name.replace('-', '_')}-0.0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    (dist_info / "entry_points.txt").write_text(f"[sb3_hir]\n{module} = {module}\n")
    (root / f"{module}.py").write_text(source)


def test_check_plugin_catches_a_broken_component_of_an_installed_plugin(tmp_path, monkeypatch):
    _install_fake_distribution(tmp_path, "sb3-hir-overshoot", "sb3_hir_overshoot", (
        "from sb3_hir import hookimpl\n"
        "@hookimpl\n"
        "def register_beta_schedules(register):\n"
        "    register('overshoot', lambda: (lambda round_num: 1.25))\n"
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AssertionError) as excinfo:
        check_plugin("sb3-hir-overshoot")
    assert re.fullmatch(r"check_plugin: sb3-hir-overshoot beta_schedule 'overshoot': check_beta_schedule: .*<lambda>, "
                        r"round 0: beta = 1\.25 lies outside \[0, 1\] .*", _message(excinfo)), _message(excinfo)


def test_check_plugin_reports_a_plugin_that_fails_to_import(tmp_path, monkeypatch):
    _install_fake_distribution(tmp_path, "sb3-hir-unimportable", "sb3_hir_unimportable",
                               "raise ImportError('missing dependency on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AssertionError, match=r"check_plugin: sb3-hir-unimportable plugin 'sb3_hir_unimportable': "
                                             r"failed to load: import: ImportError: missing dependency on purpose"):
        check_plugin("sb3-hir-unimportable")


def test_check_plugin_reports_a_component_without_defaults(tmp_path, monkeypatch):
    _install_fake_distribution(tmp_path, "sb3-hir-needy", "sb3_hir_needy", (
        "from sb3_hir import hookimpl\n"
        "def make_schedule(rounds):\n"
        "    return lambda round_num: 0.5\n"
        "@hookimpl\n"
        "def register_beta_schedules(register):\n"
        "    register('needy', make_schedule)\n"
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AssertionError, match=r"check_plugin: sb3-hir-needy beta_schedule 'needy': cannot be created "
                                             r"with its defaults \(make_schedule\(\)\): TypeError"):
        check_plugin("sb3-hir-needy")


# ---------------------------------------------------------------------------------------------- pytest plugin
def test_pytest_help_lists_the_option(pytester: pytest.Pytester):
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["sb3-hir:", "*--sb3-hir-plugins=NAMES*",
                                 "*sb3-hir: restrict plugin-parametrized tests*"])


def test_importing_the_pytest_plugin_does_not_import_torch():
    code = ("import sys, sb3_hir.pytest_plugin; "
            "print(sorted(m for m in ('torch', 'imitation', 'stable_baselines3') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


ISOLATION_TESTS = """
from sb3_hir import hookimpl, plugins


class Half:
    @hookimpl
    def register_beta_schedules(self, register):
        register("tmp-half", lambda: (lambda round_num: 0.5))


def test_a_registers(sb3_hir_plugins):
    sb3_hir_plugins.register(Half(), name="half")
    assert plugins.get_plugin_manager() is sb3_hir_plugins
    assert plugins.create("beta_schedule", "tmp-half")(3) == 0.5


def test_b_fresh_manager(sb3_hir_plugins):
    assert "tmp-half" not in sb3_hir_plugins.available("beta_schedule")
    assert "cosine" in plugins.available("beta_schedule")  # the example plugin's, installed in every profile


def test_c_process_wide_manager_untouched():
    assert "tmp-half" not in plugins.available("beta_schedule")
"""


def test_fixture_gives_each_test_an_isolated_manager(pytester: pytest.Pytester):
    pytester.makepyfile(ISOLATION_TESTS)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=3)


PARAMETRIZED_TESTS = """
from sb3_hir.testing import parametrize_components


def test_env(sb3_hir_env_name):
    pass


def test_relabeler(sb3_hir_relabeler_name, sb3_hir_plugins):
    assert sb3_hir_relabeler_name in sb3_hir_plugins.available("relabeler")


def test_beta_schedule(sb3_hir_beta_schedule_name):
    pass


@parametrize_components("goal_spec")
def test_goal_spec(goal_spec_name):
    pass
"""


def _ids(result: pytest.RunResult, test: str) -> set[str]:
    return set(re.findall(rf"::{test}\[([^\]]+)\] PASSED", result.stdout.str()))


def test_fixture_names_parametrize_over_every_registered_component(pytester: pytest.Pytester):
    pytester.makepyfile(PARAMETRIZED_TESTS)
    result = pytester.runpytest("-v")
    assert _ids(result, "test_env") == set(component_names("env"))
    assert _ids(result, "test_relabeler") == set(component_names("relabeler"))
    assert {"hindsight-instruction", "final-goal"} <= _ids(result, "test_relabeler")
    assert _ids(result, "test_beta_schedule") == set(component_names("beta_schedule"))
    # imitation's schedules come with the 'dagger' extra; the example plugin's in every profile.
    expected = {"cosine"} | ({"linear", "exponential"} if has("imitation") else set())
    assert expected <= _ids(result, "test_beta_schedule")
    assert _ids(result, "test_goal_spec") == set(component_names("goal_spec"))
    result.assert_outcomes(passed=sum(len(component_names(kind)) for kind in
                                      ("env", "relabeler", "beta_schedule", "goal_spec")))


def test_option_restricts_parametrization_to_the_named_plugins(pytester: pytest.Pytester):
    pytester.makepyfile(PARAMETRIZED_TESTS)
    result = pytester.runpytest("-v", "-rs", "--sb3-hir-plugins", "sb3-hir-example")
    assert _ids(result, "test_relabeler") == {"final-goal"}
    assert _ids(result, "test_beta_schedule") == {"cosine"}
    # The example plugin registers no env and no goal spec: those tests get an empty parameter set.
    result.assert_outcomes(passed=2, skipped=2)


def test_option_is_an_allow_list_for_the_fixture_manager(pytester: pytest.Pytester):
    pytester.makepyfile("""
        def test_builtin_only(sb3_hir_plugins, sb3_hir_relabeler_name):
            assert sb3_hir_relabeler_name == "hindsight-instruction"
            assert "final-goal" not in sb3_hir_plugins.available("relabeler")
            assert [info.name for info in sb3_hir_plugins.plugins()] == ["builtin"]
    """)
    result = pytester.runpytest("--sb3-hir-plugins", "builtin")
    result.assert_outcomes(passed=1)


def test_env_fixture_builds_each_env_for_a_contract_test(pytester: pytest.Pytester):
    pytester.makepyfile("""
        from sb3_hir.testing import check_instruction_env

        def test_contract(sb3_hir_env):
            check_instruction_env(sb3_hir_env, n_episodes=1)
    """)
    result = pytester.runpytest("-v", "--sb3-hir-plugins", "sb3-hir")
    assert _ids(result, "test_contract") == {"mazerunner"}
    result.assert_outcomes(passed=1)


def test_in_process_registration_is_visible_to_component_names():
    class Extra:
        @hookimpl
        def register_beta_schedules(self, register):
            register("extra", lambda: (lambda round_num: 0.0))

    plugins.register(Extra(), name="extra")
    assert "extra" in plugins.available("beta_schedule")
    # component_names reads installed plugins afresh, so a test's in-process registrations never leak into it.
    assert "extra" not in component_names("beta_schedule")


def _padded_episode(goals, groups, steps: int = 3, change_groups_at: int | None = None):
    from sb3_hir.episodes import Episode

    goals = np.asarray(goals, np.int32)
    groups_obs = np.tile(np.asarray(groups, np.int32), (steps + 1, 1))
    if change_groups_at is not None:
        groups_obs[change_groups_at:, 0] += 1
    observations = {"obs": np.zeros((steps + 1, 1), np.float32), "goals": np.tile(goals, (steps + 1, 1, 1)),
                    "achieved": np.zeros((steps + 1, 2), np.int32), "goal_steps": groups_obs}
    return Episode(observations, np.zeros(steps, np.int64), np.zeros(steps, np.float32), np.zeros(steps, bool),
                   np.eye(1, steps, steps - 1, dtype=bool)[0])


@pytest.mark.parametrize("goals,groups,change,match", [
    ([[1, 1], [-4, -4], [2, 2]], [0, -4, 1], None, "padding .* must follow the last real goal"),
    ([[-4, -4], [-4, -4], [-4, -4]], [-4, -4, -4], None, "at least one goal"),
    ([[1, 1], [2, 2], [-4, -4]], [0, 0, -4], 2, "changed during the episode"),
    ([[1, 1], [2, 2], [-4, -4]], [1, 1, -4], None, "count up from 0"),
    ([[1, 1], [2, 2], [3, 3]], [0, 2, 2], None, "count up from 0"),
    ([[1, 1], [2, 2], [3, 3]], [1, 0, 0], None, "count up from 0"),
])
def test_the_instruction_form_check_names_bad_padding_and_groups(goals, groups, change, match):
    """check_instruction_env item 8, on episodes that break it: each is refused with what is wrong."""
    from types import SimpleNamespace

    from sb3_hir.goals import ExactGoalSpec
    from sb3_hir.testing.env import _check_instruction_form

    spec = ExactGoalSpec(pad_value=-4, groups_key="goal_steps")
    with pytest.raises(AssertionError, match=match):
        _check_instruction_form(SimpleNamespace(index=0, seed=0), _padded_episode(goals, groups, 3, change), spec)
    _check_instruction_form(SimpleNamespace(index=0, seed=0),  # the well-formed instruction passes
                            _padded_episode([[1, 1], [2, 2], [-4, -4]], [0, 0, -4]), spec)
