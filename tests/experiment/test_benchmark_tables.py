"""bench_her_dropin's push and grid tables, printed through markdown_table: the text the hand-written lines printed
(frozen from the script before the change, on the same made-up scores)."""

from __future__ import annotations

import argparse

import pytest
from benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def dropin():
    return load_benchmark("bench_her_dropin")


def test_the_push_table_prints_as_before(dropin, capsys):
    args = argparse.Namespace(budget_step=1000, max_push_steps=4000, net_arch=[256, 256], batch_size=2048,
                              framework="sb3", seeds=[0, 1])
    configs, outs = [], []
    for seed in (0, 1):
        for i, side in enumerate(dropin.PUSH_SIDES):
            configs.append(dict(seed=seed, buffer=side))
            outs.append(dict(scores={str(b): min(1.0, 0.1 * i + b / 5000 + 0.05 * seed) for b in range(1000, 4001,
                                                                                                        1000)}))
    dropin.push_table(configs, outs, args)
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("| budget | HER | ours | ours-n3 | ours-demos |")
    assert lines[start:start + 5] == [
        "| budget | HER | ours | ours-n3 | ours-demos |",
        "|---:|---:|---:|---:|---:|",
        "| 1000 | 0.23 ± 0.02 | 0.33 ± 0.02 | 0.43 ± 0.02 | 0.53 ± 0.03 |",
        "| 3000 | 0.62 ± 0.03 | 0.72 ± 0.03 | 0.83 ± 0.03 | 0.93 ± 0.03 |",
        "pure swap >= HER within the spread at 1/4, 1/2, 1x of B: met",
    ]


def test_the_grid_table_prints_as_before(dropin, capsys):
    configs, outs = [], []
    for setting in ("perf", "bits8"):
        for seed in (0, 1, 2):
            for i, side in enumerate(dropin.GRID_SIDES):
                configs.append(dict(setting=setting, seed=seed, buffer=side))
                outs.append(dict(scores={str(b): (0.3 * i + b / 9000 + 0.1 * seed) % 1 for b in (1000, 3000)},
                                 seconds=10.0 + seed))
    assert dropin.grid_table(configs, outs, [0, 1, 2])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:9] == [
        "| setting | budget | HER | ours | ours-env-terminations | ours target | ours-env-terminations target |",
        "|---|---:|---:|---:|---:|---|---|",
        "| perf | 1000 | 0.21 ± 0.08 | 0.51 ± 0.08 | 0.81 ± 0.08 | +0.30 (spread 0.08) met | +0.60 (spread 0.08) met |",
        "| perf | 3000 | 0.43 ± 0.08 | 0.73 ± 0.08 | 0.37 ± 0.40 | +0.30 (spread 0.08) met | -0.07 (spread 0.40) met |",
        "| bits8 | 1000 | 0.21 ± 0.08 | 0.51 ± 0.08 | 0.81 ± 0.08 | +0.30 (spread 0.08) met "
        "| +0.60 (spread 0.08) met |",
        "| bits8 | 3000 | 0.43 ± 0.08 | 0.73 ± 0.08 | 0.37 ± 0.40 | +0.30 (spread 0.08) met "
        "| -0.07 (spread 0.40) met |",
        "ours: >= HER within the spread at every cell: met",
    ]
