"""MazeRunner, sb3-hir's default multi-goal environment, and its shortest-path expert.

:func:`register_gymnasium_envs` registers the gymnasium id ``sb3_hir/MazeRunner-v0``; gymnasium calls it through
the ``gymnasium.envs`` entry point whenever it is imported (as it loads gymnasium-robotics), and importing this
package calls it too. ``MazeRunnerEnv`` and ``ShortestPathExpert`` are loaded on first access: gymnasium's entry
point imports this package while gymnasium itself is still being imported, possibly from inside an import of
:mod:`sb3_hir.goals` (which MazeRunner uses), so the package's import must not pull MazeRunner in; and env worker
processes that only need the env do not import torch / stable-baselines3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sb3_hir.envs.registration import MAZERUNNER_ID, register_gymnasium_envs

if TYPE_CHECKING:
    from sb3_hir.envs.expert import ShortestPathExpert
    from sb3_hir.envs.mazerunner import MazeRunnerEnv

__all__ = ["MAZERUNNER_ID", "MazeRunnerEnv", "ShortestPathExpert", "register_gymnasium_envs"]

register_gymnasium_envs()


def __getattr__(name: str) -> Any:
    if name == "MazeRunnerEnv":
        from sb3_hir.envs.mazerunner import MazeRunnerEnv

        return MazeRunnerEnv
    if name == "ShortestPathExpert":
        from sb3_hir.envs.expert import ShortestPathExpert

        return ShortestPathExpert
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
