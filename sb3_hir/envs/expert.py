"""Shortest-path expert for MazeRunner, as an SB3 policy bound to a VecEnv.

The optimal action depends on the maze and the episode's action permutation, which the observation does not
contain, so the expert asks each sub-env through ``env_method`` (which also reaches SubprocVecEnv workers)
instead of reading the observation. Being an SB3 :class:`~stable_baselines3.common.policies.BasePolicy`, it is
accepted wherever imitation expects an expert: ``rollout.rollout``/``generate_trajectories`` (via ``predict``)
and DAgger's ``expert_policy`` (which also compares its spaces with the venv's).
"""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.vec_env import VecEnv

from sb3_hir.vec_env_expert import VecEnvExpert

__all__ = ["ShortestPathExpert"]


class ShortestPathExpert(VecEnvExpert):
    """Optimal actions toward each sub-env's active goal (BFS, honouring the action permutation).

    MazeRunner's optimal teacher for DAgger and BC: it sees the maze the learner cannot, so imitation has a perfect
    expert without training one.

    ``predict`` must be given the venv's *current* observation (as any policy rolling out in that venv is): the
    answer is computed from the sub-envs' state, the observation only fixes the batch size.

    :param venv: the VecEnv the expert acts in; every sub-env must provide ``method_name``.
    :param method_name: sub-env method returning the expert action (MazeRunner's ``expert_action``).
    """

    def __init__(self, venv: VecEnv, method_name: str = "expert_action") -> None:
        if not isinstance(method_name, str) or not method_name:
            raise ValueError(f"method_name must be a non-empty str, got {method_name!r}")
        super().__init__(venv)
        self.method_name = method_name

    def read_actions(self) -> Any:
        return self.venv.env_method(self.method_name)
