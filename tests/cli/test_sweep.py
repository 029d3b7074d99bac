"""``sb3-hir sweep`` on Ray Tune: the option grid, a local sweep, a failing trial, resume, a two-node cluster, the
Optuna search and the missing-extra message (real Ray, tiny budgets)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from sb3_hir import cli
from sb3_hir.cli import sweep
from sb3_hir.cli import train as train_command

TINY = ["--timesteps", "120", "--n-envs", "2", "--eval-episodes", "2", "--eval-freq", "60", "--maze-size", "7",
        "--goals", "2", "--time-limit", "20"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _train_parser():
    return sweep._train_parser(cli.build_parser())


def test_the_grid_is_every_combination_of_the_given_values_times_every_seed():
    args = cli.build_parser().parse_args(["sweep", "--relabel", "some", "none", "--relabel-ratio", "0.5", "0.8",
                                          "--timesteps", "500", "--continuous", "--env-kwarg", "a=1",
                                          "--seeds", "0", "1", "2"])
    values, fixed = sweep.sweep_values(args, _train_parser())
    assert values == {"relabel": ["some", "none"], "relabel_ratio": [0.5, 0.8], "timesteps": [500]}
    assert fixed == ["--continuous", "--env-kwarg", "a=1"]
    grid = sweep.expand_grid(values, args.seeds)
    assert len(grid) == 2 * 2 * 3 and len({json.dumps(t, sort_keys=True) for t in grid}) == 12
    assert grid[0] == {"relabel": "some", "relabel_ratio": 0.5, "timesteps": 500, "seed": 0}
    argv = sweep.train_argv({k: v for k, v in grid[-1].items() if k != "seed"}, fixed, _train_parser())
    parsed = cli.build_parser().parse_args(["train", *argv])
    assert (parsed.relabel, parsed.relabel_ratio, parsed.timesteps, parsed.continuous, parsed.env_kwarg) == (
        ["none"], 0.8, 500, True, ["a=1"])
    assert sweep.configuration(grid[-1], ["relabel", "relabel_ratio"]) == "relabel=none relabel-ratio=0.8"
    assert sweep.expand_grid({}, [3, 3]) == [{"seed": 3}]  # no swept option: one run per distinct seed


def test_the_searched_head_and_features_reach_train_as_their_options():
    """Optuna's q_head and action_features choices reach train as --q-head and --action-features."""
    parser = _train_parser()
    argv = sweep.train_argv({"action_features+q_head": "env+per-action", "history": 8}, [], parser)
    parsed = cli.build_parser().parse_args(["train", *argv])
    assert (parsed.action_features, parsed.q_head, parsed.history) == ("env", "per-action", 8)
    # searched jointly, and every searched pair passes train's checks (per-action always has a table to read)
    for pair in sweep.OPTUNA_SPACE["action_features+q_head"][1]:
        args = cli.build_parser().parse_args(["train", *sweep.train_argv({"action_features+q_head": pair}, [], parser)])
        train_command.check_args(args)


def test_a_given_space_replaces_the_default_and_its_algorithm_keywords_reach_train_as_algo_kwargs():
    parser = _train_parser()
    space = sweep.parse_space(["learning-rate=loguniform:1e-4:1e-3", "n_steps=choice:1,3",
                               "algo.target_update_interval=choice:500,8000", "algo.gamma=uniform:0.9:0.99"], parser)
    assert space == {"learning_rate": ("loguniform", (1e-4, 1e-3)), "n_steps": ("choice", [1, 3]),
                     "algo.target_update_interval": ("choice", [500, 8000]), "algo.gamma": ("uniform", (0.9, 0.99))}
    assert sweep.parse_space([], parser) == sweep.OPTUNA_SPACE
    argv = sweep.train_argv({"learning_rate": 3e-4, "algo.target_update_interval": 8000, "algo.gamma": 0.95},
                            ["--algo-kwarg", "tau=0.5"], parser)
    args = cli.build_parser().parse_args(["train", *argv])
    assert args.learning_rate == 3e-4 and args.algo_kwarg == ["target_update_interval=8000", "gamma=0.95", "tau=0.5"]
    kwargs = train_command.model_kwargs(args, "dqn", "some", None)
    assert (kwargs["target_update_interval"], kwargs["gamma"], kwargs["tau"]) == (8000, 0.95, 0.5)
    edges = sweep.space_samples(space)
    assert {e["algo.target_update_interval"] for e in edges} == {500, 8000}
    assert {e["learning_rate"] for e in edges} == {1e-4, 1e-3}


@pytest.mark.parametrize(("space", "expected"), [
    (["learning-rate=normal:1:2"], "--space takes NAME=loguniform:LOW:HIGH"),
    (["learning-rate=loguniform:0:1"], "loguniform needs finite LOW < HIGH, LOW > 0"),
    (["relabel-ratio=uniform:0.9:0.5"], "uniform needs finite LOW < HIGH"),
    (["relabel-ratio=uniform:a:b"], "uniform takes two numbers"),
    (["seed=choice:1,2"], "'seed' is not a train option a trial can take"),
    (["n-steps=choice:1,,3"], "choice takes values separated by commas, none empty"),
    (["n-steps=choice:1", "n_steps=choice:3"], "--space names 'n_steps' twice"),
    (["algo.target_update=choice:5,10"], "--space algo.target_update=5: --algo-kwarg target_update: not a keyword of"),
    (["algo.tau=choice:soft,hard"], "--algo-kwarg tau must be a number"),
])
def test_a_bad_search_space_is_one_line_before_any_trial(tmp_path, capsys, space, expected):
    out = tmp_path / "x"
    argv = ["sweep", *TINY, "--search", "optuna", "--out", str(out)]
    assert cli.main([*argv, *(arg for item in space for arg in ("--space", item))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert not out.exists()


def test_a_space_with_a_fixed_algo_kwarg_of_the_same_key_or_without_optuna_is_refused(capsys):
    assert cli.main(["sweep", *TINY, "--search", "optuna", "--algo-kwarg", "gamma=0.9", "--space",
                     "algo.gamma=uniform:0.9:0.99"]) == 2
    assert "--algo-kwarg fixes gamma, which --space searches" in capsys.readouterr().err
    assert cli.main(["sweep", *TINY, "--space", "learning-rate=loguniform:1e-4:1e-3"]) == 2
    assert "--space is the search space of --search optuna" in capsys.readouterr().err


@pytest.mark.ray
def test_a_local_sweep_writes_each_trial_s_run_and_the_summary(tmp_path, shared_ray):
    out = tmp_path / "sweep"
    # 130 steps: evaluations at 60 and 120, and the final one when training ends
    assert cli.main(["sweep", *TINY, "--timesteps", "130", "--relabel", "some", "--seeds", "0", "1", "--out",
                     str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    [row] = results["configurations"]
    assert row["seeds"] == [0, 1] and len(row["runs"]) == 2 and results["failed"] == []
    runs = sorted((out / "runs").glob("*/dqn-some/model.zip"))
    assert len(runs) == 2  # the run directory train writes, once per trial
    for trial_run in (out / "runs").iterdir():
        assert json.loads((trial_run / "dqn-some" / "run.json").read_text())["seed"] in (0, 1)
    mean = sum(r["goals_reached"] for r in row["runs"]) / 2
    assert row["goals_reached"][0] == pytest.approx(mean)
    for run in row["runs"]:  # the sweep reports each trial's final evaluation, the one its train run ends with
        [trial_run] = list((out / "runs").glob(f"seed{run['seed']}-*"))
        final = json.loads((trial_run / "results.json").read_text())[0]
        assert (run["goals_reached"], run["success_rate"]) == (final["goals_reached"], final["success_rate"])
    assert "| default" in (out / "results.md").read_text()
    assert (out / "learning_curve.png").stat().st_size > 1000


@pytest.mark.ray
def test_an_interrupted_sweep_resumes_without_rerunning_finished_trials(tmp_path):
    out = tmp_path / "sweep"
    argv = [sys.executable, "-m", "sb3_hir.cli", "sweep", *TINY, "--relabel", "some", "none", "--seeds", "0", "1",
            "--max-concurrent", "1", "--out", str(out)]
    # Ctrl-C as in a terminal, even when the tests run as a background job (SIGINT ignored, inherited).
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    while time.time() < deadline and not list((out / "runs").glob(f"*/{sweep.EVALUATIONS}")):
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=240)
    finished = {p.parent.name: (p.parent / "results.json").stat().st_mtime_ns
                for p in (out / "runs").glob(f"*/{sweep.EVALUATIONS}")}
    assert 1 <= len(finished) < 4
    resumed = subprocess.run([*argv[:3], "sweep", "--resume", "--out", str(out)], capture_output=True, text=True,
                             env=ENV, timeout=400)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    runs = [(r["configuration"], run["seed"]) for r in results["configurations"] for run in r["runs"]]
    assert sorted(runs) == sorted({(c, s) for c in ("relabel=some", "relabel=none") for s in (0, 1)})  # once each
    assert len(list((out / "runs").glob("*/results.json"))) == 4
    for name, mtime in finished.items():  # the trials finished before the interrupt were not run again
        assert (out / "runs" / name / "results.json").stat().st_mtime_ns == mtime


@pytest.mark.ray
def test_trials_run_on_both_nodes_of_a_two_node_cluster(tmp_path, no_ray):
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        out = tmp_path / "sweep"
        assert cli.main(["sweep", *TINY, "--relabel", "some", "--seeds", "0", "1", "--address", cluster.address,
                         "--out", str(out)]) == 0
    finally:
        cluster.shutdown()
    [row] = json.loads((out / "results.json").read_text())["configurations"]
    assert sorted(run["seed"] for run in row["runs"]) == [0, 1]
    assert len({run["node"] for run in row["runs"]}) == 2  # one trial per node, results complete


@pytest.mark.ray
def test_optuna_search_writes_the_best_configuration_as_a_train_command(tmp_path, shared_ray):
    out = tmp_path / "search"
    assert cli.main(["sweep", *TINY, "--search", "optuna", "--trials", "2", "--out", str(out)]) == 0
    best = (out / "best.txt").read_text().strip()
    assert best.startswith("sb3-hir train ")
    parsed = cli.build_parser().parse_args(best.split()[1:])
    assert parsed.learning_rate is not None and 1e-4 <= parsed.learning_rate <= 3e-3
    assert parsed.relabel[0] in ("some", "all") and parsed.n_steps in (1, 3) and parsed.hidden in (64, 128, 256)
    assert parsed.history in (0, 8, 16, 32)
    assert (parsed.q_head == "standard" or parsed.action_features != "none") and parsed.action_features in (
        "none", "effects", "env")
    assert len(json.loads((out / "results.json").read_text())["configurations"]) == 2


@pytest.mark.ray
def test_optuna_search_over_a_given_space_trains_with_its_algorithm_keywords(tmp_path, shared_ray):
    out = tmp_path / "space"
    assert cli.main(["sweep", *TINY, "--relabel", "some", "--search", "optuna", "--trials", "2", "--space",
                     "algo.target_update_interval=choice:50,70", "--space", "algo.gamma=uniform:0.9:0.95",
                     "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["swept"] == ["algo.target_update_interval", "algo.gamma"]
    assert len(results["configurations"]) == 2 and len(list((out / "runs").glob("seed0-*/dqn-some"))) == 2
    for row in results["configurations"]:  # "algo.target-update-interval=70 algo.gamma=0.93..."
        shown = dict(item.split("=") for item in row["configuration"].split())
        assert shown["algo.target-update-interval"] in ("50", "70") and 0.9 <= float(shown["algo.gamma"]) <= 0.95
    best = cli.build_parser().parse_args((out / "best.txt").read_text().split()[1:])
    kwargs = train_command.model_kwargs(best, "dqn", "some", None)
    assert kwargs["target_update_interval"] in (50, 70) and 0.9 <= kwargs["gamma"] <= 0.95


def test_bad_sweep_input_is_one_line(tmp_path, capsys):
    assert cli.main(["sweep", *TINY, "--search", "optuna", "--relabel-ratio", "0.5"]) == 2
    assert "--search optuna searches learning_rate" in capsys.readouterr().err
    assert cli.main(["sweep", *TINY, "--search", "optuna", "--q-head", "per-action"]) == 2
    assert "drop --q-head" in capsys.readouterr().err
    assert cli.main(["sweep", *TINY, "--resume"]) == 2
    assert "--resume needs --out DIR" in capsys.readouterr().err
    assert cli.main(["sweep", *TINY, "--timesteps", "100", "0", "--out", str(tmp_path / "x")]) == 2
    assert "timesteps=0: --timesteps must be an int >= 1" in capsys.readouterr().err
    assert cli.main(["sweep", *TINY, "--algo", "dqn", "ddpg", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown algorithm 'ddpg'; choose from: dqn" in err[0]
    assert not (tmp_path / "x").exists()  # refused before any directory or trial


def test_without_the_sweep_extra_it_is_one_line():
    code = (
        "import importlib.abc, importlib.util, sys\n"
        "class _Absent(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'ray':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Absent())\n"
        "importlib.util.find_spec = (lambda f: lambda name, *a: None if name.split('.')[0] == 'ray' "
        "else f(name, *a))(importlib.util.find_spec)\n"
        "from sb3_hir.cli import main\n"
        "sys.exit(main(['sweep', '--relabel', 'some', 'none']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "sb3-hir sweep: error: sb3-hir sweep needs ray, which is not installed: pip install 'sb3-hir[sweep]'")
