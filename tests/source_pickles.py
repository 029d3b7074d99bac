"""Buffers pickled by sb3-hir 0.2 (the sources holding the parts, the settings copied onto the buffer), with what
they served next.

``python tests/source_pickles.py`` wrote ``tests/data/source_pickles.npz`` on commit c3075a3, the last commit with
that state: the online and demonstration sources with views reading the buffer, the settings and counters as the
buffer's attributes. The cases are ``concept_pickles.py``'s (every draw strategy, both layouts, 1-step and n-step
serving, instruction and GoalEnv mode, demonstrations). The test loads each pickle with today's code and checks that
it serves exactly those rows.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
from concept_pickles import CASES, DEMOS, demonstrations
from served_rows import filled_buffer, served

SOURCE = Path(__file__).parent / "data" / "source_pickles.npz"
SIZE = 40


def main() -> None:
    arrays: dict[str, np.ndarray] = {}
    for name, (case, overrides, steps) in CASES.items():
        buffer = filled_buffer(case, steps=steps, size=SIZE, **overrides)
        if name in DEMOS:
            buffer.add_demonstrations(demonstrations(buffer, case, DEMOS[name]))
        arrays[f"{name}/pickle"] = np.frombuffer(pickle.dumps(buffer), dtype=np.uint8)
        arrays.update({f"{name}/{key}": value for key, value in served(buffer).items()})
    SOURCE.parent.mkdir(exist_ok=True)
    np.savez_compressed(SOURCE, **arrays)
    print(f"wrote {len(arrays)} arrays of {len(CASES)} cases to {SOURCE}", file=sys.stderr)


if __name__ == "__main__":
    main()
