"""Relabelers with a batched ``draw_goal_steps``: goal steps per sample, then the goals' reach steps.

The relabeler draws, per sampled transition, the steps whose achieved values become the instruction's goals (-1: the
episode's own goal j, :meth:`~sb3_hir.relabel.HindsightInstructionRelabeler.draw_goal_steps`); the strategy finds where
each goal is reached in order, from the exact-value index (:mod:`.exact_index`) or by comparing the episode window
(:mod:`.window`). The built-in relabeler's draw runs compiled (``compiled.draw_goal_steps``, the same draws).
"""

from __future__ import annotations

import numpy as np

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws.base import Candidates, DrawStrategy, Instructions
from sb3_hir.buffers.draws.view import DrawView

__all__ = ["GoalStepsDraw"]


def _has_levels(view: DrawView) -> bool:
    return getattr(view.goal_spec, "description_levels", None) is not None


class GoalStepsDraw(DrawStrategy):
    """Goal steps from the relabeler, reach steps from :meth:`reach_steps` (module docstring).

    :param builtin: the relabeler's ``draw_goal_steps`` is :class:`~sb3_hir.relabel.HindsightInstructionRelabeler`'s,
        which the compiled kernels reproduce. None: decided from the buffer's relabeler.
    """

    def __init__(self, builtin: bool | None = None) -> None:
        self.builtin = builtin
        super().__init__()

    def setup(self, view: DrawView) -> None:
        if not callable(getattr(view.relabeler, "draw_goal_steps", None)):
            raise ValueError(f"draw_strategy {self.name} draws through the relabeler's draw_goal_steps, which "
                             f"{type(view.relabeler).__name__} lacks: use 'stored'")
        if self.builtin is None:
            self.builtin = view.builtin_relabeler
            self.use_compiled(self.compiled)

    def use_compiled(self, on: bool) -> None:
        super().use_compiled(on)
        self._goal_steps = self._compiled_goal_steps if on and self.builtin else self._relabeler_goal_steps

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        steps = self._goal_steps(view, rows)
        step_rows = (rows.start[:, None] + np.maximum(steps, 1) - 1) % view.buffer_size
        achieved = view.achieved_at(step_rows, rows.env[:, None])
        from_step = (steps > 0).reshape(*steps.shape, *(1,) * len(view.goal_shape))
        goals = np.where(from_step, achieved, rows.own_goals).astype(rows.own_goals.dtype, copy=False)
        goals = view.goal_spec.generalize(goals, steps > 0, view.rng) if _has_levels(view) else goals
        return Instructions(goals, self.reach_steps(view, rows, steps, step_rows, goals))

    def reach_steps(self, view: DrawView, rows: Candidates, steps: np.ndarray, step_rows: np.ndarray,
                    goals: np.ndarray) -> np.ndarray:
        """``(B, k)`` steps at which the goals are reached in order, -1 never (and after a goal never reached)."""
        raise NotImplementedError

    @staticmethod
    def _own_steps(view: DrawView, rows: Candidates) -> np.ndarray:
        """The own reach steps as ``draw_goal_steps`` takes them: -2 on padding slots (goal spec's ``pad_value``)."""
        if getattr(view.goal_spec, "pad_value", None) is None:
            return rows.own_steps
        return np.where(view.goal_spec.is_padding(rows.own_goals), -2, rows.own_steps)

    def _relabeler_goal_steps(self, view: DrawView, rows: Candidates) -> np.ndarray:
        return view.relabeler.draw_goal_steps(  # type: ignore[attr-defined]
            self._own_steps(view, rows), rows.length, rows.t, view.rng, view.goal_selection
        )

    def _compiled_goal_steps(self, view: DrawView, rows: Candidates) -> np.ndarray:
        return compiled.call(self.warm, compiled.draw_goal_steps_boxed, self._generator(view),
                             self._own_steps(view, rows), rows.length, rows.t, compiled.draw_mode(view.relabeler),
                             view.goal_selection == "future")
