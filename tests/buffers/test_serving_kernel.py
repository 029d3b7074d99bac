"""1-step serving's kernel (``serving.serve_one_step``: the recorded rows' rewards and dones, then the relabeled
rows' rewrite) writes the bits the numpy code writes.

The golden tests (``test_served_rows.py``) serve their cases through the kernel where numba runs, and through the
numpy code under ``SB3_HIR_JIT=0``; here both rewrite the same random relabeled rows under goal specs the golden
cases do not hold (negative and integer-valued rewards, a step reward, float and integer goals, a float mask on
integer goals, which the numpy code serves), reach steps in any form, and rows at the end of their episodes.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
import torch as th
from hypothesis import given, settings
from hypothesis import strategies as st
from served_rows import filled_buffer
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws import Relabeled
from sb3_hir.buffers.serving import OneStep, Serving
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.goals import ExactGoalSpec

pytestmark = [pytest.mark.once("dagger"),
              pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not importable here")]


class _Rows:
    """What 1-step serving reads of a storage: the stored rewards, dones and time-outs of the batch's rows (one
    sub-env, the batch's rows in order) and its next observations (fresh arrays, as gathered)."""

    def __init__(self, batch: dict[str, np.ndarray], next_obs: dict[str, np.ndarray]) -> None:
        self.rewards, self.dones, self.timeouts = (batch[name][:, None] for name in ("rewards", "dones", "timeouts"))
        self.next_obs = next_obs

    def flat_rows(self, array: np.ndarray) -> np.ndarray:
        return array.reshape(-1)

    def take(self, array: np.ndarray, flat: np.ndarray) -> np.ndarray:
        return self.flat_rows(array).take(flat, axis=0)

    def next_batch(self, flat: np.ndarray, rewritten: int | None = None) -> dict[str, np.ndarray]:
        """As ``Storage.next_batch``: with ``rewritten``, the goals after the first ``rewritten`` rows are not read
        (here: a value no draw holds, which serving must overwrite)."""
        batch = {key: value.copy() for key, value in self.next_obs.items()}
        if rewritten is not None:
            batch["goals"][rewritten:] = 99
        return batch


def _rewrite(serving: Serving, jit: bool, r: Relabeled, num_rec: int, batch: dict[str, np.ndarray],
             next_obs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The batch's goals, next goals, rewards and dones as the kernel (``jit``, where it serves) or the numpy code
    serves them."""
    storage: Any = _Rows(batch, next_obs)
    flat = np.arange(len(batch["rewards"]))
    goals = batch["goals"].copy()
    one_call = serving._serve_compiled(storage, flat, num_rec, r, goals, None) if jit else None
    if one_call is not None:
        served_next, rewards, dones = one_call
    else:
        rewards, dones, window, last_flat = serving.windows.recorded(storage, flat, num_rec, None)
        served_next = serving._relabel(storage, r, num_rec, goals, rewards, dones, window, last_flat, None)
    return [goals, served_next["goals"], rewards, dones]


@settings(max_examples=150, deadline=None)
@given(
    k=st.integers(1, 4),
    goal_shape=st.sampled_from([(), (2,), (2, 3)]),
    dtype=st.sampled_from([np.int32, np.int64, np.float32, np.float64]),
    mask_value=st.sampled_from([-1, -1.0, -7, 0.5]),
    goal_reward=st.sampled_from([1.0, -2.5, 0.1, 3.0]),
    step_reward=st.sampled_from([0.0, -1.0, 0.3]),
    num_rel=st.integers(1, 30),
    num_rec=st.integers(0, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_kernel_writes_the_numpy_rewrite(k: int, goal_shape: tuple[int, ...], dtype: Any, mask_value: float,
                                             goal_reward: float, step_reward: float, num_rel: int, num_rec: int,
                                             seed: int) -> None:
    rng = np.random.default_rng(seed)
    spec = ExactGoalSpec(mask_value=mask_value, goal_reward=goal_reward, step_reward=step_reward)
    serving = Serving(spec, k, goal_shape, OneStep(), th.device("cpu"))
    length = rng.integers(1, 12, size=num_rel)
    t = (rng.random(num_rel) * length).astype(np.int64)
    ends = rng.random(num_rel) < 0.3
    t[ends] = length[ends] - 1  # the last transition of the episode
    reach = np.sort(rng.integers(1, length[:, None] + 1, size=(num_rel, k)), axis=1)
    reach[rng.random((num_rel, k)) < 0.3] = -1  # any form: the rewrite reads each goal's own reach
    reach[rng.random(num_rel) < 0.2, -1] = -1
    drawn = rng.integers(-3, 9, size=(num_rel, k, *goal_shape)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        drawn += 0.25
    r = Relabeled(np.arange(num_rel), np.zeros(num_rel, np.int64), np.zeros(num_rel, np.int64), t, length, drawn,
                  reach, rng.random(num_rel) < 0.5)
    batch_size = num_rec + num_rel
    batch = {"goals": rng.integers(0, 5, size=(batch_size, k, *goal_shape)).astype(dtype),
             "rewards": rng.random(batch_size).astype(np.float32),
             "dones": (rng.random(batch_size) < 0.5).astype(np.float32),
             "timeouts": (rng.random(batch_size) < 0.3).astype(np.float32)}
    next_obs = {"goals": rng.integers(0, 5, size=(batch_size, k, *goal_shape)).astype(dtype)}
    numpy_rows = _rewrite(serving, False, r, num_rec, batch, next_obs)
    kernel_rows = _rewrite(serving, True, r, num_rec, batch, next_obs)
    for name, a, b in zip(("goals", "next goals", "rewards", "dones"), numpy_rows, kernel_rows, strict=True):
        assert a.dtype == b.dtype, name
        assert a.tobytes() == b.tobytes(), name  # the same bits, the sign of a zero reward included
    # The kernel serves where the mask keeps the goals' dtype; a float mask on integer goals is the numpy code's.
    fallback = np.dtype(dtype).kind == "i" and isinstance(mask_value, float)
    assert (serving._constants is not None and serving._constants[2] is None) == fallback


@pytest.mark.parametrize("case", ["maze_k3_some_future", "maze_k1_some_future"])
def test_vec_normalize_rewards_are_served_as_the_numpy_code_serves_them(case: str) -> None:
    """With a ``VecNormalize`` env the kernel's batch is normalized as a whole, the numpy code's recorded and relabeled
    parts apart: the same bits either way (a copy of one buffer samples on each backend from the same state)."""
    buffer = filled_buffer(case)
    venv = VecNormalize(DummyVecEnv([MazeRunnerEnv]), norm_obs=False, norm_reward=True,
                        clip_reward=1.5)
    venv.ret_rms.var = np.array(2.7)
    batches = []
    for jit in (True, False):
        copy = pickle.loads(pickle.dumps(buffer))  # the same generator state and draw estimates on both sides
        copy.jit = jit
        np.random.seed(3)
        batches.append([copy.sample(64, venv) for _ in range(3)])
    for fast, slow in zip(*batches, strict=True):
        assert fast.rewards.numpy().tobytes() == slow.rewards.numpy().tobytes()
        assert fast.dones.numpy().tobytes() == slow.dones.numpy().tobytes()
        for key in fast.observations:
            assert th.equal(fast.next_observations[key], slow.next_observations[key]), key
    rewards = th.cat([samples.rewards for samples in batches[0]])
    assert rewards.abs().max() <= 1.5 and len(th.unique(rewards)) > 1  # normalized and clipped, not all one value
