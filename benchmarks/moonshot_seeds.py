"""The moonshot over several seeds, with a memoryless control, as Ray Tune trials sharing the machine fairly.

Each (variant, seed) is one run of ``moonshot_mazerunner.py``'s training (:mod:`research.moonshot`:
same options, same wall-time limit, evaluations included, held-out evaluation every ``--eval-minutes``):
``history`` is the moonshot's DQN with its ``--history`` window and encoder, ``memoryless`` the same DQN and buffer
without the window (``--history 0``), ``history-relaxed`` the ``history`` run under the relaxed reach rule
(``--relaxed-draw``).
With ``--ray`` the runs are Ray Tune trials of ``--cpus-per-trial`` CPUs each (:mod:`sb3_hir.experiment.runner`):
with 1, at most as many run at once as the machine has cores and each gets a whole core; with a fraction (0.5 on
2 cores runs all 3 seeds at once, each on 2/3 of a core) every seed gets the same share of the same wall hour. The
load average at every evaluation is kept in the curves.

Output in ``--out``: each run's ``<variant>-seed<s>/curve.json`` / ``curve.png``, and ``summary.json`` /
``summary.png``: success rate and goals reached per variant, mean ± std over seeds at each evaluation (the k-th
evaluation of every run, at about the same wall time), as bands against wall time. The table printed gives the
same numbers; the target line checks the mean success of the ``history`` runs at the last evaluation within
``--target-minutes``.

Usage: ``python benchmarks/moonshot_seeds.py --minutes 15 --eval-minutes 3 --seeds 0 1 2 --ray
[--variants history memoryless] [--out moonshot_seeds] [any moonshot_mazerunner.py option]``; the same command
with ``--collect`` summarizes runs that were stopped before ``--minutes`` from their ``curve.json`` files.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
from research.moonshot import make_parser, train
from research.relaxed import RelaxedReachBuffer

from sb3_hir.atomic import atomic_path
from sb3_hir.experiment import arguments, format_mean_std, markdown_table
from sb3_hir.experiment.runner import run_all

VARIANTS = ("history", "memoryless", "history-relaxed")


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """One (variant, seed): the moonshot's training, its curve returned (and written under its run directory)."""
    args = argparse.Namespace(**config["args"])
    if config["variant"] == "history-relaxed":
        # the relaxed reach rule (research.relaxed.RelaxedReachBuffer), measured against history
        args.relaxed_draw = True
    if config["variant"] == "memoryless":
        args.history = 0
        args.action_features = "none"  # no memory of any kind
        args.q_head = "standard"
    args.seed = config["seed"]
    out = Path(config["out"]) / f"{config['variant']}-seed{config['seed']}"
    args.out = str(out)
    clock = train(args, out, RelaxedReachBuffer if getattr(args, "relaxed_draw", False) else None)
    return {"variant": config["variant"], "seed": config["seed"], "curve": clock.curve}


def summarize(runs: list[dict[str, Any]], variants: list[str]) -> dict[str, list[dict[str, float]]]:
    """Per variant, mean ± std over seeds of each evaluation index that every seed reached."""
    summary: dict[str, list[dict[str, float]]] = {}
    for variant in variants:
        # A run whose time limit fell on an evaluation recorded that policy twice (fixed in moonshot_mazerunner).
        curves = [[p for i, p in enumerate(c) if i == 0 or p["timesteps"] != c[i - 1]["timesteps"]]
                  for c in (run["curve"] for run in runs if run["variant"] == variant)]
        points = min(len(curve) for curve in curves)
        rows = []
        for i in range(points):
            at = [curve[i] for curve in curves]
            row: dict[str, float] = {"evaluation": i + 1, "seeds": len(at)}
            for key in ("minutes", "timesteps", "success_rate", "goals_reached", "load_average"):
                values = np.array([p[key] for p in at], dtype=float)
                row[f"{key}_mean"] = float(values.mean())
                row[f"{key}_std"] = float(values.std())
            rows.append(row)
        summary[variant] = rows
    return summary


def plot(summary: dict[str, list[dict[str, float]]], args: argparse.Namespace, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for variant, rows in summary.items():
        x = np.array([r["minutes_mean"] for r in rows])
        for ax, key, k in ((axes[0], "success_rate", 1), (axes[1], "goals_reached", args.goals)):
            mean = np.array([r[f"{key}_mean"] for r in rows]) / k
            std = np.array([r[f"{key}_std"] for r in rows]) / k
            ax.plot(x, mean, "o-", label=variant)
            ax.fill_between(x, mean - std, mean + std, alpha=0.2)
    for ax, label in ((axes[0], "success rate (all goals in order)"), (axes[1], "goals reached / k")):
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("wall time (minutes)")
        ax.set_ylabel(label)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=8)
    controls = ", randomized controls" if getattr(args, "randomized_actions", False) else ""
    features = getattr(args, "action_features", "none")
    controls += f", action features {features}" if features != "none" else ""
    controls += ", per-action Q head" if getattr(args, "q_head", "standard") == "per-action" else ""
    fig.suptitle(f"DQN + HIR on MazeRunner {args.maze_dim}x{args.maze_dim}, k={args.goals}, time limit "
                 f"{args.time_limit}{controls}: mean ± std over seeds {args.seeds}", fontsize=10)
    fig.tight_layout()
    with atomic_path(out / "summary.png") as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)


def main() -> None:
    parser = make_parser(__doc__.split("\n\n")[0])
    arguments.add_seeds(parser, [0, 1, 2])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--target-minutes", type=float, default=None,
                        help="wall time of the target (default --minutes)")
    arguments.add_ray(parser, "(variant, seed) runs")
    parser.add_argument("--replot", metavar="DIR", help="redo DIR's summary (JSON, PNG, table) from its runs and exit")
    parser.add_argument("--collect", action="store_true",
                        help="with the launch's options: build --out's summary from its runs' curve.json files and "
                             "exit (for runs stopped before --minutes; each evaluation they reached is kept)")
    parser.set_defaults(out="moonshot_seeds")
    args = parser.parse_args()
    if args.collect:
        out = Path(args.out).resolve()
        report(collect(out, args), args, out)
        return
    if args.replot:
        directory = Path(args.replot)
        data = json.loads((directory / "summary.json").read_text())
        args = argparse.Namespace(**{**data["config"], "out": str(directory), "replot": None})
        report(data["runs"], args, directory)
        return
    out = Path(args.out).resolve()
    base = {k: v for k, v in vars(args).items()
            if k not in ("seeds", "variants", "ray", "ray_address", "cpus_per_trial", "target_minutes", "collect")}
    configs = [dict(args=base, variant=variant, seed=seed, out=str(out))
               for variant in args.variants for seed in args.seeds]
    print(f"moonshot over seeds {args.seeds}, variants {args.variants}, {len(os.sched_getaffinity(0))} cores, "
          f"load average at start {os.getloadavg()[0]:.2f}; "
          f"{f'Ray Tune trials ({args.cpus_per_trial:g} CPU each)' if args.ray else 'sequential'}",
          flush=True)
    runs = list(run_all(run_trial, configs, use_ray=args.ray, cpus_per_trial=args.cpus_per_trial,
                        address=args.ray_address, name="moonshot_seeds"))
    report(runs, args, out)


def collect(out: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The runs of ``args.variants`` x ``args.seeds`` as their ``curve.json`` files in ``out`` left them.

    :raises ValueError: naming a run whose file is missing or whose configuration differs from ``args``.
    """
    runs = []
    for variant in args.variants:
        for seed in args.seeds:
            path = out / f"{variant}-seed{seed}" / "curve.json"
            if not path.is_file():
                raise ValueError(f"--collect: {path} is missing; --out, --variants and --seeds must match the launch")
            data = json.loads(path.read_text())
            expected = {**{k: v for k, v in vars(args).items() if k in data["config"] and k not in ("out", "replot")},
                        "seed": seed,
                        "history": 0 if variant == "memoryless" else args.history}
            if "action_features" in data["config"]:
                memoryless = variant == "memoryless"
                expected["action_features"] = "none" if memoryless else args.action_features
                expected["q_head"] = "standard" if memoryless else args.q_head
            differing = {k: (data["config"][k], v) for k, v in expected.items() if data["config"][k] != v}
            if differing:
                raise ValueError(f"--collect: {path} was run with other options (recorded, given): {differing}")
            runs.append({"variant": variant, "seed": seed, "curve": data["curve"]})
    return runs


def report(runs: list[dict[str, Any]], args: argparse.Namespace, out: Path) -> None:
    """Write ``summary.json`` / ``summary.png`` and print the table and the target line."""
    summary = summarize(runs, args.variants)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps(dict(config=vars(args), summary=summary, runs=runs), indent=2) + "\n")
    os.replace(tmp, out / "summary.json")
    plot(summary, args, out)
    print(markdown_table(
        ["variant", "evaluation", "minutes", "env steps", "success rate", "goals reached", "load average"],
        [[variant, r["evaluation"], f"{r['minutes_mean']:.1f}", f"{r['timesteps_mean']:.0f}",
          format_mean_std(r["success_rate_mean"], r["success_rate_std"], 3),
          format_mean_std(r["goals_reached_mean"], r["goals_reached_std"]), f"{r['load_average_mean']:.2f}"]
         for variant, rows in summary.items() for r in rows]))
    if "history" in summary:
        limit = args.target_minutes if args.target_minutes is not None else args.minutes
        within = [r for r in summary["history"] if r["minutes_mean"] <= limit + 0.5]
        best = max(within, key=lambda r: r["success_rate_mean"]) if within else None
        verdict = "PASS" if best is not None and best["success_rate_mean"] >= 0.5 else "MISS"
        detail = (f"best mean {format_mean_std(best['success_rate_mean'], best['success_rate_std'], 3)} at "
                  f"{best['minutes_mean']:.1f} min" if best else "no evaluation")
        print(f"{verdict}  history: mean success >= 0.5 within {limit:g} min over seeds {args.seeds}: {detail}")


if __name__ == "__main__":
    main()
