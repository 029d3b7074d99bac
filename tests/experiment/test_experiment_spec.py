"""run_benchmark: every (seed, side) of a spec runs once, here or as Ray trials, into records and progress lines."""

from __future__ import annotations

from typing import Any

import pytest
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env

from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.experiment import BenchmarkSpec, BudgetCallback, instruction_evaluator, run_benchmark, timed_run
from sb3_hir.experiment.runner import run_all, run_as_trials
from sb3_hir.extras import has

ENV_KWARGS = dict(maze_dim=7, num_goals=2, time_limit=20)


def train(config: dict[str, Any]) -> dict[int, dict[str, float]]:
    """A real, tiny DQN run; side "slow" learns with a lower learning rate (a difference the records must keep)."""
    env = make_vec_env(MazeRunnerEnv, n_envs=2, seed=config["seed"], env_kwargs=ENV_KWARGS)
    model = DQN("MultiInputPolicy", env, learning_starts=20, buffer_size=1_000, seed=config["seed"],
                learning_rate=1e-5 if config["side"] == "slow" else 1e-3)
    evaluate = instruction_evaluator(
        lambda: make_vec_env(MazeRunnerEnv, n_envs=2, seed=100, env_kwargs=ENV_KWARGS), 2, 100)
    callback = BudgetCallback(config["budgets"], lambda m: {**evaluate(m), "steps": m.num_timesteps})
    model.learn(config["budgets"][-1], callback=callback)
    return callback.results


def run(config: dict[str, Any]) -> dict[str, Any]:
    return timed_run(train, config)


def spec() -> BenchmarkSpec:
    return BenchmarkSpec(name="tiny", env="MazeRunner 7x7", algorithm="DQN", sides=["fast", "slow"], seeds=[0, 1],
                         budgets=[40, 20], buffer={"relabel_ratio": 0.8})


def test_the_configs_are_seed_major_with_sorted_budgets():
    configs = spec().configs({"lr": 1})
    assert [(c["seed"], c["side"]) for c in configs] == [(0, "fast"), (0, "slow"), (1, "fast"), (1, "slow")]
    assert all(c["budgets"] == [20, 40] and c["options"] == {"lr": 1} for c in configs)
    assert configs[0]["buffer"] == {"relabel_ratio": 0.8}


def test_a_local_benchmark_records_every_run_at_every_budget(capsys):
    records = run_benchmark(spec(), run, {"lr": 1}, command="python tiny.py")
    assert len(records.records) == 2 * 2 * 2
    assert [(r.seed, r.side, r.budget) for r in records.records][:4] == [(0, "fast", 20), (0, "fast", 40),
                                                                       (0, "slow", 20), (0, "slow", 40)]
    assert all(r.metrics["steps"] == r.budget for r in records.records)
    assert all(r.seconds is not None and r.seconds > 0 for r in records.records)
    assert records.command == "python tiny.py" and records.options == {"lr": 1}
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("  seed 0 fast     goals/success at budgets 20:")


def double(config: dict[str, Any]) -> dict[str, Any]:
    if config["x"] < 0:
        raise ValueError(f"negative x {config['x']}")
    return {"y": 2 * config["x"]}


def test_run_all_keeps_the_order_of_the_configs():
    assert list(run_all(double, [dict(x=3), dict(x=1)], use_ray=False)) == [{"y": 6}, {"y": 2}]


@pytest.mark.ray
@pytest.mark.once("current")  # its Ray trials in the current profile, the sweeps' in the dagger one
@pytest.mark.skipif(not has("ray"), reason="Ray is the 'sweep' extra")
def test_ray_trials_return_in_config_order_and_a_failure_names_its_config():
    with pytest.raises(RuntimeError, match=r"1 of 3 Ray Tune trials failed:\n  config 1 \{'x': -1\}: .*negative x -1"):
        run_as_trials(double, [dict(x=3), dict(x=-1), dict(x=2)], cpus_per_trial=0.5)
    assert run_as_trials(double, [dict(x=3), dict(x=1), dict(x=2)], cpus_per_trial=0.5) == [{"y": 6}, {"y": 2},
                                                                                           {"y": 4}]


def test_run_as_trials_refuses_a_function_workers_cannot_import():
    def local(config: dict[str, Any]) -> dict[str, Any]:
        return config

    with pytest.raises(ValueError, match="module-level function"):
        run_as_trials(local, [{}])
