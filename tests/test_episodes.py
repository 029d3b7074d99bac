"""Episode: shape validation and the round trip through imitation's TrajectoryWithRew."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.episodes import Episode
from sb3_hir.extras import has
from sb3_hir.goals import ExactGoalSpec
from sb3_hir.relabel import HindsightInstructionRelabeler

if has("imitation"):  # the 'dagger' extra; tests using it are marked dagger
    from imitation.data import rollout
    from imitation.data.types import DictObs, TrajectoryWithRew



def make_episode(length: int = 4, end: str = "terminated", infos: bool = True, seed: int = 0) -> Episode:
    rng = np.random.default_rng(seed)
    terminated = np.zeros(length, dtype=bool)
    truncated = np.zeros(length, dtype=bool)
    if end in ("terminated", "both"):
        terminated[-1] = True
    if end in ("truncated", "both"):
        truncated[-1] = True
    return Episode(
        observations={
            "obs": rng.random((length + 1, 7), dtype=np.float32),
            "goals": rng.integers(-1, 5, size=(length + 1, 3, 2)).astype(np.int32),
            "achieved": rng.integers(0, 5, size=(length + 1, 1, 2)).astype(np.int32),
        },
        actions=rng.integers(0, 5, size=length),
        rewards=rng.random(length, dtype=np.float32),
        terminated=terminated,
        truncated=truncated,
        infos=[{"step": t} for t in range(length)] if infos else None,
    )


def assert_same(a: Episode, b: Episode) -> None:
    assert a.observations.keys() == b.observations.keys()
    for key in a.observations:
        np.testing.assert_array_equal(a.observations[key], b.observations[key])
        assert a.observations[key].dtype == b.observations[key].dtype
    for name in ("actions", "rewards", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert getattr(a, name).dtype == getattr(b, name).dtype, name
    assert a.infos == b.infos


def test_construction_coerces_dtypes_and_measures_length() -> None:
    episode = Episode({"x": np.zeros((3, 2))}, actions=[1, 2], rewards=[0, 1], terminated=[0, 1], truncated=[0, 0])
    assert len(episode) == 2
    assert episode.rewards.dtype == np.float32 and episode.terminated.dtype == bool
    assert episode.truncated.dtype == bool and episode.actions.shape == (2,)
    assert episode.episode_return == 1.0
    assert episode.infos is None


def test_instruction_is_the_first_goal_observation() -> None:
    episode = make_episode()
    np.testing.assert_array_equal(episode.instruction(), episode.observations["goals"][0])
    with pytest.raises(ValueError, match=r"goals_key 'desired'.*\['obs', 'goals', 'achieved'\]"):
        episode.instruction("desired")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"observations": {}}, "observations must be a non-empty dict"),
        ({"observations": np.zeros((5, 2))}, "observations must be a non-empty dict"),
        ({"observations": {"obs": np.zeros((4, 7)), "goals": np.zeros((5, 3, 2))}}, r"observations\['obs'\]"),
        ({"actions": np.zeros((0,))}, "actions must have shape"),
        ({"actions": np.zeros(())}, "actions must have shape"),
        ({"rewards": np.zeros(3)}, r"rewards must have shape \(T,\) = \(4,\)"),
        ({"terminated": np.zeros((4, 1), bool)}, "terminated must have shape"),
        ({"truncated": np.zeros(5, bool)}, "truncated must have shape"),
        ({"terminated": np.array([0, 1, 0, 1], bool)}, r"terminated may only be True at the last step.*\[1\]"),
        ({"truncated": np.array([1, 0, 0, 0], bool)}, r"truncated may only be True at the last step.*\[0\]"),
        ({"infos": [{}] * 3}, "infos must hold T = 4"),
    ],
)
def test_bad_shapes_name_the_field(change: dict, match: str) -> None:
    episode = make_episode(4)
    fields = {
        "observations": episode.observations,
        "actions": episode.actions,
        "rewards": episode.rewards,
        "terminated": episode.terminated,
        "truncated": episode.truncated,
        "infos": episode.infos,
    }
    fields.update(change)
    with pytest.raises(ValueError, match=match):
        Episode(**fields)


@pytest.mark.dagger
def test_to_trajectory_uses_dictobs_and_terminal_flag() -> None:
    episode = make_episode(5, "terminated")
    trajectory = episode.to_trajectory()
    assert type(trajectory) is TrajectoryWithRew
    assert isinstance(trajectory.obs, DictObs) and len(trajectory) == 5 and len(trajectory.obs) == 6
    np.testing.assert_array_equal(trajectory.obs.get("goals"), episode.observations["goals"])
    np.testing.assert_array_equal(trajectory.rews, episode.rewards)
    assert trajectory.terminal
    assert list(trajectory.infos) == episode.infos
    assert not make_episode(5, "truncated").to_trajectory().terminal
    assert make_episode(5, "truncated", infos=False).to_trajectory().infos is None


@pytest.mark.dagger
@settings(max_examples=60, deadline=None)
@given(
    length=st.integers(1, 30),
    end=st.sampled_from(["terminated", "truncated"]),
    infos=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_trajectory_round_trip(length: int, end: str, infos: bool, seed: int) -> None:
    episode = make_episode(length, end, infos, seed)
    assert_same(Episode.from_trajectory(episode.to_trajectory()), episode)


@pytest.mark.dagger
def test_from_trajectory_reads_sb3s_timeout_info() -> None:
    episode = make_episode(3, "truncated")
    base = episode.to_trajectory()
    # What imitation's rollouts record for a time-limit cut: terminal=True plus SB3's timeout flag.
    timeout_infos = np.array([{}, {}, {"TimeLimit.truncated": True}], dtype=object)
    cut = TrajectoryWithRew(obs=base.obs, acts=base.acts, infos=timeout_infos, terminal=True, rews=base.rews)
    recovered = Episode.from_trajectory(cut)
    np.testing.assert_array_equal(recovered.truncated, [False, False, True])
    np.testing.assert_array_equal(recovered.terminated, [False, False, False])
    finished_infos = np.array([{}, {}, {"TimeLimit.truncated": False}], dtype=object)
    finished = TrajectoryWithRew(obs=base.obs, acts=base.acts, infos=finished_infos, terminal=True, rews=base.rews)
    recovered = Episode.from_trajectory(finished)
    np.testing.assert_array_equal(recovered.terminated, [False, False, True])
    np.testing.assert_array_equal(recovered.truncated, [False, False, False])


@pytest.mark.dagger
def test_from_trajectory_rejects_non_dict_observations() -> None:
    array_obs = TrajectoryWithRew(obs=np.zeros((3, 2)), acts=np.zeros(2), infos=None, terminal=True,
                                  rews=np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"trajectory\.obs must be an imitation\.data\.types\.DictObs"):
        Episode.from_trajectory(array_obs)
    with pytest.raises(ValueError, match=r"trajectory must be an imitation\.data\.types\.TrajectoryWithRew"):
        Episode.from_trajectory(make_episode())  # type: ignore[arg-type]


@pytest.mark.dagger
def test_imitation_rollouts_of_mazerunner_become_faithful_episodes() -> None:
    """imitation's own rollout collector on MazeRunner: truncation survives, and replay is the identity."""
    k, time_limit = 2, 12
    venv = DummyVecEnv([lambda: MazeRunnerEnv(maze_dim=7, num_goals=k, time_limit=time_limit) for _ in range(2)])
    venv.seed(3)
    noise = np.random.default_rng(3)

    def noisy_expert(observations, states, episode_starts):
        expert = np.array(venv.env_method("expert_action"))
        random = noise.integers(0, 5, size=venv.num_envs)
        return np.where(noise.random(venv.num_envs) < 0.7, expert, random), None

    trajectories = rollout.generate_trajectories(
        noisy_expert, venv, rollout.make_min_episodes(12), rng=np.random.default_rng(3)
    )
    relabeler = HindsightInstructionRelabeler(k, goal_spec=ExactGoalSpec())
    ends = set()
    for trajectory in trajectories:
        episode = Episode.from_trajectory(trajectory)
        success = trajectory.infos[-1]["is_success"]
        assert episode.terminated[-1] == success
        assert episode.truncated[-1] == (not success)
        assert episode.truncated[-1] == (len(episode) == time_limit and not success)
        ends.add(bool(success))
        replayed = relabeler.replay(episode, episode.instruction())
        np.testing.assert_array_equal(replayed.rewards, episode.rewards)
        np.testing.assert_array_equal(replayed.terminated, episode.terminated)
        np.testing.assert_array_equal(replayed.truncated, episode.truncated)
        np.testing.assert_array_equal(replayed.observations["goals"], episode.observations["goals"])
    assert ends == {True, False}  # both kinds of ending were exercised
    venv.close()


def test_record_keeps_the_envs_steps_and_end_flags() -> None:
    """A scripted BitFlipping expert ends by termination; a policy that never flips the right bit by truncation."""
    from stable_baselines3.common.envs import BitFlippingEnv

    env = BitFlippingEnv(n_bits=5, continuous=False, max_steps=5)

    def expert(obs: dict) -> int:
        differ = np.flatnonzero(obs["achieved_goal"] != obs["desired_goal"])
        return int(differ[0]) if len(differ) else 0

    seed = next(s for s in range(100) if (env.reset(seed=s)[0]["achieved_goal"] == 0).sum() >= 2)
    episode = Episode.record(env, expert, seed=seed, info_keys=("is_success",))
    start, _ = env.reset(seed=seed)
    assert np.array_equal(episode.observations["desired_goal"][0], start["desired_goal"])
    assert len(episode) == int((start["achieved_goal"] != start["desired_goal"]).sum())
    assert episode.terminated[-1] and not episode.truncated[-1]
    assert np.array_equal(episode.observations["achieved_goal"][-1], episode.observations["desired_goal"][-1])
    assert episode.infos is not None and episode.infos[-1] == {"is_success": True}
    # the transitions are the env's: replaying the actions from the same reset reproduces every observation
    env.reset(seed=seed)
    for t, action in enumerate(episode.actions):
        obs, reward, *_ = env.step(int(action))
        assert np.array_equal(obs["achieved_goal"], episode.observations["achieved_goal"][t + 1])
        assert reward == episode.rewards[t]

    stuck = Episode.record(env, lambda obs: 0, seed=seed)
    # flipping bit 0 back and forth never fixes the other differing bit: the time limit cuts the episode
    assert len(stuck) == 5 and stuck.infos is None
    assert stuck.truncated[-1] and not stuck.terminated[-1]


def test_record_refuses_an_env_without_dict_observations() -> None:
    import gymnasium as gym

    with pytest.raises(ValueError, match="Dict observations"):
        Episode.record(gym.make("CartPole-v1"), lambda obs: 0, seed=0)
