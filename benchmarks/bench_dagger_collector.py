"""DAgger collection speed: sb3-hir's DAggerCollector vs imitation's InteractiveTrajectoryCollector.

Both wrap the same VecEnv (CartPole-v1 x 8, DummyVecEnv), get the same expert actions (a balancing heuristic
wrapped as an SB3 policy) and the same learner (an untrained imitation FeedForward32Policy), beta = 0.5, and
save what they collect (imitation: one HuggingFace dataset per episode in its save_dir; sb3-hir: one compressed
file per round). The bare VecEnv driven by the expert alone is the ceiling; the same loop that also queries
the learner every step (what DAgger needs, without recording or saving anything) shows how much of the gap is
the learner's forward pass. Every condition runs ``--repeats`` times, interleaved, and the best rate of each
is reported (the machine is shared).

    python benchmarks/bench_dagger_collector.py [--steps 20000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings

import datasets
import gymnasium as gym
import numpy as np
import torch as th
from imitation.algorithms.dagger import InteractiveTrajectoryCollector
from imitation.policies.base import FeedForward32Policy
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from sb3_hir.dagger import DAggerCollector

N_ENVS = 8
BETA = 0.5


class BalancePolicy(BasePolicy):
    """Push the cart toward the side the pole is falling to: a good CartPole expert with no training."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(observation_space, action_space)

    def forward(self, obs: th.Tensor) -> th.Tensor:
        return self._predict(obs)

    def _predict(self, observation: th.Tensor, deterministic: bool = False) -> th.Tensor:  # type: ignore[override]
        return (observation[:, 2] + 0.5 * observation[:, 3] > 0).long()


def make_venv(seed: int) -> VecEnv:
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * N_ENVS)
    venv.seed(seed)
    return venv


def drive(venv: VecEnv, expert: BasePolicy, n_steps: int, learner: BasePolicy | None = None) -> int:
    """Step ``venv`` with the expert's actions (also querying ``learner`` if given); returns env-steps taken."""
    obs = venv.reset()
    for _ in range(n_steps // N_ENVS):
        acts, _ = expert.predict(obs, deterministic=True)
        if learner is not None:
            learner.predict(obs, deterministic=True)
        obs, _, _, _ = venv.step(acts)
    return (n_steps // N_ENVS) * N_ENVS


def run(condition: str, n_steps: int, seed: int) -> float:
    venv = make_venv(seed)
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    th.manual_seed(seed)
    learner = FeedForward32Policy(venv.observation_space, venv.action_space, lr_schedule=lambda _: 1e-3)
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as save_dir:
        start = time.perf_counter()
        if condition == "bare VecEnv (expert only)":
            steps = drive(venv, expert, n_steps)
        elif condition == "bare VecEnv + learner.predict, no recording":
            steps = drive(venv, expert, n_steps, learner)
        elif condition == "imitation InteractiveTrajectoryCollector":
            collector = InteractiveTrajectoryCollector(
                venv, lambda obs: learner.predict(obs, deterministic=True)[0], BETA, save_dir, rng
            )
            steps = drive(collector, expert, n_steps)
        else:
            collector = DAggerCollector(venv, learner, BETA, save_dir, rng)
            steps = drive(collector, expert, n_steps)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the partial episodes it reports
                collector.finish_round(policy="report")
        elapsed = time.perf_counter() - start
    venv.close()
    return steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    th.set_num_threads(1)
    datasets.disable_progress_bars()  # imitation saves one dataset per episode; no bar per save
    conditions = [
        "bare VecEnv (expert only)",
        "bare VecEnv + learner.predict, no recording",
        "imitation InteractiveTrajectoryCollector",
        "sb3-hir DAggerCollector",
    ]
    for condition in conditions:  # warm-up: lazy imports, first dataset write
        run(condition, 400, args.seed)
    rates: dict[str, list[float]] = {c: [] for c in conditions}
    for _ in range(args.repeats):
        for condition in conditions:
            rates[condition].append(run(condition, args.steps, args.seed))
    best = {c: max(r) for c, r in rates.items()}
    print(f"CartPole-v1 x {N_ENVS} (DummyVecEnv), beta={BETA}, {args.steps} env-steps, best of {args.repeats}")
    print(f"{'condition':<46}{'env-steps/s':>12}")
    for condition in conditions:
        print(f"{condition:<46}{best[condition]:>12.0f}")
    ours = best["sb3-hir DAggerCollector"]
    theirs = best["imitation InteractiveTrajectoryCollector"]
    ceiling = best["bare VecEnv (expert only)"]
    print(f"DAggerCollector / imitation collector: {ours / theirs:.2f}x (target >= 2.5x)")
    print(f"DAggerCollector / bare VecEnv ceiling: {ours / ceiling:.2f}")
    print(f"DAggerCollector / VecEnv that also queries the learner (DAgger's own cost): "
          f"{ours / best['bare VecEnv + learner.predict, no recording']:.2f}")


if __name__ == "__main__":
    main()
