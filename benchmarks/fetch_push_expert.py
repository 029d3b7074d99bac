"""The success rate of the scripted FetchPush controller (:mod:`sb3_hir_robotics.fetch_push_expert`, which says
how it pushes), the demonstrations of ``bench_her_dropin.py --suite push``.

On FetchPush-v4 it succeeds in 50 of 50 episodes (seeds 0-49): ``python benchmarks/fetch_push_expert.py``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from sb3_hir_robotics.fetch_push_expert import push_demos, push_env_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args: Any = parser.parse_args()
    episodes = push_demos(args.episodes, args.seed)
    success = [bool(ep.infos is not None and ep.infos[-1]["is_success"]) for ep in episodes]
    print(f"{push_env_id()}: scripted pusher succeeds in {sum(success)} of {len(success)} episodes "
          f"(seeds {args.seed}-{args.seed + args.episodes - 1}), mean length {np.mean([len(e) for e in episodes]):.1f}")


if __name__ == "__main__":
    main()
