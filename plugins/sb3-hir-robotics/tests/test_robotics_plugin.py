"""sb3-hir-robotics against its contracts, on real gymnasium-robotics envs (PointMaze, FetchReach)."""

from __future__ import annotations

from collections import deque
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from sb3_hir_robotics.goal_specs import DistanceThresholdGoalSpec
from sb3_hir_robotics.goalenv import env_reward_scale
from sb3_hir_robotics.maze import DEFAULT_MASK_VALUE, MAZE_DISTANCE_THRESHOLD, MazeGoalSampler, goal_cells
from stable_baselines3 import SAC
from stable_baselines3.common.env_util import make_vec_env

from sb3_hir import plugins
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.episodes import Episode
from sb3_hir.extractors import KeySelectExtractor
from sb3_hir.goals import ExactGoalSpec
from sb3_hir.instruction import InstructionWrapper
from sb3_hir.relabel import HindsightInstructionRelabeler
from sb3_hir.testing import check_instruction_env


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny networks on shared cores: one thread avoids oversubscription."""
    before = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(before)


@pytest.fixture(autouse=True)
def _fresh_plugin_manager():
    plugins.reset()
    yield
    plugins.reset()


def active_goal(env: InstructionWrapper, obs: dict[str, np.ndarray]) -> np.ndarray:
    goals = obs["goals"]
    return goals[~np.all(goals == env.mask_value, axis=-1)][0]


def waypoint_action(env: InstructionWrapper, obs: dict[str, np.ndarray]) -> np.ndarray:
    """Steer along the BFS cell path to the active goal (a PD controller on the point's force)."""
    maze = cast(Any, env.unwrapped).maze  # gymnasium-robotics ships no types
    goal_xy = active_goal(env, obs)
    pos, vel = obs["obs"][:2], obs["obs"][2:4]
    start, goal = tuple(maze.cell_xy_to_rowcol(pos)), tuple(maze.cell_xy_to_rowcol(goal_xy))
    prev: dict[tuple[int, int], tuple[int, int] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            break
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nxt = (cell[0] + dr, cell[1] + dc)
            if nxt not in prev and maze.maze_map[nxt[0]][nxt[1]] != 1:
                prev[nxt] = cell
                queue.append(nxt)
    path = [goal]
    while (step := prev.get(path[-1])) is not None:
        path.append(step)
    target = goal_xy if len(path) <= 2 else maze.cell_rowcol_to_xy(np.array(path[-2]))
    return np.clip(10.0 * (target - pos) - 1.0 * vel, -1.0, 1.0)


def run_episode(env: InstructionWrapper, seed: int) -> tuple[Episode, list[dict]]:
    obs, _ = env.reset(seed=seed)
    record = {key: [obs[key]] for key in obs}
    actions, rewards, terminated, truncated, infos = [], [], [], [], []
    done = False
    while not done:
        action = waypoint_action(env, obs)
        obs, reward, term, trunc, info = env.step(action)
        for key in obs:
            record[key].append(obs[key])
        actions.append(action)
        rewards.append(reward)
        terminated.append(term)
        truncated.append(trunc)
        infos.append(info)
        done = term or trunc
    episode = Episode(
        observations={key: np.stack(value) for key, value in record.items()},
        actions=np.stack(actions),
        rewards=np.asarray(rewards, dtype=np.float32),
        terminated=np.asarray(terminated),
        truncated=np.asarray(truncated),
    )
    return episode, infos


# -- discovery ----------------------------------------------------------------------------------------------------
def test_components_are_discovered_through_the_entry_point():
    envs = plugins.available("env")
    assert envs["pointmaze-instruction"].plugin == "robotics"
    assert envs["goalenv"].plugin == "robotics"
    assert envs["goalenv"].distribution == "sb3-hir-robotics"
    specs = plugins.available("goal_spec")
    assert specs["distance-threshold"].plugin == "robotics"
    assert specs["tolerance"].plugin == "builtin"  # not shadowed: the name differs
    assert not [p for p in plugins.plugins() if p.broken]


# -- PointMaze instructions ---------------------------------------------------------------------------------------
def test_pointmaze_instruction_follows_the_contract_and_the_mazes_own_success_test():
    env = plugins.create("env", "pointmaze-instruction", num_goals=3, max_episode_steps=400)
    assert set(env.observation_space.spaces) == {"obs", "goals", "achieved"}
    assert env.observation_space["goals"].shape == (3, 2)
    assert env.mask_value == DEFAULT_MASK_VALUE
    for seed in (0, 1):
        episode, infos = run_episode(env, seed)
        goals = episode.observations["goals"][0]
        maze = cast(Any, env.unwrapped).maze  # gymnasium-robotics ships no types
        cells = np.array([maze.cell_xy_to_rowcol(g) for g in goals])
        start_cell = maze.cell_xy_to_rowcol(episode.observations["achieved"][0, 0])
        assert len(np.unique(cells, axis=0)) == 3  # distinct free cells ...
        assert not np.any(np.all(cells == start_cell, axis=-1))  # ... none the start cell
        assert all(maze.maze_map[r][c] != 1 for r, c in cells)
        # the controller completes the instruction: one reward per goal, terminated, success
        assert episode.rewards.sum() == 3.0 and episode.terminated[-1] and infos[-1]["is_success"]
        # a reward exactly where the env's own test (distance to the active goal <= 0.45) first holds
        achieved = episode.observations["achieved"][1:, 0]
        steps = np.flatnonzero(episode.rewards)
        for j, t in enumerate(steps):
            assert np.linalg.norm(achieved[t] - goals[j]) <= MAZE_DISTANCE_THRESHOLD
            begin = 0 if j == 0 else steps[j - 1] + 1
            assert np.all(np.linalg.norm(achieved[begin:t] - goals[j], axis=-1) > MAZE_DISTANCE_THRESHOLD)
            assert infos[t]["goals_reached"] == j + 1
        assert np.all(episode.observations["goals"][-1] == DEFAULT_MASK_VALUE)


def test_pointmaze_installs_the_active_goal_in_the_env_and_is_seeded():
    env = plugins.create("env", "pointmaze-instruction", num_goals=2)
    obs, _ = env.reset(seed=4)
    np.testing.assert_array_equal(env.unwrapped.goal, obs["goals"][0])
    again, _ = plugins.create("env", "pointmaze-instruction", num_goals=2).reset(seed=4)
    np.testing.assert_array_equal(obs["goals"], again["goals"])
    other, _ = env.reset(seed=5)
    assert not np.array_equal(other["goals"], obs["goals"])


def test_pointmaze_passes_counterfactual_replay_under_hindsight_instructions():
    """InstructionWrapper over PointMaze takes an instruction at reset (MazeGoalSampler installs any goal), declares
    its distance-threshold spec, and check_instruction_env replays hindsight instructions against the env itself."""
    env = plugins.create("env", "pointmaze-instruction", num_goals=2, max_episode_steps=120)
    assert env.accepts_reset_goals and isinstance(env.goal_spec, DistanceThresholdGoalSpec)
    given = []
    reset = env.reset

    def counting_reset(**kwargs):
        if (kwargs.get("options") or {}).get("goals") is not None:
            given.append(kwargs["options"]["goals"])
        return reset(**kwargs)

    env.reset = counting_reset
    check_instruction_env(env, n_episodes=2, counterfactual=2)
    assert len(given) == 2 * 3  # two relabeler draws and the reversed instruction per episode
    # An early stop at the first of two goals, wrapped around the same env, is caught under those instructions.

    class EarlyStop(gym.Wrapper):
        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            return obs, reward, terminated or reward > 0, truncated, info

    with pytest.raises(AssertionError, match=r"under the instruction .*: env terminated=True != replayed "
                                             r"terminated=False"):
        check_instruction_env(EarlyStop(plugins.create("env", "pointmaze-instruction", num_goals=2,
                                                       max_episode_steps=120)), n_episodes=2)


def test_goalenv_adapter_cannot_take_an_instruction_at_reset():
    env = plugins.create("env", "goalenv", env_id="PointMaze_UMaze-v3", max_episode_steps=50)
    assert not env.accepts_reset_goals
    with pytest.raises(ValueError, match=r"options\['goals'\] needs a goal sampler that installs any goal"):
        env.reset(seed=0, options={"goals": np.zeros((1, 2))})


def test_goal_spec_reads_the_threshold_and_mask_and_agrees_with_the_env():
    env = plugins.create("env", "pointmaze-instruction", num_goals=3, max_episode_steps=400)
    spec = plugins.create("goal_spec", "distance-threshold", env=env)
    assert isinstance(spec, DistanceThresholdGoalSpec)
    assert spec.tolerance == MAZE_DISTANCE_THRESHOLD
    assert spec.mask_value == env.mask_value and spec.goal_reward == env.goal_reward
    relabeler = HindsightInstructionRelabeler(3, strategy="all", goal_spec=spec)
    episode, _ = run_episode(env, seed=2)
    replayed = relabeler.replay(episode, episode.observations["goals"][0])
    np.testing.assert_array_equal(replayed.rewards, episode.rewards)
    np.testing.assert_array_equal(replayed.terminated, episode.terminated)
    np.testing.assert_array_equal(replayed.observations["goals"], episode.observations["goals"])
    relabeled = relabeler.relabel(episode, np.random.default_rng(0))
    assert relabeled.rewards.sum() == 3.0


def test_sac_with_the_hindsight_buffer_runs_on_pointmaze_instructions():
    venv = make_vec_env(lambda: plugins.create("env", "pointmaze-instruction", num_goals=2, max_episode_steps=40),
                        n_envs=1, seed=0)
    spec = plugins.create("goal_spec", "distance-threshold", env=venv.envs[0])
    model = SAC(
        "MultiInputPolicy",
        venv,
        learning_starts=60,
        batch_size=32,
        buffer_size=1000,
        replay_buffer_class=HindsightInstructionReplayBuffer,
        replay_buffer_kwargs=dict(goal_spec=spec, hindsight_goals="some"),
        policy_kwargs=dict(net_arch=[32], features_extractor_class=KeySelectExtractor,
                           features_extractor_kwargs=dict(keys=["obs", "goals"])),
        seed=0,
        device="cpu",
    )
    model.learn(total_timesteps=120)
    buffer = model.replay_buffer
    assert isinstance(buffer, HindsightInstructionReplayBuffer)
    assert buffer.goal_spec is spec
    assert buffer.served_relabeled_share > 0  # finished episodes were served relabeled
    sample = buffer.sample(32)
    goals = sample.observations["goals"].numpy()
    masked = np.all(goals == spec.mask_value, axis=-1)
    assert np.all(np.abs(goals[~masked]) <= 3.0)  # real goals inside the U-maze, masks exactly the mask value


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(num_goals=7), r"num_goals=7 distinct goals cannot be drawn: this maze has only 6"),
        (dict(num_goals=0), "num_goals must be an int >= 1"),
        (dict(num_goals=2, reset_target=True), "reset_target must be False"),
        (dict(num_goals=2, mask_value=-1.0), "lies inside the maze"),
        (dict(maze_id="CartPole-v1"), "must be a gymnasium-robotics maze env"),
    ],
)
def test_pointmaze_bad_input_is_rejected_before_training(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plugins.create("env", "pointmaze-instruction", **kwargs)


def test_goal_cells_are_the_free_cells_of_the_u_maze():
    env = gym.make("PointMaze_UMaze-v3")
    cells = goal_cells(env.unwrapped.maze)
    assert cells.tolist() == [[1, 1], [1, 2], [1, 3], [2, 3], [3, 1], [3, 2], [3, 3]]
    assert MazeGoalSampler().max_goals(env) == 6


# -- any single-goal GoalEnv --------------------------------------------------------------------------------------
def _newest(env_name: str) -> str:
    """The newest registered version of a gymnasium-robotics id (v2 on 1.2, v4 on 1.4, which deprecates v2)."""
    versions = [spec.version for spec in gym.registry.values() if spec.name == env_name and spec.version is not None]
    return f"{env_name}-v{max(versions)}"


def test_goalenv_adapter_keeps_the_envs_own_goal_and_success_on_fetch():
    env = plugins.create("env", "goalenv", env_id=_newest("FetchReach"), max_episode_steps=50)
    obs, _ = env.reset(seed=0)
    assert obs["goals"].shape == (1, 3)
    np.testing.assert_array_equal(obs["goals"][0], env.env_observation["desired_goal"])
    assert env.mask_value == -1.0
    spec = plugins.create("goal_spec", "distance-threshold", env=env)
    assert spec.tolerance == env.unwrapped.distance_threshold == 0.05
    # drive the gripper to the goal: success is the env's own info["is_success"]
    for _ in range(50):
        delta = obs["goals"][0] - obs["achieved"][0]
        obs, reward, terminated, _, info = env.step(np.append(np.clip(delta * 20, -1, 1), 0.0))
        assert reward == info["env_reward"] == float(info["env_is_success"]) - 1.0  # Fetch's own -1/0 scale
        if terminated:
            break
    assert terminated and info["is_success"] and info["goals_reached"] == 1
    assert (env.step_reward, env.goal_reward) == (-1.0, 1.0) == env_reward_scale(env.env)
    assert np.all(obs["goals"] == -1.0)


def test_goalenv_on_a_maze_uses_a_mask_outside_it():
    env = plugins.create("env", "goalenv", env_id="PointMaze_UMaze-v3")
    assert abs(env.mask_value) > 2.5
    obs, _ = env.reset(seed=1)
    np.testing.assert_array_equal(obs["goals"][0], env.unwrapped.goal)


@pytest.fixture
def bit_flipping_id():
    """SB3's BitFlippingEnv (MultiBinary or Discrete goals) under a gymnasium id for one test, unregistered after."""
    env_id = "SB3HirTestBitFlipping-v0"
    gym.register(env_id, entry_point="stable_baselines3.common.envs:BitFlippingEnv")
    yield env_id
    del gym.envs.registration.registry[env_id]


@pytest.mark.parametrize(
    ("discrete_obs_space", "goals_shape", "dtype"), [(False, (1, 6), np.int8), (True, (1, 1), np.int64)],
    ids=["multibinary", "discrete"],
)
def test_goalenv_adapter_takes_discrete_goal_spaces(bit_flipping_id, discrete_obs_space, goals_shape, dtype):
    env = plugins.create("env", "goalenv", env_id=bit_flipping_id, n_bits=6, discrete_obs_space=discrete_obs_space,
                         max_episode_steps=6)
    goals = env.observation_space["goals"]
    assert goals.shape == goals_shape and goals.dtype == dtype and goals.low.min() == -1
    assert env.mask_value == -1 and isinstance(env.goal_spec, ExactGoalSpec) and env.goal_spec.mask_value == -1
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["goals"].reshape(-1), np.reshape(env.env_observation["desired_goal"], -1))
    check_instruction_env(env, relabeler="hindsight-instruction")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(env_id="CartPole-v1"), "Dict observation space"),
        (dict(env_id="PointMaze_UMaze-v3", num_goals=2), "num_goals must be 1"),
    ],
)
def test_goalenv_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plugins.create("env", "goalenv", **kwargs)


def test_distance_threshold_goal_spec_bad_input():
    # With its defaults it uses the mazes' radius, so check_plugin can build it.
    assert plugins.create("goal_spec", "distance-threshold").tolerance == 0.45
    env = plugins.create("env", "pointmaze-instruction", num_goals=1)
    with pytest.raises(ValueError, match=r"disagrees with the env's own 0\.45"):
        plugins.create("goal_spec", "distance-threshold", env=env, distance_threshold=0.3)
    with pytest.raises(ValueError, match="mask_value=-1 disagrees"):
        plugins.create("goal_spec", "distance-threshold", env=env, mask_value=-1)
    with pytest.raises(ValueError, match="no distance_threshold"):
        plugins.create("goal_spec", "distance-threshold", env=gym.make("CartPole-v1"))
    assert plugins.create("goal_spec", "distance-threshold", distance_threshold=0.2).tolerance == 0.2


class _BoundedReach(gym.Env):
    """A minimal bounded GoalEnv: the goal range [-1, 1] contains -1, so the default mask must move out."""

    metadata = {"render_modes": []}

    def __init__(self) -> None:
        box = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
        self.observation_space = gym.spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)

    def compute_reward(self, achieved_goal, desired_goal, info):
        return -(np.linalg.norm(np.asarray(achieved_goal) - desired_goal, axis=-1) > 0.1).astype(float)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.goal = self.np_random.uniform(-1, 1, size=(2, 2))
        return {"observation": self.pos, "achieved_goal": self.pos, "desired_goal": self.goal}, {}

    def step(self, action):
        self.pos = np.clip(self.pos + 0.1 * np.asarray(action), -1, 1)
        success = bool(np.linalg.norm(self.pos - self.goal) <= 0.1)
        obs = {"observation": self.pos, "achieved_goal": self.pos, "desired_goal": self.goal}
        return obs, float(success) - 1.0, False, False, {"is_success": success}


def test_goalenv_moves_the_default_mask_below_finite_goal_bounds():
    if "sb3_hir_robotics_test/BoundedReach-v0" not in gym.registry:
        gym.register("sb3_hir_robotics_test/BoundedReach-v0", entry_point=_BoundedReach, max_episode_steps=20)
    env = plugins.create("env", "goalenv", env_id="sb3_hir_robotics_test/BoundedReach-v0")
    assert env.mask_value == -2.0
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    spec = plugins.create("goal_spec", "distance-threshold", env=env, distance_threshold=0.1)
    assert spec.mask_value == -2.0
