"""RecurrentPPO against PPO (no memory) on MazeRunner at the same budget, both through sb3-hir's VecEnv wrappers.

MazeRunner draws a new maze every episode and shows the agent only its cell, four wall distances and the time;
the walls it has bumped into and the corridors it has tried are only known to an agent that remembers them.
Both agents are the unchanged SB3 / sb3-contrib classes on the same envs: ``VecHideKeys`` removes ``"achieved"``
(a copy of the cell) from the policy's observation, ``VecMonitor`` logs episodes. Same seeds, same timesteps,
same MLP sizes; the recurrent agent adds an LSTM. Evaluation: ``--eval-episodes`` fresh episodes per seed with
the stochastic policy (a deterministic memoryless policy loops forever in a maze it cannot see), the recurrent
state carried per sub-env and reset at episode start.

Prints mean ± std over seeds of the success rate (all k goals reached), the goals reached per episode and the
training time, and the ratio of goals reached (above 1 when memory pays off at this budget).

Usage: ``python benchmarks/bench_recurrent_mazerunner.py [--timesteps 150000] [--seeds 0 1] [--maze-dim 9]
[--num-goals 2] [--time-limit 80] [--n-envs 8] [--eval-episodes 64]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import torch as th
from research.maze import add_maze
from sb3_contrib import RecurrentPPO
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecMonitor

from sb3_hir.callbacks import evaluate_instruction_policy
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.experiment import arguments, markdown_table, mean_std
from sb3_hir.vec_env import VecHideKeys


def make_venv(args: argparse.Namespace, n_envs: int, seed: int) -> VecEnv:
    def make() -> MazeRunnerEnv:
        return MazeRunnerEnv(maze_dim=args.maze_dim, num_goals=args.num_goals, time_limit=args.time_limit,
                             randomized_actions=args.randomized_actions)

    venv = DummyVecEnv([make for _ in range(n_envs)])
    venv.seed(seed)
    return VecMonitor(VecHideKeys(venv, keys=("achieved",)))


def build(name: str, venv: VecEnv, args: argparse.Namespace, seed: int) -> BaseAlgorithm:
    common: dict[str, Any] = dict(
        n_steps=args.n_steps, batch_size=args.batch_size, n_epochs=4, gamma=0.99, gae_lambda=0.95,
        ent_coef=0.01, learning_rate=3e-4, seed=seed, device="cpu",
    )
    if name == "PPO":
        return PPO("MultiInputPolicy", venv, policy_kwargs=dict(net_arch=[64, 64]), **common)
    return RecurrentPPO(
        "MultiInputLstmPolicy", venv, policy_kwargs=dict(net_arch=[64], lstm_hidden_size=64), **common
    )


def evaluate(model: BaseAlgorithm, venv: VecEnv, episodes: int) -> tuple[float, float]:
    """Success rate and mean goals reached of the stochastic policy.

    sb3-hir's evaluator (SB3's ``evaluate_policy`` underneath) carries the LSTM state per sub-env and takes the
    same number of episodes from every sub-env, so short (successful) episodes are not over-counted.
    """
    result = evaluate_instruction_policy(model, venv, n_eval_episodes=episodes, deterministic=False)
    return result.success_rate, result.goals_reached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=150_000, help="training steps per agent and seed")
    arguments.add_seeds(parser, [0, 1])
    add_maze(parser, maze_dim=9)
    parser.add_argument("--num-goals", type=int, default=2)
    add_maze(parser, time_limit=80)
    parser.add_argument("--randomized-actions", action="store_true", help="permute the moves every episode")
    arguments.add_n_envs(parser, 8)
    parser.add_argument("--n-steps", type=int, default=128)
    arguments.add_learner(parser, helps={"batch_size": "minibatch size; sb3-contrib's LSTM loops over time steps per "
                                                        "minibatch, so large is fast"}, batch_size=1024)
    arguments.add_eval_episodes(parser, 64)
    arguments.add_threads(parser)
    args = parser.parse_args()
    th.set_num_threads(args.threads)

    agents = ("PPO", "RecurrentPPO")
    results: dict[str, dict[str, list[float]]] = {a: {"success": [], "goals": [], "time": []} for a in agents}
    for seed in args.seeds:
        for name in agents:
            venv = make_venv(args, args.n_envs, seed)
            model = build(name, venv, args, seed)
            start = time.perf_counter()
            model.learn(total_timesteps=args.timesteps)
            elapsed = time.perf_counter() - start
            eval_venv = make_venv(args, args.n_envs, 10_000 + seed)
            success, goals = evaluate(model, eval_venv, args.eval_episodes)
            results[name]["success"].append(success)
            results[name]["goals"].append(goals)
            results[name]["time"].append(elapsed)
            print(f"seed {seed} {name:<12} success {success:.3f} goals {goals:.2f} train {elapsed:.0f}s", flush=True)

    print()
    print(f"MazeRunner maze_dim={args.maze_dim} k={args.num_goals} time_limit={args.time_limit} "
          f"randomized_actions={args.randomized_actions}; {args.timesteps} steps x {len(args.seeds)} seeds, "
          f"{args.n_envs} envs, {args.eval_episodes} stochastic eval episodes per seed; 'achieved' hidden by "
          "VecHideKeys")
    rows = []
    for name in agents:
        r = {key: np.asarray(value) for key, value in results[name].items()}
        rows.append([name, mean_std(r["success"], 3), mean_std(r["goals"], 2), mean_std(r["time"], 0)])
    print(markdown_table(["agent", "success rate", "goals reached", "train s"], rows))
    ratio = np.mean(results["RecurrentPPO"]["goals"]) / max(np.mean(results["PPO"]["goals"]), 1e-9)
    print(f"goals reached, RecurrentPPO / PPO: {ratio:.2f}x (> 1: memory pays off at this budget)")


if __name__ == "__main__":
    main()
