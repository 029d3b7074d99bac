"""A source of rows for the sampler: :class:`Source`, the rows with what indexes them and draws from them.

A replay buffer samples from two sources: its online rows (circular, written by SB3's ``add``) and its
demonstrations (a region of whole episodes that online data never overwrites, see
:mod:`~sb3_hir.buffers.demonstrations`). Each source has its own :class:`~sb3_hir.buffers.storage.Storage`, episode
index and draw strategy (with a :class:`~sb3_hir.buffers.draws.DrawView` over its storage); the buffer's settings,
generator and serving are shared, so a demonstration is relabeled, rewarded and terminated exactly as an online
episode is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.buffers import DictReplayBuffer

from sb3_hir.buffers.draw_checks import DrawWatch, check_draw
from sb3_hir.buffers.draws import DrawStrategy, DrawView, Relabeled
from sb3_hir.buffers.episode_index import EpisodeIndex
from sb3_hir.buffers.storage import Storage

__all__ = ["Source"]


class Source:
    """Rows a sampler draws from (module docstring).

    :param rows: the SB3 buffer whose ``add`` writes the rows (``DictReplayBuffer.add``): the replay buffer itself
        for its online rows, a plain ``DictReplayBuffer`` for its demonstrations.
    :param storage: the rows and every read of them.
    :param index: their episode index.
    :param draws: the draw strategy, bound to ``view``.
    :param view: what the strategy reads: the owner's settings over this storage and index.
    """

    def __init__(self, rows: DictReplayBuffer, storage: Storage, index: EpisodeIndex, draws: DrawStrategy,
                 view: DrawView) -> None:
        self.rows = rows
        self.storage = storage
        self.index = index
        self.draws = draws
        self.view = view
        #: the draws that admitted nothing (``draw_checks``).
        self.watch = DrawWatch()

    @property
    def upper(self) -> int:
        """The rows filled: ``[0, upper)``."""
        return self.storage.buffer_size if self.storage.full else self.storage.pos

    def add(self, obs: dict[str, np.ndarray], next_obs: dict[str, np.ndarray], action: np.ndarray,
            reward: np.ndarray, done: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """Store one transition per sub-env (checked by the caller): the layout's and the index's bookkeeping around
        SB3's own ``add``, and the episodes that end here indexed."""
        storage, index = self.storage, self.index
        storage.before_add(obs, index.running())
        index.record_step(storage.pos)
        if storage.infos is not None:
            storage.infos[storage.pos] = infos
        DictReplayBuffer.add(self.rows, obs, next_obs, action, reward, done, infos)
        storage.after_add(next_obs, done)
        done = np.asarray(done)
        if np.count_nonzero(done):  # cheaper than done.any() on the per-step path
            for env_idx in np.flatnonzero(done.reshape(storage.n_envs)):
                index.end_episode(int(env_idx))

    def draw(self, count: int) -> Relabeled | None:
        """``count`` admissible (transition, hindsight instruction) pairs, or fewer (None: none), checked whichever
        strategy drew them (:mod:`~sb3_hir.buffers.draw_checks`)."""
        relabeled = self.draws.draw(self.view, count, self.upper)
        if "watch" not in self.__dict__:  # pickled before the checks
            self.watch = DrawWatch()
        check_draw(relabeled, self.view, self.storage, self.draws, self.watch)
        return relabeled
