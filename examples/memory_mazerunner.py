"""Memory for unchanged SB3 and imitation learners on MazeRunner: a history window in the observation.

MazeRunner never shows the maze, and the maze is new every episode, so a memoryless policy loops in dead ends. Two
recipes, each with the learner class unchanged:

* ``--learner dqn``: DQN with hindsight instruction relabeling from the env's sparse reward. ``HistoryWrapper``
  adds the last ``--history`` observations and actions; ``HistoryExtractor`` encodes them next to the observation
  and the instruction. The window holds no goals, so relabeled samples stay faithful.
* ``--learner bc-ppo``: imitation's BC trains the same kind of history policy on expert labels, and PPO starts
  from its weights (the warm start; needs the ``dagger`` extra for imitation).

    python examples/memory_mazerunner.py                                 # DQN + HIR + history 16, ~5 min on a CPU
    python examples/memory_mazerunner.py --history 0                     # the same without memory
    python examples/memory_mazerunner.py --learner bc-ppo --goals 2      # BC on expert labels, then PPO

Every option has a tiny-budget value for smoke tests, e.g. ``--timesteps 500 --eval_episodes 2``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from stable_baselines3 import DQN, PPO
from stable_baselines3.common.env_util import make_vec_env

import sb3_hir  # noqa: F401  (registers the gymnasium id "sb3_hir/MazeRunner-v0")
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.callbacks import InstructionEvalCallback, evaluate_instruction_policy
from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
from sb3_hir.history import HistoryWrapper


def make_env(args: argparse.Namespace, n_envs: int, seed: int):
    env_kwargs = dict(maze_dim=args.maze_size, num_goals=args.goals, time_limit=args.time_limit)
    memory = dict(wrapper_class=HistoryWrapper, wrapper_kwargs=dict(length=args.history)) if args.history else {}
    return make_vec_env("sb3_hir/MazeRunner-v0", n_envs=n_envs, seed=seed, env_kwargs=env_kwargs, **memory)


def policy_kwargs(args: argparse.Namespace) -> dict:
    if args.history:  # the window is encoded by a GRU, next to the current observation and the instruction
        return dict(features_extractor_class=HistoryExtractor, net_arch=[256, 256],
                    features_extractor_kwargs=dict(keys=["obs", "goals"], history_key="history"))
    return dict(features_extractor_class=KeySelectExtractor, net_arch=[256, 256],
                features_extractor_kwargs=dict(keys=["obs", "goals"]))


def train_dqn(args: argparse.Namespace, env, eval_env) -> None:
    model = DQN("MultiInputPolicy", env, learning_rate=5e-4, batch_size=128, gamma=0.97, train_freq=1,
                gradient_steps=max(1, args.n_envs // 2), buffer_size=max(args.timesteps, 1_000),
                learning_starts=min(1_000, args.timesteps // 10), exploration_fraction=0.3,
                target_update_interval=2_000, replay_buffer_class=HindsightInstructionReplayBuffer,
                replay_buffer_kwargs=dict(hindsight_goals="some", relabel_ratio=0.8, seed=args.seed),
                policy_kwargs=policy_kwargs(args), seed=args.seed)
    evaluation = InstructionEvalCallback(eval_env, eval_freq=max(args.timesteps // 10, 1),
                                         n_eval_episodes=args.eval_episodes, seed=0, verbose=1)
    model.learn(args.timesteps, callback=evaluation)
    model.save(Path(args.out) / f"dqn-history{args.history}")
    print(f"DQN + HIR, history {args.history}: success rate {evaluation.history.success_rate[-1]:.2f}, goals "
          f"reached {evaluation.history.goals_reached[-1]:.2f} / {args.goals} after {args.timesteps} steps")


def train_bc_then_ppo(args: argparse.Namespace, env, eval_env) -> None:
    from imitation.algorithms import bc
    from imitation.data import rollout

    from sb3_hir.envs import ShortestPathExpert

    # 1. BC (imitation, unchanged) on expert labels, with the policy class PPO will build.
    demo_env = make_env(args, args.n_envs, args.seed + 20_000)
    trajectories = rollout.generate_trajectories(ShortestPathExpert(demo_env), demo_env,
                                                 rollout.make_min_timesteps(args.labels),
                                                 rng=np.random.default_rng(args.seed))
    model = PPO("MultiInputPolicy", env, learning_rate=1e-4, n_steps=256, batch_size=256, gamma=0.97,
                policy_kwargs=policy_kwargs(args), seed=args.seed)
    cloner = bc.BC(observation_space=env.observation_space, action_space=env.action_space, policy=model.policy,
                   demonstrations=rollout.flatten_trajectories(trajectories), rng=np.random.default_rng(args.seed),
                   batch_size=64, device="cpu")
    cloner.train(n_batches=args.bc_batches, progress_bar=False, log_rollouts_n_episodes=0)
    # 2. PPO continues from those weights: BC trained model.policy in place (same class, same shapes).
    start = evaluate_instruction_policy(model.policy, eval_env, args.eval_episodes, seed=0)
    print(f"after BC on {args.labels} expert labels: success rate {start.success_rate:.2f}")
    evaluation = InstructionEvalCallback(eval_env, eval_freq=max(args.timesteps // 10, 1),
                                         n_eval_episodes=args.eval_episodes, seed=0, verbose=1)
    model.learn(args.timesteps, callback=evaluation)
    model.save(Path(args.out) / f"ppo-warm-history{args.history}")
    print(f"PPO warm-started from BC, history {args.history}: success rate {evaluation.history.success_rate[-1]:.2f}"
          f" after {args.timesteps} steps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learner", choices=["dqn", "bc-ppo"], default="dqn")
    parser.add_argument("--history", type=int, default=16, help="steps in the window (0: no memory)")
    parser.add_argument("--maze_size", type=int, default=9)
    parser.add_argument("--goals", type=int, default=3)
    parser.add_argument("--time_limit", type=int, default=100)
    parser.add_argument("--timesteps", type=int, default=60_000)
    parser.add_argument("--labels", type=int, default=8_000, help="bc-ppo: expert steps BC trains on")
    parser.add_argument("--bc_batches", type=int, default=3_000, help="bc-ppo: BC gradient steps")
    parser.add_argument("--n_envs", type=int, default=8)
    parser.add_argument("--eval_episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="memory-example")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    env = make_env(args, args.n_envs, args.seed)
    eval_env = make_env(args, 5, args.seed + 10_000)
    (train_dqn if args.learner == "dqn" else train_bc_then_ppo)(args, env, eval_env)


if __name__ == "__main__":
    main()
