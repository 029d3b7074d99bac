"""Wall time to a success level on FetchReach: SB3 or SBX (SB3 in JAX), each with SB3's ``HerReplayBuffer`` or
``sb3_hir.HerReplayBuffer``, only the class and the import swapped.

Every run uses rl-zoo3's tuned FetchReach SAC config (``hyperparams/sac.yml``: ``VecNormalize``, ``ent_coef="auto"``,
``batch_size=256``, ``gamma=0.95``, ``learning_rate=1e-3``, ``learning_starts=1000``, ``net_arch=[64, 64]``,
``future``, ``n_sampled_goal=4``), on one CPU thread. Every ``--eval-every`` env steps the training pauses for
``--eval-episodes`` deterministic episodes scored by FetchReach's ``is_success`` at the last step; the clock stops
during them, so the time is training time: env steps, buffer, updates, and SBX's JIT compilation, which is part of
what SBX costs. The table gives, per (framework, buffer), the training seconds and env steps until the first
evaluation at or above ``--level``, mean ± std over seeds, and the ratio to SB3 + HER.

Runs are Ray Tune trials with ``--ray`` (one CPU each, two at a time on 2 cores).

Usage: ``python benchmarks/bench_sbx_reach.py [--seeds 0 1 2] [--level 0.9] [--ray]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_hir.experiment import BudgetCallback, arguments, episode_evaluator, markdown_table, mean_std
from sb3_hir.experiment.runner import run_all

SIDES = [("sb3", "HER"), ("sb3", "ours"), ("sbx", "HER"), ("sbx", "ours")]


def fetch_id() -> str:
    """The newest FetchReach version gymnasium-robotics registers."""
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    return max(e for e in gym.registry if e.startswith("FetchReach-v"))


def run(config: dict[str, Any]) -> dict[str, Any]:
    args = argparse.Namespace(**config["options"])
    seed, framework, buffer = config["seed"], config["framework"], config["buffer"]
    th.manual_seed(seed)
    th.set_num_threads(1)
    if buffer == "HER":
        from stable_baselines3 import HerReplayBuffer
    else:
        from sb3_hir import HerReplayBuffer
    algo: Any  # SBX's SAC or SB3's, built alike
    if framework == "sbx":
        import jax  # noqa: F401  (imported before the clock starts, as SB3's torch is)
        import sbx

        algo = sbx.SAC
    else:
        import stable_baselines3

        algo = stable_baselines3.SAC
    env_id = fetch_id()
    venv = VecNormalize(make_vec_env(env_id, n_envs=1, seed=seed), gamma=0.95)
    model = algo("MultiInputPolicy", venv, replay_buffer_class=HerReplayBuffer,
                 replay_buffer_kwargs=dict(goal_selection_strategy="future", n_sampled_goal=4),
                 buffer_size=1_000_000, ent_coef="auto", batch_size=256, gamma=0.95, learning_rate=1e-3,
                 learning_starts=1000, policy_kwargs=dict(net_arch=[64, 64]), seed=seed)
    # Scored every --eval-every steps with the training clock stopped; training stops at the level.
    callback = BudgetCallback(range(args.eval_every, args.max_steps + 1, args.eval_every),
                              episode_evaluator(lambda: gym.make(env_id), args.eval_episodes, seed, normalize=venv),
                              stop=lambda metrics: metrics["success_rate"] >= args.level)
    model.learn(total_timesteps=args.max_steps, callback=callback)
    curve = [(steps, round(callback.training_seconds[steps], 2), metrics["success_rate"])
             for steps, metrics in callback.results.items()]
    reached = next(((steps, seconds) for steps, seconds, success in curve if success >= args.level), None)
    return dict(curve=curve, reached=reached)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_seeds(parser, [0, 1, 2])
    parser.add_argument("--level", type=float, default=0.9, help="success level to reach")
    parser.add_argument("--eval-every", type=int, default=1000, help="env steps between evaluations")
    parser.add_argument("--max-steps", type=int, default=20_000, help="env steps at most (rl-zoo3's budget)")
    arguments.add_eval_episodes(parser, 20)
    arguments.add_ray(parser)
    args = parser.parse_args()
    options = {k: v for k, v in vars(args).items() if k not in arguments.RAY_OPTIONS}
    configs = [dict(framework=f, buffer=b, seed=s, options=options) for f, b in SIDES for s in args.seeds]
    began = time.perf_counter()
    outs = list(run_all(run, configs, use_ray=args.ray, cpus_per_trial=args.cpus_per_trial, address=args.ray_address,
                        name="bench_sbx_reach"))
    for config, out in zip(configs, outs, strict=True):
        curve = " ".join(f"{steps}:{success:.2f}@{seconds:.0f}s" for steps, seconds, success in out["curve"])
        print(f"{config['framework']}+{config['buffer']} seed {config['seed']}: {curve}")
    print(f"\n{fetch_id()}, rl-zoo3 SAC config, training seconds to success >= {args.level} "
          f"({args.eval_episodes} deterministic episodes every {args.eval_every} steps); {len(args.seeds)} seeds")
    rows = []
    base = None
    for framework, buffer in SIDES:
        reached = [out["reached"] for c, out in zip(configs, outs, strict=True)
                   if (c["framework"], c["buffer"]) == (framework, buffer) and out["reached"] is not None]
        if not reached:
            rows.append([f"{framework} + {buffer}", f"0 of {len(args.seeds)}", "-", "-", "-"])
            continue
        steps, seconds = np.array([r[0] for r in reached]), np.array([r[1] for r in reached])
        base = seconds.mean() if base is None and (framework, buffer) == ("sb3", "HER") else base
        ratio = f"{seconds.mean() / base:.2f}x" if base else "-"
        rows.append([f"{framework} + {buffer}", f"{len(reached)} of {len(args.seeds)}", mean_std(seconds, 0),
                     mean_std(steps, 0), ratio])
    print(markdown_table(["framework + buffer", "seeds reaching it", "training seconds", "env steps",
                          "seconds / SB3 + HER"], rows))
    print(f"wall time {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
