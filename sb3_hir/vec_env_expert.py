"""An expert that answers from the sub-envs' state: an SB3 policy bound to one VecEnv.

Experts that see what the learner cannot (MazeRunner's maze, BabyAI's full grid) do not map an observation to an
action: they ask each sub-env. Being an SB3 :class:`~stable_baselines3.common.policies.BasePolicy`, such an expert
is accepted wherever imitation expects one (``rollout``, ``generate_trajectories``, DAgger's ``expert_policy``).
Subclasses say how the sub-envs are asked (:meth:`VecEnvExpert.read_actions`); the batch checks of ``predict``
are shared.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import torch as th
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.utils import is_vectorized_observation
from stable_baselines3.common.vec_env import VecEnv

__all__ = ["VecEnvExpert"]


class VecEnvExpert(BasePolicy):
    """SB3 policy whose actions are read from its bound VecEnv's sub-envs, not computed from the observation.

    ``predict`` must be given the venv's *current* observation, as any policy rolling out in that venv is: the
    answer is the sub-envs' state's, the observation only fixes the batch size.

    :param venv: the VecEnv the expert acts in (or a wrapper of it, such as the
        :class:`~sb3_hir.dagger.DAggerCollector`).
    """

    def __init__(self, venv: VecEnv) -> None:
        if not isinstance(venv, VecEnv):
            raise ValueError(
                f"venv must be a stable_baselines3 VecEnv (e.g. DummyVecEnv([...])), got {type(venv).__name__}"
            )
        super().__init__(venv.observation_space, venv.action_space)
        self.venv = venv

    def read_actions(self) -> Any:
        """One action per sub-env, as the sub-envs give them (``env_method``, ``get_attr``): what a subclass
        implements."""
        raise NotImplementedError

    def expert_actions(self) -> np.ndarray:
        """The action of every sub-env, batched: ``(n_envs,)`` for Discrete, ``(n_envs, *shape)`` for Box."""
        actions = np.asarray(self.read_actions())
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
        """SB3 ``predict``: the sub-envs' actions (always deterministic); ``state`` is passed through."""
        # SB3 types the observation as a Box's, but reads a Dict space's dict too
        vectorized = is_vectorized_observation(cast(Any, observation), self.observation_space)
        if vectorized:
            first = next(iter(observation.values())) if isinstance(observation, dict) else observation
            if len(first) != self.venv.num_envs:
                raise ValueError(
                    f"observation must hold one row per sub-env of the bound venv ({self.venv.num_envs}), got "
                    f"{len(first)}"
                )
        elif self.venv.num_envs != 1:
            raise ValueError(
                f"an unbatched observation is only accepted when the bound venv has 1 sub-env, it has "
                f"{self.venv.num_envs}"
            )
        actions = self.expert_actions()
        return (actions if vectorized else actions[0]), state
