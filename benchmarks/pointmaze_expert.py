"""The success rate of the scripted PointMaze controller (:mod:`sb3_hir_robotics.pointmaze_expert`, which says
how it steers), the demonstrations of ``bench_demos_box.py``.

On PointMaze_UMaze-v3 (``continuing_task=False``, 100 steps, actions rescaled to ``[-2, 2]``) it succeeds in 46
of 50 episodes (seeds 0-49; the same on ``[-1, 1]``), 188 of 200 (seeds 0-199):
``python benchmarks/pointmaze_expert.py [--env PointMaze_UMaze-v3] [--episodes 50] [--max-episode-steps 100]
[--scale 2.0]``. Every failure is a route of 6 cells (one end of the U to the other, 13 of the 200 episodes): the
expert takes 100-111 steps on those (at most 89 on routes of 5 cells), against the limit of 100.
"""

from __future__ import annotations

import argparse

import numpy as np
from sb3_hir_robotics.pointmaze_expert import make_env, maze_demos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="PointMaze_UMaze-v3")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-episode-steps", type=int, default=100)
    parser.add_argument("--scale", type=float, default=2.0, help="RescaleAction to [-scale, scale]; 0: none")
    args = parser.parse_args()
    env = make_env(args.env, args.max_episode_steps, args.scale or None)
    episodes = maze_demos(env, args.episodes, args.seed)
    env.close()
    success = [bool(ep.infos is not None and ep.infos[-1]["is_success"]) for ep in episodes]
    print(f"{args.env} (max_episode_steps={args.max_episode_steps}, actions in {env.action_space}): scripted expert "
          f"succeeds in {sum(success)} of {len(success)} episodes (seeds {args.seed}-{args.seed + args.episodes - 1})"
          f", success rate {np.mean(success):.2f}, mean length {np.mean([len(e) for e in episodes]):.1f}")


if __name__ == "__main__":
    main()
