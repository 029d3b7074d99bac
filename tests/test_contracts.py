"""sb3-hir's own components, and every installed package under ``plugins/``, pass ``sb3_hir.testing``'s checks.

This is the regression suite a user would write for their own env or plugin, run on sb3-hir itself. The
``sb3_hir_*_name`` arguments come from sb3-hir's pytest plugin: each test runs once per registered component of
that kind (``--sb3-hir-plugins`` restricts them), so a newly installed plugin is covered without editing this file.
"""

from __future__ import annotations

import importlib.metadata as importlib_metadata
import re
from pathlib import Path

import pytest

from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.relabel import HindsightInstructionRelabeler
from sb3_hir.testing import (
    NEVER_LOWERS_RETURN,
    check_beta_schedule,
    check_expert,
    check_goal_spec,
    check_instruction_env,
    check_plugin,
    check_relabeler,
    promises_non_decreasing_return,
)

ROOT = Path(__file__).resolve().parents[1]

#: Small mazes and short episodes keep the whole file to seconds; goals are still reached by random walks.
MAZERUNNERS: dict[str, dict[str, object]] = {
    "discrete": {"maze_dim": 7, "num_goals": 3, "time_limit": 60},
    "continuous": {"maze_dim": 7, "num_goals": 3, "time_limit": 60, "continuous": True},
    "randomized-actions": {"maze_dim": 7, "num_goals": 3, "time_limit": 60, "randomized_actions": True},
}


def _distribution_name(pyproject: Path) -> str:
    match = re.search(r'^name\s*=\s*"([^"]+)"', pyproject.read_text(), flags=re.MULTILINE)
    assert match, f"{pyproject} has no [project] name"
    return match.group(1)


def _installed(distribution: str) -> bool:
    try:
        importlib_metadata.distribution(distribution)
    except importlib_metadata.PackageNotFoundError:
        return False
    return True


#: Every package under plugins/. The example is installed wherever sb3-hir's tests run (it is the template and
#: test_plugins relies on it); the others, e.g. sb3-hir-robotics, are checked wherever they are installed.
PLUGIN_PACKAGES = sorted(_distribution_name(path) for path in ROOT.glob("plugins/*/pyproject.toml"))
CHECKED_DISTRIBUTIONS = ["sb3-hir", *(name for name in PLUGIN_PACKAGES if _installed(name))]


def test_the_example_plugin_is_installed_and_checked():
    assert "sb3-hir-example" in PLUGIN_PACKAGES
    assert "sb3-hir-example" in CHECKED_DISTRIBUTIONS, "pip install -e plugins/sb3-hir-example"


@pytest.mark.parametrize("distribution", CHECKED_DISTRIBUTIONS)
def test_every_plugin_passes_check_plugin(distribution):
    check_plugin(distribution)


# ---------------------------------------------------------------------------------------------- envs
@pytest.mark.parametrize("variant", MAZERUNNERS)
def test_mazerunner_keeps_the_instruction_env_contract(variant):
    check_instruction_env(MazeRunnerEnv(**MAZERUNNERS[variant]), n_episodes=5, seed=0)


def test_every_registered_env_keeps_the_instruction_env_contract(sb3_hir_env_name):
    # Built with its defaults: MazeRunner 11x11 and, when sb3-hir-robotics is installed, its instruction envs.
    check_instruction_env(sb3_hir_env_name, n_episodes=2, seed=1)


# ---------------------------------------------------------------------------------------------- relabelers
@pytest.mark.parametrize("variant", ["discrete", "continuous"])
def test_every_relabeler_keeps_its_invariants(sb3_hir_relabeler_name, variant):
    check_relabeler(sb3_hir_relabeler_name, MazeRunnerEnv(**MAZERUNNERS[variant]), n_episodes=5, seed=0)


@pytest.mark.parametrize("strategy", ["some", "all", "none"])
def test_hindsight_instruction_relabeling_never_lowers_returns(strategy):
    relabeler = HindsightInstructionRelabeler(3, strategy=strategy)
    # Every HIR strategy keeps the goals really reached and only adds achieved ones after them.
    assert getattr(relabeler, NEVER_LOWERS_RETURN) is True
    assert promises_non_decreasing_return(relabeler)
    check_relabeler(relabeler, MazeRunnerEnv(**MAZERUNNERS["discrete"]), n_episodes=8, seed=10, n_relabels=4)


# ---------------------------------------------------------------------------------------------- the other kinds
def test_every_goal_spec_keeps_its_contract(sb3_hir_goal_spec_name):
    check_goal_spec(sb3_hir_goal_spec_name)


def test_every_beta_schedule_stays_in_the_unit_interval(sb3_hir_beta_schedule_name):
    check_beta_schedule(sb3_hir_beta_schedule_name, rounds=60)


@pytest.mark.dagger
@pytest.mark.parametrize(("name", "kwargs"), [("linear", {"rampdown_rounds": 3}),
                                              ("exponential", {"decay_probability": 0.9})])
def test_builtin_beta_schedules_with_non_default_parameters(name, kwargs):
    from sb3_hir import plugins

    check_beta_schedule(plugins.create("beta_schedule", name, **kwargs), rounds=20)


@pytest.mark.parametrize("variant", ["discrete", "continuous", "randomized-actions"])
def test_shortest_path_expert_solves_every_episode(variant):
    check_expert("shortest-path", MazeRunnerEnv(**MAZERUNNERS[variant]), n_steps=150, seed=0, min_success_rate=1.0)
