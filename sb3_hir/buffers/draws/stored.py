"""Relabelers without a batched ``draw_goal_steps`` (plugins that only implement ``relabel_goals``): draws stored
when an episode ends.

The relabeler is called ``draws_per_episode`` times on the stored episode when it ends, and its draws (goals and their
reach steps) are kept in the episode's first rows; a sample picks one of those draws at random.
"""

from __future__ import annotations

import numpy as np

from sb3_hir._validate import check_int
from sb3_hir.buffers.draws.base import Candidates, DrawStrategy, Instructions
from sb3_hir.buffers.draws.view import DrawView
from sb3_hir.buffers.episode_index import EndedEpisode
from sb3_hir.buffers.storage import take_rows

__all__ = ["StoredDraws"]


class StoredDraws(DrawStrategy):
    """A draw picked from those the relabeler made when the episode ended (module docstring); numpy only.

    :param draws_per_episode: draws stored per episode (at most its length).
    :param num_goals: goals per instruction (None: the buffer's).
    :param goal_shape: shape of one goal (None: the buffer's).
    """

    #: how many draws the episode's first rows hold.
    fields = ("ndraw",)

    def __init__(self, draws_per_episode: int = 4, num_goals: int | None = None,
                 goal_shape: tuple[int, ...] | None = None) -> None:
        self.num_goals = num_goals
        self.goal_shape = goal_shape
        self.draws_per_episode = check_int(draws_per_episode, "draws_per_episode", 1)
        #: ``(buffer_size, n_envs, k, *goal_shape)`` goals and ``(buffer_size, n_envs, k)`` reach steps of the draws,
        #: allocated by :meth:`allocate`.
        self.goals: np.ndarray | None = None
        self.reach: np.ndarray | None = None
        super().__init__()

    def setup(self, view: DrawView) -> None:
        for name, value in (("num_goals", view.num_goals), ("goal_shape", tuple(view.goal_shape))):
            if getattr(self, name) is None:
                setattr(self, name, value)
            elif tuple(np.atleast_1d(getattr(self, name))) != tuple(np.atleast_1d(value)):
                raise ValueError(f"draw strategy 'stored': {name}={getattr(self, name)} does not fit the buffer's "
                                 f"{value}; leave it None")

    def allocate(self, view: DrawView, steps_dtype: np.dtype) -> None:
        """Room for the draws, one per row (an episode's draws go in its first rows)."""
        assert self.num_goals is not None and self.goal_shape is not None, "setup() fills them from the buffer"
        rows = (view.buffer_size, view.n_envs)
        goals_dtype = view.goals_dtype
        self.goals = np.zeros((*rows, self.num_goals, *self.goal_shape), dtype=goals_dtype)
        self.reach = np.zeros((*rows, self.num_goals), dtype=steps_dtype)

    def index_episode(self, view: DrawView, episode: EndedEpisode, meta: np.ndarray, field: dict[str, int]) -> None:
        assert self.goals is not None and self.reach is not None
        rows, env_idx = episode.rows, episode.env
        stored = view.episode(env_idx, rows)
        relabeler = view.relabeler
        draws = 0
        groups = view.own_groups(np.array([rows[0]]), np.array([env_idx]))
        for _ in range(min(self.draws_per_episode, episode.length)):
            goals = relabeler.relabel_goals(stored, view.rng)
            if goals is None:
                continue
            self.goals[rows[draws], env_idx] = goals
            self.reach[rows[draws], env_idx] = (relabeler.reach_steps(episode.achieved_all, goals) if groups is None
                                                else relabeler.reach_steps(episode.achieved_all, goals, groups[0]))
            draws += 1
        meta[:, field["ndraw"]] = draws

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        assert self.goals is not None and self.reach is not None
        assert view.index is not None, "the episode index is built with the buffer, before any draw"
        own_goals = rows.own_goals
        ndraw = rows.meta[:, view.index.field["ndraw"]].astype(np.int64)
        pick = (view.rng.random(len(rows.flat)) * np.maximum(ndraw, 1)).astype(np.int64)
        draw_flat = ((rows.start + pick) % view.buffer_size) * view.n_envs + rows.env
        has = ndraw > 0
        goals = np.where(has.reshape(-1, *(1,) * (own_goals.ndim - 1)), take_rows(self.goals, draw_flat), own_goals)
        reach = np.where(has[:, None], take_rows(self.reach, draw_flat), rows.own_steps).astype(np.int64)
        return Instructions(goals, reach)

