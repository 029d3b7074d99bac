"""Throughput of ``sb3-hir sweep`` on Ray Tune against the same train runs one after another.

Both sides do the same work in one process: ``--runs`` train runs of one configuration (DQN + HIR "some" on a small
MazeRunner), one per seed. The sequential side calls ``sb3-hir train`` once per seed, as a benchmark script loops
over seeds today; the sweep side runs them as Ray Tune trials, ``--concurrent`` at a time, Ray's start-up and
shut-down included in its time. Each run uses one torch thread on both sides. Prints both wall times and the ratio.

Target (issue "Beyond one machine"): on a 2-core machine, 4 runs with 2 concurrent trials take <= 0.65x the
sequential time.

Usage: ``python benchmarks/bench_sweep.py [--runs 4] [--concurrent 2] [--timesteps 20000]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from sb3_hir import cli


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--concurrent", type=int, default=2)
    parser.add_argument("--timesteps", type=int, default=20000, help="per run (about 40 s each here)")
    args = parser.parse_args()
    run = ["--timesteps", str(args.timesteps), "--n-envs", "2", "--eval-episodes", "10", "--eval-freq",
           str(args.timesteps // 3), "--maze-size", "7", "--goals", "2", "--time-limit", "30", "--relabel", "some",
           "--no-progress"]
    seeds = [str(seed) for seed in range(args.runs)]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        sequential = []
        for seed in seeds:
            out = Path(tmp) / f"train-{seed}"
            assert cli.main(["train", *run, "--seed", seed, "--out", str(out)]) == 0
            sequential.append(json.loads((out / "results.json").read_text())[0]["goals_reached"])
        seq_s = time.perf_counter() - start

        start = time.perf_counter()
        out = Path(tmp) / "sweep"
        sweep_run = [arg for arg in run if arg != "--no-progress"]
        assert cli.main(["sweep", *sweep_run, "--seeds", *seeds, "--max-concurrent", str(args.concurrent),
                         "--cpus-per-trial", "1", "--out", str(out)]) == 0
        par_s = time.perf_counter() - start
        [row] = json.loads((out / "results.json").read_text())["configurations"]
        swept = sorted(run["goals_reached"] for run in row["runs"])

    print()
    print(f"{args.runs} train runs ({args.timesteps} timesteps each, DQN + HIR some, MazeRunner 7x7 k=2), "
          f"{os.cpu_count()} CPUs")
    print(f"sequential (one after another in one process): {seq_s:.1f} s")
    print(f"sb3-hir sweep ({args.concurrent} concurrent Ray Tune trials, Ray start-up included): {par_s:.1f} s")
    verdict = "PASS" if par_s / seq_s <= 0.65 else "MISS"
    print(f"ratio sweep / sequential: {par_s / seq_s:.2f}x  (target <= 0.65x: {verdict})")
    print(f"same runs, same results: goals reached per seed {sorted(sequential)} vs {swept}")


if __name__ == "__main__":
    main()
