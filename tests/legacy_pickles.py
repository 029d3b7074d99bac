"""Buffers pickled by sb3-hir before the buffer was laid out by concept, with what they served next.

``python tests/legacy_pickles.py`` wrote ``tests/data/legacy_pickles.npz`` on commit cf051ef (the last commit with the
earlier layout: the episode index and the draw flags on the buffer itself). For each case it fills a small buffer as
``served_rows.py`` does, pickles it as SB3's ``save_replay_buffer`` does, then samples from it; the test loads each
pickle with today's code and checks that it serves exactly those rows.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
from served_rows import filled_buffer, served

LEGACY = Path(__file__).parent / "data" / "legacy_pickles.npz"
SIZE = 40

#: name -> (served_rows case, overrides of its buffer kwargs, steps per sub-env); one case per draw strategy.
CASES: dict[str, tuple[str, dict[str, Any], int]] = {
    "exact_k3": ("maze_k3_some_future", {}, 120),
    "first_reach_k1": ("maze_k1_some_future", {}, 120),
    "window_k2": ("maze_k2_tolerance", {}, 80),
    "stored_k2": ("maze_k2_tolerance", dict(relabeler="final-goal", goal_spec=None), 80),
    "her_bitflip": ("bitflip_episode_nstep", {}, 120),
    "her_terminating": ("point_terminating_future", {}, 120),
}


def legacy_buffer(name: str) -> Any:
    case, overrides, steps = CASES[name]
    return filled_buffer(case, steps=steps, size=SIZE, **overrides)


def main() -> None:
    arrays: dict[str, np.ndarray] = {}
    for name in CASES:
        buffer = legacy_buffer(name)
        arrays[f"{name}/pickle"] = np.frombuffer(pickle.dumps(buffer), dtype=np.uint8)
        arrays.update({f"{name}/{key}": value for key, value in served(buffer).items()})
    LEGACY.parent.mkdir(exist_ok=True)
    np.savez_compressed(LEGACY, **arrays)
    print(f"wrote {len(arrays)} arrays of {len(CASES)} cases to {LEGACY}", file=sys.stderr)


if __name__ == "__main__":
    main()
