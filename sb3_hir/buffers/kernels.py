"""Vectorized index arithmetic of the buffer's ``(buffer_size, n_envs, ...)`` storage, shared by add and sample.

Each is a handful of numpy calls over a whole batch: no Python loop per sampled row.
"""

from __future__ import annotations

import numpy as np

from sb3_hir.goals import _pack_goals

__all__ = ["first_after", "take_rows", "value_ids"]


def take_rows(array: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """Rows ``flat`` of a ``(buffer_size, n_envs, ...)`` array, indexing rows and envs as one axis."""
    return array.reshape(-1, *array.shape[2:]).take(flat, axis=0)


def value_ids(achieved: np.ndarray, own_goals: np.ndarray, goal_ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids of goal values (equal ids = equal values) for the T achieved values and the k own goals."""
    values = np.concatenate([achieved, own_goals.astype(achieved.dtype, copy=False)])
    packed = _pack_goals(values, goal_ndim)
    if packed is None:
        flat = values.reshape(len(values), -1)
        _, packed = np.unique(flat, axis=0, return_inverse=True)
        packed = packed.reshape(-1)
    if packed.dtype.itemsize < 8:
        packed = packed.astype(np.int64)
    return packed[: len(achieved)], packed[len(achieved) :]


def first_after(
    order: np.ndarray,
    start: np.ndarray,
    envs: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    after: np.ndarray,
    size: int,
    n_envs: int,
) -> np.ndarray:
    """First step > ``after`` among positions ``[lo, hi]`` of each episode's value-sorted order, or -1.

    Positions ``lo..hi-1`` hold the steps of one value in ascending order; for a goal drawn from step u,
    ``hi`` is u's own position (u itself is past ``after``), for an own goal it is the group's end.
    """
    end = hi
    iterations = int((hi - lo).max()).bit_length() if len(lo) else 0
    for _ in range(iterations):  # a fixed count (the largest group's bit length): no per-round any()
        active = lo < hi
        mid = (lo + hi) >> 1
        at = start + mid
        at[at >= size] -= size
        value = order[at * n_envs + envs if n_envs > 1 else at]
        right = active & (value <= after)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right, hi, mid)
    found = lo < end
    value = order[((start + np.where(found, lo, 0)) % size) * n_envs + envs].astype(np.int64)
    return np.where(found, value, -1)
