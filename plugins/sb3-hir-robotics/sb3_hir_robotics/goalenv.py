"""Any single-goal GoalEnv as a one-goal instruction (k = 1): env plugin ``"goalenv"``.

The instruction is the env's own ``desired_goal`` drawn at reset and success is its own test. The episode ends
at the first reach, and the reward keeps the env's scale (-1/0 for Fetch). Prefer the buffer's native GoalEnv mode
(pass the GoalEnv as it is to :class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer`): it keeps the task
itself, e.g. FetchReach's "reach and hold". This adapter is for what needs an instruction env: k-goal tooling,
DAgger with instruction relabeling, :func:`sb3_hir.testing.check_instruction_env`. Goals may be a 1-D Box,
MultiBinary, MultiDiscrete or a Discrete (see :mod:`sb3_hir.instruction`); integer goals come with the matching
``"exact"`` goal spec as ``env.goal_spec``.
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np

from sb3_hir.instruction import DesiredGoalSampler, InstructionWrapper, goal_space_mask_value
from sb3_hir_robotics.goal_specs import declare_goal_spec
from sb3_hir_robotics.maze import outside_mask_value

__all__ = ["default_mask_value", "env_reward_scale", "make_goal_env"]


def env_reward_scale(env: gym.Env) -> tuple[float, float]:
    """``(step_reward, goal_reward)`` that reproduce the env's own sparse scale: ``compute_reward`` of a goal
    missed and the gain of reaching it (Fetch: ``(-1.0, 1.0)``, PointMaze: ``(0.0, 1.0)``). ``(0.0, 1.0)`` when the
    env's reward cannot be probed that way (not sparse, or goals that cannot be moved far off)."""
    if not isinstance(env.observation_space, gym.spaces.Dict) or "desired_goal" not in env.observation_space.spaces:
        return 0.0, 1.0  # not a GoalEnv: InstructionWrapper refuses it, naming what it accepts
    space = env.observation_space["desired_goal"]
    goal = np.asarray(space.sample())
    if isinstance(space, gym.spaces.MultiBinary):
        far = 1 - goal
    elif isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating):
        far = goal + 1000.0
    else:
        return 0.0, 1.0
    compute = cast(Any, env.unwrapped).compute_reward  # a GoalEnv's
    try:
        hit = float(np.asarray(compute(goal, goal, {})).reshape(-1)[0])
        miss = float(np.asarray(compute(far, goal, {})).reshape(-1)[0])
    except Exception:  # an env whose compute_reward needs more than goals: keep 0/1
        return 0.0, 1.0
    if not (np.isfinite(hit) and np.isfinite(miss) and hit > miss and abs(miss) <= 1.0 and hit - miss <= 1.0 + 1e-9):
        return 0.0, 1.0  # dense or unusual rewards: no sparse scale to keep
    return miss, hit - miss


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
    goal_reward: float | None = None,
    success_reward: float | None = None,
    step_reward: float | None = None,
    **make_kwargs: Any,
) -> InstructionWrapper:
    """``gymnasium.make(env_id, **make_kwargs)`` as a one-goal instruction env.

    :param env_id: gymnasium id of any GoalEnv; its goals may be a 1-D Box, MultiBinary, MultiDiscrete or Discrete.
    :param num_goals: must be 1 (the env has one goal); accepted so that callers passing k get a clear error.
    :param mask_value: mask of the reached goal; None uses :func:`default_mask_value` (-1, or a value outside the
        goal range when -1 could be a real goal, e.g. a maze cell centre).
    :param goal_reward: reward for reaching the goal; None keeps the env's scale (:func:`env_reward_scale`).
    :param step_reward: reward of every step on top; None keeps the env's scale (Fetch: -1.0, so that a step
        reaching the goal earns 0 and any other -1, as the env itself rewards).
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
        scale_step, scale_goal = env_reward_scale(env)
        wrapper = InstructionWrapper(
            env, sampler, num_goals=1, goal_reward=scale_goal if goal_reward is None else goal_reward,
            step_reward=scale_step if step_reward is None else step_reward,
        )
        return declare_goal_spec(wrapper)
    except Exception:
        env.close()
        raise
