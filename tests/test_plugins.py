"""The plugin system: real entry-point discovery, isolation of broken plugins, allow/block lists and errors."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from sb3_hir import hookimpl, plugins, resolvers
from sb3_hir.hookspecs import HOOKS
from sb3_hir.plugins import (
    DuplicateComponentError,
    PluginError,
    PluginManager,
    PluginWarning,
    UnknownComponentError,
)

ROOT = Path(__file__).resolve().parents[1]


class _Schedules:
    @hookimpl
    def register_beta_schedules(self, register):
        register("always-half", lambda: (lambda round_num: 0.5), description="beta = 0.5")


class _ClashingSchedules:
    @hookimpl
    def register_beta_schedules(self, register):
        register("always-half", lambda: (lambda round_num: 0.25))


class _BrokenHook:
    @hookimpl
    def register_goal_specs(self, register):
        register("half-registered", object)
        raise RuntimeError("boom in hook")


def _empty_manager() -> PluginManager:
    return PluginManager(load_entrypoints=False, environ={})


# -- discovery through installed entry-point metadata --------------------------------------------------------------
@pytest.mark.dagger
def test_builtin_and_example_plugins_are_discovered_from_entry_points():
    infos = {info.name: info for info in plugins.plugins()}
    assert infos["builtin"].distribution == "sb3-hir"
    assert not infos["builtin"].broken, infos["builtin"].error
    assert infos["example"].distribution == "sb3-hir-example"
    assert infos["example"].components == {"relabeler": ("final-goal",), "beta_schedule": ("cosine",),
                                           "draw_strategy": ("near-future",)}
    schedules = plugins.available("beta_schedule")
    assert {"linear", "exponential", "cosine"} <= set(schedules)
    assert schedules["cosine"].plugin == "example"
    assert schedules["linear"].plugin == "builtin"


@pytest.mark.dagger
def test_cli_plugins_json_lists_builtin_and_example_components():
    out = subprocess.run([sys.executable, "-m", "sb3_hir.cli", "plugins", "--json"], capture_output=True,
                         text=True, check=True).stdout
    payload = json.loads(out)
    by_name = {p["name"]: p for p in payload["plugins"]}
    assert set(by_name["builtin"]["components"]) == set(HOOKS)
    assert by_name["example"]["components"]["beta_schedule"] == ["cosine"]
    assert by_name["example"]["version"] == "0.1.0"
    assert payload["broken"] == []


def test_manager_loads_lazily_and_once():
    manager = PluginManager(environ={})
    assert not manager._entrypoints_loaded
    first = manager.available("goal_spec")
    assert manager._entrypoints_loaded
    assert manager.available("goal_spec").keys() == first.keys()
    assert manager.get("goal_spec", "exact") is first["exact"].factory


# -- allow-list and block-list -------------------------------------------------------------------------------------
@pytest.mark.dagger
def test_empty_allow_list_loads_builtin_only():
    manager = PluginManager(environ={"SB3_HIR_LOAD_PLUGINS": ""})
    assert [info.name for info in manager.plugins()] == ["builtin"]
    assert "cosine" not in manager.available("beta_schedule")
    assert "linear" in manager.available("beta_schedule")


@pytest.mark.parametrize("allowed", ["sb3-hir-example", "sb3_hir_example", "example"])
def test_allow_list_matches_distribution_or_entry_point_name(allowed):
    manager = PluginManager(environ={"SB3_HIR_LOAD_PLUGINS": f"something-else, {allowed}"})
    with pytest.warns(PluginWarning, match=r"unknown plugin.*'something-else'"):
        assert "cosine" in manager.available("beta_schedule")


def test_block_list_skips_a_plugin_but_never_the_builtin():
    manager = PluginManager(environ={"SB3_HIR_BLOCK_PLUGINS": "sb3-hir-example, sb3-hir"})
    names = [info.name for info in manager.plugins()]
    assert "builtin" in names
    assert "example" not in names
    assert "cosine" not in manager.available("beta_schedule")


# -- errors ----------------------------------------------------------------------------------------------------------
@pytest.mark.dagger
def test_unknown_name_lists_available_names_and_providers():
    with pytest.raises(UnknownComponentError) as excinfo:
        plugins.create("beta_schedule", "no-such-schedule")
    message = str(excinfo.value)
    assert "no-such-schedule" in message
    assert "'linear' (from builtin)" in message
    assert "'cosine' (from example)" in message
    assert isinstance(excinfo.value, LookupError)


def test_unknown_kind_names_the_accepted_kinds():
    with pytest.raises(ValueError, match="kind must be one of 'relabeler', 'goal_spec', 'env'"):
        plugins.available("relabelers")


def test_duplicate_names_from_two_plugins_name_both():
    manager = _empty_manager()
    manager.register(_Schedules(), name="first")
    manager.register(_ClashingSchedules(), name="second")
    with pytest.warns(PluginWarning, match=r"'always-half'.*'first'.*'second'"):
        assert manager.available("beta_schedule") == {}
    with pytest.raises(DuplicateComponentError, match=r"'always-half'.*'first'.*'second'"):
        manager.get("beta_schedule", "always-half")


def test_broken_hook_is_isolated_and_its_partial_registrations_dropped():
    manager = _empty_manager()
    manager.register(_Schedules(), name="good")
    manager.register(_BrokenHook(), name="bad")
    with pytest.warns(PluginWarning, match="'bad'.*boom in hook"):
        goal_specs = manager.available("goal_spec")
    assert "half-registered" not in goal_specs
    assert manager.create("beta_schedule", "always-half")(3) == 0.5
    broken = {info.name: info for info in manager.broken()}
    assert "boom in hook" in broken["bad"].error
    with pytest.raises(UnknownComponentError, match="broken plugins: bad"):
        manager.get("goal_spec", "half-registered")


def test_strict_mode_reraises_a_broken_hook():
    manager = PluginManager(load_entrypoints=False, environ={"SB3_HIR_STRICT_PLUGINS": "1"})
    manager.register(_BrokenHook(), name="bad")
    with pytest.raises(PluginError, match=r"'bad'.*boom in hook") as excinfo:
        manager.available("goal_spec")
    assert isinstance(excinfo.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("name", "factory", "error"),
    [("", object, "non-empty string"), (" padded", object, "non-empty string"), ("ok", 42, "callable")],
)
def test_bad_registrations_break_only_their_plugin(name, factory, error):
    class Bad:
        @hookimpl
        def register_envs(self, register):
            register(name, factory)

    manager = _empty_manager()
    manager.register(Bad(), name="bad")
    manager.register(_Schedules(), name="good")
    with pytest.warns(PluginWarning, match=error):
        assert manager.available("env") == {}
    assert "always-half" in manager.available("beta_schedule")


@pytest.mark.dagger
def test_use_swaps_the_process_wide_manager_and_restores_it():
    outer = plugins.get_plugin_manager()
    inner = _empty_manager()
    inner.register(_Schedules(), name="only")
    with plugins.use(inner):
        assert list(plugins.available("beta_schedule")) == ["always-half"]
    assert plugins.get_plugin_manager() is outer
    assert "linear" in plugins.available("beta_schedule")


@pytest.mark.dagger
def test_resolver_creates_by_name_passes_instances_through_and_checks_the_protocol():
    schedule = resolvers.resolve_beta_schedule("linear", rampdown_rounds=4)
    assert schedule(0) == 1.0 and schedule(2) == 0.5 and schedule(9) == 0.0
    assert resolvers.resolve_beta_schedule(schedule) is schedule
    with pytest.raises(ValueError, match=r"^beta_schedule must be a beta-schedule plugin .*; got 0\.5, which lacks"):
        resolvers.resolve_beta_schedule(0.5)
    with pytest.raises(resolvers.UnknownComponentArgument, match=r"^schedule: unknown beta_schedule 'nope'") as info:
        resolvers.resolve_beta_schedule("nope", argument="schedule")
    assert isinstance(info.value, ValueError) and isinstance(info.value, UnknownComponentError)


# -- a broken plugin installed for real (a dist-info on sys.path, no monkeypatching) ----------------------------------
@pytest.fixture
def broken_distribution(tmp_path: Path) -> Path:
    dist_info = tmp_path / "sb3_hir_broken-0.0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: sb3-hir-broken\nVersion: 0.0.1\n")
    (dist_info / "entry_points.txt").write_text("[sb3_hir]\nbroken = sb3_hir_broken\n")
    (tmp_path / "sb3_hir_broken.py").write_text("raise ImportError('sb3_hir_broken cannot import on purpose')\n")
    return tmp_path


def _run_cli(path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(path), **env}
    return subprocess.run([sys.executable, "-m", "sb3_hir.cli", "plugins", "--json"], capture_output=True,
                          text=True, env=environ)


def test_installed_broken_plugin_is_listed_and_others_keep_working(broken_distribution):
    result = _run_cli(broken_distribution)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    broken = {p["name"]: p for p in payload["broken"]}
    assert broken["broken"]["distribution"] == "sb3-hir-broken"
    assert "cannot import on purpose" in broken["broken"]["error"]
    loaded = {p["name"] for p in payload["plugins"]}
    assert {"builtin", "example"} <= loaded


def test_installed_broken_plugin_raises_in_strict_mode(broken_distribution):
    result = _run_cli(broken_distribution, SB3_HIR_STRICT_PLUGINS="1")
    assert result.returncode != 0
    assert "PluginError" in result.stderr and "cannot import on purpose" in result.stderr


def test_installed_broken_plugin_is_skipped_when_not_allowed(broken_distribution):
    result = _run_cli(broken_distribution, SB3_HIR_LOAD_PLUGINS="sb3-hir-example")
    payload = json.loads(result.stdout)
    assert payload["broken"] == []


# -- one test per hook (test_hook_<hook name>), and every hook documented ----------------------------------------------
@pytest.mark.dagger
def test_hook_register_beta_schedules():
    linear = plugins.create("beta_schedule", "linear", rampdown_rounds=2)
    exponential = plugins.create("beta_schedule", "exponential", decay_probability=0.5)
    assert [linear(r) for r in range(4)] == [1.0, 0.5, 0.0, 0.0]
    assert [exponential(r) for r in range(3)] == [1.0, 0.5, 0.25]
    cosine = plugins.create("beta_schedule", "cosine", rampdown_rounds=2)
    assert cosine(0) == pytest.approx(1.0) and cosine(1) == pytest.approx(0.5) and cosine(5) == 0.0
    with pytest.raises(ValueError, match="rampdown_rounds"):
        plugins.create("beta_schedule", "linear", rampdown_rounds=0)


def test_hook_register_goal_specs():
    exact = plugins.create("goal_spec", "exact")
    assert exact.reached(np.array([[1, 2], [1, 3]]), np.array([1, 2])).tolist() == [True, False]
    tolerance = plugins.create("goal_spec", "tolerance", tolerance=0.5)
    assert tolerance.reached(np.array([[0.0, 0.4], [0.0, 0.6]]), np.zeros(2)).tolist() == [True, False]


def test_hook_register_relabelers():
    available = plugins.available("relabeler")
    assert available["hindsight-instruction"].plugin == "builtin"
    assert available["final-goal"].plugin == "example"
    relabeler = plugins.create("relabeler", "hindsight-instruction", num_goals=2, strategy="all")
    assert relabeler.num_goals == 2


def test_hook_register_envs():
    env = plugins.create("env", "mazerunner", maze_dim=7, num_goals=2)
    obs, _ = env.reset(seed=0)
    assert obs["goals"].shape == (2, 2)
    env.close()


def test_hook_register_experts():
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: plugins.create("env", "mazerunner", maze_dim=7, num_goals=2)])
    venv.seed(0)
    obs = venv.reset()
    expert = plugins.create("expert", "shortest-path", venv=venv)
    actions, _ = expert.predict(obs)
    assert actions.shape == (1,)
    assert venv.action_space.contains(int(actions[0]))


def test_hook_register_draw_strategies():
    from sb3_hir.buffers.draws import FirstReachDraw

    available = plugins.available("draw_strategy")
    assert available["first-reach"].plugin == "builtin"
    assert available["near-future"].plugin == "example"
    assert isinstance(plugins.create("draw_strategy", "first-reach"), FirstReachDraw)
    assert plugins.create("draw_strategy", "stored", draws_per_episode=2).draws_per_episode == 2


def test_every_hook_has_a_test_and_documentation():
    defined: set[str] = set()
    # every folder of the core's suite (tests/buffers/, tests/testing/, ...), not plugins/*/tests: those test a
    # plugin's components with that plugin, and the core's `pytest` does not run them
    for path in (ROOT / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text())
        defined |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    guide = (ROOT / "docs" / "guide" / "plugins.md").read_text()
    for hook in HOOKS.values():
        assert f"test_hook_{hook}" in defined, f"hook {hook} has no test_hook_{hook}"
        assert f"`{hook}" in guide, f"hook {hook} is not documented in docs/guide/plugins.md"


def test_plugin_warning_names_the_strict_variable():
    manager = _empty_manager()
    manager.register(_BrokenHook(), name="bad")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager.available("goal_spec")
    assert any("SB3_HIR_STRICT_PLUGINS=1" in str(w.message) for w in caught)


def test_example_plugin_readme_is_a_template():
    readme = (ROOT / "plugins" / "sb3-hir-example" / "README.md").read_text()
    assert "[project.entry-points.sb3_hir]" in readme
    assert textwrap.dedent("pip install") in readme
