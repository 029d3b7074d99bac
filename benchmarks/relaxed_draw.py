"""Instruction mode under the relaxed reach rule, for measuring it against the shipped one (issue 35).

The shipped rule draws, for a sampled transition ``t``, only instructions whose last goal is first reached (in
order, from the episode's start) after ``t``: an instruction the episode completed at or before ``t`` would have
ended it there. :class:`RelaxedReachBuffer` serves the rule GoalEnv mode now follows: the last goal counts as
reached at its first occurrence after ``t`` (and after the previous goal's reach), even if its value was also
passed before ``t``; the masks at ``t`` are the true ones under that chain (goals before the last one masked where
they were reached at or before ``t``). ``(s_t, a_t, s_{t+1}, instruction)`` is then a transition of the
instruction task for a policy that does not remember having passed the goal before.

It runs the numpy draw (``jit`` off; ``k > 1`` reaches by the episode-window comparison), so it is slower per
sample than the shipped buffer: compare it by env steps, not wall time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sb3_hir.buffers import HindsightInstructionReplayBuffer


class RelaxedReachBuffer(HindsightInstructionReplayBuffer):
    """:class:`HindsightInstructionReplayBuffer` with the last goal's reach searched after ``t`` (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.goal_env:
            raise ValueError("RelaxedReachBuffer is for instruction envs; GoalEnv mode already draws this way")
        self.jit = False
        self.exact_index = False  # k > 1: reaches from the window comparison, which takes t into account here
        self._t: np.ndarray | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self.jit = False

    def _relabel_rows(self, rows: np.ndarray, envs: np.ndarray) -> Any:
        # The base filters the rows (finished, first row not overwritten) before it computes reaches; repeat the
        # filter so that _reach_window sees each kept row's t.
        size, n_envs, field = self.buffer_size, self.n_envs, self._field
        meta_flat = self._meta.reshape(size * n_envs, -1)
        meta = meta_flat.take(rows * n_envs + envs, axis=0)
        t = meta[:, field["t"]].astype(np.int64)
        start = (rows - t) % size
        ok = (meta[:, field["len"]] > 0) & (meta_flat[start * n_envs + envs, field["id"]] == meta[:, field["id"]])
        self._t = t[ok]
        return super()._relabel_rows(rows, envs)

    def _relabel_single(self, own_step, own_goals, meta, t, start, envs, length):  # type: ignore[no-untyped-def]
        """k = 1: HER's draw (``future``: a step from ``t+1..T``); the goal's reach is its first after ``t``."""
        size, n_envs = self.buffer_size, self.n_envs
        batch = len(t)
        strategy = self.relabeler.strategy
        draw = own_step <= 0
        if strategy == "none":
            draw[:] = False
        elif strategy == "some":
            draw &= self.rng.random(batch) < 0.5
        if self.goal_selection == "future":
            steps = t + 1 + (self.rng.random(batch) * (length - t)).astype(np.int64)
        elif self.goal_selection == "episode":
            steps = 1 + (self.rng.random(batch) * length).astype(np.int64)
        else:
            steps = length.copy()
        step_flat = ((start + steps - 1) % size) * n_envs + envs
        achieved = self._achieved_at(step_flat // n_envs, step_flat % n_envs)[:, None]
        goals = np.where(draw.reshape(-1, *(1,) * (own_goals.ndim - 1)), achieved, own_goals)
        goals = goals.astype(own_goals.dtype, copy=False)
        reach_after = self._first_after(goals[:, 0], start, envs, length, t)
        keep = ~draw | (reach_after > 0)  # "episode" may draw a goal never reached after t: not admissible
        reach = np.where(draw, reach_after, own_step)[:, None]
        return goals, reach, keep

    def _first_after(self, goal: np.ndarray, start: np.ndarray, envs: np.ndarray, length: np.ndarray,
                     after: np.ndarray) -> np.ndarray:
        """First step in ``after+1..T`` whose achieved value reaches ``goal`` (``(B, *goal_shape)``), -1 if none."""
        horizon = int(length.max()) if len(length) else 0
        if not horizon:
            return np.full(len(length), -1, dtype=np.int64)
        offsets = np.arange(horizon)
        rows = (start[:, None] + np.minimum(offsets, length[:, None] - 1)) % self.buffer_size
        achieved = self._achieved_at(rows, envs[:, None])
        hits = np.asarray(self.goal_spec.reached(achieved, goal[:, None]), dtype=bool)
        steps = offsets + 1
        hits &= (steps <= length[:, None]) & (steps > after[:, None])
        return np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, -1)

    def _reach_window(self, goals: np.ndarray, start: np.ndarray, envs: np.ndarray, length: np.ndarray
                      ) -> np.ndarray:
        """k > 1: the shipped chain for goals 1..k-1; the last goal's reach is its first after ``t`` and after
        the previous goal's reach."""
        reach = super()._reach_window(goals, start, envs, length)
        assert self._t is not None and len(self._t) == len(start)
        k = goals.shape[1]
        previous = reach[:, k - 2] if k > 1 else np.zeros(len(start), dtype=np.int64)
        alive = previous >= 0 if k > 1 else np.ones(len(start), dtype=bool)
        after = np.maximum(previous, self._t)
        last = self._first_after(goals[:, -1], start, envs, length, after)
        reach[:, -1] = np.where(alive, last, -1)
        return reach
