"""pytest plugin for regression-testing sb3-hir components: registered through the ``pytest11`` entry point.

It gives every pytest run (sb3-hir's own and users'):

- the option ``--sb3-hir-plugins a,b`` restricting plugin-parametrized tests to the named plugins; a name no
  installed plugin has is a usage error, as it would otherwise skip every parametrized test and pass;
- the fixture ``sb3_hir_plugins``: a fresh :class:`~sb3_hir.plugins.PluginManager` per test, installed as the
  process-wide manager for the test's duration, so plugins registered in one test never leak into another;
- parametrization by fixture name: a test taking ``sb3_hir_env_name`` (or ``sb3_hir_relabeler_name``,
  ``sb3_hir_goal_spec_name``, ``sb3_hir_expert_name``, ``sb3_hir_beta_schedule_name``) runs once per registered
  component of that kind; ``sb3_hir_env`` is the env built from ``sb3_hir_env_name`` with its defaults.

Importing it stays cheap (no torch): component look-ups happen only for tests that ask for them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from sb3_hir import plugins
from sb3_hir.testing import component_names

__all__ = ["OPTION", "current_allow_list"]

OPTION = "--sb3-hir-plugins"

_NAMES_KEY = pytest.StashKey[dict[str, list[str]]]()

#: ``--sb3-hir-plugins`` of the pytest runs in progress, innermost last: pytester nests runs in one process, so
#: one value would be overwritten by an inner run. :func:`sb3_hir.testing.parametrize_components` reads it through
#: :func:`current_allow_list`.
_allow_lists: list[str | None] = []


def current_allow_list() -> str | None:
    """``--sb3-hir-plugins`` of the running pytest (None when unset or outside pytest)."""
    return _allow_lists[-1] if _allow_lists else None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sb3-hir")
    group.addoption(
        OPTION,
        action="store",
        default=None,
        metavar="NAMES",
        help="sb3-hir: restrict plugin-parametrized tests to these comma-separated plugin names "
        "(entry-point or distribution names; the built-in plugin is always loaded).",
    )


def pytest_configure(config: pytest.Config) -> None:
    allowed = config.getoption("sb3_hir_plugins", None)
    # Pushed before the check: pytest unconfigures (and so pops) even when configuring raised.
    _allow_lists.append(allowed)
    config.stash[_NAMES_KEY] = {}
    if allowed is not None:
        _check_allow_list(allowed)


def _check_allow_list(allowed: str) -> None:
    """Reject names no installed plugin has, naming the installed ones: a typo must not leave CI green."""
    installed = plugins.installed_plugins()
    unknown = plugins.unknown_plugin_names(allowed, installed)
    if unknown:
        raise pytest.UsageError(
            f"{OPTION} names unknown plugin(s) {', '.join(map(repr, unknown))}; installed plugins (entry-point "
            f"and distribution names): {plugins.describe_installed(installed)}"
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    if _allow_lists:
        _allow_lists.pop()


def _argname(kind: str) -> str:
    return f"sb3_hir_{kind}_name"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    already = {name for mark in metafunc.definition.iter_markers("parametrize")
               for name in _mark_argnames(mark)}
    for kind in plugins.KINDS:
        argname = _argname(kind)
        if argname not in metafunc.fixturenames or argname in already:
            continue
        cache = metafunc.config.stash[_NAMES_KEY]
        if kind not in cache:
            cache[kind] = component_names(kind, metafunc.config.getoption("sb3_hir_plugins"))
        names = cache[kind]
        metafunc.parametrize(argname, names, ids=names)


def _mark_argnames(mark: pytest.Mark) -> list[str]:
    argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
    if isinstance(argnames, str):
        return [name.strip() for name in argnames.split(",") if name.strip()]
    return list(argnames)


@pytest.fixture
def sb3_hir_plugins(request: pytest.FixtureRequest) -> Iterator[plugins.PluginManager]:
    """A fresh plugin manager for this test, also serving ``sb3_hir.plugins.create``/``get``/``available``.

    It honours ``--sb3-hir-plugins`` as an allow-list (the built-in plugin is always loaded) and the usual
    ``SB3_HIR_*`` variables otherwise; the previous process-wide manager is restored after the test.
    """
    environ = dict(os.environ)
    allowed = request.config.getoption("sb3_hir_plugins")
    if allowed is not None:
        environ[plugins.LOAD_ENV] = allowed
    with plugins.use(plugins.PluginManager(environ=environ)) as manager:
        yield manager


@pytest.fixture
def sb3_hir_env(sb3_hir_plugins: plugins.PluginManager, sb3_hir_env_name: str) -> Iterator[Any]:
    """The registered env ``sb3_hir_env_name``, created with its defaults and closed after the test."""
    env = sb3_hir_plugins.create("env", sb3_hir_env_name)
    yield env
    env.close()
