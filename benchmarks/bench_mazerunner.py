"""Steps/s of MazeRunner against a variant that recomputes its wall sensors with Python loops every step.

The loop variant subclasses :class:`~sb3_hir.envs.MazeRunnerEnv` and overrides only the sensor computation (no
per-maze table; it walks the maze from the agent in four directions each step, as the implementation in common
use does). Both run in this one process on the same seeds and the same random action stream, hence the same mazes
and trajectories, alternating in short chunks so that load from other processes hits both alike. Also prints the
``DummyVecEnv`` rate for 8 envs. Target: ratio >= 2 with resets included.

The main figure includes resets (each builds a maze, which both sides pay; the loop variant skips the sensor
table); the ``step() only`` column excludes the time spent in ``reset``.

Usage: ``python benchmarks/bench_mazerunner.py [--steps 200000] [--vec-steps 20000] [--maze-dim 11] [--chunks 40]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from research.maze import add_maze
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.experiment import arguments, markdown_table
from sb3_hir.experiment.timing import SingleEnvTimer


class LoopSensorMazeRunner(MazeRunnerEnv):
    """MazeRunner whose four wall distances are recomputed with Python loops at every step."""

    def _build_sensor_table(self) -> None:
        pass

    def _sensor_obs(self, cell: int) -> np.ndarray:
        n = self.maze_dim
        maze = self.maze
        i, j = divmod(cell, n)
        west, s = 0, j - 1
        while s > 0 and not maze[i, s]:
            west += 1
            s -= 1
        east, s = 0, j + 1
        while s < n and not maze[i, s]:
            east += 1
            s += 1
        north, s = 0, i - 1
        while s > 0 and not maze[s, j]:
            north += 1
            s -= 1
        south, s = 0, i + 1
        while s < n and not maze[s, j]:
            south += 1
            s += 1
        return np.array([i / n, j / n, west / n, north / n, east / n, south / n, 0.0], dtype=np.float32)


def vec_env_rate(n_envs: int, steps: int, maze_dim: int, seed: int) -> float:
    """Env steps/s (n_envs per VecEnv step) of a DummyVecEnv of MazeRunner envs."""
    venv = DummyVecEnv([lambda: MazeRunnerEnv(maze_dim=maze_dim) for _ in range(n_envs)])
    venv.seed(seed)
    venv.reset()
    actions = np.random.default_rng(seed).integers(0, 5, size=(steps, n_envs))
    start = time.perf_counter()
    for a in actions:
        venv.step(a)
    elapsed = time.perf_counter() - start
    venv.close()
    return steps * n_envs / elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000, help="single-env steps per variant")
    parser.add_argument("--vec-steps", type=int, default=20_000, help="DummyVecEnv steps (x n_envs env steps)")
    arguments.add_n_envs(parser, 8)
    add_maze(parser, maze_dim=11)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunks", type=int, default=40, help="alternating chunks the steps are split into")
    args = parser.parse_args(argv)

    fast = SingleEnvTimer(MazeRunnerEnv, args.maze_dim, args.seed)
    loop = SingleEnvTimer(LoopSensorMazeRunner, args.maze_dim, args.seed)
    fast.run(2_000)  # warm-up, not counted
    loop.run(2_000)
    fast.steps = loop.steps = 0
    fast.total = loop.total = fast.in_resets = loop.in_resets = 0.0
    chunk = max(1, args.steps // args.chunks)
    for _ in range(args.chunks):
        fast.run(chunk)
        loop.run(chunk)
    vec = vec_env_rate(args.n_envs, args.vec_steps, args.maze_dim, args.seed)

    (fast_all, fast_step), (loop_all, loop_step) = fast.rates(), loop.rates()
    print(
        f"MazeRunner maze_dim={args.maze_dim}: {fast.steps} uniform-random steps per variant, "
        f"interleaved in {args.chunks} chunks"
    )
    print(markdown_table(["", "with resets (steps/s)", "step() only (steps/s)"], [
        ["MazeRunnerEnv (precomputed sensors)", f"{fast_all:,.0f}", f"{fast_step:,.0f}"],
        ["loop-sensor variant (Python loops)", f"{loop_all:,.0f}", f"{loop_step:,.0f}"],
        ["ratio (target >= 2.0 with resets)", f"{fast_all / loop_all:.2f}x", f"{fast_step / loop_step:.2f}x"],
    ]))
    print(f"DummyVecEnv x{args.n_envs} MazeRunnerEnv: {vec:,.0f} env steps/s")
    print(f"target (>= 2x, resets included): {'met' if fast_all / loop_all >= 2.0 else 'MISSED'}")


if __name__ == "__main__":
    main()
