"""The seeds of a benchmark's runs: one rule for training and evaluation streams, and the process state to set.

Why: every comparison in ``docs/results.md`` rests on each side seeing the same env streams. The scripts used to
spell the rule out each (``seed`` for training, ``10_000 + seed`` for the held-out episodes); here it is written
once, so that a new benchmark cannot evaluate on its training stream by accident. Expert demonstrations get a third
stream (``20_000 + seed``, the one ``sb3-hir train --demos`` collects in), apart from both.
"""

from __future__ import annotations

import torch
from stable_baselines3.common.utils import set_random_seed

__all__ = ["DEMO_SEED_OFFSET", "EVAL_SEED_OFFSET", "demo_seed", "eval_seed", "seed_process"]

#: Added to a run's seed for its evaluation envs: far from every training seed, the same for every side.
EVAL_SEED_OFFSET = 10_000


def eval_seed(seed: int) -> int:
    """The seed of run ``seed``'s held-out evaluation episodes (the same for every side of a comparison)."""
    return EVAL_SEED_OFFSET + int(seed)


#: Added to a run's seed for the envs its expert demonstrations are collected in: apart from training and evaluation
#: (``sb3-hir train --demos`` uses the same offset).
DEMO_SEED_OFFSET = 20_000


def demo_seed(seed: int) -> int:
    """The seed of run ``seed``'s demonstration envs: every side of a comparison that takes demonstrations gets the
    same episodes, none of them from the training or the held-out missions' streams."""
    return DEMO_SEED_OFFSET + int(seed)


def seed_process(seed: int, threads: int = 1) -> None:
    """Seed Python, NumPy and torch for run ``seed`` and pin torch to ``threads`` threads.

    One thread by default: the benchmarks' small networks run fastest that way, and runs share the machine's cores
    (with Ray, one trial per core).
    """
    set_random_seed(int(seed))
    torch.set_num_threads(int(threads))
