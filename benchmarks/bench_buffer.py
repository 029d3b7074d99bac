"""Sampling, adding and memory of HindsightInstructionReplayBuffer against SB3's DictReplayBuffer and HerReplayBuffer.

All three buffers hold the same MazeRunner-shaped data in one process: synthetic 250-step episodes (a random walk
on an 11x11 grid, k=3 goals, observation keys as MazeRunner: "obs" float32 (7,), "goals" int32 (3, 2),
"achieved" int32 (1, 2), Discrete(5) actions). SB3's HerReplayBuffer handles one goal, so it gets the k=1
equivalent ("observation", "achieved_goal", "desired_goal" = the first goal) and a tiny GoalEnv-like env in a
DummyVecEnv for ``compute_reward``.

* ``sample(256)``: at each size the storage arrays are filled directly (adding 1M transitions one by one would
  take minutes); our buffer then relabels every stored episode through the method ``add()`` calls at an episode
  end, and HER gets its episode bookkeeping filled the way its ``add()`` fills it. Timed in interleaved rounds,
  median over rounds.
* ``add()``: ``--add-steps`` transitions added one by one into each (large) buffer, relabeling included.
* memory: the sum of ``nbytes`` of every array the buffer holds, per stored transition (HER's per-row info
  dicts counted as pointers only).

Targets: sample <= 1.3x DictReplayBuffer at every size, >= 2x faster than HerReplayBuffer at 100k,
add <= 2x DictReplayBuffer, memory <= 1.5x DictReplayBuffer.

Usage: ``python benchmarks/bench_buffer.py [--sizes 100000 1000000] [--add-steps 20000] [--rounds 7]``
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3 import HerReplayBuffer
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.buffers import HindsightInstructionReplayBuffer

EPISODE = 250
K = 3
GRID = 11
BATCH = 256

HIR_SPACE = spaces.Dict(
    {
        "obs": spaces.Box(0.0, 1.0, (7,), np.float32),
        "goals": spaces.Box(-1, GRID - 1, (K, 2), np.int32),
        "achieved": spaces.Box(0, GRID - 1, (1, 2), np.int32),
    }
)
HER_SPACE = spaces.Dict(
    {
        "observation": spaces.Box(0.0, 1.0, (7,), np.float32),
        "achieved_goal": spaces.Box(0, GRID - 1, (2,), np.int32),
        "desired_goal": spaces.Box(0, GRID - 1, (2,), np.int32),
    }
)
ACTIONS = spaces.Discrete(5)


class GridGoalEnv(gym.Env):
    """The smallest GoalEnv-like env HerReplayBuffer accepts: it only needs ``compute_reward``."""

    observation_space = HER_SPACE
    action_space = ACTIONS

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return HER_SPACE.sample(), {}

    def step(self, action):
        return HER_SPACE.sample(), 0.0, False, False, {}

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        return np.all(achieved_goal == desired_goal, axis=-1).astype(np.float32)


def make_data(n_episodes: int, seed: int) -> dict[str, Any]:
    """MazeRunner-shaped episodes: observations (E, T+1, ...), with goals masked as the env masks them."""
    from sb3_hir.relabel import HindsightInstructionRelabeler

    rng = np.random.default_rng(seed)
    moves = np.array([[0, -1], [-1, 0], [0, 1], [1, 0], [0, 0]], dtype=np.int32)
    start = rng.integers(1, GRID - 1, size=(n_episodes, 1, 2), dtype=np.int32)
    steps = moves[rng.integers(0, 5, size=(n_episodes, EPISODE))]
    achieved = np.clip(start + np.concatenate([np.zeros_like(start), np.cumsum(steps, axis=1)], axis=1), 0, GRID - 1)
    instruction = rng.integers(0, GRID, size=(n_episodes, K, 2), dtype=np.int32)
    relabeler = HindsightInstructionRelabeler(K)
    counts = np.stack([relabeler.reach_counts(relabeler.reach_steps(a, g), EPISODE)
                       for a, g in zip(achieved, instruction, strict=True)])  # (E, T+1)
    masked = np.arange(K)[None, None, :, None] < counts[:, :, None, None]
    goals = np.where(masked, -1, instruction[:, None]).astype(np.int32)
    rewards = np.diff(counts, axis=1).astype(np.float32)
    return {
        "obs": rng.random((n_episodes, EPISODE + 1, 7), dtype=np.float32),
        "goals": goals,
        "achieved": achieved[:, :, None, :].astype(np.int32),
        "actions": rng.integers(0, 5, size=(n_episodes, EPISODE, 1)),
        "rewards": rewards,
    }


def her_view(data: dict[str, Any]) -> dict[str, np.ndarray]:
    return {
        "observation": data["obs"],
        "achieved_goal": data["achieved"][:, :, 0],
        "desired_goal": data["goals"][:, :, 0],  # the active-first goal: HER's single goal
    }


def flat_transitions(obs: dict[str, np.ndarray], n: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(obs, next_obs) of the first n transitions, flattened over episodes."""
    now = {key: value[:, :-1].reshape(-1, *value.shape[2:])[:n] for key, value in obs.items()}
    nxt = {key: value[:, 1:].reshape(-1, *value.shape[2:])[:n] for key, value in obs.items()}
    return now, nxt


def fill(buffer: DictReplayBuffer, obs: dict[str, np.ndarray], data: dict[str, Any], n: int) -> None:
    """Write n transitions straight into the storage arrays (env 0), as n calls of add() would."""
    now, nxt = flat_transitions(obs, n)
    for key in buffer.observations:
        buffer.observations[key][:n, 0] = now[key]
        buffer.next_observations[key][:n, 0] = nxt[key]
    buffer.actions[:n, 0] = data["actions"].reshape(-1, 1)[:n]
    buffer.rewards[:n, 0] = data["rewards"].reshape(-1)[:n]
    ends = np.zeros(n, np.float32)
    ends[EPISODE - 1 :: EPISODE] = 1.0
    buffer.dones[:n, 0] = ends
    buffer.timeouts[:n, 0] = ends  # every synthetic episode ends on its time limit
    buffer.pos = n % buffer.buffer_size
    buffer.full = n >= buffer.buffer_size


def fill_hir(buffer: HindsightInstructionReplayBuffer, data: dict[str, Any], n: int) -> float:
    """Fill, then relabel every episode through add()'s episode-end path; returns seconds per episode."""
    fill(buffer, {key: data[key] for key in ("obs", "goals", "achieved")}, data, n)
    start = time.perf_counter()
    for first in range(0, n, EPISODE):
        buffer._relabel_stored_episode(0, first, EPISODE)
    elapsed = time.perf_counter() - start
    buffer._num_adds = n
    buffer._episode_start = [n]
    return elapsed / (n // EPISODE)


def fill_her(buffer: HerReplayBuffer, data: dict[str, Any], n: int) -> None:
    fill(buffer, her_view(data), data, n)
    rows = np.arange(n)
    buffer.ep_start[:n, 0] = rows - rows % EPISODE
    buffer.ep_length[:n, 0] = EPISODE
    buffer._current_ep_start[0] = n % buffer.buffer_size


def array_bytes(buffer: Any) -> int:
    """Sum of nbytes over every numpy array the buffer holds (dicts of arrays included)."""
    total = 0
    for value in vars(buffer).values():
        if isinstance(value, np.ndarray):
            total += value.nbytes
        elif isinstance(value, dict):
            total += sum(v.nbytes for v in value.values() if isinstance(v, np.ndarray))
    return total


def median_rounds(fns: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Run each timing function once per round, interleaved, and keep the median per name."""
    results: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            results[name].append(fn())
    return {name: float(np.median(values)) for name, values in results.items()}


def time_sample(buffer: DictReplayBuffer, calls: int) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            buffer.sample(BATCH)
        return (time.perf_counter() - start) / calls

    return run


def time_add(buffer: DictReplayBuffer, obs: dict[str, np.ndarray], data: dict[str, Any], steps: int,
             ) -> Callable[[], float]:
    """Each call adds the next ``steps`` transitions (whole episodes, so relabeling is included)."""
    now, nxt = flat_transitions(obs, len(data["rewards"]) * EPISODE)
    actions = data["actions"].reshape(-1, 1)
    rewards = data["rewards"].reshape(-1)
    cursor = [0]

    def run() -> float:
        first = cursor[0]
        items = []
        for t in range(first, first + steps):
            end = (t + 1) % EPISODE == 0
            items.append((
                {key: value[t : t + 1] for key, value in now.items()},
                {key: value[t : t + 1] for key, value in nxt.items()},
                actions[t : t + 1],
                rewards[t : t + 1],
                np.array([end]),
                [{"TimeLimit.truncated": end}],
            ))
        cursor[0] = (first + steps) % len(rewards)
        add = buffer.add
        start = time.perf_counter()
        for item in items:
            add(*item)
        return (time.perf_counter() - start) / steps

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--add-steps", type=int, default=20_000, help="transitions added per buffer and size")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200, help="sample() calls per round")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if any(size < EPISODE for size in args.sizes):
        parser.error(f"--sizes must be >= {EPISODE}")
    th.set_num_threads(1)
    add_steps = max(EPISODE, args.add_steps // EPISODE * EPISODE)
    add_rounds = 5
    print(f"sample({BATCH}) / add() / bytes per transition; episodes of {EPISODE} steps, k={K}; "
          f"median of {args.rounds} interleaved rounds; torch threads=1")
    header = (f"{'size':>9} {'buffer':<10} {'sample us':>10} {'vs Dict':>8} {'vs HER':>8} "
              f"{'add us':>8} {'vs Dict':>8} {'B/trans':>8} {'vs Dict':>8}")
    verdicts: list[str] = []
    for size in args.sizes:
        n = size // EPISODE * EPISODE
        data = make_data(max(n, add_steps * add_rounds) // EPISODE, args.seed)
        hir_obs = {key: data[key] for key in ("obs", "goals", "achieved")}
        her_env = DummyVecEnv([GridGoalEnv])
        buffers: dict[str, DictReplayBuffer] = {
            "Dict": DictReplayBuffer(n, HIR_SPACE, ACTIONS, device="cpu"),
            "HIR": HindsightInstructionReplayBuffer(n, HIR_SPACE, ACTIONS, device="cpu", seed=args.seed),
            "HER": HerReplayBuffer(n, HER_SPACE, ACTIONS, env=her_env, device="cpu"),
        }
        observations = {"Dict": hir_obs, "HIR": hir_obs, "HER": her_view(data)}
        fill(buffers["Dict"], hir_obs, data, n)
        relabel_s = fill_hir(buffers["HIR"], data, n)
        fill_her(buffers["HER"], data, n)
        relabeled = float((buffers["HIR"].relabel_counts[..., 0] >= 0).mean())
        np.random.seed(args.seed)
        for buffer in buffers.values():  # warm-up
            for _ in range(20):
                buffer.sample(BATCH)
        sample = median_rounds({name: time_sample(b, args.calls) for name, b in buffers.items()}, args.rounds)
        memory = {name: array_bytes(b) / (b.buffer_size * b.n_envs) for name, b in buffers.items()}
        # add(): fresh buffers of the same size, so add() writes where the filled data would not interfere.
        del buffers
        gc.collect()
        add_buffers: dict[str, DictReplayBuffer] = {
            "Dict": DictReplayBuffer(n, HIR_SPACE, ACTIONS, device="cpu"),
            "HIR": HindsightInstructionReplayBuffer(n, HIR_SPACE, ACTIONS, device="cpu", seed=args.seed),
            "HER": HerReplayBuffer(n, HER_SPACE, ACTIONS, env=her_env, device="cpu"),
        }
        per_round = add_steps // add_rounds // EPISODE * EPISODE or EPISODE
        add = median_rounds(
            {name: time_add(b, observations[name], data, per_round) for name, b in add_buffers.items()}, add_rounds
        )
        del add_buffers
        gc.collect()

        print()
        print(f"{n} stored transitions ({n // EPISODE} episodes; {relabeled:.0%} of HIR rows relabeled, "
              f"relabeling {relabel_s * 1e6:.0f} us per episode at its end)")
        print(header)
        for name in ("HIR", "Dict", "HER"):
            print(f"{n:>9} {name:<10} {sample[name] * 1e6:>10.1f} {sample[name] / sample['Dict']:>7.2f}x "
                  f"{sample[name] / sample['HER']:>7.2f}x {add[name] * 1e6:>8.2f} {add[name] / add['Dict']:>7.2f}x "
                  f"{memory[name]:>8.1f} {memory[name] / memory['Dict']:>7.2f}x")
        checks = [
            (f"sample <= 1.3x Dict at {n}", sample["HIR"] / sample["Dict"], sample["HIR"] <= 1.3 * sample["Dict"]),
            (f"add <= 2x Dict at {n}", add["HIR"] / add["Dict"], add["HIR"] <= 2.0 * add["Dict"]),
            (f"memory <= 1.5x Dict at {n}", memory["HIR"] / memory["Dict"], memory["HIR"] <= 1.5 * memory["Dict"]),
        ]
        if size == 100_000:
            checks.insert(1, (f"sample >= 2x faster than HER at {n}", sample["HER"] / sample["HIR"],
                              sample["HER"] >= 2.0 * sample["HIR"]))
        for label, ratio, ok in checks:
            verdicts.append(f"{'PASS' if ok else 'MISS'}  {label}: {ratio:.2f}x")
    print()
    print("targets:")
    for line in verdicts:
        print("  " + line)


if __name__ == "__main__":
    main()
