"""The held-out evaluation the MazeRunner learning benchmarks share: goals reached and success of a policy.

Why not :func:`sb3_hir.callbacks.evaluate_instruction_policy`: these benchmarks' published tables were measured
with this episode split (``ceil(n / n_envs)`` episodes from each sub-env, in the order they end), and one copy keeps
them reproducible.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv


def goals_and_success(policy: Any, venv: VecEnv, n_episodes: int) -> tuple[float, float]:
    """Mean goals reached and success rate of ``policy``'s deterministic actions over ``n_episodes`` of ``venv``.

    Each sub-env contributes its first ``ceil(n_episodes / n_envs)`` episodes; ``venv`` is closed afterwards.
    """
    n_envs = venv.num_envs
    per_env = -(-n_episodes // n_envs)
    obs = venv.reset()
    done_count = np.zeros(n_envs, dtype=int)
    goals, successes = [], []
    while (done_count < per_env).any():
        actions, _ = policy.predict(obs, deterministic=True)
        obs, _, dones, infos = venv.step(actions)
        for i in np.flatnonzero(dones):
            if done_count[i] < per_env:
                goals.append(infos[i]["goals_reached"])
                successes.append(infos[i]["is_success"])
            done_count[i] += 1
    venv.close()
    return float(np.mean(goals)), float(np.mean(successes))
