"""HER's episode arrays on the drop-in: ``_current_ep_start``, ``ep_start`` and ``ep_length`` as SB3 has them.

SB3's ``HerReplayBuffer`` and ours are fed the same transitions of a real ``BitFlippingEnv`` and compared after every
``add()`` and ``truncate_last_trajectory()``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stable_baselines3 import HerReplayBuffer as SB3HerReplayBuffer
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import HerReplayBuffer

# One profile runs these (tests/conftest.py): the buffer runs on numpy, numba, torch and SB3, the same
# releases in both; gymnasium reaches it through spaces. The drop-in tests against SB3's run in both.
pytestmark = pytest.mark.once("current")

VIEWS = ("_current_ep_start", "ep_start", "ep_length")


@dataclass
class Seen:
    """Which of the cases that HER's bookkeeping treats apart a run went through, so a test can require them."""

    wrapped: bool = False  # the circular buffer overwrote rows
    forgotten: bool = False  # a written row of an ended episode with ep_length 0 (its first row overwritten)
    full_length: bool = False  # an episode of exactly buffer_size steps (HER: ep_length 0)
    truncated: list[int] = field(default_factory=list)  # sub-envs closed by truncate_last_trajectory


def assert_same(her: SB3HerReplayBuffer, ours: HerReplayBuffer, when: str) -> None:
    assert ours.pos == her.pos and ours.full == her.full
    for name in VIEWS:
        np.testing.assert_array_equal(getattr(ours, name), getattr(her, name), err_msg=f"{name} {when}")
    np.testing.assert_array_equal(ours.dones, her.dones, err_msg=f"dones {when}")
    np.testing.assert_array_equal(ours.timeouts, her.timeouts, err_msg=f"timeouts {when}")


def run(
    n_envs: int,
    rows: int,
    n_bits: int,
    max_steps: int,
    n_adds: int,
    truncate_after: set[int],
    handle_timeout_termination: bool = True,
    seed: int = 0,
) -> Seen:
    """Feed both buffers the same transitions, as SB3's off-policy loop stores them, and compare after each step.

    ``rows``: rows per sub-env. ``truncate_after``: add counts after which both get ``truncate_last_trajectory()``
    and the env is reset, as when a saved buffer is loaded and training starts again.
    """
    venv = DummyVecEnv([lambda: BitFlippingEnv(n_bits=n_bits, max_steps=max_steps)] * n_envs)
    venv.seed(seed)
    kwargs = dict(n_envs=n_envs, handle_timeout_termination=handle_timeout_termination)
    her = SB3HerReplayBuffer(rows * n_envs, venv.observation_space, venv.action_space, env=venv, **kwargs)
    ours = HerReplayBuffer(rows * n_envs, venv.observation_space, venv.action_space, env=venv, **kwargs)
    assert her.buffer_size == ours.buffer_size == rows
    rng = np.random.default_rng(seed)
    seen = Seen()
    obs = venv.reset()
    assert_same(her, ours, "when empty")
    for step in range(1, n_adds + 1):
        actions = rng.integers(n_bits, size=n_envs)
        new_obs, rewards, dones, infos = venv.step(actions)
        next_obs = {key: value.copy() for key, value in new_obs.items()}
        for env_idx in np.flatnonzero(dones):
            for key in next_obs:
                next_obs[key][env_idx] = infos[env_idx]["terminal_observation"][key]
        seen.wrapped |= her.full and her.pos > 0
        for buffer in (her, ours):
            buffer.add(obs, next_obs, actions, rewards, dones, infos)
        obs = new_obs
        assert_same(her, ours, f"after add {step}")
        length = ours._index.meta[:, :, ours._index.field["len"]]
        seen.forgotten |= bool(((length > 0) & (length < rows) & (her.ep_length == 0)).any())
        seen.full_length |= bool((dones & (length[(her.pos - 1) % rows] == rows)).any())
        if step in truncate_after:
            running = np.flatnonzero(her._current_ep_start != her.pos)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                her.truncate_last_trajectory()
                ours.truncate_last_trajectory()
            messages = [str(w.message) for w in caught if "will be truncated" in str(w.message)]
            assert len(messages) == (2 if len(running) else 0)  # each warns, and only when it truncates
            assert_same(her, ours, f"after truncating at add {step}")
            seen.truncated += running.tolist()
            obs = venv.reset()
    return seen


@pytest.mark.parametrize("n_envs", [1, 2, 3])
@pytest.mark.parametrize("handle_timeout_termination", [True, False])
def test_views_equal_hers_arrays_after_every_add(n_envs: int, handle_timeout_termination: bool) -> None:
    """Varying episode lengths (success or the step limit), several wraps, truncations mid-episode."""
    seen = run(n_envs, rows=9, n_bits=4, max_steps=9, n_adds=120, truncate_after={13, 37, 38, 71},
               handle_timeout_termination=handle_timeout_termination)
    assert seen.wrapped and seen.forgotten and seen.full_length
    assert len(seen.truncated) >= n_envs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_envs=st.integers(1, 3),
    rows=st.integers(1, 10),
    n_bits=st.integers(1, 5),
    data=st.data(),
    handle_timeout_termination=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_views_equal_hers_arrays_property(
    n_envs: int, rows: int, n_bits: int, data: st.DataObject, handle_timeout_termination: bool, seed: int
) -> None:
    """Any buffer size, env count and episode length up to the buffer, truncations anywhere."""
    max_steps = data.draw(st.integers(1, rows), label="max_steps")
    n_adds = data.draw(st.integers(1, 4 * rows + 6), label="n_adds")
    truncate_after = data.draw(st.sets(st.integers(1, n_adds), max_size=3), label="truncate_after")
    run(n_envs, rows, n_bits, max_steps, n_adds, truncate_after, handle_timeout_termination, seed)


def test_a_running_episode_longer_than_the_int16_step_counter() -> None:
    """Past 32767 steps the buffer's per-row step counter wraps (int16 for small buffers); HER's numbers hold."""
    venv = DummyVecEnv([lambda: BitFlippingEnv(n_bits=8, max_steps=10**6)] * 2)
    venv.seed(1)
    her = SB3HerReplayBuffer(14, venv.observation_space, venv.action_space, env=venv, n_envs=2)
    ours = HerReplayBuffer(14, venv.observation_space, venv.action_space, env=venv, n_envs=2)
    obs = venv.reset()
    actions = np.zeros(2, dtype=np.int64)
    for _ in range(32770):  # flipping bit 0 back and forth: the goal is not reached from this seed
        new_obs, rewards, dones, infos = venv.step(actions)
        assert not dones.any()
        for buffer in (her, ours):
            buffer.add(obs, new_obs, actions, rewards, dones, infos)
        obs = new_obs
    assert ours._index.meta[(ours.pos - 1) % 7, 0, ours._index.field["t"]] < 0  # the counter has wrapped
    for name in VIEWS:
        np.testing.assert_array_equal(getattr(ours, name), getattr(her, name), err_msg=name)


def test_an_episode_longer_than_the_buffer_has_length_zero() -> None:
    """The documented difference: HER records such an episode's length modulo the buffer, the views 0."""
    venv = DummyVecEnv([lambda: BitFlippingEnv(n_bits=8, max_steps=13)] * 2)
    venv.seed(1)
    her = SB3HerReplayBuffer(2 * 5, venv.observation_space, venv.action_space, env=venv, n_envs=2)
    ours = HerReplayBuffer(2 * 5, venv.observation_space, venv.action_space, env=venv, n_envs=2)
    obs = venv.reset()
    actions = np.zeros(2, dtype=np.int64)
    for _ in range(13):  # flipping bit 0 back and forth: the goal is not reached from this seed
        new_obs, rewards, dones, infos = venv.step(actions)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ours warns that it cannot relabel the episode
            for buffer in (her, ours):
                buffer.add(obs, new_obs, actions, rewards, dones, infos)
        obs = new_obs
    assert dones.all() and ours.pos == 13 % 5
    np.testing.assert_array_equal(her.ep_length, [[3, 3]] * 3 + [[0, 0]] * 2)  # 13 % 5 in the last 3 rows
    np.testing.assert_array_equal(ours.ep_length, np.zeros((5, 2)))
    for name in ("_current_ep_start", "ep_start"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(her, name))


def test_views_are_read_only() -> None:
    venv = DummyVecEnv([lambda: BitFlippingEnv(n_bits=3)] * 2)
    buffer = HerReplayBuffer(20, venv.observation_space, venv.action_space, env=venv, n_envs=2)
    obs = venv.reset()
    actions = np.zeros(2, dtype=np.int64)
    for _ in range(7):
        new_obs, rewards, dones, infos = venv.step(actions)
        buffer.add(obs, new_obs, actions, rewards, dones, infos)
        obs = new_obs
    before = {name: getattr(buffer, name).copy() for name in VIEWS}
    for name in VIEWS:
        with pytest.raises(AttributeError, match=f"HerReplayBuffer.{name} is read-only"):
            setattr(buffer, name, np.zeros_like(before[name]))
        with pytest.raises(AttributeError, match="read-only"):
            delattr(buffer, name)
        with pytest.raises(ValueError, match="read-only"):
            getattr(buffer, name)[0] = 7  # a derived array: writing into it would change nothing, so it refuses
        np.testing.assert_array_equal(getattr(buffer, name), before[name])
        assert name not in vars(buffer)  # no stored copy to fall out of sync
