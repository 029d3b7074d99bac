"""bench_her_dqn_grid's calibration of each side against itself: the target's test between disjoint groups of seeds,
counted by hand on made-up scores."""

from __future__ import annotations

import numpy as np
import pytest
from benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def grid():
    return load_benchmark("bench_her_dqn_grid")


def test_groups_compare_means_of_disjoint_seeds(grid):
    # One cell, 4 seeds in groups of 2, two budgets: group means (0.5, 0.9) and (0.46, 0.95).
    cell = np.asarray([[0.4, 0.9], [0.6, 0.9], [0.42, 1.0], [0.5, 0.9]])
    # Group 1 against group 0: 0.46 < 0.5 - 0.03 misses, 0.95 holds; group 0 against group 1: 0.5 holds, and
    # 0.9 < 0.95 - 0.03 misses.
    assert grid.group_misses([cell], [cell], 2, same=True) == [1, 1]
    # Two sides on the same seeds also compare a group with itself: the second side's means (0.48, 0.88) and
    # (0.44, 0.93), in the order (0, 0), (0, 1), (1, 0), (1, 1).
    assert grid.group_misses([cell], [cell - 0.02], 2, same=False) == [0, 1, 1, 0]


def test_misses_add_over_cells_and_a_partial_group_is_left_out(grid):
    low = np.zeros((5, 1))
    high = np.ones((5, 1))
    # Seeds 0-1 against 2-3 (seed 4 is in no group of 2): only the cell whose second group is lower misses.
    falling = np.asarray([[1.0], [1.0], [0.0], [0.0], [1.0]])
    assert grid.group_misses([low, high, falling], [low, high, falling], 2, same=True) == [1, 0]


def test_the_two_sides_are_paired_by_cell_not_by_position(grid, tmp_path):
    import argparse
    import json

    args = argparse.Namespace(runs=tmp_path, seeds=[0, 1], budgets=[100], eval_episodes=1, ours_kwargs={},
                              group_size=1, sides=["HER", "ours"])
    cells = grid.cells([4])[:2]

    def keep(cell, side, scores):
        for seed, score in enumerate(scores):
            path = grid.run_path(tmp_path, dict(cell=cell, side=side, seed=seed, budgets=[100], eval_episodes=1))
            path.write_text(json.dumps({"scores": {"100": score}}))

    keep(cells[0], "HER", [1.0, 1.0])  # ours has no runs here: a positional pairing would set it against this cell
    keep(cells[1], "HER", [0.0, 0.0])
    keep(cells[1], "ours", [0.0, 0.0])
    lines = grid.self_calibration(cells, args)
    assert lines[-1] == "ours against HER (1 cells), every pairing of those groups: misses [0, 0, 0, 0], mean 0.00"
