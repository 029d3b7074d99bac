"""The drop-in's batches against SB3's ``HerReplayBuffer``'s on the same data: one distribution, or two?

The DQN grid (``bench_her_dqn_grid.py``) compares learning at 5 seeds a cell, whose spread is larger than the 0.03 it
must decide. This decides the question under it. For each seed, SB3's ``HerReplayBuffer``, the drop-in and a control
(the drop-in with the ``first-reach`` draw, which draws only goals first reached after the transition: not HER's
rule) are fed the same transitions of a real ``BitFlippingEnv`` under a uniform random policy (with few bits and long
episodes, states recur within an episode, where a draw rule other than HER's shows), and each serves ``--batches``
batches of 256. What learning reads of a served row is one cell of a joint histogram: the bits between the next
achieved goal and the desired goal (0: rewarded), the same before the step, and ``done``. A two-sample chi-square
test of homogeneity gives the p-value that two buffers' rows come from one distribution: uniform over seeds when
they do, near 0 when they do not.

Printed per goal selection strategy and seed: the rewarded share of each buffer and both p-values against HER.

What it cannot see: which stored rows are served, beyond what a row reads. HER samples rows of finished episodes
only; the drop-in's recorded rows are drawn as ``DictReplayBuffer`` draws them, over every stored row, the running
episodes' too. Under a stationary policy those rows read alike, so ``--buffer-size`` (a buffer that wraps, where HER
also drops an overwritten episode's remaining rows) shows the relabeling under overwriting, not that difference.

Usage: ``python benchmarks/bench_her_served_distribution.py [--n-bits 4] [--max-steps 16] [--n-envs 2]
[--steps 8000] [--batches 400] [--seeds 0 1 2] [--strategies future episode final]
[--n-sampled-goal 4] [--continuous] [--buffer-size N]``
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3 import HerReplayBuffer as SB3HerReplayBuffer
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import HerReplayBuffer
from sb3_hir.experiment import markdown_table

BATCH = 256


def bitflip(n_bits: int, max_steps: int, n_envs: int, continuous: bool = False) -> DummyVecEnv:
    return DummyVecEnv([lambda: BitFlippingEnv(n_bits=n_bits, continuous=continuous, max_steps=max_steps)] * n_envs)


def buffers(env: DummyVecEnv, strategy: str, seed: int, size: int, n_sampled_goal: int = 4) -> dict[str, Any]:
    """SB3's HER, the drop-in and the control, each with ``n_sampled_goal`` (HER's default 4)."""
    kwargs: dict[str, Any] = dict(n_envs=env.num_envs, n_sampled_goal=n_sampled_goal,
                                  goal_selection_strategy=strategy)
    obs_space, action_space = env.observation_space, env.action_space
    assert isinstance(obs_space, spaces.Dict)
    return {
        "HER": SB3HerReplayBuffer(size, obs_space, action_space, env=env, **kwargs),
        "drop-in": HerReplayBuffer(size, obs_space, action_space, env=env, seed=seed, **kwargs),
        "first-reach": HerReplayBuffer(size, obs_space, action_space, env=env, seed=seed, draw="first-reach",
                                       **kwargs),
    }


def fill(targets: list[Any], env: DummyVecEnv, steps: int, seed: int) -> None:
    """The same transitions into every buffer, stored as SB3's off-policy algorithms store them (the terminal
    observation as the next one at an episode's end)."""
    env.seed(seed)
    rng = np.random.default_rng(seed)
    action_space = env.action_space
    obs = env.reset()
    for _ in range(steps):
        if isinstance(action_space, spaces.Discrete):  # one bit flipped, uniformly
            action = rng.integers(0, int(action_space.n), size=env.num_envs)
        else:  # continuous: each bit flipped where its action is positive
            assert isinstance(action_space, spaces.Box)
            action = rng.uniform(-1.0, 1.0, size=(env.num_envs, *action_space.shape)).astype(action_space.dtype)
        next_obs, reward, done, infos = env.step(action)
        assert isinstance(next_obs, dict)
        stored_next = {key: value.copy() for key, value in next_obs.items()}
        for i in np.flatnonzero(done):
            for key in stored_next:
                stored_next[key][i] = infos[i]["terminal_observation"][key]
        for buffer in targets:
            buffer.add(obs, stored_next, action.reshape(env.num_envs, -1), reward, done, infos)
        obs = next_obs


def served(buffer: Any, batches: int, seed: int) -> np.ndarray:
    """Each served row as one cell of the joint histogram: ``(bits to the goal after, before, done)`` as one integer
    (``np.random`` and torch seeded first: SB3's HER draws from ``np.random``)."""
    np.random.seed(seed)
    th.manual_seed(seed)
    cells = []
    for _ in range(batches):
        samples = buffer.sample(BATCH)
        goal = samples.observations["desired_goal"].numpy()
        n_bits = goal.shape[1]
        after = np.abs(samples.next_observations["achieved_goal"].numpy() - goal).sum(axis=1).astype(np.int64)
        before = np.abs(samples.observations["achieved_goal"].numpy() - goal).sum(axis=1).astype(np.int64)
        done = samples.dones.numpy().reshape(-1).astype(np.int64)
        cells.append((after * (n_bits + 1) + before) * 2 + done)
    return np.concatenate(cells)


def homogeneity_p(a: np.ndarray, b: np.ndarray) -> float:
    """p-value of the chi-square test that two samples of cells come from one distribution (over the cells seen)."""
    width = int(max(a.max(), b.max())) + 1
    table = np.stack([np.bincount(a, minlength=width), np.bincount(b, minlength=width)])
    table = table[:, table.sum(axis=0) > 0].astype(np.float64)
    if table.shape[1] < 2:
        return 1.0  # one cell: nothing to tell apart
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    statistic = float(((table - expected) ** 2 / expected).sum())
    dof = table.shape[1] - 1
    # The chi-square survival function: the regularized upper incomplete gamma Q(dof / 2, statistic / 2).
    return float(th.special.gammaincc(th.tensor(dof / 2, dtype=th.float64), th.tensor(statistic / 2, dtype=th.float64)))


def compare(strategy: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """One seed: the three buffers filled alike, their rows served, the rewarded shares and both p-values."""
    env = bitflip(args.n_bits, args.max_steps, args.n_envs, getattr(args, "continuous", False))
    # Without --buffer-size, twice what is stored: no row is overwritten.
    size = args.buffer_size if getattr(args, "buffer_size", None) else 2 * args.steps * args.n_envs
    built = buffers(env, strategy, seed + 1, size=size, n_sampled_goal=getattr(args, "n_sampled_goal", 4))
    fill(list(built.values()), env, args.steps, seed)
    rows = {name: served(buffer, args.batches, seed + 2) for name, buffer in built.items()}
    rewarded = {name: float(np.mean(cells // (2 * (args.n_bits + 1)) == 0)) for name, cells in rows.items()}
    return {"rewarded": rewarded, "p_drop_in": homogeneity_p(rows["HER"], rows["drop-in"]),
            "p_control": homogeneity_p(rows["HER"], rows["first-reach"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-bits", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=16)
    parser.add_argument("--n-envs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8000, help="env steps stored (per sub-env)")
    parser.add_argument("--batches", type=int, default=400, help="batches of 256 served by each buffer")
    parser.add_argument("--n-sampled-goal", type=int, default=4, help="HER's: relabeled share n / (n + 1)")
    parser.add_argument("--continuous", action="store_true", help="BitFlipping's continuous actions (a Box)")
    parser.add_argument("--buffer-size", type=int, default=None,
                        help="the buffers' buffer_size (SB3's: over all sub-envs); default: no row overwritten")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--strategies", nargs="+", default=["future", "episode", "final"],
                        choices=["future", "episode", "final"])
    args = parser.parse_args()
    for name in ("n_bits", "max_steps", "n_envs", "steps", "batches", "n_sampled_goal"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1; got {getattr(args, name)}")
    if args.buffer_size is not None and args.buffer_size < 2 * args.n_envs:
        parser.error(f"--buffer-size must be >= 2 rows per sub-env ({2 * args.n_envs}); got {args.buffer_size}")
    print(f"BitFlipping {args.n_bits} bits, {args.max_steps} steps, {args.n_envs} envs, "
          f"{'continuous' if args.continuous else 'discrete'} actions, a random policy, {args.steps} steps stored; "
          f"n_sampled_goal={args.n_sampled_goal}; {args.batches} batches of {BATCH} served by each buffer")
    table_rows = []
    for strategy in args.strategies:
        for seed in args.seeds:
            result = compare(strategy, seed, args)
            shares = result["rewarded"]
            table_rows.append([strategy, seed, f"{shares['HER']:.4f}", f"{shares['drop-in']:.4f}",
                               f"{shares['first-reach']:.4f}", f"{result['p_drop_in']:.3g}",
                               f"{result['p_control']:.3g}"])
    print(markdown_table(["strategy", "seed", "rewarded HER", "rewarded drop-in", "rewarded first-reach",
                          "p drop-in vs HER", "p first-reach vs HER"], table_rows, "llrrrrr"))
    print("p: chi-square homogeneity of the served rows (uniform over seeds for one distribution, ~0 for two)")


if __name__ == "__main__":
    main()
