"""Hindsight instruction relabeling (HIR) on MazeRunner with a plain SB3 / sb3-contrib setup.

Copy the ``train`` function into your own project: the only sb3-hir pieces are the replay buffer class, the
features extractor that hides "achieved" from the networks, and (optionally) the evaluation callback.

    python examples/hindsight_relabeling_mazerunner.py                      # DQN, HIR "some", ~3 min on a CPU
    python examples/hindsight_relabeling_mazerunner.py --relabel none       # the same without relabeling
    python examples/hindsight_relabeling_mazerunner.py --algo sac           # SAC (continuous MazeRunner)
    python examples/hindsight_relabeling_mazerunner.py --maze_size 11 --goals 3 --time_limit 250 --timesteps 200000

Every option has a tiny-budget value for smoke tests, e.g. ``--timesteps 500 --eval_episodes 2``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from sb3_contrib import QRDQN, TQC
from stable_baselines3 import DQN, SAC
from stable_baselines3.common.env_util import make_vec_env

import sb3_hir  # noqa: F401  (registers the gymnasium id "sb3_hir/MazeRunner-v0")
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.callbacks import InstructionEvalCallback
from sb3_hir.extractors import KeySelectExtractor
from sb3_hir.plots import plot_learning_curves

ALGOS = {"dqn": DQN, "qrdqn": QRDQN, "sac": SAC, "tqc": TQC}
CONTINUOUS = {"sac", "tqc"}


def train(args: argparse.Namespace) -> InstructionEvalCallback:
    env_kwargs = dict(
        maze_dim=args.maze_size,
        num_goals=args.goals,
        time_limit=args.time_limit,
        randomized_actions=args.randomized_actions,
        continuous=args.algo in CONTINUOUS,  # SAC and TQC need Box actions
    )
    env = make_vec_env("sb3_hir/MazeRunner-v0", n_envs=args.n_envs, seed=args.seed, env_kwargs=env_kwargs)
    eval_env = make_vec_env("sb3_hir/MazeRunner-v0", n_envs=5, seed=args.seed + 10_000, env_kwargs=env_kwargs)

    relabeling = {}
    if args.relabel != "none":
        relabeling = dict(
            replay_buffer_class=HindsightInstructionReplayBuffer,
            # "some": each finished episode is stored once more under an instruction of goals it really reached.
            replay_buffer_kwargs=dict(hindsight_goals=args.relabel, relabel_ratio=0.8, seed=args.seed),
        )
    model = ALGOS[args.algo](
        "MultiInputPolicy",
        env,
        learning_rate=5e-4,
        batch_size=128,
        gamma=0.97,
        buffer_size=max(args.timesteps, 1_000),
        learning_starts=min(1_000, args.timesteps // 10),
        train_freq=1,
        gradient_steps=max(1, args.n_envs // 2),
        # The networks see the observation and the instruction; "achieved" is kept for relabeling only.
        policy_kwargs=dict(
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
            net_arch=[256, 256],
        ),
        seed=args.seed,
        **({"exploration_fraction": 0.3, "target_update_interval": 2_000} if args.algo not in CONTINUOUS else {}),
        **relabeling,
    )
    evaluation = InstructionEvalCallback(
        eval_env, eval_freq=max(args.timesteps // 10, 1), n_eval_episodes=args.eval_episodes, seed=0, verbose=1
    )
    model.learn(args.timesteps, callback=evaluation)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / f"{args.algo}-{args.relabel}")
    plot_learning_curves({f"{args.algo}, relabel {args.relabel}": evaluation.history},
                         out / f"{args.algo}-{args.relabel}-curve.png", num_goals=args.goals)
    return evaluation


def main() -> None:
    # Small networks: one torch thread per process is as fast, and much faster on a busy or shared CPU.
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", choices=sorted(ALGOS), default="dqn")
    parser.add_argument("--relabel", choices=["some", "all", "none"], default="some")
    parser.add_argument("--maze_size", type=int, default=9)
    parser.add_argument("--goals", type=int, default=3)
    parser.add_argument("--time_limit", type=int, default=100)
    parser.add_argument("--randomized_actions", action="store_true", help="permute the moves every episode")
    parser.add_argument("--timesteps", type=int, default=60_000)
    parser.add_argument("--n_envs", type=int, default=8)
    parser.add_argument("--eval_episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/example-hir", help="where the model and the curve go")
    args = parser.parse_args()
    history = train(args).history
    print(f"{args.algo} with relabel={args.relabel}: success rate {history.success_rate[-1]:.2f}, "
          f"goals reached {history.goals_reached[-1]:.2f} of {args.goals} after {history.timesteps[-1]} steps")


if __name__ == "__main__":
    main()
