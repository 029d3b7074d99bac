"""Does hindsight instruction relabeling help DQN learn MazeRunner, and does per-sample relabeling beat per-episode?

Every run trains SB3's DQN, unchanged, on MazeRunner with the same hyperparameters, seeds and env streams; only
the replay buffer differs. Variants (``--variants``):

* ``none``: SB3's own DictReplayBuffer (plain DQN);
* ``some`` / ``all``: :class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer` with that strategy (a fresh
  hindsight instruction per sampled transition, ``goal_step="future"``);
* ``some-n3``: ``some`` with 3-step hindsight returns (``n_steps=3``, the algorithm's gamma);
* ``some-relaxed`` / ``some-n3-relaxed``: ``some`` / ``some-n3`` with the relaxed reach rule
  (:class:`research.relaxed.RelaxedReachBuffer`: the instruction's last goal counts as reached at its first
  occurrence after the sampled transition, even if its value was passed before it), measured against the shipped
  rule (issue 35);
* ``old-some`` / ``old-all``: the previous buffer, which drew one instruction per finished episode at ``add()``
  time. It is loaded from git history (commit ``OLD_COMMIT``, the last one before the rewrite), so the comparison
  runs in one process without keeping a copy of the old code in the tree.

The policy sees the observation and the instruction (:class:`~sb3_hir.extractors.KeySelectExtractor` over ``obs``
and ``goals``). Each run is evaluated at every budget of ``--budgets`` inside the same training run (a
callback): ``--eval-episodes`` episodes with the deterministic policy on fixed eval seeds (the same for all
variants), recording goals reached per episode and the success rate (all k goals reached in order).

It prints mean ± std over seeds per budget and two verdicts at the last budget: each HIR variant against
``none``, and each new variant against its ``old-`` counterpart (a win needs the difference of means to exceed the
sum of both standard deviations). The harness (:mod:`sb3_hir.experiment`) runs the (seed, variant) pairs,
evaluates at the budgets and renders the table; ``--records FILE`` keeps every run's numbers as JSON.

With ``--ray`` the (seed, variant) runs are Ray Tune trials (:mod:`sb3_hir.experiment.runner`: one torch thread each,
``--cpus-per-trial`` CPUs reserved, a local Ray instance or ``--ray-address``), in parallel; each run is seeded as
in the sequential loop, so the printed lines and tables are the same, printed once all trials are done. The
``old-`` variants read git history from this script's repository, whatever the trial's working directory.

Usage: ``python benchmarks/bench_hir_learning.py [--seeds 0 1 2] [--budgets 10000 20000 30000] [--maze-dim 7]
[--goals 3] [--step-reward 0] [--variants none some all some-n3 old-some old-all]
[--ray [--ray-address auto] [--cpus-per-trial 1]] [--records FILE]``
"""

from __future__ import annotations

import argparse
import subprocess
import time
import types
from pathlib import Path
from typing import Any

import torch as th
from research.maze import add_maze
from research.relaxed import RelaxedReachBuffer
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.experiment import (
    BenchmarkSpec,
    BudgetCallback,
    arguments,
    eval_seed,
    instruction_evaluator,
    mean_and_std,
    render_table,
    run_benchmark,
    timed_run,
)
from sb3_hir.extractors import KeySelectExtractor

VARIANTS = ("none", "some", "all", "some-n3", "old-some", "old-all", "some-relaxed", "some-n3-relaxed")
#: The last commit with the per-episode buffer (see the module docstring).
OLD_COMMIT = "9196df8"


def old_buffer_class() -> type:
    """HindsightInstructionReplayBuffer as it was at OLD_COMMIT, compiled from git history into a module."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(["git", "show", f"{OLD_COMMIT}:sb3_hir/buffers.py"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("sb3_hir_old_buffers")
    exec(compile(source, f"{OLD_COMMIT}:sb3_hir/buffers.py", "exec"), module.__dict__)
    return module.HindsightInstructionReplayBuffer


def make_env_fn(args: argparse.Namespace):
    def env_fn() -> MazeRunnerEnv:
        return MazeRunnerEnv(maze_dim=args.maze_dim, num_goals=args.goals, time_limit=args.time_limit,
                             step_reward=args.step_reward)

    return env_fn


def train(config: dict[str, Any]) -> dict[int, dict[str, float]]:
    """One training run of ``config["side"]`` (the variant) with ``config["seed"]``: its metrics at each budget."""
    variant, seed, args = config["side"], config["seed"], argparse.Namespace(**config["options"])
    venv = make_vec_env(make_env_fn(args), n_envs=args.n_envs, seed=seed, vec_env_cls=DummyVecEnv)
    buffer: dict[str, Any] = {}
    if variant.startswith("old-"):
        buffer = dict(
            replay_buffer_class=old_buffer_class(),
            replay_buffer_kwargs=dict(hindsight_goals=variant[4:], relabel_ratio=args.relabel_ratio),
        )
    elif variant != "none":
        relaxed = variant.endswith("-relaxed")
        strategy, _, n = variant.removesuffix("-relaxed").partition("-n")
        buffer = dict(
            replay_buffer_class=RelaxedReachBuffer if relaxed else HindsightInstructionReplayBuffer,
            replay_buffer_kwargs=dict(hindsight_goals=strategy, relabel_ratio=args.relabel_ratio, n_steps=int(n or 1),
                                      gamma=args.gamma, goal_spec=make_env_fn(args)().goal_spec),
        )
    model = DQN(
        "MultiInputPolicy",
        venv,
        learning_rate=args.learning_rate,
        buffer_size=args.budgets[-1],
        learning_starts=args.learning_starts,
        batch_size=args.batch_size,
        gamma=args.gamma,
        train_freq=args.train_freq,
        gradient_steps=args.gradient_steps,
        target_update_interval=args.target_update_interval,
        exploration_fraction=args.exploration_fraction,
        exploration_final_eps=args.exploration_final_eps,
        policy_kwargs=dict(
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
            net_arch=args.net_arch,
        ),
        seed=seed,
        verbose=0,
        **buffer,
    )
    # The held-out episodes: 10 envs on the run's evaluation seed, the same for every variant.
    evaluate = instruction_evaluator(
        lambda: make_vec_env(make_env_fn(args), n_envs=10, seed=eval_seed(seed), vec_env_cls=DummyVecEnv),
        args.eval_episodes, eval_seed(seed))
    callback = BudgetCallback(config["budgets"], evaluate)
    model.learn(config["budgets"][-1], callback=callback)
    venv.close()
    return callback.results


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """One run (a plain function of a plain dict, alike in this process or as a Ray Tune trial), timed."""
    return timed_run(train, config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_seeds(parser, [0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    arguments.add_budgets(parser, [10_000, 20_000, 30_000], help=arguments.BUDGETS_HELP)
    add_maze(parser, maze_dim=7, goals=3, time_limit=40)
    arguments.add_n_envs(parser, 4)
    parser.add_argument("--step-reward", type=float, default=0.0,
                        help="MazeRunner's per-step reward (0: 0/1 rewards, -1: HER's -1/0 scale); the buffer "
                        "relabels with the env's declared goal spec")
    arguments.add_eval_episodes(parser, 50)
    parser.add_argument("--relabel-ratio", type=float, default=0.8)
    arguments.add_learner(parser, learning_rate=5e-4, learning_starts=1_000, batch_size=128, gamma=0.95)
    parser.add_argument("--train-freq", type=int, default=1, help="vectorized env steps between updates")
    arguments.add_learner(parser, gradient_steps=1)
    parser.add_argument("--target-update-interval", type=int, default=1_000)
    arguments.add_learner(parser, exploration_fraction=0.3)
    parser.add_argument("--exploration-final-eps", type=float, default=0.05)
    parser.add_argument("--net-arch", type=int, nargs="+", default=[128, 128])
    arguments.add_threads(parser, help="torch threads (1 is fastest for these MLPs)")
    arguments.add_ray(parser, "(seed, variant) pairs")
    arguments.add_records(parser)
    args = parser.parse_args()
    if args.ray and args.threads != 1:
        parser.error("--threads: Ray trials use one torch thread each; use --cpus-per-trial to reserve cores")
    args.budgets = sorted(args.budgets)
    if args.step_reward != 0.0 and any(v.startswith("old-") for v in args.variants):
        parser.error("--step-reward: the old- buffers predate step_reward and would relabel with 0/1 rewards")
    th.set_num_threads(args.threads)

    print(f"DQN on MazeRunner(maze_dim={args.maze_dim}, num_goals={args.goals}, time_limit={args.time_limit}), "
          f"{args.n_envs} envs, budgets {args.budgets}, seeds {args.seeds}, relabel_ratio {args.relabel_ratio}; "
          f"eval: {args.eval_episodes} episodes, deterministic policy", flush=True)
    options = {k: v for k, v in vars(args).items() if k not in arguments.RAY_OPTIONS}
    print(f"hyperparameters: {options}", flush=True)
    spec = BenchmarkSpec(
        name="bench_hir_learning", algorithm="DQN", sides=args.variants, seeds=args.seeds, budgets=args.budgets,
        env=f"MazeRunner(maze_dim={args.maze_dim}, num_goals={args.goals}, time_limit={args.time_limit})",
        buffer=dict(relabel_ratio=args.relabel_ratio))
    start = time.perf_counter()
    records = run_benchmark(spec, run_trial, options, use_ray=args.ray, cpus_per_trial=args.cpus_per_trial,
                            address=args.ray_address)
    if args.records:
        records.save(args.records)
    print()
    print(render_table(records))
    print(f"(mean ± std over {len(args.seeds)} seeds; goals reached of {args.goals}; total "
          f"{(time.perf_counter() - start) / 60:.1f} min)")
    last = args.budgets[-1]

    def verdict(a: str, b: str) -> None:
        for metric, label in (("goals_reached", "goals reached"), ("success_rate", "success rate")):
            (mx, sx), (my, sy) = (mean_and_std(records.values(side, last, metric)) for side in (a, b))
            diff, spread = mx - my, sx + sy
            print(f"{'PASS' if diff > spread else 'MISS'}  {a} beats {b} on {label} at {last}: {diff:+.2f} "
                  f"(spread {spread:.2f})")

    for variant in args.variants:
        if variant != "none" and "none" in args.variants:
            verdict(variant, "none")
    for variant in args.variants:
        if variant.startswith("old-") and variant[4:] in args.variants:
            verdict(variant[4:], variant)
    for variant in args.variants:
        if variant.endswith("-relaxed") and variant.removesuffix("-relaxed") in args.variants:
            verdict(variant, variant.removesuffix("-relaxed"))


if __name__ == "__main__":
    main()
