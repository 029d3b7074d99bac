"""``check_plugin`` dispatches through the registry of plugin checks, which covers every component kind."""

from __future__ import annotations

from typing import Any

import pytest

from sb3_hir import plugins
from sb3_hir.testing import check_plugin


def test_the_registry_has_a_check_for_every_component_kind():
    from sb3_hir.testing import registry

    assert sorted(registry.CHECKS) == sorted(plugins.KINDS)
    assert all(callable(check) for check in registry.CHECKS.values())


def test_check_plugin_dispatches_every_component_through_the_registry(monkeypatch: pytest.MonkeyPatch):
    from sb3_hir.testing import registry

    seen: list[tuple[str, Any, Any]] = []
    for kind in plugins.KINDS:
        monkeypatch.setitem(registry.CHECKS, kind,
                            lambda factory, options, kind=kind: seen.append((kind, factory, options)))
    check_plugin("sb3-hir-example", n_episodes=2, seed=7)
    manager = plugins.PluginManager(environ={plugins.LOAD_ENV: "sb3-hir-example"})
    (info,) = [info for info in manager.plugins() if info.distribution == "sb3-hir-example"]
    expected = [(kind, manager.get(kind, name)) for kind, names in info.components.items() for name in names]
    assert [(kind, factory) for kind, factory, _ in seen] == expected
    assert {(options.n_episodes, options.seed) for _, _, options in seen} == {(2, 7)}


def test_a_kind_without_a_check_is_reported_not_skipped(monkeypatch: pytest.MonkeyPatch):
    from sb3_hir.testing import registry

    monkeypatch.delitem(registry.CHECKS, "beta_schedule")
    with pytest.raises(LookupError, match="no plugin check is registered for component kind 'beta_schedule'"):
        check_plugin("sb3-hir-example")


def test_a_second_check_for_one_kind_is_refused():
    from sb3_hir.testing import registry

    with pytest.raises(ValueError, match="a plugin check for kind 'relabeler' is registered already"):
        registry.register_check("relabeler")(lambda factory, options: None)
    with pytest.raises(ValueError, match="kind must be one of"):
        registry.register_check("no-such-kind")
