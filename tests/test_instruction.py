"""InstructionWrapper: a single-goal GoalEnv as a k-goal instruction env with MazeRunner's contract.

The GoalEnv here is a small lattice env written for the test (the GoalEnv API checked structurally, so the core
package needs no gymnasium-robotics); ``plugins/sb3-hir-robotics`` tests the real PointMaze and Fetch envs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from sb3_hir.episodes import Episode
from sb3_hir.goals import ToleranceGoalSpec
from sb3_hir.instruction import DesiredGoalSampler, InstructionWrapper, env_success
from sb3_hir.relabel import HindsightInstructionRelabeler

MOVES = np.array([[-1.0, 0.0], [0.0, -1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])


class LatticeGoalEnv(gym.Env):
    """A point on a ``size x size`` lattice; success is ``||achieved - goal|| <= distance_threshold``.

    Follows gymnasium-robotics' GoalEnv API: sparse ``-1 / 0`` reward from ``compute_reward`` and
    ``info["is_success"]``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}
    distance_threshold = 0.3

    def __init__(self, size: int = 4, terminate_on_success: bool = False, report_success: bool = True) -> None:
        self.size = size
        self.terminate_on_success = terminate_on_success
        self.report_success = report_success
        box = spaces.Box(0.0, size - 1.0, shape=(2,), dtype=np.float64)
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = spaces.Discrete(5)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(distance > self.distance_threshold).astype(np.float64)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.integers(0, self.size, size=2).astype(np.float64)
        self.goal = self.np_random.integers(0, self.size, size=2).astype(np.float64)
        return self._obs(), {}

    def step(self, action: Any):
        self.pos = np.clip(self.pos + MOVES[int(action)], 0.0, self.size - 1.0)
        reward = float(self.compute_reward(self.pos, self.goal, {}))
        success = reward == 0.0
        info = {"is_success": success} if self.report_success else {}
        return self._obs(), reward, bool(self.terminate_on_success and success), False, info


class LatticeSampler:
    """k distinct lattice cells other than the agent's, drawn from the wrapper's generator."""

    def __init__(self, replace: bool = False) -> None:
        self.replace = replace
        self.installed: list[np.ndarray] = []

    def sample(self, env: InstructionWrapper, rng: np.random.Generator, k: int) -> np.ndarray:
        size = env.unwrapped.size
        cells = np.stack(np.divmod(np.arange(size * size), size), axis=-1).astype(np.float64)
        start = np.asarray(env.env_observation["achieved_goal"])
        cells = cells[np.any(cells != start, axis=-1)]
        return cells[rng.choice(len(cells), size=k, replace=self.replace)]

    def install(self, env: InstructionWrapper, goal: np.ndarray) -> None:
        env.unwrapped.goal = np.array(goal, dtype=np.float64)
        self.installed.append(np.array(goal))

    def reached(self, env: InstructionWrapper, achieved: np.ndarray, goal: np.ndarray, info: dict[str, Any]) -> bool:
        return env_success(env, achieved, goal, info, success_reward=0.0)


class FixedSampler(LatticeSampler):
    """Always the same instruction (to script exact scenarios)."""

    def __init__(self, goals: list[list[float]]) -> None:
        super().__init__()
        self.goals = np.asarray(goals, dtype=np.float64)

    def sample(self, env: InstructionWrapper, rng: np.random.Generator, k: int) -> np.ndarray:
        return self.goals.copy()


def greedy_action(pos: np.ndarray, goal: np.ndarray) -> int:
    delta = goal - pos
    if delta[0] != 0:
        return 2 if delta[0] > 0 else 0
    if delta[1] != 0:
        return 3 if delta[1] > 0 else 1
    return 4


def make(k: int = 3, max_episode_steps: int | None = None, **env_kwargs: Any) -> InstructionWrapper:
    env: gym.Env = LatticeGoalEnv(**env_kwargs)
    if max_episode_steps is not None:
        env = gym.wrappers.TimeLimit(env, max_episode_steps)
    return InstructionWrapper(env, LatticeSampler(), num_goals=k)


# -- the MazeRunner contract --------------------------------------------------------------------------------------
def test_observation_space_and_reset_follow_the_instruction_contract():
    env = make(k=3)
    assert list(env.observation_space.spaces) == ["achieved", "goals", "obs"]
    assert env.observation_space["goals"].shape == (3, 2)
    assert env.observation_space["achieved"].shape == (1, 2)
    assert env.observation_space["goals"].dtype == np.float64
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    assert info["is_success"] is False and info["goals_reached"] == 0
    np.testing.assert_array_equal(obs["goals"], env.goals)
    np.testing.assert_array_equal(obs["achieved"][0], env.unwrapped.pos)
    assert len(np.unique(obs["goals"], axis=0)) == 3
    assert not np.any(np.all(obs["goals"] == obs["achieved"], axis=-1))  # no goal in the start cell
    np.testing.assert_array_equal(env.unwrapped.goal, obs["goals"][0])  # first goal installed in the env


@pytest.mark.filterwarnings("ignore:.*(different from the unwrapped|env.seed to get variables).*:UserWarning")
def test_gymnasium_env_checker_accepts_the_wrapper():
    check_env(make(k=2, max_episode_steps=20), skip_render_check=True)


def test_walking_the_instruction_rewards_each_goal_once_installs_the_next_and_terminates():
    env = make(k=3, max_episode_steps=100)
    obs, _ = env.reset(seed=11)
    goals = env.goals
    rewards, reached_log = [], []
    terminated = truncated = False
    while not (terminated or truncated):
        active = env.unwrapped.goal
        obs, reward, terminated, truncated, info = env.step(greedy_action(env.unwrapped.pos, active))
        rewards.append(reward)
        reached_log.append(info["goals_reached"])
        n = info["goals_reached"]
        # reached goals are masked with -1 in every component, the others untouched
        assert np.all(obs["goals"][:n] == -1.0)
        np.testing.assert_array_equal(obs["goals"][n:], goals[n:])
        if n < 3:
            np.testing.assert_array_equal(env.unwrapped.goal, goals[n])
    assert terminated and not truncated
    assert info["is_success"] is True and info["goals_reached"] == 3
    assert sum(rewards) == 3.0
    steps = np.flatnonzero(rewards)
    assert np.array_equal(np.asarray(reached_log)[steps], [1, 2, 3])
    # env's own reward was for the goal installed at that time: 0 on reaching steps
    assert info["env_reward"] == 0.0 and info["env_is_success"] is True


def test_one_goal_per_step_the_next_is_checked_from_the_next_step():
    env = InstructionWrapper(LatticeGoalEnv(), FixedSampler([[1, 0], [1, 0]]), num_goals=2, require_distinct=False)
    env.reset(seed=0)
    env.unwrapped.pos = np.array([0.0, 0.0])
    _, r1, term1, _, info1 = env.step(2)  # onto (1, 0): both goals sit there, only the first counts
    assert (r1, term1, info1["goals_reached"]) == (1.0, False, 1)
    _, r2, term2, _, info2 = env.step(4)  # stay: now the second
    assert (r2, term2, info2["goals_reached"], info2["is_success"]) == (1.0, True, 2, True)


def test_truncation_passes_through_without_success():
    env = make(k=3, max_episode_steps=2)
    env.reset(seed=1)
    env.step(4)
    _, reward, terminated, truncated, info = env.step(4)
    assert truncated and not terminated
    assert info["is_success"] is False and reward == 0.0


def test_env_termination_passes_through_except_when_it_means_a_non_final_goal_was_reached():
    env = InstructionWrapper(LatticeGoalEnv(terminate_on_success=True), FixedSampler([[1, 0], [2, 0]]), num_goals=2)
    env.reset(seed=0)
    env.unwrapped.pos = np.array([0.0, 0.0])
    _, reward, terminated, _, info = env.step(2)  # the episodic env says "done", the instruction goes on
    assert reward == 1.0 and not terminated and info["goals_reached"] == 1
    _, reward, terminated, _, info = env.step(2)
    assert reward == 1.0 and terminated and info["is_success"]

    # a termination that is not a reached goal (here: the env's own, for a goal the instruction does not hold)
    class Failing(LatticeGoalEnv):
        def step(self, action):
            obs, reward, _, truncated, info = super().step(action)
            return obs, reward, True, truncated, info

    env = InstructionWrapper(Failing(), FixedSampler([[3, 3]]), num_goals=1)
    env.reset(seed=0)
    env.unwrapped.pos = np.array([0.0, 0.0])
    _, reward, terminated, _, info = env.step(4)
    assert terminated and reward == 0.0 and info["is_success"] is False


def test_seeding_reproduces_instructions_from_the_wrappers_own_generator():
    a, b = make(k=3), make(k=3)
    goals_a = [a.reset(seed=s)[0]["goals"] for s in (5, 6)]
    goals_b = [b.reset(seed=s)[0]["goals"] for s in (5, 6)]
    for x, y in zip(goals_a, goals_b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(goals_a[0], goals_a[1])
    assert a.np_random is not a.unwrapped.np_random
    # drawing the instruction does not consume the env's generator
    plain = LatticeGoalEnv()
    plain.reset(seed=5)
    a.reset(seed=5)
    assert plain.np_random.integers(1 << 30) == a.unwrapped.np_random.integers(1 << 30)


def test_desired_goal_sampler_is_the_envs_own_single_goal():
    env = InstructionWrapper(LatticeGoalEnv(), DesiredGoalSampler(), num_goals=1)
    obs, _ = env.reset(seed=2)
    np.testing.assert_array_equal(obs["goals"][0], env.unwrapped.goal)
    with pytest.raises(ValueError, match="num_goals must be 1"):
        InstructionWrapper(LatticeGoalEnv(), DesiredGoalSampler(), num_goals=2).reset(seed=0)


def test_env_success_falls_back_to_compute_reward_only_when_told_the_success_value():
    env = LatticeGoalEnv(report_success=False)
    env.reset(seed=0)
    goal = env.pos.copy()
    assert env_success(env, env.pos, goal, {}, success_reward=0.0) is True
    assert env_success(env, env.pos, goal + 1, {}, success_reward=0.0) is False
    with pytest.raises(ValueError, match="success_reward"):
        env_success(env, env.pos, goal, {})
    assert env_success(env, env.pos, goal + 1, {"is_success": np.float32(1.0)}) is True


# -- agreement with relabeling ------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), actions=st.lists(st.integers(0, 4), min_size=1, max_size=30))
def test_replaying_a_recorded_episode_with_the_matching_goal_spec_reproduces_the_env(seed, actions):
    """The goal spec a buffer would use (tolerance = the env's threshold, the wrapper's mask) agrees with the
    env's own success test, so relabeled rewards mean what the env's rewards mean."""
    env = make(k=3)
    obs, _ = env.reset(seed=seed)
    keys = ("achieved", "goals", "obs")
    record = {key: [obs[key]] for key in keys}
    rewards, terminated, truncated = [], [], []
    for action in actions:
        obs, reward, term, trunc, _ = env.step(action)
        for key in keys:
            record[key].append(obs[key])
        rewards.append(reward)
        terminated.append(term)
        truncated.append(trunc)
        if term:
            break
    episode = Episode(
        observations={key: np.stack(value) for key, value in record.items()},
        actions=np.asarray(actions[: len(rewards)]),
        rewards=np.asarray(rewards, dtype=np.float32),
        terminated=np.asarray(terminated),
        truncated=np.asarray(truncated),
    )
    spec = ToleranceGoalSpec(tolerance=LatticeGoalEnv.distance_threshold, mask_value=env.mask_value)
    relabeler = HindsightInstructionRelabeler(3, strategy="none", goal_spec=spec)
    replayed = relabeler.replay(episode, env.goals)
    np.testing.assert_array_equal(replayed.rewards, episode.rewards)
    np.testing.assert_array_equal(replayed.terminated, episode.terminated)
    np.testing.assert_array_equal(replayed.observations["goals"], episode.observations["goals"])


# -- bad input ----------------------------------------------------------------------------------------------------
class NoDictEnv(gym.Env):
    observation_space = spaces.Box(0, 1, (2,))
    action_space = spaces.Discrete(2)


class MissingKeyEnv(LatticeGoalEnv):
    def __init__(self) -> None:
        super().__init__()
        box = spaces.Box(0, 1, (2,))
        self.observation_space = spaces.Dict({"observation": box, "desired_goal": box})


class NoComputeRewardEnv(gym.Env):
    def __init__(self) -> None:
        box = spaces.Box(0, 1, (2,))
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = spaces.Discrete(2)


@pytest.mark.parametrize(
    ("env", "match"),
    [
        (NoDictEnv(), "Dict observation space"),
        (MissingKeyEnv(), r"missing the key\(s\) \['achieved_goal'\]"),
        (NoComputeRewardEnv(), "no compute_reward"),
    ],
)
def test_non_goal_envs_are_rejected_naming_what_is_missing(env, match):
    with pytest.raises(ValueError, match=match):
        InstructionWrapper(env, LatticeSampler(), num_goals=1)


@pytest.mark.parametrize("k", [0, -2, True, 1.5])
def test_num_goals_below_one_or_not_int_is_rejected(k):
    with pytest.raises(ValueError, match="num_goals must be an int >= 1"):
        InstructionWrapper(LatticeGoalEnv(), LatticeSampler(), num_goals=k)


def test_sampler_without_the_protocol_is_rejected():
    class Half:
        def sample(self, env, rng, k):
            return np.zeros((k, 2))

    with pytest.raises(ValueError, match=r"lacks \['install', 'reached'\]"):
        InstructionWrapper(LatticeGoalEnv(), Half(), num_goals=1)


def test_sampler_that_cannot_produce_k_distinct_goals_raises_a_clear_error():
    # 4 cells on a 2x2 lattice minus the start: at most 3 distinct goals; drawing 6 with replacement repeats
    env = InstructionWrapper(LatticeGoalEnv(size=2), LatticeSampler(replace=True), num_goals=6)
    with pytest.raises(ValueError, match="num_goals=6 distinct goals"):
        env.reset(seed=0)
    bad_shape = InstructionWrapper(LatticeGoalEnv(), FixedSampler([[1, 0]]), num_goals=2)
    with pytest.raises(ValueError, match=r"expected \(num_goals, goal_dim\) = \(2, 2\)"):
        bad_shape.reset(seed=0)


def test_mask_value_must_stay_out_of_the_goal_range():
    with pytest.raises(ValueError, match="inside the desired_goal bounds"):
        InstructionWrapper(LatticeGoalEnv(), LatticeSampler(), num_goals=1, mask_value=1.0)
    with pytest.raises(ValueError, match="mask_value must be a finite number"):
        InstructionWrapper(LatticeGoalEnv(), LatticeSampler(), num_goals=1, mask_value=float("nan"))

    class Unbounded(LatticeGoalEnv):
        def __init__(self) -> None:
            super().__init__()
            box = spaces.Box(-np.inf, np.inf, (2,), dtype=np.float64)
            self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})

    env = InstructionWrapper(Unbounded(), FixedSampler([[2, 2], [2.0, 2.0]]), num_goals=2, mask_value=2.0,
                             require_distinct=False)
    with pytest.raises(ValueError, match=r"equal to mask_value=2\.0"):
        env.reset(seed=0)


def test_stepping_before_reset_or_after_completion_is_an_error():
    env = InstructionWrapper(LatticeGoalEnv(), FixedSampler([[1, 0]]), num_goals=1)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(4)
    env.reset(seed=0)
    env.unwrapped.pos = np.array([0.0, 0.0])
    assert env.step(2)[2]  # terminated: the only goal reached
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(4)
