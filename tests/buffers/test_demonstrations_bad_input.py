"""Demonstrations stored as SB3 stores online data, and bad demonstrations refused by name with no trace left.

Each bad-input case names the exception and words of its message, and checks that the rejected call changed
nothing: the buffers' arrays, counters and generators (one pickle of the whole buffer, byte for byte) and the
batches served afterwards.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from instruction_oracle import GRID, assert_serves_the_same, make_buffer, random_path, simulate
from stable_baselines3 import SAC
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import HerReplayBuffer
from sb3_hir.buffers.demonstrations import stored_episodes
from sb3_hir.episodes import Episode
from sb3_hir.testing import PointReachEnv

# One profile runs these (tests/conftest.py): the buffer runs on numpy, numba, torch and SB3, the same
# releases in both; gymnasium reaches it through spaces. The drop-in tests against SB3's run in both.
pytestmark = pytest.mark.once("dagger")


def wide_env(steps: int = 40) -> gym.Env:
    """A GoalEnv whose action space, ``Box(-2, 2)``, is not SB3's [-1, 1], so stored actions differ from the env's.

    A radius of 0 is never reached, so no episode ends early.
    """
    return gym.wrappers.TimeLimit(PointReachEnv(step_size=0.05, action_bound=2.0, distance_threshold=0.0, reward="0/1",
                                                terminate_on_success=False, dtype=np.float64), max_episode_steps=steps)


def test_box_demonstration_actions_are_stored_byte_identically_to_the_same_actions_reached_online() -> None:
    """SAC's own collection draws its first actions from its action space, stores them scaled to [-1, 1] and steps
    the env with them unscaled; the same env-unit actions given as a demonstration must be stored byte for byte as
    SAC stored them, and come back in env units."""
    steps = 40
    model = SAC("MultiInputPolicy", DummyVecEnv([wide_env]), replay_buffer_class=HerReplayBuffer,
                learning_starts=1_000, seed=3, replay_buffer_kwargs=dict(demo_ratio=0.5))
    space = copy.deepcopy(model.action_space)  # seeded by SAC: replays the draws of _sample_action
    model.learn(steps)
    online = model.replay_buffer
    env_actions = np.stack([space.sample() for _ in range(steps)])
    assert np.abs(env_actions).max() > 1.0  # a Box(-2, 2) action SB3 would store halved
    observations = {key: np.concatenate([online.observations[key][:steps, 0], online.next_observations[key][steps - 1:
                                         steps, 0]]) for key in online.observations}
    truncated = np.zeros(steps, bool)
    truncated[-1] = True
    online.add_demonstrations(Episode(observations, env_actions, online.rewards[:steps, 0], np.zeros(steps, bool),
                                      truncated))
    demos = online.demonstrations.source
    assert demos.storage.actions[:steps, 0].tobytes() == online.actions[:steps, 0].tobytes()
    np.testing.assert_allclose(online.actions[:steps, 0], env_actions / 2.0, rtol=0, atol=1e-6)
    (kept,) = stored_episodes(demos)
    np.testing.assert_allclose(kept.actions, env_actions, rtol=0, atol=1e-6)  # exported in env units
    assert stored_episodes(demos, env_units=False)[0].actions.tobytes() == online.actions[:steps, 0].tobytes()
    batch = online.sample(64)  # half of it from the demonstrations, scaled as the online half
    assert float(batch.actions.abs().max()) <= 1.0


@pytest.mark.parametrize("space", [
    spaces.Box(0.0, 1.0, (2,), np.float32),
    spaces.Box(-3.0, 5.0, (2, 3), np.float32),
    spaces.Box(np.array([-1.0, 0.0, -10.0]), np.array([1.0, 0.5, 10.0]), dtype=np.float64),
])
@pytest.mark.parametrize("algo", ["SAC", "TD3"])
def test_box_scaling_is_the_policys_own_scale_action_on_any_box(space: spaces.Box, algo: str) -> None:
    """Asymmetric, multi-dimensional and float64 Box spaces: stored as the algorithm's ``policy.scale_action`` stores
    online actions (byte for byte), and given back in env units."""
    from stable_baselines3 import TD3

    from sb3_hir.buffers.demonstrations import to_buffer_units, to_env_units

    observation = spaces.Dict({"observation": spaces.Box(-1, 1, (2,)), "achieved_goal": spaces.Box(-1, 1, (2,)),
                               "desired_goal": spaces.Box(-1, 1, (2,))})
    policy_class = {"SAC": SAC, "TD3": TD3}[algo].policy_aliases["MultiInputPolicy"]
    policy = policy_class(observation, space, lambda _: 1e-3)
    space.seed(0)
    env_actions = np.stack([space.sample() for _ in range(16)])
    flat = env_actions.reshape(16, -1)
    stored = np.asarray(to_buffer_units(flat, space), dtype=np.float32)
    expected = np.asarray(policy.scale_action(env_actions), dtype=np.float32).reshape(16, -1)
    assert stored.tobytes() == expected.tobytes()
    assert np.abs(stored).max() <= 1.0
    np.testing.assert_allclose(to_env_units(stored, space), flat, rtol=1e-5, atol=1e-5)


# -- a rejected call leaves no trace ------------------------------------------------------------------------------
def corrupt(kind: str, episode: Episode) -> Episode:
    """``episode`` with one bad field, as a user gets it wrong (fields set after construction, which checks some)."""
    bad = copy.copy(episode)
    bad.observations = {key: value.copy() for key, value in episode.observations.items()}
    if kind == "infos":
        bad.infos = [{} for _ in range(len(bad) - 1)] + [("is_success", True)]
    elif kind == "nan observation":
        bad.observations["obs"] = bad.observations["obs"].astype(np.float32)
        bad.observations["obs"][-1, 0] = np.nan
    elif kind == "fractional goal":
        bad.observations["achieved"] = bad.observations["achieved"] + 0.5
    elif kind == "action outside the space":
        bad.actions = bad.actions + 5
    elif kind == "nan reward":
        bad.rewards = bad.rewards.copy()
        bad.rewards[0] = np.nan
    elif kind == "missing key":
        del bad.observations["achieved"]
    return bad


BAD = {
    "infos": r"demonstrations\[\d+\]\.infos\[\d+\] must be a dict \(a Mapping\), got tuple",
    "nan observation": r"demonstrations\[\d+\]\.observations\['obs'\] must hold finite values",
    "fractional goal": r"demonstrations\[\d+\]\.observations\['achieved'\] must hold integers \(the space stores int32",
    "action outside the space": r"demonstrations\[\d+\]\.actions must hold values in \[0, 4\] of Discrete\(5\)",
    "nan reward": r"demonstrations\[\d+\]\.rewards must hold finite values",
    "missing key": r"demonstrations\[\d+\] lacks the keys \['achieved'\]",
}


def episodes(rng: np.random.Generator, n: int) -> list[Episode]:
    return [simulate(random_path(rng, int(rng.integers(2, 9))), rng.integers(0, GRID, size=(2, 2))).episode
            for _ in range(n)]


def state(buffer: Any) -> bytes:
    """Everything the buffer holds, its demonstrations' rows and every generator included, as bytes."""
    return pickle.dumps(buffer)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stored=st.integers(0, 3), good=st.integers(0, 40), where=st.integers(0, 40), kind=st.sampled_from(list(BAD)),
       seed=st.integers(0, 2**16))
def test_a_rejected_add_leaves_arrays_counters_and_generators_byte_identical(stored, good, where, kind, seed) -> None:
    """Any call holding one bad episode among good ones, into an empty region, one with room or one that must grow:
    refused by name, and the buffer is byte-identical to before and serves the same batches."""
    rng = np.random.default_rng(seed)
    buffer = make_buffer(2, size=40, n_envs=2, demo_ratio=0.5, relabel_ratio=0.5)
    if stored:
        buffer.add_demonstrations(episodes(rng, stored))
    batch = episodes(rng, good)
    batch.insert(where % (good + 1), corrupt(kind, episodes(rng, 1)[0]))
    before = state(buffer)
    with pytest.raises(ValueError, match=BAD[kind]):
        buffer.add_demonstrations(batch)
    assert state(buffer) == before
    assert len(buffer.demonstrations) == stored
    if stored:
        assert_serves_the_same(buffer, pickle.loads(before))


@pytest.mark.parametrize("kind", list(BAD))
def test_each_bad_demonstration_in_a_list_of_good_ones_is_named_and_nothing_is_added(kind: str) -> None:
    rng = np.random.default_rng(1)
    buffer = make_buffer(2, size=40, demo_ratio=0.5)
    good, bad = episodes(rng, 2), corrupt(kind, episodes(rng, 1)[0])
    before = state(buffer)
    with pytest.raises(ValueError, match=BAD[kind].replace(r"\[\d+\]", r"\[2\]", 1)):
        buffer.add_demonstrations([*good, bad])
    assert state(buffer) == before and buffer.demonstrations.source is None and len(buffer.demonstrations) == 0


def test_box_demonstrations_out_of_the_action_space_or_on_an_unbounded_one_are_refused() -> None:
    venv = DummyVecEnv([wide_env])
    buffer = HerReplayBuffer(200, venv.observation_space, venv.action_space, env=venv, demo_ratio=0.5, seed=0)
    good = Episode.record(wide_env(), lambda obs: np.array([1.5, -2.0], np.float32), seed=0)
    outside = copy.copy(good)
    outside.actions = good.actions * 1.5
    before = state(buffer)
    with pytest.raises(ValueError, match=r"demonstrations\[1\]\.actions must hold values in \[-2, 2\] of Box"):
        buffer.add_demonstrations([good, outside])
    assert state(buffer) == before
    assert buffer.add_demonstrations(good) == 1
    unbounded = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    loose = HerReplayBuffer(200, venv.observation_space, unbounded, env=venv, seed=0)
    with pytest.raises(ValueError, match=r"the action space Box\(-inf, inf, \(2,\), float32\) is unbounded"):
        loose.add_demonstrations(good)
    assert loose.demonstrations.source is None


def test_bad_values_from_imitation_trajectories_are_named_too() -> None:
    pytest.importorskip("imitation")
    rng = np.random.default_rng(2)
    buffer = make_buffer(2, size=40, demo_ratio=0.5)
    bad = corrupt("nan observation", episodes(rng, 1)[0])
    before = state(buffer)
    with pytest.raises(ValueError, match=r"demonstrations\[1\]\.observations\['obs'\] must hold finite values"):
        buffer.add_demonstrations([episodes(rng, 1)[0].to_trajectory(), bad.to_trajectory()])
    assert state(buffer) == before


def test_an_empty_list_adds_nothing_and_says_so() -> None:
    buffer = make_buffer(2, size=40, demo_ratio=0.5)
    before = state(buffer)
    with pytest.warns(UserWarning, match="add_demonstrations got no episodes: nothing was added"):
        assert buffer.add_demonstrations([]) == 0
    assert state(buffer) == before


def sample_quietly(sample: Callable[[], Any]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sample()
    return [w for w in caught if "demo_ratio" in str(w.message)]


def test_demo_ratio_with_no_demonstrations_warns_once_at_the_first_sample() -> None:
    rng = np.random.default_rng(3)
    buffer = make_buffer(2, size=40, demo_ratio=0.25)
    recs = [simulate(random_path(rng, 6), rng.integers(0, GRID, size=(2, 2))) for _ in range(3)]
    from instruction_oracle import add_step

    for rec in recs:
        for t in range(len(rec.episode)):
            add_step(buffer, [rec], t)
    (first,) = sample_quietly(lambda: buffer.sample(8))
    assert "demo_ratio is 0.25 but no demonstrations were added" in str(first.message)
    assert sample_quietly(lambda: buffer.sample(8)) == []  # once per buffer
    quiet = make_buffer(2, size=40)  # demo_ratio 0: nothing to warn about
    for t in range(len(recs[0].episode)):
        add_step(quiet, [recs[0]], t)
    assert sample_quietly(lambda: quiet.sample(8)) == []


def test_a_dagger_round_directory_with_one_bad_episode_is_named_and_adds_nothing(tmp_path) -> None:
    """DAgger round files go through the same checks: a round with an executed action outside the action space is
    refused whole, naming the episode, and the buffer is as before."""
    pytest.importorskip("imitation")
    from sb3_hir.dagger.storage import new_round_file, save_trajectories
    from sb3_hir.dagger.trajectory import DAggerTrajectory

    rng = np.random.default_rng(4)
    buffer = make_buffer(2, size=40, demo_ratio=0.5)
    directory = tmp_path / "demos" / "round-000"
    directory.mkdir(parents=True)
    for i, episode in enumerate(episodes(rng, 3)):
        traj = episode.to_trajectory()
        executed = episode.actions + (7 if i == 1 else 0)  # the second one executed actions the env never has
        save_trajectories(new_round_file(directory, rng, index=i), [DAggerTrajectory(
            obs=traj.obs, acts=episode.actions, infos=None, terminal=traj.terminal, rews=traj.rews,
            truncated=bool(episode.truncated[-1]), complete=True, executed_acts=executed,
            learner_mask=np.ones(len(executed), bool))])
    before = state(buffer)
    with pytest.raises(ValueError, match=r"demonstrations\[1\]\.actions must hold values in \[0, 4\] of Discrete\(5\)"):
        buffer.add_demonstrations(tmp_path)
    assert state(buffer) == before
