"""The buffer's storage as its components read it, and the vectorized row arithmetic over it.

SB3 stores each array as ``(buffer_size, n_envs, ...)``. The episode index, the draw strategies and the serving read
those arrays through :class:`Storage`, the part of the buffer they rely on, and index rows and sub-envs as one flat
axis (``row * n_envs + env``): one ``take`` per batch, no Python loop per sampled row.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_hir.goals import GoalSpec, _pack_goals
from sb3_hir.relabel import InstructionRelabeler

__all__ = ["Layout", "Storage", "achieved_at", "take_rows", "value_ids"]


class Layout(Protocol):
    """How the observations are stored (``layout``): what reads observations at rows goes through it."""

    def keys(self, buffer: Any) -> list[str]: ...

    def obs_rows(self, buffer: Any, key: str, flat: np.ndarray) -> np.ndarray: ...

    def next_rows(self, buffer: Any, key: str, flat: np.ndarray) -> np.ndarray: ...

    def obs_batch(self, buffer: Any, flat: np.ndarray) -> dict[str, np.ndarray]: ...

    def next_batch(self, buffer: Any, flat: np.ndarray) -> dict[str, np.ndarray]: ...


class Storage(Protocol):
    """What the buffer's components read of it: SB3's arrays, sizes and normalization, the relabeling settings, the
    generator, and (GoalEnv mode) the env's ``compute_reward``."""

    buffer_size: int
    n_envs: int
    pos: int
    full: bool
    observation_space: spaces.Dict
    #: each key's shape of one observation (SB3's ``get_obs_shape``).
    obs_shape: dict[str, tuple[int, ...]]
    device: th.device
    observations: dict[str, np.ndarray]
    next_observations: dict[str, np.ndarray]
    actions: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    timeouts: np.ndarray
    #: per-row infos for ``compute_reward`` (``copy_info_dict``), else None.
    infos: np.ndarray | None
    copy_info_dict: bool
    relabeler: InstructionRelabeler
    goal_spec: GoalSpec
    num_goals: int
    goal_shape: tuple[int, ...]
    goal_selection: str
    n_steps: int
    gamma: float
    max_redraws: int
    #: the generator of relabeled rows and their draws.
    rng: np.random.Generator
    env: VecEnv | None
    #: the env's ``compute_reward`` checked at its first use (``serving.GoalEnvServing``).
    _reward_checked: bool
    #: how observations are stored: every key twice (SB3's layout) or once (``optimize_memory_usage``). The
    #: achieved-goal key's ``next_observations`` and the goals key's ``observations`` are stored in both.
    _layout: Layout

    @property
    def terminates_on_success(self) -> bool: ...

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, infos: Any) -> np.ndarray: ...

    @staticmethod
    def _normalize_obs(obs: dict[str, np.ndarray], env: VecNormalize | None) -> dict[str, np.ndarray]: ...

    @staticmethod
    def _normalize_reward(reward: np.ndarray, env: VecNormalize | None) -> np.ndarray: ...


def take_rows(array: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """Rows ``flat`` of a ``(buffer_size, n_envs, ...)`` array, indexing rows and envs as one axis."""
    return array.reshape(-1, *array.shape[2:]).take(flat, axis=0)


def achieved_at(buffer: Storage, rows: np.ndarray, env_idx: np.ndarray | int) -> np.ndarray:
    """Achieved values after the transitions in ``rows``, shaped ``(*rows.shape, *goal_shape)``."""
    flat = np.asarray(rows) * buffer.n_envs + env_idx  # one flat take: faster than 2-d fancy indexing
    values = take_rows(buffer.next_observations[buffer.goal_spec.achieved_key], flat.reshape(-1))
    return values.reshape(*np.shape(flat), *buffer.goal_shape)


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
