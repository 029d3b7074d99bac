"""Contained plugin problems: name conflicts, unknown allow/block-list entries, misspelt hooks, unregistering, and
``--sb3-hir-plugins`` naming a plugin that is not installed.

Plugins are real: objects registered with a real pluggy manager, or distributions installed for the test (a
dist-info with an ``sb3_hir`` entry point on ``sys.path``), found through ``importlib.metadata``.
"""

from __future__ import annotations

import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pluggy
import pytest

from sb3_hir import hookimpl, plugins, pytest_plugin, resolvers
from sb3_hir.plugins import DuplicateComponentError, PluginError, PluginManager, PluginWarning

pytest_plugins = ["pytester"]

Install = Callable[[str, str, str], None]

#: Registers goal spec "tolerance" (as the built-in plugin does, in every install profile) and a name of its own.
DUPE_SOURCE = '''
    from sb3_hir import hookimpl

    def loose(tolerance=2.0):
        """A looser tolerance spec."""
        from sb3_hir.goals import ToleranceGoalSpec

        return ToleranceGoalSpec(tolerance=tolerance)

    @hookimpl
    def register_goal_specs(register):
        register("tolerance", loose)
        register("dupe-only", loose)
'''

#: A misspelt hook next to a correct one.
MISSPELT_SOURCE = '''
    from sb3_hir import hookimpl

    @hookimpl
    def register_betaschedules(register):
        register("never", lambda: None)

    @hookimpl
    def register_goal_specs(register):
        register("typo-spec", lambda: None)
'''


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Install:
    """Install a one-module distribution declaring ``entry_point`` in the ``sb3_hir`` group, for this test."""

    def install(distribution: str, entry_point: str, source: str) -> None:
        module = plugins.normalize_name(distribution).replace("-", "_")
        root = tmp_path / module
        dist_info = root / f"{module}-0.0.1.dist-info"
        dist_info.mkdir(parents=True)
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.0.1\n")
        (dist_info / "entry_points.txt").write_text(f"[sb3_hir]\n{entry_point} = {module}\n")
        (root / f"{module}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(root))
        request.addfinalizer(lambda: sys.modules.pop(module, None))

    return install


class _Half:
    @hookimpl
    def register_beta_schedules(self, register):
        register("always-half", lambda: (lambda round_num: 0.5))
        register("half-only", lambda: (lambda round_num: 0.5))


class _Quarter:
    @hookimpl
    def register_beta_schedules(self, register):
        register("always-half", lambda: (lambda round_num: 0.25))

    @hookimpl
    def register_goal_specs(self, register):
        register("quarter-spec", object)


class _Third:
    @hookimpl
    def register_beta_schedules(self, register):
        register("always-half", lambda: (lambda round_num: 1 / 3))


class _Unrelated:
    @hookimpl
    def register_envs(self, register):
        register("unrelated-env", object)


class _Misspelt:
    @hookimpl
    def register_betaschedules(self, register):
        register("never", object)

    @hookimpl
    def register_goal_specs(self, register):
        register("still-here", object)


def _empty_manager(**environ: str) -> PluginManager:
    return PluginManager(load_entrypoints=False, environ=environ)


def _plugin_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]


@pytest.fixture
def dupe_manager(install: Install) -> Iterator[PluginManager]:
    """The built-in plugin and an installed ``sb3-hir-dupe`` that also registers goal spec "tolerance"."""
    install("sb3-hir-dupe", "dupe", DUPE_SOURCE)
    manager = PluginManager(environ={plugins.LOAD_ENV: "sb3-hir-dupe"})
    with pytest.warns(PluginWarning, match=r"goal_spec 'tolerance' is registered by 2 plugins: 'builtin' \(sb3-hir\), "
                                           r"'dupe' \(sb3-hir-dupe\)"):
        manager.available("env")
    yield manager


# -- name conflicts ---------------------------------------------------------------------------------------------------
def test_conflict_between_installed_plugins_leaves_other_names_and_listings_working(dupe_manager):
    specs = dupe_manager.available("goal_spec")
    assert "tolerance" not in specs  # it cannot be created, so it is not offered
    assert specs["dupe-only"].plugin == "dupe"
    assert dupe_manager.create("goal_spec", "exact").mask_value == -1
    assert dupe_manager.create("goal_spec", "dupe-only").tolerance == 2.0
    assert "mazerunner" in dupe_manager.available("env")
    infos = {info.name: info for info in dupe_manager.plugins()}
    assert infos["dupe"].components == {"goal_spec": ("dupe-only", "tolerance")}
    assert infos["dupe"].conflicts == {"goal_spec": ("tolerance",)}
    assert "tolerance" in infos["builtin"].components["goal_spec"]
    assert infos["builtin"].conflicts == {"goal_spec": ("tolerance",)}
    assert infos["dupe"].as_dict()["conflicts"] == {"goal_spec": ["tolerance"]}
    assert "conflicts" not in plugins.PluginInfo("clean", None, None, None, {"env": ("e",)}).as_dict()


def test_conflicts_lists_every_provider(dupe_manager):
    conflicts = dupe_manager.conflicts()
    assert list(conflicts) == [("goal_spec", "tolerance")]
    providers = conflicts[("goal_spec", "tolerance")]
    assert [(info.plugin, info.distribution) for info in providers] == [("builtin", "sb3-hir"),
                                                                          ("dupe", "sb3-hir-dupe")]
    assert providers[1].description == "A looser tolerance spec."
    with plugins.use(dupe_manager):
        assert plugins.conflicts() == conflicts


@pytest.mark.parametrize("lookup", ["get", "info", "create"])
def test_lookup_of_a_conflicting_name_raises_naming_every_provider_and_the_block_list(dupe_manager, lookup):
    with pytest.raises(DuplicateComponentError) as excinfo:
        getattr(dupe_manager, lookup)("goal_spec", "tolerance")
    message = str(excinfo.value)
    assert "\n" not in message
    assert "'builtin' (sb3-hir)" in message and "'dupe' (sb3-hir-dupe)" in message
    assert "SB3_HIR_BLOCK_PLUGINS=sb3-hir-dupe" in message


def test_a_resolver_raises_for_a_conflicting_name_and_resolves_the_others(dupe_manager):
    with plugins.use(dupe_manager):
        with pytest.raises(DuplicateComponentError, match=r"SB3_HIR_BLOCK_PLUGINS=sb3-hir-dupe"):
            resolvers.resolve_goal_spec("tolerance")
        assert resolvers.resolve_goal_spec("dupe-only").tolerance == 2.0


def test_blocking_one_provider_settles_the_conflict(install: Install):
    install("sb3-hir-dupe", "dupe", DUPE_SOURCE)
    manager = PluginManager(environ={plugins.LOAD_ENV: "sb3-hir-dupe", plugins.BLOCK_ENV: "dupe"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert manager.info("goal_spec", "tolerance").plugin == "builtin"
    assert _plugin_warnings(caught) == []
    assert manager.conflicts() == {}


def test_each_conflict_warns_once_naming_all_providers():
    manager = _empty_manager()
    manager.register(_Half(), name="half")
    manager.register(_Quarter(), name="quarter")
    manager.register(_Third(), name="third")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager.available("beta_schedule")
        manager.register(_Unrelated(), name="unrelated")  # forces a re-collection
        manager.available("beta_schedule")
    messages = [m for m in _plugin_warnings(caught) if "always-half" in m]
    assert len(messages) == 1
    assert "3 plugins: 'half' (in-process), 'quarter' (in-process), 'third' (in-process)" in messages[0]
    assert manager.create("beta_schedule", "half-only")(0) == 0.5
    assert list(manager.available("goal_spec")) == ["quarter-spec"]


def test_strict_mode_keeps_a_conflict_fatal_at_load_time():
    manager = _empty_manager(SB3_HIR_STRICT_PLUGINS="1")
    manager.register(_Half(), name="half")
    manager.register(_Quarter(), name="quarter")
    with pytest.raises(DuplicateComponentError, match=r"'always-half'.*'half'.*'quarter'"):
        manager.available("goal_spec")  # an unrelated kind: the whole load fails


def test_strict_load_failure_is_raised_by_every_later_lookup(install: Install):
    install("sb3-hir-unimportable", "unimportable", "raise ImportError('unimportable on purpose')\n")
    manager = PluginManager(environ={plugins.LOAD_ENV: "sb3-hir-unimportable", plugins.STRICT_ENV: "1"})
    with pytest.raises(PluginError, match="unimportable on purpose"):
        manager.available("env")  # caught, as the CLI's --help does when it lists names
    with pytest.raises(PluginError, match="unimportable on purpose"):
        manager.plugins()  # not a half-loaded manager answering as if nothing had failed


# -- unknown allow-list and block-list entries ------------------------------------------------------------------------
def test_unknown_allow_list_entries_warn_naming_the_installed_plugins():
    manager = PluginManager(environ={plugins.LOAD_ENV: "sb3-hir-exmaple, builtin"})
    with pytest.warns(PluginWarning, match="SB3_HIR_LOAD_PLUGINS names unknown plugin") as record:
        manager.available("beta_schedule")
    message = next(str(w.message) for w in record if "SB3_HIR_LOAD_PLUGINS" in str(w.message))
    assert "'sb3-hir-exmaple'" in message and "'builtin'" not in message
    assert "builtin (sb3-hir)" in message and "example (sb3-hir-example)" in message


def test_unknown_block_list_entries_warn_and_known_ones_do_not():
    manager = PluginManager(environ={plugins.LOAD_ENV: "", plugins.BLOCK_ENV: "Sb3_Hir.Example, exmaple"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager.available("beta_schedule")
    messages = _plugin_warnings(caught)
    assert len(messages) == 1
    assert messages[0].startswith("SB3_HIR_BLOCK_PLUGINS names unknown plugin(s) 'exmaple'; installed plugins: ")
    assert "example (sb3-hir-example)" in messages[0]


def test_unknown_list_entries_raise_in_strict_mode():
    manager = PluginManager(environ={plugins.LOAD_ENV: "nope", plugins.STRICT_ENV: "1"})
    with pytest.raises(PluginError, match=r"SB3_HIR_LOAD_PLUGINS names unknown plugin.*'nope'"):
        manager.available("env")


# -- hooks without a spec ---------------------------------------------------------------------------------------------
def test_misspelt_hook_of_a_registered_plugin_warns_once_and_the_rest_of_it_loads():
    manager = _empty_manager()
    with pytest.warns(PluginWarning) as record:
        manager.register(_Misspelt(), name="typo")
    (message,) = [str(w.message) for w in record]
    assert "plugin 'typo' (in-process)" in message
    assert "'register_betaschedules' (did you mean 'register_beta_schedules'?)" in message
    assert "still-here" in manager.available("goal_spec")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager.register(_Half(), name="half")  # check_pending still fails because of "typo": not reported again
        manager.available("beta_schedule")
    assert _plugin_warnings(caught) == []


def test_misspelt_hook_of_an_installed_plugin_warns(install: Install):
    install("sb3-hir-typo", "typo", MISSPELT_SOURCE)
    manager = PluginManager(environ={plugins.LOAD_ENV: "sb3-hir-typo"})
    with pytest.warns(PluginWarning, match=r"plugin 'typo' \(sb3-hir-typo\) defines unknown hook\(s\) "
                                           r"'register_betaschedules'"):
        specs = manager.available("goal_spec")
    assert specs["typo-spec"].plugin == "typo"


def test_misspelt_hook_is_fatal_in_strict_mode():
    manager = _empty_manager(SB3_HIR_STRICT_PLUGINS="1")
    with pytest.raises(PluginError, match=r"'typo'.*'register_betaschedules'") as excinfo:
        manager.register(_Misspelt(), name="typo")
    assert isinstance(excinfo.value.__cause__, pluggy.PluginValidationError)
    assert [info.name for info in manager.plugins()] == []


def test_optional_unknown_hook_is_not_reported():
    class Optional:
        @hookimpl(optionalhook=True)
        def register_future_things(self, register):
            pass

    manager = _empty_manager()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager.register(Optional(), name="optional")
    assert _plugin_warnings(caught) == []


# -- unregistering ----------------------------------------------------------------------------------------------------
def test_module_level_unregister_removes_the_components():
    with plugins.use(_empty_manager()):
        plugins.register(_Half(), name="half")
        assert "always-half" in plugins.available("beta_schedule")
        plugins.unregister("half")
        assert plugins.available("beta_schedule") == {}
        assert plugins.plugins() == []


def test_unregistering_an_installed_plugin_before_any_lookup_sticks():
    manager = PluginManager(environ={plugins.LOAD_ENV: "sb3-hir-example"})
    manager.unregister("example")
    assert "cosine" not in manager.available("beta_schedule")
    assert [info.name for info in manager.plugins()] == ["builtin"]


def test_unregistering_one_provider_settles_a_conflict():
    manager = _empty_manager()
    manager.register(_Half(), name="half")
    manager.register(_Quarter(), name="quarter")
    with pytest.warns(PluginWarning, match="always-half"):
        assert "always-half" not in manager.available("beta_schedule")
    manager.unregister("half")
    assert manager.create("beta_schedule", "always-half")(0) == 0.25
    assert manager.conflicts() == {}


def test_unregistering_an_unknown_name_raises_naming_the_registered_ones():
    manager = _empty_manager()
    manager.register(_Half(), name="half")
    with pytest.raises(PluginError, match="no plugin named 'hlaf' is registered; registered: half"):
        manager.unregister("hlaf")


# -- pytest --sb3-hir-plugins ----------------------------------------------------------------------------------------
PARAMETRIZED_TEST = """
    def test_schedule(sb3_hir_beta_schedule_name):
        pass
"""


def test_unknown_plugin_option_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile(PARAMETRIZED_TEST)
    depth = len(pytest_plugin._allow_lists)
    result = pytester.runpytest("--sb3-hir-plugins", "builtin,sb3-hir-exmaple")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    stderr = result.stderr.str()
    assert "--sb3-hir-plugins names unknown plugin(s) 'sb3-hir-exmaple';" in stderr
    assert "builtin (sb3-hir)" in stderr and "example (sb3-hir-example)" in stderr
    assert len(pytest_plugin._allow_lists) == depth  # the failed run left the outer run's option in place


def test_plugin_option_accepts_entry_point_and_distribution_names(pytester: pytest.Pytester):
    pytester.makepyfile(PARAMETRIZED_TEST)
    result = pytester.runpytest("--sb3-hir-plugins", "builtin, SB3_HIR_EXAMPLE")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    expected = PluginManager(environ={plugins.LOAD_ENV: "sb3-hir-example"}).available("beta_schedule")
    result.assert_outcomes(passed=len(expected))
