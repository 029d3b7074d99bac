"""``sb3-hir train``'s default run at a baseline commit against the checkout, env steps per second, one script.

Both sides run the same command (``sb3-hir train --relabel some`` with its defaults: DQN, 8 MazeRunner envs,
history window 16 with the conv encoder, HIR ``some``, 30k steps, evaluations as it learns) in fresh
interpreters, alternately (baseline, checkout, baseline, ...), each with one torch thread as the CLI sets it. The
baseline is the package at ``--ref`` (a temporary ``git worktree``, put first on ``PYTHONPATH``); the checkout is
this repository. Speed is SB3's own ``time/fps`` (env steps over ``learn()``'s wall time, evaluations included) from
each run's ``progress.csv``; the learning table (success rate and goals reached of the final evaluation, from
``results.json``) is printed beside it, since a faster loop must not learn worse. Equal seeds serve equal rows on
both sides when the sampling change keeps them (``tests/buffers/test_served_rows.py``), so the tables should agree
exactly.

Target (issue 26): the checkout >= 1.3x the baseline's env steps per second.

Usage: ``python benchmarks/bench_train_speed.py [--ref b33c3dc | --baseline CHECKOUT] [--rounds 2] [--timesteps 30000]
[--seed 0] [--eval-episodes 50]``
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from sb3_hir.experiment import markdown_table

ROOT = Path(__file__).resolve().parents[1]


def run(package_root: Path, args: argparse.Namespace, out: Path) -> dict[str, float]:
    """One ``sb3-hir train`` run with ``package_root``'s sb3_hir; its fps and final evaluation."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package_root), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "sb3_hir.cli", "train", "--relabel", "some", "--timesteps", str(args.timesteps),
               "--seed", str(args.seed), "--eval-episodes", str(args.eval_episodes), "--no-progress",
               "--out", str(out)]
    done = subprocess.run(command, env=env, cwd=out.parent, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed in {package_root}:\n{done.stderr[-2000:]}")
    with (out / "dqn-some" / "progress.csv").open() as f:
        rows = [row for row in csv.DictReader(f) if row.get("time/fps")]
    (record,) = json.loads((out / "results.json").read_text())  # one run: --relabel some
    fps = float(rows[-1]["time/fps"]) if rows else float("nan")  # none logged: a run shorter than SB3's log interval
    return {"fps": fps, "success": float(record["success_rate"]),
            "goals": float(record["goals_reached"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="b33c3dc", help="baseline commit (default: main before the kernels)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a checkout to use as the baseline in place of --ref's temporary git worktree")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timesteps", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=50,
                        help="episodes per evaluation, on both sides (default 50, train's own default)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    if args.eval_episodes < 1:
        parser.error("--eval-episodes must be >= 1")
    ref = str(args.baseline) if args.baseline else subprocess.run(
        ["git", "rev-parse", "--short", args.ref], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench_train_speed_") as tmp:
        baseline = args.baseline or Path(tmp) / "baseline"
        if not args.baseline:
            subprocess.run(["git", "worktree", "add", "--detach", str(baseline), args.ref], cwd=ROOT, check=True,
                           capture_output=True)
        try:
            results: dict[str, list[dict[str, float]]] = {"baseline": [], "checkout": []}
            for r in range(args.rounds):
                for side, root in (("baseline", baseline), ("checkout", ROOT)):
                    out = Path(tmp) / f"{side}-{r}"
                    out.mkdir()
                    results[side].append(run(root, args, out / "run"))
                    print(f"round {r + 1} {side}: {results[side][-1]}", flush=True)
        finally:
            if not args.baseline:
                subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, capture_output=True)
    print(f"sb3-hir train --relabel some (defaults, {args.timesteps} steps, seed {args.seed}); baseline {ref}, "
          f"checkout {head}; {args.rounds} alternating rounds, median fps (SB3's time/fps, evaluations included)")
    medians = {}
    table = []
    for side, rows in results.items():
        medians[side] = float(np.median([row["fps"] for row in rows]))
        per_round = ", ".join(f"{row['fps']:.0f}" for row in rows)
        table.append([f"{side} ({ref if side == 'baseline' else head})", f"{medians[side]:.0f}", per_round,
                      f"{rows[0]['success']:.2f}", f"{rows[0]['goals']:.2f}"])
    print(markdown_table(["side", "env steps/s (median)", "per round", "success rate", "goals reached"], table,
                         "lrlrr"))
    ratio = medians["checkout"] / medians["baseline"]
    same = all(a["success"] == b["success"] and a["goals"] == b["goals"]
               for a, b in zip(results["baseline"], results["checkout"], strict=True))
    print(f"{'PASS' if ratio >= 1.3 else 'MISS'}  checkout / baseline env steps per second: {ratio:.2f}x "
          "(target >= 1.3x)")
    print(f"learning table {'identical' if same else 'DIFFERS'} on both sides (same seed)")


if __name__ == "__main__":
    main()
