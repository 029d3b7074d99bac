"""``sample(256)`` of sb3_hir.HerReplayBuffer (GoalEnv mode) against SB3's HerReplayBuffer, same data, one process.

Both buffers are filled through their own ``add()`` with the same transitions of a Fetch-shaped GoalEnv
(``observation`` float32 (10,), ``achieved_goal`` / ``desired_goal`` float32 (3,), a random walk, 50-step
episodes, ``--n-envs`` sub-envs), and both get the same env for ``compute_reward`` (vectorized, -1/0 within 0.05,
as Fetch's), called through the VecEnv exactly as each buffer calls it: that cost is counted on both sides.
HER runs at its defaults (``future``, ``n_sampled_goal=4``), ours with the same arguments. Two cases:

* ``continuing``: the env never terminates on success (FetchReach): our draws need no reach search.
* ``terminating``: the env terminates on success (``compute_terminated``), so ours also finds each drawn goal's first
  reach after the transition within the served window and serves the terminations HER does not (more work than
  HER's sample, not less).

Timed in interleaved rounds (``--rounds`` of ``--calls`` calls each), median per call; prints the ratio ours / HER
and the target (<= 0.5x at 1M stored). SB3's plain ``DictReplayBuffer`` on the same data (no relabeling, no reward
call) is the floor: gathering 256 random rows of a 1M-row store, which neither HER buffer can go below.

Usage: ``python benchmarks/bench_her_sample.py [--size 1000000] [--n-envs 8] [--rounds 7] [--calls 100]``
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3 import HerReplayBuffer
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import buffers as hir
from sb3_hir.experiment import arguments, markdown_table

LENGTH = 50
BATCH = 256


class FetchShapedEnv(gym.Env):
    """Only its spaces and its vectorized ``compute_reward`` / ``compute_terminated`` are used."""

    distance_threshold = 0.05

    def __init__(self, terminate: bool = False) -> None:
        goal = spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self.observation_space = spaces.Dict(
            {"observation": spaces.Box(-np.inf, np.inf, (10,), np.float32), "achieved_goal": goal,
             "desired_goal": goal}
        )
        self.action_space = spaces.Box(-1, 1, (4,), np.float32)
        self.terminate = terminate

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(distance > self.distance_threshold).astype(np.float32)

    def compute_terminated(self, achieved_goal: Any, desired_goal: Any, info: Any) -> bool:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return bool(self.terminate and (distance <= self.distance_threshold).all())

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        return self.observation_space.sample(), {}

    def step(self, action: Any):
        return self.observation_space.sample(), 0.0, False, False, {}


def fill(buffers: list[Any], size: int, n_envs: int, seed: int, terminate: bool) -> None:
    """Add the same ``size`` transitions to every buffer through its ``add()``."""
    rng = np.random.default_rng(seed)
    env = FetchShapedEnv(terminate)
    steps = size // n_envs
    pos = rng.uniform(-0.15, 0.15, (n_envs, 3)).astype(np.float32)
    goal = rng.uniform(-0.15, 0.15, (n_envs, 3)).astype(np.float32)
    t = np.zeros(n_envs, dtype=np.int64)
    infos: list[dict[str, Any]] = [{} for _ in range(n_envs)]
    for _ in range(steps):
        obs = {"observation": np.concatenate([pos, np.zeros((n_envs, 7), np.float32)], axis=1),
               "achieved_goal": pos.copy(), "desired_goal": goal.copy()}
        new = (pos + rng.normal(0, 0.02, (n_envs, 3))).astype(np.float32)
        next_obs = {"observation": np.concatenate([new, np.zeros((n_envs, 7), np.float32)], axis=1),
                    "achieved_goal": new.copy(), "desired_goal": goal.copy()}
        reward = env.compute_reward(new, goal, None)
        t += 1
        success = reward == 0
        done = (t >= LENGTH) | (success if terminate else False)
        step_infos = [{"TimeLimit.truncated": bool(t[i] >= LENGTH and not (terminate and success[i]))}
                      for i in range(n_envs)] if done.any() else infos
        action = rng.uniform(-1, 1, (n_envs, 4)).astype(np.float32)
        for buffer in buffers:
            buffer.add(obs, next_obs, action, reward, done, step_infos)
        pos = new
        for i in np.flatnonzero(done):
            pos[i] = rng.uniform(-0.15, 0.15, 3)
            goal[i] = rng.uniform(-0.15, 0.15, 3)
            t[i] = 0


def median_seconds(buffer: Any, rounds: list[float], calls: int) -> None:
    begin = time.perf_counter()
    for _ in range(calls):
        buffer.sample(BATCH)
    rounds.append((time.perf_counter() - begin) / calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    arguments.add_n_envs(parser, 8)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    th.set_num_threads(1)
    print(f"sample({BATCH}) at {args.size} stored, {args.n_envs} envs, {LENGTH}-step episodes; compute_reward through "
          "the VecEnv on both sides; median of interleaved rounds")
    rows = []
    for case in ("continuing", "terminating"):
        terminate = case == "terminating"
        venv = DummyVecEnv([functools.partial(FetchShapedEnv, terminate)])
        space: Any = venv.observation_space  # FetchShapedEnv's Dict space
        action = venv.action_space
        per_env = args.size // args.n_envs
        her = HerReplayBuffer(per_env, space, action, env=venv, n_envs=args.n_envs, device="cpu")
        # Continuous actions keep HER's dones by default; the terminating case asks for the env's terminations.
        ours = hir.HerReplayBuffer(per_env, space, action, env=venv, n_envs=args.n_envs, device="cpu",
                                     seed=args.seed, terminate_on_success=terminate)
        floor = DictReplayBuffer(per_env, space, action, n_envs=args.n_envs, device="cpu")
        assert ours.terminates_on_success == terminate
        np.random.seed(args.seed)
        fill([her, ours, floor], args.size, args.n_envs, args.seed, terminate)
        buffers = {"HER": her, "ours": ours, "floor": floor}
        times: dict[str, list[float]] = {name: [] for name in buffers}
        for _ in range(args.rounds):
            for name, buffer in buffers.items():
                median_seconds(buffer, times[name], args.calls)
        her_ms, ours_ms, floor_ms = (1e3 * float(np.median(times[k])) for k in buffers)
        ratio = ours_ms / her_ms
        rows.append([case, f"{her_ms:.3f}", f"{ours_ms:.3f}", f"{ratio:.2f}x", "PASS" if ratio <= 0.5 else "MISS",
                     f"{floor_ms:.3f}", f"{her_ms / floor_ms:.2f}x", f"{ours_ms / floor_ms:.2f}x"])
        del her, ours, floor, buffers
    print(markdown_table(["case", "SB3 HerReplayBuffer (ms)", "sb3_hir.HerReplayBuffer (ms)", "ours / HER",
                          "target <= 0.5x", "DictReplayBuffer, the floor (ms)", "HER / floor", "ours / floor"],
                         rows, "lrrrlrrr"), flush=True)


if __name__ == "__main__":
    main()
