"""The rows of a replay buffer and every read of them: :class:`Storage`.

SB3 stores each array as ``(buffer_size, n_envs, ...)``. :class:`Storage` holds those arrays (the buffer's own
objects, which SB3's ``DictReplayBuffer.add`` writes), the write cursor and how observations are laid out (full or
compact, ``layout``), and it is the one place they are read: the episode index, the draw strategies (through their
``DrawView``), the serving and the demonstrations ask it for rows, never the buffer. Rows and sub-envs are indexed as
one flat axis (``row * n_envs + env``): one ``take`` per batch, no Python loop per sampled row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from gymnasium import spaces

from sb3_hir.episodes import Episode
from sb3_hir.goals import pack_goals

__all__ = ["Cursor", "Layout", "LayoutFactory", "Storage", "goal_groups", "take_rows", "value_ids"]


class Layout(Protocol):
    """How the observations are stored (``layout``): the storage reads observations at rows through it."""

    def keys(self, storage: Any) -> list[str]: ...

    def obs_rows(self, storage: Any, key: str, flat: np.ndarray) -> np.ndarray: ...

    def next_rows(self, storage: Any, key: str, flat: np.ndarray) -> np.ndarray: ...

    def obs_batch(self, storage: Any, flat: np.ndarray, rewritten: int | None = None) -> dict[str, np.ndarray]: ...

    def next_batch(self, storage: Any, flat: np.ndarray, rewritten: int | None = None) -> dict[str, np.ndarray]: ...

    def last_next(self, storage: Any, key: str) -> np.ndarray: ...

    def before_add(self, storage: Any, obs: dict[str, np.ndarray], running: np.ndarray) -> None: ...

    def after_add(self, storage: Any, next_obs: dict[str, np.ndarray], done: np.ndarray) -> None: ...

    def close(self, storage: Any, env_idx: int) -> None: ...

    def reset(self, storage: Any) -> None: ...

    def nbytes(self) -> int: ...


#: builds a storage's layout from the storage itself (the compact layout takes keys out of the arrays it is given):
#: :func:`sb3_hir.buffers.layout.layout_factory`.
LayoutFactory = Callable[["Storage"], Layout]


class Cursor:
    """Where the next transition goes (``pos``) and whether the circular storage has wrapped (``full``): SB3's
    ``BaseBuffer`` attributes, which the buffer exposes as properties over this object."""

    __slots__ = ("full", "pos")

    def __init__(self, pos: int = 0, full: bool = False) -> None:
        self.pos = pos
        self.full = full

    def __getstate__(self) -> tuple[int, bool]:
        return self.pos, self.full

    def __setstate__(self, state: tuple[int, bool]) -> None:
        self.pos, self.full = state


class Storage:
    """A buffer's rows: SB3's arrays, the cursor and the observation layout, and every read of them (module
    docstring).

    :param observations: ``key -> (buffer_size, n_envs, *shape)`` observations (the layout may drop keys).
    :param next_observations: the same for next observations.
    :param actions: ``(buffer_size, n_envs, action_dim)``.
    :param rewards: ``(buffer_size, n_envs)``, as are ``dones`` and ``timeouts``.
    :param infos: per-row infos (``copy_info_dict``), or None.
    :param cursor: the write position (``pos``, ``full``): a :class:`Cursor` the buffer shares, or the SB3 buffer
        whose ``add`` writes these rows.
    :param observation_space: the Dict space of one observation.
    :param obs_shape: each key's shape of one observation.
    :param goals_key: key of the instruction (a GoalEnv's desired goal).
    :param achieved_key: key of the achieved value; every layout keeps its next observations.
    :param layout: how the observations are stored: a factory built on this storage
        (:func:`~sb3_hir.buffers.layout.layout_factory`), or the layout of a pickled buffer, taken as it is.
    """

    def __init__(self, observations: dict[str, np.ndarray], next_observations: dict[str, np.ndarray],
                 actions: np.ndarray, rewards: np.ndarray, dones: np.ndarray, timeouts: np.ndarray,
                 infos: np.ndarray | None, cursor: Any, observation_space: spaces.Dict,
                 obs_shape: dict[str, tuple[int, ...]], goals_key: str, achieved_key: str,
                 layout: Layout | LayoutFactory) -> None:
        self.buffer_size, self.n_envs = rewards.shape
        self.observations = observations
        self.next_observations = next_observations
        self.actions = actions
        self.rewards = rewards
        self.dones = dones
        self.timeouts = timeouts
        self.infos = infos
        self.cursor = cursor
        self.observation_space = observation_space
        self.obs_shape = obs_shape
        self.goals_key = goals_key
        self.achieved_key = achieved_key
        #: ``id(array) -> (array, flat view)``: the flat views :meth:`take` reads through (not pickled).
        self._views: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.layout: Layout = layout(self) if callable(layout) else layout

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_views", None)  # views of the arrays pickled beside them: made again where loaded
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._views = {}

    def take(self, array: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """Rows ``flat`` of ``array``, one of this storage's ``(buffer_size, n_envs, ...)`` arrays: ``take_rows``
        through its flat view (:meth:`flat_rows`)."""
        return self.flat_rows(array).take(flat, axis=0)

    def take_head(self, array: np.ndarray, flat: np.ndarray, count: int) -> np.ndarray:
        """:meth:`take` of rows ``flat`` that reads only the first ``count``: the caller writes the others (the
        relabeled rows' instructions, which serving rewrites), so their scattered reads are not made."""
        _check_head(count, flat, "count")
        rows = self.flat_rows(array)
        out = np.empty((len(flat), *rows.shape[1:]), dtype=rows.dtype)
        rows.take(flat[:count], axis=0, out=out[:count])
        return out

    def flat_rows(self, array: np.ndarray) -> np.ndarray:
        """``array``, one of this storage's ``(buffer_size, n_envs, ...)`` arrays, with rows and sub-envs as one axis:
        a view made once per array, since a reshape on every read costs about as much as the gather of a batch's
        rows. An array replaced in the storage gets a view of its own (the entry holds the array, so its id is not
        reused while cached)."""
        views = self._views
        held = views.get(id(array))
        if held is None or held[0] is not array:
            if len(views) > 256:  # arrays replaced over and over: keep no stale ones alive
                views.clear()
            held = views[id(array)] = (array, array.reshape(-1, *array.shape[2:]))
        return held[1]

    @classmethod
    def of_rows(cls, rows: Any, infos: np.ndarray | None, cursor: Any, goals_key: str, achieved_key: str,
                layout: Layout | LayoutFactory) -> Storage:
        """The storage of an SB3 ``DictReplayBuffer``'s arrays (``rows``: the buffer, or one of its parts' own)."""
        return cls(rows.observations, rows.next_observations, rows.actions, rows.rewards, rows.dones, rows.timeouts,
                   infos, cursor, rows.observation_space, rows.obs_shape, goals_key, achieved_key, layout)

    @property
    def pos(self) -> int:
        return self.cursor.pos

    @property
    def full(self) -> bool:
        return self.cursor.full

    @property
    def newest_row(self) -> int:
        """The row of the newest transition."""
        return (self.cursor.pos - 1) % self.buffer_size

    # -- observations, through the layout --------------------------------------------------------------------------
    def obs_keys(self) -> list[str]:
        """The observation keys, in the observation space's order."""
        return self.layout.keys(self)

    def obs_rows(self, key: str, flat: np.ndarray) -> np.ndarray:
        return self.layout.obs_rows(self, key, flat)

    def next_rows(self, key: str, flat: np.ndarray) -> np.ndarray:
        return self.layout.next_rows(self, key, flat)

    def obs_batch(self, flat: np.ndarray, rewritten: int | None = None) -> dict[str, np.ndarray]:
        """Every key's observation at rows ``flat`` (what ``sample()`` serves); with ``rewritten``, the goals key's
        only at the first ``rewritten`` rows, the others left for the caller to write (:meth:`take_head`)."""
        if rewritten is not None:
            _check_head(rewritten, flat, "rewritten")
        return self.layout.obs_batch(self, flat, rewritten)

    def next_batch(self, flat: np.ndarray, rewritten: int | None = None) -> dict[str, np.ndarray]:
        """Every key's next observation at rows ``flat``; ``rewritten`` as in :meth:`obs_batch`."""
        if rewritten is not None:
            _check_head(rewritten, flat, "rewritten")
        return self.layout.next_batch(self, flat, rewritten)

    def last_next(self, key: str) -> np.ndarray:
        """Every sub-env's newest stored next observation of ``key``, ``(n_envs, *shape)``."""
        return self.layout.last_next(self, key)

    @property
    def achieved(self) -> np.ndarray:
        """``(buffer_size, n_envs, ...)`` the value achieved after each transition: stored in every layout."""
        return self.next_observations[self.achieved_key]

    @property
    def instructions(self) -> np.ndarray:
        """``(buffer_size, n_envs, ...)`` the instruction observed before each transition: stored in every
        layout."""
        return self.observations[self.goals_key]

    def achieved_at(self, rows: np.ndarray, env_idx: np.ndarray | int, goal_shape: tuple[int, ...]) -> np.ndarray:
        """Achieved values after the transitions in ``rows``, shaped ``(*rows.shape, *goal_shape)``."""
        flat = np.asarray(rows) * self.n_envs + env_idx  # one flat take: faster than 2-d fancy indexing
        values = take_rows(self.achieved, flat.reshape(-1))
        return values.reshape(*np.shape(flat), *goal_shape)

    def episode(self, env_idx: int, rows: np.ndarray, with_infos: bool = True) -> Episode:
        """The stored transitions ``rows`` of sub-env ``env_idx`` as an :class:`~sb3_hir.episodes.Episode`
        (observations ``[obs_0, next_obs_0, ..., next_obs_{T-1}]``; the infos when stored and asked for)."""
        rows = np.asarray(rows)
        flat = rows * self.n_envs + env_idx
        observations = {key: np.concatenate((self.obs_rows(key, flat[:1]), self.next_rows(key, flat)))
                        for key in self.obs_keys()}
        timeouts = self.timeouts[rows, env_idx].astype(bool)
        dones = self.dones[rows, env_idx].astype(bool)
        infos = None if self.infos is None or not with_infos else [dict(info) for info in self.infos[rows, env_idx]]
        return Episode(observations, self.actions[rows, env_idx], self.rewards[rows, env_idx], dones & ~timeouts,
                       dones & timeouts, infos)

    # -- what add() tells the layout --------------------------------------------------------------------------------
    def before_add(self, obs: dict[str, np.ndarray], running: np.ndarray) -> None:
        """Called before SB3's ``add`` stores row ``pos`` (``running``: sub-envs with an episode going on)."""
        self.layout.before_add(self, obs, running)

    def after_add(self, next_obs: dict[str, np.ndarray], done: np.ndarray) -> None:
        """Called after SB3's ``add`` stored row ``pos - 1``, before the episodes that ended there are closed."""
        self.layout.after_add(self, next_obs, done)

    def close(self, env_idx: int) -> None:
        """The running episode of ``env_idx`` ends at the newest row without a ``done`` from the env (a splice)."""
        self.layout.close(self, env_idx)

    def reset(self) -> None:
        """The buffer's ``reset`` (SB3 resets the cursor)."""
        self.layout.reset(self)


def take_rows(array: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """Rows ``flat`` of a ``(buffer_size, n_envs, ...)`` array, indexing rows and envs as one axis."""
    return array.reshape(-1, *array.shape[2:]).take(flat, axis=0)


def goal_groups(storage: Storage, spec: Any, num_goals: int, start: np.ndarray, env_idx: np.ndarray
                ) -> np.ndarray | None:
    """``(B, k)`` the goal groups (the goal spec's ``groups_key``) of the episodes starting in rows ``start``, None
    when the spec declares none (every goal its own group, in slot order)."""
    key = spec.groups_key
    if key is None:
        return None
    groups = storage.obs_rows(key, np.asarray(start) * storage.n_envs + env_idx)
    return np.asarray(groups, dtype=np.int64).reshape(len(groups), num_goals)


def value_ids(achieved: np.ndarray, own_goals: np.ndarray, goal_ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids of goal values (equal ids = equal values) for the T achieved values and the k own goals."""
    values = np.concatenate([achieved, own_goals.astype(achieved.dtype, copy=False)])
    packed = pack_goals(values, goal_ndim)
    if packed is None:
        flat = values.reshape(len(values), -1)
        _, packed = np.unique(flat, axis=0, return_inverse=True)
        packed = packed.reshape(-1)
    if packed.dtype.itemsize < 8:
        packed = packed.astype(np.int64)
    return packed[: len(achieved)], packed[len(achieved) :]


def _check_head(count: int, flat: np.ndarray, name: str) -> None:
    """A count of leading rows to read must lie in ``[0, len(flat)]``: a negative one would slice from the end."""
    if not 0 <= count <= len(flat):
        raise ValueError(f"{name} must be a count of leading rows in [0, len(flat)] = [0, {len(flat)}]; got {count!r}")
