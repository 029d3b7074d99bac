"""The served-rows oracle: instruction episodes written by a plain per-step loop, fed into a replay buffer, and the
check that every served row is the replay of its episode under its drawn goals (or the recorded row).

It is independent of the relabeler and of the buffer's code: :func:`simulate` writes what a MazeRunner-like env
records, :class:`Stream` remembers which (episode, step) each buffer row holds, and :func:`check_served` compares
every served observation, action, reward, done and discount with the episode replayed under the goals the buffer
says it drew. The buffer's own tests use it, and :func:`~sb3_hir.testing.check_draw_strategy` holds a plugin's draw
strategy to it. Imported on use: it imports SB3 and torch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.type_aliases import DictReplayBufferSamples

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.buffers.serving import SampleInfo
from sb3_hir.episodes import Episode
from sb3_hir.goals import ExactGoalSpec, GoalSpec, padding_mask

MASK = -1
GRID = 4  # cells 0..GRID-1 per axis in the hand-made episodes
MOVES = np.array([[0, -1], [-1, 0], [0, 1], [1, 0], [0, 0]])


def random_path(rng: np.random.Generator, length: int) -> np.ndarray:
    start = rng.integers(0, GRID, size=(1, 2))
    return np.clip(np.cumsum(np.vstack([start, MOVES[rng.integers(0, 5, length)]]), axis=0), 0, GRID - 1)


def make_space(k: int, achieved_shape: tuple[int, ...] = (1, 2), groups_key: str | None = None) -> spaces.Dict:
    """The oracle episodes' space; with ``groups_key``, a ``(k,)`` key of goal groups (and goals may be padding)."""
    keys = {
        "obs": spaces.Box(-np.inf, np.inf, (3,), np.float32),
        "goals": spaces.Box(-1 if groups_key is None else -9, 10, (k, 2), np.int32),
        "achieved": spaces.Box(0, 10, achieved_shape, np.int32),
    }
    if groups_key is not None:
        keys[groups_key] = spaces.Box(-9, k, (k,), np.int32)
    return spaces.Dict(keys)


def make_buffer(k: int, size: int = 64, n_envs: int = 1, **kwargs) -> HindsightInstructionReplayBuffer:
    kwargs.setdefault("relabel_ratio", 1.0)
    kwargs.setdefault("seed", 0)
    spec = kwargs.get("goal_spec")
    groups_key = spec.groups_key if isinstance(spec, GoalSpec) else None
    return HindsightInstructionReplayBuffer(size, make_space(k, groups_key=groups_key), spaces.Discrete(5),
                                            device="cpu", n_envs=n_envs, **kwargs)


@dataclass
class Recorded:
    """An env-like episode written with a plain per-step loop (an oracle independent of the relabeler)."""

    episode: Episode
    dones: np.ndarray
    timeouts: np.ndarray


def simulate(path: np.ndarray, goals: np.ndarray, fall: bool = False, spec: GoalSpec | None = None,
             groups: np.ndarray | None = None) -> Recorded:
    """What MazeRunner would record: ``path`` is the achieved cell at t = 0..T, ``goals`` the instruction.

    Goal j becomes active after goal j-1 was reached and is checked from the next step on (from the same step with
    ``spec.same_step_goals``, so one step may complete several); the episode ends
    (terminated) at the k-th goal, else at the end of ``path`` (truncated, or terminated if ``fall``). With
    ``groups`` (one per slot, the observation under ``spec.groups_key``) the goals of one group are active together
    and latch in any order, the next group active once all are; padding slots (``spec.pad_value``) are never goals.
    A plain per-step loop, independent of the relabeler and the buffer: the oracle of these tests.
    """
    spec = spec or ExactGoalSpec()
    k = len(goals)
    same_step = bool(spec.same_step_goals)
    real = [not bool(padding_mask(spec, goals[j])) for j in range(k)]
    group = [int(g) for g in groups] if groups is not None else list(range(k))
    order = sorted({group[j] for j in range(k) if real[j]})
    members = [[j for j in range(k) if real[j] and group[j] == g] for g in order]
    reached = [False] * k
    goal_obs = [goals.copy()]
    rewards = []
    active = 0
    last = len(path) - 1
    for t in range(1, len(path)):
        current = goal_obs[-1].copy()
        reward = 0.0
        while active < len(members):  # the active group's goals this step completes
            for j in members[active]:
                if not reached[j] and bool(spec.reached(path[t], goals[j])):
                    reached[j] = True
                    current[j] = MASK
                    reward += 1.0
            if not all(reached[j] for j in members[active]):
                break
            active += 1
            if not same_step:
                break
        goal_obs.append(current)
        rewards.append(reward)
        if active == len(members):
            last = t
            break
    length = last
    terminated = np.zeros(length, bool)
    truncated = np.zeros(length, bool)
    if active == len(members) or fall:
        terminated[-1] = True
    else:
        truncated[-1] = True
    observations = {
        "obs": np.stack([np.array([t, *path[t]], np.float32) for t in range(length + 1)]),
        "goals": np.stack(goal_obs).astype(np.int32),
        "achieved": path[: length + 1, None, :].astype(np.int32),
    }
    groups_key = spec.groups_key
    if groups_key is not None:
        observations[groups_key] = np.tile(np.asarray(group if groups is not None else range(k), np.int32),
                                           (length + 1, 1))
    episode = Episode(observations, np.arange(length) % 5, np.array(rewards, np.float32), terminated, truncated)
    return Recorded(episode, terminated | truncated, truncated.copy())


def add_step(buffer: HindsightInstructionReplayBuffer, recs: list[Recorded], t: int | list[int]) -> None:
    """Add step ``t`` (or step ``t[i]`` of ``recs[i]``) of one recorded episode per sub-env."""
    ts = [t] * len(recs) if isinstance(t, int) else t
    obs = {key: np.stack([rec.episode.observations[key][s] for rec, s in zip(recs, ts, strict=True)])
           for key in recs[0].episode.observations}
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


class _Demonstrations:
    """A buffer's demonstrations as :func:`check_served` reads a buffer: what was served last, and the settings."""

    def __init__(self, buffer: HindsightInstructionReplayBuffer) -> None:
        self.owner = buffer
        self.n_steps, self.gamma = buffer.n_steps, buffer.gamma

    @property
    def last_sample_info(self) -> object:
        return self.owner.last_demonstration_info


def demo_stream(buffer: HindsightInstructionReplayBuffer, recs: list[Recorded]) -> Stream:
    """Which (episode, step) each row of ``buffer``'s demonstrations holds: they are stored in order, one env."""
    assert buffer.demonstrations.source is not None
    stream = Stream.into(_Demonstrations(buffer))  # type: ignore[arg-type]
    row = 0
    for rec in recs:
        for t in range(len(rec.episode)):
            stream.owner[(row, 0)] = (rec, t)
            row += 1
        stream.added[id(rec)] = len(rec.episode)
    return stream


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
        at = served_row(info, b, t)
        same(at, "observation 'obs'", obs["obs"][b], ep.observations["obs"][t])
        same(at, "observation 'achieved'", obs["achieved"][b], ep.observations["achieved"][t])
        same(at, "action", sample.actions.numpy()[b, 0], ep.actions[t])
        if info.relabeled[b]:
            assert info.t[b] == t and stream.added[id(rec)] == len(ep), f"{at}: not a row of a finished episode"
            fall = (falls or {}).get(id(rec), False)
            groups_key = None if spec is None else spec.groups_key
            groups = None if groups_key is None else ep.observations[groups_key][0]
            oracle = simulate(ep.observations["achieved"][:, 0], info.goals[b], fall=fall, spec=spec,
                              groups=groups).episode
            # A replay never outlives the recorded episode; the transition lies inside the relabeled one.
            if not t < len(oracle) <= len(ep):
                raise AssertionError(f"{at}: reach: the replay completes the drawn goals at step {len(oracle)} (the "
                                     f"recorded episode ends at {len(ep)}), so this step lies outside the relabeled "
                                     "episode: the drawn reach steps are wrong")
            view, length = oracle, len(oracle)
        else:  # recorded; a running episode's window stops at its newest row
            oracle, view, length = None, ep, stream.added[id(rec)]
        m = min(n, length - t)
        same(at, "window (transitions served)", info.window[b], m)
        same(at, "observation 'goals'", obs["goals"][b], view.observations["goals"][t])
        same(at, "next observation 'goals'", nxt["goals"][b], view.observations["goals"][t + m])
        same(at, "next observation 'obs'", nxt["obs"][b], ep.observations["obs"][t + m])
        expected = sum(gamma**i * view.rewards[t + i] for i in range(m))
        assert np.isclose(rewards[b], expected, atol=1e-6), f"{at}: reward {rewards[b]}, the replay gives {expected}"
        ends = t + m == len(view) and (view is oracle or length == len(ep))
        done = float(ends and bool(view.terminated[-1]))
        assert dones[b] == done, f"{at}: done {dones[b]}, the replay gives {done}"
        if n > 1:
            assert np.isclose(sample.discounts.numpy()[b, 0], gamma**m, atol=1e-6), (
                f"{at}: discount {sample.discounts.numpy()[b, 0]}, the replay gives gamma**{m}")


def served_row(info: SampleInfo, b: int, t: int) -> str:
    """Where a served row comes from and what was drawn for it, for messages: the batch row, its buffer row and
    step, and (relabeled) the drawn goals and reach steps."""
    row = f"served row {b} (buffer row {int(info.rows[b])}, sub-env {int(info.env_indices[b])}, step {t}"
    if not info.relabeled[b]:
        return row + ", recorded)"
    drawn = "" if info.reach is None else f", drawn reach {np.asarray(info.reach[b]).tolist()}"
    return row + f", relabeled: goals {goals_of(info, b)}{drawn})"


def same(at: str, field: str, served: object, replayed: object) -> None:
    """Assert that ``field`` of a served row is the replay's, naming the field, the row and both values."""
    if not np.array_equal(np.asarray(served), np.asarray(replayed)):
        raise AssertionError(f"{at}: {field} {np.asarray(served).tolist()}, the replay gives "
                             f"{np.asarray(replayed).tolist()}")


def goals_of(info: object, b: int) -> object:
    """The goals the buffer says it drew for served row ``b`` (for messages)."""
    return np.asarray(info.goals[b]).tolist()  # type: ignore[attr-defined]


def random_recorded(rng: np.random.Generator, num_goals: int, fall_rate: float = 0.2, max_length: int = 12,
                    spec: GoalSpec | None = None) -> tuple[Recorded, bool]:
    """A random episode of 1..``max_length - 1`` moves under a random instruction; falls (terminates without its
    goals) with ``fall_rate``. With a ``spec`` declaring ``nothing_value`` (event goals), about half the steps after
    the reset achieve nothing."""
    fall = bool(rng.random() < fall_rate)
    path = random_path(rng, int(rng.integers(2, max_length)))
    nothing = None if spec is None else spec.nothing_value
    if nothing is not None:
        hit = rng.random(len(path)) < 0.5
        hit[0] = False
        path[hit] = nothing
    return simulate(path, rng.integers(0, GRID, size=(num_goals, 2)), fall, spec), fall


def stream_episodes(buffer: HindsightInstructionReplayBuffer, steps: int,
                    new: Callable[[], tuple[Recorded, bool]]) -> tuple[Stream, dict[int, bool]]:
    """``steps`` adds into every sub-env of ``buffer`` of the episodes ``new()`` records (each with whether it
    falls), a sub-env's next episode starting where its last ends; the stream and which episodes fall."""
    stream = Stream.into(buffer)
    falls: dict[int, bool] = {}

    def next_episode() -> Recorded:
        rec, fall = new()
        falls[id(rec)] = fall
        return rec

    current = [next_episode() for _ in range(buffer.n_envs)]
    ts = [0] * buffer.n_envs
    for _ in range(steps):
        stream.add(current, ts)
        for i in range(buffer.n_envs):
            ts[i] += 1
            if ts[i] == len(current[i].episode):
                current[i], ts[i] = next_episode(), 0
    return stream, falls


def fill(buffer: HindsightInstructionReplayBuffer, rng: np.random.Generator, steps: int, fall_rate: float = 0.2,
         spec: GoalSpec | None = None) -> tuple[Stream, dict[int, bool]]:
    """``steps`` adds of random episodes (under ``spec``'s semantics) into every sub-env of ``buffer``; the stream
    and which episodes fall."""
    return stream_episodes(buffer, steps, lambda: random_recorded(rng, buffer.num_goals, fall_rate, spec=spec))
