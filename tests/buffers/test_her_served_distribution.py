"""The drop-in serves what SB3's ``HerReplayBuffer`` serves: the same distribution of batches on the same data.

The DQN grid (``benchmarks/bench_her_dqn_grid.py``) compares learning at 5 seeds a cell, where a cell's spread is
larger than the 0.03 it must decide. This decides the question under it: both buffers are fed the same transitions
of a real ``BitFlippingEnv`` (a random policy on 4 bits over 16 steps, so states recur within an episode, where a
draw rule other than HER's shows), and serve 100k rows each. What learning reads of a row is compared as one joint
histogram: the bits between the next achieved goal and the desired goal (0: rewarded), the same before the step, and
``done``. A two-sample chi-square test of homogeneity must not tell them apart (p > 0.001), and must tell apart a
draw that is not HER's (``first-reach``, which draws only goals first reached after the transition).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3 import HerReplayBuffer as SB3HerReplayBuffer
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import HerReplayBuffer

# The drop-in's semantics do not depend on the profile: numpy, torch and SB3 are the same releases in both.
pytestmark = pytest.mark.once("current")

N_BITS, MAX_STEPS, N_ENVS = 4, 16, 2
BATCHES, BATCH = 400, 256
#: below this p-value the two buffers' batches are told apart.
ALPHA = 1e-3


def bitflip(n_envs: int = N_ENVS) -> DummyVecEnv:
    return DummyVecEnv([lambda: BitFlippingEnv(n_bits=N_BITS, continuous=False, max_steps=MAX_STEPS)] * n_envs)


def fill(buffers: list[Any], env: DummyVecEnv, steps: int, seed: int) -> None:
    """The same transitions into every buffer, stored as SB3's off-policy algorithms store them."""
    env.seed(seed)
    rng = np.random.default_rng(seed)
    obs = env.reset()
    for _ in range(steps):
        action = rng.integers(0, N_BITS, size=env.num_envs)
        next_obs, reward, done, infos = env.step(action)
        stored_next = {key: value.copy() for key, value in next_obs.items()}
        for i in np.flatnonzero(done):
            for key in stored_next:
                stored_next[key][i] = infos[i]["terminal_observation"][key]
        for buffer in buffers:
            buffer.add(obs, stored_next, action.reshape(-1, 1), reward, done, infos)
        obs = next_obs


def served(buffer: Any, seed: int) -> np.ndarray:
    """Each served row as one cell of the joint histogram: (bits to the goal after, before, done)."""
    np.random.seed(seed)
    th.manual_seed(seed)
    cells = []
    for _ in range(BATCHES):
        samples = buffer.sample(BATCH)
        goal = samples.observations["desired_goal"].numpy()
        after = np.abs(samples.next_observations["achieved_goal"].numpy() - goal).sum(axis=1).astype(np.int64)
        before = np.abs(samples.observations["achieved_goal"].numpy() - goal).sum(axis=1).astype(np.int64)
        done = samples.dones.numpy().reshape(-1).astype(np.int64)
        cells.append((after * (N_BITS + 1) + before) * 2 + done)
    return np.concatenate(cells)


def homogeneity_p(a: np.ndarray, b: np.ndarray) -> float:
    """p-value of the chi-square test that two samples of cells come from one distribution (cells seen at all)."""
    table = np.stack([np.bincount(a, minlength=2 * (N_BITS + 1) ** 2), np.bincount(b, minlength=2 * (N_BITS + 1) ** 2)])
    table = table[:, table.sum(axis=0) > 0].astype(np.float64)
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    statistic = ((table - expected) ** 2 / expected).sum()
    dof = table.shape[1] - 1
    # The chi-square survival function: the regularized upper incomplete gamma Q(dof / 2, statistic / 2).
    return float(th.special.gammaincc(th.tensor(dof / 2, dtype=th.float64), th.tensor(statistic / 2, dtype=th.float64)))


@pytest.mark.parametrize("strategy", ["future", "episode", "final"])
def test_the_drop_in_serves_hers_batches(strategy: str) -> None:
    env = bitflip()
    kwargs: dict[str, Any] = dict(n_envs=N_ENVS, n_sampled_goal=4, goal_selection_strategy=strategy)
    args = (20_000, env.observation_space, env.action_space)
    theirs = SB3HerReplayBuffer(*args, env=env, **kwargs)
    ours = HerReplayBuffer(*args, env=env, seed=1, **kwargs)
    other = HerReplayBuffer(*args, env=env, seed=1, draw="first-reach", **kwargs)
    fill([theirs, ours, other], env, 8_000, seed=0)
    reference = served(theirs, seed=2)
    p_ours = homogeneity_p(reference, served(ours, seed=2))
    assert p_ours > ALPHA, f"the drop-in's batches differ from SB3's HER's ({strategy}): p = {p_ours:.2e}"
    if strategy == "future":  # the control: a draw rule that is not HER's is told apart on the same data
        p_other = homogeneity_p(reference, served(other, seed=2))
        assert p_other < ALPHA, f"the test cannot tell first-reach draws from HER's: p = {p_other:.2e}"
