"""What memory costs: DQN training speed with HistoryExtractor (GRU, conv) against KeySelectExtractor.

The same DQN + :class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer` setup as ``bench_history.py`` (``sb3-hir
train``'s DQN defaults: 8 envs, 4 gradient steps per vector step, batch 128) on MazeRunner 9x9, k = 3. Each variant
is one model in this process; they are advanced in alternating chunks of ``--chunk`` env steps (``learn`` with
``reset_num_timesteps=False``, so acting, storing, sampling and the gradient steps all count) so that load from
other processes hits every variant alike. Printed: env steps per second and the ratio of training time against
the memoryless variant (the cost of memory per env step).

Usage: ``python benchmarks/bench_history_cost.py [--steps 12000] [--chunk 1000] [--history 16]``
"""

from __future__ import annotations

import argparse
import time

import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.experiment import arguments, markdown_table
from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
from sb3_hir.history import HistoryWrapper


def build(encoder: str, args: argparse.Namespace) -> DQN:
    def env_fn():
        env = MazeRunnerEnv(maze_dim=9, num_goals=3, time_limit=100)
        return HistoryWrapper(env, length=args.history) if encoder else env

    venv = make_vec_env(env_fn, n_envs=8, seed=0, vec_env_cls=DummyVecEnv)
    extractor = (dict(features_extractor_class=HistoryExtractor,
                      features_extractor_kwargs=dict(keys=["obs", "goals"], encoder=encoder))
                 if encoder else
                 dict(features_extractor_class=KeySelectExtractor,
                      features_extractor_kwargs=dict(keys=["obs", "goals"])))
    return DQN("MultiInputPolicy", venv, learning_rate=5e-4, batch_size=128, gamma=0.97, buffer_size=args.steps + 2_000,
               learning_starts=1_000, train_freq=1, gradient_steps=4, target_update_interval=2_000,
               exploration_fraction=0.3, replay_buffer_class=HindsightInstructionReplayBuffer,
               replay_buffer_kwargs=dict(hindsight_goals="some", seed=0),
               policy_kwargs=dict(net_arch=[256, 256], **extractor),
               seed=0, verbose=0, device="cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=12_000, help="timed env steps per variant")
    parser.add_argument("--chunk", type=int, default=1_000)
    arguments.add_history(parser, 16)
    args = parser.parse_args()
    th.set_num_threads(1)
    variants = {"KeySelectExtractor (no memory)": "", "HistoryExtractor gru": "gru", "HistoryExtractor conv": "conv"}
    models = {name: build(encoder, args) for name, encoder in variants.items()}
    for model in models.values():  # warm-up: fill past learning_starts, untimed
        model.learn(2_000, reset_num_timesteps=False)
    seconds = dict.fromkeys(models, 0.0)
    for _ in range(args.steps // args.chunk):
        for name, model in models.items():
            start = time.perf_counter()
            model.learn(args.chunk, reset_num_timesteps=False)
            seconds[name] += time.perf_counter() - start
    base = seconds["KeySelectExtractor (no memory)"]
    print(f"DQN + HIR on MazeRunner 9x9, k=3, 8 envs, 4 gradient steps (batch 128) per vector step, history "
          f"{args.history}; {args.steps} timed env steps per variant in chunks of {args.chunk}")
    print(markdown_table(["extractor", "env steps/s", "training time vs no memory"],
                         [[name, f"{args.steps / secs:.0f}", f"{secs / base:.2f}x"] for name, secs in seconds.items()]))


if __name__ == "__main__":
    main()
