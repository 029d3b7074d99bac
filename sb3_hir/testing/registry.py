"""Which check a plugin's component of each kind must pass: a registry filled by the per-kind modules.

:func:`~sb3_hir.testing.check_plugin` looks the check up here instead of branching on kinds, so a new component
kind needs a check registered next to its contract check, and a test can assert that every kind of
:data:`sb3_hir.plugins.KINDS` has one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sb3_hir import plugins, resolvers
from sb3_hir.testing.rollout import is_factory

if TYPE_CHECKING:
    import gymnasium as gym

__all__ = ["CHECKS", "ComponentCheck", "PluginCheckOptions", "component_check", "register_check"]


@dataclass(frozen=True)
class PluginCheckOptions:
    """The :func:`~sb3_hir.testing.check_plugin` arguments a component check may use."""

    #: Env for relabelers and experts: instance, registered name or zero-argument factory; None for a small
    #: MazeRunner.
    env: Any = None
    n_episodes: int = 3
    seed: int = 0
    max_steps: int | None = None

    @contextlib.contextmanager
    def target_env(self) -> Iterator[gym.Env]:
        """The env relabelers and experts are checked on; closed afterwards when it was created here."""
        env = self.env
        owned = env is None or (not isinstance(env, str) and is_factory(env, "step"))
        target = _default_env() if env is None else env() if owned else env
        created = isinstance(target, str)
        target = resolvers.resolve_env(target)
        try:
            yield target
        finally:
            if owned or created:
                target.close()


def _default_env() -> gym.Env:
    """Small MazeRunner: what relabelers and experts of a plugin without envs are checked on."""
    from sb3_hir.envs import MazeRunnerEnv  # deferred: keeps ``import sb3_hir.testing`` cheap

    return MazeRunnerEnv(maze_dim=7, num_goals=3, time_limit=60)


#: ``check(factory, options)``: create a registered component with its defaults and hold it to its kind's contract.
ComponentCheck = Callable[[Callable[..., Any], PluginCheckOptions], None]

#: Component kind -> its check; each kind's module registers one (see :func:`register_check`).
CHECKS: dict[str, ComponentCheck] = {}


def register_check(kind: str) -> Callable[[ComponentCheck], ComponentCheck]:
    """Decorator registering the plugin check of ``kind``; one per kind, so a second is a programming error."""
    plugins.check_kind(kind)

    def decorator(check: ComponentCheck) -> ComponentCheck:
        if kind in CHECKS:
            raise ValueError(f"a plugin check for kind {kind!r} is registered already: {CHECKS[kind]!r}")
        CHECKS[kind] = check
        return check

    return decorator


def component_check(kind: str) -> ComponentCheck:
    """The check registered for ``kind``; a kind without one must not pass silently."""
    try:
        return CHECKS[kind]
    except KeyError:
        raise LookupError(f"no plugin check is registered for component kind {kind!r}; registered: "
                          f"{', '.join(sorted(CHECKS))}") from None
