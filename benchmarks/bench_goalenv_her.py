"""Single-goal GoalEnv (k = 1): SAC with HindsightInstructionReplayBuffer against SAC with SB3's HerReplayBuffer.

Same GoalEnv, same budget, same seeds, same SAC settings and network sizes; only the buffer (and the observation
layout each buffer needs) differs:

* HIR: sb3-hir-robotics' ``goalenv`` adapter (the env's own desired goal as a one-goal instruction, its own success
  test), :class:`HindsightInstructionReplayBuffer` with strategy ``"all"`` (with one goal, ``"some"`` leaves half
  of the failed episodes unrelabeled; ``"all"`` relabels each, as HER relabels every episode) and
  ``relabel_ratio=0.8`` (HER's ``n_sampled_goal=4``), and the ``distance-threshold`` goal spec; the policy sees
  ``"obs"`` and ``"goals"``.
* HER: the raw GoalEnv, ``HerReplayBuffer(goal_selection_strategy="future", n_sampled_goal=4)``; the policy sees
  ``observation``, ``achieved_goal`` and ``desired_goal`` (SB3's usual HER setup).

Default env: ``PlanarReach-v0``, a cheap GoalEnv defined here (a point moved by velocity commands in the unit square,
success within 0.1 of the goal, sparse 0/1 reward, episode ends on success), so that both agents learn within the
default budget; ``--env-id PointMaze_UMaze-v3`` runs the PointMaze U-maze instead (the raw env is then made with
``continuing_task=False``, so that both sides end the episode at the goal). Evaluation: ``--eval-episodes``
episodes per seed with the deterministic policy, success = the env's own test held at some step.

Prints mean +- std over seeds of the success rate. Target: HIR not below HER by more than the spread.

Budget matters: the HIR buffer relabels once per finished episode, so a relabeled one-goal episode holds one
rewarded transition, where HER draws a goal per sampled transition. HIR therefore starts later (at 4000 steps HER
leads) and then overtakes (at the default 8000 steps); run ``--timesteps 4000`` to see the early phase.

Usage: ``python benchmarks/bench_goalenv_her.py [--timesteps 8000] [--seeds 0 1 2] [--env-id PlanarReach-v0]
[--max-episode-steps 50] [--eval-episodes 50]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from gymnasium_robotics.core import GoalEnv
from stable_baselines3 import SAC, HerReplayBuffer
from stable_baselines3.common.env_util import make_vec_env

from sb3_hir import plugins
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.extractors import KeySelectExtractor

PLANAR_ID = "PlanarReach-v0"


class PlanarReachEnv(GoalEnv):
    """A point in ``[-1, 1]^2`` moved by ``0.1 * action``; reach the goal within ``distance_threshold``.

    gymnasium-robotics' GoalEnv API with a sparse 0/1 reward (as PointMaze's) and termination on success.
    """

    metadata = {"render_modes": []}
    distance_threshold = 0.1

    def __init__(self) -> None:
        box = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return (distance <= self.distance_threshold).astype(np.float64)

    def compute_terminated(self, achieved_goal: Any, desired_goal: Any, info: Any) -> bool:
        return bool(self.compute_reward(achieved_goal, desired_goal, info))

    def compute_truncated(self, achieved_goal: Any, desired_goal: Any, info: Any) -> bool:
        return False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1.0, 1.0, size=2)
        self.goal = self.pos
        while np.linalg.norm(self.goal - self.pos) <= 2 * self.distance_threshold:
            self.goal = self.np_random.uniform(-1.0, 1.0, size=2)
        return self._obs(), {"is_success": False}

    def step(self, action: Any):
        self.pos = np.clip(self.pos + 0.1 * np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0), -1.0, 1.0)
        obs = self._obs()
        reward = float(self.compute_reward(obs["achieved_goal"], self.goal, {}))
        return obs, reward, reward > 0, False, {"is_success": reward > 0}


if PLANAR_ID not in gym.registry:
    gym.register(PLANAR_ID, entry_point=PlanarReachEnv)


def raw_env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(max_episode_steps=args.max_episode_steps)
    if args.env_id.startswith(("PointMaze", "AntMaze")):
        kwargs["continuing_task"] = False
    return kwargs


def sac(venv: Any, args: argparse.Namespace, seed: int, **kwargs: Any) -> SAC:
    policy_kwargs = dict(net_arch=[args.hidden, args.hidden], **kwargs.pop("policy_kwargs", {}))
    return SAC(
        "MultiInputPolicy", venv, learning_rate=args.learning_rate, buffer_size=max(args.timesteps, 1000),
        learning_starts=args.learning_starts, batch_size=args.batch_size, tau=0.05, gamma=0.95, train_freq=1,
        gradient_steps=args.gradient_steps, policy_kwargs=policy_kwargs, seed=seed, device="cpu", **kwargs,
    )


def train(agent: str, args: argparse.Namespace, seed: int) -> tuple[SAC, float]:
    if agent == "HIR":
        venv = make_vec_env(lambda: plugins.create("env", "goalenv", env_id=args.env_id, **raw_env_kwargs(args)),
                            n_envs=args.n_envs, seed=seed)
        spec = plugins.create("goal_spec", "distance-threshold", env=venv.envs[0])
        model = sac(
            venv, args, seed,
            replay_buffer_class=HindsightInstructionReplayBuffer,
            replay_buffer_kwargs=dict(goal_spec=spec, strategy=args.strategy, relabel_ratio=args.relabel_ratio,
                                      seed=seed),
            policy_kwargs=dict(features_extractor_class=KeySelectExtractor,
                               features_extractor_kwargs=dict(keys=["obs", "goals"])),
        )
    else:
        venv = make_vec_env(args.env_id, n_envs=args.n_envs, seed=seed, env_kwargs=raw_env_kwargs(args))
        model = sac(
            venv, args, seed,
            replay_buffer_class=HerReplayBuffer,
            replay_buffer_kwargs=dict(goal_selection_strategy="future", n_sampled_goal=4),
        )
    start = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    return model, time.perf_counter() - start


def evaluate(agent: str, model: SAC, args: argparse.Namespace, seed: int) -> float:
    """Fraction of episodes in which the env's own success test held at some step (same start states)."""
    if agent == "HIR":
        env = plugins.create("env", "goalenv", env_id=args.env_id, **raw_env_kwargs(args))
    else:
        env = gym.make(args.env_id, **raw_env_kwargs(args))
    successes = []
    for episode in range(args.eval_episodes):
        obs, _ = env.reset(seed=100_000 + 1000 * seed + episode)
        done = reached = False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            own = info.get("env_is_success", info.get("is_success", info.get("success", False)))
            reached = reached or bool(own) or (agent == "HIR" and bool(info["is_success"]))
            done = terminated or truncated
        successes.append(reached)
    env.close()
    return float(np.mean(successes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-id", default=PLANAR_ID, help="any GoalEnv id, e.g. PointMaze_UMaze-v3")
    parser.add_argument("--timesteps", type=int, default=8000, help="env steps per agent and seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-episode-steps", type=int, default=50)
    parser.add_argument("--n-envs", type=int, default=1)
    parser.add_argument("--gradient-steps", type=int, default=1, help="gradient steps per vector step")
    parser.add_argument("--learning-starts", type=int, default=500)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--eval-episodes", type=int, default=50)
    parser.add_argument("--strategy", choices=["all", "some", "none"], default="all",
                        help="HIR strategy; with one goal 'some' relabels only half of the failed episodes")
    parser.add_argument("--relabel-ratio", type=float, default=0.8, help="HIR relabel_ratio (HER: n_sampled_goal=4)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 avoids oversubscribing shared cores)")
    args = parser.parse_args()
    th.set_num_threads(args.threads)

    agents = {"SAC + HIR buffer": "HIR", "SAC + HerReplayBuffer": "HER"}
    results: dict[str, dict[str, list[float]]] = {a: {"success": [], "time": []} for a in agents}
    for seed in args.seeds:
        for name, agent in agents.items():
            model, elapsed = train(agent, args, seed)
            success = evaluate(agent, model, args, seed)
            results[name]["success"].append(success)
            results[name]["time"].append(elapsed)
            print(f"seed {seed} {name:<22} success {success:.3f} train {elapsed:.0f}s", flush=True)

    print()
    print(f"{args.env_id} (k=1) max_episode_steps={args.max_episode_steps}; {args.timesteps} steps x "
          f"{len(args.seeds)} seeds, {args.eval_episodes} deterministic eval episodes per seed")
    print(f"{'agent':<24}{'success rate':>18}{'train s':>14}")
    for name in agents:
        r = {key: np.asarray(value) for key, value in results[name].items()}
        print(f"{name:<24}{r['success'].mean():>10.3f} +- {r['success'].std():.3f}"
              f"{r['time'].mean():>9.0f} +- {r['time'].std():.0f}")
    ours, hers = (np.asarray(results[name]["success"]) for name in agents)
    spread = max(ours.std(), hers.std())
    verdict = "met" if ours.mean() >= hers.mean() - spread else "MISSED"
    print(f"HIR - HER success: {ours.mean() - hers.mean():+.3f} (spread {spread:.3f}); target 'not worse than HER "
          f"beyond the spread': {verdict}")


if __name__ == "__main__":
    main()
