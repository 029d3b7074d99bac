"""The CLI split into one module per command, and its reliability debts: memory bounds, one-line argparse errors,
third-party notices kept off stderr, no third-party warning on a normal run, repeatable runs, and the trainer's
``on_round_end`` hook that ``sb3-hir dagger`` reports through (each test fails on the CLI before this change)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import forked
import numpy as np
import pytest

from sb3_hir import cli, hookimpl, plugins

# One profile runs these (tests/conftest.py): the third-party notices the command line hides are 0.29's.
pytestmark = pytest.mark.once("dagger")

ROOT = Path(__file__).resolve().parents[2]
TINY_ENV = ["--maze-size", "7", "--goals", "2", "--time-limit", "20"]
TINY_TRAIN = ["--timesteps", "240", "--n-envs", "2", "--eval-episodes", "2", "--eval-freq", "120", *TINY_ENV]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def run_cli(*args: str, timeout: float = 300, cwd: Path | None = None,
            fresh: bool = False) -> subprocess.CompletedProcess[str]:
    """``fresh``: a real interpreter, for what a forked one cannot show (its first imports' output, a hash seed of
    its own)."""
    argv = [sys.executable, "-m", "sb3_hir.cli", *args]
    if fresh:
        return subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=timeout, cwd=cwd)
    return forked.run(argv, env=ENV, timeout=timeout, cwd=cwd)


# -- the package layout ----------------------------------------------------------------------------------------
def test_one_module_per_command_and_no_import_back_up_to_the_parser():
    folder = ROOT / "sb3_hir" / "cli"
    assert {p.stem for p in folder.glob("*.py")} >= {"train", "dagger", "render", "plugins", "sweep", "common",
                                                      "parser"}
    for path in folder.glob("*.py"):
        if path.stem in ("__init__", "__main__", "parser"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            imported = [a.name for a in node.names]
            assert node.module != "sb3_hir.cli.parser", path.name
            assert not (node.module == "sb3_hir" and "cli" in imported), path.name
            if node.module == "sb3_hir.cli":  # sibling modules only, never the package's (or the parser's) names
                assert all((folder / f"{name}.py").is_file() and name != "parser" for name in imported), path.name
    assert len((folder / "__init__.py").read_text().splitlines()) < 80


# -- memory bounds ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("argv", "option"), [
    (["train", "--history", "1000000"], "--history 1000000"),
    (["train", "--n-envs", "100000000", "--history", "0"], "--n-envs 100000000"),
    (["train", "--hidden", "10000000", "--history", "0"], "--hidden 10000000"),
    pytest.param(["dagger", "--steps-per-round", "1000000000"], "--steps-per-round 1000000000",
                 marks=pytest.mark.dagger),
])
def test_sizes_beyond_memory_are_refused_at_once_in_one_line(argv, option, tmp_path):
    proc = run_cli(*argv, *TINY_ENV, timeout=60, cwd=tmp_path)  # the old CLI ran for minutes (or forever)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"sb3-hir {argv[0]}: error: ") and option in lines[0]
    assert "of memory" in lines[0] and "this machine has" in lines[0]
    assert not (tmp_path / "runs").exists()


# -- argparse errors are one line --------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["sweep", "--search", "typo"],
    ["train", "--timesteps", "many"],
    ["dagger", "--rounds"],
    ["render"],
    ["plugins", "--jsn"],
    ["nosuchcommand"],
])
def test_argparse_errors_are_one_line_with_a_help_hint(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("sb3-hir") and ": error: " in lines[0] and "--help" in lines[0]


# -- third-party notices ------------------------------------------------------------------------------------------
class _NoisyEnvPlugin:
    """An env plugin whose third-party package prints a notice when first imported (as gymnasium-robotics does)."""

    @hookimpl
    def register_envs(self, register):
        def make(**kwargs):
            import sb3_hir_test_noisy_package  # noqa: F401  (prints at its first import only)

            return plugins.create("env", "mazerunner", **kwargs)

        register("noisy-maze", make)


def test_a_notice_printed_by_an_env_s_first_import_stays_off_stderr(tmp_path, monkeypatch, capsys):
    (tmp_path / "sb3_hir_test_noisy_package.py").write_text(textwrap.dedent("""
        import sys
        print("NOTICE: reward functions were updated", file=sys.stderr)
        print("NOTICE on stdout")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.register(_NoisyEnvPlugin(), name="noisy-env-plugin")
    try:
        argv = ["train", "--env", "noisy-maze", "--env-kwarg", "maze_dim=7", "--algo", "sac"]
        assert cli.main(argv) == 2
        captured = capsys.readouterr()
        assert captured.err.strip().splitlines() == [
            "sb3-hir train: error: --algo sac needs continuous (Box) actions but env 'noisy-maze' has Discrete "
            "actions; discrete algorithms: dqn, qrdqn, recurrent-ppo"]
        assert captured.out == ""
    finally:
        plugins.unregister("noisy-env-plugin")
        sys.modules.pop("sb3_hir_test_noisy_package", None)


# -- a normal run: no third-party warning, and the same seed repeats ----------------------------------------------
def _results(out: Path) -> list[dict]:
    rows = json.loads((out / "results.json").read_text())
    for row in rows:
        row.pop("minutes")  # wall clock
    return rows


def test_a_train_run_shows_no_third_party_warning_and_repeats_with_its_seed(tmp_path):
    first = run_cli("train", *TINY_TRAIN, "--relabel", "some", "--out", str(tmp_path / "a"),  # with progress bar
                    fresh=True)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "Warning" not in first.stderr, first.stderr[-2000:]
    second = run_cli("train", *TINY_TRAIN, "--relabel", "some", "--no-progress", "--out", str(tmp_path / "b"),
                     fresh=True)
    assert second.returncode == 0, second.stderr[-2000:]
    assert _results(tmp_path / "a") == _results(tmp_path / "b")


# -- options validated once, by the library object -------------------------------------------------------------
@pytest.mark.parametrize(("argv", "expected"), [
    (["--relabel-ratio", "1.5"], "sb3-hir train: error: --relabel-ratio must be a number in [0, 1]; got 1.5"),
    (["--n-steps", "0"], "sb3-hir train: error: --n-steps must be an int >= 1; got 0"),
])
def test_buffer_options_are_checked_by_the_buffer_before_any_run_directory(argv, expected, tmp_path, capsys,
                                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "some", "--history", "0", *argv]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [expected]
    assert not (tmp_path / "runs").exists()


def test_a_bad_buffer_option_is_refused_before_a_run_that_does_not_use_it_trains(tmp_path, capsys, monkeypatch):
    from sb3_hir.buffers import HindsightInstructionReplayBuffer

    def built(*args, **kwargs):  # the options are checked by the resolver the buffer runs, not by a throwaway buffer
        raise AssertionError("check_buffers built a replay buffer")

    monkeypatch.setattr(HindsightInstructionReplayBuffer, "__init__", built)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "none", "some", "--history", "0",
                     "--relabel-ratio", "2"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "sb3-hir train: error: --relabel-ratio must be a number in [0, 1]; got 2.0"]
    assert not (tmp_path / "runs").exists()


# -- the trainer's round hook ---------------------------------------------------------------------------------------
@pytest.mark.dagger
def test_on_round_end_reports_each_round_before_its_checkpoint_and_can_stop(tmp_path):
    from imitation.algorithms import bc
    from stable_baselines3.common.vec_env import DummyVecEnv

    from sb3_hir.dagger import SimpleDAggerTrainer
    from sb3_hir.envs import MazeRunnerEnv

    venv = DummyVecEnv([lambda: MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=10)] * 2)
    venv.seed(0)
    learner = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space,
                    rng=np.random.default_rng(0), batch_size=16)
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy="shortest-path",
                                  rng=np.random.default_rng(0), bc_trainer=learner, beta_schedule="exponential")
    calls: list[tuple[int, dict, bool]] = []

    def on_round_end(round_num: int, stats: dict) -> bool:
        calls.append((round_num, stats, (tmp_path / f"checkpoint-{round_num + 1:03d}.json").exists()))
        return round_num < 1  # stop after round 1

    trainer.train(10**9, rollout_round_min_timesteps=40,
                  bc_train_kwargs={"n_epochs": 1, "progress_bar": False, "log_rollouts_n_episodes": 0},
                  on_round_end=on_round_end)
    assert [c[0] for c in calls] == [0, 1] and trainer.round_num == 2
    assert [c[1]["beta"] for c in calls] == [1.0, 0.5]
    assert all(c[1]["timesteps"] >= 40 and c[1]["episodes"] >= 3 for c in calls)
    assert calls[1][1]["total_timesteps"] == calls[0][1]["timesteps"] + calls[1][1]["timesteps"]
    assert not any(c[2] for c in calls)  # called before the round's checkpoint
    assert (tmp_path / "checkpoint-002.json").is_file()  # and the round it stopped at is saved
    trainer.train(1, rollout_round_min_timesteps=40,
                  bc_train_kwargs={"n_epochs": 1, "progress_bar": False, "log_rollouts_n_episodes": 0})
    assert trainer.round_num == 3  # without a hook, as before
