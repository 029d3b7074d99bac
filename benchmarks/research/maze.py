"""The MazeRunner options that the MazeRunner benchmark scripts share (one definition of their names and types)."""

from __future__ import annotations

import argparse


def add_maze(parser: argparse.ArgumentParser, *, maze_dim: int | None = None, goals: int | None = None,
             time_limit: int | None = None) -> None:
    """The MazeRunner options given: ``--maze-dim``, ``--goals``, ``--time-limit`` (omitted ones are not added)."""
    for flag, default in (("--maze-dim", maze_dim), ("--goals", goals), ("--time-limit", time_limit)):
        if default is not None:
            parser.add_argument(flag, type=int, default=default)
