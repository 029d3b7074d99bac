"""HindsightInstructionReplayBuffer: storage, relabeling and sampling semantics, and end-to-end use by SB3."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from instruction_oracle import (
    GRID,
    MASK,
    Recorded,
    Stream,
    add_episode,
    add_step,
    check_sample,
    make_buffer,
    make_space,
    random_path,
    simulate,
)
from stable_baselines3 import DDPG, DQN, SAC, TD3
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.extractors import KeySelectExtractor
from sb3_hir.goals import ExactGoalSpec, ToleranceGoalSpec
from sb3_hir.relabel import HindsightInstructionRelabeler, InstructionRelabeler

# One profile runs these (tests/conftest.py): the buffer runs on numpy, numba, torch and SB3, the same
# releases in both; gymnasium reaches it through spaces. The drop-in tests against SB3's run in both.
pytestmark = pytest.mark.once("dagger")

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
    with pytest.raises(ValueError, match="optimize_memory_usage must be a bool"):
        HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), optimize_memory_usage=1)
    for ratio in (-0.1, 1.5, "0.5"):
        with pytest.raises(ValueError, match="relabel_ratio"):
            HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), relabel_ratio=ratio)
    with pytest.raises(ValueError, match="hindsight-instruction"):
        HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), relabeler="no-such-relabeler")
    with pytest.raises(ValueError, match=r"hindsight_goals \(the relabeler's strategy\) must be one of"):
        HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), hindsight_goals="most")
    with pytest.raises(ValueError, match="num_goals"):
        HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2),
                                         relabeler=HindsightInstructionRelabeler(3))
    for kwargs, named in ((dict(num_goals=2), "num_goals"), (dict(goal_spec="tolerance"), "goal_spec")):
        with pytest.raises(ValueError, match=rf"relabeler_kwargs must not set {named}: the buffer derives"):
            HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), relabeler_kwargs=kwargs)


def test_accepts_instances_and_small_bookkeeping_dtype() -> None:
    relabeler = HindsightInstructionRelabeler(2, strategy="all", goal_spec=ExactGoalSpec())
    buffer = HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), relabeler=relabeler)
    assert buffer.relabeler is relabeler and buffer.batched_draws and buffer.exact_index
    assert buffer._index.meta.dtype == np.int16  # episodes cannot outgrow 10 rows
    big = HindsightInstructionReplayBuffer(40_000, make_space(2), spaces.Discrete(2), relabeler=relabeler)
    assert big._index.meta.dtype == np.int32
    for name, value in (("goal_step", "final"), ("n_steps", 0), ("gamma", 1.5), ("max_redraws", -1)):
        with pytest.raises(ValueError, match=name):
            HindsightInstructionReplayBuffer(10, make_space(2), spaces.Discrete(2), **{name: value})


def test_plugin_relabeler_without_strategy_by_name() -> None:
    # "final-goal" (plugins/sb3-hir-example) takes no strategy: the buffer must not force one on it.
    buffer = make_buffer(2, relabeler="final-goal")
    assert type(buffer.relabeler).__name__ == "FinalGoalRelabeler" and not buffer.batched_draws
    path = np.array([[0, 0], [0, 1], [1, 1], [1, 2]])
    rec = simulate(path, np.array([[3, 3], [3, 0]]))
    stream = Stream.into(buffer)
    for t in range(3):
        stream.add([rec], [t])
    assert check_sample(stream, 32).all()
    # The final cell became goal 1: the last transition earns it, the episode does not end (k = 2).
    info = buffer.last_sample_info
    np.testing.assert_array_equal(info.goals[:, 0], np.tile([1, 2], (32, 1)))
    with pytest.raises(TypeError, match=r"hindsight_goals='all' is passed to the relabeler as its strategy, which "
                                        r"relabeler 'final-goal' does not take"):
        make_buffer(2, relabeler="final-goal", hindsight_goals="all")


def test_relabeler_instances_must_offer_the_buffer_api() -> None:
    with pytest.raises(ValueError, match=r"relabeler.*lacks.*relabel_goals"):
        make_buffer(2, relabeler=object())


# -- semantics: every served transition is the replay of its episode under its own fresh draw -----------


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(1, 3),
    n_envs=st.integers(1, 2),
    size=st.integers(6, 30),
    lengths=st.lists(st.integers(1, 12), min_size=2, max_size=10),
    strategy=st.sampled_from(["some", "all", "none"]),
    selection=st.sampled_from(["future", "episode"]),
    n_steps=st.integers(1, 3),
    tolerance=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_property_served_transitions_are_replays(k, n_envs, size, lengths, strategy, selection, n_steps,
                                                tolerance, seed) -> None:
    """Random episodes streamed through a small circular buffer (wrap-around, overwritten and running
    episodes, falls, n_envs > 1), sampled after every step: each served row equals the oracle."""
    rng = np.random.default_rng(seed)
    spec = ToleranceGoalSpec(tolerance=1.0) if tolerance else ExactGoalSpec()
    buffer = make_buffer(k, size=size, n_envs=n_envs, hindsight_goals=strategy, goal_step=selection,
                         n_steps=n_steps, gamma=0.9, goal_spec=spec, relabel_ratio=0.7, seed=seed)
    assert buffer.exact_index == (not tolerance)
    stream = Stream.into(buffer)
    falls: dict[int, bool] = {}

    def new_episode() -> Recorded:
        fall = bool(rng.random() < 0.2)
        rec = simulate(random_path(rng, int(rng.choice(lengths))), rng.integers(0, GRID, size=(k, 2)), fall, spec)
        falls[id(rec)] = fall
        return rec

    current = [new_episode() for _ in range(n_envs)]
    steps = [0] * n_envs
    relabeled = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # episodes longer than the buffer warn
        for _ in range(3 * size):
            stream.add(current, steps)
            for i in range(n_envs):
                steps[i] += 1
                if steps[i] == len(current[i].episode):
                    current[i], steps[i] = new_episode(), 0
            relabeled += int(check_sample(stream, 16, spec, falls).sum())
    if strategy != "none" and max(lengths) <= size // n_envs:
        assert relabeled > 0


def test_relabel_ratio_is_the_share_served_relabeled() -> None:
    rng = np.random.default_rng(0)
    buffer = make_buffer(2, size=4000, n_envs=2, hindsight_goals="all", relabel_ratio=0.8)
    stream = Stream.into(buffer)
    for _ in range(150):
        recs = [simulate(random_path(rng, 12), rng.integers(0, GRID, size=(2, 2))) for _ in range(2)]
        for t in range(min(len(r.episode) for r in recs)):  # the longer one is cut: add() closes it
            stream.add(recs, [t, t])
    shares = []
    for _ in range(100):
        buffer.sample(256)
        shares.append(buffer.last_sample_info.relabeled.mean())
    # Binomial(25600, 0.8): std 0.0025; the running episodes are redrawn, not served recorded.
    assert abs(np.mean(shares) - 0.8) < 0.012
    assert buffer.served_relabeled_share == pytest.approx(np.mean(shares))
    for ratio in (0.0, 0.3):
        buffer.relabel_ratio = ratio
        buffer.sample(2000)
        assert abs(buffer.last_sample_info.relabeled.mean() - ratio) < 0.05


@pytest.mark.parametrize("n_envs", [1, 3])
def test_recorded_rows_draw_as_dict_replay_buffer(n_envs: int) -> None:
    """Rows served as recorded are the rows SB3's DictReplayBuffer draws from the same np.random state, and leave
    np.random where it leaves it (one sub-env included, whose sub-env draw ours skips)."""
    from stable_baselines3.common.buffers import DictReplayBuffer

    rng = np.random.default_rng(1)
    buffer = make_buffer(1, size=300, n_envs=n_envs, relabel_ratio=0.0)
    stream = Stream.into(buffer)
    for _ in range(8):
        recs = [simulate(random_path(rng, 12), rng.integers(0, GRID, size=(1, 2))) for _ in range(n_envs)]
        for t in range(min(len(r.episode) for r in recs)):
            stream.add(recs, [t] * n_envs)
    plain = DictReplayBuffer(buffer.buffer_size * n_envs, buffer.observation_space, buffer.action_space, device="cpu",
                             n_envs=n_envs)
    upper = buffer.buffer_size if buffer.full else buffer.pos
    for name in ("observations", "next_observations"):
        for key, value in getattr(plain, name).items():
            value[:upper] = getattr(buffer, name)[key][:upper]
    plain.actions[:upper], plain.rewards[:upper] = buffer.actions[:upper], buffer.rewards[:upper]
    plain.dones[:upper], plain.timeouts[:upper] = buffer.dones[:upper], buffer.timeouts[:upper]
    plain.pos, plain.full = buffer.pos, buffer.full
    for seed in range(3):
        np.random.seed(seed)
        ours = buffer.sample(64)
        after_ours = np.random.get_state()
        np.random.seed(seed)
        theirs = plain.sample(64)
        after_theirs = np.random.get_state()
        np.testing.assert_array_equal(after_ours[1], after_theirs[1])
        assert after_ours[2:] == after_theirs[2:]
        for key in ours.observations:
            np.testing.assert_array_equal(ours.observations[key].numpy(), theirs.observations[key].numpy())
            np.testing.assert_array_equal(ours.next_observations[key].numpy(), theirs.next_observations[key].numpy())
        for name in ("actions", "rewards", "dones"):
            np.testing.assert_array_equal(getattr(ours, name).numpy(), getattr(theirs, name).numpy())


def test_future_goals_come_from_at_or_after_the_transition() -> None:
    """k = 1, "all", future: HER's rule; the goal is a cell achieved after t, first reached after t."""
    rng = np.random.default_rng(1)
    buffer = make_buffer(1, size=3000, hindsight_goals="all", relabel_ratio=1.0)
    stream = Stream.into(buffer)
    recs = []
    for _ in range(100):
        rec = simulate(random_path(rng, 15), np.array([[9, 9]]))  # never reached: every draw is hindsight
        recs.append(rec)
        for t in range(len(rec.episode)):
            stream.add([rec], [t])
    relabeled = check_sample(stream, 512)
    assert relabeled.mean() > 0.95
    info = buffer.last_sample_info
    hindsight = 0
    for b in np.flatnonzero(relabeled):
        rec, t = stream.owner[(int(info.rows[b]), 0)]
        path = rec.episode.observations["achieved"][:, 0]
        new_after_t = [u for u in range(t + 1, len(path)) if not (path[1 : t + 1] == path[u]).all(axis=1).any()]
        if (info.goals[b, 0] == [9, 9]).all():
            assert not new_after_t  # the recorded goal is kept only when no value is first reached after t
            continue
        hindsight += 1
        hits = np.flatnonzero((path[1:] == info.goals[b, 0]).all(axis=1)) + 1
        assert hits.min() >= t + 1  # first reached after the transition
    assert hindsight > 0.8 * relabeled.sum()


@pytest.mark.parametrize("tolerance", [False, True])
@pytest.mark.parametrize("selection", ["future", "episode"])
def test_one_goal_draws_are_hers_rule_conditioned_on_admissibility(tolerance: bool, selection: str) -> None:
    """k = 1 ("all"): the transition is uniform over those admitting a hindsight goal, and the goal is the value
    of a step u drawn uniformly from the steps whose value is first reached after t (HER's future rule,
    conditioned on the relabeled episode containing t); exact index and pairwise (tolerance) path alike."""
    spec = ToleranceGoalSpec(tolerance=1.0) if tolerance else ExactGoalSpec()
    buffer = make_buffer(1, size=200, hindsight_goals="all", goal_spec=spec, goal_step=selection)
    assert buffer.single_index
    rng = np.random.default_rng(3)
    recs = [simulate(random_path(rng, 12), np.array([[9, 9]]), spec=spec) for _ in range(3)]
    stream = Stream.into(buffer)
    for rec in recs:
        for t in range(len(rec.episode)):
            stream.add([rec], [t])
    expected: dict[tuple[int, int, tuple[int, ...]], float] = {}
    pairs: list[tuple[int, int, list[int]]] = []
    for e, rec in enumerate(recs):
        path = rec.episode.observations["achieved"][:, 0]
        for t in range(len(rec.episode)):
            fresh = [u for u in range(t + 1, len(path))
                     if not any(bool(spec.reached(path[s], path[u])) for s in range(1, t + 1))]
            if fresh:
                pairs.append((e, t, fresh))
    for e, t, fresh in pairs:
        path = recs[e].episode.observations["achieved"][:, 0]
        for u in fresh:
            key = (e, t, tuple(int(v) for v in path[u]))
            expected[key] = expected.get(key, 0.0) + 1.0 / len(pairs) / len(fresh)
    counts: dict[tuple[int, int, tuple[int, ...]], int] = {}
    total = 0
    for _ in range(30):
        buffer.sample(2000)
        info = buffer.last_sample_info
        for b in range(2000):
            rec, t = stream.owner[(int(info.rows[b]), 0)]
            key = (next(i for i, r in enumerate(recs) if r is rec), t, tuple(int(v) for v in info.goals[b, 0]))
            counts[key] = counts.get(key, 0) + 1
            total += 1
    assert set(counts) <= set(expected)
    worst = max(abs(counts.get(key, 0) / total - p) for key, p in expected.items())
    assert worst < 0.004, worst


def test_episode_selection_draws_from_the_whole_episode() -> None:
    rng = np.random.default_rng(2)
    buffer = make_buffer(2, size=3000, hindsight_goals="all", relabel_ratio=1.0, goal_step="episode")
    stream = Stream.into(buffer)
    for _ in range(100):
        rec = simulate(random_path(rng, 15), np.array([[9, 9], [9, 8]]))
        for t in range(len(rec.episode)):
            stream.add([rec], [t])
    relabeled = check_sample(stream, 512)
    assert relabeled.mean() > 0.9  # inadmissible draws (the instruction completed before t) are redrawn
    goals = buffer.sample(512).observations["goals"].numpy()[buffer.last_sample_info.relabeled]
    assert (goals[:, 0] == MASK).all(axis=-1).mean() > 0.2  # transitions past the first hindsight goal too


def test_running_and_overwritten_episodes_are_never_relabeled() -> None:
    goals = np.array([[3, 3], [3, 0]])
    recs = [simulate(p, goals) for p in (np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]]),
                                         np.array([[1, 0], [2, 0], [2, 1], [2, 2], [1, 2]]),
                                         np.array([[0, 3], [1, 3], [2, 3], [2, 2], [2, 1]]))]
    buffer = make_buffer(2, size=7, hindsight_goals="all")
    stream = Stream.into(buffer)
    for t in range(3):
        stream.add([recs[0]], [t])
    for _ in range(20):  # nothing finished: everything served as recorded
        assert not check_sample(stream, 16).any()
    stream.add([recs[0]], [3])
    assert check_sample(stream, 64).all()
    for t in range(4):  # rows 4, 5, 6, 0: wraps and overwrites the first episode's first row
        stream.add([recs[1]], [t])
    for _ in range(20):
        relabeled = check_sample(stream, 32)
        info = buffer.last_sample_info
        assert set(info.episode_start[relabeled].tolist()) <= {4}  # episode 0 lost its start: recorded only
        assert relabeled.all()


def test_episode_longer_than_buffer_is_served_as_recorded() -> None:
    path = np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2], [2, 1], [1, 1]])
    rec = simulate(path, np.array([[3, 3], [3, 0]]))
    buffer = make_buffer(2, size=4, hindsight_goals="all")
    stream = Stream.into(buffer)
    with pytest.warns(UserWarning, match="longer than the replay buffer"):
        for t in range(len(rec.episode)):
            stream.add([rec], [t])
    assert not check_sample(stream, 32).any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        add_episode(buffer, rec)  # warned once only


def test_n_step_returns_by_hand() -> None:
    # Own goals reached at steps 2 and 4; the 4th transition completes the instruction (terminal).
    path = np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]])
    rec = simulate(path, np.array([[1, 1], [2, 2]]))
    assert rec.episode.rewards.tolist() == [0.0, 1.0, 0.0, 1.0] and rec.episode.terminated[-1]
    for ratio, strategy in ((0.0, "some"), (1.0, "none")):  # recorded n-step, and replay under its own goals
        buffer = make_buffer(2, hindsight_goals=strategy, relabel_ratio=ratio, n_steps=3, gamma=0.5)
        add_episode(buffer, rec)
        sample = buffer._get_samples(np.array([0, 2])) if ratio == 0.0 else None
        if sample is None:
            while True:
                sample = buffer.sample(64)
                t = buffer.last_sample_info.t
                if {0, 2} <= set(t.tolist()):
                    break
            order = [int(np.flatnonzero(t == 0)[0]), int(np.flatnonzero(t == 2)[0])]
        else:
            order = [0, 1]
        rewards = sample.rewards.numpy()[order, 0]
        dones = sample.dones.numpy()[order, 0]
        discounts = sample.discounts.numpy()[order, 0]
        # t=0: 0 + 0.5 * 1 + 0.25 * 0 over 3 steps, bootstrap from step 3; t=2: 0 + 0.5 * 1, terminal after 2.
        assert rewards.tolist() == [0.5, 0.5]
        assert dones.tolist() == [0.0, 1.0]
        assert discounts.tolist() == [0.125, 0.25]
        next_obs = sample.next_observations["obs"].numpy()
        np.testing.assert_array_equal(next_obs[order[0]], rec.episode.observations["obs"][3])


def test_a_new_learn_call_closes_the_spliced_episode() -> None:
    goals = np.array([[3, 3], [3, 0]])
    first = simulate(np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]]), goals)
    second = simulate(np.array([[2, 2], [2, 1], [2, 0], [1, 0]]), goals)
    buffer = make_buffer(2, hindsight_goals="all")
    stream = Stream.into(buffer)
    for t in range(2):
        stream.add([first], [t])
    # learn() resets the env: the next observation does not continue the stored episode.
    for t in range(len(second.episode)):
        stream.add([second], [t])
    assert buffer.dones[1, 0] == 1.0 and buffer.timeouts[1, 0] == 1.0  # closed as truncated
    assert buffer._index.meta[0, 0, buffer._index.field["len"]] == 2
    seen = set()
    for _ in range(30):
        sample = buffer.sample(32)
        info = buffer.last_sample_info
        for b in np.flatnonzero(info.relabeled):
            start, t = int(info.episode_start[b]), int(info.t[b])
            assert (start, t) in {(0, 0), (0, 1), (2, 0), (2, 1), (2, 2)}
            seen.add(start)
            if start == 0 and t == 1:  # the cut episode bootstraps from its last stored observation
                assert sample.next_observations["obs"].numpy()[b, 0] == 2.0
    assert seen == {0, 2}


def test_splice_with_sb3_learn_reset() -> None:
    """Two learn() calls with reset_num_timesteps=True: every relabeled episode is one contiguous env episode."""
    venv = maze_venv(n_envs=2)
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=HindsightInstructionReplayBuffer,
                replay_buffer_kwargs=dict(hindsight_goals="all"), policy_kwargs=POLICY_KWARGS, learning_starts=50,
                buffer_size=2000, seed=0)
    model.learn(130)
    cut = model.replay_buffer.pos - 1
    model.learn(130)  # resets the env mid-episode
    buffer = model.replay_buffer
    field = buffer._index.field
    for env_idx in range(2):
        rows = np.flatnonzero(buffer._index.meta[: buffer.pos, env_idx, field["len"]] > 0)
        for row in rows:
            t = buffer._index.meta[row, env_idx, field["t"]]
            if t > 0:  # consecutive rows of one episode continue each other
                for key in buffer.observations:
                    np.testing.assert_array_equal(buffer.observations[key][row, env_idx],
                                                  buffer.next_observations[key][row - 1, env_idx])
    assert (buffer.timeouts[cut] == 1.0).all() and (buffer.dones[cut] == 1.0).all()  # both sub-envs cut there


class _FinalCell(InstructionRelabeler):
    """A relabeler with only the per-episode hook (no batched draws): the final cell becomes the next goal."""

    def relabel_goals(self, episode, rng):
        goals = np.array(episode.observations["goals"][0], copy=True)
        steps = self.reach_steps(episode.observations["achieved"], goals)
        n = int((steps > 0).sum())
        if n >= self.num_goals:
            return None
        goals[n] = episode.observations["achieved"][-1, 0]
        return goals


def test_per_episode_relabelers_are_served_from_stored_draws() -> None:
    rng = np.random.default_rng(3)
    buffer = make_buffer(2, size=200, relabeler=_FinalCell(2), relabel_ratio=1.0)
    assert not buffer.batched_draws
    stream = Stream.into(buffer)
    for _ in range(10):
        rec = simulate(random_path(rng, 8), np.array([[9, 9], [9, 8]]))
        for t in range(len(rec.episode)):
            stream.add([rec], [t])
    relabeled = check_sample(stream, 128)
    info = buffer.last_sample_info
    for b in np.flatnonzero(relabeled):  # the final cell is the drawn goal 0
        rec, _ = stream.owner[(int(info.rows[b]), 0)]
        np.testing.assert_array_equal(info.goals[b, 0], rec.episode.observations["achieved"][-1, 0])


def test_pickle_round_trip_continues_identically() -> None:
    goals = np.array([[3, 3], [3, 0]])
    recs = [simulate(np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]]), goals),
            simulate(np.array([[1, 0], [2, 0], [2, 1], [2, 2], [1, 2]]), goals)]
    buffer = make_buffer(2, size=16, hindsight_goals="all", seed=5)
    add_episode(buffer, recs[0])
    add_episode(buffer, recs[1], steps=2)  # mid-episode at save time
    clone = pickle.loads(pickle.dumps(buffer))
    served = []
    for buf in (buffer, clone):
        for t in range(2, 4):
            add_step(buf, [recs[1]], t)
        add_episode(buf, recs[0])
        np.random.seed(0)
        sample = buf.sample(64)
        served.append((sample.observations["goals"].numpy(), sample.rewards.numpy(), buf.last_sample_info.t))
    np.testing.assert_array_equal(clone._index.meta, buffer._index.meta)
    for x, y in zip(*served, strict=True):
        np.testing.assert_array_equal(x, y)
    # The episode running at pickling time included.
    assert (clone._index.meta[:12, 0, clone._index.field["len"]] > 0).all()


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
    assert (buffer._index.meta[: buffer.size(), :, buffer._index.field["len"]] > 0).any(axis=0).all()  # every sub-env
    assert buffer.served_relabeled_share > 0.5
    values = model.logger.name_to_value
    assert values["train/n_updates"] >= min_updates
    assert all(np.isfinite(float(v)) for k, v in values.items() if k.startswith("train/"))


def test_dqn_end_to_end_and_save_load_resume(tmp_path) -> None:
    venv = maze_venv()
    kwargs = dict(replay_buffer_class=HindsightInstructionReplayBuffer,
                  replay_buffer_kwargs=dict(hindsight_goals="some"), policy_kwargs=POLICY_KWARGS, learning_starts=200,
                  buffer_size=5000, seed=0)
    model = DQN("MultiInputPolicy", venv, **kwargs)
    model.learn(3000)
    assert_learned(model, min_updates=300)
    buffer = model.replay_buffer
    path = tmp_path / "buffer.pkl"
    model.save_replay_buffer(path)
    fresh = DQN("MultiInputPolicy", venv, **kwargs)
    fresh.load_replay_buffer(path, truncate_last_traj=False)  # as stored: the running episodes stay open
    loaded = fresh.replay_buffer
    assert isinstance(loaded, HindsightInstructionReplayBuffer)
    assert loaded.pos == buffer.pos and loaded.full == buffer.full
    np.testing.assert_array_equal(loaded._index.meta, buffer._index.meta)
    for key in buffer.observations:
        np.testing.assert_array_equal(loaded.observations[key], buffer.observations[key])
    finished_before = int((loaded._index.meta[..., loaded._index.field["len"]] > 0).sum())
    fresh.learn(600, reset_num_timesteps=False)
    assert fresh.logger.name_to_value["train/n_updates"] > 0
    assert int((loaded._index.meta[..., loaded._index.field["len"]] > 0).sum()) > finished_before
    assert fresh.replay_buffer is loaded


def test_sac_end_to_end_continuous() -> None:
    model = SAC("MultiInputPolicy", maze_venv(continuous=True),
                replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(hindsight_goals="all"),
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
                replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(hindsight_goals="some"),
                policy_kwargs=policy_kwargs, learning_starts=60, buffer_size=1000, batch_size=32, seed=0)
    model.learn(300)
    assert model.logger.name_to_value["train/n_updates"] > 0
    assert model.replay_buffer.served_relabeled_share > 0.5
