"""Episode: shape validation and the round trip through imitation's TrajectoryWithRew."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec
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
        ({"infos": [{}, {}, ("is_success", True), {}]}, r"infos\[2\] must be a dict \(a Mapping\), got tuple"),
        ({"infos": [{}, None, {}, {}]}, r"infos\[1\] must be a dict \(a Mapping\), got NoneType"),
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
    episode = Episode.record(env, expert, seed=seed, info_keys=("is_success",), max_steps=env.max_steps)
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

    stuck = Episode.record(env, lambda obs: 0, seed=seed, max_steps=50)
    # flipping bit 0 back and forth never fixes the other differing bit: the time limit cuts the episode
    assert len(stuck) == 5 and stuck.infos is None
    assert stuck.truncated[-1] and not stuck.terminated[-1]


def test_record_refuses_an_env_without_dict_observations() -> None:
    with pytest.raises(ValueError, match="Dict observations"):
        Episode.record(gym.make("CartPole-v1"), lambda obs: 0, seed=0)


class Endless(gym.Env):
    """A Dict env that never ends by itself and counts the calls made to it."""

    observation_space = spaces.Dict({"obs": spaces.Box(0.0, np.inf, (1,), np.float32)})
    action_space = spaces.Discrete(3)

    def __init__(self) -> None:
        self.resets = 0
        self.actions: list = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.resets += 1
        self.actions = []
        return {"obs": np.zeros(1, np.float32)}, {"is_success": False}

    def step(self, action):
        self.actions.append(action)
        return {"obs": np.full(1, len(self.actions), np.float32)}, 0.0, False, False, {"is_success": False}


gym.register("sb3_hir_test/Endless-v0", entry_point=Endless, max_episode_steps=6)


def test_record_caps_an_env_that_never_ends_and_marks_the_cut_truncated() -> None:
    env = Endless()
    episode = Episode.record(env, lambda obs: 1, seed=0, max_steps=7, info_keys=["is_success"])
    assert len(episode) == 7 and len(env.actions) == 7
    np.testing.assert_array_equal(episode.truncated, [False] * 6 + [True])
    assert not episode.terminated.any()
    np.testing.assert_array_equal(episode.observations["obs"][:, 0], np.arange(8))
    assert episode.infos == [{"is_success": False}] * 7


def test_record_takes_its_cap_from_the_time_limit_wrapper_or_the_spec() -> None:
    wrapped = gym.wrappers.TimeLimit(gym.wrappers.TimeLimit(Endless(), 9), 4)  # the tighter limit holds
    episode = Episode.record(wrapped, lambda obs: 0, seed=0)
    assert len(episode) == 4 and episode.truncated[-1] and not episode.terminated[-1]
    made = gym.make("sb3_hir_test/Endless-v0")
    assert len(Episode.record(made, lambda obs: 0, seed=0)) == 6  # gym.make's TimeLimit
    bare = Endless()  # an env that states its limit in its spec and has no TimeLimit to enforce it
    bare.spec = EnvSpec("sb3_hir_test/Endless-v0", entry_point=Endless, max_episode_steps=6)
    from_spec = Episode.record(bare, lambda obs: 0, seed=0)
    assert len(from_spec) == 6 and from_spec.truncated[-1]  # no TimeLimit to cut it: the cap marks it
    assert len(Episode.record(wrapped, lambda obs: 0, seed=0, max_steps=2)) == 2  # max_steps wins when tighter
    assert len(Episode.record(wrapped, lambda obs: 0, seed=0, max_steps=100)) == 4  # the env's own limit first


def test_record_without_a_step_limit_asks_for_max_steps_and_leaves_the_env_alone() -> None:
    env = Endless()
    with pytest.raises(ValueError, match=r"max_steps is needed: Endless has no TimeLimit.*pass max_steps=\.\.\. "
                                         r"or wrap the env in gymnasium\.wrappers\.TimeLimit"):
        Episode.record(env, lambda obs: 0, seed=0)
    assert env.resets == 0


@pytest.mark.parametrize("max_steps", [0, -3, 2.5, True, "10"])
def test_record_max_steps_must_be_a_positive_int(max_steps) -> None:
    env = Endless()
    with pytest.raises(ValueError, match=r"max_steps must be an int >= 1; got"):
        Episode.record(env, lambda obs: 0, max_steps=max_steps)
    assert env.resets == 0


@pytest.mark.parametrize(("info_keys", "match"), [
    ("is_success", r"info_keys must be a sequence of str info keys.*got 'is_success'; to keep one key write "
                   r"\('is_success',\)"),
    ([1], r"info_keys must be a sequence of str info keys, such as \('is_success',\); got \[1\]"),
    ({"is_success"}, r"info_keys must be a sequence of str info keys.*got \{'is_success'\}"),
])
def test_record_info_keys_must_be_a_sequence_of_str(info_keys, match: str) -> None:
    env = Endless()
    with pytest.raises(ValueError, match=match):
        Episode.record(env, lambda obs: 0, info_keys=info_keys, max_steps=3)
    assert env.resets == 0


@pytest.mark.parametrize(("bad", "match"), [
    (3, r"policy's action at step 2 must hold values in \[0, 2\] of Discrete\(3\); got 3"),
    (-1, r"policy's action at step 2 must hold values in \[0, 2\] of Discrete\(3\); got -1"),
    (1.5, r"policy's action at step 2 must hold integers .* of Discrete\(3\); got 1\.5"),
    (np.array([1, 2]), r"policy's action at step 2 must be one int of Discrete\(3\)"),
    ("1", r"policy's action at step 2 must hold numbers of Discrete\(3\)"),
])
def test_record_refuses_a_discrete_action_outside_the_space_before_stepping_with_it(bad, match: str) -> None:
    env = Endless()
    with pytest.raises(ValueError, match=match):
        Episode.record(env, lambda obs: bad if obs["obs"][0] == 2 else 0, max_steps=10)
    assert env.actions == [0, 0]  # the two good actions were played; the bad one never reached env.step


@pytest.mark.parametrize(("bad", "match"), [
    (np.array([1.0, 1.5, -1.0], np.float32), r"policy's action at step 0 must hold values in \[-1, 1\] of Box"),
    (np.array([1.0, np.nan, -1.0], np.float32), r"policy's action at step 0 must hold finite values of Box"),
    (np.ones(4, np.float32), r"policy's action at step 0 must have the shape \(3,\) of Box.*got shape \(4,\)"),
])
def test_record_refuses_a_box_action_outside_the_space(bad, match: str) -> None:
    from stable_baselines3.common.envs import BitFlippingEnv

    env = BitFlippingEnv(n_bits=3, continuous=True, max_steps=3)
    with pytest.raises(ValueError, match=match):
        Episode.record(env, lambda obs: bad, seed=0, max_steps=3)
    assert env.current_step == 0  # reset, never stepped
