"""Env steps per CPU-second of BabyAI learners, every side in one process, alternating in chunks.

The learners of ``benchmarks/babyai_goto.py`` on one level (default GoToLocal), each built by its ``build_model``:

* ``today``: DQN + relabeling ("some") as the benchmark runs it: 8 envs, window 16 with the conv encoder, 4 gradient
  steps of batch 128 per vector step;
* ``grad1``: the same with 1 gradient step per vector step (8 env steps);
* ``grad1-window4``: and a window of 4 steps;
* ``grad1-nowindow``: and no window (the flat features of the current step, ``KeySelectExtractor``);
* ``grad1-window4-film``: ``grad1-window4`` reading the current step through the plugin's goal-conditioned
  ``BabyAIFiLMExtractor`` (``--extractor film``);
* ``ppo``: plain SB3 PPO, ``MultiInputPolicy`` over the flat features at rl-zoo3's MiniGrid settings
  (``hyperparams/ppo.yml``: 8 envs, ``n_steps`` 128, batch 64, 10 epochs), the anchor of issue 53.

Each learner first runs past DQN's ``learning_starts`` untimed; then the learners take turns, ``--chunk`` env steps
each, ``--rounds`` times, each turn timed by the process's CPU time (one torch thread). Printed: env steps per
CPU-second of each, and its ratio to ``today``. Only speed is measured here; whether a faster learner learns as much
per env step is the learning curves' question (``babyai_goto.py``).

Usage: ``python benchmarks/bench_babyai_speed.py [--level BabyAI-GoToLocal-v0] [--chunk 2048] [--rounds 5]
[--learners today grad1 ...]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import babyai_goto
from stable_baselines3 import PPO

from sb3_hir.experiment import markdown_table, seed_process
from sb3_hir.extractors import KeySelectExtractor

LEARNERS: dict[str, dict[str, Any] | None] = {
    "today": {},
    "grad1": dict(gradient_steps=1),
    "grad1-window4": dict(gradient_steps=1, history=4),
    "grad1-nowindow": dict(gradient_steps=1, history=0),
    "grad1-window4-film": dict(gradient_steps=1, history=4, extractor="film"),
    "ppo": None,
}
#: rl-zoo3's PPO settings for MiniGrid (``hyperparams/ppo.yml``) on plain PPO.
PPO_ZOO: dict[str, Any] = dict(n_steps=128, batch_size=64, gae_lambda=0.95, gamma=0.99, n_epochs=10, ent_coef=0.0,
               learning_rate=2.5e-4, clip_range=0.2)


def options(level: str, k_max: int, **changes: Any) -> dict[str, Any]:
    """``babyai_goto.py``'s defaults, with ``changes``."""
    base = dict(level=level, k_max=k_max, step_reward=0.0, history=16, encoder="conv", steps=400_000, n_envs=8,
                gamma=0.97, learning_rate=5e-4, gradient_steps=4, exploration_fraction=0.15, n_steps=3,
                target_update_interval=2_000, exploration_final_eps=0.05, eval_episodes=10)
    return {**base, **changes}


def build(name: str, level: str, k_max: int, seed: int) -> Any:
    keys = ["obs", "goals", "goal_steps"] if k_max > 1 else ["obs", "goals"]
    changes = LEARNERS[name]
    if changes is None:
        venv = babyai_goto.make_venv(options(level, k_max, history=0), seed, 8)
        return PPO("MultiInputPolicy", venv, **PPO_ZOO, seed=seed, verbose=0, device="cpu",
                   policy_kwargs=dict(features_extractor_class=KeySelectExtractor,
                                      features_extractor_kwargs=dict(keys=keys)))
    return babyai_goto.build_model(options(level, k_max, **changes), "some", seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", default="BabyAI-GoToLocal-v0")
    parser.add_argument("--k-max", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=2048, help="env steps per turn")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2_048, help="untimed env steps first (DQN starts at 2,000)")
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=list(LEARNERS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    seed_process(args.seed)
    models = {name: build(name, args.level, args.k_max, args.seed) for name in args.learners}
    for model in models.values():
        model.learn(args.warmup, reset_num_timesteps=False)
    cpu = dict.fromkeys(models, 0.0)
    steps = dict.fromkeys(models, 0)
    for _ in range(args.rounds):
        for name, model in models.items():
            before, start = model.num_timesteps, time.process_time()
            model.learn(args.chunk, reset_num_timesteps=False)
            cpu[name] += time.process_time() - start
            steps[name] += model.num_timesteps - before
    print(f"{args.level}: {args.rounds} turns of {args.chunk} env steps per learner after {args.warmup} untimed, "
          f"seed {args.seed}, one torch thread")
    base = steps["today"] / cpu["today"] if cpu.get("today") else None
    rows = []
    for name in models:
        rate = steps[name] / max(cpu[name], 1e-9)
        rows.append([name, steps[name], f"{cpu[name]:.1f}", f"{rate:.0f}", f"{rate / base:.2f}x" if base else "-"])
    print(markdown_table(["learner", "env steps", "CPU seconds", "env steps per CPU-second", "against today"], rows))

if __name__ == "__main__":
    main()
