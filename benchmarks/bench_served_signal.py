"""Served learning signal: the share of sampled rows with reward > 0, our buffer against SB3's HerReplayBuffer, on
the same random-policy MazeRunner data.

Data: ``sb3_hir/MazeRunner-v0`` (maze_dim=9, time_limit=100), ``make_vec_env`` with 8 envs and a fixed seed, a
uniform random policy; ``--transitions`` (default 40k) transitions stored through the buffers' real ``add()``,
with the terminal observation as ``next_obs`` at episode ends, as SB3's off-policy algorithms store them.

k = 1 (num_goals=1), the HER comparison:

* ours: :class:`HindsightInstructionReplayBuffer` with ``relabel_ratio=0.8`` for hindsight_goals in (all, some) x
  goal_step in (future, episode). With one goal, all/future is HER's ``future`` rule.
* HER: SB3's own ``HerReplayBuffer(n_sampled_goal=4, goal_selection_strategy="future")`` fed the same transitions
  in GoalEnv layout: observation = "obs", achieved_goal = "achieved"[0], desired_goal = the episode's instruction
  (the unmasked goal of its reset observation; MazeRunner masks a reached goal in "goals", but the episode ends
  there), with a tiny env whose ``compute_reward`` is exact equality (1.0 / 0.0), which is MazeRunner's reward
  (checked on every stored transition).

Both serve ``--batches`` batches of 256. Printed per buffer: share of served rows relabeled, share of served rows
with reward > 0 (all rows, and among relabeled rows), and ours / HER for the rewarded share (target >= 0.8).

Context: under our buffer's faithful semantics a relabeled goal is reached at its first visit in the episode, and
the relabeled episode ends there; so a relabeled row earns a reward only if its next achieved cell is a first visit
(not seen at steps 1..t of its episode); for k = 1 the script asserts that ours rewards exactly the relabeled rows
whose goal is first reached at t + 1. Printed: the share of stored transitions that are such first visits, and the
share of served relabeled rows that are (the true bound on rewarded relabeled rows, since rejecting inadmissible
draws reweights the transitions). For HER: the share of its relabeled rows rewarded at the goal's first visit (a
reward the env also gives) and at a revisit, the share of its relabeled rows that lie after the goal's first visit
(transitions the env never produces under that goal, as it terminates there; HER rewards those that revisit the
goal), and ours / HER counting first-visit rewards only.

k = 3 (num_goals=3), for context: the same four configurations of our buffer against the share of rows with
reward > 0 in the plain recorded data (what DictReplayBuffer serves in expectation). HER has no k = 3 counterpart.

Usage: ``python benchmarks/bench_served_signal.py [--transitions 40000] [--batches 1000] [--seed 0]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3 import HerReplayBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

import sb3_hir  # noqa: F401  (registers sb3_hir/MazeRunner-v0)
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.experiment import markdown_table

ENV_ID = "sb3_hir/MazeRunner-v0"
MAZE_DIM = 9
TIME_LIMIT = 100
N_ENVS = 8
BATCH = 256
RELABEL_RATIO = 0.8
CONFIGS = [(strategy, selection) for strategy in ("all", "some") for selection in ("future", "episode")]
NOT_SEEN = np.iinfo(np.int64).max


class ExactGoalEnv(gym.Env):
    """The smallest GoalEnv-like env HerReplayBuffer accepts: ``compute_reward`` is exact equality (1.0 / 0.0)."""

    observation_space = spaces.Dict(
        {
            "observation": spaces.Box(0.0, 1.0, (7,), np.float32),
            "achieved_goal": spaces.Box(0, MAZE_DIM - 1, (2,), np.int32),
            "desired_goal": spaces.Box(0, MAZE_DIM - 1, (2,), np.int32),
        }
    )
    action_space = spaces.Discrete(5)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        return np.all(achieved_goal == desired_goal, axis=-1).astype(np.float32)


class RecordingHerReplayBuffer(HerReplayBuffer):
    """SB3's HerReplayBuffer, unchanged, that remembers the rows and goals of its last virtual samples."""

    def _sample_goals(self, batch_indices: np.ndarray, env_indices: np.ndarray) -> np.ndarray:
        goals = super()._sample_goals(batch_indices, env_indices)
        self.last_virtual = (batch_indices, env_indices, goals)
        return goals


def collect(num_goals: int, transitions: int, seed: int) -> dict[str, Any]:
    """Random-policy MazeRunner steps, as add() receives them, plus per-transition episode bookkeeping."""
    env = make_vec_env(ENV_ID, n_envs=N_ENVS, seed=seed,
                       env_kwargs=dict(maze_dim=MAZE_DIM, num_goals=num_goals, time_limit=TIME_LIMIT))
    rng = np.random.default_rng(seed)
    obs: Any = env.reset()  # MazeRunner's Dict observation (SB3 types it as any VecEnvObs)
    instruction = obs["goals"][:, 0].copy()  # k=1: the episode's goal, for HER's desired_goal
    episode = np.arange(N_ENVS)  # global episode id per sub-env
    next_episode, t_now = N_ENVS, np.zeros(N_ENVS, dtype=np.int64)
    steps: list[tuple[Any, ...]] = []
    her_steps: list[tuple[Any, ...]] = []
    ep_list: list[np.ndarray] = []
    t_list: list[np.ndarray] = []
    cell_list: list[np.ndarray] = []
    for _ in range(transitions // N_ENVS):
        actions = rng.integers(0, 5, size=N_ENVS)
        new_obs: Any
        new_obs, rewards, dones, infos = env.step(actions)
        next_obs = {key: value.copy() for key, value in new_obs.items()}
        for i in np.flatnonzero(dones):
            for key, value in infos[i]["terminal_observation"].items():
                next_obs[key][i] = value
        steps.append((obs, next_obs, actions, rewards.astype(np.float32), dones, infos))
        her_obs = {"observation": obs["obs"], "achieved_goal": obs["achieved"][:, 0], "desired_goal": instruction}
        her_next = {"observation": next_obs["obs"], "achieved_goal": next_obs["achieved"][:, 0],
                    "desired_goal": instruction.copy()}
        her_steps.append((her_obs, her_next, actions, rewards.astype(np.float32), dones, infos))
        ep_list.append(episode.copy())
        t_list.append(t_now.copy())
        cell_list.append(next_obs["achieved"][:, 0, 0] * MAZE_DIM + next_obs["achieved"][:, 0, 1])
        t_now += 1
        for i in np.flatnonzero(dones):
            instruction = instruction.copy()
            instruction[i] = new_obs["goals"][i, 0]
            episode[i] = next_episode
            next_episode += 1
            t_now[i] = 0
        obs = new_obs
    env.close()
    ep_ids, t_index, next_cells = np.array(ep_list), np.array(t_list), np.array(cell_list)  # (steps, n_envs)
    # first[e, cell]: index t of the first transition of episode e whose next achieved cell is ``cell``.
    first = np.full((next_episode, MAZE_DIM * MAZE_DIM), NOT_SEEN, dtype=np.int64)
    np.minimum.at(first, (ep_ids, next_cells), t_index)
    rewards = np.array([step[3] for step in steps])
    return {
        "num_goals": num_goals,
        "steps": steps,
        "her_steps": her_steps,
        "episode": ep_ids,
        "t": t_index,
        "first": first,
        "next_cell": next_cells,
        "first_visit": first[ep_ids, next_cells] == t_index,
        "recorded_rewarded": float((rewards > 0).mean()),
        "episodes_done": int(np.array([step[4] for step in steps]).sum()),
    }


def first_visit_t(data: dict[str, Any], rows: np.ndarray, envs: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """Index t of the transition that first reaches each goal cell in the row's episode (NOT_SEEN if never)."""
    cells = goals[:, 0] * MAZE_DIM + goals[:, 1]
    return data["first"][data["episode"][rows, envs], cells]


def serve_ours(data: dict[str, Any], strategy: str, selection: str, batches: int, seed: int) -> dict[str, float]:
    space = data["steps"][0][0]
    k = data["num_goals"]
    obs_space = spaces.Dict({
        "achieved": spaces.Box(0, MAZE_DIM - 1, (1, 2), np.int32),
        "goals": spaces.Box(-1, MAZE_DIM - 1, (k, 2), np.int32),
        "obs": spaces.Box(0.0, 1.0, space["obs"].shape[1:], np.float32),
    })
    buffer = HindsightInstructionReplayBuffer(
        len(data["steps"]) * N_ENVS, obs_space, spaces.Discrete(5), device="cpu", n_envs=N_ENVS,
        hindsight_goals=strategy, goal_step=selection, relabel_ratio=RELABEL_RATIO, seed=seed,
    )
    for step in data["steps"]:
        buffer.add(*step)
    np.random.seed(seed)
    rewarded = rewarded_rel = relabeled = first_visit_rel = outside = 0
    start = time.perf_counter()
    for _ in range(batches):
        samples = buffer.sample(BATCH)
        info = buffer.last_sample_info
        assert info is not None
        positive = samples.rewards.numpy().reshape(-1) > 0
        rel = info.relabeled
        rewarded += int(positive.sum())
        rewarded_rel += int(positive[rel].sum())
        relabeled += int(rel.sum())
        rows, envs = info.rows[rel], info.env_indices[rel]
        assert np.array_equal(info.t[rel], data["t"][rows, envs])
        first_visit_rel += int(data["first_visit"][rows, envs].sum())
        if k == 1:
            reach_t = first_visit_t(data, rows, envs, info.goals[rel, 0])
            outside += int((reach_t < info.t[rel]).sum())
            # Faithful semantics: a relabeled row is rewarded exactly when its goal is first reached at t + 1.
            assert np.array_equal(positive[rel], reach_t == info.t[rel])
    seconds = (time.perf_counter() - start) / batches
    served = batches * BATCH
    assert abs(buffer.served_relabeled_share - relabeled / served) < 1e-12
    return {
        "relabeled": relabeled / served,
        "rewarded": rewarded / served,
        "rewarded_rel": rewarded_rel / max(relabeled, 1),
        "first_visit_rel": first_visit_rel / max(relabeled, 1),
        "outside_rel": outside / max(relabeled, 1),
        "us": seconds * 1e6,
    }


def serve_her(data: dict[str, Any], batches: int, seed: int) -> dict[str, float]:
    env = DummyVecEnv([ExactGoalEnv])
    buffer = RecordingHerReplayBuffer(
        len(data["steps"]) * N_ENVS, ExactGoalEnv.observation_space, ExactGoalEnv.action_space, env=env,
        device="cpu", n_envs=N_ENVS, n_sampled_goal=4, goal_selection_strategy="future",
    )
    for step in data["her_steps"]:
        # MazeRunner's reward is HER's compute_reward on the stored transition.
        assert np.array_equal(step[3], ExactGoalEnv().compute_reward(step[1]["achieved_goal"],
                                                                    step[1]["desired_goal"], None))
        buffer.add(*step)
    np.random.seed(seed)
    rewarded = rewarded_rel = relabeled = rewarded_first = first_visit = outside = 0
    start = time.perf_counter()
    for _ in range(batches):
        samples = buffer.sample(BATCH)
        rows, envs, goals = buffer.last_virtual
        num_virtual = len(rows)
        positive = samples.rewards.numpy().reshape(-1) > 0
        virtual = positive[BATCH - num_virtual :]  # HER serves real rows first, then virtual ones
        rewarded += int(positive.sum())
        rewarded_rel += int(virtual.sum())
        relabeled += num_virtual
        t = data["t"][rows, envs]
        reach_t = first_visit_t(data, rows, envs, goals)
        # HER's reward: the row's next achieved cell is the goal (a first visit or a revisit).
        assert np.array_equal(virtual, data["next_cell"][rows, envs] == goals[:, 0] * MAZE_DIM + goals[:, 1])
        rewarded_first += int((virtual & (reach_t == t)).sum())
        first_visit += int(data["first_visit"][rows, envs].sum())
        outside += int((reach_t < t).sum())
    seconds = (time.perf_counter() - start) / batches
    served = batches * BATCH
    return {
        "relabeled": relabeled / served,
        "rewarded": rewarded / served,
        "rewarded_rel": rewarded_rel / relabeled,
        "rewarded_first_rel": rewarded_first / relabeled,
        "first_visit_rel": first_visit / relabeled,
        "outside_rel": outside / relabeled,
        "us": seconds * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transitions", type=int, default=40_000, help="stored transitions per k")
    parser.add_argument("--batches", type=int, default=1000, help="sample(256) calls per buffer")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.transitions < 10 * N_ENVS * TIME_LIMIT or args.batches < 1:
        parser.error(f"--transitions must be >= {10 * N_ENVS * TIME_LIMIT} and --batches >= 1")
    th.set_num_threads(1)
    print(f"MazeRunner maze_dim={MAZE_DIM} time_limit={TIME_LIMIT}, {N_ENVS} envs, random policy, seed {args.seed}; "
          f"{args.batches} batches of {BATCH} per buffer; relabel_ratio={RELABEL_RATIO}, HER n_sampled_goal=4 future")

    data = collect(1, args.transitions, args.seed)
    stored = data["first_visit"].size
    print()
    print(f"k=1: {stored} transitions, {data['episodes_done']} finished episodes; recorded reward>0 share "
          f"{data['recorded_rewarded']:.4f}; first-visit transitions (next cell unseen at steps 1..t of its episode) "
          f"{data['first_visit'].mean():.4f}")
    her = serve_her(data, args.batches, args.seed)
    ours = {config: serve_ours(data, *config, args.batches, args.seed) for config in CONFIGS}
    print()
    rows = [["HER future n_sampled_goal=4", f"{her['relabeled']:.3f}", f"{her['rewarded']:.4f}",
             f"{her['rewarded_rel']:.4f}", f"{her['first_visit_rel']:.4f}", f"{her['outside_rel']:.4f}", "1.00",
             f"{her['us']:.0f}"]]
    verdicts = []
    for (strategy, selection), result in ours.items():
        ratio = result["rewarded"] / her["rewarded"]
        rows.append([f"ours {strategy}/{selection}", f"{result['relabeled']:.3f}", f"{result['rewarded']:.4f}",
                     f"{result['rewarded_rel']:.4f}", f"{result['first_visit_rel']:.4f}",
                     f"{result['outside_rel']:.4f}", f"{ratio:.2f}", f"{result['us']:.0f}"])
        verdicts.append(f"{'PASS' if ratio >= 0.8 else 'MISS'}  ours {strategy}/{selection} reward>0 share >= 0.8x "
                        f"HER: {ratio:.2f}x")
    print(markdown_table(["buffer", "relabeled", "reward>0", "reward>0 in relabeled", "first-visit in relabeled",
                          "relabeled after goal's first visit", "ours/HER reward>0", "sample us"], rows))
    def first_only(result: dict[str, float]) -> float:
        """Ours / HER, counting only rewards at the goal's first visit (all of ours are)."""
        return result["rewarded_rel"] * result["relabeled"] / (her["rewarded_first_rel"] * her["relabeled"])

    print()
    print(f"HER: {her['rewarded_first_rel']:.4f} of its relabeled rows are rewarded at the goal's first visit "
          f"(a reward the env also gives), {her['rewarded_rel'] - her['rewarded_first_rel']:.4f} at a revisit after "
          "the env would have terminated; ours / HER counting first-visit rewards only: "
          + ", ".join(f"{s}/{g} {first_only(r):.2f}"
                      for (s, g), r in ours.items()))
    print("targets (all/future is HER's rule with one goal):")
    for line in verdicts:
        print("  " + line)

    data3 = collect(3, args.transitions, args.seed)
    print()
    print(f"k=3: {data3['first_visit'].size} transitions, {data3['episodes_done']} finished episodes; recorded "
          f"reward>0 share {data3['recorded_rewarded']:.4f} (what DictReplayBuffer serves in expectation)")
    print()
    rows = []
    for strategy, selection in CONFIGS:
        result = serve_ours(data3, strategy, selection, args.batches, args.seed)
        rows.append([f"ours {strategy}/{selection}", f"{result['relabeled']:.3f}", f"{result['rewarded']:.4f}",
                     f"{result['rewarded_rel']:.4f}",
                     f"{result['rewarded'] / max(data3['recorded_rewarded'], 1e-12):.1f}x", f"{result['us']:.0f}"])
    print(markdown_table(["buffer", "relabeled", "reward>0", "reward>0 in relabeled", "vs recorded", "sample us"],
                         rows))


if __name__ == "__main__":
    main()
