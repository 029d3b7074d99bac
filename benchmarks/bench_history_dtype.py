"""What the history window's dtype costs: replay memory and DQN training speed, uint8 against float32 windows.

BabyAI's GoToLocal (the ``sb3-hir-minigrid`` plugin) under :class:`~sb3_hir.history.HistoryWrapper` (16 steps): its
observation is BabyAI's grid of object codes, so every window entry is a small integer and ``dtype="auto"`` stores
the window in uint8. The learner is ``benchmarks/babyai_goto.py``'s (DQN + HistoryExtractor + the hindsight buffer
with 3-step returns). Both models live in this process and are advanced in alternating chunks of ``--chunk`` env
steps (``learn`` with ``reset_num_timesteps=False``: acting, storing, sampling and gradient steps all count), so
load from other processes hits both alike. Printed: the bytes a replay row's windows take (SB3's full layout:
observation and next observation), the buffer at 400k rows, env steps per second and the float32/uint8 time ratio.

Usage: ``python benchmarks/bench_history_dtype.py [--steps 8000] [--chunk 1000]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.experiment import markdown_table
from sb3_hir.extractors import HistoryExtractor
from sb3_hir.history import HistoryWrapper

ROWS_AT_SCALE = 400_000


def build(dtype: str, args: argparse.Namespace) -> DQN:
    from sb3_hir_minigrid import make_babyai_goto

    venv = make_vec_env(lambda: HistoryWrapper(make_babyai_goto("BabyAI-GoToLocal-v0"), length=16, dtype=dtype),
                        n_envs=8, seed=0, vec_env_cls=DummyVecEnv)
    spec = venv.get_attr("goal_spec", indices=[0])[0]
    return DQN("MultiInputPolicy", venv, buffer_size=args.steps, learning_starts=1_000, batch_size=128, gamma=0.97,
               train_freq=1, gradient_steps=4, target_update_interval=2_000,
               replay_buffer_class=HindsightInstructionReplayBuffer,
               replay_buffer_kwargs=dict(hindsight_goals="some", relabel_ratio=0.8, seed=0, n_steps=3, gamma=0.97,
                                         goal_spec=spec),
               policy_kwargs=dict(net_arch=[256, 256], features_extractor_class=HistoryExtractor,
                                  features_extractor_kwargs=dict(keys=["obs", "goals"])),
               seed=0, verbose=0, device="cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8_000)
    parser.add_argument("--chunk", type=int, default=1_000)
    args = parser.parse_args()
    th.set_num_threads(1)
    models = {dtype: build(dtype, args) for dtype in ("auto", "float32")}
    seconds = dict.fromkeys(models, 0.0)
    while min(m.num_timesteps for m in models.values()) < args.steps:
        for dtype, model in models.items():
            start = time.perf_counter()
            model.learn(args.chunk, reset_num_timesteps=False)
            seconds[dtype] += time.perf_counter() - start
    rows = []
    for dtype, model in models.items():
        buffer: Any = model.replay_buffer
        window = buffer.observations["history"]
        stored = [window, getattr(buffer, "next_observations", {}).get("history")]
        per_row = sum(a.nbytes for a in stored if a is not None) // (window.shape[0] * window.shape[1])
        rows.append([f"{dtype} ({window.dtype})", f"{per_row:,} B", f"{per_row * ROWS_AT_SCALE / 2**30:.2f} GiB",
                     f"{model.num_timesteps / seconds[dtype]:.0f}", f"{seconds[dtype] / seconds['auto']:.2f}"])
    print(markdown_table(["window dtype", "window bytes per replay row", f"at {ROWS_AT_SCALE // 1000}k rows",
                          "env steps / s", "time / uint8's"], rows))


if __name__ == "__main__":
    main()
