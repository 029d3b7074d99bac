"""Every script under ``examples/`` runs with a tiny budget, as a user runs it; rl-zoo3 2.3 takes the HIR buffer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import forked
import pytest

# One profile runs these (tests/conftest.py): the examples drive the library through its public API.
pytestmark = pytest.mark.once("dagger")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: Small networks on shared cores: one torch thread each, as the CLI uses.
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def run_example(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = forked.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.parametrize(
    ("algo", "relabel", "extra"),
    [("dqn", "some", ["--randomized_actions"]), ("sac", "all", [])],
)
def test_hindsight_relabeling_example(tmp_path, algo, relabel, extra):
    from stable_baselines3 import DQN, SAC

    from sb3_hir.buffers import HindsightInstructionReplayBuffer

    proc = run_example("hindsight_relabeling_mazerunner.py", "--algo", algo, "--relabel", relabel, "--maze_size", "7",
                       "--goals", "2", "--time_limit", "20", "--timesteps", "200", "--n_envs", "2",
                       "--eval_episodes", "2", "--out", str(tmp_path), *extra, cwd=tmp_path)
    assert f"{algo} with relabel={relabel}: success rate" in proc.stdout
    assert "after 200 steps" in proc.stdout
    model = {"dqn": DQN, "sac": SAC}[algo].load(tmp_path / f"{algo}-{relabel}.zip", device="cpu")
    assert model.replay_buffer_class is HindsightInstructionReplayBuffer
    assert model.replay_buffer_kwargs["hindsight_goals"] == relabel
    assert (tmp_path / f"{algo}-{relabel}-curve.png").stat().st_size > 0


@pytest.mark.dagger
def test_dagger_example(tmp_path):
    from sb3_hir.dagger import load_round_dir

    out = tmp_path / "dagger"
    proc = run_example("dagger_mazerunner.py", "--maze_size", "7", "--time_limit", "20", "--timesteps", "300",
                       "--steps_per_round", "150", "--n_envs", "2", "--eval_episodes", "2", "--out", str(out),
                       cwd=tmp_path)
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("DAgger after 2 rounds: success rate")
    for round_num in (0, 1):
        assert sum(len(t) for t in load_round_dir(out / "demos" / f"round-{round_num:03d}")) >= 150
    assert (out / "checkpoint-latest.json").is_file()


@pytest.mark.dagger
def test_write_a_plugin_example(tmp_path):
    proc = run_example("write_a_plugin.py", "--timesteps", "400", "--out", str(tmp_path), cwd=tmp_path)
    assert "registered: beta_schedule 'warmup', relabeler 'evenly-spaced'" in proc.stdout
    relabeled = next(line for line in proc.stdout.splitlines() if line.startswith("DQN with the 'evenly-spaced'"))
    assert int(relabeled.split(": ")[1].split("%")[0]) > 0  # the plugin relabeler's draws were served
    # warmup_rounds=1, rampdown_rounds=2: 1, 1, 0.5, 0, ...
    betas = proc.stdout.split("beta per round ")[1].strip()
    assert betas.startswith("[1.0, 1.0, 0.5")


@pytest.mark.dagger
def test_write_a_plugin_relabeler_goals_are_reached_in_order():
    """The example's relabeler turns a failed episode into a success (checked with sb3-hir's own replay)."""
    import importlib.util

    import numpy as np

    from sb3_hir.envs import MazeRunnerEnv
    from sb3_hir.episodes import Episode

    spec = importlib.util.spec_from_file_location("write_a_plugin", EXAMPLES / "write_a_plugin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    env = MazeRunnerEnv(maze_dim=7, num_goals=3, time_limit=30)
    rng = np.random.default_rng(0)
    relabeler = module.EvenlySpacedRelabeler(num_goals=3)
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        observations, actions = [obs], []
        done = False
        while not done:
            action = int(rng.integers(5))
            obs, _, terminated, truncated, _ = env.step(action)
            observations.append(obs)
            actions.append(action)
            done = terminated or truncated
        t = len(actions)
        episode = Episode(observations={k: np.stack([o[k] for o in observations]) for k in obs},
                          actions=np.asarray(actions), rewards=np.zeros(t, np.float32),
                          terminated=np.zeros(t, bool), truncated=np.eye(1, t, t - 1, dtype=bool)[0])
        relabeled = relabeler.relabel(episode, rng)
        assert relabeled.terminated[-1] and relabeled.rewards.sum() == 3.0


def test_rl_zoo3_trains_with_the_hir_buffer(tmp_path):
    from stable_baselines3 import DQN

    from sb3_hir.buffers import HindsightInstructionReplayBuffer

    proc = forked.run(
        [sys.executable, "-m", "rl_zoo3.train", "--algo", "dqn", "--env", "sb3_hir/MazeRunner-v0",
         "--gym-packages", "sb3_hir", "-conf", str(EXAMPLES / "rl_zoo3" / "mazerunner_hir.py"), "-n", "200",
         "--env-kwargs", "maze_dim:7", "num_goals:2", "time_limit:20", "--eval-freq", "-1", "-f", str(tmp_path),
         "--seed", "0", "--vec-env", "dummy"],
        cwd=tmp_path, timeout=300, env=ENV,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (model_path,) = tmp_path.glob("dqn/sb3_hir-MazeRunner-v0_*/sb3_hir-MazeRunner-v0.zip")
    model = DQN.load(model_path, device="cpu")
    assert model.replay_buffer_class is HindsightInstructionReplayBuffer
    assert model.num_timesteps >= 200


def test_rl_zoo3_runs_its_own_fetchreach_her_config_with_only_the_class_swapped(tmp_path):
    import gymnasium as gym
    import gymnasium_robotics
    from stable_baselines3 import SAC

    from sb3_hir import buffers

    gym.register_envs(gymnasium_robotics)
    env_id = max(e for e in gym.registry if e in ("FetchReach-v2", "FetchReach-v4"))
    proc = forked.run(
        [sys.executable, "-m", "rl_zoo3.train", "--algo", "sac", "--env", env_id, "--gym-packages",
         "gymnasium_robotics", "-conf", str(EXAMPLES / "rl_zoo3" / "fetchreach_her_dropin.py"), "-n", "300",
         "--hyperparams", "learning_starts:100", "--eval-freq", "-1", "-f", str(tmp_path), "--seed", "0",
         "--vec-env", "dummy"],
        cwd=tmp_path, timeout=300, env=ENV,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (model_path,) = tmp_path.glob(f"sac/{env_id}_*/{env_id}.zip")
    model = SAC.load(model_path, env=gym.make(env_id), device="cpu")  # a HER-style buffer: load with env=, as HER
    assert model.replay_buffer_class is buffers.HerReplayBuffer
    assert model.replay_buffer_kwargs == dict(goal_selection_strategy="future", n_sampled_goal=4)
    assert model.num_timesteps >= 300


@pytest.mark.parametrize("history", [4, 0])
def test_memory_example_dqn(tmp_path, history):
    from stable_baselines3 import DQN

    from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor

    proc = run_example("memory_mazerunner.py", "--history", str(history), "--maze_size", "7", "--goals", "2",
                       "--time_limit", "20", "--timesteps", "300", "--n_envs", "2", "--eval_episodes", "2",
                       "--out", str(tmp_path), cwd=tmp_path)
    assert f"DQN + HIR, history {history}: success rate" in proc.stdout
    model = DQN.load(tmp_path / f"dqn-history{history}.zip", device="cpu")
    extractor = model.policy.q_net.features_extractor
    assert isinstance(extractor, HistoryExtractor if history else KeySelectExtractor)
    assert ("history" in model.observation_space.spaces) == bool(history)


@pytest.mark.dagger
def test_memory_example_bc_then_ppo(tmp_path):
    from stable_baselines3 import PPO

    proc = run_example("memory_mazerunner.py", "--learner", "bc-ppo", "--history", "4", "--maze_size", "7",
                       "--goals", "2", "--time_limit", "20", "--timesteps", "600", "--labels", "200",
                       "--bc_batches", "20", "--n_envs", "2", "--eval_episodes", "2", "--out", str(tmp_path),
                       cwd=tmp_path)
    assert "after BC on 200 expert labels: success rate" in proc.stdout
    assert PPO.load(tmp_path / "ppo-warm-history4.zip", device="cpu").observation_space["history"].shape[0] == 4
