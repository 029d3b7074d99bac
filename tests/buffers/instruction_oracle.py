"""The oracle of the buffer tests: instruction episodes written by a plain per-step loop, fed into a buffer, and the
check that every served row is the replay of its episode under its drawn goals (or the recorded row)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.type_aliases import DictReplayBufferSamples

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.episodes import Episode
from sb3_hir.goals import ExactGoalSpec, GoalSpec

MASK = -1
GRID = 4  # cells 0..GRID-1 per axis in the hand-made episodes
MOVES = np.array([[0, -1], [-1, 0], [0, 1], [1, 0], [0, 0]])


def random_path(rng: np.random.Generator, length: int) -> np.ndarray:
    start = rng.integers(0, GRID, size=(1, 2))
    return np.clip(np.cumsum(np.vstack([start, MOVES[rng.integers(0, 5, length)]]), axis=0), 0, GRID - 1)


def make_space(k: int, achieved_shape: tuple[int, ...] = (1, 2)) -> spaces.Dict:
    return spaces.Dict(
        {
            "obs": spaces.Box(-np.inf, np.inf, (3,), np.float32),
            "goals": spaces.Box(-1, 10, (k, 2), np.int32),
            "achieved": spaces.Box(0, 10, achieved_shape, np.int32),
        }
    )


def make_buffer(k: int, size: int = 64, n_envs: int = 1, **kwargs) -> HindsightInstructionReplayBuffer:
    kwargs.setdefault("relabel_ratio", 1.0)
    kwargs.setdefault("seed", 0)
    return HindsightInstructionReplayBuffer(size, make_space(k), spaces.Discrete(5), device="cpu",
                                            n_envs=n_envs, **kwargs)


@dataclass
class Recorded:
    """An env-like episode written with a plain per-step loop (an oracle independent of the relabeler)."""

    episode: Episode
    dones: np.ndarray
    timeouts: np.ndarray


def simulate(path: np.ndarray, goals: np.ndarray, fall: bool = False, spec: GoalSpec | None = None) -> Recorded:
    """What MazeRunner would record: ``path`` is the achieved cell at t = 0..T, ``goals`` the instruction.

    Goal j becomes active after goal j-1 was reached and is checked from the next step on; the episode ends
    (terminated) at the k-th goal, else at the end of ``path`` (truncated, or terminated if ``fall``). A plain
    per-step loop, independent of the relabeler and the buffer: the oracle of these tests.
    """
    spec = spec or ExactGoalSpec()
    k = len(goals)
    goal_obs = [goals.copy()]
    rewards = []
    active = 0
    last = len(path) - 1
    for t in range(1, len(path)):
        current = goal_obs[-1].copy()
        reward = 0.0
        if active < k and bool(spec.reached(path[t], goals[active])):
            current[active] = MASK
            active += 1
            reward = 1.0
        goal_obs.append(current)
        rewards.append(reward)
        if active == k:
            last = t
            break
    length = last
    terminated = np.zeros(length, bool)
    truncated = np.zeros(length, bool)
    if active == k or fall:
        terminated[-1] = True
    else:
        truncated[-1] = True
    observations = {
        "obs": np.stack([np.array([t, *path[t]], np.float32) for t in range(length + 1)]),
        "goals": np.stack(goal_obs).astype(np.int32),
        "achieved": path[: length + 1, None, :].astype(np.int32),
    }
    episode = Episode(observations, np.arange(length) % 5, np.array(rewards, np.float32), terminated, truncated)
    return Recorded(episode, terminated | truncated, truncated.copy())


def add_step(buffer: HindsightInstructionReplayBuffer, recs: list[Recorded], t: int | list[int]) -> None:
    """Add step ``t`` (or step ``t[i]`` of ``recs[i]``) of one recorded episode per sub-env."""
    ts = [t] * len(recs) if isinstance(t, int) else t
    obs = {key: np.stack([rec.episode.observations[key][s] for rec, s in zip(recs, ts, strict=True)])
           for key in ("obs", "goals", "achieved")}
    nxt = {key: np.stack([rec.episode.observations[key][s + 1] for rec, s in zip(recs, ts, strict=True)])
           for key in obs}
    buffer.add(
        obs,
        nxt,
        np.array([rec.episode.actions[s] for rec, s in zip(recs, ts, strict=True)]),
        np.array([rec.episode.rewards[s] for rec, s in zip(recs, ts, strict=True)], np.float32),
        np.array([rec.dones[s] for rec, s in zip(recs, ts, strict=True)]),
        [{"TimeLimit.truncated": bool(rec.timeouts[s])} for rec, s in zip(recs, ts, strict=True)],
    )


def add_episode(buffer: HindsightInstructionReplayBuffer, rec: Recorded, steps: int | None = None) -> None:
    for t in range(len(rec.episode) if steps is None else steps):
        add_step(buffer, [rec], t)


@dataclass
class Stream:
    """Feeds recorded episodes into a buffer per sub-env and remembers which (episode, step) each row holds."""

    buffer: HindsightInstructionReplayBuffer
    owner: dict[tuple[int, int], tuple[Recorded, int]]
    fall: dict[int, bool]
    added: dict[int, int]  # id(rec) -> steps added so far

    @classmethod
    def into(cls, buffer: HindsightInstructionReplayBuffer) -> Stream:
        return cls(buffer, {}, {}, {})

    def add(self, recs: list[Recorded], ts: list[int]) -> None:
        for env_idx, (rec, t) in enumerate(zip(recs, ts, strict=True)):
            self.owner[(self.buffer.pos, env_idx)] = (rec, t)
            self.added[id(rec)] = t + 1
        add_step(self.buffer, recs, ts)


def check_sample(stream: Stream, batch_size: int = 64, spec: GoalSpec | None = None,
                 falls: dict[int, bool] | None = None) -> np.ndarray:
    """Sample and check every served transition against the oracle; returns the relabeled mask.

    Relabeled: it equals ``simulate`` of its episode's path under the drawn goals at its step (inside the
    relabeled episode), with n-step windows cut at that episode's end. Recorded: it equals the recorded episode.
    """
    sample = stream.buffer.sample(batch_size)
    check_served(stream, sample, spec, falls)
    return stream.buffer.last_sample_info.relabeled


def check_served(stream: Stream, sample: DictReplayBufferSamples, spec: GoalSpec | None = None,
                 falls: dict[int, bool] | None = None, offset: int = 0) -> None:
    """``check_sample`` of what ``stream.buffer`` served last: the rows of ``sample`` from ``offset`` on."""
    buffer = stream.buffer
    info = buffer.last_sample_info
    assert info is not None
    batch_size = len(info.rows)
    part = slice(offset, offset + batch_size)
    sample = DictReplayBufferSamples(*(
        None if field is None
        else {key: value[part] for key, value in field.items()} if isinstance(field, dict)
        else field[part]
        for field in sample
    ))
    obs = {key: value.numpy() for key, value in sample.observations.items()}
    nxt = {key: value.numpy() for key, value in sample.next_observations.items()}
    rewards, dones = sample.rewards.numpy()[:, 0], sample.dones.numpy()[:, 0]
    n, gamma = buffer.n_steps, buffer.gamma
    if n == 1:
        assert sample.discounts is None
    for b in range(batch_size):
        rec, t = stream.owner[(int(info.rows[b]), int(info.env_indices[b]))]
        ep = rec.episode
        np.testing.assert_array_equal(obs["obs"][b], ep.observations["obs"][t])
        np.testing.assert_array_equal(obs["achieved"][b], ep.observations["achieved"][t])
        assert sample.actions.numpy()[b, 0] == ep.actions[t]
        if info.relabeled[b]:
            assert info.t[b] == t and stream.added[id(rec)] == len(ep)  # only finished episodes
            fall = (falls or {}).get(id(rec), False)
            oracle = simulate(ep.observations["achieved"][:, 0], info.goals[b], fall=fall, spec=spec).episode
            # A replay never outlives the recorded episode; the transition lies inside the relabeled one.
            assert t < len(oracle) <= len(ep)
            view, length = oracle, len(oracle)
        else:  # recorded; a running episode's window stops at its newest row
            oracle, view, length = None, ep, stream.added[id(rec)]
        m = min(n, length - t)
        assert info.window[b] == m
        np.testing.assert_array_equal(obs["goals"][b], view.observations["goals"][t])
        np.testing.assert_array_equal(nxt["goals"][b], view.observations["goals"][t + m])
        np.testing.assert_array_equal(nxt["obs"][b], ep.observations["obs"][t + m])
        expected = sum(gamma**i * view.rewards[t + i] for i in range(m))
        assert rewards[b] == pytest.approx(expected, abs=1e-6)
        ends = t + m == len(view) and (view is oracle or length == len(ep))
        assert dones[b] == float(ends and bool(view.terminated[-1]))
        if n > 1:
            assert sample.discounts.numpy()[b, 0] == pytest.approx(gamma**m)



def assert_serves_the_same(buffer, other, seed: int = 11, batches: int = 3) -> None:
    """``buffer`` and ``other`` serve identical batches from the same global seed (each with its own generator)."""
    import torch as th

    for _ in range(batches):
        np.random.seed(seed)
        a = buffer.sample(16)
        np.random.seed(seed)
        b = other.sample(16)
        for key in a.observations:
            assert th.equal(a.observations[key], b.observations[key])
        assert th.equal(a.actions, b.actions) and th.equal(a.rewards, b.rewards) and th.equal(a.dones, b.dones)
