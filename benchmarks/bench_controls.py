"""Controls that change every episode: which Q head and which per-action features let DQN + HIR identify them?

Every run is the moonshot's learner (:func:`research.moonshot.build_model`: DQN, history window + GRU,
HIR with n-step returns, the same hyperparameters) on MazeRunner with ``--steps`` planned steps; only the variant
differs:

* ``fixed``: fixed controls, DQN's standard head, no per-action features (the reference);
* ``random``: controls permuted every episode, standard head, no features (the learner before issue 32);
* ``random-effects``: permuted, standard head, the generic ``ActionEffectWrapper`` table as one more input key;
* ``random-head-effects``: permuted, ``PerActionDQNPolicy`` over the generic table's rows;
* ``random-head-env``: permuted, ``PerActionDQNPolicy`` over MazeRunner's own ``MoveBelief`` rows;
* ``fixed-head-env``: fixed controls with the per-action head and ``MoveBelief`` (what the head costs where the
  controls do not change).

Each run is evaluated at every budget of ``--budgets`` inside one training run (``--eval-episodes`` held-out
episodes of the greedy policy, the same eval seeds for every variant). The table gives success (all k goals in
order) and goals reached, mean ± std over seeds, rendered by the harness (:mod:`sb3_hir.experiment`) from the
runs' records (``--records FILE`` keeps them as JSON).

``--dagger`` runs the same question for imitation: ``sb3-hir dagger`` itself (BC after each round, the shortest-path
expert, MazeRunner's ``MoveBelief`` rows, ``--history``) on permuted controls with ``--policy-head standard``
against ``per-action``, and reports the learner's success after each round (``rounds.csv``).

Usage: ``python benchmarks/bench_controls.py [--seeds 0 1 2] [--budgets 10000 20000 30000] [--variants ...] [--ray]``;
``python benchmarks/bench_controls.py --dagger [--rounds 4] [--seeds 0 1 2] [--ray]``
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import torch as th
from research.moonshot import build_model, evaluate, make_parser

from sb3_hir.experiment import (
    BenchmarkSpec,
    BudgetCallback,
    TableLayout,
    arguments,
    render_table,
    run_benchmark,
    timed_run,
)

VARIANTS: dict[str, dict[str, Any]] = {
    "fixed": dict(randomized_actions=False, q_head="standard", action_features="none"),
    "random": dict(randomized_actions=True, q_head="standard", action_features="none"),
    "random-effects": dict(randomized_actions=True, q_head="standard", action_features="effects"),
    "random-head-effects": dict(randomized_actions=True, q_head="per-action", action_features="effects"),
    "random-head-env": dict(randomized_actions=True, q_head="per-action", action_features="env"),
    "fixed-head-env": dict(randomized_actions=False, q_head="per-action", action_features="env"),
}


def train(config: dict[str, Any]) -> dict[int, dict[str, float]]:
    """One (variant, seed): train for the largest budget, evaluating at each."""
    th.set_num_threads(1)
    args = argparse.Namespace(**{**config["options"], **VARIANTS[config["side"]], "seed": config["seed"]})
    model = build_model(args)
    evals = BudgetCallback(config["budgets"], lambda m: evaluate(m, args))
    model.learn(config["budgets"][-1], callback=evals)
    return evals.results


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """One run (a plain function of a plain dict, alike in this process or as a Ray Tune trial), timed."""
    return timed_run(train, config)


DAGGER_HEADS = ("standard", "per-action")


def dagger_trial(config: dict[str, Any]) -> dict[str, Any]:
    """One (policy head, seed) of ``sb3-hir dagger`` on permuted controls; its metrics after each round."""
    import csv
    import tempfile
    from pathlib import Path

    from sb3_hir import cli

    th.set_num_threads(1)
    args = argparse.Namespace(**config["options"])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        start = time.perf_counter()
        code = cli.main(["dagger", "--randomized-actions", "--action-features", "env", "--policy-head",
                         config["side"], "--maze-size", str(args.maze_dim), "--goals", str(args.goals),
                         "--time-limit", str(args.time_limit), "--history", str(args.history), "--history-encoder",
                         args.encoder, "--rounds", str(args.rounds), "--eval-episodes", str(args.eval_episodes),
                         "--seed", str(config["seed"]), "--no-progress", "--out", str(out)])
        if code:
            raise RuntimeError(f"sb3-hir dagger exited with {code}")
        with open(out / "rounds.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    return {"seconds": time.perf_counter() - start,
            "curve": {r["round"]: {"success_rate": float(r["success_rate"]), "goals_reached": float(r["goals_reached"])}
                      for r in rows}}


def main() -> None:
    parser = make_parser(__doc__.split("\n\n")[0])
    parser.set_defaults(maze_dim=9, goals=1, time_limit=60, steps=30_000, eval_episodes=100)
    arguments.add_seeds(parser, [0, 1, 2])
    arguments.add_budgets(parser, [10_000, 20_000, 30_000])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--dagger", action="store_true",
                        help="the DAgger suite: sb3-hir dagger's --policy-head standard against per-action")
    parser.add_argument("--rounds", type=int, default=4, help="--dagger: DAgger rounds (4000 labels each)")
    arguments.add_ray(parser)
    arguments.add_records(parser)
    args = parser.parse_args()
    shared = {k: v for k, v in vars(args).items() if k not in ("seeds", "variants", "ray", "cpus_per_trial",
                                                                "ray_address", "records")}
    if args.dagger:
        args.variants, args.budgets = list(DAGGER_HEADS), list(range(args.rounds))
    what = (f"sb3-hir dagger, {args.rounds} rounds, permuted controls, MoveBelief rows" if args.dagger else
            f"DQN + HIR, n-step {args.n_steps}, budgets {args.budgets}")
    print(f"bench_controls: {what}; MazeRunner {args.maze_dim}x{args.maze_dim}, k={args.goals}, time limit "
          f"{args.time_limit}, history {args.history} ({args.encoder}), seeds {args.seeds}, "
          f"{args.eval_episodes} eval episodes; load average at start {os.getloadavg()[0]:.2f}", flush=True)
    layout = TableLayout(row="policy head" if args.dagger else "variant",
                         column="round {budget}" if args.dagger else "{budget} steps",
                         metrics={"success_rate": "success", "goals_reached": "goals"})
    spec = BenchmarkSpec(name="bench_controls", algorithm="sb3-hir dagger" if args.dagger else "DQN",
                         env=f"MazeRunner({args.maze_dim}x{args.maze_dim}, k={args.goals})", sides=args.variants,
                         seeds=args.seeds, budgets=args.budgets, layout=layout)
    records = run_benchmark(spec, dagger_trial if args.dagger else run_trial, shared, use_ray=args.ray,
                            cpus_per_trial=args.cpus_per_trial, address=args.ray_address)
    if args.records:
        records.save(args.records)
    print()
    print(render_table(records))
    print(f"load average at end {os.getloadavg()[0]:.2f}")

if __name__ == "__main__":
    main()
