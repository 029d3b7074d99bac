"""The ``sb3-hir`` command under bad input and real use: run directories, goal specs, headless pictures, experts,
one-line errors, Ctrl-C, help and output noise (each test fails on the CLI before these guarantees)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import forked
import pytest

from sb3_hir import cli, hookimpl, plugins
from sb3_hir.cli import common

# The command line drives the library through its public API, which the rest of the suite tests in both profiles
# (tests/conftest.py); the headless MuJoCo run, which depends on the profile's gymnasium, is in test_cli_mujoco.py.
pytestmark = pytest.mark.once("dagger")

TINY_ENV = ["--maze-size", "7", "--goals", "2", "--time-limit", "20"]
TINY_TRAIN = ["--timesteps", "120", "--n-envs", "2", "--eval-episodes", "2", "--eval-freq", "60", "--no-progress",
              *TINY_ENV]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300, fresh: bool = False) -> subprocess.CompletedProcess[str]:
    """``fresh``: a real interpreter, for what a forked one cannot show (the output of its first imports)."""
    argv = [sys.executable, "-m", "sb3_hir.cli", *args]
    if fresh:
        return subprocess.run(argv, capture_output=True, text=True, env=env or ENV, cwd=cwd, timeout=timeout)
    return forked.run(argv, env=env or ENV, cwd=cwd, timeout=timeout)


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# -- 1. run directories ----------------------------------------------------------------------------------------
def test_default_run_directories_are_unique_even_in_the_same_second(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first, lock_a = common.prepare_out("train", None, False)
    second, lock_b = common.prepare_out("train", None, False)
    assert first != second and first.parent == second.parent == Path("runs")
    assert first.name.startswith("train-") and str(os.getpid()) in first.name
    lock_a.close()
    lock_b.close()


def test_a_non_empty_out_is_refused_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "none", "--out", str(out)]) == 0
    first = json.loads((out / "results.json").read_text())
    capsys.readouterr()
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "none", "--out", str(out)]) == 2
    assert "is not empty; pass --overwrite" in error_line(capsys)
    assert json.loads((out / "results.json").read_text()) == first  # untouched
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "some", "--out", str(out), "--overwrite"]) == 0
    assert [r["run"] for r in json.loads((out / "results.json").read_text())] == ["dqn-some"]
    assert not (out / "dqn-none").exists()  # the old run's files are gone, not mixed with the new one
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert cli.main(["train", *TINY_TRAIN, "--out", str(foreign), "--overwrite"]) == 2
    assert "was not made by sb3-hir" in error_line(capsys)
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_a_second_process_cannot_write_into_a_locked_run_directory(tmp_path):
    out, lock = common.prepare_out("train", str(tmp_path / "run"), False)
    try:
        with pytest.raises(cli.UsageError, match=rf"another sb3-hir process \(pid {os.getpid()}\) is writing into"):
            common.prepare_out("train", str(out), True)
    finally:
        lock.close()
    _, lock = common.prepare_out("train", str(out), True)  # released with its holder
    lock.close()


# -- 2. goal specs follow the env --------------------------------------------------------------------------------
def test_the_env_s_declared_goal_spec_is_used_and_a_wrong_one_is_refused(capsys):
    pytest.importorskip("sb3_hir_robotics")
    from sb3_hir_robotics import DistanceThresholdGoalSpec

    probe = plugins.create("env", "pointmaze-instruction", max_episode_steps=60)
    spec, label = common.goal_spec(argparse.Namespace(goal_spec=None, goal_spec_kwarg=[]), probe,
                                 "pointmaze-instruction")
    assert isinstance(spec, DistanceThresholdGoalSpec) and spec.mask_value == probe.mask_value
    assert "declared by env 'pointmaze-instruction'" in label
    probe.close()
    argv = ["train", "--env", "pointmaze-instruction", "--env-kwarg", "max_episode_steps=60", "--algo", "sac",
            "--relabel", "some", "--timesteps", "10"]
    assert cli.main([*argv, "--goal-spec", "exact"]) == 2
    line = error_line(capsys)
    assert "env 'pointmaze-instruction' and goal spec exact disagree" in line and "under the instruction" in line
    assert cli.main([*argv, "--goal-spec", "nearby"]) == 2
    assert "unknown goal spec 'nearby'; choose from:" in error_line(capsys)


# -- 4. experts check their env --------------------------------------------------------------------------------
@pytest.mark.dagger
def test_an_expert_that_cannot_serve_the_env_says_so_in_one_line(capsys):
    pytest.importorskip("sb3_hir_robotics")
    assert cli.main(["dagger", "--env", "pointmaze-instruction", "--env-kwarg", "max_episode_steps=20",
                     "--rounds", "1", "--steps-per-round", "10", "--batch-size", "8"]) == 2
    line = error_line(capsys)
    assert line.startswith("sb3-hir dagger: error: expert 'shortest-path' cannot act in env 'pointmaze-instruction'")
    assert "experts that can: none of the installed experts" in line


# -- 6. one-line errors, exit code 2 -------------------------------------------------------------------------------
def _trained_model(tmp_path_factory: pytest.TempPathFactory, *extra: str) -> Path:
    out = tmp_path_factory.mktemp("model") / "run"
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "none", "--out", str(out), *extra]) == 0
    return out


@pytest.fixture(scope="module")
def dqn_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _trained_model(tmp_path_factory)


@pytest.fixture(scope="module")
def sac_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sac") / "run"
    assert cli.main(["train", *TINY_TRAIN, "--algo", "sac", "--continuous", "--relabel", "none", "--out",
                     str(out)]) == 0
    return out


def test_bad_run_inputs_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = [
        (["train", *TINY_TRAIN, "--out", str(a_file)], "is an existing file; give a directory"),
        (["train", *TINY_TRAIN, "--out", str(a_file / "sub")], "cannot create --out"),
        (["train", *TINY_TRAIN, "--seed", "-1"], "--seed must be an int in [0, 4294967295]"),
        (["train", *TINY_TRAIN, "--maze-size", "10"], "maze_dim must be an odd int in [5, 501]"),
        (["train", *TINY_TRAIN, "--maze-size", "10001"], "larger mazes outgrow memory"),
    ]
    for argv, expected in cases:
        assert cli.main(argv) == 2, argv
        line = error_line(capsys)
        assert line.startswith("sb3-hir train: error: ") and expected in line, (argv, line)
    assert not Path("runs").exists()  # nothing was created by a refused run


def test_render_refuses_a_corrupt_run_json_and_env_options_the_model_was_not_trained_on(dqn_run, sac_run, capsys):
    model = dqn_run / "dqn-none" / "model.zip"
    assert cli.main(["render", str(model), "--env-kwarg", "num_goals=3"]) == 2
    assert "the model was trained with observation_space" in error_line(capsys)
    assert cli.main(["render", str(sac_run / "sac-none" / "model.zip"), "--env-kwarg", "continuous=False"]) == 2
    assert "the model was trained with action_space Box" in error_line(capsys)
    (dqn_run / "dqn-none" / "run.json").write_text("{not json")
    assert cli.main(["render", str(model)]) == 2
    assert "cannot read" in error_line(capsys) and "run.json" in capsys.readouterr().err + "run.json"


@pytest.mark.dagger
@pytest.mark.parametrize("argv, expected", [
    (["--batch-size", "100000"], "--batch-size 100000 is larger than the labelled steps of a round"),
    (["--beta-schedule", "linear", "--beta-kwarg", "rampdown_rounds=abc"],
     "rampdown_rounds must be an int >= 1; got 'abc'"),
    (["--beta-kwarg", "decay_probability=2"], "decay_probability must be a number in (0, 1]; got 2"),
    (["--seed", "-3"], "--seed must be an int in [0, 4294967295]"),
])
def test_bad_dagger_inputs_are_one_line_and_exit_2(argv, expected, capsys):
    assert cli.main(["dagger", *TINY_ENV, *argv]) == 2
    line = error_line(capsys)
    assert line.startswith("sb3-hir dagger: error: ") and expected in line, line


# -- 8. Ctrl-C saves what it has -------------------------------------------------------------------------------
def default_sigint() -> None:
    """In the child: Ctrl-C as in a terminal, even when the tests run as a background job (which ignores SIGINT,
    and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_saves_the_model_and_writes_the_table(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "sb3_hir.cli", "train", "--timesteps", "200000", "--n-envs", "2",
                             "--eval-episodes", "2", "--eval-freq", "200", "--no-progress", *TINY_ENV,
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            preexec_fn=default_sigint)
    deadline = time.time() + 240
    progress = out / "dqn-some" / "progress.csv"
    while time.time() < deadline and not (progress.is_file() and progress.read_text().count("\n") >= 3):
        time.sleep(0.5)  # wait for a few evaluations to be logged
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 130, stderr[-2000:]
    assert stderr.strip().splitlines()[-1] == "sb3-hir train: interrupted"
    run = json.loads((out / "dqn-some" / "run.json").read_text())
    assert run["interrupted"] is True and 0 < run["timesteps_done"] < 200000
    assert (out / "dqn-some" / "model.zip").is_file()
    results = json.loads((out / "results.json").read_text())
    assert [r["run"] for r in results] == ["dqn-some (interrupted)"] and results[0]["interrupted"]
    assert "dqn-some (interrupted)" in (out / "results.md").read_text()
    assert "Last evaluation before Ctrl-C" in stdout
    assert not (out / "dqn-none").exists()  # the next run never started


# -- 9. help, version -----------------------------------------------------------------------------------------
def test_help_lists_installed_names_and_version_is_printed(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # argparse would wrap names such as hindsight-instruction at the hyphen
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for kind in ("env", "relabeler", "goal_spec"):
        for name in plugins.available(kind):
            assert name in text, (kind, name)
    assert "--overwrite" in text and "--goal-spec" in text
    with pytest.raises(SystemExit):
        cli.main(["dagger", "--help"])
    dagger_help = " ".join(capsys.readouterr().out.split())
    assert "sac / tqc" not in dagger_help and "shortest-path" in dagger_help
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    from sb3_hir import __version__

    assert capsys.readouterr().out.strip() == f"sb3-hir {__version__}"


# -- 10. less noise -----------------------------------------------------------------------------------------
def test_third_party_import_notices_stay_off_the_output_unless_verbose():
    bare = subprocess.run([sys.executable, "-c", "import gymnasium"], capture_output=True, text=True, env=ENV)
    proc = run_cli("--help", fresh=True)
    assert proc.returncode == 0
    assert proc.stderr == "", proc.stderr
    verbose = run_cli("--verbose", "--help", fresh=True)
    assert verbose.returncode == 0
    if bare.stderr.strip():  # e.g. gymnasium-robotics 1.2's notice about Adroit envs
        assert bare.stderr.strip().splitlines()[0] in verbose.stderr


# -- 5. plugin conflicts are contained ---------------------------------------------------------------------------
class _SecondTolerance:
    """An in-process plugin that also registers the goal spec name 'tolerance'."""

    @hookimpl
    def register_goal_specs(self, register):
        from sb3_hir.goals import ToleranceGoalSpec

        register("tolerance", ToleranceGoalSpec)


def test_plugins_command_reports_a_duplicate_name_and_other_commands_still_work(capsys, tmp_path):
    with pytest.warns(plugins.PluginWarning, match="'tolerance'"):
        plugins.register(_SecondTolerance(), name="second-tolerance")
        plugins.available("goal_spec")
    assert cli.main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "CONFLICT goal_spec 'tolerance': registered by builtin (sb3-hir), second-tolerance" in out
    assert cli.main(["plugins", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [(c["kind"], c["name"]) for c in payload["conflicts"]] == [("goal_spec", "tolerance")]
    # an unrelated command still runs; only the conflicting name fails to resolve
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "none", "--out", str(tmp_path / "run")]) == 0
    with pytest.raises(plugins.DuplicateComponentError, match="second-tolerance"):
        plugins.create("goal_spec", "tolerance")
