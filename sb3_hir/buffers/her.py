"""The drop-in for SB3's ``HerReplayBuffer``: swap the import, nothing else."""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.her.her_replay_buffer import HerReplayBuffer as SB3HerReplayBuffer

from sb3_hir.buffers.hindsight import HindsightInstructionReplayBuffer

__all__ = ["HerReplayBuffer"]


def _read_only(name: str) -> property:
    """A property that derives HER's array ``name`` and refuses assignment, since nothing would read a copy."""

    def get(self: HerReplayBuffer) -> np.ndarray:
        return self._her_view(name)

    def refuse(self: HerReplayBuffer, value: Any = None) -> None:
        raise AttributeError(
            f"HerReplayBuffer.{name} is read-only: sb3_hir derives it from its own episode bookkeeping on every "
            "read (SB3's HER arrays do not exist here); episodes end through add() and truncate_last_trajectory()"
        )

    return property(get, refuse, refuse, f"HER's ``{name}``, derived on read (see :class:`HerReplayBuffer`).")


class HerReplayBuffer(HindsightInstructionReplayBuffer, SB3HerReplayBuffer):
    """The drop-in for SB3's ``HerReplayBuffer``: :class:`HindsightInstructionReplayBuffer`, treated by SB3 as HER.

    Swap the import (``from sb3_hir import HerReplayBuffer``) and nothing else: the migration is one line, as for
    ``sb3_hir.dagger``, and code that tests for HER by type (SB3's ``isinstance``) or by name finds it.

    GoalEnvs as they come, HER's ``replay_buffer_kwargs``, the env's own
    ``compute_reward``. SB3 hands HER subclasses the env at construction and calls ``set_env`` when it loads a
    saved buffer (and, as for HER, ``Model.load`` then needs ``env=``). It inherits nothing of HER's storage or
    sampling: every method comes from :class:`HindsightInstructionReplayBuffer` (first in the MRO); it works for
    instruction envs too.

    HER's episode arrays ``_current_ep_start`` (``(n_envs,)``), ``ep_start`` and ``ep_length``
    (``(buffer_size, n_envs)``) are read-only views, for code written against HER that reads them (SB3's own tests
    do). They hold HER's numbers: the row where each sub-env's next episode starts; per row, the row of its
    episode's first transition and, once the episode has ended (``done`` or ``truncate_last_trajectory``) and until
    the circular buffer overwrites its first row, its length (0 otherwise); 0 in rows never written. Each read
    derives them from the buffer's own bookkeeping in O(buffer_size), so no second copy can fall out of sync. They
    differ from HER's arrays only where HER's numbers are artefacts of its bookkeeping:

    * an episode of ``buffer_size`` steps or more (per env): HER records its length modulo ``buffer_size`` in its
      last rows, the views 0 (the same at exactly ``buffer_size``, though this buffer relabels that one; longer ones
      are served as recorded). HER's ``truncate_last_trajectory`` leaves it running when its length is a multiple of
      ``buffer_size`` (its first row is then ``pos``); this one closes it. Once such an episode has ended after more
      than 32767 steps, its ``ep_start`` may be wrong if ``buffer_size <= 32767`` (steps are stored as int16);
    * ``add()`` closes an episode that a reset interrupted (see :class:`HindsightInstructionReplayBuffer`), where
      HER runs it on;
    * ``reset()`` starts the views afresh, where HER keeps its arrays.
    """

    _her_drop_in = True
    _current_ep_start = _read_only("_current_ep_start")
    ep_start = _read_only("ep_start")
    ep_length = _read_only("ep_length")

    def _her_view(self, name: str) -> np.ndarray:
        """HER's array ``name`` from the episode index (each row's episode id, step ``t``, length; each episode's
        start), ``pos`` and ``full``."""
        size, index = self.buffer_size, self._index
        field, meta = index.field, index.meta
        current = index.episode_start % size
        if name == "_current_ep_start":
            current.flags.writeable = False
            return current
        rows = np.arange(size)[:, None]
        written = rows < (size if self.full else self.pos)
        start = (rows - meta[:, :, field["t"]]) % size
        # Rows of a running episode take its start from num_adds: their step t wraps past 32767 steps in int16.
        written_at = index.num_adds - 1 - (self.pos - 1 - rows) % size
        start = np.where(written_at >= index.episode_start, current, start)
        start = np.where(written, start, 0).astype(np.int64)
        if name == "ep_start":
            start.flags.writeable = False
            return start
        ids = meta[:, :, field["id"]]
        # HER forgets an episode's length when it overwrites the episode's first row, as the id there then tells.
        intact = np.take_along_axis(ids, start, axis=0) == ids
        length = meta[:, :, field["len"]].astype(np.int64)
        length = np.where(intact & (length < size), length, 0)
        length.flags.writeable = False
        return length
