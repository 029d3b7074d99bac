"""A HIR buffer filled by uniform random actions in a small vectorized env, for tests of what it serves."""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.buffers import HindsightInstructionReplayBuffer


def filled_by_random_actions(env_fn: Callable[[], gym.Env], steps: int, n_envs: int = 2,
                             seed: int = 0) -> HindsightInstructionReplayBuffer:
    """``steps`` vector steps of seeded random Discrete actions, stored with strategy ``"all"``."""
    venv = make_vec_env(env_fn, n_envs=n_envs, seed=seed, vec_env_cls=DummyVecEnv)
    buffer = HindsightInstructionReplayBuffer(2_000, venv.observation_space, venv.action_space, n_envs=n_envs,
                                              hindsight_goals="all", seed=seed)
    obs = venv.reset()
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        actions = rng.integers(venv.action_space.n, size=n_envs)
        next_obs, rewards, dones, infos = venv.step(actions)
        buffer.add(obs, next_obs, actions[:, None], rewards, dones, infos)
        obs = next_obs
    return buffer
