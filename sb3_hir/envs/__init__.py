"""MazeRunner, sb3-hir's default multi-goal environment, and its shortest-path expert.

Importing this package registers the gymnasium id ``sb3_hir/MazeRunner-v0``. ``ShortestPathExpert`` is loaded on
first access, so env worker processes that only need the env do not import torch / stable-baselines3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium

from sb3_hir.envs.mazerunner import MazeRunnerEnv

if TYPE_CHECKING:
    from sb3_hir.envs.expert import ShortestPathExpert

__all__ = ["MAZERUNNER_ID", "MazeRunnerEnv", "ShortestPathExpert"]

#: gymnasium id of :class:`MazeRunnerEnv`; the env enforces its own ``time_limit``, so no TimeLimit wrapper.
MAZERUNNER_ID = "sb3_hir/MazeRunner-v0"

if MAZERUNNER_ID not in gymnasium.registry:
    gymnasium.register(id=MAZERUNNER_ID, entry_point="sb3_hir.envs.mazerunner:MazeRunnerEnv")


def __getattr__(name: str) -> Any:
    if name == "ShortestPathExpert":
        from sb3_hir.envs.expert import ShortestPathExpert

        return ShortestPathExpert
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
