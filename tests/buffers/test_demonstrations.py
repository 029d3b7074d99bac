"""Demonstrations in the replay buffer: stored apart, relabeled and served like online episodes, ``demo_ratio`` of
each batch, through wrap-around and save/load, from Episodes, imitation trajectories and DAgger round files."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from instruction_oracle import (
    GRID,
    Recorded,
    Stream,
    assert_serves_the_same,
    check_served,
    demo_stream,
    make_buffer,
    random_path,
    simulate,
)
from stable_baselines3 import DQN
from stable_baselines3.common.envs import BitFlippingEnv

from sb3_hir import HerReplayBuffer
from sb3_hir.buffers.demonstrations import stored_episodes
from sb3_hir.episodes import Episode

# One profile runs these (tests/conftest.py): the buffer runs on numpy, numba, torch and SB3, the same
# releases in both; gymnasium reaches it through spaces. The drop-in tests against SB3's run in both.
pytestmark = pytest.mark.once("dagger")


def recorded(rng: np.random.Generator, n: int, k: int = 2, fall_rate: float = 0.2) -> tuple[list[Recorded], dict]:
    recs, falls = [], {}
    for _ in range(n):
        fall = bool(rng.random() < fall_rate)
        rec = simulate(random_path(rng, int(rng.integers(2, 12))), rng.integers(0, GRID, size=(k, 2)), fall)
        falls[id(rec)] = fall
        recs.append(rec)
    return recs, falls


def fill_online(buffer, rng: np.random.Generator, steps: int) -> tuple[Stream, dict]:
    stream = Stream.into(buffer)
    falls: dict[int, bool] = {}
    current, ts = [], []
    for _ in range(buffer.n_envs):
        recs, fall = recorded(rng, 1)
        falls.update(fall)
        current.append(recs[0])
        ts.append(0)
    for _ in range(steps):
        stream.add(current, ts)
        for i in range(buffer.n_envs):
            ts[i] += 1
            if ts[i] == len(current[i].episode):
                recs, fall = recorded(rng, 1)
                falls.update(fall)
                current[i], ts[i] = recs[0], 0
    return stream, falls


@pytest.mark.parametrize("n_steps", [1, 3])
def test_served_demonstration_rows_are_replays_under_the_drawn_goals(n_steps: int) -> None:
    """Every row of a mixed batch equals the oracle: the online part its online episode, the demonstrations' part
    the replay of its demonstration under the drawn goals (or the demonstration as recorded)."""
    rng = np.random.default_rng(1)
    buffer = make_buffer(2, size=30, n_envs=2, relabel_ratio=0.7, n_steps=n_steps, gamma=0.9, demo_ratio=0.5,
                         hindsight_goals="all")
    demos, demo_falls = recorded(rng, 8)
    assert buffer.add_demonstrations([rec.episode for rec in demos]) == 8
    online, online_falls = fill_online(buffer, rng, 60)  # wraps the 15 rows per env four times
    demo_part = demo_stream(buffer, demos)
    relabeled = 0
    for _ in range(20):
        sample = buffer.sample(32)
        served = buffer.last_demonstration_info
        num_online = 32 - len(served.rows)
        assert len(served.rows) == 16 and len(buffer.last_sample_info.rows) == num_online
        check_served(online, sample, falls=online_falls)
        check_served(demo_part, sample, falls=demo_falls, offset=num_online)
        relabeled += int(served.relabeled.sum())
    assert relabeled > 0


def test_demo_ratio_is_the_served_share() -> None:
    rng = np.random.default_rng(2)
    buffer = make_buffer(2, size=400, n_envs=2, relabel_ratio=0.8, demo_ratio=0.3)
    buffer.add_demonstrations([rec.episode for rec in recorded(rng, 20)[0]])
    fill_online(buffer, rng, 150)
    counts = []
    for _ in range(200):
        buffer.sample(100)
        counts.append(len(buffer.last_demonstration_info.rows))
    # floor(30.0) plus nothing: exactly 30 each time; at 0.255 either 25 or 26, 26 about half the time.
    assert set(counts) == {30}
    assert buffer.served_demo_share == pytest.approx(0.3)
    buffer.demo_ratio = 0.255
    counts = []
    for _ in range(400):
        buffer.sample(100)
        counts.append(len(buffer.last_demonstration_info.rows))
    assert set(counts) == {25, 26} and abs(np.mean(counts) - 25.5) < 0.15
    with pytest.raises(ValueError, match=r"demo_ratio must be a number in \[0, 1\]"):
        buffer.demo_ratio = 1.5


def test_online_empty_serves_demonstrations_only_and_ratio_zero_warns() -> None:
    rng = np.random.default_rng(3)
    buffer = make_buffer(1, size=50, demo_ratio=0.25)
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(8)
    buffer.add_demonstrations([rec.episode for rec in recorded(rng, 3, k=1)[0]])
    sample = buffer.sample(8)
    assert sample.actions.shape[0] == 8 and buffer.served_demo_share == 1.0
    unused = make_buffer(1, size=50)
    with pytest.warns(UserWarning, match="demo_ratio is 0"):
        unused.add_demonstrations([rec.episode for rec in recorded(rng, 1, k=1)[0]])
    with pytest.raises(ValueError, match="empty"):
        unused.sample(8)


def assert_same_episode(a: Episode, b: Episode) -> None:
    assert a.observations.keys() == b.observations.keys()
    for key in a.observations:
        np.testing.assert_array_equal(a.observations[key], b.observations[key])
    np.testing.assert_array_equal(a.actions.reshape(len(a)), b.actions.reshape(len(b)))
    np.testing.assert_array_equal(a.rewards, b.rewards)
    assert a.terminated[-1] == b.terminated[-1] and a.truncated[-1] == b.truncated[-1]


def test_demonstrations_survive_wrap_around_growth_reset_and_pickling() -> None:
    rng = np.random.default_rng(4)
    buffer = make_buffer(2, size=24, n_envs=2, demo_ratio=0.5)
    first, _ = recorded(rng, 3)
    second, _ = recorded(rng, 40)  # a second call that outgrows the first capacity
    buffer.add_demonstrations([rec.episode for rec in first])
    capacity = buffer.demonstrations.source.storage.buffer_size
    buffer.add_demonstrations([rec.episode for rec in second])
    assert buffer.demonstrations.source.storage.buffer_size > capacity and len(buffer.demonstrations) == 43
    fill_online(buffer, rng, 100)  # the online part wraps eight times
    buffer.reset()  # SB3's reset empties the online part only
    fill_online(buffer, rng, 10)
    kept = stored_episodes(buffer.demonstrations.source)
    assert len(kept) == 43
    for rec, episode in zip(first + second, kept, strict=True):
        assert_same_episode(rec.episode, episode)
    copy = pickle.loads(pickle.dumps(buffer))
    assert copy.demo_ratio == 0.5 and len(copy.demonstrations) == 43
    for one in (buffer, copy):
        np.random.seed(7)
        one.rng = np.random.default_rng(7)
    assert_serves_the_same(buffer, copy, seed=9)


def test_sources_imitation_trajectories_and_dagger_round_files(tmp_path) -> None:
    pytest.importorskip("imitation")
    from sb3_hir.dagger.storage import new_round_file, save_trajectories
    from sb3_hir.dagger.trajectory import DAggerTrajectory

    rng = np.random.default_rng(5)
    recs, _ = recorded(rng, 4, fall_rate=0.0)
    buffer = make_buffer(2, size=50, demo_ratio=0.5)
    assert buffer.add_demonstrations(recs[0].episode.to_trajectory()) == 1
    # DAgger: the labels are the expert's, the executed actions moved the env; one episode cut by its round's end.
    dagger = []
    for i, rec in enumerate(recs[1:]):
        traj = rec.episode.to_trajectory()
        executed = (rec.episode.actions + 1) % 5
        dagger.append(DAggerTrajectory(obs=traj.obs, acts=rec.episode.actions, infos=None, terminal=traj.terminal,
                                       rews=traj.rews, truncated=bool(rec.episode.truncated[-1]),
                                       complete=i != 2, executed_acts=executed,
                                       learner_mask=np.ones(len(executed), bool)))
    round_dir = tmp_path / "scratch" / "demos" / "round-000"
    for round_num, trajs in ((0, dagger[:2]), (1, dagger[2:])):
        directory = tmp_path / "scratch" / "demos" / f"round-{round_num:03d}"
        directory.mkdir(parents=True)
        for traj in trajs:
            save_trajectories(new_round_file(directory, rng), [traj])
    assert buffer.add_demonstrations(tmp_path / "scratch") == 3
    kept = stored_episodes(buffer.demonstrations.source)
    assert_same_episode(kept[0], recs[0].episode)
    for rec, traj, episode in zip(recs[1:], dagger, kept[1:], strict=True):
        np.testing.assert_array_equal(episode.actions[:, 0], traj.executed_acts)
        np.testing.assert_array_equal(episode.observations["achieved"], rec.episode.observations["achieved"])
    assert kept[3].truncated[-1] and not kept[3].terminated[-1]  # the cut episode ends as truncated
    assert buffer.add_demonstrations(round_dir) == 2 and len(buffer.demonstrations) == 6
    with pytest.raises(ValueError, match="holds no DAgger round files"):
        buffer.add_demonstrations(tmp_path)


def test_bad_demonstrations_raise_clear_errors_and_add_nothing() -> None:
    rng = np.random.default_rng(6)
    buffer = make_buffer(2, size=50, demo_ratio=0.5)
    good = recorded(rng, 1)[0][0].episode
    no_achieved = Episode({k: v for k, v in good.observations.items() if k != "achieved"}, good.actions,
                          good.rewards, good.terminated, good.truncated)
    with pytest.raises(ValueError, match=r"demonstrations\[1\] lacks the keys \['achieved'\].*achieved goals"):
        buffer.add_demonstrations([good, no_achieved])
    assert len(buffer.demonstrations) == 0 and buffer.demonstrations.source is None
    extra = Episode({**good.observations, "other": np.zeros((len(good) + 1, 2))}, good.actions, good.rewards,
                    good.terminated, good.truncated)
    with pytest.raises(ValueError, match=r"has keys the buffer does not store: \['other'\]"):
        buffer.add_demonstrations(extra)
    wrong = Episode({**good.observations, "goals": good.observations["goals"][:, :1]}, good.actions, good.rewards,
                    good.terminated, good.truncated)
    with pytest.raises(ValueError, match=r"observations\['goals'\] must have shape \(T\+1, \*\(2, 2\)\)"):
        buffer.add_demonstrations(wrong)
    bad_actions = Episode(good.observations, good.actions + 7, good.rewards, good.terminated, good.truncated)
    with pytest.raises(ValueError, match=r"actions must hold values in \[0, 4\] of Discrete\(5\)"):
        buffer.add_demonstrations(bad_actions)
    with pytest.raises(ValueError, match="must be an Episode, an imitation TrajectoryWithRew"):
        buffer.add_demonstrations([good, {"obs": 1}])
    with pytest.raises(ValueError, match="neither a DAgger round file nor a directory"):
        buffer.add_demonstrations("/nonexistent/demos")
    imitation_types = pytest.importorskip("imitation.data.types")
    plain = imitation_types.Trajectory(obs=imitation_types.DictObs(good.observations), acts=good.actions,
                                       infos=None, terminal=True)
    with pytest.raises(ValueError, match="Trajectory without rewards"):
        buffer.add_demonstrations([plain])
    flat = imitation_types.TrajectoryWithRew(obs=good.observations["obs"], acts=good.actions, infos=None,
                                             terminal=True, rews=good.rewards)
    with pytest.raises(ValueError, match="must be an imitation DictObs"):
        buffer.add_demonstrations([flat])
    assert len(buffer.demonstrations) == 0
    with pytest.raises(ValueError, match=r"demo_ratio must be a number in \[0, 1\]"):
        make_buffer(2, demo_ratio=-0.1)


def bit_flipping_demos(env: BitFlippingEnv, n: int) -> list[Episode]:
    """A scripted expert: flip the first bit that differs from the goal."""

    def flip_first_difference(obs: dict[str, np.ndarray]) -> int:
        differ = np.flatnonzero(obs["achieved_goal"] != obs["desired_goal"])
        return int(differ[0]) if len(differ) else 0

    return [Episode.record(env, flip_first_difference, seed=seed, max_steps=env.max_steps) for seed in range(n)]


def test_her_drop_in_with_dqn_trains_on_demonstrations_and_saves_them(tmp_path) -> None:
    """GoalEnv mode through SB3: DQN with the drop-in HER buffer, demonstrations served, kept by save/load."""
    env = BitFlippingEnv(n_bits=6, continuous=False, max_steps=6)
    model = DQN("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, learning_starts=50,
                replay_buffer_kwargs=dict(demo_ratio=0.25, n_steps=2), gamma=0.9, seed=0)
    demos = bit_flipping_demos(BitFlippingEnv(n_bits=6, continuous=False, max_steps=6), 10)
    model.replay_buffer.add_demonstrations(demos)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.learn(400)
    buffer = model.replay_buffer
    assert buffer.num_served > 0 and abs(buffer.served_demo_share - 0.25) < 0.01
    served = buffer.last_demonstration_info
    assert served.relabeled.any() and not served.relabeled.all()
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    model.replay_buffer = None
    model.load_replay_buffer(tmp_path / "buffer.pkl")
    loaded = model.replay_buffer
    assert loaded.env is model.get_env() and len(loaded.demonstrations) == 10
    for rec, episode in zip(demos, stored_episodes(loaded.demonstrations.source), strict=True):
        assert_same_episode(rec, episode)
    model.learn(100, reset_num_timesteps=False)
