"""How observations are laid out in the buffer's storage: SB3's full layout, or the compact one of
``optimize_memory_usage=True``.

The full layout (:class:`FullLayout`) is ``DictReplayBuffer``'s: every key stored as observation and as next
observation, so each observation is held twice. SB3 refuses ``optimize_memory_usage`` for Dict observations, and so
HER stores every image twice (SB3 issues #885, #501).

The compact layout (:class:`CompactLayout`) holds each observation once. The achieved-goal key is stored as *next*
observation, so the draws and their kernels read it exactly as before. Every other key is stored as observation.
What that leaves out is held sparsely, one entry per episode (:class:`SparseRows`):

* the next observation of a key other than the achieved goal is the next row's observation while the episode
  continues. At an episode's last row it is the row's own observation when the episode did not change it (a
  GoalEnv's desired goal), else it comes from the key's end entry for the episode. At the newest row of a running
  episode it is the pending next observation;
* the achieved goal's observation is the previous row's next observation. At an episode's first row it comes from
  the episode's start entry. When the circular buffer overwrites a row, the row after it gets a start entry first,
  so no stored row loses its observation.

The served rows are identical to the full layout's (a golden test checks it). The cost per stored transition is one
copy of each key, two int64 slot ids, and the sparse entries, which are about ``(number of keys) / episode length``
observations (the keys that change at the last step, plus the achieved goal).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sb3_hir.buffers.storage import LayoutFactory, Storage

__all__ = ["CompactLayout", "FullLayout", "SparseRows", "layout_factory"]


def layout_factory(compact: bool, achieved_key: str) -> LayoutFactory:
    """How a new storage lays its observations out: once (:class:`CompactLayout`) or twice, as SB3 does."""
    if compact:
        return lambda storage: CompactLayout(storage, achieved_key)
    return lambda storage: FullLayout()


class FullLayout:
    """SB3's layout: ``observations`` and ``next_observations`` hold every key."""

    def keys(self, storage: Storage) -> list[str]:
        return list(storage.observations)

    def obs_rows(self, storage: Storage, key: str, flat: np.ndarray) -> np.ndarray:
        return storage.take(storage.observations[key], flat)

    def next_rows(self, storage: Storage, key: str, flat: np.ndarray) -> np.ndarray:
        return storage.take(storage.next_observations[key], flat)

    def obs_batch(self, storage: Storage, flat: np.ndarray, rewritten: int | None = None) -> dict[str, np.ndarray]:
        """Every key's observation at rows ``flat`` (what ``sample()`` serves); ``rewritten``: see
        ``Storage.obs_batch``."""
        return _gathered(storage, storage.observations, flat, rewritten)

    def next_batch(self, storage: Storage, flat: np.ndarray, rewritten: int | None = None) -> dict[str, np.ndarray]:
        """Every key's next observation at rows ``flat``."""
        return _gathered(storage, storage.next_observations, flat, rewritten)

    def last_next(self, storage: Storage, key: str) -> np.ndarray:
        """Every sub-env's newest stored next observation of ``key``, ``(n_envs, *shape)``."""
        return storage.next_observations[key][(storage.pos - 1) % storage.buffer_size]

    def before_add(self, storage: Storage, obs: dict[str, np.ndarray],
                   running: np.ndarray) -> None:
        """Called by ``add()`` before it stores row ``pos``."""

    def after_add(self, storage: Storage, next_obs: dict[str, np.ndarray],
                  done: np.ndarray) -> None:
        """Called by ``add()`` after it stored row ``pos - 1``, before it closes the episodes that ended there."""

    def close(self, storage: Storage, env_idx: int) -> None:
        """The running episode of ``env_idx`` ends at the newest row without a ``done`` from the env (a splice)."""

    def reset(self, storage: Storage) -> None:
        """The buffer's ``reset``."""

    def nbytes(self) -> int:
        return 0


def _gathered(storage: Storage, arrays: dict[str, np.ndarray], flat: np.ndarray, rewritten: int | None
              ) -> dict[str, np.ndarray]:
    """Every key of ``arrays`` at rows ``flat``; with ``rewritten``, the goals key's only at the first ``rewritten``
    rows (``Storage.take_head``)."""
    take = storage.take
    if rewritten is None:
        return {key: take(value, flat) for key, value in arrays.items()}
    head = storage.goals_key
    return {key: storage.take_head(value, flat, rewritten) if key == head else take(value, flat)
            for key, value in arrays.items()}


class SparseRows:
    """A few rows of observations, one per entry, in slots that are reused as soon as their entry is released.

    The buffer releases an entry when it overwrites the row the entry belongs to, so the store holds only live
    entries, and grows by a quarter when it is full (no slack of a doubling, no entry ever dropped).

    :param specs: ``key -> (shape, dtype)`` of the stored observations.
    """

    def __init__(self, specs: dict[str, tuple[tuple[int, ...], Any]], capacity: int = 64) -> None:
        self.specs = specs
        self.capacity = capacity
        self.values = {key: np.zeros((capacity, *shape), dtype=dtype) for key, (shape, dtype) in specs.items()}
        self.free = list(range(capacity - 1, -1, -1))  # a stack: the lowest slots are used first

    def put(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """Store ``len`` rows of ``values`` (one array per key); their slots."""
        n = len(next(iter(values.values())))
        if n > len(self.free):
            self._grow(n - len(self.free))
        slots = np.array([self.free.pop() for _ in range(n)], dtype=np.int32)
        for key, value in values.items():
            self.values[key][slots] = value
        return slots

    def release(self, slots: np.ndarray) -> None:
        self.free.extend(int(slot) for slot in slots)

    def take(self, key: str, slots: np.ndarray) -> np.ndarray:
        return self.values[key][slots]

    def _grow(self, missing: int) -> None:
        old = self.capacity
        self.capacity = max(old + missing, old + old // 4)
        for key, value in self.values.items():
            grown = np.zeros((self.capacity, *value.shape[1:]), dtype=value.dtype)
            grown[:old] = value
            self.values[key] = grown
        self.free[:0] = range(self.capacity - 1, old - 1, -1)  # below the stack's top: used after the freed ones

    def clear(self) -> None:
        self.free = list(range(self.capacity - 1, -1, -1))

    def nbytes(self) -> int:
        return sum(value.nbytes for value in self.values.values())


class CompactLayout(FullLayout):
    """``optimize_memory_usage=True``: each observation stored once (see the module docstring).

    Built by the buffer after ``DictReplayBuffer.__init__``; it drops from the storage the arrays the layout does not
    keep (SB3 allocates them with ``np.zeros``, whose pages are never touched), so ``DictReplayBuffer.add`` stores
    only the kept ones.
    """

    def __init__(self, storage: Storage, achieved_key: str) -> None:
        self.achieved = achieved_key
        self.order = list(storage.observations)
        self.others = [key for key in self.order if key != achieved_key]
        spaces = storage.observation_space.spaces
        del storage.observations[achieved_key]
        for key in self.others:
            del storage.next_observations[key]
        size, n_envs = storage.buffer_size, storage.n_envs
        #: per row: the slot of the episode's start entry (first rows) and, per key, of its end entry (last rows
        #: whose next observation of the key differs from their own), else -1.
        self.start_slot = np.full((size, n_envs), -1, dtype=np.int32)
        self.end_slot = {key: np.full((size, n_envs), -1, dtype=np.int32) for key in self.others}
        self.starts = SparseRows({achieved_key: (storage.obs_shape[achieved_key], spaces[achieved_key].dtype)})
        self.ends = {key: SparseRows({key: (storage.obs_shape[key], spaces[key].dtype)}) for key in self.others}
        #: each sub-env's newest next observation of the keys stored as observations (the next row's, once added).
        self.pending = {key: np.zeros((n_envs, *storage.obs_shape[key]), dtype=spaces[key].dtype)
                        for key in self.others}

    def keys(self, storage: Storage) -> list[str]:
        return self.order

    def obs_rows(self, storage: Storage, key: str, flat: np.ndarray) -> np.ndarray:
        if key != self.achieved:
            return storage.take(storage.observations[key], flat)
        # flat indices step by n_envs per row, so the previous row is n_envs back, wrapping around the buffer
        previous = flat - storage.n_envs
        previous[previous < 0] += storage.buffer_size * storage.n_envs
        values = storage.take(storage.next_observations[key], previous)
        slots = self.start_slot.reshape(-1)[flat]
        starts = np.flatnonzero(slots >= 0)
        if len(starts):
            values[starts] = self.starts.take(key, slots[starts])
        return values

    def next_rows(self, storage: Storage, key: str, flat: np.ndarray) -> np.ndarray:
        return self._next(storage, [key], flat)[key]

    def obs_batch(self, storage: Storage, flat: np.ndarray, rewritten: int | None = None) -> dict[str, np.ndarray]:
        head = storage.goals_key
        if rewritten is None or head == self.achieved:
            return {key: self.obs_rows(storage, key, flat) for key in self.order}
        return {key: storage.take_head(storage.observations[key], flat, rewritten) if key == head
                else self.obs_rows(storage, key, flat) for key in self.order}

    def next_batch(self, storage: Storage, flat: np.ndarray, rewritten: int | None = None) -> dict[str, np.ndarray]:
        """Every key's next observation at rows ``flat``, ``rewritten`` ones too: they are found from the rows'
        successors, episode ends and pending observations, for every key at once."""
        return self._next(storage, self.order, flat)

    def _next(self, storage: Storage, keys: list[str], flat: np.ndarray
              ) -> dict[str, np.ndarray]:
        """The next observations of ``keys`` at rows ``flat``: the rows' successors, ends and the newest row are
        found once for all keys."""
        n_envs, total = storage.n_envs, storage.buffer_size * storage.n_envs
        is_last = storage.dones.reshape(-1)[flat] > 0  # every episode's last row, and only those
        ended = np.flatnonzero(is_last)
        newest_row = ((storage.pos - 1) % storage.buffer_size) * n_envs
        newest = np.flatnonzero((flat >= newest_row) & (flat < newest_row + n_envs) & ~is_last)
        last = flat[ended]
        # the successor row while the episode continues; an episode's last row holds its own observation unless
        # an end slot says otherwise
        source = flat + n_envs
        source[source >= total] -= total
        source[ended] = last
        out = {}
        for key in keys:
            if key == self.achieved:
                out[key] = storage.take(storage.next_observations[key], flat)
                continue
            values = storage.take(storage.observations[key], source)
            if len(ended):
                slots = self.end_slot[key].reshape(-1)[last]
                has = np.flatnonzero(slots >= 0)
                if len(has):
                    values[ended[has]] = self.ends[key].take(key, slots[has])
            if len(newest):
                values[newest] = self.pending[key][flat[newest] - newest_row]
            out[key] = values
        return out

    def last_next(self, storage: Storage, key: str) -> np.ndarray:
        if key == self.achieved:
            return super().last_next(storage, key)
        return self.pending[key]

    def before_add(self, storage: Storage, obs: dict[str, np.ndarray],
                   running: np.ndarray) -> None:
        pos = storage.pos
        if storage.full:  # row pos is overwritten: the row after it keeps its achieved observation as a start entry
            after = (pos + 1) % storage.buffer_size
            orphans = np.flatnonzero(self.start_slot[after] < 0)
            if len(orphans) and after != pos:
                values = storage.next_observations[self.achieved][pos, orphans]
                self.start_slot[after, orphans] = self.starts.put({self.achieved: values})
            self._release(self.starts, self.start_slot, pos)
            for key in self.others:
                self._release(self.ends[key], self.end_slot[key], pos)
        starting = np.flatnonzero(~running)
        if len(starting):
            values = np.asarray(obs[self.achieved]).reshape(storage.n_envs, *storage.obs_shape[self.achieved])
            self.start_slot[pos, starting] = self.starts.put({self.achieved: values[starting]})

    @staticmethod
    def _release(store: SparseRows, slots: np.ndarray, row: int) -> None:
        """Row ``row`` is overwritten: its entries go."""
        held = slots[row][slots[row] >= 0]
        if len(held):
            store.release(held)
            slots[row] = -1

    def after_add(self, storage: Storage, next_obs: dict[str, np.ndarray],
                  done: np.ndarray) -> None:
        for key in self.others:
            self.pending[key][:] = np.asarray(next_obs[key]).reshape(self.pending[key].shape)
        ended = np.flatnonzero(np.asarray(done).reshape(storage.n_envs))
        if len(ended):
            self._end(storage, ended)

    def close(self, storage: Storage, env_idx: int) -> None:
        self._end(storage, np.array([env_idx]))

    def _end(self, storage: Storage, envs: np.ndarray) -> None:
        """End entries for the newest row of ``envs``: their pending next observations that differ from the row's."""
        row = (storage.pos - 1) % storage.buffer_size
        for key in self.others:
            pending, own = self.pending[key][envs], storage.observations[key][row, envs]
            differ = (pending != own).reshape(len(envs), -1).any(axis=1)
            if differ.any():
                self.end_slot[key][row, envs[differ]] = self.ends[key].put({key: pending[differ]})

    def reset(self, storage: Storage) -> None:
        self.start_slot.fill(-1)
        self.starts.clear()
        for key in self.others:
            self.end_slot[key].fill(-1)
            self.ends[key].clear()

    def nbytes(self) -> int:
        return (self.start_slot.nbytes + self.starts.nbytes()
                + sum(self.end_slot[key].nbytes + self.ends[key].nbytes() + self.pending[key].nbytes
                      for key in self.others))
