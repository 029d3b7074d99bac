"""The moonshot: AMAGO's MazeRunner (11x11, k = 3, time limit 250) from sparse reward in one hour on 2 CPU cores.

No expert: SB3's DQN, unchanged, learns from the env's own reward with sb3-hir's components only:
:class:`~sb3_hir.history.HistoryWrapper` (goal-free memory in the observation),
:class:`~sb3_hir.extractors.HistoryExtractor` (encodes it) and
:class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer` (a fresh hindsight instruction per sampled
transition). Training stops after ``--minutes`` of wall time, evaluations included; every ``--eval-minutes`` the
deterministic policy plays ``--eval-episodes`` held-out episodes. The curve (success rate and goals reached against
wall time and env steps) goes to ``--out`` as JSON and PNG, and each evaluation is printed as it happens.

Target (issue 12): >= 50 % full-instruction success within the hour.

Usage: ``python benchmarks/moonshot_mazerunner.py [--minutes 60] [--history 16] [--out moonshot]``;
``--replot DIR`` redraws ``DIR/curve.png`` from ``DIR/curve.json`` without training.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch as th
from relaxed_draw import RelaxedReachBuffer
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.action_features import ACTION_FEATURES_KEY, EFFECTS_KEY, ActionEffectWrapper, ActionFeaturesWrapper
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.buffers.demonstrations import expert_episodes
from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
from sb3_hir.experiment import arguments, eval_seed, instruction_evaluator
from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
from sb3_hir.history import HistoryWrapper
from sb3_hir.policies import PerActionDQNPolicy


def make_venv(args: argparse.Namespace, seed: int, n_envs: int):
    def env_fn():
        env = MazeRunnerEnv(maze_dim=args.maze_dim, num_goals=args.goals, time_limit=args.time_limit,
                            randomized_actions=getattr(args, "randomized_actions", False))
        features = getattr(args, "action_features", "none")
        if features == "effects":
            env = ActionEffectWrapper(env)
        elif features == "env":
            env = ActionFeaturesWrapper(env, "env")
        return HistoryWrapper(env, length=args.history) if args.history else env

    return make_vec_env(env_fn, n_envs=n_envs, seed=seed, vec_env_cls=DummyVecEnv)


def evaluate(model: DQN, args: argparse.Namespace) -> dict[str, float]:
    """``goals_reached`` and ``success_rate`` of the greedy policy on the run's held-out episodes (10 envs on its
    evaluation seed, the library's evaluator)."""
    seed = eval_seed(args.seed)
    return dict(instruction_evaluator(lambda: make_venv(args, seed, 10), args.eval_episodes, seed)(model))


class WallClock(BaseCallback):
    """Evaluate every ``eval_seconds`` of wall time and stop after ``limit_seconds`` (evaluations included)."""

    def __init__(self, args: argparse.Namespace, out: Path) -> None:
        super().__init__()
        self.args = args
        self.out = out
        self.limit = args.minutes * 60
        self.every = args.eval_minutes * 60
        self.start = time.perf_counter()
        self.next_eval = self.every
        self.curve: list[dict[str, float]] = []

    def record(self) -> None:
        result = evaluate(self.model, self.args)
        goals, success = result["goals_reached"], result["success_rate"]
        minutes = (time.perf_counter() - self.start) / 60
        self.curve.append(dict(minutes=round(minutes, 2), timesteps=int(self.num_timesteps), goals_reached=goals,
                               success_rate=success, load_average=round(os.getloadavg()[0], 2)))
        print(f"{minutes:6.1f} min {self.num_timesteps:>8} steps: success {success:.3f}, goals reached "
              f"{goals:.2f} / {self.args.goals}", flush=True)
        save(self.curve, self.args, self.out)

    def _on_step(self) -> bool:
        elapsed = time.perf_counter() - self.start
        if elapsed >= self.next_eval:
            self.record()
            self.next_eval += self.every
        return time.perf_counter() - self.start < self.limit


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
    tmp_png = out / "curve.tmp.png"
    fig.savefig(tmp_png, dpi=100)
    plt.close(fig)
    os.replace(tmp_png, out / "curve.png")


def make_parser(description: str) -> argparse.ArgumentParser:
    """The moonshot's options (shared with ``moonshot_seeds.py``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--eval-minutes", type=float, default=5.0)
    arguments.add_eval_episodes(parser, 100)
    arguments.add_maze(parser, maze_dim=11, goals=3, time_limit=250)
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
                        help="relabel under the relaxed reach rule (relaxed_draw.RelaxedReachBuffer), to measure it")
    parser.add_argument("--demos", type=int, default=0,
                        help="shortest-path episodes in the buffer's demonstration region (collected on the clock)")
    parser.add_argument("--demo-ratio", type=float, default=0.5, help="share of each batch from --demos")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="moonshot")
    return parser


def main() -> None:
    parser = make_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--replot", metavar="DIR", help="redraw DIR/curve.png from DIR/curve.json and exit")
    args = parser.parse_args()
    if args.replot:
        data = json.loads((Path(args.replot) / "curve.json").read_text())
        save(data["curve"], argparse.Namespace(**data["config"]), Path(args.replot))
        return
    clock = train(args, Path(args.out))
    best = max(clock.curve, key=lambda p: p["success_rate"])
    print(f"{'PASS' if best['success_rate'] >= 0.5 else 'MISS'}  >= 50 % success within {args.minutes:.0f} min: "
          f"best {best['success_rate']:.3f} at {best['minutes']:.1f} min ({best['timesteps']} steps); last "
          f"{clock.curve[-1]['success_rate']:.3f}")


def build_model(args: argparse.Namespace) -> DQN:
    """The moonshot's DQN: history window and encoder when ``args.history``, else the memoryless control."""
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
               replay_buffer_class=RelaxedReachBuffer if getattr(args, "relaxed_draw", False)
               else HindsightInstructionReplayBuffer,
               replay_buffer_kwargs=dict(strategy="some", relabel_ratio=0.8, seed=args.seed, n_steps=args.n_steps,
                                         gamma=args.gamma,
                                         demo_ratio=args.demo_ratio if getattr(args, "demos", 0) else 0.0),
               policy_kwargs=dict(net_arch=[256, 256], **extractor, **head), seed=args.seed, verbose=0, device="cpu")


def train(args: argparse.Namespace, out: Path) -> WallClock:
    """Train for ``args.minutes`` of wall time (evaluations included), evaluating as it goes; the curve is in
    the returned clock (and in ``out``)."""
    th.set_num_threads(1)
    model = build_model(args)
    print(f"moonshot: {vars(args)}", flush=True)
    clock = WallClock(args, out)
    if getattr(args, "demos", 0):  # on the clock: collecting them is part of what demonstrations cost
        venv = make_venv(args, args.seed + 20_000, 1)
        demos = expert_episodes(ShortestPathExpert(venv), venv, args.demos, seed=args.seed)
        model.replay_buffer.add_demonstrations(demos)
        print(f"{args.demos} shortest-path demonstrations ({sum(map(len, demos))} steps) in "
              f"{time.perf_counter() - clock.start:.1f} s", flush=True)
    model.learn(args.steps, callback=clock)
    if not clock.curve or clock.curve[-1]["timesteps"] != model.num_timesteps:
        clock.record()  # the final policy, unless the limit fell on an evaluation
    return clock

if __name__ == "__main__":
    main()
