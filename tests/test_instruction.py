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
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from stable_baselines3.common.envs import BitFlippingEnv

from sb3_hir.episodes import Episode
from sb3_hir.goals import ExactGoalSpec, ToleranceGoalSpec
from sb3_hir.instruction import DesiredGoalSampler, InstructionWrapper, env_success, goal_space_mask_value
from sb3_hir.relabel import HindsightInstructionRelabeler
from sb3_hir.testing import check_instruction_env

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


# -- goal spaces: Box, MultiBinary, MultiDiscrete, Discrete -------------------------------------------------------
class DialsGoalEnv(gym.Env):
    """Dials ``i`` with ``nvec[i]`` positions from ``start[i]``: integer goals in a space of choice (SB3 ships no
    GoalEnv with MultiDiscrete goals).

    ``goal_space``: ``"multidiscrete"``, ``"box"`` (a Box of the dials' range) or ``"discrete"`` (one dial, plain
    int observations as BitFlippingEnv gives them). Action ``2i`` / ``2i + 1`` turns dial ``i`` down / up, the last
    one waits. Success is equality, in ``info["is_success"]``; the env terminates on it, as BitFlippingEnv does.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, nvec: tuple[int, ...] = (3, 4, 5), start: tuple[int, ...] | None = None,
                 goal_space: str = "multidiscrete", dtype: Any = np.int64) -> None:
        self.nvec = np.asarray(nvec, dtype=np.int64)
        self.start = np.zeros_like(self.nvec) if start is None else np.asarray(start, dtype=np.int64)
        self.goal_space, self.dtype = goal_space, np.dtype(dtype)
        if goal_space == "multidiscrete":
            space: spaces.Space = spaces.MultiDiscrete(self.nvec, dtype=dtype, start=self.start)
        elif goal_space == "box":
            space = spaces.Box(self.start, self.start + self.nvec - 1, dtype=dtype)
        else:
            space = spaces.Discrete(int(self.nvec[0]), start=int(self.start[0]))
        self.observation_space = spaces.Dict({"observation": space, "achieved_goal": space, "desired_goal": space})
        self.action_space = spaces.Discrete(2 * len(self.nvec) + 1)

    def _value(self, dials: np.ndarray) -> Any:
        return int(dials[0]) if self.goal_space == "discrete" else dials.astype(self.dtype)

    def _obs(self) -> dict[str, Any]:
        state = self._value(self.state)
        return {"observation": state, "achieved_goal": state, "desired_goal": self._value(self.goal)}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        different = np.atleast_1d(np.asarray(achieved_goal) != np.asarray(desired_goal))
        return -different.any(axis=-1).astype(np.float64)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.state = self.start + self.np_random.integers(0, self.nvec)
        self.goal = self.start + self.np_random.integers(0, self.nvec)
        return self._obs(), {}

    def step(self, action: Any):
        dial, up = divmod(int(action), 2)
        if dial < len(self.nvec):
            top = self.start[dial] + self.nvec[dial] - 1
            self.state[dial] = np.clip(self.state[dial] + (1 if up else -1), self.start[dial], top)
        success = bool(np.array_equal(self.state, self.goal))
        return self._obs(), -float(not success), success, False, {"is_success": success}


def dials_action(env: InstructionWrapper, obs: dict[str, np.ndarray]) -> int:
    """Turn the first dial that differs from the goal towards it (wait when none does)."""
    achieved, goal = obs["achieved"][0], obs["goals"][0]
    differ = np.flatnonzero(achieved != goal)
    if not differ.size:
        return 2 * len(env.unwrapped.nvec)
    dial = int(differ[0])
    return 2 * dial + int(goal[dial] > achieved[dial])


def bit_vector(goal: np.ndarray, n_bits: int) -> np.ndarray:
    """A BitFlippingEnv goal as bits: itself (MultiBinary) or the bits of its one integer (Discrete)."""
    goal = np.asarray(goal).reshape(-1)
    return goal if goal.size == n_bits else (goal[0] >> np.arange(n_bits)) & 1


def bit_flipping_action(env: InstructionWrapper, obs: dict[str, np.ndarray]) -> Any:
    """Flip the bits that differ from the goal: all at once (continuous actions) or the lowest one (discrete)."""
    unwrapped = env.unwrapped
    n_bits = len(unwrapped.state)
    differ = bit_vector(obs["achieved"], n_bits) != bit_vector(obs["goals"], n_bits)
    if unwrapped.continuous:
        return np.where(differ, 1.0, -1.0).astype(np.float32)
    return int(np.flatnonzero(differ)[0]) if differ.any() else 0


def bit_flipping(n_bits: int = 8, env_class: type[BitFlippingEnv] = BitFlippingEnv, **kwargs: Any) -> gym.Env:
    """SB3's BitFlippingEnv, constructed directly (it is not registered), in a TimeLimit of ``n_bits`` steps.

    SB3 gives it a placeholder spec whose entry point is "no-entry-point", and gymnasium's checker makes the env
    from its spec; a real entry point lets the checker rebuild it (and compare seeded resets).
    """
    env = env_class(n_bits=n_bits, **kwargs)
    env.spec = EnvSpec("BitFlippingEnv-v0", f"{env_class.__module__}:{env_class.__name__}",
                       kwargs=dict(n_bits=n_bits, **kwargs))
    return gym.wrappers.TimeLimit(env, max_episode_steps=n_bits)


def int_box(low: Any, high: Any, shape: tuple[int, ...], dtype: Any) -> spaces.Box:
    return spaces.Box(np.broadcast_to(np.asarray(low, dtype=dtype), shape).copy(),
                      np.broadcast_to(np.asarray(high, dtype=dtype), shape).copy(), dtype=dtype)


# name: (GoalEnv factory, expected "goals" space, expected "achieved" space (None: the same), mask, scripted policy)
GOAL_SPACE_CASES: dict[str, tuple[Any, spaces.Box, spaces.Box | None, float, Any]] = {
    "box-float64": (lambda: DialsGoalEnv((3, 4), goal_space="box", dtype=np.float64),
                    int_box(-1, [2, 3], (1, 2), np.float64), int_box(0, [2, 3], (1, 2), np.float64), -1.0,
                    dials_action),
    "box-uint8": (lambda: DialsGoalEnv((3, 4), goal_space="box", dtype=np.uint8),
                  int_box(-1, [2, 3], (1, 2), np.int16), None, -1, dials_action),
    "multibinary-discrete-actions": (lambda: bit_flipping(continuous=False),
                                     int_box(-1, 1, (1, 8), np.int8), None, -1, bit_flipping_action),
    "multibinary-continuous-actions": (lambda: bit_flipping(continuous=True),
                                       int_box(-1, 1, (1, 8), np.int8), None, -1, bit_flipping_action),
    "discrete-bit-flipping": (lambda: bit_flipping(continuous=False, discrete_obs_space=True),
                              int_box(-1, 255, (1, 1), np.int64), None, -1, bit_flipping_action),
    "discrete-bit-flipping-continuous-actions": (lambda: bit_flipping(continuous=True, discrete_obs_space=True),
                                                 int_box(-1, 255, (1, 1), np.int64), None, -1, bit_flipping_action),
    "discrete-from-minus-2": (lambda: DialsGoalEnv((5,), start=(-2,), goal_space="discrete"),
                              int_box(-3, 2, (1, 1), np.int64), None, -3, dials_action),
    "multidiscrete": (lambda: DialsGoalEnv((3, 4, 5)), int_box(-1, [2, 3, 4], (1, 3), np.int64), None, -1,
                      dials_action),
    "multidiscrete-uint8-from-1": (lambda: DialsGoalEnv((3, 4), start=(1, 0), dtype=np.uint8),
                                   int_box(-1, 3, (1, 2), np.int16), None, -1, dials_action),
}
goal_space_cases = pytest.mark.parametrize("case", list(GOAL_SPACE_CASES))


@goal_space_cases
def test_every_goal_space_gives_the_instruction_contract_and_the_exact_spec_reproduces_the_env(case):
    make_env, goals_space, achieved_space, mask, _ = GOAL_SPACE_CASES[case]
    env = InstructionWrapper(make_env(), DesiredGoalSampler(), num_goals=1)
    space = env.observation_space
    assert list(space.spaces) == ["achieved", "goals", "obs"]
    assert space["goals"] == goals_space and space["goals"].dtype == goals_space.dtype  # bounds include the mask
    expected_achieved = goals_space if achieved_space is None else achieved_space
    assert space["achieved"] == expected_achieved and space["achieved"].dtype == expected_achieved.dtype
    assert space["obs"] == env.env.observation_space["observation"]
    assert env.mask_value == mask and type(env.mask_value) is type(mask)
    if np.issubdtype(goals_space.dtype, np.integer):
        # integer goals compare exactly; the wrapper declares the matching "exact" spec (mask, reward)
        assert isinstance(env.goal_spec, ExactGoalSpec)
        assert (env.goal_spec.mask_value, env.goal_spec.goal_reward) == (mask, env.goal_reward)
    else:
        assert env.goal_spec is None  # a float goal's tolerance is the env's business
    check_instruction_env(env, relabeler="hindsight-instruction")


# A Discrete "obs" is a 0-d array (sb3-hir's contract: every observation value is an ndarray), where gymnasium's
# checker would like an int; BitFlippingEnv has a deprecated seed() method.
@pytest.mark.filterwarnings(
    "ignore:.*(different from the unwrapped|env.seed to get variables|support for the `seed` function"
    "|should be an int or np.int64).*:UserWarning"
)
@goal_space_cases
def test_gymnasium_env_checker_accepts_every_goal_space(case):
    check_env(InstructionWrapper(GOAL_SPACE_CASES[case][0](), DesiredGoalSampler(), num_goals=1),
              skip_render_check=True)


@goal_space_cases
def test_reaching_the_goal_is_rewarded_masked_and_terminated_in_every_goal_space(case):
    make_env, goals_space, _, mask, policy = GOAL_SPACE_CASES[case]
    env = InstructionWrapper(make_env(), DesiredGoalSampler(), num_goals=1, goal_reward=2.0)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        goal = obs["goals"].copy()
        np.testing.assert_array_equal(goal.reshape(-1), np.reshape(env.env_observation["desired_goal"], -1))
        rewards, terminated, truncated = [], False, False
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(policy(env, obs))
            assert env.observation_space.contains(obs)
            rewards.append(reward)
        assert terminated and not truncated and info["is_success"] is True and info["goals_reached"] == 1
        assert rewards == [0.0] * (len(rewards) - 1) + [2.0]
        assert np.all(obs["goals"] == mask) and obs["goals"].dtype == goals_space.dtype
        np.testing.assert_array_equal(obs["achieved"], goal)


class SilentBitFlippingEnv(BitFlippingEnv):
    """BitFlippingEnv whose info reports no success: the adapter must ask its compute_reward, which for Discrete
    goals understands plain ints only."""

    def step(self, action: Any):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {}


@pytest.mark.parametrize("discrete_obs_space", [False, True])
def test_envs_without_is_success_are_asked_in_their_own_goal_format(discrete_obs_space):
    def make_env() -> gym.Env:
        return bit_flipping(4, env_class=SilentBitFlippingEnv, discrete_obs_space=discrete_obs_space)

    env = InstructionWrapper(make_env(), DesiredGoalSampler(success_reward=0.0), num_goals=1)
    obs, _ = env.reset(seed=3)
    native = env.env_goal(env.goals[0])
    if discrete_obs_space:
        assert type(native) is int and native == env.env_observation["desired_goal"]
    else:
        assert native.dtype == np.int8 and native.shape == (4,)
    terminated = truncated = False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(bit_flipping_action(env, obs))
    assert terminated and reward == 1.0 and info["is_success"] is True
    check_instruction_env(env, relabeler="hindsight-instruction")
    silent = InstructionWrapper(make_env(), DesiredGoalSampler(), num_goals=1)
    silent.reset(seed=0)
    with pytest.raises(ValueError, match="pass success_reward"):
        silent.step(0)


@pytest.mark.parametrize(
    ("space", "mask"),
    [
        (spaces.Discrete(4), -1.0),
        (spaces.Discrete(4, start=-2), -3.0),
        (spaces.MultiBinary(3), -1.0),
        (spaces.MultiDiscrete([3, 3], start=[0, -1]), -2.0),
        (spaces.Box(-np.inf, np.inf, (2,)), -1.0),
        (spaces.Box(-2.5, 2.5, (2,)), -4.0),
    ],
)
def test_the_default_mask_lies_below_the_goal_range_when_minus_one_could_be_a_goal(space, mask):
    assert goal_space_mask_value(space) == mask


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


class SpaceGoalEnv(gym.Env):
    """A GoalEnv skeleton with given goal spaces, for construction-time checks."""

    def __init__(self, desired: spaces.Space, achieved: spaces.Space | None = None) -> None:
        self.observation_space = spaces.Dict({"observation": spaces.Box(0, 1, (2,)),
                                              "achieved_goal": desired if achieved is None else achieved,
                                              "desired_goal": desired})
        self.action_space = spaces.Discrete(2)

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> float:
        return 0.0


@pytest.mark.parametrize(
    ("desired", "shown"),
    [
        (spaces.MultiBinary([2, 3]), r"MultiBinary\(\(2, 3\)\) of shape \(2, 3\)"),
        (spaces.MultiDiscrete([[2, 3], [4, 5]]), r"MultiDiscrete\(\[\[2 3\] \[4 5\]\]\) of shape \(2, 2\)"),
        (spaces.Box(0, 1, (2, 3)), r"Box\(0\.0, 1\.0, \(2, 3\), float32\) of shape \(2, 3\)"),
        (spaces.Tuple([spaces.Discrete(2)]), r"Tuple\(Discrete\(2\)\)$"),
    ],
    ids=["multibinary-2d", "multidiscrete-2d", "box-2d", "tuple"],
)
def test_multi_dimensional_or_other_goal_spaces_are_rejected_naming_what_is_accepted(desired, shown):
    env = SpaceGoalEnv(desired, achieved=spaces.MultiBinary(6))
    accepted = r"a 1-D Box \(goal_dim,\), a 1-D MultiBinary\(n\), a 1-D MultiDiscrete\(\[n_1, \.\.\., n_d\]\) or a " \
               r"Discrete\(n\)"
    with pytest.raises(ValueError, match=rf"env\.observation_space\['desired_goal'\] must be {accepted}; got {shown}"):
        InstructionWrapper(env, DesiredGoalSampler(), num_goals=1)


def test_integer_goals_need_an_integer_mask_outside_their_range_and_integer_goals():
    bits = SpaceGoalEnv(spaces.MultiBinary(3))
    with pytest.raises(ValueError, match="both hold integers or both floats"):
        InstructionWrapper(SpaceGoalEnv(spaces.MultiBinary(3), achieved=spaces.Box(0, 1, (3,))), DesiredGoalSampler(),
                           num_goals=1)
    with pytest.raises(ValueError, match="inside the desired_goal bounds"):
        InstructionWrapper(bits, DesiredGoalSampler(), num_goals=1, mask_value=0)
    with pytest.raises(ValueError, match=r"mask_value must be an integer for integer goals .*MultiBinary\(3\)"):
        InstructionWrapper(bits, DesiredGoalSampler(), num_goals=1, mask_value=-0.5)
    with pytest.raises(ValueError, match="fit no common integer dtype"):
        InstructionWrapper(DialsGoalEnv(dtype=np.uint64), DesiredGoalSampler(), num_goals=1)
    # a positive mask above the range is fine; int8 goals then need int16 to hold 200
    wide = InstructionWrapper(bits, DesiredGoalSampler(), num_goals=1, mask_value=200)
    assert wide.observation_space["goals"] == int_box(0, 200, (1, 3), np.int16)

    class HalfSampler(DesiredGoalSampler):
        def sample(self, env: InstructionWrapper, rng: np.random.Generator, k: int) -> np.ndarray:
            return super().sample(env, rng, k) + 0.5

    with pytest.raises(ValueError, match="not integers of the goal dtype int64"):
        InstructionWrapper(DialsGoalEnv(), HalfSampler(), num_goals=1).reset(seed=0)
