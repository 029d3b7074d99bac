"""HindsightInstructionReplayBuffer: storage, relabeling and sampling semantics, and end-to-end use by SB3."""

from __future__ import annotations

import pickle
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from stable_baselines3 import DDPG, DQN, SAC, TD3
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.episodes import Episode
from sb3_hir.extractors import KeySelectExtractor
from sb3_hir.goals import ExactGoalSpec
from sb3_hir.relabel import HindsightInstructionRelabeler

MASK = -1
GRID = 4  # cells 0..GRID-1 per axis in the hand-made episodes


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny networks gain nothing from intra-op threads, and on shared cores spinning threads cost 10-50x."""
    threads = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(threads)


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


def simulate(path: np.ndarray, goals: np.ndarray, fall: bool = False) -> Recorded:
    """What MazeRunner would record: ``path`` is the achieved cell at t = 0..T, ``goals`` the instruction.

    Goal j becomes active after goal j-1 was reached and is checked from the next step on; the episode ends
    (terminated) at the k-th goal, else at the end of ``path`` (truncated, or terminated if ``fall``).
    """
    k = len(goals)
    goal_obs = [goals.copy()]
    rewards = []
    active = 0
    last = len(path) - 1
    for t in range(1, len(path)):
        current = goal_obs[-1].copy()
        reward = 0.0
        if active < k and np.array_equal(path[t], goals[active]):
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


def add_step(buffer: HindsightInstructionReplayBuffer, recs: list[Recorded | None], t: int) -> None:
    """Add step ``t`` of one recorded episode per sub-env (each rec is indexed at its own t)."""
    obs = {key: np.stack([rec.episode.observations[key][t] for rec in recs]) for key in ("obs", "goals", "achieved")}
    nxt = {key: np.stack([rec.episode.observations[key][t + 1] for rec in recs]) for key in obs}
    buffer.add(
        obs,
        nxt,
        np.array([rec.episode.actions[t] for rec in recs]),
        np.array([rec.episode.rewards[t] for rec in recs], np.float32),
        np.array([rec.dones[t] for rec in recs]),
        [{"TimeLimit.truncated": bool(rec.timeouts[t])} for rec in recs],
    )


def add_episode(buffer: HindsightInstructionReplayBuffer, rec: Recorded, steps: int | None = None) -> None:
    for t in range(len(rec.episode) if steps is None else steps):
        add_step(buffer, [rec], t)


def samples_np(buffer: HindsightInstructionReplayBuffer, rows: np.ndarray) -> dict[str, np.ndarray]:
    sample = buffer._get_samples(np.asarray(rows))
    return {
        "goals": sample.observations["goals"].numpy(),
        "next_goals": sample.next_observations["goals"].numpy(),
        "obs": sample.observations["obs"].numpy(),
        "next_obs": sample.next_observations["obs"].numpy(),
        "achieved": sample.observations["achieved"].numpy(),
        "rewards": sample.rewards.numpy()[:, 0],
        "dones": sample.dones.numpy()[:, 0],
        "actions": sample.actions.numpy()[:, 0],
    }


def assert_served_as_replay(buffer: HindsightInstructionReplayBuffer, rec: Recorded, rows: np.ndarray,
                            env_idx: int = 0) -> bool:
    """Check that rows (one episode, in order) are served exactly as ``relabeler.replay`` rewrites it.

    Needs relabel_ratio=1 and n_envs=1 for sampling; returns whether the episode was relabeled.
    """
    ep = rec.episode
    counts = buffer.relabel_counts[rows, env_idx]
    if counts[0, 0] < 0:
        assert (counts == -1).all()
        goals = ep.observations["goals"][0]  # kept as recorded: identical to a replay under its own goals
    else:
        goals = buffer.relabel_goals[rows[0], env_idx]
        assert (buffer.relabel_goals[rows, env_idx] == goals).all()
    replayed = buffer.relabeler.replay(ep, goals)
    cut = len(replayed)
    if buffer.n_envs == 1:
        got = samples_np(buffer, rows)
        np.testing.assert_array_equal(got["goals"][:cut], replayed.observations["goals"][:cut])
        np.testing.assert_array_equal(got["next_goals"][:cut], replayed.observations["goals"][1 : cut + 1])
        np.testing.assert_array_equal(got["rewards"][:cut], replayed.rewards)
        np.testing.assert_array_equal(got["dones"][:cut], replayed.terminated.astype(np.float32))
        np.testing.assert_array_equal(got["obs"], ep.observations["obs"][:-1])
        np.testing.assert_array_equal(got["actions"], ep.actions)
        # Past the relabeled episode's end: served as recorded.
        np.testing.assert_array_equal(got["goals"][cut:], ep.observations["goals"][cut:-1])
        np.testing.assert_array_equal(got["rewards"][cut:], ep.rewards[cut:])
        np.testing.assert_array_equal(got["dones"][cut:], (rec.dones & ~rec.timeouts)[cut:].astype(np.float32))
    if counts[0, 0] >= 0:
        assert (counts[cut:] == buffer.num_goals).all()
    return bool(counts[0, 0] >= 0)


# -- construction ----------------------------------------------------------------------------------------


def test_construction_errors() -> None:
    box = spaces.Box(0, 1, (3,))
    with pytest.raises(ValueError, match="Dict"):
        HindsightInstructionReplayBuffer(10, box, spaces.Discrete(2))
    missing = spaces.Dict({"obs": box, "goals": spaces.Box(-1, 5, (2, 2), np.int32)})
    with pytest.raises(ValueError, match=r"missing.*achieved.*present.*'goals'"):
        HindsightInstructionReplayBuffer(10, missing, spaces.Discrete(2))
    with pytest.raises(ValueError, match="achieved"):
        HindsightInstructionReplayBuffer(10, make_space(2, achieved_shape=(3,)), spaces.Discrete(2))
    with pytest.raises(ValueError, match="optimize_memory_usage"):
        HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), optimize_memory_usage=True)
    for ratio in (-0.1, 1.5, "0.5"):
        with pytest.raises(ValueError, match="relabel_ratio"):
            HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), relabel_ratio=ratio)
    with pytest.raises(ValueError, match="hindsight-instruction"):
        HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), relabeler="no-such-relabeler")
    with pytest.raises(ValueError, match="strategy"):
        HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), strategy="most")
    with pytest.raises(ValueError, match="num_goals"):
        HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2),
                                         relabeler=HindsightInstructionRelabeler(3))


def test_accepts_instances_and_small_count_dtype() -> None:
    relabeler = HindsightInstructionRelabeler(2, strategy="all", goal_spec=ExactGoalSpec())
    buffer = HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), relabeler=relabeler)
    assert buffer.relabeler is relabeler
    assert buffer.relabel_counts.dtype == np.int8
    assert buffer.relabel_goals.shape == (10, 1, 2, 2) and buffer.relabel_goals.dtype == np.int32


def test_plugin_relabeler_without_strategy_by_name() -> None:
    # "final-goal" (plugins/sb3-hir-example) takes no strategy: the buffer must not force one on it.
    buffer = make_buffer(2, relabeler="final-goal")
    assert type(buffer.relabeler).__name__ == "FinalGoalRelabeler"
    path = np.array([[0, 0], [0, 1], [1, 1], [1, 2]])
    rec = simulate(path, np.array([[3, 3], [3, 0]]))
    add_episode(buffer, rec)
    assert assert_served_as_replay(buffer, rec, np.arange(3))
    # The final cell became goal 1: the last transition earns it, the episode does not end (k = 2).
    sample = samples_np(buffer, np.arange(3))
    assert sample["rewards"].tolist() == [0.0, 0.0, 1.0]
    assert sample["dones"].sum() == 0.0
    with pytest.raises(TypeError, match="strategy"):
        make_buffer(2, relabeler="final-goal", strategy="all")


def test_relabeler_instances_must_offer_the_buffer_api() -> None:
    with pytest.raises(ValueError, match=r"relabeler.*lacks.*relabel_goals"):
        make_buffer(2, relabeler=object())


# -- semantics on hand-made episodes ---------------------------------------------------------------------


def test_relabeled_transitions_match_replay() -> None:
    path = np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2], [2, 3]])
    rec = simulate(path, np.array([[3, 3], [3, 0]]))  # never reaches its goals: truncated after 5 steps
    buffer = make_buffer(2, strategy="all")
    add_episode(buffer, rec)
    assert assert_served_as_replay(buffer, rec, np.arange(5))
    # "all" turns it into a success: the k-th relabeled goal ends the replay with a terminal transition.
    counts = buffer.relabel_counts[:5, 0]
    assert counts[:, 1].max() == 2
    sample = samples_np(buffer, np.arange(5))
    assert sample["rewards"].sum() == 2.0
    assert sample["dones"].sum() == 1.0


def test_timeouts_are_not_terminal() -> None:
    path = np.array([[0, 0], [0, 1], [1, 1]])
    rec = simulate(path, np.array([[3, 3], [3, 2]]))
    assert rec.timeouts[-1]
    for strategy in ("none", "some"):
        buffer = make_buffer(2, strategy=strategy, relabel_ratio=0.0)
        add_episode(buffer, rec)
        assert samples_np(buffer, np.arange(2))["dones"].tolist() == [0.0, 0.0]
    # Relabeled with one goal of two: still a time-out, never terminal.
    relabeler = HindsightInstructionRelabeler(2, strategy="some")
    partial = 0
    for seed in range(20):
        buffer = make_buffer(2, relabeler=relabeler, seed=seed)
        add_episode(buffer, rec)
        if 0 <= buffer.relabel_counts[1, 0, 1] < 2:
            partial += 1
            assert samples_np(buffer, np.arange(2))["dones"][1] == 0.0
    assert partial > 0


def test_other_terminations_survive_relabeling() -> None:
    path = np.array([[0, 0], [0, 1], [1, 1], [2, 1]])
    rec = simulate(path, np.array([[3, 3], [3, 2], [3, 1]]), fall=True)
    seen = set()
    for seed in range(30):
        buffer = make_buffer(3, strategy="some", seed=seed)
        add_episode(buffer, rec)
        assert_served_as_replay(buffer, rec, np.arange(3))
        done = samples_np(buffer, np.arange(3))["dones"][-1]
        assert done == 1.0  # relabeled or not, the fall is terminal
        seen.add(int(buffer.relabel_counts[2, 0, 1]))
    assert {-1, 1, 2, 3} <= seen


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 3),
    steps=st.lists(st.integers(0, 4), min_size=1, max_size=14),
    goal_cells=st.lists(st.tuples(st.integers(0, GRID - 1), st.integers(0, GRID - 1)), min_size=3, max_size=3),
    fall=st.booleans(),
    strategy=st.sampled_from(["some", "all"]),
    seed=st.integers(0, 2**16),
)
def test_property_served_as_replay(k, steps, goal_cells, fall, strategy, seed) -> None:
    moves = np.array([[0, -1], [-1, 0], [0, 1], [1, 0], [0, 0]])
    path = np.clip(np.cumsum(np.vstack([[[1, 1]], moves[steps]]), axis=0), 0, GRID - 1)
    rec = simulate(path, np.array(goal_cells[:k]), fall=fall)
    buffer = make_buffer(k, strategy=strategy, seed=seed)
    add_episode(buffer, rec)
    relabeled = assert_served_as_replay(buffer, rec, np.arange(len(rec.episode)))
    if strategy == "all" and relabeled and len(rec.episode) >= k:
        # Enough steps to draw every missing goal: the relabeled episode is a full success.
        assert buffer.relabel_counts[len(rec.episode) - 1, 0, 1] == k


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=8),
    unfinished=st.integers(0, 5),
    seed=st.integers(0, 2**16),
)
def test_property_stream_through_tiny_buffer(lengths, unfinished, seed) -> None:
    """Random episodes streamed through a 7-row buffer: every row is served as the replay of its episode."""
    rng = np.random.default_rng(seed)
    moves = np.array([[0, -1], [-1, 0], [0, 1], [1, 0], [0, 0]])
    goals = rng.integers(0, GRID, size=(2, 2))
    recs, owner = [], {}
    buffer = make_buffer(2, size=7, strategy="some", seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # episodes longer than 7 rows warn
        for i, length in enumerate([*lengths, 6]):
            path = np.clip(np.cumsum(np.vstack([[[1, 1]], moves[rng.integers(0, 5, length)]]), axis=0), 0, GRID - 1)
            rec = simulate(path, goals)
            recs.append(rec)
            steps = len(rec.episode) if i < len(lengths) else min(unfinished, len(rec.episode) - 1)
            for t in range(steps):
                owner[buffer.pos] = (i, t)
                add_step(buffer, [rec], t)
    for row, (i, t) in owner.items():
        rec = recs[i]
        counts = buffer.relabel_counts[row, 0]
        if i == len(lengths) or len(rec.episode) > 7:  # unfinished, or too long to relabel
            assert (counts == -1).all()
        got = samples_np(buffer, np.array([row]))
        if counts[0] < 0:
            replayed, cut = rec.episode, len(rec.episode)
        else:
            replayed = buffer.relabeler.replay(rec.episode, buffer.relabel_goals[row, 0])
            cut = len(replayed)
        if t < cut:
            np.testing.assert_array_equal(got["goals"][0], replayed.observations["goals"][t])
            np.testing.assert_array_equal(got["next_goals"][0], replayed.observations["goals"][t + 1])
            assert got["rewards"][0] == replayed.rewards[t]
            assert got["dones"][0] == float(replayed.terminated[t])
        else:
            np.testing.assert_array_equal(got["goals"][0], rec.episode.observations["goals"][t])
            assert got["rewards"][0] == rec.episode.rewards[t]
        np.testing.assert_array_equal(got["obs"][0], rec.episode.observations["obs"][t])


def test_recorded_path_equals_dict_replay_buffer() -> None:
    recs = [simulate(np.array([[0, 0], [0, 1], [1, 1], [1, 2]]), np.array([[1, 1], [1, 2]])),
            simulate(np.array([[2, 2], [2, 1], [2, 0], [3, 0], [3, 1]]), np.array([[3, 3], [0, 0]]))]
    ours = make_buffer(2, strategy="all", relabel_ratio=0.0)
    ref = DictReplayBuffer(64, make_space(2), spaces.Discrete(5), device="cpu")
    for rec in recs:
        add_episode(ours, rec)
        for t in range(len(rec.episode)):
            obs = {key: rec.episode.observations[key][t : t + 1] for key in ("obs", "goals", "achieved")}
            nxt = {key: rec.episode.observations[key][t + 1 : t + 2] for key in obs}
            ref.add(obs, nxt, rec.episode.actions[t : t + 1], rec.episode.rewards[t : t + 1],
                    rec.dones[t : t + 1], [{"TimeLimit.truncated": bool(rec.timeouts[t])}])
    np.random.seed(3)
    a = ours.sample(32)
    np.random.seed(3)
    b = ref.sample(32)
    for key in a.observations:
        assert th.equal(a.observations[key], b.observations[key])
        assert th.equal(a.next_observations[key], b.next_observations[key])
    for name in ("actions", "rewards", "dones"):
        assert th.equal(getattr(a, name), getattr(b, name))


def test_relabel_ratio_is_a_per_sample_probability() -> None:
    rec = simulate(np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]]), np.array([[3, 3], [3, 0]]))
    buffer = make_buffer(2, strategy="all", relabel_ratio=0.25)
    add_episode(buffer, rec)
    relabeled_rows = np.flatnonzero(buffer.relabel_counts[:4, 0, 0] < 2)
    sample = samples_np(buffer, np.repeat(relabeled_rows, 2000))
    own = rec.episode.observations["goals"][np.repeat(relabeled_rows, 2000)]
    fraction = (sample["goals"] != own).any(axis=(1, 2)).mean()
    assert 0.2 < fraction < 0.3


def test_unfinished_episodes_are_never_relabeled() -> None:
    rec = simulate(np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]]), np.array([[3, 3], [3, 0]]))
    buffer = make_buffer(2, strategy="all")
    add_episode(buffer, rec, steps=3)
    assert (buffer.relabel_counts == -1).all()
    got = samples_np(buffer, np.arange(3))
    np.testing.assert_array_equal(got["goals"], rec.episode.observations["goals"][:3])
    np.testing.assert_array_equal(got["rewards"], rec.episode.rewards[:3])
    add_step(buffer, [rec], 3)
    assert (buffer.relabel_counts[:4, 0] >= 0).all()


def test_wrap_around() -> None:
    goals = np.array([[3, 3], [3, 0]])
    paths = [np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]]),
             np.array([[1, 0], [2, 0], [2, 1], [2, 2], [1, 2]]),
             np.array([[0, 3], [1, 3], [2, 3], [2, 2], [2, 1]])]
    recs = [simulate(p, goals) for p in paths]  # 4 steps each, truncated
    buffer = make_buffer(2, size=7, strategy="all")
    add_episode(buffer, recs[0])  # rows 0..3
    add_episode(buffer, recs[1])  # rows 4, 5, 6, 0: crosses the wrap-around, overwrites ep0's first row
    assert buffer.full and buffer.pos == 1
    assert assert_served_as_replay(buffer, recs[1], np.array([4, 5, 6, 0]))
    # The surviving rows of the first episode keep their own relabel data.
    first_goals = buffer.relabel_goals[1, 0].copy()
    replayed = buffer.relabeler.replay(recs[0].episode, first_goals)
    got = samples_np(buffer, np.array([1, 2, 3]))
    cut = len(replayed)
    for t in range(1, 4):
        if t < cut:
            assert got["rewards"][t - 1] == replayed.rewards[t]
            np.testing.assert_array_equal(got["next_goals"][t - 1], replayed.observations["goals"][t + 1])
    # Partly overwritten by a running episode: overwritten rows are unrelabeled, the rest still relabeled.
    add_episode(buffer, recs[2], steps=2)  # rows 1, 2
    assert (buffer.relabel_counts[[1, 2], 0] == -1).all()
    assert (buffer.relabel_counts[[3, 4, 5, 6, 0], 0] >= 0).all()
    np.testing.assert_array_equal(samples_np(buffer, np.array([1, 2]))["goals"],
                                  recs[2].episode.observations["goals"][:2])


def test_episode_longer_than_buffer_is_kept_as_recorded() -> None:
    path = np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2], [2, 1], [1, 1]])
    rec = simulate(path, np.array([[3, 3], [3, 0]]))
    buffer = make_buffer(2, size=4, strategy="all")
    with pytest.warns(UserWarning, match="longer than the replay buffer"):
        add_episode(buffer, rec)
    assert (buffer.relabel_counts == -1).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        add_episode(buffer, rec)  # warned once only
    short = simulate(path[:3], np.array([[3, 3], [3, 0]]))
    add_episode(buffer, short)
    assert (buffer.relabel_counts[buffer.pos - 2 : buffer.pos, 0] >= 0).all()


def test_two_envs_with_interleaved_episode_ends() -> None:
    goals = np.array([[3, 3], [0, 3]])
    env0 = [simulate(np.array([[0, 0], [0, 1], [1, 1], [1, 2]]), goals),  # 3 steps, then 3 more
            simulate(np.array([[2, 2], [2, 1], [2, 0], [1, 0]]), goals)]
    env1 = [simulate(np.array([[1, 0], [1, 1], [2, 1], [2, 2], [2, 3], [1, 3]]), goals),  # 5 steps, then more
            simulate(np.array([[0, 0], [1, 0], [2, 0], [3, 0]]), goals)]
    schedule = [[(rec, t) for rec in recs for t in range(len(rec.episode))] for recs in (env0, env1)]
    buffer = make_buffer(2, size=32, n_envs=2, strategy="all")
    for step in range(6):
        add_step(buffer, [_At(*schedule[0][step]), _At(*schedule[1][step])], 0)
        if step == 2:  # env 0 finished, env 1 still running
            assert (buffer.relabel_counts[:3, 0] >= 0).all() and (buffer.relabel_counts[:3, 1] == -1).all()
        if step == 4:
            assert (buffer.relabel_counts[:5, 1] >= 0).all()
    assert (buffer.relabel_counts[:6, 0] >= 0).all()
    assert (buffer.relabel_counts[5, 1] == -1).all()  # env 1's second episode has just begun
    for rows, rec, env_idx in ((np.arange(3), env0[0], 0), (np.arange(3, 6), env0[1], 0),
                               (np.arange(5), env1[0], 1)):
        goals_used = buffer.relabel_goals[rows[0], env_idx]
        assert (buffer.relabel_goals[rows, env_idx] == goals_used).all()
        replayed = buffer.relabeler.replay(rec.episode, goals_used)
        steps = buffer.relabeler.reach_steps(rec.episode.observations["achieved"], goals_used)
        counts = buffer.relabeler.reach_counts(steps, len(rec.episode))
        np.testing.assert_array_equal(buffer.relabel_counts[rows, env_idx, 0], counts[:-1])
        np.testing.assert_array_equal(buffer.relabel_counts[rows, env_idx, 1], counts[1:])
        assert counts[len(replayed)] == 2
    # Sampling picks env indices like SB3; predict them by re-seeding np.random.
    rows = np.tile(np.arange(6), 20)
    np.random.seed(7)
    got = samples_np(buffer, rows)
    np.random.seed(7)
    envs = np.random.randint(0, 2, size=len(rows))
    counts = buffer.relabel_counts[rows, envs].astype(int)
    valid = (counts[:, 0] >= 0) & (counts[:, 0] < 2)
    assert valid.sum() > 10
    np.testing.assert_array_equal(got["rewards"][valid], (counts[:, 1] - counts[:, 0])[valid])
    np.testing.assert_array_equal(got["dones"][valid], (counts[:, 1] == 2)[valid])
    np.testing.assert_array_equal(got["achieved"], buffer.observations["achieved"][rows, envs])


class _At(Recorded):
    """A recorded episode viewed from step ``t`` (so ``add_step(..., 0)`` adds its step t)."""

    def __init__(self, rec: Recorded, t: int) -> None:
        ep = rec.episode
        view = Episode({key: value[t:] for key, value in ep.observations.items()}, ep.actions[t:],
                       ep.rewards[t:], ep.terminated[t:], ep.truncated[t:])
        super().__init__(view, rec.dones[t:], rec.timeouts[t:])


def test_pickle_round_trip_continues_identically() -> None:
    goals = np.array([[3, 3], [3, 0]])
    recs = [simulate(np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]]), goals),
            simulate(np.array([[1, 0], [2, 0], [2, 1], [2, 2], [1, 2]]), goals)]
    buffer = make_buffer(2, size=16, strategy="all", seed=5)
    add_episode(buffer, recs[0])
    add_episode(buffer, recs[1], steps=2)  # mid-episode at save time
    clone = pickle.loads(pickle.dumps(buffer))
    for buf in (buffer, clone):
        for t in range(2, 4):
            add_step(buf, [recs[1]], t)
        for _ in range(5):
            add_episode(buf, recs[0])
    np.testing.assert_array_equal(clone.relabel_counts, buffer.relabel_counts)
    np.testing.assert_array_equal(clone.relabel_goals, buffer.relabel_goals)
    assert (clone.relabel_counts[..., 0] >= 0).all()  # the episode running at pickling time included
    starts = clone.relabel_goals[[0, 4, 8, 12], 0]
    assert len({goals.tobytes() for goals in starts}) > 1  # the relabel generator state travelled along


# -- extractor -------------------------------------------------------------------------------------------


def test_key_select_extractor() -> None:
    space = make_space(2)
    with pytest.raises(ValueError, match=r"\['nope'\].*available keys.*'achieved'"):
        KeySelectExtractor(space, keys=["obs", "nope"])
    with pytest.raises(ValueError, match="Dict"):
        KeySelectExtractor(spaces.Box(0, 1, (3,)))
    extractor = KeySelectExtractor(space, keys=["obs", "goals"])
    assert extractor.features_dim == 3 + 4
    space.seed(0)
    draws = [space.sample() for _ in range(4)]
    batch = {key: th.as_tensor(np.stack([draw[key] for draw in draws])).float() for key in space.spaces}
    out = extractor(batch)
    batch["achieved"] = batch["achieved"] + 1.0
    assert th.equal(extractor(batch), out)
    batch["goals"] = batch["goals"] + 1.0
    assert not th.equal(extractor(batch), out)


# -- end to end with SB3 / sb3-contrib -------------------------------------------------------------------

POLICY_KWARGS = dict(features_extractor_class=KeySelectExtractor, features_extractor_kwargs=dict(keys=["obs", "goals"]))


def maze_venv(continuous: bool = False, n_envs: int = 2, seed: int = 0):
    return make_vec_env(lambda: MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=50, continuous=continuous),
                        n_envs=n_envs, seed=seed, vec_env_cls=DummyVecEnv)


def assert_learned(model, min_updates: int = 1) -> None:
    buffer = model.replay_buffer
    assert isinstance(buffer, HindsightInstructionReplayBuffer)
    assert (buffer.relabel_counts[: buffer.size(), :, 0] >= 0).any(axis=0).all()  # every sub-env relabeled
    values = model.logger.name_to_value
    assert values["train/n_updates"] >= min_updates
    assert all(np.isfinite(float(v)) for k, v in values.items() if k.startswith("train/"))


def test_dqn_end_to_end_and_save_load_resume(tmp_path) -> None:
    venv = maze_venv()
    kwargs = dict(replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(strategy="some"),
                  policy_kwargs=POLICY_KWARGS, learning_starts=200, buffer_size=5000, seed=0)
    model = DQN("MultiInputPolicy", venv, **kwargs)
    model.learn(3000)
    assert_learned(model, min_updates=300)
    buffer = model.replay_buffer
    assert buffer.relabel_goals.dtype == np.int32
    path = tmp_path / "buffer.pkl"
    model.save_replay_buffer(path)
    fresh = DQN("MultiInputPolicy", venv, **kwargs)
    fresh.load_replay_buffer(path)
    loaded = fresh.replay_buffer
    assert isinstance(loaded, HindsightInstructionReplayBuffer)
    assert loaded.pos == buffer.pos and loaded.full == buffer.full
    np.testing.assert_array_equal(loaded.relabel_counts, buffer.relabel_counts)
    np.testing.assert_array_equal(loaded.relabel_goals, buffer.relabel_goals)
    for key in buffer.observations:
        np.testing.assert_array_equal(loaded.observations[key], buffer.observations[key])
    relabeled_before = int((loaded.relabel_counts[..., 0] >= 0).sum())
    fresh.learn(600, reset_num_timesteps=False)
    assert fresh.logger.name_to_value["train/n_updates"] > 0
    assert int((loaded.relabel_counts[..., 0] >= 0).sum()) > relabeled_before
    assert fresh.replay_buffer is loaded


def test_sac_end_to_end_continuous() -> None:
    model = SAC("MultiInputPolicy", maze_venv(continuous=True),
                replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(strategy="all"),
                policy_kwargs=dict(POLICY_KWARGS, net_arch=[64, 64]), learning_starts=200, buffer_size=5000,
                batch_size=64, train_freq=4, seed=0)
    model.learn(2000)
    assert_learned(model, min_updates=100)
    assert isinstance(model.critic.features_extractor, KeySelectExtractor)
    assert isinstance(model.actor.features_extractor, KeySelectExtractor)


@pytest.mark.parametrize("algo", ["QRDQN", "TQC", "TD3", "DDPG"])
def test_other_algorithms_smoke(algo: str) -> None:
    from sb3_contrib import QRDQN, TQC

    cls = {"QRDQN": QRDQN, "TQC": TQC, "TD3": TD3, "DDPG": DDPG}[algo]
    continuous = algo != "QRDQN"
    policy_kwargs = dict(POLICY_KWARGS, net_arch=[32, 32])
    model = cls("MultiInputPolicy", maze_venv(continuous=continuous, n_envs=1),
                replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(strategy="some"),
                policy_kwargs=policy_kwargs, learning_starts=60, buffer_size=1000, batch_size=32, seed=0)
    model.learn(300)
    assert model.logger.name_to_value["train/n_updates"] > 0
    assert (model.replay_buffer.relabel_counts[:300, 0, 0] >= 0).any()
