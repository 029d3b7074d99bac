"""Does a goal-free memory in the observation help DQN + hindsight instruction relabeling on MazeRunner?

Every run trains SB3's DQN, unchanged, with :class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer` on
MazeRunner, with the same hyperparameters (``sb3-hir train``'s DQN defaults), seeds and env streams. Only the memory
differs. Variants (``--variants``) are ``<relabel>`` or ``<relabel>-<encoder>``:

* ``some``: no memory, :class:`~sb3_hir.extractors.KeySelectExtractor` over ``obs`` and ``goals`` (today's default);
* ``some-gru`` / ``some-conv``: :class:`~sb3_hir.history.HistoryWrapper` (the last ``--history`` observations and
  previous actions) and :class:`~sb3_hir.extractors.HistoryExtractor` with that encoder;
* ``none`` / ``none-gru``: the same without relabeling (SB3's DictReplayBuffer).

Each run is evaluated at every budget of ``--budgets`` inside one training run: ``--eval-episodes`` episodes of the
deterministic policy on fixed eval seeds (the same for all variants), recording goals reached and success (all k
in order). The table also gives each variant's training seconds, the extractor's cost against ``KeySelectExtractor``.
The verdict at the last budget: memory against no memory, goals reached, target ratio >= 1.5 with the difference of
means beyond the sum of both standard deviations.

The harness (:mod:`sb3_hir.experiment`) runs the (seed, variant) pairs, evaluates at the budgets and renders the
table; ``--records FILE`` keeps every run's numbers as JSON. With ``--ray`` the runs are Ray Tune trials (see
:mod:`sb3_hir.experiment.runner`), same table.

Usage: ``python benchmarks/bench_history.py [--seeds 0 1 2] [--budgets 20000 40000 60000] [--variants some some-gru
some-conv] [--history 16] [--ray] [--records FILE]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import torch as th
from research.maze import add_maze
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.experiment import (
    BenchmarkSpec,
    BudgetCallback,
    TableLayout,
    arguments,
    eval_seed,
    instruction_evaluator,
    mean_and_std,
    render_table,
    run_benchmark,
)
from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
from sb3_hir.history import HistoryWrapper

VARIANTS = ("some", "some-gru", "some-conv", "none", "none-gru")


def make_env_fn(args: argparse.Namespace, encoder: str):
    def env_fn() -> Any:
        env = MazeRunnerEnv(maze_dim=args.maze_dim, num_goals=args.goals, time_limit=args.time_limit)
        return HistoryWrapper(env, length=args.history) if encoder else env

    return env_fn


def policy_kwargs(encoder: str, args: argparse.Namespace) -> dict[str, Any]:
    if not encoder:
        return dict(features_extractor_class=KeySelectExtractor, features_extractor_kwargs=dict(keys=["obs", "goals"]),
                    net_arch=args.net_arch)
    return dict(features_extractor_class=HistoryExtractor, net_arch=args.net_arch,
                features_extractor_kwargs=dict(keys=["obs", "goals"], encoder=encoder, hidden_size=args.hidden_size))


def train(config: dict[str, Any]) -> tuple[dict[int, dict[str, float]], float]:
    """One run of variant ``config["side"]``: its metrics at each budget and its training seconds (evaluations
    left out, so the seconds compare the extractors' cost)."""
    variant, seed, args = config["side"], config["seed"], argparse.Namespace(**config["options"])
    relabel, _, encoder = variant.partition("-")
    venv = make_vec_env(make_env_fn(args, encoder), n_envs=args.n_envs, seed=seed, vec_env_cls=DummyVecEnv)
    buffer: dict[str, Any] = {}
    if relabel != "none":
        buffer = dict(replay_buffer_class=HindsightInstructionReplayBuffer,
                      replay_buffer_kwargs=dict(hindsight_goals=relabel, relabel_ratio=args.relabel_ratio, seed=seed))
    model = DQN("MultiInputPolicy", venv, learning_rate=args.learning_rate, buffer_size=args.budgets[-1],
                learning_starts=args.learning_starts, batch_size=args.batch_size, gamma=args.gamma, train_freq=1,
                gradient_steps=args.gradient_steps, target_update_interval=args.target_update_interval,
                exploration_fraction=args.exploration_fraction, exploration_final_eps=args.exploration_final_eps,
                policy_kwargs=policy_kwargs(encoder, args), seed=seed, verbose=0, **buffer)
    evaluate = instruction_evaluator(
        lambda: make_vec_env(make_env_fn(args, encoder), n_envs=10, seed=eval_seed(seed), vec_env_cls=DummyVecEnv),
        args.eval_episodes, eval_seed(seed))
    callback = BudgetCallback(config["budgets"], evaluate)
    model.learn(config["budgets"][-1], callback=callback)
    seconds = callback.training_seconds[config["budgets"][-1]]  # the evaluations left out
    venv.close()
    return callback.results, seconds


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """One training run (a plain function of a plain dict, for this process or a Ray Tune trial)."""
    curve, seconds = train(config)
    return {"curve": {str(b): v for b, v in curve.items()}, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_seeds(parser, [0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=["some", "some-gru", "some-conv"], choices=VARIANTS)
    arguments.add_budgets(parser, [20_000, 40_000, 60_000])
    add_maze(parser, maze_dim=9, goals=3, time_limit=100)
    arguments.add_history(parser, 16, help="steps in the HistoryWrapper window")
    parser.add_argument("--hidden-size", type=int, default=64, help="HistoryExtractor encoding size")
    arguments.add_n_envs(parser, 8)
    arguments.add_eval_episodes(parser, 50)
    parser.add_argument("--relabel-ratio", type=float, default=0.8)
    arguments.add_learner(parser, learning_rate=5e-4, learning_starts=1_000, batch_size=128, gamma=0.97,
                           gradient_steps=4)
    parser.add_argument("--target-update-interval", type=int, default=2_000)
    arguments.add_learner(parser, exploration_fraction=0.3)
    parser.add_argument("--exploration-final-eps", type=float, default=0.05)
    parser.add_argument("--net-arch", type=int, nargs="+", default=[256, 256])
    arguments.add_ray(parser, "(seed, variant) pairs")
    arguments.add_records(parser)
    args = parser.parse_args()
    args.budgets = sorted(args.budgets)
    th.set_num_threads(1)
    print(f"DQN on MazeRunner(maze_dim={args.maze_dim}, num_goals={args.goals}, time_limit={args.time_limit}), "
          f"{args.n_envs} envs, history {args.history}, budgets {args.budgets}, seeds {args.seeds}; eval "
          f"{args.eval_episodes} episodes, deterministic policy", flush=True)
    options = {k: v for k, v in vars(args).items() if k not in arguments.RAY_OPTIONS}
    spec = BenchmarkSpec(
        name="bench_history", algorithm="DQN", sides=args.variants, seeds=args.seeds, budgets=args.budgets,
        env=f"MazeRunner(maze_dim={args.maze_dim}, num_goals={args.goals}, time_limit={args.time_limit})",
        buffer=dict(relabel_ratio=args.relabel_ratio), layout=TableLayout(column="{budget}", seconds_column="train s"))
    start = time.perf_counter()
    records = run_benchmark(spec, run_trial, options, use_ray=args.ray, cpus_per_trial=args.cpus_per_trial,
                            address=args.ray_address)
    if args.records:
        records.save(args.records)
    print()
    print(render_table(records))
    print(f"(mean ± std over {len(args.seeds)} seeds; goals reached of {args.goals}; train s: training seconds "
          f"without the evaluations; total {(time.perf_counter() - start) / 60:.1f} min)")
    last = args.budgets[-1]
    for variant in args.variants:
        relabel, _, encoder = variant.partition("-")
        if not encoder or relabel not in args.variants:
            continue
        (mx, sx), (my, sy) = (mean_and_std(records.values(side, last, "goals_reached")) for side in (variant, relabel))
        ratio, diff, spread = mx / max(my, 1e-9), mx - my, sx + sy
        ok = ratio >= 1.5 and diff > spread
        print(f"{'PASS' if ok else 'MISS'}  {variant} goals >= 1.5x {relabel} at {last}, beyond the spread: "
              f"{ratio:.2f}x ({diff:+.2f}, spread {spread:.2f})")
        cost = np.mean(records.seconds(variant)) / np.mean(records.seconds(relabel))
        print(f"      training cost of {variant} against {relabel} (KeySelectExtractor): {cost:.2f}x")


if __name__ == "__main__":
    main()
