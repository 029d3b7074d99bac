"""Does hindsight instruction relabeling help DQN learn MazeRunner, and does per-sample relabeling beat per-episode?

Every run trains SB3's DQN, unchanged, on MazeRunner with the same hyperparameters, seeds and env streams; only
the replay buffer differs. Variants (``--variants``):

* ``none``: SB3's own DictReplayBuffer (plain DQN);
* ``some`` / ``all``: :class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer` with that strategy (a fresh
  hindsight instruction per sampled transition, ``goal_selection="future"``);
* ``some-n3``: ``some`` with 3-step hindsight returns (``n_steps=3``, the algorithm's gamma);
* ``some-relaxed`` / ``some-n3-relaxed``: ``some`` / ``some-n3`` with the relaxed reach rule
  (:class:`relaxed_draw.RelaxedReachBuffer`: the instruction's last goal counts as reached at its first
  occurrence after the sampled transition, even if its value was passed before it), measured against the shipped
  rule (issue 35);
* ``old-some`` / ``old-all``: the previous buffer, which drew one instruction per finished episode at ``add()``
  time. It is loaded from git history (commit ``OLD_COMMIT``, the last one before the rewrite), so the comparison
  runs in one process without keeping a copy of the old code in the tree.

The policy sees the observation and the instruction (:class:`~sb3_hir.extractors.KeySelectExtractor` over ``obs``
and ``goals``). Each run is evaluated at every budget of ``--budgets`` inside the same training run (a
callback): ``--eval-episodes`` episodes with the deterministic policy on fixed eval seeds (the same for all
variants), recording goals reached per episode and the success rate (all k goals reached in order).

It prints mean +- std over seeds per budget and two verdicts at the last budget: each HIR variant against
``none``, and each new variant against its ``old-`` counterpart (a win needs the difference of means to exceed the
sum of both standard deviations).

With ``--ray`` the (seed, variant) runs are Ray Tune trials (:mod:`ray_trials`: one torch thread each,
``--cpus-per-trial`` CPUs reserved, a local Ray instance or ``--ray-address``), in parallel; each run is seeded as
in the sequential loop, so the printed lines and tables are the same, printed once all trials are done. The
``old-`` variants read git history from this script's repository, whatever the trial's working directory.

Usage: ``python benchmarks/bench_hir_learning.py [--seeds 0 1 2] [--budgets 10000 20000 30000] [--maze-dim 7]
[--goals 3] [--step-reward 0] [--variants none some all some-n3 old-some old-all]
[--ray [--ray-address auto] [--cpus-per-trial 1]]``
"""

from __future__ import annotations

import argparse
import subprocess
import time
import types
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from evaluation import goals_and_success
from relaxed_draw import RelaxedReachBuffer
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.experiment import arguments
from sb3_hir.experiment.runner import run_all
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


class BudgetEval(BaseCallback):
    """Evaluate at each budget inside one training run."""

    def __init__(self, budgets: list[int], evaluate: Any) -> None:
        super().__init__()
        self.budgets = sorted(budgets)
        self.evaluate = evaluate
        self.results: dict[int, tuple[float, float]] = {}

    def _on_step(self) -> bool:
        while self.budgets and self.num_timesteps >= self.budgets[0]:
            self.results[self.budgets.pop(0)] = self.evaluate(self.model)
        return True


def make_env_fn(args: argparse.Namespace):
    def env_fn() -> MazeRunnerEnv:
        return MazeRunnerEnv(maze_dim=args.maze_dim, num_goals=args.goals, time_limit=args.time_limit,
                             step_reward=args.step_reward)

    return env_fn


def train(variant: str, seed: int, args: argparse.Namespace) -> dict[int, tuple[float, float]]:
    venv = make_vec_env(make_env_fn(args), n_envs=args.n_envs, seed=seed, vec_env_cls=DummyVecEnv)
    buffer: dict[str, Any] = {}
    if variant.startswith("old-"):
        buffer = dict(
            replay_buffer_class=old_buffer_class(),
            replay_buffer_kwargs=dict(strategy=variant[4:], relabel_ratio=args.relabel_ratio),
        )
    elif variant != "none":
        relaxed = variant.endswith("-relaxed")
        strategy, _, n = variant.removesuffix("-relaxed").partition("-n")
        buffer = dict(
            replay_buffer_class=RelaxedReachBuffer if relaxed else HindsightInstructionReplayBuffer,
            replay_buffer_kwargs=dict(strategy=strategy, relabel_ratio=args.relabel_ratio, n_steps=int(n or 1),
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
    callback = BudgetEval(args.budgets, lambda m: evaluate(m, seed, args))
    model.learn(args.budgets[-1], callback=callback)
    venv.close()
    return callback.results


def evaluate(model: DQN, seed: int, args: argparse.Namespace) -> tuple[float, float]:
    """Mean goals reached per episode and success rate of the deterministic policy."""
    venv = make_vec_env(make_env_fn(args), n_envs=10, seed=10_000 + seed, vec_env_cls=DummyVecEnv)
    return goals_and_success(model, venv, args.eval_episodes)


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """One training run: ``config`` holds ``variant``, ``seed`` and ``options`` (the command line options as a
    dict). Returns ``curve`` (budget as a string -> ``[goals reached, success rate]``) and ``seconds``. A plain
    function of a plain dict, so that it runs alike in this process or as a Ray Tune trial."""
    t0 = time.perf_counter()
    curve = train(config["variant"], config["seed"], argparse.Namespace(**config["options"]))
    return {"curve": {str(b): list(value) for b, value in curve.items()}, "seconds": time.perf_counter() - t0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_seeds(parser, [0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    arguments.add_budgets(parser, [10_000, 20_000, 30_000], help=arguments.BUDGETS_HELP)
    arguments.add_maze(parser, maze_dim=7, goals=3, time_limit=40)
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
    results: dict[str, dict[int, list[tuple[float, float]]]] = {v: {b: [] for b in args.budgets} for v in args.variants}
    start = time.perf_counter()
    runs = [(seed, variant) for seed in args.seeds for variant in args.variants]
    configs = [dict(variant=variant, seed=seed, options=options) for seed, variant in runs]

    def report(seed: int, variant: str, out: dict[str, Any]) -> None:
        curve = {int(b): tuple(value) for b, value in out["curve"].items()}
        for budget in args.budgets:
            results[variant][budget].append(curve.get(budget, (float("nan"), float("nan"))))
        text = " ".join(f"{b}:{curve[b][0]:.2f}/{curve[b][1]:.2f}" for b in args.budgets if b in curve)
        print(f"  seed {seed} {variant:<8} goals/success at budgets {text}  ({out['seconds']:.0f} s)", flush=True)

    outs = run_all(run_trial, configs, use_ray=args.ray, cpus_per_trial=args.cpus_per_trial, address=args.ray_address,
                   name="bench_hir_learning")
    for (seed, variant), out in zip(runs, outs, strict=True):
        report(seed, variant, out)

    print()
    stats: dict[str, dict[int, np.ndarray]] = {}
    header = " | ".join(f"{b} steps: goals / success" for b in args.budgets)
    print(f"| variant | {header} |")
    print("|---|" + "---:|" * len(args.budgets))
    for variant, per_budget in results.items():
        cells = []
        stats[variant] = {}
        for budget in args.budgets:
            arr = np.array(per_budget[budget])
            stats[variant][budget] = arr
            (g, s_), (gs, ss) = arr.mean(axis=0), arr.std(axis=0)
            cells.append(f"{g:.2f} ± {gs:.2f} / {s_:.2f} ± {ss:.2f}")
        print(f"| {variant} | " + " | ".join(cells) + " |")
    print(f"(mean ± std over {len(args.seeds)} seeds; goals reached of {args.goals}; total "
          f"{(time.perf_counter() - start) / 60:.1f} min)")
    last = args.budgets[-1]

    def verdict(a: str, b: str) -> None:
        x, y = stats[a][last], stats[b][last]
        for col, label in ((0, "goals reached"), (1, "success rate")):
            diff, spread = x[:, col].mean() - y[:, col].mean(), x[:, col].std() + y[:, col].std()
            print(f"{'PASS' if diff > spread else 'MISS'}  {a} beats {b} on {label} at {last}: {diff:+.2f} "
                  f"(spread {spread:.2f})")

    for variant in args.variants:
        if variant != "none" and "none" in stats:
            verdict(variant, "none")
    for variant in args.variants:
        if variant.startswith("old-") and variant[4:] in stats:
            verdict(variant[4:], variant)
    for variant in args.variants:
        if variant.endswith("-relaxed") and variant.removesuffix("-relaxed") in stats:
            verdict(variant, variant.removesuffix("-relaxed"))


if __name__ == "__main__":
    main()
