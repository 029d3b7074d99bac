"""Any single-goal GoalEnv as a one-goal instruction (k = 1): env plugin ``"goalenv"``.

The instruction is the env's own ``desired_goal`` drawn at reset and success is its own test, so a GoalEnv
(Fetch, Hand, PointMaze, ...) trains with :class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer` where one
would use SB3's ``HerReplayBuffer``. Goals may be a 1-D Box, MultiBinary, MultiDiscrete or a Discrete (see
:mod:`sb3_hir.instruction`); integer goals come with the matching ``"exact"`` goal spec as ``env.goal_spec``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import gymnasium_robotics  # noqa: F401  (registers the gymnasium-robotics ids)

from sb3_hir.instruction import DesiredGoalSampler, InstructionWrapper, goal_space_mask_value
from sb3_hir_robotics.goal_specs import declare_goal_spec
from sb3_hir_robotics.maze import outside_mask_value

__all__ = ["default_mask_value", "make_goal_env"]


def default_mask_value(env: gym.Env) -> float:
    """-1, unless that could be a real goal: outside the maze for maze envs, else below the goal range when it
    reaches -1 (:func:`sb3_hir.instruction.goal_space_mask_value`, for Box and discrete goal spaces alike)."""
    maze = getattr(env.unwrapped, "maze", None)
    if maze is not None:
        return outside_mask_value(maze)
    space = env.observation_space
    if isinstance(space, gym.spaces.Dict) and "desired_goal" in space.spaces:
        try:
            return goal_space_mask_value(space["desired_goal"])
        except ValueError:
            pass  # not a goal space: InstructionWrapper rejects it, naming what it accepts
    return -1.0


def make_goal_env(
    env_id: str = "PointMaze_UMaze-v3",
    num_goals: int = 1,
    mask_value: float | None = None,
    goal_reward: float = 1.0,
    success_reward: float | None = None,
    **make_kwargs: Any,
) -> InstructionWrapper:
    """``gymnasium.make(env_id, **make_kwargs)`` as a one-goal instruction env.

    :param env_id: gymnasium id of any GoalEnv; its goals may be a 1-D Box, MultiBinary, MultiDiscrete or Discrete.
    :param num_goals: must be 1 (the env has one goal); accepted so that callers passing k get a clear error.
    :param mask_value: mask of the reached goal; None uses :func:`default_mask_value` (-1, or a value outside the
        goal range when -1 could be a real goal, e.g. a maze cell centre).
    :param goal_reward: reward for reaching the goal.
    :param success_reward: ``compute_reward`` value of success (0.0 for sparse ``-1 / 0`` rewards), only for envs
        whose info reports neither ``is_success`` nor ``success``.
    """
    if isinstance(num_goals, bool) or not isinstance(num_goals, int) or num_goals != 1:
        raise ValueError(
            f"num_goals must be 1 for the single-goal 'goalenv' adapter; got {num_goals!r} (use "
            "'pointmaze-instruction' or an env plugin with a k-goal sampler)"
        )
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"env_id must be a gymnasium id of a GoalEnv; got {env_id!r}")
    env = gym.make(env_id, **make_kwargs)
    try:
        if mask_value is None:
            mask_value = default_mask_value(env)
        sampler = DesiredGoalSampler(success_reward=success_reward, mask_value=mask_value)
        return declare_goal_spec(InstructionWrapper(env, sampler, num_goals=1, goal_reward=goal_reward))
    except Exception:
        env.close()
        raise
