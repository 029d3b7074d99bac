"""``benchmarks/babyai_goto.py --eval-epsilon E``: the DQN curves carry an epsilon-greedy score that names its
epsilon, summarized over seeds and tabled beside the greedy one; an epsilon outside [0, 1) is refused by name."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
from benchmark_module import load_benchmark

pytest.importorskip("sb3_hir_minigrid", reason="babyai_goto.py's env is the sb3-hir-minigrid plugin's")


@pytest.fixture(scope="module")
def goto():
    return load_benchmark("babyai_goto")


def test_an_epsilon_outside_0_1_is_refused_naming_the_flag(goto, capsys):
    for bad in ("1.0", "-0.1"):
        with pytest.raises(SystemExit) as exc:
            goto.parse_options(["--eval-epsilon", bad])
        assert exc.value.code == 2
        assert "--eval-epsilon must be in [0, 1)" in capsys.readouterr().err
    _, options = goto.parse_options(["--eval-epsilon", "0.05"])
    assert options["eval_epsilon"] == 0.05


def test_the_goal_ablation_removes_only_the_goal_keys_and_refuses_the_goal_conditioned_encoder(goto, capsys):
    _, options = goto.parse_options(["--k-max", "4", "--no-goal"])
    assert goto.policy_keys(options) == ["obs"]
    _, options = goto.parse_options(["--k-max", "4"])
    assert goto.policy_keys(options) == ["obs", "goals", "goal_steps"]
    with pytest.raises(SystemExit):
        goto.parse_options(["--no-goal", "--extractor", "film"])
    assert "--extractor film is conditioned on the goals, and --no-goal removes them" in capsys.readouterr().err


def test_epsilon_scores_are_summarized_and_tabled_beside_greedy(goto, tmp_path):
    key = goto.epsilon_key(0.05)
    assert key == "success_rate_epsilon0.05"
    for seed, (greedy, noisy) in enumerate([(0.2, 0.5), (0.4, 0.7)]):
        point = dict(minutes=5.0, timesteps=1000, success_rate=greedy, goals_reached=greedy, **{key: noisy})
        run = tmp_path / f"some-seed{seed}" / "curve.json"
        run.parent.mkdir()
        run.write_text(json.dumps(dict(variant="some", seed=seed, curve=[point])))
    args = argparse.Namespace(variants=["some"], seeds=[0, 1], level="BabyAI-GoToLocal-v0", k_max=1, history=4)
    goto.report(tmp_path, args)
    row = json.loads((tmp_path / "summary.json").read_text())["summary"]["some"][0]
    np.testing.assert_allclose([row["success_rate_mean"], row[f"{key}_mean"], row[f"{key}_std"]], [0.3, 0.6, 0.1])
    table = (tmp_path / "summary.md").read_text().splitlines()
    assert "| success rate | success rate, epsilon-greedy, epsilon 0.05 |" in table[0]
    assert "| 0.30 ± 0.10 | 0.60 ± 0.10 |" in table[2]


def test_the_final_loop_measure_is_summarized_per_policy(goto, tmp_path):
    for seed, looped in enumerate([0.8, 0.6]):
        run = tmp_path / f"some-seed{seed}" / "curve.json"
        run.parent.mkdir()
        point = dict(minutes=5.0, timesteps=1000, success_rate=0.5, goals_reached=0.5)
        loops = {"greedy": dict(success_rate=0.5, failures=50, revisit=0.9, looped=looped),
                 "epsilon 0.05": dict(success_rate=0.7, failures=30, revisit=0.5, looped=looped / 2)}
        run.write_text(json.dumps(dict(variant="some", seed=seed, curve=[point], loops=loops)))
    args = argparse.Namespace(variants=["some"], seeds=[0, 1], level="BabyAI-GoToLocal-v0", k_max=1, history=4)
    goto.report(tmp_path, args)
    text = (tmp_path / "summary.md").read_text()
    assert ("- some, greedy: success 0.50 ± 0.00; 0.70 ± 0.10 of its failures end cycling through at most 4 agent "
            "states (2 seeds)") in text
    assert "- some, epsilon 0.05: success 0.70 ± 0.00; 0.35 ± 0.05 of its failures" in text
    assert json.loads((tmp_path / "summary.json").read_text())["loops"]["some"][1]["greedy"]["looped"] == 0.6
