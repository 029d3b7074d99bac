"""Relabelers with a batched ``draw_goal_steps``: goal steps per sample, then the goals' reach steps.

The relabeler draws, per sampled transition, the steps whose achieved values become the instruction's goals (-1: the
episode's own goal j, :meth:`~sb3_hir.relabel.HindsightInstructionRelabeler.draw_goal_steps`); the strategy finds where
each goal is reached in order, from the exact-value index (:mod:`.exact_index`) or by comparing the episode window
(:mod:`.window`). The built-in relabeler's draw runs compiled (``compiled.draw_goal_steps``, the same draws). Event
goals (a goal spec's ``nothing_value``) are drawn among the steps that achieved something (:mod:`.event_steps`).
"""

from __future__ import annotations

import numpy as np

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws.base import Candidates, DrawStrategy, Instructions, admissible
from sb3_hir.buffers.draws.event_steps import (
    EVENT_FIELDS,
    event_goal_steps_boxed,
    event_ranks,
    index_events,
    rank_steps,
)
from sb3_hir.buffers.draws.view import DrawView
from sb3_hir.buffers.episode_index import EndedEpisode

__all__ = ["GoalStepsDraw"]


def _has_levels(view: DrawView) -> bool:
    return view.goal_spec.description_levels is not None


class GoalStepsDraw(DrawStrategy):
    """Goal steps from the relabeler, reach steps from :meth:`reach_steps` (module docstring).

    :param builtin: the relabeler's ``draw_goal_steps`` is :class:`~sb3_hir.relabel.HindsightInstructionRelabeler`'s,
        which the compiled kernels reproduce. None: decided from the buffer's relabeler.
    """

    #: class default, for strategies pickled before event goals (an instance sets its own in ``__init__``).
    events = False

    def __init__(self, builtin: bool | None = None) -> None:
        self.builtin = builtin
        #: event goals (the goal spec declares ``nothing_value``): goal steps drawn among the event steps.
        self.events = False
        super().__init__()

    def setup(self, view: DrawView) -> None:
        if not callable(getattr(view.relabeler, "draw_goal_steps", None)):
            raise ValueError(f"draw strategy {self.name} draws through the relabeler's draw_goal_steps, which "
                             f"{type(view.relabeler).__name__} lacks: use 'stored'")
        if self.builtin is None:
            self.builtin = view.builtin_relabeler
        self.events = view.goal_spec.nothing_value is not None
        if self.events:
            self.fields = (*type(self).fields, *EVENT_FIELDS)
        self.use_compiled(self.compiled)

    def use_compiled(self, on: bool) -> None:
        super().use_compiled(on)
        self._goal_steps = self._compiled_goal_steps if on and self.builtin else self._relabeler_goal_steps

    def index_episode(self, view: DrawView, episode: EndedEpisode, meta: np.ndarray, field: dict[str, int]) -> None:
        if self.events:
            index_events(view.goal_spec.is_nothing(episode.achieved), meta, field)

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        own = self._own_steps(view, rows)
        steps = self._goal_steps(view, rows, own, False)
        goals, reach = self._instruction(view, rows, steps)
        strategy = getattr(view.relabeler, "strategy", None)
        if not self.events or strategy == "none":
            return Instructions(goals, reach)
        # A transition left with its own instruction (the coin, or nothing to draw after it) is admitted only where a
        # draw of at least one goal would be (module docstring of .event_steps).
        own_only = (steps <= 0).all(axis=1) & ((own == -1).any(axis=1))
        if strategy != "some":  # "all" draws whenever it can: its draw is its own probe
            return Instructions(goals, reach, ~own_only)
        keep = np.ones(len(steps), dtype=bool)
        if self.builtin and own_only.any():  # only the built-in draw_goal_steps takes at_least_one
            probe = np.flatnonzero(own_only)
            sub = Candidates(*(field[probe] for field in rows))
            probe_steps = self._goal_steps(view, sub, own[probe], True)
            probe_goals, probe_reach = self._instruction(view, sub, probe_steps)
            keep[probe] = (probe_steps > 0).any(axis=1) & admissible(view, sub.t, probe_goals, probe_reach)
        return Instructions(goals, reach, keep)

    def _instruction(self, view: DrawView, rows: Candidates, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The instruction of the drawn goal steps (-1: the episode's own goal), and its reach steps."""
        step_rows = (rows.start[:, None] + np.maximum(steps, 1) - 1) % view.buffer_size
        achieved = view.achieved_at(step_rows, rows.env[:, None])
        from_step = (steps > 0).reshape(*steps.shape, *(1,) * len(view.goal_shape))
        goals = np.where(from_step, achieved, rows.own_goals).astype(rows.own_goals.dtype, copy=False)
        goals = view.goal_spec.generalize(goals, steps > 0, view.rng) if _has_levels(view) else goals
        return goals, self.reach_steps(view, rows, steps, step_rows, goals)

    def reach_steps(self, view: DrawView, rows: Candidates, steps: np.ndarray, step_rows: np.ndarray,
                    goals: np.ndarray) -> np.ndarray:
        """``(B, k)`` steps at which the goals are reached in order, -1 never (and after a goal never reached)."""
        raise NotImplementedError

    @staticmethod
    def _own_steps(view: DrawView, rows: Candidates) -> np.ndarray:
        """The own reach steps as ``draw_goal_steps`` takes them: -2 on padding slots (goal spec's ``pad_value``)."""
        if view.goal_spec.pad_value is None:
            return rows.own_steps
        return np.where(view.goal_spec.is_padding(rows.own_goals), -2, rows.own_steps)

    def _relabeler_goal_steps(self, view: DrawView, rows: Candidates, own: np.ndarray, at_least_one: bool
                              ) -> np.ndarray:
        draw = view.relabeler.draw_goal_steps  # type: ignore[attr-defined]
        extra = {"at_least_one": True} if at_least_one else {}
        if not self.events:
            return draw(own, rows.length, rows.t, view.rng, view.goal_selection, **extra)
        meta_flat, field, size, n_envs = self._event_index(view)
        ranks, count, before = event_ranks(meta_flat, field, own, rows.start, rows.env, rows.flat, size, n_envs)
        drawn = draw(ranks, count, before, view.rng, view.goal_selection, **extra)
        return rank_steps(meta_flat, field, drawn, rows.start, rows.env, size, n_envs)

    def _compiled_goal_steps(self, view: DrawView, rows: Candidates, own: np.ndarray, at_least_one: bool
                             ) -> np.ndarray:
        mode = compiled.SOME_AT_LEAST_ONE if at_least_one else compiled.draw_mode(view.relabeler)
        future = view.goal_selection == "future"
        if not self.events:
            return compiled.call(self.warm, compiled.draw_goal_steps_boxed, self._generator(view), own, rows.length,
                                 rows.t, mode, future)
        meta_flat = self._event_index(view)[0]
        return compiled.call(self.warm, event_goal_steps_boxed, self._generator(view), meta_flat, own, rows.start,
                             rows.env, rows.flat, mode, future, self._event_cfg(view))

    @staticmethod
    def _event_index(view: DrawView) -> tuple[np.ndarray, dict[str, int], int, int]:
        """The index flat over rows and sub-envs, its columns and sizes (the index is built before any draw)."""
        index, size, n_envs = view.index, view.buffer_size, view.n_envs
        if index is None:
            raise RuntimeError("draws need the episode index, which the buffer builds with its source")
        return index.meta.reshape(size * n_envs, -1), index.field, size, n_envs

    def _event_cfg(self, view: DrawView) -> np.ndarray:
        field = self._event_index(view)[1]
        return compiled.config(size=view.buffer_size, n_envs=view.n_envs, f_ecount=field["ecount"],
                               f_ebefore=field["ebefore"], f_estep=field["estep"])
