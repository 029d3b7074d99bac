"""Buffers pickled by sb3-hir before the storage owned the rows and the draws read a view, with what they served next.

``python tests/concept_pickles.py`` (with ``PYTHONPATH`` at a checkout of commit a8ff4f8, the last commit with the
buffer laid out by concept but its components reading the buffer: ``_layout`` and the cursor on the buffer, the
serving taking its settings from it) wrote ``tests/data/concept_pickles.npz``. For each case it fills a small buffer
as ``served_rows.py`` does, pickles it as SB3's ``save_replay_buffer`` does, then samples from it; the test loads each
pickle with today's code and checks that it serves exactly those rows.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
from served_rows import filled_buffer, served

CONCEPT = Path(__file__).parent / "data" / "concept_pickles.npz"
SIZE = 40

#: name -> (served_rows case, overrides of its buffer kwargs, steps per sub-env): every draw strategy, both
#: layouts, 1-step and n-step serving, instruction and GoalEnv mode.
CASES: dict[str, tuple[str, dict[str, Any], int]] = {
    "exact_k3": ("maze_k3_some_future", {}, 120),
    "exact_k3_nstep_compact": ("maze_k3_all_episode_nstep", dict(optimize_memory_usage=True), 120),
    "first_reach_k1_compact": ("maze_k1_some_future", dict(optimize_memory_usage=True), 120),
    "window_k2": ("maze_k2_tolerance", {}, 80),
    "stored_k2": ("maze_k2_tolerance", dict(relabeler="final-goal", goal_spec=None), 80),
    "her_bitflip_nstep": ("bitflip_episode_nstep", {}, 120),
    "her_terminating_compact": ("point_terminating_future", dict(optimize_memory_usage=True), 120),
    "exact_k3_demos": ("maze_k3_some_future", dict(demo_ratio=0.5), 60),
    "her_bitflip_demos_compact": ("bitflip_future", dict(demo_ratio=0.25, optimize_memory_usage=True), 60),
}

#: cases whose buffer also holds demonstrations: episodes a seeded random policy plays in the case's env.
DEMOS = {"exact_k3_demos": 5, "her_bitflip_demos_compact": 5}


def demonstrations(buffer: Any, case: str, count: int) -> list[Any]:
    from served_rows import CASES as FILLS

    from sb3_hir.episodes import Episode

    env = FILLS[case][0]().envs[0]
    env.action_space.seed(11)
    return [Episode.record(env, lambda obs: env.action_space.sample(), seed=20 + i, max_steps=30)
            for i in range(count)]


def write(path: Path) -> None:
    """Fill each case's buffer with the code at hand, pickle it and what it serves next into ``path``."""
    arrays: dict[str, np.ndarray] = {}
    for name, (case, overrides, steps) in CASES.items():
        buffer = filled_buffer(case, steps=steps, size=SIZE, **overrides)
        if name in DEMOS:
            buffer.add_demonstrations(demonstrations(buffer, case, DEMOS[name]))
        arrays[f"{name}/pickle"] = np.frombuffer(pickle.dumps(buffer), dtype=np.uint8)
        arrays.update({f"{name}/{key}": value for key, value in served(buffer).items()})
    path.parent.mkdir(exist_ok=True)
    np.savez_compressed(path, **arrays)
    print(f"wrote {len(arrays)} arrays of {len(CASES)} cases to {path}", file=sys.stderr)


if __name__ == "__main__":
    write(CONCEPT)
