"""The HER drop-in against SB3's ``HerReplayBuffer`` on a DQN grid over BitFlipping, only the class swapped.

The cells are every combination of BitFlipping's size (8, 11 and 14 bits) and three DQN settings: the learning rate
(1e-4, SB3's default, and 1e-3), the target network's update interval (10000 steps, SB3's default, and 1000) and the
exploration schedule (SB3's: ε from 1 to 0.05 over the first 10 % of the run; and a longer one: to 0.02 over 30 %).
Everything else is SB3's DQN as it ships (``train_freq=4``, ``batch_size=32``, ``learning_starts=100``, one env)
and HER's defaults (``n_sampled_goal=4``, ``future``), on both sides; ``buffer_size`` is the run's length, so no row
is overwritten on either side. No other benchmark of the project uses these settings.

Each run is scored at 5k, 10k, 20k and 30k env steps (one run per seed: DQN's exploration schedule spans the whole
``learn`` call, so the budgets are read from a run of 30k steps) by ``--eval-episodes`` greedy episodes, each reset
with its own seed (``sb3_hir.experiment.episode_evaluator``). Target (issue 56): at every (cell, budget), ours'
mean success is at most 0.03 below HER's, or above it, over 5 seeds.

Below the table, what 5 seeds can decide: the misses expected if both sides were one algorithm (each pair's chance of
a gap below -0.03 under a normal difference with the pair's own standard error), and the mean gap over cells (each
cell's gaps averaged over its budgets, which share runs) with its 95 % interval across the independent cells. With
at least two groups of ``--group-size`` seeds (5, the target's), each side against itself: the target's test between
every ordered pair of disjoint groups of one side's seeds, so what "no pair misses" asks of one algorithm is counted
from runs, not assumed; ``--sides HER`` runs SB3's side alone for it.

Each finished run is kept as a JSON file in ``--runs`` (one per cell, side and seed, written atomically), so a grid
cut short resumes where it stopped; ``--ray`` runs the missing ones as Ray Tune trials, one core each.

``--ours-kwargs KEY=VALUE ...`` passes replay-buffer arguments to ours alone (a diagnosis, not the drop-in by pure
swap: e.g. ``terminate_on_success=False``, HER's recorded ``dones``); its runs are kept under their own names.

Usage: ``python benchmarks/bench_her_dqn_grid.py [--seeds 0 1 2 3 4] [--bits 8 11 14] [--cells NAME ...] [--ray]
[--sides HER ours] [--group-size 5] [--ours-kwargs KEY=VALUE ...] [--table-only]``
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import math
import time
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import torch as th
from stable_baselines3 import DQN
from stable_baselines3 import HerReplayBuffer as SB3HerReplayBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv

import sb3_hir
from sb3_hir.atomic import atomic_path
from sb3_hir.experiment import BudgetCallback, episode_evaluator, markdown_table, mean_std
from sb3_hir.experiment.runner import run_all

SIDES: dict[str, type] = {"HER": SB3HerReplayBuffer, "ours": sb3_hir.HerReplayBuffer}
BUDGETS = [5_000, 10_000, 20_000, 30_000]
LEARNING_RATES = [1e-4, 1e-3]
TARGET_UPDATES = [10_000, 1_000]
#: name -> (exploration_fraction, exploration_final_eps)
EXPLORATIONS = {"sb3": (0.1, 0.05), "long": (0.3, 0.02)}
TOLERANCE = 0.03
RUNS = Path(__file__).resolve().parent / "results" / "her_dqn_grid" / "runs"


def cell_name(cell: dict[str, Any]) -> str:
    return (f"bits{cell['n_bits']}-lr{cell['learning_rate']:g}-target{cell['target_update_interval']}-"
            f"explore-{cell['exploration']}")


def cells(bits: list[int]) -> list[dict[str, Any]]:
    return [dict(n_bits=n, learning_rate=lr, target_update_interval=target, exploration=explore)
            for n, lr, target, explore in itertools.product(bits, LEARNING_RATES, TARGET_UPDATES, EXPLORATIONS)]


def side_name(side: str, ours_kwargs: dict[str, Any]) -> str:
    """A side as its runs are named: ours with ``--ours-kwargs`` is a side of its own."""
    if side != "ours" or not ours_kwargs:
        return side
    return "ours+" + ",".join(f"{key}={value!r}" for key, value in sorted(ours_kwargs.items()))


def parse_kwargs(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs, each value a Python literal."""
    kwargs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"--ours-kwargs takes KEY=VALUE pairs; got {item!r}")
        try:
            kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError(f"--ours-kwargs {key}: the value must be a Python literal (True, 0.5, 'x'); got "
                             f"{value!r}") from None
    return kwargs


def run_path(runs: Path, config: dict[str, Any]) -> Path:
    """Where a run is kept: its name holds everything that changes its result."""
    budgets = "-".join(map(str, config["budgets"]))
    return runs / (f"{cell_name(config['cell'])}-budgets{budgets}-eval{config['eval_episodes']}-"
                   f"{side_name(config['side'], config.get('ours_kwargs', {}))}-"
                   f"seed{config['seed']}.json")


def run(config: dict[str, Any]) -> dict[str, Any]:
    """One run of ``config["side"]`` on ``config["cell"]``, kept in its file; ``{budget: success}`` and seconds."""
    cell, seed, n_bits = config["cell"], config["seed"], config["cell"]["n_bits"]
    th.manual_seed(seed)
    fraction, final_eps = EXPLORATIONS[cell["exploration"]]
    venv = make_vec_env(lambda: BitFlippingEnv(n_bits=n_bits, continuous=False), n_envs=1, seed=seed)
    extra = config.get("ours_kwargs", {}) if config["side"] == "ours" else {}
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=SIDES[config["side"]],
                replay_buffer_kwargs=dict(n_sampled_goal=4, goal_selection_strategy="future", **extra),
                buffer_size=max(config["budgets"]), learning_rate=cell["learning_rate"],
                target_update_interval=cell["target_update_interval"], exploration_fraction=fraction,
                exploration_final_eps=final_eps, seed=seed, device="cpu")
    score = episode_evaluator(lambda: BitFlippingEnv(n_bits=n_bits, continuous=False), config["eval_episodes"], seed)
    callback = BudgetCallback(config["budgets"], score)
    begin = time.perf_counter()
    model.learn(total_timesteps=max(config["budgets"]), callback=callback)
    out = {"scores": {str(b): v["success_rate"] for b, v in callback.results.items()},
           "seconds": time.perf_counter() - begin}
    path = Path(config["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps({**config, **out}, indent=1))
    return out


def seed_paths(cell: dict[str, Any], side: str, args: argparse.Namespace) -> list[Path]:
    """Where each seed's run of ``side`` on ``cell`` is kept."""
    return [run_path(args.runs, dict(cell=cell, side=side, seed=s, budgets=args.budgets,
                                     eval_episodes=args.eval_episodes, ours_kwargs=args.ours_kwargs))
            for s in args.seeds]


def table(grid: list[dict[str, Any]], args: argparse.Namespace) -> tuple[list[list[str]], int, int, list[str]]:
    """One row per (cell, budget) with every seed of both sides on file; the rows held and those compared, and the
    calibration lines (module docstring)."""
    rows, held, compared = [], 0, 0
    expected_misses, cell_gaps = 0.0, []
    for cell in grid:
        found = {side: seed_paths(cell, side, args) for side in SIDES}
        if not all(p.is_file() for paths in found.values() for p in paths):
            continue
        scores = {side: [json.loads(p.read_text())["scores"] for p in paths] for side, paths in found.items()}
        gaps = []
        for budget in args.budgets:
            her = np.asarray([s[str(budget)] for s in scores["HER"]])
            ours = np.asarray([s[str(budget)] for s in scores["ours"]])
            gap = float(ours.mean() - her.mean())
            ok = gap >= -TOLERANCE
            held, compared = held + ok, compared + 1
            rows.append([cell_name(cell), str(budget), mean_std(her), mean_std(ours), f"{gap:+.3f}",
                         "yes" if ok else "NO"])
            gaps.append(gap)
            expected_misses += miss_chance(her, ours)
        cell_gaps.append(float(np.mean(gaps)))
    return rows, held, compared, calibration(expected_misses, compared, cell_gaps)


def side_scores(grid: list[dict[str, Any]], args: argparse.Namespace, side: str) -> dict[str, np.ndarray]:
    """Per cell (by name) with every seed of ``side`` on file: its ``(seeds, budgets)`` scores."""
    out = {}
    for cell in grid:
        paths = seed_paths(cell, side, args)
        if all(p.is_file() for p in paths):
            runs = [json.loads(p.read_text())["scores"] for p in paths]
            out[cell_name(cell)] = np.asarray([[run[str(b)] for b in args.budgets] for run in runs])
    return out


def group_misses(first: list[np.ndarray], second: list[np.ndarray], size: int, same: bool) -> list[int]:
    """The target's test between disjoint groups of ``size`` seeds (in ``--seeds`` order): for each ordered pair of
    groups (``a``'s of ``first``, ``b``'s of ``second``; ``a == b`` only where ``same`` is False, i.e. two sides on
    the same seeds), how many (cell, budget) pairs have ``b``'s mean more than the tolerance below ``a``'s."""
    groups = len(first[0]) // size
    out = []
    for a, b in itertools.product(range(groups), repeat=2):
        if same and a == b:
            continue
        out.append(sum(int((y[b * size:(b + 1) * size].mean(axis=0) < x[a * size:(a + 1) * size].mean(axis=0)
                                - TOLERANCE).sum()) for x, y in zip(first, second, strict=True)))
    return out


def self_calibration(grid: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """The target's test with one algorithm on both sides, from the runs on file: each side against itself on other
    seeds, so what "0 misses" asks of ``--group-size`` seeds is measured, not assumed normal (``miss_chance``)."""
    size = args.group_size
    if len(args.seeds) < 2 * size:
        return []
    scores = {side: side_scores(grid, args, side) for side in args.sides}
    lines = []
    for side, per_cell in scores.items():
        if per_cell:
            cells_ = list(per_cell.values())
            misses = group_misses(cells_, cells_, size, same=True)
            lines.append(f"{side} against itself ({len(cells_)} cells, groups of {size} of the {len(args.seeds)} "
                         f"seeds): misses of {len(cells_) * len(args.budgets)} pairs per ordered pair of groups "
                         f"{misses}, mean {np.mean(misses):.2f}")
    both = [name for name in scores.get("HER", {}) if name in scores.get("ours", {})]
    if both:  # the cells both sides have complete, paired by name
        misses = group_misses([scores["HER"][n] for n in both], [scores["ours"][n] for n in both], size, same=False)
        lines.append(f"ours against HER ({len(both)} cells), every pairing of those groups: misses {misses}, "
                     f"mean {np.mean(misses):.2f}")
    return lines


def miss_chance(her: np.ndarray, ours: np.ndarray) -> float:
    """The chance that the pair misses the tolerance if both sides were one algorithm (normal difference)."""
    if len(her) < 2 or len(ours) < 2:
        return 0.0
    se = math.sqrt(her.var(ddof=1) / len(her) + ours.var(ddof=1) / len(ours))
    return NormalDist().cdf(-TOLERANCE / se) if se > 0 else 0.0


def calibration(expected_misses: float, compared: int, cell_gaps: list[float]) -> list[str]:
    """What the seeds can decide: misses expected under one algorithm, and the mean gap over cells with its
    95 % interval."""
    if len(cell_gaps) < 2:
        return []
    gaps = np.asarray(cell_gaps)
    mean, half = gaps.mean(), 1.96 * gaps.std(ddof=1) / math.sqrt(len(gaps))
    return [f"if both sides were one algorithm, {expected_misses:.1f} of {compared} pairs would miss by chance",
            f"mean gap over {len(gaps)} cells (ours - HER): {mean:+.4f}, 95 % interval [{mean - half:+.4f}, "
            f"{mean + half:+.4f}]"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--bits", type=int, nargs="+", default=[8, 11, 14], help="BitFlipping sizes (>= 2)")
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--budgets", type=int, nargs="+", default=BUDGETS,
                        help="env steps at which each run is scored; a run lasts the largest")
    parser.add_argument("--cells", nargs="+", default=None, metavar="NAME",
                        help="only these cells (names as in the table), e.g. to add seeds where one is in doubt")
    parser.add_argument("--runs", type=Path, default=RUNS, help="where each finished run is kept (and resumed from)")
    parser.add_argument("--ray", action="store_true", help="run the missing runs as Ray Tune trials")
    parser.add_argument("--table-only", action="store_true", help="print the table of the kept runs; run nothing")
    parser.add_argument("--sides", nargs="+", choices=list(SIDES), default=list(SIDES),
                        help="run only these sides (e.g. HER alone, for its calibration against itself)")
    parser.add_argument("--group-size", type=int, default=5,
                        help="seeds a side in the target's test, for the calibration of each side against itself")
    parser.add_argument("--ours-kwargs", nargs="+", default=[], metavar="KEY=VALUE",
                        help="replay-buffer arguments for ours alone, e.g. terminate_on_success=False (a diagnosis)")
    args = parser.parse_args()
    try:
        args.ours_kwargs = parse_kwargs(args.ours_kwargs)
    except ValueError as exc:
        parser.error(str(exc))
    if min(args.bits) < 2:
        parser.error(f"--bits must be >= 2; got {args.bits}")
    if args.eval_episodes < 1:
        parser.error(f"--eval-episodes must be >= 1; got {args.eval_episodes}")
    if args.group_size < 1:
        parser.error(f"--group-size must be >= 1; got {args.group_size}")
    if min(args.budgets) < 1:
        parser.error(f"--budgets must be >= 1; got {args.budgets}")
    args.budgets = sorted(set(args.budgets))
    grid = cells(args.bits)
    if args.cells is not None:
        unknown = sorted(set(args.cells) - {cell_name(cell) for cell in grid})
        if unknown:
            parser.error(f"--cells: no such cell {unknown}; cells are named as in the table, e.g. "
                         f"{cell_name(grid[0])}")
        grid = [cell for cell in grid if cell_name(cell) in args.cells]
    todo = []
    for cell, seed, side in itertools.product(grid, args.seeds, args.sides):
        config = dict(cell=cell, side=side, seed=seed, eval_episodes=args.eval_episodes, budgets=args.budgets)
        if side == "ours" and args.ours_kwargs:
            config["ours_kwargs"] = args.ours_kwargs
        path = run_path(args.runs, config)
        if not path.is_file():
            todo.append({**config, "path": str(path)})
    print(f"{len(grid)} cells x {len(args.sides)} sides x {len(args.seeds)} seeds; {len(todo)} runs to do", flush=True)
    if not args.table_only:
        for config, out in zip(todo, run_all(run, todo, use_ray=args.ray, name="her_dqn_grid"), strict=True):
            print(f"{cell_name(config['cell'])} {config['side']} seed {config['seed']}: {out['scores']} "
                  f"({out['seconds']:.0f} s)", flush=True)
    rows, held, compared, notes = table(grid, args)
    ours = "sb3_hir's drop-in" + (f" with {args.ours_kwargs}" if args.ours_kwargs else "")
    print(f"\nSuccess (greedy, {args.eval_episodes} episodes) of SB3's HER and of {ours}, "
          f"{len(args.seeds)} seeds (mean ± std); held: ours >= HER - {TOLERANCE}")
    print(markdown_table(["cell", "budget", "HER", "ours", "ours - HER", "held"], rows, "lrrrrl"))
    print(f"{'PASS' if rows and held == compared else 'MISS'}  {held} of {compared} (cell, budget) pairs held; "
          f"{len(rows) // len(args.budgets)} of {len(grid)} cells complete")
    for note in [*notes, *self_calibration(grid, args)]:
        print(note)


if __name__ == "__main__":
    main()
