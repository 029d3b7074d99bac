"""The ``sb3-hir`` train / dagger / render commands on tiny budgets, and their one-line errors on bad input.

The main-path commands run as real subprocesses (``python -m sb3_hir.cli``), as a user runs them; the other
algorithms and the error messages run in-process through :func:`sb3_hir.cli.main`, which is the same code
without paying for a fresh interpreter each time.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import forked
import numpy as np
import pytest
from PIL import Image

from sb3_hir import cli
from sb3_hir.cli import common
from sb3_hir.cli import train as train_command

# One profile runs these (tests/conftest.py): the command line's layer does not change with the profile.
pytestmark = pytest.mark.once("current")

TINY_ENV = ["--maze-size", "7", "--goals", "2", "--time-limit", "20"]
TINY_TRAIN = ["--timesteps", "240", "--n-envs", "2", "--eval-episodes", "2", "--eval-freq", "100", *TINY_ENV]

#: Small networks on shared cores: one torch thread each, as the CLI uses.
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return forked.run([sys.executable, "-m", "sb3_hir.cli", *args], cwd=cwd, env=ENV, timeout=300)


def eval_rows(progress_csv: Path) -> list[dict[str, str]]:
    with open(progress_csv, newline="") as f:
        return [row for row in csv.DictReader(f) if row.get("eval/success_rate")]


def assert_png(path: Path) -> None:
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.width > 50 and image.height > 50


@pytest.fixture(scope="module")
def train_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The default comparison (DQN, relabel some vs none) on a tiny budget, progress bar on."""
    out = tmp_path_factory.mktemp("train") / "run"
    proc = run_cli("train", *TINY_TRAIN, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_train_compares_some_and_none_and_prints_the_table(train_run):
    out, proc = train_run
    table = [line for line in proc.stdout.splitlines() if line.startswith("| dqn-")]
    assert [line.split("|")[1].strip() for line in table] == ["dqn-some", "dqn-none"]
    assert (out / "results.md").read_text().count("| dqn-") == 2
    results = json.loads((out / "results.json").read_text())
    assert [r["relabel"] for r in results] == ["some", "none"]
    for r in results:
        assert 0.0 <= r["success_rate"] <= r["best_success_rate"] <= 1.0
        assert 0.0 <= r["goals_reached"] <= 2.0
        assert r["timesteps"] == 240
    assert_png(out / "learning_curve.png")


@pytest.mark.parametrize("relabel", ["some", "none"])
def test_train_run_directory_holds_logs_model_and_pictures(train_run, relabel):
    from stable_baselines3 import DQN
    from stable_baselines3.common.buffers import DictReplayBuffer

    from sb3_hir.buffers import HindsightInstructionReplayBuffer
    from sb3_hir.envs import MazeRunnerEnv
    from sb3_hir.history import HistoryWrapper

    run_dir = train_run[0] / f"dqn-{relabel}"
    rows = eval_rows(run_dir / "progress.csv")
    # Evaluated before training, every 100 steps, and at the end.
    steps = [int(float(row["time/total_timesteps"])) for row in rows]
    assert steps[0] == 0 and steps[-1] == 240 and len(steps) >= 3
    for row in rows:
        assert 0.0 <= float(row["eval/success_rate"]) <= 1.0
        assert 0.0 <= float(row["eval/goals_reached"]) <= 2.0
    assert list(run_dir.glob("events.out.tfevents.*")), "no TensorBoard event file"
    assert_png(run_dir / "learning_curve.png")
    assert_png(run_dir / "episode.png")
    with Image.open(run_dir / "episode.gif") as gif:
        assert gif.format == "GIF"
        # Pillow merges repeated frames and adds up their durations: 125 ms a step, the last frame held 2 s.
        total_ms = 0
        for index in range(gif.n_frames):
            gif.seek(index)
            total_ms += gif.info["duration"]
        assert 125 * 1 + 2000 <= total_ms <= 125 * 20 + 2000

    model = DQN.load(run_dir / "model.zip", device="cpu")
    expected = HindsightInstructionReplayBuffer if relabel == "some" else DictReplayBuffer
    assert model.replay_buffer_class is expected
    run = json.loads((run_dir / "run.json").read_text())
    assert run["history"] == cli.TRAIN_HISTORY == 16  # memory by default
    env = HistoryWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=20), length=run["history"])
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(int(action))
    with pytest.raises(ValueError, match="HistoryWrapper"):  # a plain env: told what to wrap it in
        model.predict(MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=20).reset(seed=0)[0])
    assert run["algo"] == "dqn" and run["relabel"] == relabel
    assert run["env_kwargs"] == dict(maze_dim=7, num_goals=2, time_limit=20, randomized_actions=False,
                                     continuous=False)


def test_render_draws_an_episode_of_a_saved_model(train_run, tmp_path, capsys):
    model = train_run[0] / "dqn-some" / "model.zip"
    out = tmp_path / "ep.png"
    assert cli.main(["render", str(model), "--seed", "3", "--out", str(out)]) == 0
    assert_png(out)
    assert not out.with_suffix(".gif").exists()
    # The episode ran in the run's env (time limit 20, from run.json), so it lasted at most 20 steps.
    stdout = capsys.readouterr().out
    steps = int(stdout.split(" steps")[0].rsplit(" ", 1)[-1])
    assert 1 <= steps <= 20


@pytest.mark.dagger
def test_dagger_writes_rounds_demos_and_table(tmp_path):
    from sb3_hir.dagger import load_round_dir

    out = tmp_path / "dagger"
    proc = run_cli("dagger", "--rounds", "2", "--steps-per-round", "120", "--n-envs", "2", "--eval-episodes", "2",
                   "--batch-size", "32", "--bc-epochs", "1", *TINY_ENV, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    with open(out / "rounds.csv", newline="") as f:
        rounds = list(csv.DictReader(f))
    assert [int(r["round"]) for r in rounds] == [0, 1]
    # The default schedule is "exponential": beta = 0.5 ** round.
    assert [float(r["beta"]) for r in rounds] == [1.0, 0.5]
    for r in rounds:
        assert 0.0 <= float(r["success_rate"]) <= 1.0
        demos = load_round_dir(out / "demos" / f"round-{int(r['round']):03d}")
        assert sum(len(t) for t in demos) == int(r["timesteps"]) >= 120
    assert float(rounds[0]["learner_share"]) == 0.0  # beta 1: the expert drove every step
    assert (out / "checkpoint-latest.json").is_file()
    assert_png(out / "learning_curve.png")
    assert_png(out / "episode.png")
    assert "expert (shortest-path): success rate 1.00" in (out / "rounds.md").read_text()
    assert sum(line.startswith("| ") for line in proc.stdout.splitlines()) == 3  # header + 2 rounds


TINY_DAGGER = ["--steps-per-round", "120", "--n-envs", "2", "--eval-episodes", "2", "--batch-size", "32",
               "--bc-epochs", "1", "--no-progress", *TINY_ENV]


def kill_cli_when(ready: Callable[[], bool], *args: str) -> None:
    """Run ``sb3-hir *args`` and SIGKILL it as soon as ``ready()``."""
    proc = subprocess.Popen([sys.executable, "-m", "sb3_hir.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=ENV)
    try:
        deadline = time.monotonic() + 240
        while not ready():
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the run never got there"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.dagger
def test_dagger_refuses_a_non_empty_out_in_one_line_and_resume_continues_a_killed_run(tmp_path, capsys):
    from sb3_hir.dagger import round_files

    out = tmp_path / "dagger"
    # killed once two rounds are done (checkpoints are named by the next round)
    kill_cli_when(lambda: (out / "checkpoint-002.json").exists(), "dagger", "--rounds", "3", *TINY_DAGGER,
                  "--out", str(out))
    with open(out / "rounds.csv", newline="") as f:
        before = list(csv.DictReader(f))
    assert [r["round"] for r in before] == ["0", "1"]
    kept = {r: set(round_files(out / "demos" / f"round-{r:03d}")) for r in (0, 1)}

    # the same --out again is not a resume: refused in one line, exit code 2, nothing touched
    again = run_cli("dagger", "--rounds", "3", *TINY_DAGGER, "--out", str(out))
    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        f"sb3-hir dagger: error: --out {str(out)!r} is not empty; continue the run in it with --resume {out}, "
        "replace it with --overwrite, or choose another directory"]
    assert {r: set(round_files(out / "demos" / f"round-{r:03d}")) for r in (0, 1)} == kept
    # a resume continues with the run's options: one given that differs is refused, not silently ignored
    assert cli.main(["dagger", "--resume", str(out), "--seed", "7"]) == 2
    assert "drop --seed (the run has 0)" in capsys.readouterr().err
    assert {r: set(round_files(out / "demos" / f"round-{r:03d}")) for r in (0, 1)} == kept

    resumed = run_cli("dagger", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stdout and "at round 2" in resumed.stdout
    with open(out / "rounds.csv", newline="") as f:
        after = list(csv.DictReader(f))
    assert [r["round"] for r in after] == ["0", "1", "2"]  # the stored --rounds 3; the table covers every round
    assert after[:2] == before[:2]  # rounds done before the kill are kept as they were
    for r in (0, 1):
        assert set(round_files(out / "demos" / f"round-{r:03d}")) == kept[r]
    assert round_files(out / "demos" / "round-002")
    table_rows = [line for line in resumed.stdout.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1].strip() for row in table_rows] == ["round", "0", "1", "2"]
    assert int(after[2]["timesteps"]) >= 120
    assert (out / "logs" / "progress.csv").is_file()  # the killed run's logs are kept
    assert len(list((out / "logs").glob("resumed-*/progress.csv"))) == 1


@pytest.mark.dagger
def test_dagger_resume_of_a_run_killed_in_round_0_keeps_its_episodes_once(tmp_path):
    from sb3_hir.dagger import load_round_dir, load_trajectories, round_files, trajectory_fingerprint

    out = tmp_path / "dagger"
    round0 = out / "demos" / "round-000"
    kill_cli_when(lambda: len(round_files(round0)) >= 5, "dagger", "--rounds", "1", *TINY_DAGGER,
                  "--steps-per-round", "2000", "--out", str(out))
    assert not (out / "checkpoint-latest.json").exists()  # killed before its first checkpoint
    killed = set(round_files(round0))
    killed_episodes = {trajectory_fingerprint(t) for path in killed for t in load_trajectories(path)}
    resumed = run_cli("dagger", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert "at round 0" in resumed.stdout
    assert killed <= set(round_files(round0))  # the killed run's episodes are kept
    new = [trajectory_fingerprint(t) for path in set(round_files(round0)) - killed for t in load_trajectories(path)]
    assert new and not killed_episodes & set(new)  # and none of them is stored again
    with open(out / "rounds.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert int(row["timesteps"]) == sum(len(t) for t in load_round_dir(round0)) >= 2000


@pytest.mark.parametrize(
    ("algo", "extra", "expected"),
    [
        ("qrdqn", ["--relabel", "some"], "some"),
        ("sac", ["--continuous", "--relabel", "all"], "all"),
        ("tqc", ["--continuous", "--relabel", "none"], "none"),
        ("recurrent-ppo", [], "none"),  # on-policy: no buffer, so the default compares nothing else
    ],
)
def test_train_other_algorithms(tmp_path, algo, extra, expected):
    out = tmp_path / algo
    assert cli.main(["train", "--algo", algo, *TINY_TRAIN, *extra, "--no-progress", "--out", str(out)]) == 0
    assert [r["relabel"] for r in json.loads((out / "results.json").read_text())] == [expected]
    run_dir = out / f"{algo}-{expected}"
    assert (run_dir / "model.zip").is_file()
    assert eval_rows(run_dir / "progress.csv")


def test_algo_kwargs_reach_the_algorithm_over_train_s_defaults_and_the_buffer_reads_their_gamma(tmp_path):
    """``--algo-kwarg`` is how a sweep searches DQN's own settings (target updates, exploration, gamma)."""
    out = tmp_path / "kwargs"
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "some", "--n-steps", "3", "--algo-kwarg",
                     "target_update_interval=777", "--algo-kwarg", "gamma=0.9", "--algo-kwarg",
                     "exploration_final_eps=0.2", "--algo-kwarg", "learning_starts=17", "--no-progress",
                     "--out", str(out)]) == 0
    from stable_baselines3 import DQN

    model = DQN.load(out / "dqn-some" / "model.zip", device="cpu")
    assert (model.target_update_interval, model.gamma, model.exploration_final_eps, model.learning_starts) == (
        777, 0.9, 0.2, 17)
    assert model.replay_buffer_kwargs["gamma"] == 0.9  # the n-step returns discount as the algorithm does
    run = json.loads((out / "dqn-some" / "run.json").read_text())
    assert run["algo_kwargs"] == {"target_update_interval": 777, "gamma": 0.9, "exploration_final_eps": 0.2,
                                  "learning_starts": 17}
    # recurrent-ppo's n_steps is its rollout length, its own keyword
    args = cli.build_parser().parse_args(["train", "--algo", "recurrent-ppo", "--algo-kwarg", "n_steps=64"])
    assert train_command.model_kwargs(args, "recurrent-ppo", "none", None)["n_steps"] == 64


def test_train_with_a_relabeler_plugin_by_name(tmp_path):
    from sb3_hir import hookimpl, plugins
    from sb3_hir.relabel import InstructionRelabeler

    class LastCellRelabeler(InstructionRelabeler):
        def relabel_goals(self, episode, rng):
            goals = episode.observations["goals"][0].copy()
            goals[0] = episode.observations["achieved"][-1].reshape(goals.shape[1:])
            return goals

    class Plugin:
        @hookimpl
        def register_relabelers(self, register):
            register("last-cell", LastCellRelabeler)

    plugins.register(Plugin(), name="test-cli-plugin")
    out = tmp_path / "plugin"
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "last-cell", "--no-progress", "--out", str(out)]) == 0
    from stable_baselines3 import DQN

    model = DQN.load(out / "dqn-last-cell" / "model.zip", device="cpu")
    assert model.replay_buffer_kwargs["relabeler"] == "last-cell"
    from sb3_hir import HindsightInstructionReplayBuffer

    buffer = HindsightInstructionReplayBuffer(100, model.observation_space, model.action_space,
                                              **model.replay_buffer_kwargs)
    assert isinstance(buffer.relabeler, LastCellRelabeler)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "--algo", "sac"], ["--algo sac needs continuous", "--continuous"]),
        (["train", "--algo", "tqc"], ["--continuous"]),
        (["train", "--algo", "dqn", "--continuous"], ["needs Discrete actions", "drop --continuous"]),
        (["train", "--algo", "qrdqn", "--continuous"], ["needs Discrete actions"]),
        (["train", "--algo", "ppo2"], ["unknown algorithm 'ppo2'", "dqn, qrdqn, sac, tqc, recurrent-ppo"]),
        (["train", "--relabel", "sometimes"], ["unknown relabeler 'sometimes'", "some, all, none",
                                                "hindsight-instruction"]),
        (["train", "--env", "nowhere"], ["unknown env 'nowhere'", "mazerunner"]),
        (["train", "--algo", "recurrent-ppo", "--relabel", "some"], ["on-policy", "--relabel none"]),
        (["train", "--goals", "500"], ["num_goals must be <="]),
        (["train", "--timesteps", "0"], ["--timesteps must be an int >= 1"]),
        (["train", "--env-kwarg", "oops"], ["KEY=VALUE"]),
        pytest.param(["dagger", "--beta-schedule", "sometimes"],
                     ["unknown beta schedule 'sometimes'", "exponential, linear"], marks=pytest.mark.dagger),
        pytest.param(["dagger", "--expert", "oracle"], ["unknown expert 'oracle'", "shortest-path"],
                     marks=pytest.mark.dagger),
        pytest.param(["dagger", "--beta-schedule", "linear", "--beta-kwarg", "rampdown_rounds=0"], ["rampdown_rounds"],
                     marks=pytest.mark.dagger),
        (["render", "missing.zip"], ["is not a file"]),
        (["train", "--demos", "-1"], ["--demos must be an int >= 0"]),
        (["train", "--demos", "2", "--algo", "recurrent-ppo", "--relabel", "none"],
         ["--demos and --demos-from fill a replay buffer", "on-policy"]),
        (["train", "--demos", "2", "--expert", "oracle"], ["unknown expert 'oracle'", "shortest-path"]),
        pytest.param(["train", "--demos-from", "/nonexistent/scratch"],
                     ["--demos-from: demonstrations path", "neither a DAgger round file nor a directory"],
                     marks=pytest.mark.dagger),
        pytest.param(["train", *TINY_ENV, "--demos", "1", "--demo-ratio", "2"],
                     ["--demo-ratio must be a number in [0, 1]"], marks=pytest.mark.dagger),
        # Validated whether or not demonstrations are given, and refused without them: nothing would be served.
        (["train", "--demo-ratio", "2"], ["--demo-ratio must be a number in [0, 1]"]),
        (["train", "--demo-ratio", "nan"], ["--demo-ratio must be a number in [0, 1]"]),
        (["train", "--demo-ratio", "0.5"], ["--demo-ratio 0.5 is the share", "none are given", "--demos N"]),
        (["train", "--algo-kwarg", "target_update=5"], ["--algo-kwarg target_update: not a keyword of DQN",
                                                       "target_update_interval"]),
        (["train", "--algo-kwarg", "buffer_size=10"], ["--algo-kwarg buffer_size: train sets it from --timesteps"]),
        (["train", "--algo-kwarg", "n_steps=3"], ["--algo-kwarg n_steps: train sets it from --n-steps"]),
        (["train", "--algo", "qrdqn", "--algo-kwarg", "tau=soft"], ["--algo-kwarg tau must be a number", "got 'soft'"]),
        (["train", "--algo-kwarg", "optimize_memory_usage=1"], ["optimize_memory_usage must be True or False"]),
        (["train", "--algo-kwarg", "=1"], ["--algo-kwarg takes KEY=VALUE"]),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(capsys, argv, expected):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"sb3-hir {argv[0]}: error: ")
    for text in expected:
        assert text in lines[0]
    assert captured.out == ""


def test_bad_input_from_the_real_command_has_no_traceback():
    proc = run_cli("train", "--algo", "sac")
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == [errors[-1]] and errors[0].startswith("sb3-hir train: error: --algo sac needs continuous")
    assert "Traceback" not in proc.stderr


def test_render_rejects_a_model_of_another_algorithm(train_run, capsys):
    model = train_run[0] / "dqn-some" / "model.zip"
    assert cli.main(["render", str(model), "--algo", "sac"]) == 2
    assert "cannot load" in capsys.readouterr().err


@pytest.mark.dagger
def test_train_takes_expert_demonstrations_and_a_dagger_run_as_demonstrations(tmp_path, capsys):
    """The two halves meet: ``sb3-hir dagger``'s round files are demonstrations for ``sb3-hir train``."""
    dagger_out = tmp_path / "dagger"
    assert cli.main(["dagger", "--rounds", "1", *TINY_DAGGER, "--out", str(dagger_out)]) == 0
    out = tmp_path / "train"
    assert cli.main(["train", *TINY_TRAIN, "--history", "0", "--relabel", "some", "--demos", "3",
                     "--demos-from", str(dagger_out), "--demo-ratio", "0.25", "--no-progress", "--out",
                     str(out)]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("sb3-hir train:"))
    from sb3_hir.dagger import load_round_dir

    dagger_episodes = len(load_round_dir(dagger_out / "demos" / "round-000"))
    assert f"{3 + dagger_episodes} demonstrations" in header and "0.25 of each batch" in header
    run = json.loads((out / "dqn-some" / "run.json").read_text())
    assert (run["demos"], run["expert"], run["demos_from"], run["demo_ratio"]) == (
        3, "shortest-path", str(dagger_out), 0.25)
    # Demonstrations observed otherwise than the training env (here without its history window) are refused.
    assert cli.main(["train", *TINY_TRAIN, "--demos-from", str(dagger_out), "--out", str(tmp_path / "t2")]) == 2
    error = capsys.readouterr().err
    assert "--demos-from: demonstrations[0] lacks the keys" in error and "history" in error


def test_plugins_command_is_unchanged(capsys):
    assert cli.main(["plugins", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    builtin = next(p for p in payload["plugins"] if p["name"] == "builtin")
    assert "mazerunner" in builtin["components"]["env"]


def test_format_table_aligns_columns():
    table = common.format_table(["a", "long header"], [[1, 2.5], ["wide cell", np.float64(0.25)]])
    lines = table.splitlines()
    assert len({len(line) for line in lines}) == 1
    assert lines[1].startswith("|---")


def test_the_policy_sees_the_groups_of_a_goal_spec_that_declares_them():
    from sb3_hir.cli.train import instruction_keys
    from sb3_hir.goals import ExactGoalSpec

    assert instruction_keys(ExactGoalSpec(pad_value=-4, groups_key="goal_steps")) == ["goal_steps"]
    assert instruction_keys(ExactGoalSpec()) == [] and instruction_keys("exact") == []
    kwargs = common.policy_kwargs(common.ALGOS["dqn"], history=16, encoder="conv", instruction_keys=["goal_steps"])
    assert kwargs["features_extractor_kwargs"]["keys"] == ["obs", "goals", "goal_steps"]
    plain = common.policy_kwargs(common.ALGOS["dqn"], history=0)
    assert plain["features_extractor_kwargs"]["keys"] == ["obs", "goals"]
