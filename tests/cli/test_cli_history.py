"""``--history N`` for ``sb3-hir train``, ``render`` and ``dagger``: the memory reaches the saved models."""

from __future__ import annotations

import json

import pytest
from stable_baselines3 import DQN, SAC
from test_cli import TINY_ENV, TINY_TRAIN, assert_png, eval_rows

from sb3_hir import cli
from sb3_hir.cli.common import algo_class
from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor

# One profile runs these (tests/conftest.py): the command line's layer does not change with the profile.
pytestmark = pytest.mark.once("current")


@pytest.mark.parametrize(("algo", "extra", "encoder"), [("dqn", [], "gru"), ("sac", ["--continuous"], "conv")])
def test_train_with_history_saves_a_history_model_that_render_replays(tmp_path, capsys, algo, extra, encoder):
    out = tmp_path / "run"
    argv = ["train", "--algo", algo, *TINY_TRAIN, *extra, "--relabel", "some", "--history", "5",
            "--history-encoder", encoder, "--no-progress", "--out", str(out)]
    assert cli.main(argv) == 0
    assert f"history 5 ({encoder})" in capsys.readouterr().out
    run_dir = out / f"{algo}-some"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["history"] == 5 and run["history_encoder"] == encoder
    model = (DQN if algo == "dqn" else SAC).load(run_dir / "model.zip", device="cpu")
    assert model.observation_space["history"].shape == (5, 13 if algo == "dqn" else 10)
    extractor = model.policy.q_net.features_extractor if algo == "dqn" else model.policy.actor.features_extractor
    assert isinstance(extractor, HistoryExtractor) and extractor.encoder == encoder
    assert eval_rows(run_dir / "progress.csv")
    assert_png(run_dir / "episode.png")
    picture = tmp_path / "again.png"
    assert cli.main(["render", str(run_dir / "model.zip"), "--out", str(picture)]) == 0
    assert_png(picture)


def test_train_with_action_effects_saves_the_table_model_that_render_replays(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", *TINY_TRAIN, "--randomized-actions", "--relabel", "some", "--history", "4",
                     "--action-features", "effects", "--no-progress", "--out", str(out)]) == 0
    assert "history 4 (conv), action features effects" in capsys.readouterr().out
    run_dir = out / "dqn-some"
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["action_features"], run["q_head"]) == ("effects", "standard")
    model = DQN.load(run_dir / "model.zip", device="cpu")
    assert model.observation_space["effects"].shape == (5, 10)  # 7 obs columns + taken, effect known, no effect
    assert model.policy.q_net.features_extractor.current.keys == ("obs", "goals", "effects")
    picture = tmp_path / "again.png"
    assert cli.main(["render", str(run_dir / "model.zip"), "--out", str(picture)]) == 0  # rebuilt with the table
    assert_png(picture)


@pytest.mark.parametrize("algo", ["dqn", "qrdqn"])
def test_train_with_the_per_action_head_saves_a_model_that_render_replays(tmp_path, capsys, algo):
    from sb3_hir.policies import PerActionDQNPolicy, PerActionQRDQNPolicy

    out = tmp_path / "run"
    assert cli.main(["train", "--algo", algo, *TINY_TRAIN, "--randomized-actions", "--relabel", "some",
                     "--history", "4", "--action-features", "env", "--q-head", "per-action", "--no-progress",
                     "--out", str(out)]) == 0
    assert "action features env, per-action Q head" in capsys.readouterr().out
    run_dir = out / f"{algo}-some"
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["action_features"], run["q_head"]) == ("env", "per-action")
    model = algo_class(algo).load(run_dir / "model.zip", device="cpu")
    assert isinstance(model.policy, PerActionDQNPolicy if algo == "dqn" else PerActionQRDQNPolicy)
    assert model.observation_space["action_features"].shape == (5, 6)
    picture = tmp_path / "again.png"
    assert cli.main(["render", str(run_dir / "model.zip"), "--out", str(picture)]) == 0
    assert_png(picture)


@pytest.mark.parametrize(("argv", "expected"), [
    (["--algo", "sac", "--continuous", "--action-features", "effects"],
     "--action-features effects: env 'mazerunner' cannot carry it"),
    (["--action-features", "oracle"], "unknown --action-features 'oracle'; choose from: none, effects, env"),
    (["--q-head", "per-action"], "--q-head per-action scores each action from its row"),
    (["--q-head", "wide"], "unknown --q-head 'wide'; choose from: standard, per-action"),
    (["--algo", "sac", "--continuous", "--q-head", "per-action", "--action-features", "env"],
     "--q-head per-action is a Q head for dqn and qrdqn; --algo sac has none"),
])
def test_head_and_features_bad_input_is_one_line(capsys, argv, expected):
    assert cli.main(["train", *argv, *TINY_TRAIN]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1


def test_train_without_history_keeps_the_memoryless_extractor(tmp_path):
    out = tmp_path / "run"
    assert cli.main(["train", *TINY_TRAIN, "--relabel", "none", "--history", "0", "--no-progress",
                     "--out", str(out)]) == 0
    model = DQN.load(out / "dqn-none" / "model.zip", device="cpu")
    assert "history" not in model.observation_space.spaces
    assert isinstance(model.policy.q_net.features_extractor, KeySelectExtractor)


@pytest.mark.parametrize(("argv", "expected"), [
    (["train", "--history", "-1"], "--history must be an int >= 0"),
    (["train", "--history", "4", "--history-encoder", "lstm"], "unknown history encoder 'lstm'"),
    pytest.param(["dagger", "--history", "-3"], "--history must be an int >= 0", marks=pytest.mark.dagger),
])
def test_history_bad_input_is_one_line_and_exit_code_2(capsys, argv, expected):
    assert cli.main([*argv, *TINY_ENV]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1


@pytest.mark.dagger
def test_dagger_with_history_trains_a_history_learner(tmp_path, capsys):
    from sb3_hir.dagger import load_round_dir

    out = tmp_path / "dagger"
    assert cli.main(["dagger", "--rounds", "2", "--steps-per-round", "120", "--n-envs", "2", "--eval-episodes", "2",
                     "--batch-size", "32", "--bc-epochs", "1", "--history", "6", *TINY_ENV, "--no-progress",
                     "--out", str(out)]) == 0
    assert "history 6 (conv)" in capsys.readouterr().out
    demos = load_round_dir(out / "demos" / "round-001")
    assert demos and all(t.obs.get("history").shape == (len(t) + 1, 6, 13) for t in demos)
    assert_png(out / "episode.png")


@pytest.mark.dagger
def test_dagger_with_action_features_records_the_table_in_the_demos(tmp_path, capsys):
    from sb3_hir.dagger import load_round_dir

    out = tmp_path / "dagger"
    assert cli.main(["dagger", "--rounds", "2", "--steps-per-round", "120", "--n-envs", "2", "--eval-episodes", "2",
                     "--batch-size", "32", "--bc-epochs", "1", "--action-features", "env", "--randomized-actions",
                     *TINY_ENV, "--no-progress", "--out", str(out)]) == 0
    assert "no history, action features env" in capsys.readouterr().out
    demos = load_round_dir(out / "demos" / "round-001")
    assert demos and all(t.obs.get("action_features").shape == (len(t) + 1, 5, 6) for t in demos)
    assert any(t.obs.get("action_features")[-1, :, -1].sum() >= 2 for t in demos)  # actions taken leave their rows


@pytest.mark.parametrize("features", ["effects", "env"])
def test_the_memory_bound_counts_the_per_action_table_as_built(features):
    """observation_bytes adds exactly what the wrapper adds to one observation (float32 table of the tracker)."""
    from sb3_hir import MazeRunnerEnv
    from sb3_hir.cli.common import add_history
    from sb3_hir.cli.memory import _space_bytes, observation_bytes

    env = MazeRunnerEnv(maze_dim=7, num_goals=2, randomized_actions=True)
    wrapped = add_history(MazeRunnerEnv(maze_dim=7, num_goals=2, randomized_actions=True), "mazerunner", 0, features)
    assert observation_bytes(env, 0, features, "mazerunner") == _space_bytes(wrapped.observation_space)


@pytest.mark.dagger
def test_dagger_with_the_per_action_policy_head_checkpoints_and_resumes_it(tmp_path, capsys):
    from sb3_hir.dagger import reconstruct_policy
    from sb3_hir.policies import PerActionActorCriticPolicy

    out = tmp_path / "dagger"
    argv = ["dagger", "--steps-per-round", "120", "--n-envs", "2", "--eval-episodes", "2", "--batch-size", "32",
            "--bc-epochs", "1", "--action-features", "env", "--policy-head", "per-action", "--randomized-actions",
            *TINY_ENV, "--no-progress"]
    assert cli.main([*argv, "--rounds", "1", "--out", str(out)]) == 0
    assert "action features env, per-action policy head" in capsys.readouterr().out
    policy = reconstruct_policy(out)  # data only: the class comes from the checkpoint's allow-list
    assert isinstance(policy, PerActionActorCriticPolicy) and policy.action_key == "action_features"
    assert cli.main(["dagger", "--rounds", "2", "--resume", str(out), "--no-progress"]) == 0
    assert isinstance(reconstruct_policy(out), PerActionActorCriticPolicy)


def test_policy_head_bad_input_is_one_line(capsys):
    assert cli.main(["dagger", "--policy-head", "per-action", *TINY_ENV]) == 2
    err = capsys.readouterr().err.strip()
    assert "--policy-head per-action scores each action from its row" in err and len(err.splitlines()) == 1
