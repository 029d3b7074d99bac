"""SAC + hindsight instruction relabeling against SAC without relabeling, on k-goal PointMaze instructions.

The env is sb3-hir-robotics' ``pointmaze-instruction`` (gymnasium-robotics PointMaze, an instruction of k distinct
goal cells, the maze's own success test). Both agents are SB3's SAC with :class:`HindsightInstructionReplayBuffer`
and the ``distance-threshold`` goal spec; they differ only in the relabeling strategy: ``"some"`` (HIR) against
``"none"`` (the buffer then serves every episode as recorded, i.e. a plain ``DictReplayBuffer``). The policy sees
``"obs"`` and ``"goals"`` (:class:`KeySelectExtractor`). Same seeds, same steps, same networks.

The default map is a 3x3 open room (``--maze open3``; ``umaze`` = ``PointMaze_UMaze-v3``) so that the default
budget fits in about ten minutes on two shared cores; a sparse k-goal task in the U-maze needs far more steps.

Evaluation: ``--eval-episodes`` fresh instructions per seed, deterministic policy. Prints mean ± std over seeds of
the success rate (all k goals reached in order) and of the goals reached per episode. Target: HIR above "none".

Usage: ``python benchmarks/bench_pointmaze_hir.py [--timesteps 32000] [--seeds 0 1] [--maze open3] [--num-goals 2]
[--max-episode-steps 100] [--n-envs 4] [--gradient-steps 2] [--eval-episodes 30]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any, cast

import numpy as np
import torch as th
from stable_baselines3 import SAC
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import plugins
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.experiment import arguments, episode_evaluator, markdown_table, mean_std
from sb3_hir.experiment.budgets import is_success
from sb3_hir.extractors import KeySelectExtractor

#: A 3x3 open room with walls around it.
OPEN3 = [
    [1, 1, 1, 1, 1],
    [1, 0, 0, 0, 1],
    [1, 0, 0, 0, 1],
    [1, 0, 0, 0, 1],
    [1, 1, 1, 1, 1],
]


def env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(num_goals=args.num_goals, max_episode_steps=args.max_episode_steps)
    if args.maze == "open3":
        kwargs.update(maze_id="PointMaze_UMaze-v3", maze_map=OPEN3)
    else:
        kwargs.update(maze_id="PointMaze_UMaze-v3")
    return kwargs


def make_env(args: argparse.Namespace) -> Any:
    return plugins.create("env", "pointmaze-instruction", **env_kwargs(args))


def train(strategy: str, args: argparse.Namespace, seed: int) -> tuple[SAC, float]:
    venv = make_vec_env(lambda: make_env(args), n_envs=args.n_envs, seed=seed)
    spec = plugins.create("goal_spec", "distance-threshold", env=cast(DummyVecEnv, venv).envs[0])
    model = SAC(
        "MultiInputPolicy",
        venv,
        learning_rate=args.learning_rate,
        buffer_size=max(args.timesteps, 1000),
        learning_starts=args.learning_starts,
        batch_size=args.batch_size,
        tau=0.05,
        gamma=0.95,
        train_freq=1,
        gradient_steps=args.gradient_steps,
        replay_buffer_class=HindsightInstructionReplayBuffer,
        replay_buffer_kwargs=dict(goal_spec=spec, hindsight_goals=strategy, relabel_ratio=0.8, seed=seed),
        policy_kwargs=dict(
            net_arch=[args.hidden, args.hidden],
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
        ),
        seed=seed,
        device="cpu",
    )
    start = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    return model, time.perf_counter() - start


def evaluate(model: SAC, args: argparse.Namespace, seed: int) -> tuple[float, float]:
    """Success rate and goals reached at the episodes' last step, one reset seed per episode."""
    result = episode_evaluator(lambda: make_env(args), args.eval_episodes, seed, seed_base=100_000,
                               metrics={"success_rate": is_success,
                                        "goals_reached": lambda info: info["goals_reached"]})(model)
    return result["success_rate"], result["goals_reached"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=32_000, help="env steps per agent and seed")
    arguments.add_seeds(parser, [0, 1])
    parser.add_argument("--maze", choices=["open3", "umaze"], default="open3")
    parser.add_argument("--num-goals", type=int, default=2)
    parser.add_argument("--max-episode-steps", type=int, default=100)
    arguments.add_n_envs(parser, 4)
    arguments.add_learner(parser, helps={"gradient_steps": "gradient steps per vector step"}, gradient_steps=2,
                           learning_starts=1000, learning_rate=1e-3, batch_size=256)
    parser.add_argument("--hidden", type=int, default=64)
    arguments.add_eval_episodes(parser, 30)
    arguments.add_threads(parser)
    args = parser.parse_args()
    th.set_num_threads(args.threads)

    agents = {"SAC + HIR (some)": "some", "SAC, no relabel": "none"}
    results: dict[str, dict[str, list[float]]] = {a: {"success": [], "goals": [], "time": []} for a in agents}
    for seed in args.seeds:
        for name, strategy in agents.items():
            model, elapsed = train(strategy, args, seed)
            success, goals = evaluate(model, args, seed)
            results[name]["success"].append(success)
            results[name]["goals"].append(goals)
            results[name]["time"].append(elapsed)
            print(f"seed {seed} {name:<18} success {success:.3f} goals {goals:.2f} train {elapsed:.0f}s", flush=True)

    print()
    print(f"PointMaze {args.maze} k={args.num_goals} max_episode_steps={args.max_episode_steps}; "
          f"{args.timesteps} steps "
          f"({args.n_envs} envs, {args.gradient_steps} gradient steps per vector step) x {len(args.seeds)} seeds; "
          f"{args.eval_episodes} deterministic eval episodes per seed")
    rows = []
    for name in agents:
        r = {key: np.asarray(value) for key, value in results[name].items()}
        rows.append([name, mean_std(r["success"], 3), mean_std(r["goals"], 2), mean_std(r["time"], 0)])
    print(markdown_table(["agent", "success rate", "goals reached", "train s"], rows))
    names = list(agents)
    diff = np.mean(results[names[0]]["goals"]) - np.mean(results[names[1]]["goals"])
    print(f"goals reached, HIR - no relabel: {diff:+.2f} per episode (target > 0)")


if __name__ == "__main__":
    main()
