"""``check_plugin``: every component an installed distribution contributes passes the check of its kind.

Plugins are loaded afresh with only the built-in plugin and this distribution allowed, so other installed plugins
cannot interfere; each component is then handed to the check :mod:`sb3_hir.testing.registry` holds for its kind.
"""

from __future__ import annotations

import importlib.metadata as importlib_metadata
import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

# The per-kind modules register their plugin checks when imported: check_plugin needs every one of them.
import sb3_hir.testing.beta_schedule
import sb3_hir.testing.env
import sb3_hir.testing.expert
import sb3_hir.testing.goal_spec
import sb3_hir.testing.relabeler  # noqa: F401
from sb3_hir import plugins
from sb3_hir.extras import MissingExtraError
from sb3_hir.testing.registry import PluginCheckOptions, component_check
from sb3_hir.testing.rollout import fail

if TYPE_CHECKING:
    import gymnasium as gym

__all__ = ["check_plugin"]

_CHECK = "check_plugin"


def check_plugin(
    distribution_name: str,
    env: gym.Env | str | Callable[[], gym.Env] | None = None,
    n_episodes: int = 3,
    seed: int = 0,
    max_steps: int | None = None,
) -> None:
    """Check that every component ``distribution_name`` contributes loads, is created with its defaults, and
    passes the check of its kind.

    Plugins are loaded afresh with only the built-in plugin and this distribution allowed, so other installed
    plugins cannot interfere. Envs go through :func:`~sb3_hir.testing.check_instruction_env`, goal specs through
    :func:`~sb3_hir.testing.check_goal_spec`, beta schedules through :func:`~sb3_hir.testing.check_beta_schedule`;
    relabelers (created with ``num_goals`` from the env, and the env's declared goal spec) through
    :func:`~sb3_hir.testing.check_relabeler` and experts through :func:`~sb3_hir.testing.check_expert`, both on
    ``env`` (see :data:`sb3_hir.testing.registry.CHECKS`). A component that needs what this install lacks (its
    creation raises :class:`~sb3_hir.extras.MissingExtraError`) is not checked, with a warning naming it.

    :param distribution_name: the installed distribution (``pip`` name), e.g. ``"sb3-hir-example"``.
    :param env: env for relabelers and experts: instance, registered name or zero-argument factory; default a
        7x7 MazeRunner with 3 goals.
    """
    if not isinstance(distribution_name, str) or not distribution_name.strip():
        raise ValueError(f"distribution_name must be a non-empty str, got {distribution_name!r}")
    manager, infos = _load_distribution(distribution_name)
    components = [(kind, name) for info in infos for kind, names in info.components.items() for name in names]
    if not components:
        fail(_CHECK, distribution_name, "the plugin loads but registers no component")
    options = PluginCheckOptions(env=env, n_episodes=n_episodes, seed=seed, max_steps=max_steps)
    for kind, name in components:
        check = component_check(kind)
        try:
            check(manager.get(kind, name), options)
        except AssertionError as error:
            raise AssertionError(f"{_CHECK}: {distribution_name} {kind} {name!r}: {error}") from None
        except MissingExtraError as error:  # e.g. BabyAI's bot on a minigrid without it: said, not hidden
            warnings.warn(f"{_CHECK}: {distribution_name} {kind} {name!r} not checked in this install: {error}",
                          stacklevel=2)


def _load_distribution(distribution_name: str) -> tuple[plugins.PluginManager, list[plugins.PluginInfo]]:
    """A manager loading only the built-in plugin and ``distribution_name``, and that distribution's plugins.

    A missing distribution, one without an entry point, and a plugin that fails to load are all failures.
    """
    try:
        importlib_metadata.distribution(distribution_name)
    except importlib_metadata.PackageNotFoundError:
        fail(_CHECK, distribution_name, "no such distribution is installed (pip install it first)")
    wanted = plugins.normalize_name(distribution_name)
    manager = plugins.PluginManager(environ={**os.environ, plugins.LOAD_ENV: distribution_name,
                                             plugins.STRICT_ENV: ""})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plugins.PluginWarning)
        infos = [info for info in manager.plugins()
                 if info.distribution and plugins.normalize_name(info.distribution) == wanted]
    if not infos:
        fail(_CHECK, distribution_name, f"the distribution declares no entry point in the "
                                        f"{plugins.ENTRY_POINT_GROUP!r} group, so sb3-hir cannot find its components")
    for info in infos:
        if info.broken:
            fail(_CHECK, f"{distribution_name} plugin {info.name!r}", f"failed to load: {info.error}")
    return manager, infos
