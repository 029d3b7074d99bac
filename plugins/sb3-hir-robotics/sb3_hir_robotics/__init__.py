"""sb3-hir plugin for gymnasium-robotics GoalEnvs.

Contributes env ``"pointmaze-instruction"`` (k-goal instructions in PointMaze), env ``"goalenv"`` (any
single-goal GoalEnv as a one-goal instruction), goal spec ``"distance-threshold"`` (tolerance = the env's own
success radius) and the scripted experts ``"pointmaze-scripted"`` and ``"fetch-push-scripted"`` (DAgger teachers
that read only the observation). Imports happen inside the hooks, so listing plugins does not import gymnasium-robotics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sb3_hir import hookimpl

__all__ = [
    "DistanceThresholdGoalSpec",
    "MazeGoalSampler",
    "PointMazeExpert",
    "ScriptedExpert",
    "ScriptedPusher",
    "make_goal_env",
    "make_pointmaze_instruction",
]

_LAZY = {
    "DistanceThresholdGoalSpec": "sb3_hir_robotics.goal_specs",
    "MazeGoalSampler": "sb3_hir_robotics.maze",
    "make_goal_env": "sb3_hir_robotics.goalenv",
    "make_pointmaze_instruction": "sb3_hir_robotics.maze",
    "PointMazeExpert": "sb3_hir_robotics.pointmaze_expert",
    "ScriptedPusher": "sb3_hir_robotics.fetch_push_expert",
    "ScriptedExpert": "sb3_hir_robotics.scripted_experts",
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


def _pointmaze_env() -> Any:
    """The env the PointMaze controller is checked in (``check_plugin``): UMaze, episodic, 100 steps."""
    from sb3_hir_robotics.pointmaze_expert import make_env

    return make_env()


def _fetch_push_env() -> Any:
    """The env the pusher is checked in (``check_plugin``): gymnasium-robotics' newest FetchPush."""
    import gymnasium as gym

    from sb3_hir_robotics.fetch_push_expert import push_env_id

    return gym.make(push_env_id())


def _checked_in(make_env: Callable[[], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Names the env family an expert factory serves (``factory.env``): check_plugin checks it there, not in the
    default MazeRunner (sb3_hir.testing.expert)."""

    def mark(factory: Callable[..., Any]) -> Callable[..., Any]:
        factory.__dict__["env"] = make_env
        return factory

    return mark


@_checked_in(_pointmaze_env)
def _pointmaze_scripted(venv: Any = None, **kwargs: Any) -> Any:
    """PointMaze's scripted controller (a breadth-first path and a PD controller), from the observation alone."""
    from sb3_hir_robotics.scripted_experts import pointmaze_expert

    return pointmaze_expert(venv, **kwargs)


@_checked_in(_fetch_push_env)
def _fetch_push_scripted(venv: Any = None, **kwargs: Any) -> Any:
    """FetchPush's scripted pusher (behind the object, down, push along the line to the goal)."""
    from sb3_hir_robotics.scripted_experts import fetch_push_expert

    return fetch_push_expert(venv, **kwargs)


@hookimpl
def register_experts(register):
    register("pointmaze-scripted", _pointmaze_scripted)
    register("fetch-push-scripted", _fetch_push_scripted)
