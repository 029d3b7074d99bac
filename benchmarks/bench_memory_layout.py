"""Memory per stored transition of ``optimize_memory_usage=True`` against SB3's ``HerReplayBuffer``, on an image
GoalEnv, and what it costs ``sample(256)``.

The env is SB3's ``BitFlippingEnv(n_bits=10, image_obs_space=True)``: all three keys are 36x36 uint8 images, the
episodes end after 10 steps or on success, and a uniformly random policy acts. Each buffer is built at
``--capacity`` (1M by default) and filled with ``--fill`` transitions through its own ``add()``, in a fresh
subprocess per buffer. **Bytes per stored transition** is the growth of the process's resident memory while it is
filled, divided by ``--fill``: measured, not estimated. NumPy's zeroed arrays take memory only where written, so the
unfilled part of a 1M buffer does not count, for either side.

Speed: ``sample(256)`` of ours with the compact layout against ours without it, the same transitions in both, one
process, interleaved rounds (full, compact, full), median per call; prints the ratio and the noise, the full
layout timed against itself in the same rounds (target: not slower beyond that noise).

Usage: ``python benchmarks/bench_memory_layout.py [--capacity 1000000] [--fill 200000] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np
import psutil

BATCH = 256
BUFFERS = ("sb3-her", "sb3-hir", "sb3-hir-optimized")


def make_env() -> Any:
    from stable_baselines3.common.envs import BitFlippingEnv

    return BitFlippingEnv(n_bits=10, continuous=False, image_obs_space=True)


def build(name: str, capacity: int, venv: Any) -> Any:
    from stable_baselines3 import HerReplayBuffer as SB3HerReplayBuffer

    from sb3_hir import HerReplayBuffer

    if name == "sb3-her":
        return SB3HerReplayBuffer(capacity, venv.observation_space, venv.action_space, env=venv)
    return HerReplayBuffer(capacity, venv.observation_space, venv.action_space, env=venv, seed=0,
                           optimize_memory_usage=name == "sb3-hir-optimized")


def fill(buffers: list[Any], venv: Any, steps: int, seed: int = 0) -> float:
    """``steps`` transitions of a uniformly random policy into every buffer; the mean episode length."""
    rng = np.random.default_rng(seed)
    obs = venv.reset()
    episodes = 0
    for _ in range(steps):
        actions = rng.integers(10, size=venv.num_envs)
        next_obs, rewards, dones, infos = venv.step(actions)
        real_next = {key: value.copy() for key, value in next_obs.items()}
        for i in np.flatnonzero(dones):
            episodes += 1
            for key in real_next:
                real_next[key][i] = infos[i]["terminal_observation"][key]
        for buffer in buffers:
            buffer.add(obs, real_next, actions[:, None], rewards, dones, infos)
        obs = next_obs
    return steps * venv.num_envs / max(episodes, 1)


def measure_one(name: str, capacity: int, steps: int) -> dict[str, Any]:
    """In this (fresh) process: resident memory growth while one buffer is filled."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([make_env])
    process = psutil.Process()
    buffer = build(name, capacity, venv)
    fill([buffer], venv, 1_000)  # warm up: imports, first allocations of either side's bookkeeping
    before = process.memory_info().rss
    length = fill([buffer], venv, steps, seed=1)
    grown = process.memory_info().rss - before
    return dict(buffer=name, bytes_per_transition=grown / steps, mean_episode_length=length)


def time_sample(capacity: int, steps: int, rounds: int, calls: int) -> dict[str, Any]:
    """Median ``sample(256)`` seconds per call of each layout, and the noise: each round times the full layout
    before and after the compact one, and the median gap between those two is what the machine alone changes."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([make_env])
    full, compact = build("sb3-hir", capacity, venv), build("sb3-hir-optimized", capacity, venv)
    fill([full, compact], venv, steps, seed=2)

    def per_call(buffer: Any) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            buffer.sample(BATCH)
        return (time.perf_counter() - start) / calls

    per_call(full), per_call(compact)  # warm-up: first touches of the pages and caches, for neither side's count
    ratios, noise = [], []
    medians: dict[str, list[float]] = {"full": [], "compact": []}
    for _ in range(rounds):
        before, optimized, after = per_call(full), per_call(compact), per_call(full)
        ratios.append(optimized / ((before + after) / 2))
        noise.append(abs(after / before - 1))
        medians["full"].append((before + after) / 2)
        medians["compact"].append(optimized)
    return dict(full=float(np.median(medians["full"])), compact=float(np.median(medians["compact"])),
                ratio=float(np.median(ratios)), ratio_range=(float(min(ratios)), float(max(ratios))),
                noise=float(np.median(noise)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--fill", type=int, default=200_000)
    parser.add_argument("--sample-fill", type=int, default=100_000, help="transitions stored for the sample timing")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--one", choices=BUFFERS, help=argparse.SUPPRESS)  # the subprocess measuring one buffer
    parser.add_argument("--out", help="also write the results as JSON here")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one, args.capacity, args.fill)))
        return
    from sb3_hir.experiment import markdown_table  # not in the measuring subprocess

    print(f"image BitFlipping (n_bits 10, three 36x36 uint8 keys), capacity {args.capacity}, {args.fill} transitions "
          f"stored, load average {os.getloadavg()[0]:.2f}")
    rows = []
    for name in BUFFERS:  # one fresh process each: resident memory is a per-process measure
        proc = subprocess.run([sys.executable, __file__, "--one", name, "--capacity", str(args.capacity), "--fill",
                               str(args.fill)], capture_output=True, text=True, check=True)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    her = rows[0]["bytes_per_transition"]
    print(markdown_table(["buffer", "bytes per stored transition", "against SB3's HER", "mean episode length"],
                         [[row["buffer"], f"{row['bytes_per_transition']:.0f}",
                           f"{row['bytes_per_transition'] / her:.3f}x", f"{row['mean_episode_length']:.2f}"]
                          for row in rows]))
    ratio = rows[2]["bytes_per_transition"] / her
    print(f"{'PASS' if ratio <= 0.55 else 'MISS'}  optimize_memory_usage: {ratio:.3f}x HER's bytes per transition "
          "(target <= 0.55x)")
    speed = time_sample(args.capacity, args.sample_fill, args.rounds, args.calls)
    within = speed["ratio"] - 1 <= speed["noise"]
    print(f"sample({BATCH}) with {args.sample_fill} stored: {speed['full'] * 1e6:.0f} us without, "
          f"{speed['compact'] * 1e6:.0f} us with optimize_memory_usage: {speed['ratio']:.3f}x (median over "
          f"{args.rounds} rounds of {args.calls} calls, per round {speed['ratio_range'][0]:.3f}-"
          f"{speed['ratio_range'][1]:.3f}); noise (the full layout against itself, median over the rounds): "
          f"{speed['noise']:.3f}")
    print(f"{'PASS' if within else 'MISS'}  sample({BATCH}) not slower beyond noise: {speed['ratio'] - 1:+.3f} "
          f"against noise {speed['noise']:.3f}")
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            json.dump(dict(rows=rows, sample=speed), f, indent=2)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
