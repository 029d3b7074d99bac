"""Every script in ``benchmarks/`` runs, at a tiny budget, as a fresh process: a script that no longer runs (an
attribute renamed under it, an option gone) fails here, not on the day its numbers are wanted.

Each run is its script's smallest flags (seconds each), in a temporary working directory, with every output path
pointed into it, so nothing is written into the repository. Each script runs once, in one profile: the current one has
every script's dependencies (SBX for ``bench_sbx_reach.py``, BabyAI's bot for ``babyai_dagger.py``);
``bench_sweep.py`` starts Ray, so it is marked ``ray`` and runs in the dagger profile, as the other Ray tests do; and
the slowest MazeRunner-only scripts (``DAGGER_PROFILE``) run in the dagger profile too, so the two profiles, which
`make test` runs at once, end together. numpy, torch, SB3 and imitation are the same release in both profiles; a
tiny run checks that a script still runs, not how a gymnasium release steps. A new script must be added to ``RUNS``
(``test_every_benchmark_has_a_tiny_run``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import forked
import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

#: ``{TMP}`` is the run's temporary directory, ``{ROOT}`` the repository (this checkout).
RUNS: dict[str, list[str]] = {
    "babyai_dagger.py": ["--tiny", "--extractor", "film", "--out", "{TMP}/babyai_dagger"],  # the bot: minigrid 3
    "babyai_goto.py": ["--cpu-minutes", "0.02", "--eval-minutes", "0.01", "--eval-episodes", "2", "--steps", "200",
                       "--n-envs", "2", "--seeds", "0", "--variants", "some", "bc", "--demos", "2",
                       "--eval-epsilon", "0.05", "--out", "{TMP}/babyai"],
    "bench_action_features.py": ["--steps", "100", "--chunks", "2"],
    "bench_babyai_bot.py": ["--tiny"],
    "bench_babyai_speed.py": ["--chunk", "64", "--rounds", "1", "--warmup", "64", "--learners", "today", "ppo"],
    "bench_buffer.py": ["--sizes", "1000", "--episode-lengths", "50", "--add-steps", "300", "--rounds", "1",
                        "--calls", "2", "--parts"],
    "bench_her_served_distribution.py": ["--steps", "300", "--batches", "4", "--seeds", "0", "--strategies", "future"],
    "bench_kernel_costs.py": ["--rounds", "1", "--calls", "5"],
    "bench_compare.py": ["--before", "{ROOT}", "--after", "{ROOT}", "--pairs", "1", "--keys", "size", "T", "buffer",
                         "--columns", "sample us", "--", "bench_buffer.py", "--sizes", "1000",
                         "--episode-lengths", "50", "--add-steps", "300", "--rounds", "1", "--calls", "2"],
    "bench_controls.py": ["--seeds", "0", "--budgets", "200", "--steps", "200", "--variants", "fixed",
                          "--eval-episodes", "1", "--maze-dim", "5", "--n-envs", "2", "--history", "4"],
    "bench_dagger_collector.py": ["--steps", "100", "--repeats", "1", "--episode-steps", "50", "--save-root", "{TMP}"],
    "bench_dagger_mazerunner.py": ["--rounds", "1", "--steps-per-round", "8", "--batches-per-round", "2",
                                   "--eval-episodes", "1", "--seeds", "0", "--history", "4"],
    "bench_demos_box.py": ["--seeds", "0", "--budgets", "200", "--demos", "2", "--eval-episodes", "1",
                           "--max-episode-steps", "20", "--out", "{TMP}/demos_box.txt", "--runs-dir", "{TMP}/runs"],
    "bench_event_goals.py": ["--levels", "BabyAI-GoToLocal-v0:1", "--strategies", "some", "--episodes", "2",
                             "--batches", "1"],
    "bench_goalenv_her.py": ["--budgets", "150", "--seeds", "0", "--eval-episodes", "1", "--learning-starts", "100"],
    "bench_head_cost.py": ["--rounds", "1", "--steps", "2", "--batch", "8", "--maze-dim", "7", "--history", "4"],
    "bench_her_dropin.py": ["--suite", "perf", "--seeds", "0", "--budgets", "100"],
    "bench_her_sample.py": ["--size", "2000", "--n-envs", "2", "--rounds", "1", "--calls", "2"],
    "bench_hir_learning.py": ["--budgets", "100", "--seeds", "0", "--variants", "some", "--eval-episodes", "1",
                              "--learning-starts", "50", "--records", "{TMP}/records.json"],
    "bench_history.py": ["--seeds", "0", "--variants", "some-gru", "--budgets", "100", "--n-envs", "2",
                         "--eval-episodes", "1", "--learning-starts", "50", "--maze-dim", "5", "--goals", "1",
                         "--history", "4"],
    "bench_her_dqn_grid.py": ["--seeds", "0", "--bits", "4", "--budgets", "150", "300", "--eval-episodes", "2",
                              "--runs", "{TMP}/runs"],
    "bench_history_cost.py": ["--steps", "100", "--chunk", "50", "--history", "4"],
    "bench_history_dtype.py": ["--steps", "100", "--chunk", "50"],
    "bench_mazerunner.py": ["--steps", "100", "--vec-steps", "10", "--n-envs", "2", "--chunks", "2"],
    "bench_memory_layout.py": ["--capacity", "2000", "--fill", "300", "--sample-fill", "300", "--rounds", "1",
                               "--calls", "2", "--out", "{TMP}/layout.json"],
    "bench_pointmaze_hir.py": ["--timesteps", "150", "--seeds", "0", "--n-envs", "1", "--learning-starts", "100",
                               "--eval-episodes", "1", "--max-episode-steps", "20"],
    "bench_recurrent_mazerunner.py": ["--timesteps", "64", "--seeds", "0", "--n-envs", "2", "--n-steps", "32",
                                      "--batch-size", "32", "--eval-episodes", "1", "--maze-dim", "5"],
    "bench_relabel.py": ["--episodes", "2", "--lengths", "20", "--repeats", "1"],
    "bench_sbx_reach.py": ["--seeds", "0", "--max-steps", "200", "--eval-every", "100", "--eval-episodes", "1"],
    "bench_served_signal.py": ["--transitions", "8000", "--batches", "2"],  # its least: 10 episodes per env
    "bench_sweep.py": ["--runs", "1", "--concurrent", "1", "--timesteps", "100"],
    "bench_train_speed.py": ["--baseline", "{ROOT}", "--rounds", "1", "--timesteps", "100", "--eval-episodes", "2"],
    "bench_warm_start.py": ["--seeds", "0", "--budgets", "64", "--labels", "128", "--bc-batches", "2",
                            "--critic-warmup", "32", "--n-envs", "2", "--n-steps", "32", "--eval-episodes", "1",
                            "--maze-dim", "5", "--history", "4"],
    "fetch_push_expert.py": ["--episodes", "1"],
    "moonshot_mazerunner.py": ["--minutes", "0.02", "--eval-minutes", "0.01", "--eval-episodes", "1", "--steps", "200",
                               "--n-envs", "2", "--maze-dim", "5", "--goals", "1", "--history", "4",
                               "--out", "{TMP}/moonshot"],
    "moonshot_seeds.py": ["--minutes", "0.02", "--eval-minutes", "0.01", "--eval-episodes", "1", "--steps", "200",
                          "--n-envs", "2", "--maze-dim", "5", "--goals", "1", "--history", "4", "--seeds", "0",
                          "--variants", "history",
                          "--out", "{TMP}/seeds"],
    "pointmaze_expert.py": ["--episodes", "1"],
}
#: A script's further tiny runs, where its flags exclude each other from one run (PPO takes no --demos).
MORE_RUNS: dict[str, list[list[str]]] = {
    "babyai_goto.py": [["--cpu-minutes", "0.02", "--eval-minutes", "0.01", "--eval-episodes", "2", "--steps", "200",
                        "--n-envs", "2", "--seeds", "0", "--variants", "ppo-mlp", "--out", "{TMP}/babyai"]],
    # each side against itself: two groups of one seed, on one cell
    "bench_her_dqn_grid.py": [["--seeds", "0", "1", "--group-size", "1", "--bits", "4", "--cells",
                               "bits4-lr0.0001-target10000-explore-sb3", "--budgets", "150", "--eval-episodes", "2",
                               "--runs", "{TMP}/runs"]],
}
#: scripts that start Ray: the ``ray`` mark (the dagger profile of `make test`).
RAY = {"bench_sweep.py"}
#: MazeRunner-only scripts that run in the dagger profile (about a minute together), to even out the profiles.
DAGGER_PROFILE = {"bench_train_speed.py", "bench_history_cost.py"}


def test_every_benchmark_has_a_tiny_run():
    scripts = {path.name for path in BENCHMARKS.glob("*.py")}
    assert len(scripts) > 20
    assert not scripts - set(RUNS), f"benchmarks without a tiny run in RUNS: {sorted(scripts - set(RUNS))}"
    assert not set(RUNS) - scripts, f"RUNS names scripts that no longer exist: {sorted(set(RUNS) - scripts)}"
    assert set(RUNS) >= DAGGER_PROFILE and not DAGGER_PROFILE & RAY
    assert set(MORE_RUNS) <= set(RUNS)


def current_profile() -> bool:
    """The profile with every benchmark's dependencies: gymnasium 1.x (SBX, minigrid 3.0 with BabyAI's bot).

    Read from gymnasium's version, not from whether ``sbx`` imports: ``make docs`` puts SBX into the dagger profile
    too, for one snippet, and minigrid there stays at 2.3.1, without the bot."""
    import gymnasium

    return int(gymnasium.__version__.split(".")[0]) >= 1


def tiny_runs() -> list[object]:
    """One test per run: a script's first run keeps the script's name as its id, its further ones are numbered."""
    params = []
    for name in sorted(RUNS):
        for i, args in enumerate([RUNS[name], *MORE_RUNS.get(name, [])]):
            params.append(pytest.param(name, args, marks=[pytest.mark.ray] if name in RAY else [],
                                       id=name if i == 0 else f"{name}-{i + 1}"))
    return params


@pytest.mark.parametrize(("script", "run"), tiny_runs())
def test_benchmark_runs_at_a_tiny_budget(script, run, tmp_path):
    if script not in RAY and (script in DAGGER_PROFILE) == current_profile():
        pytest.skip(f"{script}'s tiny run takes the {'dagger' if script in DAGGER_PROFILE else 'current'} profile")
    args = [arg.format(TMP=tmp_path, ROOT=ROOT) for arg in run]
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg",
           "SB3_HIR_JIT": "0"}
    proc = forked.run([sys.executable, str(BENCHMARKS / script), *args], cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, f"{script} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-4000:]}"
