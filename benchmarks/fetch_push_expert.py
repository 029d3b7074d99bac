"""A scripted controller for gymnasium-robotics' FetchPush, the demonstrations of ``bench_her_dropin.py --suite push``.

Three phases per episode, from the observation alone (gripper position ``obs[0:3]``, object position ``obs[3:6]``,
the desired goal): move above the point 7 cm behind the object on the line from the goal through the object, go
down to the object's height, then push. While pushing, the gripper aims 6 cm ahead of the contact point, on the
object-to-goal line recomputed each step, so it steers the object back onto the line as it drifts. When the object
slips sideways (more than 3 cm off the line) or the gripper passes it, the controller goes back to the first phase.
The gripper stays closed.

On FetchPush-v4 it succeeds in 50 of 50 episodes (seeds 0-49): ``python benchmarks/fetch_push_expert.py``.

The controller is :mod:`sb3_hir.experiment.experts.fetch_push`; this script measures its success rate.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from sb3_hir.experiment.experts.fetch_push import push_demos, push_env_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args: Any = parser.parse_args()
    episodes = push_demos(args.episodes, args.seed)
    success = [bool(ep.infos[-1]["is_success"]) for ep in episodes]
    print(f"{push_env_id()}: scripted pusher succeeds in {sum(success)} of {len(success)} episodes "
          f"(seeds {args.seed}-{args.seed + args.episodes - 1}), mean length {np.mean([len(e) for e in episodes]):.1f}")


if __name__ == "__main__":
    main()
