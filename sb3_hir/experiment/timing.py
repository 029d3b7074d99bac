"""Time an env's steps against another's in one process, alternating short chunks: the speed benchmarks' clock.

Why: on a shared machine the load from other processes drifts by more than the differences measured; advancing
each side in turn, a chunk at a time, lets that drift hit every side alike. ``bench_mazerunner.py`` and
``bench_action_features.py`` both time MazeRunner variants this way, so the timer lives here, not in one of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

__all__ = ["SingleEnvTimer"]


class SingleEnvTimer:
    """Steps one env under a seeded uniform-random action stream, a chunk at a time, accumulating its time.

    Both variants are advanced in alternating short chunks, so that load from other processes on a shared
    machine hits both sides alike.
    """

    def __init__(self, env_cls: Callable[..., gym.Env], maze_dim: int, seed: int) -> None:
        self.env = env_cls(maze_dim=maze_dim)
        self.env.reset(seed=seed)
        self.rng = np.random.default_rng(seed)
        self.steps = 0
        self.total = 0.0
        self.in_resets = 0.0

    def run(self, steps: int) -> None:
        actions = self.rng.integers(0, 5, size=steps).tolist()
        step, reset, clock = self.env.step, self.env.reset, time.perf_counter
        in_resets = 0.0
        start = clock()
        for a in actions:
            _, _, terminated, truncated, _ = step(a)
            if terminated or truncated:
                before = clock()
                reset()
                in_resets += clock() - before
        self.total += clock() - start
        self.in_resets += in_resets
        self.steps += steps

    def rates(self) -> tuple[float, float]:
        """(steps/s with resets included, steps/s of the step calls alone)."""
        return self.steps / self.total, self.steps / (self.total - self.in_resets)
