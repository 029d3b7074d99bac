"""ActionEffectWrapper: each action's last effect this episode, goal-free, served unchanged by the buffer."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from buffer_fill import filled_by_random_actions
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env

from sb3_hir import ActionEffectWrapper
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.envs.mazerunner import ACTION_DIRECTIONS
from sb3_hir.extractors import HistoryExtractor
from sb3_hir.history import HistoryWrapper
from sb3_hir.testing import check_instruction_env


def maze(time_limit: int = 40, randomized_actions: bool = True, **kwargs) -> ActionEffectWrapper:
    env = MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=time_limit, randomized_actions=randomized_actions)
    return ActionEffectWrapper(env, **kwargs)


def test_table_holds_each_actions_last_change_and_restarts_at_reset():
    env = maze()
    assert env.observation_space["effects"].shape == (5, 8)  # 7 obs columns + taken
    rng = np.random.default_rng(0)
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        np.testing.assert_array_equal(obs["effects"], np.zeros((5, 8), np.float32))
        expected = np.zeros((5, 8), np.float32)
        done = False
        while not done:
            action = int(rng.integers(5))
            before = obs["obs"]
            obs, _, terminated, truncated, _ = env.step(action)
            expected[action, :7] = obs["obs"] - before
            expected[action, 7] = 1.0
            np.testing.assert_array_equal(obs["effects"], expected)
            assert obs in env.observation_space
            done = terminated or truncated


def test_table_reveals_the_episodes_action_permutation():
    """Every action that moved the agent shows the direction the episode's permutation gives it."""
    env = maze(time_limit=60)
    checked, permuted = 0, 0
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        permutation = env.unwrapped.action_permutation
        permuted += not np.array_equal(permutation, np.arange(5))
        for _ in range(60):
            obs, _, terminated, truncated, _ = env.step(int(rng.integers(5)))
            if terminated or truncated:
                break
        table = obs["effects"]
        for action in range(5):
            if table[action, 7] == 0.0:
                continue
            moved = np.rint(table[action, :2] * env.unwrapped.maze_dim).astype(int)  # (d_row, d_col)
            if moved.any():  # a blocked move records no change
                np.testing.assert_array_equal(moved, ACTION_DIRECTIONS[permutation[action]])
                checked += 1
    assert checked >= 10 and permuted >= 4


def test_table_does_not_depend_on_the_instruction_and_the_buffer_keeps_it():
    check_instruction_env(HistoryWrapper(maze(time_limit=25), length=3), n_episodes=3)
    buffer = filled_by_random_actions(lambda: maze(time_limit=12), steps=150)
    samples = buffer.sample(256)
    info = buffer.last_sample_info
    assert info.relabeled.any()
    np.testing.assert_array_equal(samples.observations["effects"].numpy(),
                                  buffer.observations["effects"][info.rows, info.env_indices])
    np.testing.assert_array_equal(samples.next_observations["effects"].numpy(),
                                  buffer.next_observations["effects"][info.rows, info.env_indices])


def test_unchanged_dqn_with_the_table_in_its_extractor_trains_on_it():
    venv = make_vec_env(lambda: HistoryWrapper(maze(time_limit=15), length=4), n_envs=2, seed=0)
    model = DQN("MultiInputPolicy", venv, buffer_size=2_000, learning_starts=100, batch_size=32,
                replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(strategy="some"),
                policy_kwargs=dict(features_extractor_class=HistoryExtractor, net_arch=[32],
                                   features_extractor_kwargs=dict(keys=["obs", "goals", "effects"], hidden_size=16)),
                seed=0)
    extractor = model.policy.q_net.features_extractor
    obs = venv.reset()
    tensors = {k: th.as_tensor(v) for k, v in obs.items()}
    changed = {**tensors, "effects": tensors["effects"] + 1.0}
    with th.no_grad():
        assert not th.equal(extractor(tensors), extractor(changed))  # the policy sees the table
    model.learn(300)
    action, _ = model.predict(venv.reset(), deterministic=True)
    assert action.shape == (2,)


@pytest.mark.parametrize("kwargs,match", [
    (dict(keys=("goals",)), "must not include the instruction key"),
    (dict(keys=("nope",)), r"keys \['nope'\] are not in the observation space"),
    (dict(keys=()), "keys must be one or more"),
    (dict(key="obs"), "key must be a str not already in the observation space"),
])
def test_wrapper_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        maze(**kwargs)


def test_wrapper_needs_discrete_actions_box_keys_and_a_reset():
    with pytest.raises(ValueError, match=r"env\.action_space must be Discrete"):
        ActionEffectWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2, continuous=True))
    with pytest.raises(ValueError, match="Dict observation space"):
        ActionEffectWrapper(gym.make("CartPole-v1"))

    class DiscreteKey(gym.ObservationWrapper):
        def __init__(self, env: gym.Env) -> None:
            super().__init__(env)
            self.observation_space = gym.spaces.Dict({**env.observation_space.spaces, "room": gym.spaces.Discrete(3)})

        def observation(self, obs):
            return {**obs, "room": 0}

    with pytest.raises(ValueError, match="keys must name Box observation keys; 'room'"):
        ActionEffectWrapper(DiscreteKey(MazeRunnerEnv(maze_dim=7, num_goals=2)), keys=("obs", "room"))
    with pytest.raises(RuntimeError, match="before reset"):
        maze().step(0)
