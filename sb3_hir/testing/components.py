"""Registered component names, for tests that cover every installed component of a kind at once.

The names come from a fresh plugin manager, so a test's in-process registrations never leak into them. The
``--sb3-hir-plugins`` option belongs to the pytest plugin (:mod:`sb3_hir.pytest_plugin`, which holds its state);
this module reads it only when pytest has loaded that plugin, and so never imports pytest or the plugin itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sb3_hir import plugins

if TYPE_CHECKING:
    import pytest

__all__ = ["component_names", "current_allow_list", "parametrize_components"]

#: The pytest plugin's module, registered through the ``pytest11`` entry point.
_PYTEST_PLUGIN = "sb3_hir.pytest_plugin"


def current_allow_list() -> str | None:
    """``--sb3-hir-plugins`` of the running pytest (None when unset or outside pytest)."""
    plugin = sys.modules.get(_PYTEST_PLUGIN)
    return None if plugin is None else plugin.current_allow_list()


def _allow_list(allowed: str | Iterable[str] | None) -> set[str] | None:
    if allowed is None:
        return None
    parts = allowed.split(",") if isinstance(allowed, str) else list(allowed)
    return {plugins.normalize_name(part.strip()) for part in parts if part.strip()}


def component_names(kind: str, allowed: str | Iterable[str] | None = None) -> list[str]:
    """Names of every registered component of ``kind``, from a fresh plugin manager.

    For parametrizing your own tests over what is installed, restricted as the pytest option restricts them.

    :param allowed: restrict to components whose plugin (entry-point or distribution name) is listed, as
        ``--sb3-hir-plugins`` does; None means every installed plugin.
    """
    plugins.check_kind(kind)
    names = _allow_list(allowed)
    environ = dict(os.environ)
    if names is not None:
        environ[plugins.LOAD_ENV] = ",".join(sorted(names))
    manager = plugins.PluginManager(environ=environ)
    return [
        name for name, info in manager.available(kind).items()
        if names is None or plugins.normalize_name(info.plugin) in names
        or (info.distribution is not None and plugins.normalize_name(info.distribution) in names)
    ]


def parametrize_components(kind: str, argname: str | None = None,
                           allowed: str | Iterable[str] | None = None) -> pytest.MarkDecorator:
    """``pytest.mark.parametrize`` over every registered component of ``kind``: one test covers them all.

    So a plugin's test suite covers components added later without being edited.

    ::

        @parametrize_components("relabeler")
        def test_relabelers(relabeler_name):
            check_relabeler(relabeler_name, MazeRunnerEnv(maze_dim=7))

    :param argname: the test argument receiving the name; default ``f"{kind}_name"``.
    :param allowed: restrict to these plugins; default: the ``--sb3-hir-plugins`` option of the running pytest.
    """
    import pytest  # deferred: only test suites call this, and sb3_hir.testing must import without pytest

    if allowed is None:
        allowed = current_allow_list()
    names = component_names(kind, allowed)
    return pytest.mark.parametrize(argname or f"{kind}_name", names, ids=names)
