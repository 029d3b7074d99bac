"""Hindsight goals served on BabyAI's go-to levels: how many exist, and how many rows carry one.

Random play on a level of the ``sb3-hir-minigrid`` plugin is stored in :class:`HindsightInstructionReplayBuffer` as
SB3's off-policy loop stores it (one env, ``--episodes`` episodes, the terminal observation as ``next_obs``), with the
env's own goal spec and the buffer's default draw strategy; then ``--batches`` batches of 256 are sampled. Each served
relabeled row is judged by the plugin's codes, not by the goal spec's ``is_nothing``:

* **impossible**: the share of hindsight instructions (relabeled rows whose instruction differs from the episode's
  own) holding a goal with a field equal to ``NOTHING``: BabyAI has no such object, and no step reaches it;
* **hindsight rows**: the share of all served rows that carry a hindsight instruction with no impossible goal;
* **open rows with one**: among relabeled rows of episodes that did not complete their mission, the share carrying
  one. ``"some"`` asks 1/2 of them when k = 1 (h uniform in 0..free), ``"all"`` every one.

Run it at two commits to compare a fix (``benchmarks/results/bench_event_goals_{before,after}.txt``).

Usage: ``python benchmarks/bench_event_goals.py [--levels BabyAI-GoToLocal-v0:1 ...] [--episodes 60]
[--batches 40] [--seed 0]``
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from gymnasium import spaces

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.experiment import markdown_table

LEVELS = ("BabyAI-GoToLocal-v0:1", "BabyAI-GoToSeqS5R2-v0:4", "BabyAI-GoToSeq-v0:4")


def fill(level: str, k_max: int, episodes: int, strategy: str, seed: int
         ) -> tuple[HindsightInstructionReplayBuffer, dict[int, bool]]:
    """Random play stored as SB3 stores it; whether each episode (by its first row) completed its mission."""
    from sb3_hir_minigrid import make_babyai_goto

    env = make_babyai_goto(level, k_max=k_max)
    space, actions = env.observation_space, env.action_space
    assert isinstance(space, spaces.Dict) and isinstance(actions, spaces.Discrete)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    limit = int(env.unwrapped.max_steps)  # set by the level at reset
    buffer = HindsightInstructionReplayBuffer(
        episodes * limit, space, actions, device="cpu", goal_spec=env.goal_spec,
        hindsight_goals=strategy, relabel_ratio=0.8, seed=seed,
    )
    success: dict[int, bool] = {}
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed * 100_000 + episode)
        start, done, terminated = buffer.pos, False, False
        while not done:
            action = int(rng.integers(actions.n))
            next_obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            info = dict(info, TimeLimit_truncated=truncated and not terminated)
            buffer.add({key: value[None] for key, value in obs.items()},
                       {key: value[None] for key, value in next_obs.items()},
                       np.array([[action]]), np.array([reward]), np.array([done]), [info])
            obs = next_obs
        success[start] = bool(terminated)
    return buffer, success


def measure(buffer: HindsightInstructionReplayBuffer, success: dict[int, bool], batches: int) -> dict[str, Any]:
    """The three shares of the module docstring, over ``batches`` batches of 256."""
    from sb3_hir_minigrid.codes import MASK, NOTHING, PAD

    served = hindsight = impossible = real = open_rows = open_with = 0
    for _ in range(batches):
        buffer.sample(256)
        info = buffer.last_sample_info
        assert info is not None  # set by every sample()
        served += 256
        for b in np.flatnonzero(info.relabeled):
            start = int(info.episode_start[b])
            goals = info.goals[b].reshape(-1, 2)
            own = buffer.observations["goals"][start, 0].reshape(goals.shape)
            drawn = not np.array_equal(goals, own)
            slots = ~((goals == MASK).all(axis=1) | (goals == PAD).all(axis=1))
            bad = bool((goals[slots] == NOTHING).any())
            hindsight += drawn
            impossible += drawn and bad
            real += drawn and not bad
            if not success[start]:
                open_rows += 1
                open_with += drawn and not bad
    return dict(impossible=impossible / max(hindsight, 1), hindsight_rows=real / served,
                open_with=open_with / max(open_rows, 1), hindsight=hindsight, served=served)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--levels", nargs="+", default=list(LEVELS), help="LEVEL:K_MAX pairs")
    parser.add_argument("--strategies", nargs="+", default=["some", "all"], choices=["some", "all"])
    parser.add_argument("--episodes", type=int, default=60)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"random play, {args.episodes} episodes per level, {args.batches} batches of 256, relabel_ratio 0.8, "
          f"seed {args.seed}, default draw strategy")
    header = ["level", "k", "strategy", "hindsight instructions", "impossible", "hindsight rows", "open rows with one"]
    rows = []
    for entry in args.levels:
        level, k_max = entry.rsplit(":", 1)
        for strategy in args.strategies:
            buffer, success = fill(level, int(k_max), args.episodes, strategy, args.seed)
            result = measure(buffer, success, args.batches)
            rows.append([level, k_max, strategy, result["hindsight"], f"{result['impossible']:.3f}",
                         f"{result['hindsight_rows']:.3f}", f"{result['open_with']:.3f}"])
    print(markdown_table(header, rows, "lrlrrrr"))

if __name__ == "__main__":
    main()
