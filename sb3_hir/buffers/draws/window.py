"""Goal specs other than exact equality on integers (tolerance, distance thresholds): reach steps by comparing each
drawn goal with the episode's achieved values, O(k T) per sample, bounded by the episode length and independent of the
buffer size."""

from __future__ import annotations

import numpy as np

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws.base import Candidates
from sb3_hir.buffers.draws.goal_steps import GoalStepsDraw
from sb3_hir.buffers.draws.view import DrawView
from sb3_hir.goals import ExactGoalSpec, GoalSpec
from sb3_hir.reach import reach_in_groups, slot_groups

__all__ = ["WindowDraw"]


class WindowDraw(GoalStepsDraw):
    """Reach steps from the episode window (module docstring); no index fields of its own."""

    def reach_steps(self, view: DrawView, rows: Candidates, steps: np.ndarray, step_rows: np.ndarray,
                    goals: np.ndarray) -> np.ndarray:
        start, length = rows.start, rows.length
        batch, k = goals.shape[:2]
        spec = view.goal_spec
        if not spec.ordered and self.compiled and batch and _exact(spec):
            # padding and groups of an exact spec: one pass per row that stops at each goal's first reach, where the
            # numpy comparison builds the whole (B, H, k) window (20 ms of a 128-row sample on GoToSeqS5R2)
            real = ~spec.is_padding(goals)
            groups = slot_groups(view.own_groups(start, rows.env), real)
            flat_rows = view.buffer_size * view.n_envs
            special = np.array([_or_zero(spec.wildcard_value), _or_zero(spec.nothing_value)], dtype=np.float64)
            flags = np.array([spec.wildcard_value is not None, spec.nothing_value is not None, spec.same_step_goals])
            return compiled.call(self.warm, exact_reach_in_groups, view.achieved.reshape(flat_rows, -1),
                                 goals.reshape(batch, k, -1), start, rows.env, length, groups, view.buffer_size,
                                 view.n_envs, special, flags)
        horizon = int(length.max()) if batch else 0
        reach = np.full((batch, k), -1, dtype=np.int64)
        if not horizon:
            return reach
        offsets = np.arange(horizon)
        window_rows = (start[:, None] + np.minimum(offsets, length[:, None] - 1)) % view.buffer_size
        achieved = view.achieved_at(window_rows, rows.env[:, None])  # (B, H, *goal_shape): steps 1..H
        hits = view.goal_spec.reached(achieved[:, :, None], goals[:, None])  # (B, H, k)
        hits &= (offsets < length[:, None])[:, :, None]
        same_step = bool(spec.same_step_goals)
        if not spec.ordered:  # padding and unordered groups (sb3_hir.reach)
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


def _exact(spec: GoalSpec) -> bool:
    """The spec judges goals by :class:`~sb3_hir.goals.ExactGoalSpec`'s own rule, which the kernel reproduces."""
    return isinstance(spec, ExactGoalSpec) and type(spec).reached is ExactGoalSpec.reached


def _or_zero(value: float | None) -> float:
    return 0.0 if value is None else float(value)


@compiled.kernel
def exact_reach_in_groups(achieved, goals, start, env, length, groups, size, n_envs, special, flags):  # type: ignore[no-untyped-def]
    """:func:`sb3_hir.reach.reach_in_groups` of :class:`~sb3_hir.goals.ExactGoalSpec` goals over each row's episode
    window, read from the ``(rows * envs, D)`` achieved values: the same reach steps, scanning each goal from its
    group's start to its first reach. ``special`` holds the wildcard and nothing values, ``flags`` whether each is
    declared and ``same_step_goals``; ``groups`` is -1 on padding slots."""
    batch, k, dim = goals.shape
    wildcard, nothing = special[0], special[1]
    has_wildcard, has_nothing, same_step = flags[0], flags[1], flags[2]
    reach = np.full((batch, k), -1, np.int64)
    for b in range(batch):
        begin = 0  # the step that completed the previous group (0: the reset)
        group = 0
        while True:
            members = 0
            complete = True
            end = begin
            for j in range(k):
                if groups[b, j] != group:
                    continue
                members += 1
                first = begin if same_step else begin + 1
                if first < 1:
                    first = 1
                found = -1
                for step in range(first, length[b] + 1):
                    row = start[b] + step - 1
                    if row >= size:
                        row -= size
                    at = row * n_envs + env[b]
                    if has_nothing:
                        empty = True
                        for d in range(dim):
                            if achieved[at, d] != nothing:
                                empty = False
                                break
                        if empty:
                            continue
                    hit = True
                    for d in range(dim):
                        value = goals[b, j, d]
                        if value != achieved[at, d] and not (has_wildcard and value == wildcard):
                            hit = False
                            break
                    if hit:
                        found = step
                        break
                if found < 0:
                    complete = False
                else:
                    reach[b, j] = found
                    if found > end:
                        end = found
            if members == 0 or not complete:
                break
            begin = end
            group += 1
    return reach
