"""DAgger on MazeRunner: imitate the shortest-path expert with imitation's behaviour cloning.

sb3-hir's trainers keep imitation's ``SimpleDAggerTrainer`` API; what differs is the collector underneath (Dict
observations, recurrent learners, batched round files) and that the expert and the beta schedule are plugins,
picked by name. Copy ``train`` into your own project.

    python examples/dagger_mazerunner.py                        # ~1 min on a CPU
    python examples/dagger_mazerunner.py --beta_schedule linear --timesteps 40000
    python examples/dagger_mazerunner.py --timesteps 600 --eval_episodes 2   # smoke test

The run directory holds the demos of every round (``demos/round-NNN/*.npz``) and a checkpoint per round; a killed
run continues with ``sb3_hir.dagger.reconstruct_trainer(scratch_dir, venv)``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from imitation.algorithms import bc
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.policies import ActorCriticPolicy

import sb3_hir  # noqa: F401  (registers the gymnasium id "sb3_hir/MazeRunner-v0")
from sb3_hir.callbacks import evaluate_instruction_policy
from sb3_hir.dagger import SimpleDAggerTrainer
from sb3_hir.extractors import KeySelectExtractor


def train(args: argparse.Namespace) -> SimpleDAggerTrainer:
    env_kwargs = dict(maze_dim=args.maze_size, num_goals=args.goals, time_limit=args.time_limit)
    venv = make_vec_env("sb3_hir/MazeRunner-v0", n_envs=args.n_envs, seed=args.seed, env_kwargs=env_kwargs)
    rng = np.random.default_rng(args.seed)
    # The learner sees the observation and the instruction, not the maze: the expert knows the maze.
    policy = ActorCriticPolicy(
        venv.observation_space,
        venv.action_space,
        lr_schedule=lambda _: 0.0,  # unused: BC has its own optimizer
        net_arch=[256, 256],
        features_extractor_class=KeySelectExtractor,
        features_extractor_kwargs=dict(keys=["obs", "goals"]),
    )
    bc_trainer = bc.BC(
        observation_space=venv.observation_space,
        action_space=venv.action_space,
        rng=rng,
        policy=policy,
        batch_size=256,
        device="cpu",
    )
    trainer = SimpleDAggerTrainer(
        venv=venv,
        scratch_dir=args.out,
        expert_policy="shortest-path",  # an "expert" plugin, built on venv
        beta_schedule=args.beta_schedule,  # a "beta_schedule" plugin
        bc_trainer=bc_trainer,
        rng=rng,
    )
    trainer.train(
        args.timesteps,
        rollout_round_min_timesteps=args.steps_per_round,
        bc_train_kwargs=dict(n_epochs=4, progress_bar=False, log_rollouts_venv=None),
    )
    return trainer


def main() -> None:
    # Small networks: one torch thread per process is as fast, and much faster on a busy or shared CPU.
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beta_schedule", default="exponential", help="beta_schedule plugin name")
    parser.add_argument("--maze_size", type=int, default=9)
    parser.add_argument("--goals", type=int, default=2)
    parser.add_argument("--time_limit", type=int, default=80)
    parser.add_argument("--timesteps", type=int, default=20_000, help="labelled steps over all rounds")
    parser.add_argument("--steps_per_round", type=int, default=4_000)
    parser.add_argument("--n_envs", type=int, default=8)
    parser.add_argument("--eval_episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/example-dagger", help="scratch directory: demos and checkpoints")
    args = parser.parse_args()

    trainer = train(args)
    env_kwargs = dict(maze_dim=args.maze_size, num_goals=args.goals, time_limit=args.time_limit)
    eval_env = make_vec_env("sb3_hir/MazeRunner-v0", n_envs=5, seed=args.seed + 10_000, env_kwargs=env_kwargs)
    score = evaluate_instruction_policy(trainer.policy, eval_env, args.eval_episodes)
    print(f"DAgger after {trainer.round_num} rounds: success rate {score.success_rate:.2f}, goals reached "
          f"{score.goals_reached:.2f} of {args.goals}; demos and checkpoints in {args.out}")


if __name__ == "__main__":
    main()
