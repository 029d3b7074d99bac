"""The moonshot's learner: DQN with a history window, its encoder and hindsight instruction relabeling on MazeRunner.

Why here: three benchmarks run this one learner (``moonshot_mazerunner.py`` once, ``moonshot_seeds.py`` over seeds
and variants, ``bench_controls.py`` per controls variant), and no benchmark imports another; the options, the
model, the wall-clock training and the curve's files are written once. It is a benchmark recipe, not an API of
the library (so not in the wheel): the user guide's learners are built from the public classes it uses.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import cast

import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from research.maze import add_maze
from sb3_hir.action_features import ACTION_FEATURES_KEY, EFFECTS_KEY, ActionEffectWrapper, ActionFeaturesWrapper
from sb3_hir.atomic import atomic_path
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.buffers.demonstrations import expert_episodes
from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
from sb3_hir.experiment import arguments
from sb3_hir.experiment.budgets import WallClockCallback, instruction_evaluator
from sb3_hir.experiment.seeds import eval_seed
from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
from sb3_hir.history import HistoryWrapper
from sb3_hir.policies import PerActionDQNPolicy

__all__ = ["build_model", "evaluate", "make_parser", "make_venv", "save", "train"]


def make_venv(args: argparse.Namespace, seed: int, n_envs: int) -> DummyVecEnv:
    """``n_envs`` MazeRunner envs of the run's options (controls, action features, history), seeded with ``seed``."""
    def env_fn():
        env = MazeRunnerEnv(maze_dim=args.maze_dim, num_goals=args.goals, time_limit=args.time_limit,
                            randomized_actions=getattr(args, "randomized_actions", False))
        features = getattr(args, "action_features", "none")
        if features == "effects":
            env = ActionEffectWrapper(env)
        elif features == "env":
            env = ActionFeaturesWrapper(env, "env")
        return HistoryWrapper(env, length=args.history) if args.history else env

    return cast(DummyVecEnv, make_vec_env(env_fn, n_envs=n_envs, seed=seed, vec_env_cls=DummyVecEnv))


def evaluate(model: DQN, args: argparse.Namespace) -> dict[str, float]:
    """``goals_reached`` and ``success_rate`` of the greedy policy on the run's held-out episodes (10 envs on its
    evaluation seed, the library's evaluator)."""
    seed = eval_seed(args.seed)
    return dict(instruction_evaluator(lambda: make_venv(args, seed, 10), args.eval_episodes, seed)(model))


def save(curve: list[dict[str, float]], args: argparse.Namespace, out: Path) -> None:
    """The curve as JSON and a two-panel PNG (against wall time and env steps), each written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    data = dict(config={k: v for k, v in vars(args).items() if k not in ("out", "replot")}, curve=curve)
    tmp = out / "curve.json.tmp"
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, out / "curve.json")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, key, label in ((axes[0], "minutes", "wall time (minutes)"), (axes[1], "timesteps", "env steps")):
        x = [p[key] for p in curve]
        ax.plot(x, [p["success_rate"] for p in curve], "o-", label="success rate (all goals in order)")
        ax.plot(x, [p["goals_reached"] / args.goals for p in curve], "s--", label="goals reached / k")
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[1].xaxis.set_major_formatter(lambda x, _: f"{x / 1000:.0f}k")
    axes[0].set_ylabel("share")
    axes[0].set_ylim(0, 1)
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"DQN + HIR + history {args.history} on MazeRunner {args.maze_dim}x{args.maze_dim}, k={args.goals}, "
                 f"time limit {args.time_limit} (2 CPU cores)", fontsize=10)
    fig.tight_layout()
    with atomic_path(out / "curve.png") as tmp_png:
        fig.savefig(tmp_png, format="png", dpi=100)
    plt.close(fig)


def make_parser(description: str) -> argparse.ArgumentParser:
    """The moonshot's options: ``moonshot_mazerunner.py``'s, which ``moonshot_seeds.py`` and ``bench_controls.py``
    take too."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--eval-minutes", type=float, default=5.0)
    arguments.add_eval_episodes(parser, 100)
    add_maze(parser, maze_dim=11, goals=3, time_limit=250)
    parser.add_argument("--randomized-actions", action="store_true",
                        help="permute the moves every episode (the agent must identify its controls from context)")
    arguments.add_history(parser, 16)
    parser.add_argument("--action-features", default="none", choices=["none", "effects", "env"],
                        help="per-action features: effects (ActionEffectWrapper's generic table) or env "
                             "(MazeRunner's MoveBelief, through ActionFeaturesWrapper)")
    parser.add_argument("--q-head", default="standard", choices=["standard", "per-action"],
                        help="DQN's output head: standard (one output per action index) or per-action "
                             "(PerActionDQNPolicy over the --action-features rows)")
    parser.add_argument("--encoder", default="gru", choices=["gru", "conv"])
    parser.add_argument("--steps", type=int, default=600_000, help="planned env steps (sets buffer and exploration)")
    arguments.add_n_envs(parser, 8)
    arguments.add_learner(parser, gamma=0.98, learning_rate=5e-4, gradient_steps=4, exploration_fraction=0.15)
    parser.add_argument("--n-steps", type=int, default=3, help="n-step hindsight returns of the buffer")
    parser.add_argument("--relaxed-draw", action="store_true",
                        help="relabel under the relaxed reach rule (research.relaxed), to measure it")
    parser.add_argument("--demos", type=int, default=0,
                        help="shortest-path episodes in the buffer's demonstration region (collected on the clock)")
    parser.add_argument("--demo-ratio", type=float, default=0.5, help="share of each batch from --demos")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="moonshot")
    return parser


def build_model(args: argparse.Namespace, buffer_class: type | None = None) -> DQN:
    """The moonshot's DQN: history window and encoder when ``args.history``, else the memoryless control.

    :param buffer_class: the replay buffer, if not :class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer`
        (``--relaxed-draw`` runs pass the benchmark's relaxed-reach buffer, which the library does not ship).
    """
    if getattr(args, "relaxed_draw", False) and buffer_class is None:
        raise ValueError("--relaxed-draw: pass the relaxed-reach buffer class (research.relaxed)")
    venv = make_venv(args, args.seed, args.n_envs)
    features = getattr(args, "action_features", "none")
    table = {"none": None, "effects": EFFECTS_KEY, "env": ACTION_FEATURES_KEY}[features]
    per_action = getattr(args, "q_head", "standard") == "per-action"
    if per_action and table is None:
        raise SystemExit("--q-head per-action needs --action-features effects or env")
    # The per-action head reads the table row by row; the standard head sees it as one more key.
    keys = ["obs", "goals"] if per_action or table is None else ["obs", "goals", table]
    extractor = (dict(features_extractor_class=HistoryExtractor,
                      features_extractor_kwargs=dict(keys=keys, encoder=args.encoder))
                 if args.history else
                 dict(features_extractor_class=KeySelectExtractor, features_extractor_kwargs=dict(keys=keys)))
    head = dict(action_key=table) if per_action else {}
    policy = PerActionDQNPolicy if per_action else "MultiInputPolicy"
    return DQN(policy, venv, learning_rate=args.learning_rate, buffer_size=args.steps,
               learning_starts=2_000, batch_size=128, gamma=args.gamma, train_freq=1,
               gradient_steps=args.gradient_steps, target_update_interval=2_000,
               exploration_fraction=args.exploration_fraction, exploration_final_eps=0.05,
               replay_buffer_class=buffer_class or HindsightInstructionReplayBuffer,
               replay_buffer_kwargs=dict(hindsight_goals="some", relabel_ratio=0.8, seed=args.seed,
                                         n_steps=args.n_steps, gamma=args.gamma,
                                         demo_ratio=args.demo_ratio if getattr(args, "demos", 0) else 0.0),
               policy_kwargs=dict(net_arch=[256, 256], **extractor, **head), seed=args.seed, verbose=0, device="cpu")


def train(args: argparse.Namespace, out: Path, buffer_class: type | None = None) -> WallClockCallback:
    """Train for ``args.minutes`` of wall time (evaluations included), evaluating every ``args.eval_minutes``; the
    curve is in the returned clock (and in ``out``, as JSON and PNG, after every evaluation)."""
    th.set_num_threads(1)
    model = build_model(args, buffer_class)
    print(f"moonshot: {vars(args)}", flush=True)

    def report(curve: list[dict[str, float]]) -> None:
        point = curve[-1]
        print(f"{point['minutes']:6.1f} min {point['timesteps']:>8} steps: success {point['success_rate']:.3f}, "
              f"goals reached {point['goals_reached']:.2f} / {args.goals}", flush=True)
        save(curve, args, out)

    clock = WallClockCallback(args.eval_minutes * 60, args.minutes * 60, lambda m: evaluate(m, args), report)
    if getattr(args, "demos", 0):  # on the clock: collecting them is part of what demonstrations cost
        venv = make_venv(args, args.seed + 20_000, 1)
        demos = expert_episodes(ShortestPathExpert(venv), venv, args.demos, seed=args.seed)
        buffer = model.replay_buffer
        assert isinstance(buffer, HindsightInstructionReplayBuffer)
        buffer.add_demonstrations(demos)
        print(f"{args.demos} shortest-path demonstrations ({sum(map(len, demos))} steps) in "
              f"{time.perf_counter() - clock.start:.1f} s", flush=True)
    model.learn(args.steps, callback=clock)
    if not clock.curve or clock.curve[-1]["timesteps"] != model.num_timesteps:
        clock.record()  # the final policy, unless the limit fell on an evaluation
    return clock
