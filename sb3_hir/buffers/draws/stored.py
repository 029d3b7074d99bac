"""Relabelers without a batched ``draw_goal_steps`` (plugins that only implement ``relabel_goals``): draws stored
when an episode ends.

The relabeler is called ``draws_per_episode`` times on the stored episode when it ends, and its draws (goals and their
reach steps) are kept in the episode's first rows; a sample picks one of those draws at random.
"""

from __future__ import annotations

import numpy as np

from sb3_hir.buffers.draws.base import Candidates, DrawStrategy
from sb3_hir.buffers.episode_index import EndedEpisode, EpisodeIndex
from sb3_hir.buffers.storage import Storage, take_rows
from sb3_hir.episodes import Episode

__all__ = ["StoredDraws", "stored_episode"]


class StoredDraws(DrawStrategy):
    """A draw picked from those the relabeler made when the episode ended (module docstring); numpy only.

    :param num_goals: goals per instruction.
    :param goal_shape: shape of one goal.
    :param draws_per_episode: draws stored per episode (at most its length).
    """

    #: how many draws the episode's first rows hold.
    fields = ("ndraw",)

    def __init__(self, num_goals: int, goal_shape: tuple[int, ...], draws_per_episode: int) -> None:
        self.num_goals = num_goals
        self.goal_shape = goal_shape
        self.draws_per_episode = draws_per_episode
        #: ``(buffer_size, n_envs, k, *goal_shape)`` goals and ``(buffer_size, n_envs, k)`` reach steps of the draws,
        #: allocated by :meth:`allocate`.
        self.goals: np.ndarray | None = None
        self.reach: np.ndarray | None = None
        super().__init__()

    def allocate(self, buffer: Storage, steps_dtype: np.dtype) -> None:
        """Room for the draws, one per row (an episode's draws go in its first rows)."""
        rows = (buffer.buffer_size, buffer.n_envs)
        goals_dtype = buffer.observations[buffer.goal_spec.goals_key].dtype
        self.goals = np.zeros((*rows, self.num_goals, *self.goal_shape), dtype=goals_dtype)
        self.reach = np.zeros((*rows, self.num_goals), dtype=steps_dtype)

    def index_episode(self, buffer: Storage, episode: EndedEpisode, meta: np.ndarray, field: dict[str, int]) -> None:
        assert self.goals is not None and self.reach is not None
        rows, env_idx = episode.rows, episode.env
        stored = stored_episode(buffer, env_idx, rows)
        relabeler = buffer.relabeler
        draws = 0
        for _ in range(min(self.draws_per_episode, episode.length)):
            goals = relabeler.relabel_goals(stored, buffer.rng)
            if goals is None:
                continue
            self.goals[rows[draws], env_idx] = goals
            self.reach[rows[draws], env_idx] = relabeler.reach_steps(episode.achieved_all, goals)
            draws += 1
        meta[:, field["ndraw"]] = draws

    def _instructions(self, buffer: Storage, index: EpisodeIndex, rows: Candidates
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        assert self.goals is not None and self.reach is not None
        own_goals = rows.own_goals
        ndraw = rows.meta[:, index.field["ndraw"]].astype(np.int64)
        pick = (buffer.rng.random(len(rows.flat)) * np.maximum(ndraw, 1)).astype(np.int64)
        draw_flat = ((rows.start + pick) % buffer.buffer_size) * buffer.n_envs + rows.env
        has = ndraw > 0
        goals = np.where(has.reshape(-1, *(1,) * (own_goals.ndim - 1)), take_rows(self.goals, draw_flat), own_goals)
        reach = np.where(has[:, None], take_rows(self.reach, draw_flat), rows.own_steps).astype(np.int64)
        return goals, reach, None


def stored_episode(buffer: Storage, env_idx: int, rows: np.ndarray) -> Episode:
    """The stored episode, with observations ``[obs_0, next_obs_0, ..., next_obs_{T-1}]``."""
    layout, flat = buffer._layout, np.asarray(rows) * buffer.n_envs + env_idx
    observations = {
        key: np.concatenate((layout.obs_rows(buffer, key, flat[:1]), layout.next_rows(buffer, key, flat)))
        for key in layout.keys(buffer)
    }
    timeouts = buffer.timeouts[rows, env_idx].astype(bool)
    dones = buffer.dones[rows, env_idx].astype(bool)
    return Episode(
        observations=observations,
        actions=buffer.actions[rows, env_idx],
        rewards=buffer.rewards[rows, env_idx],
        terminated=dones & ~timeouts,
        truncated=dones & timeouts,
    )
