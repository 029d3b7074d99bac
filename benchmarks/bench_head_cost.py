"""What the per-action Q head costs per gradient step against DQN's standard head, both sides in one process.

One DQN-shaped train step (target forward without gradients, online forward and backward, an Adam step) on a batch of
MazeRunner observations with the moonshot's extractor (16-step window, GRU) and ``net_arch``: the standard head
(``MultiInputPolicy``, which reads the per-action table as one more key) against ``PerActionDQNPolicy`` over the same
table. Interleaved rounds, median per side, one torch thread; the ratio is per-action / standard.

Usage: ``python benchmarks/bench_head_cost.py [--batch 128] [--rounds 7] [--steps 50] [--maze-dim 11]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.dqn.policies import MultiInputPolicy

from sb3_hir import ActionFeaturesWrapper, MazeRunnerEnv, PerActionDQNPolicy
from sb3_hir.experiment import markdown_table
from sb3_hir.extractors import HistoryExtractor
from sb3_hir.history import HistoryWrapper


def train_step(policy: Any, batch: dict[str, th.Tensor]) -> None:
    with th.no_grad():
        target = policy.q_net_target(batch).max(dim=1).values
    q = policy.q_net(batch).max(dim=1).values
    loss = th.nn.functional.smooth_l1_loss(q, target)
    policy.optimizer.zero_grad()
    loss.backward()
    policy.optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=50, help="train steps per round and side")
    parser.add_argument("--maze-dim", type=int, default=11)
    parser.add_argument("--history", type=int, default=16)
    parser.add_argument("--net-arch", type=int, nargs="+", default=[256, 256])
    args = parser.parse_args()
    th.set_num_threads(1)
    th.manual_seed(0)
    env = HistoryWrapper(ActionFeaturesWrapper(MazeRunnerEnv(maze_dim=args.maze_dim, randomized_actions=True), "env"),
                         length=args.history)
    space: Any = env.observation_space  # HistoryWrapper's Dict space
    actions: Any = env.action_space  # MazeRunner's Discrete(5)
    extractor = dict(features_extractor_class=HistoryExtractor, net_arch=args.net_arch)
    sides = {
        "standard": MultiInputPolicy(space, actions, lambda _: 5e-4, **extractor,
                                     features_extractor_kwargs=dict(keys=["obs", "goals", "action_features"],
                                                                    encoder="gru")),
        "per-action": PerActionDQNPolicy(space, env.action_space, lambda _: 5e-4, **extractor,
                                         features_extractor_kwargs=dict(keys=["obs", "goals"], encoder="gru")),
    }
    space.seed(0)
    samples = [space.sample() for _ in range(args.batch)]
    batch = {k: th.as_tensor(np.stack([s[k] for s in samples])).float() for k in space.spaces}
    times: dict[str, list[float]] = {name: [] for name in sides}
    for policy in sides.values():
        train_step(policy, batch)  # warm-up
    for _ in range(args.rounds):
        for name, policy in sides.items():
            start = time.perf_counter()
            for _ in range(args.steps):
                train_step(policy, batch)
            times[name].append((time.perf_counter() - start) / args.steps * 1e3)
    standard, per_action = (float(np.median(times[n])) for n in ("standard", "per-action"))
    print(f"train step, batch {args.batch}, MazeRunner {args.maze_dim}x{args.maze_dim}, history {args.history} (GRU), "
          f"net_arch {args.net_arch}; median of {args.rounds} interleaved rounds of {args.steps} steps")
    print(markdown_table(["head", "ms per train step"], [["standard (MultiInputPolicy)", f"{standard:.2f}"],
                                                          ["per-action (PerActionDQNPolicy)", f"{per_action:.2f}"]]))
    print(f"per-action / standard: {per_action / standard:.2f}x")


if __name__ == "__main__":
    main()
