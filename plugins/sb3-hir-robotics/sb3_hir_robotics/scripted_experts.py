"""The scripted PointMaze and FetchPush controllers as DAgger experts: SB3's ``predict`` over a VecEnv.

A controller maps one observation to one action (the pusher also keeps its phase within an episode). An expert
plugin is built for a VecEnv (``factory(venv=...)``, :func:`sb3_hir.resolvers.resolve_expert`) and answers SB3's
``predict`` for a batch, so DAgger's collector (``--expert pointmaze-scripted``) and imitation's ``expert_policy``
take it as they take a policy: one controller per sub-env, each restarted at its sub-env's ``episode_start``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from sb3_hir.protocols import ExpertProtocol

__all__ = ["ScriptedExpert", "fetch_push_expert", "pointmaze_expert"]

Controller = Callable[[dict[str, np.ndarray]], np.ndarray]


class ScriptedExpert:
    """SB3's ``predict`` for a batch of Dict observations, one scripted controller per sub-env.

    :param controllers: one per sub-env, called with that sub-env's observation; one with a ``reset()`` is reset
        where ``episode_start`` says a sub-env's episode begins.
    """

    def __init__(self, controllers: Sequence[Controller]) -> None:
        if not controllers:
            raise ValueError("controllers must hold one controller per sub-env; got none")
        self.controllers = list(controllers)

    def predict(self, observation: dict[str, np.ndarray], state: Any = None, episode_start: Any = None,
                deterministic: bool = True) -> tuple[np.ndarray, Any]:
        """The controllers' actions for ``observation`` (batched, one row per sub-env; or one observation)."""
        if not isinstance(observation, dict):
            raise TypeError(f"observation must be a dict of arrays (a GoalEnv's); got {type(observation).__name__}")
        batched = np.asarray(observation["observation"]).ndim == 2
        if not batched:
            return self._act(0, observation, episode_start is not None and bool(np.any(episode_start))), state
        n = len(observation["observation"])
        if n != len(self.controllers):
            raise ValueError(f"observation holds {n} sub-envs' observations; this expert has {len(self.controllers)} "
                             "controllers (one per sub-env of the VecEnv it was built for)")
        starts = np.zeros(n, dtype=bool) if episode_start is None else np.asarray(episode_start, dtype=bool)
        actions = [self._act(i, {key: value[i] for key, value in observation.items()}, bool(starts[i]))
                   for i in range(n)]
        return np.stack(actions), state

    def _act(self, i: int, obs: dict[str, np.ndarray], start: bool) -> np.ndarray:
        controller = self.controllers[i]
        reset = getattr(controller, "reset", None)
        if start and reset is not None:
            reset()
        return controller(obs)


def pointmaze_expert(venv: Any) -> ExpertProtocol:
    """The PointMaze controller of each sub-env's maze (``get_attr("maze")``), in the VecEnv's action units."""
    from sb3_hir_robotics.pointmaze_expert import PointMazeExpert

    _require_venv(venv, "pointmaze-scripted")
    space = venv.action_space
    if not isinstance(space, spaces.Box):
        raise ValueError(f"expert 'pointmaze-scripted' needs a Box action space; got {space}")
    return ScriptedExpert([PointMazeExpert.from_maze(maze, space) for maze in venv.get_attr("maze")])


def fetch_push_expert(venv: Any) -> ExpertProtocol:
    """The FetchPush pushing controller, one per sub-env (each keeps its own phase)."""
    from sb3_hir_robotics.fetch_push_expert import ScriptedPusher

    _require_venv(venv, "fetch-push-scripted")
    return ScriptedExpert([ScriptedPusher() for _ in range(venv.num_envs)])


def _require_venv(venv: Any, name: str) -> None:
    if venv is None or not hasattr(venv, "num_envs"):
        raise ValueError(f"expert {name!r} is built for a VecEnv (venv=...), whose sub-envs it reads; got {venv!r}")
