"""gymnasium registration of sb3-hir's envs: ``sb3_hir/MazeRunner-v0``.

gymnasium calls :func:`register_gymnasium_envs` through the ``gymnasium.envs`` entry point whenever it is imported,
possibly while :mod:`sb3_hir.envs` itself is still being imported (MazeRunner imports gymnasium), so this module
depends on nothing else in the package.
"""

from __future__ import annotations

__all__ = ["MAZERUNNER_ID", "register_gymnasium_envs"]

#: gymnasium id of :class:`~sb3_hir.envs.MazeRunnerEnv`; the env enforces its own ``time_limit``, so no TimeLimit
#: wrapper.
MAZERUNNER_ID = "sb3_hir/MazeRunner-v0"


def register_gymnasium_envs() -> None:
    """Register ``sb3_hir/MazeRunner-v0`` with gymnasium (once).

    So that ``gym.make("sb3_hir/MazeRunner-v0")`` (and rl-zoo3, and ``SubprocVecEnv`` workers) find the env by id
    without importing sb3-hir's heavier modules.

    Uses ``gymnasium.envs.registration`` directly: gymnasium calls this while its own package is still being
    imported, before ``gymnasium.registry`` exists.
    """
    from gymnasium.envs.registration import register, registry

    if MAZERUNNER_ID not in registry:
        register(id=MAZERUNNER_ID, entry_point="sb3_hir.envs.mazerunner:MazeRunnerEnv")
