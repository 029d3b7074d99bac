"""sb3-hir plugin for gymnasium-robotics GoalEnvs.

Contributes env ``"pointmaze-instruction"`` (k-goal instructions in PointMaze), env ``"goalenv"`` (any
single-goal GoalEnv as a one-goal instruction) and goal spec ``"distance-threshold"`` (tolerance = the env's own
success radius). Imports happen inside the hooks, so listing plugins does not import gymnasium-robotics.
"""

from __future__ import annotations

from typing import Any

from sb3_hir import hookimpl

__all__ = [
    "DistanceThresholdGoalSpec",
    "MazeGoalSampler",
    "make_goal_env",
    "make_pointmaze_instruction",
]

_LAZY = {
    "DistanceThresholdGoalSpec": "sb3_hir_robotics.goal_specs",
    "MazeGoalSampler": "sb3_hir_robotics.maze",
    "make_goal_env": "sb3_hir_robotics.goalenv",
    "make_pointmaze_instruction": "sb3_hir_robotics.maze",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sb3_hir_robotics' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def _pointmaze_instruction(**kwargs: Any) -> Any:
    """k-goal instructions in a gymnasium-robotics PointMaze (free cells as goals, the env's own success test)."""
    from sb3_hir_robotics.maze import make_pointmaze_instruction

    return make_pointmaze_instruction(**kwargs)


def _goal_env(**kwargs: Any) -> Any:
    """Any single-goal GoalEnv (env_id=...) as a one-goal instruction: its own desired goal and success test."""
    from sb3_hir_robotics.goalenv import make_goal_env

    return make_goal_env(**kwargs)


def _distance_threshold(**kwargs: Any) -> Any:
    """Tolerance goal spec whose tolerance is the env's own distance_threshold (0.45 for mazes)."""
    from sb3_hir_robotics.goal_specs import DistanceThresholdGoalSpec

    return DistanceThresholdGoalSpec(**kwargs)


@hookimpl
def register_envs(register):
    register("pointmaze-instruction", _pointmaze_instruction)
    register("goalenv", _goal_env)


@hookimpl
def register_goal_specs(register):
    register("distance-threshold", _distance_threshold)
