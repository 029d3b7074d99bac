"""Shortest-path expert for MazeRunner, as an SB3 policy bound to a VecEnv.

The optimal action depends on the maze and the episode's action permutation, which the observation does not
contain, so the expert asks each sub-env through ``env_method`` (which also reaches SubprocVecEnv workers)
instead of reading the observation. Being an SB3 :class:`~stable_baselines3.common.policies.BasePolicy`, it is
accepted wherever imitation expects an expert: ``rollout.rollout``/``generate_trajectories`` (via ``predict``)
and DAgger's ``expert_policy`` (which also compares its spaces with the venv's).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import torch as th
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.utils import is_vectorized_observation
from stable_baselines3.common.vec_env import VecEnv

__all__ = ["ShortestPathExpert"]


class ShortestPathExpert(BasePolicy):
    """Optimal actions toward each sub-env's active goal (BFS, honouring the action permutation).

    MazeRunner's optimal teacher for DAgger and BC: it sees the maze the learner cannot, so imitation has a perfect
    expert without training one.

    ``predict`` must be given the venv's *current* observation (as any policy rolling out in that venv is): the
    answer is computed from the sub-envs' state, the observation only fixes the batch size.

    :param venv: the VecEnv the expert acts in; every sub-env must provide ``method_name``.
    :param method_name: sub-env method returning the expert action (MazeRunner's ``expert_action``).
    """

    def __init__(self, venv: VecEnv, method_name: str = "expert_action") -> None:
        if not isinstance(venv, VecEnv):
            raise ValueError(
                f"venv must be a stable_baselines3 VecEnv (e.g. DummyVecEnv([...])), got {type(venv).__name__}"
            )
        if not isinstance(method_name, str) or not method_name:
            raise ValueError(f"method_name must be a non-empty str, got {method_name!r}")
        super().__init__(venv.observation_space, venv.action_space)
        self.venv = venv
        self.method_name = method_name

    def expert_actions(self) -> np.ndarray:
        """Expert action of every sub-env, batched: ``(n_envs,)`` for Discrete, ``(n_envs, *shape)`` for Box."""
        actions = np.asarray(self.venv.env_method(self.method_name))
        if self.action_space.dtype is not None:
            actions = actions.astype(self.action_space.dtype, copy=False)
        return actions

    def _predict(self, observation: Any, deterministic: bool = False) -> th.Tensor:
        return th.as_tensor(self.expert_actions())

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """SB3 ``predict``: the sub-envs' expert actions (always deterministic); ``state`` is passed through."""
        vectorized = is_vectorized_observation(cast(Any, observation), self.observation_space)  # SB3 types it
        # as a Box's, but reads a Dict space's dict too
        if vectorized:
            first = next(iter(observation.values())) if isinstance(observation, dict) else observation
            batch = len(first)
            if batch != self.venv.num_envs:
                raise ValueError(
                    f"observation must hold one row per sub-env of the bound venv ({self.venv.num_envs}), got {batch}"
                )
        elif self.venv.num_envs != 1:
            raise ValueError(
                f"an unbatched observation is only accepted when the bound venv has 1 sub-env, "
                f"it has {self.venv.num_envs}"
            )
        actions = self.expert_actions()
        return (actions if vectorized else actions[0]), state
