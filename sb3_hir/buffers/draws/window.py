"""Goal specs other than exact equality on integers (tolerance, distance thresholds): reach steps by comparing each
drawn goal with the episode's achieved values, O(k T) per sample, bounded by the episode length and independent of the
buffer size."""

from __future__ import annotations

import numpy as np

from sb3_hir.buffers.draws.base import Candidates
from sb3_hir.buffers.draws.goal_steps import GoalStepsDraw
from sb3_hir.buffers.draws.view import DrawView
from sb3_hir.reach import reach_in_groups, slot_groups

__all__ = ["WindowDraw"]


class WindowDraw(GoalStepsDraw):
    """Reach steps from the episode window (module docstring); no index fields of its own."""

    def reach_steps(self, view: DrawView, rows: Candidates, steps: np.ndarray, step_rows: np.ndarray,
                    goals: np.ndarray) -> np.ndarray:
        start, length = rows.start, rows.length
        batch, k = goals.shape[:2]
        horizon = int(length.max()) if batch else 0
        reach = np.full((batch, k), -1, dtype=np.int64)
        if not horizon:
            return reach
        offsets = np.arange(horizon)
        window_rows = (start[:, None] + np.minimum(offsets, length[:, None] - 1)) % view.buffer_size
        achieved = view.achieved_at(window_rows, rows.env[:, None])  # (B, H, *goal_shape): steps 1..H
        hits = view.goal_spec.reached(achieved[:, :, None], goals[:, None])  # (B, H, k)
        hits &= (offsets < length[:, None])[:, :, None]
        spec = view.goal_spec
        same_step = bool(getattr(spec, "same_step_goals", False))
        if not getattr(spec, "ordered", True):  # padding and unordered groups (sb3_hir.reach)
            real = ~spec.is_padding(goals)
            return reach_in_groups(hits & real[:, None], slot_groups(view.own_groups(start, rows.env), real),
                                   same_step)
        previous = np.zeros(batch, dtype=np.int64)
        step = offsets + 1
        for j in range(k):
            candidate = hits[:, :, j] & ((step >= previous[:, None]) if same_step else (step > previous[:, None]))
            first = candidate.argmax(axis=1)
            reach_j = np.where(candidate[np.arange(batch), first] & (previous >= 0), first + 1, -1)
            reach[:, j] = reach_j
            previous = reach_j
        return reach
