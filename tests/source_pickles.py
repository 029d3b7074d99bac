"""Buffers pickled by sb3-hir 0.2 (the sources holding the parts, the settings copied onto the buffer), with what
they served next.

``python tests/source_pickles.py`` wrote ``tests/data/source_pickles.npz`` on commit c3075a3, the last commit with
that state: the online and demonstration sources with views reading the buffer, the settings and counters as the
buffer's attributes. The cases are ``concept_pickles.py``'s (every draw strategy, both layouts, 1-step and n-step
serving, instruction and GoalEnv mode, demonstrations). The test loads each pickle with today's code and checks that
it serves exactly those rows.
"""

from __future__ import annotations

from pathlib import Path

from concept_pickles import write

SOURCE = Path(__file__).parent / "data" / "source_pickles.npz"

if __name__ == "__main__":
    write(SOURCE)
