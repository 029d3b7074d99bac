"""A source of rows for the sampler: :class:`Source`, the rows with what indexes them and draws from them.

A replay buffer samples from two sources: its online rows (circular, written by SB3's ``add``) and its
demonstrations (a region of whole episodes that online data never overwrites, see
:mod:`~sb3_hir.buffers.demonstrations`). Each source has its own :class:`~sb3_hir.buffers.storage.Storage`, episode
index and draw strategy (with a :class:`~sb3_hir.buffers.draws.DrawView` over its storage); the buffer's settings,
generator and serving are shared, so a demonstration is relabeled, rewarded and terminated exactly as an online
episode is.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.preprocessing import get_action_dim, get_obs_shape

from sb3_hir.buffers.draw_checks import DrawWatch, check_draw
from sb3_hir.buffers.draws import DrawStrategy, DrawView, Relabeled
from sb3_hir.buffers.episode_index import EpisodeIndex, GoalEnvEpisodeIndex
from sb3_hir.buffers.layout import layout_factory
from sb3_hir.buffers.options import BufferOptions
from sb3_hir.buffers.storage import Storage
from sb3_hir.buffers.termination import SuccessTermination

__all__ = ["Source", "SourceBuilder"]


class Source:
    """Rows a sampler draws from (module docstring).

    :param rows: the SB3 buffer whose ``add`` writes the rows (``DictReplayBuffer.add``): a plain
        ``DictReplayBuffer`` for the demonstrations; None for the online rows, which the replay buffer's own ``add``
        writes between :meth:`before_write` and :meth:`after_write` (so no part holds the buffer).
    :param storage: the rows and every read of them.
    :param index: their episode index.
    :param draws: the draw strategy, bound to ``view``.
    :param view: what the strategy reads: the owner's settings over this storage and index.
    """

    def __init__(self, rows: DictReplayBuffer | None, storage: Storage, index: EpisodeIndex, draws: DrawStrategy,
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
        """Store one transition per sub-env (checked by the caller) in a source that holds its rows: SB3's own
        ``add`` between :meth:`before_write` and :meth:`after_write`."""
        assert self.rows is not None, "the online rows are written by the replay buffer's own add()"
        self.before_write(obs, infos)
        DictReplayBuffer.add(self.rows, obs, next_obs, action, reward, done, infos)
        self.after_write(next_obs, done)

    def before_write(self, obs: dict[str, np.ndarray], infos: list[dict[str, Any]]) -> None:
        """The layout's and the index's bookkeeping before SB3's ``add`` writes row ``pos``."""
        storage, index = self.storage, self.index
        storage.before_add(obs, index.running())
        index.record_step(storage.pos)
        if storage.infos is not None:
            storage.infos[storage.pos] = infos

    def after_write(self, next_obs: dict[str, np.ndarray], done: np.ndarray) -> None:
        """After SB3's ``add``: the layout's bookkeeping, and the episodes that end here indexed."""
        storage = self.storage
        storage.after_add(next_obs, done)
        done = np.asarray(done)
        if np.count_nonzero(done):  # cheaper than done.any() on the per-step path
            for env_idx in np.flatnonzero(done.reshape(storage.n_envs)):
                self.end_episode(int(env_idx))

    def end_episode(self, env_idx: int) -> None:
        """Close the running episode of sub-env ``env_idx`` and index it: the index's bookkeeping, then the draw
        strategy's own fields."""
        ended = self.index.end_episode(env_idx)
        if ended is not None:
            episode, meta = ended
            self.draws.index_episode(self.view, episode, meta, self.index.field)
            self.index.store(episode, meta)

    def draw(self, count: int) -> Relabeled | None:
        """``count`` admissible (transition, hindsight instruction) pairs, or fewer (None: none), checked whichever
        strategy drew them (:mod:`~sb3_hir.buffers.draw_checks`)."""
        relabeled = self.draws.draw(self.view, count, self.upper)
        check_draw(relabeled, self.view, self.storage, self.draws, self.watch)
        return relabeled


class SourceBuilder:
    """Builds every source of one buffer, in one place: the online rows and each demonstration region, with the
    buffer's settings, a copy of its draw strategy and the one success-termination rule they share.

    :param options: the buffer's settings.
    :param observation_space: the buffer's observation space (a demonstration region's rows store it).
    :param action_space: the buffer's action space.
    :param device: where sampled tensors go (the demonstration rows are plain ``DictReplayBuffer``\\ s).
    :param draws: the draw strategy, unbound: each source binds a copy of it.
    :param terminate_on_success: the resolved setting (:class:`~sb3_hir.buffers.termination.SuccessTermination`).
    """

    def __init__(self, options: BufferOptions, observation_space: spaces.Dict, action_space: spaces.Space,
                 device: th.device, draws: DrawStrategy, terminate_on_success: bool | None) -> None:
        self.options = options
        self.observation_space = observation_space
        self.action_space = action_space
        self.device = device
        self.draws = draws
        self.terminate_on_success = terminate_on_success
        #: the rule every source serves by, made with the online source (its index holds the evidence).
        self.termination: SuccessTermination | None = None

    @property
    def obs_shape(self) -> dict[str, tuple[int, ...]]:
        shapes = get_obs_shape(self.observation_space)
        assert isinstance(shapes, dict)
        return shapes

    @property
    def action_dim(self) -> int:
        return get_action_dim(self.action_space)

    def online(self, rows: DictReplayBuffer, infos: np.ndarray | None, cursor: Any, rng: np.random.Generator
               ) -> Source:
        """The online source over the arrays of ``rows`` (the replay buffer, whose own ``add`` writes them; the source
        keeps its arrays, not it) through ``cursor``, drawn with ``rng``; its episode index holds the evidence of the
        success-termination rule."""
        storage = Storage.of_rows(rows, infos, cursor, self._spec.goals_key, self._spec.achieved_key, self._layout())
        index = self.index_for(storage)
        self.termination = SuccessTermination(self.terminate_on_success, index)
        return self._source(None, storage, index, rng)

    def demonstrations(self, capacity: int, seed: int) -> Source:
        """An empty source for ``capacity`` demonstration transitions of one env: a plain ``DictReplayBuffer``'s
        rows (never wrapped), a generator of its own seeded with ``seed`` (so the online rows' draws do not depend on
        whether demonstrations are mixed in)."""
        options = self.options
        rows = DictReplayBuffer(capacity, self.observation_space, self.action_space, device=self.device, n_envs=1,
                                handle_timeout_termination=options.handle_timeout_termination)
        infos = np.empty((capacity, 1), dtype=object) if options.copy_info_dict else None
        storage = Storage.of_rows(rows, infos, rows, self._spec.goals_key, self._spec.achieved_key, self._layout())
        return self._source(rows, storage, self.index_for(storage), np.random.default_rng(seed))

    def copy(self, source: Source) -> Source:
        """A deep copy of ``source`` (to stage demonstrations in) sharing what every source shares: the settings and
        the success-termination rule."""
        return copy.deepcopy(source, {id(self.options): self.options, id(self.termination): self.termination})

    def rebuilt(self, rows: DictReplayBuffer | None, storage: Storage, index: EpisodeIndex, draws: DrawStrategy,
                rng: np.random.Generator) -> Source:
        """A source of parts pickled by an earlier version (``legacy``), with a view of today's."""
        index.options, index.storage = self.options, storage
        return Source(rows, storage, index, draws, DrawView(self.options, storage, index, rng, self.termination))

    @property
    def _spec(self) -> Any:
        return self.options.relabeler.goal_spec

    def _layout(self) -> Any:
        return layout_factory(self.options.compact, self._spec.achieved_key)

    def index_for(self, storage: Storage) -> EpisodeIndex:
        """A new episode index over ``storage``, of the options' mode."""
        index_class = GoalEnvEpisodeIndex if self.options.goal_env else EpisodeIndex
        return index_class(storage, self.options, tuple(self.draws.fields))

    def _source(self, rows: DictReplayBuffer | None, storage: Storage, index: EpisodeIndex, rng: np.random.Generator
                ) -> Source:
        draws = copy.deepcopy(self.draws)
        view = DrawView(self.options, storage, index, rng, self.termination)
        draws.bind(view)
        index.with_fields(tuple(draws.fields))
        draws.allocate(view, index.meta.dtype)
        return Source(rows, storage, index, draws, view)
