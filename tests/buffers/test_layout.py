"""``optimize_memory_usage=True`` (the compact layout): the same stream of transitions into a buffer with SB3's
layout and into one storing each observation once gives identical served batches, call after call, through
wrap-around, splices, ``truncate_last_trajectory``, n-step windows, relabeling and ``reset``."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import torch as th
from hypothesis import given, settings
from hypothesis import strategies as st
from instruction_oracle import GRID, add_step, make_buffer, random_path, simulate
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import HerReplayBuffer
from sb3_hir.buffers.layout import CompactLayout, SparseRows

# One profile runs these (tests/conftest.py): the buffer runs on numpy, numba, torch and SB3, the same
# releases in both; gymnasium reaches it through spaces. The drop-in tests against SB3's run in both.
pytestmark = pytest.mark.once("current")


def assert_same_batches(full, compact, batch: int, seed: int) -> None:
    for one in (full, compact):
        np.random.seed(seed)
        one.rng = np.random.default_rng(seed)
    for _ in range(2):
        state = np.random.get_state()
        a = full.sample(batch)
        np.random.set_state(state)
        b = compact.sample(batch)
        for name, x, y in zip(a._fields, a, b, strict=True):
            if isinstance(x, dict):
                assert x.keys() == y.keys()
                for key in x:
                    assert th.equal(x[key], y[key]), (name, key)
            else:
                assert (x is None and y is None) or th.equal(x, y), name


@settings(max_examples=30, deadline=None)
@given(
    k=st.integers(1, 3),
    n_envs=st.integers(1, 2),
    size=st.integers(4, 24),
    lengths=st.lists(st.integers(1, 10), min_size=1, max_size=6),
    n_steps=st.integers(1, 3),
    strategy=st.sampled_from(["some", "all"]),
    cut_rate=st.sampled_from([0.0, 0.15]),
    seed=st.integers(0, 2**16),
)
def test_property_compact_layout_serves_what_the_full_layout_serves(k, n_envs, size, lengths, n_steps, strategy,
                                                                    cut_rate, seed) -> None:
    """Instruction mode: random episodes, some cut before their end (a splice, which add() closes), streamed
    through a small circular buffer; after every step both buffers serve identical batches."""
    rng = np.random.default_rng(seed)
    kwargs = dict(size=size, n_envs=n_envs, n_steps=n_steps, gamma=0.9, hindsight_goals=strategy, relabel_ratio=0.6,
                  seed=seed)
    full, compact = make_buffer(k, **kwargs), make_buffer(k, optimize_memory_usage=True, **kwargs)
    assert isinstance(compact._storage.layout, CompactLayout) and "achieved" not in compact.observations
    assert list(compact.next_observations) == ["achieved"]

    def new_episode():
        return simulate(random_path(rng, int(rng.choice(lengths))), rng.integers(0, GRID, size=(k, 2)),
                        fall=bool(rng.random() < 0.2))

    current, steps = [new_episode() for _ in range(n_envs)], [0] * n_envs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(3 * size):
            for buffer in (full, compact):
                add_step(buffer, current, steps)
            for i in range(n_envs):
                steps[i] += 1
                if steps[i] == len(current[i].episode) or rng.random() < cut_rate:
                    current[i], steps[i] = new_episode(), 0
            assert_same_batches(full, compact, 8, seed + step)
        if rng.random() < 0.5:
            full.truncate_last_trajectory()
            compact.truncate_last_trajectory()
            assert_same_batches(full, compact, 16, seed)
    # Pickled, both serve the same (their draws adapt to what they served: each copy keeps its original's history).
    assert_same_batches(pickle.loads(pickle.dumps(full)), pickle.loads(pickle.dumps(compact)), 16, seed + 1)
    full.reset()
    compact.reset()
    for buffer in (full, compact):
        add_step(buffer, current, steps)
    assert_same_batches(full, compact, 8, seed + 2)


def fill_goal_env(buffers: list, venv, steps: int, seed: int, truncate_at: int | None = None) -> None:
    obs = venv.reset()
    rng = np.random.default_rng(seed)
    for step in range(steps):
        if step == truncate_at:  # learn() called again: SB3 resets the env and HER truncates the last trajectory
            for buffer in buffers:
                buffer.truncate_last_trajectory()
            obs = venv.reset()
        actions = rng.integers(6, size=2)
        next_obs, rewards, dones, infos = venv.step(actions)
        real_next = {key: value.copy() for key, value in next_obs.items()}
        for i, done in enumerate(dones):
            if done:
                for key in real_next:
                    real_next[key][i] = infos[i]["terminal_observation"][key]
        for buffer in buffers:
            buffer.add(obs, real_next, actions[:, None], rewards, dones, infos)
        obs = next_obs


@pytest.mark.parametrize("n_steps", [1, 3])
@pytest.mark.parametrize("image", [False, True])
def test_goal_env_mode_compact_layout_serves_what_the_full_layout_serves(n_steps: int, image: bool) -> None:
    def make():
        return BitFlippingEnv(n_bits=6, continuous=False, max_steps=6, image_obs_space=image)

    venv = make_vec_env(make, n_envs=2, seed=1, vec_env_cls=DummyVecEnv)
    buffers = [HerReplayBuffer(64, venv.observation_space, venv.action_space, env=venv, n_envs=2, seed=3,
                               n_steps=n_steps, gamma=0.95, terminate_on_success=None,
                               optimize_memory_usage=optimize) for optimize in (False, True)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fill_goal_env(buffers, venv, 90, seed=1, truncate_at=47)  # wraps twice; one splice
    assert_same_batches(*buffers, 64, 0)


def test_sparse_rows_reuse_released_slots_and_grow_keeping_every_live_entry() -> None:
    rows = SparseRows({"x": ((2,), np.int64)}, capacity=2)
    slots = [int(rows.put({"x": np.array([[i, i]])})[0]) for i in range(9)]
    assert rows.capacity >= 9 and len(set(slots)) == 9
    for i, slot in enumerate(slots):
        np.testing.assert_array_equal(rows.take("x", np.array([slot]))[0], [i, i])
    capacity = rows.capacity
    rows.release(np.array(slots[:4]))
    again = rows.put({"x": np.arange(8).reshape(4, 2)})
    assert sorted(again.tolist()) == sorted(slots[:4]) and rows.capacity == capacity  # reused, not grown
    for i, slot in enumerate(slots[4:], start=4):
        np.testing.assert_array_equal(rows.take("x", np.array([slot]))[0], [i, i])


def test_dqn_with_the_her_drop_in_and_optimize_memory_usage_learns_and_saves(tmp_path) -> None:
    """Through SB3: DQN's own ``optimize_memory_usage=True`` reaches the drop-in, which stores each image once."""
    env = BitFlippingEnv(n_bits=6, continuous=False, max_steps=6, image_obs_space=True)
    model = DQN("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, optimize_memory_usage=True,
                buffer_size=500, learning_starts=50, policy_kwargs=dict(net_arch=[32]), seed=0)
    buffer = model.replay_buffer
    assert buffer.optimize_memory_usage and set(buffer.next_observations) == {"achieved_goal"}
    model.learn(300)
    assert buffer.num_served > 0
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    model.load_replay_buffer(tmp_path / "buffer.pkl")
    assert model.replay_buffer.optimize_memory_usage
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.learn(60, reset_num_timesteps=False)


def test_optimize_memory_usage_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="optimize_memory_usage must be a bool"):
        make_buffer(1, optimize_memory_usage="yes")


@pytest.mark.parametrize("optimize", [False, True])
def test_a_batch_reads_the_instruction_only_of_rows_served_as_recorded(optimize: bool) -> None:
    """Serving rewrites the relabeled rows' instructions, so ``obs_batch(flat, rewritten)`` reads the goals key only
    at the first ``rewritten`` rows (a row it does not read may even be out of range) and every other key, and every
    row it reads, as a full gather does."""
    venv = make_vec_env(lambda: BitFlippingEnv(n_bits=6, continuous=False, max_steps=6), n_envs=2, seed=1,
                        vec_env_cls=DummyVecEnv)
    buffer = HerReplayBuffer(64, venv.observation_space, venv.action_space, env=venv, n_envs=2, seed=3,
                             optimize_memory_usage=optimize)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fill_goal_env([buffer], venv, 40, seed=1)
    storage = buffer._mixture.online.storage
    flat = np.array([7, 30, 3, 61, 12])
    full, full_next = storage.obs_batch(flat), storage.next_batch(flat)
    head, head_next = storage.obs_batch(flat, 2), storage.next_batch(flat, 2)
    for key in full:
        rows = 2 if key == storage.goals_key else len(flat)
        assert np.array_equal(head[key][:rows], full[key][:rows]), key
        assert head[key].shape == full[key].shape and head[key].dtype == full[key].dtype, key
        assert np.array_equal(head_next[key][:rows], full_next[key][:rows]), key
    out_of_range = np.array([7, 30, 10**9])
    taken = storage.take_head(storage.observations[storage.goals_key], out_of_range, 2)
    assert np.array_equal(taken[:2], full[storage.goals_key][:2]) and len(taken) == 3
    with pytest.raises(IndexError):
        storage.take_head(storage.observations[storage.goals_key], out_of_range, 3)


@pytest.mark.parametrize("bad", [-1, 4])
def test_a_count_of_rows_read_outside_the_batch_is_refused_by_name(bad: int) -> None:
    venv = make_vec_env(lambda: BitFlippingEnv(n_bits=6, continuous=False, max_steps=6), n_envs=2, seed=0,
                        vec_env_cls=DummyVecEnv)
    buffer = HerReplayBuffer(16, venv.observation_space, venv.action_space, env=venv, n_envs=2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fill_goal_env([buffer], venv, 8, seed=0)
    storage = buffer._mixture.online.storage
    flat = np.array([0, 1, 2])
    with pytest.raises(ValueError, match=r"count must be a count of leading rows in \[0, len\(flat\)\] = \[0, 3\]"):
        storage.take_head(storage.observations[storage.goals_key], flat, bad)
    for gather in (storage.obs_batch, storage.next_batch):
        with pytest.raises(ValueError, match="rewritten must be"):
            gather(flat, bad)
