"""What the per-action tables cost per env step: MazeRunner bare against MazeRunner with each table, one process.

``ActionFeaturesWrapper`` runs its tracker on every ``step``: ``"effects"`` (the generic :class:`EffectTable`) and
``"env"`` (MazeRunner's :class:`MoveBelief`, with its permutation propagation). Each side steps its own env under the
same seeded uniform-random actions (hence the same mazes and trajectories), alternating in short chunks so that load
from other processes hits every side alike; resets are included, as training pays them. The ratio is the table's
steps/s over the bare env's. With ``--randomized-actions`` the belief has to work its controls out every episode.

Usage: ``python benchmarks/bench_action_features.py [--steps 100000] [--maze-dim 11] [--chunks 40]
[--randomized-actions]``
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from research.maze import add_maze

from sb3_hir.action_features import ActionFeaturesWrapper
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.experiment.timing import SingleEnvTimer


def make(features: str | None, randomized_actions: bool, **kwargs: Any) -> ActionFeaturesWrapper | MazeRunnerEnv:
    env = MazeRunnerEnv(randomized_actions=randomized_actions, **kwargs)
    return env if features is None else ActionFeaturesWrapper(env, features)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000, help="single-env steps per side")
    add_maze(parser, maze_dim=11)
    parser.add_argument("--randomized-actions", action="store_true", help="permute the moves every episode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunks", type=int, default=40, help="alternating chunks the steps are split into")
    args = parser.parse_args(argv)

    sides = {name: SingleEnvTimer(functools.partial(make, features, args.randomized_actions), args.maze_dim,
                                  args.seed)
             for name, features in (("bare MazeRunnerEnv", None), ("effects (EffectTable)", "effects"),
                                    ("env (MoveBelief)", "env"))}
    for timer in sides.values():  # warm-up, not counted
        timer.run(2_000)
        timer.steps, timer.total, timer.in_resets = 0, 0.0, 0.0
    chunk = max(1, args.steps // args.chunks)
    for _ in range(args.chunks):
        for timer in sides.values():
            timer.run(chunk)
    bare = sides["bare MazeRunnerEnv"].rates()[0]
    print(f"MazeRunner maze_dim={args.maze_dim}, randomized_actions={args.randomized_actions}: {chunk * args.chunks} "
          f"uniform-random steps per side, resets included, interleaved in {args.chunks} chunks")
    for name, timer in sides.items():
        rate = timer.rates()[0]
        print(f"{name:28} {rate:>10,.0f} steps/s   {rate / bare:5.2f}x the bare env   "
              f"{1e6 / rate - 1e6 / bare:+7.1f} us per step")


if __name__ == "__main__":
    main()
