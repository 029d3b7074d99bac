"""Instruction mode under the relaxed reach rule, for measuring it against the shipped one (issue 35).

The shipped rule draws, for a sampled transition ``t``, only instructions whose last goal is first reached (in
order, from the episode's start) after ``t``: an instruction the episode completed at or before ``t`` would have
ended it there. :class:`RelaxedReachBuffer` serves the rule GoalEnv mode now follows: the last goal counts as
reached at its first occurrence after ``t`` (and after the previous goal's reach), even if its value was also
passed before ``t``; the masks at ``t`` are the true ones under that chain (goals before the last one masked where
they were reached at or before ``t``). ``(s_t, a_t, s_{t+1}, instruction)`` is then a transition of the
instruction task for a policy that does not remember having passed the goal before.

It is a draw strategy written on the public interface only (``sb3_hir.buffers.draws``, "Write your own draw
strategy" in the docs), as a third party writes one, passed as the buffer's ``draw``; it lives beside the
benchmarks that measure it (``bench_hir_learning``, the moonshots), out of the wheel.
:class:`RelaxedReachBuffer` is the buffer with it chosen, for ``replay_buffer_class``. It runs numpy only (``k > 1``:
reaches by the episode-window comparison), so it is slower per sample than the shipped buffer: compare it by env
steps, not wall time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.buffers.draws import Candidates, DrawView, Instructions, WindowDraw, her_steps, takes_drawn_goal


def first_after(view: DrawView, goal: np.ndarray, start: np.ndarray, envs: np.ndarray, length: np.ndarray,
                after: np.ndarray) -> np.ndarray:
    """First step in ``after+1..T`` whose achieved value reaches ``goal`` (``(B, *goal_shape)``), -1 if none."""
    horizon = int(length.max()) if len(length) else 0
    if not horizon:
        return np.full(len(length), -1, dtype=np.int64)
    offsets = np.arange(horizon)
    rows = (start[:, None] + np.minimum(offsets, length[:, None] - 1)) % view.buffer_size
    achieved = view.achieved_at(rows, envs[:, None])
    hits = np.asarray(view.goal_spec.reached(achieved, goal[:, None]), dtype=bool)
    steps = offsets + 1
    hits &= (steps <= length[:, None]) & (steps > after[:, None])
    return np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, -1)


class RelaxedDraw(WindowDraw):
    """The relaxed reach rule (module docstring), for instruction envs.

    k = 1: HER's draw (``future``: a step from ``t+1..T``); the goal's reach is its first after ``t``. k > 1: the
    shipped chain for goals 1..k-1; the last goal's reach is its first after ``t`` and after the previous goal's reach.
    """

    def setup(self, view: DrawView) -> None:
        if view.goal_env:
            raise ValueError("draw strategy RelaxedDraw is for instruction envs; GoalEnv mode already draws this way")
        if not getattr(view.goal_spec, "ordered", True):
            raise ValueError("draw strategy RelaxedDraw ends an instruction at its last slot's reach; a goal spec with "
                             "padding (pad_value) or groups (groups_key) is served by 'window'")
        super().setup(view)
        self.one_goal = view.num_goals == 1

    def use_compiled(self, on: bool) -> None:
        super().use_compiled(False)  # the relabeler's own draw_goal_steps, in numpy

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        if not self.one_goal:
            return super().instructions(view, rows)
        size, n_envs, rng = view.buffer_size, view.n_envs, view.rng
        t, start, envs, length = rows.t, rows.start, rows.env, rows.length
        own_step, own_goals = rows.own_steps[:, 0], rows.own_goals
        draw = takes_drawn_goal(rng, own_step, view.relabeler.strategy)  # type: ignore[attr-defined]
        steps = her_steps(rng, t, length, view.goal_selection)
        step_flat = ((start + steps - 1) % size) * n_envs + envs
        achieved = view.achieved_at(step_flat // n_envs, step_flat % n_envs)[:, None]
        goals = np.where(draw.reshape(-1, *(1,) * (own_goals.ndim - 1)), achieved, own_goals)
        goals = goals.astype(own_goals.dtype, copy=False)
        reach_after = first_after(view, goals[:, 0], start, envs, length, t)
        keep = ~draw | (reach_after > 0)  # "episode" may draw a goal never reached after t: not admissible
        reach = np.where(draw, reach_after, own_step)[:, None]
        return Instructions(goals, reach, keep)

    def reach_steps(self, view: DrawView, rows: Candidates, steps: np.ndarray, step_rows: np.ndarray,
                    goals: np.ndarray) -> np.ndarray:
        reach = super().reach_steps(view, rows, steps, step_rows, goals)
        k = goals.shape[1]
        previous = reach[:, k - 2] if k > 1 else np.zeros(len(rows.start), dtype=np.int64)
        alive = previous >= 0 if k > 1 else np.ones(len(rows.start), dtype=bool)
        after = np.maximum(previous, rows.t)
        last = first_after(view, goals[:, -1], rows.start, rows.env, rows.length, after)
        reach[:, -1] = np.where(alive, last, -1)
        return reach


class RelaxedReachBuffer(HindsightInstructionReplayBuffer):
    """:class:`HindsightInstructionReplayBuffer` with :class:`RelaxedDraw` chosen, for ``replay_buffer_class``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("draw", RelaxedDraw)
        super().__init__(*args, **kwargs)
