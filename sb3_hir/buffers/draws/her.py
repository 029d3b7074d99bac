"""GoalEnv mode's draw: HER's, in every case.

HER's ``future`` (a goal from the steps at or after the transition's next observation), ``episode`` and ``final``
rules are the draws, and every draw is admissible: ``(s_t, a_t, s_{t+1}, g)`` is a transition of the goal-conditioned
task for any ``g``, whether or not ``g`` was also passed before ``t``. Where successes terminate
(``terminates_on_success``), a relabeled transition is terminal when its next achieved goal reaches ``g`` (an n-step
window ends at the first such step, :meth:`HerDraw.reach_after_t`), and a recorded termination that its own goal's
reach caused is not kept. An earlier rule drew only goals first reached after ``t``; on looping on-policy data (DQN at
its default learning rate) half the transitions then had no goal and were never relabeled.
"""

from __future__ import annotations

import numpy as np

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws.base import Candidates, DrawStrategy, Instructions, Relabeled, draw_rounds
from sb3_hir.buffers.draws.view import DrawView
from sb3_hir.buffers.storage import take_rows

__all__ = ["HerDraw", "draw_her", "her_steps"]

#: this module, through which its kernels pass ``_her_round`` (see ``compiled.kernels_of``).
_here = compiled.kernels_of(__name__)


class HerDraw(DrawStrategy):
    """HER's goal for every relabeled transition (module docstring); no index fields of its own."""

    def __init__(self) -> None:
        self.cfg: np.ndarray | None = None
        super().__init__()

    def setup(self, view: DrawView) -> None:
        if not view.goal_env:
            raise ValueError("draw strategy 'her' is GoalEnv mode's draw: it serves goals also reached before the "
                             "transition, which an instruction env's episode would have ended at; use 'first-reach'")
        if view.num_goals != 1:
            raise ValueError(f"draw strategy 'her' draws one goal, as HER; this buffer's instructions have "
                             f"{view.num_goals} goals: use 'exact-index' or 'window'")

    def use_compiled(self, on: bool) -> None:
        super().use_compiled(on)
        self._draw_pairs = self._draw_compiled if on else self._draw_numpy
        self.draw = self._draw_her

    def _draw_her(self, view: DrawView, count: int, upper: int) -> Relabeled | None:
        relabeled = self._draw_pairs(view, count, upper)
        if relabeled is not None and view.terminates_on_success:
            relabeled = relabeled._replace(reach=self.reach_after_t(view, relabeled))
        return relabeled

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        """A step drawn by HER's rule; its reach is searched after the draw, where successes terminate."""
        size, n_envs, rng = view.buffer_size, view.n_envs, view.rng
        t, start, envs, length = rows.t, rows.start, rows.env, rows.length
        batch = len(t)
        steps = her_steps(rng, t, length, view.goal_selection)
        step_flat = ((start + steps - 1) % size) * n_envs + envs
        goals = view.achieved_at(step_flat // n_envs, step_flat % n_envs)[:, None]
        reach = np.full((batch, 1), -1, dtype=np.int64)
        return Instructions(goals.astype(rows.own_goals.dtype, copy=False), reach)

    def other_end(self, view: DrawView, rows: Candidates) -> np.ndarray:
        other_end = super().other_end(view, rows)
        if view.terminates_on_success:
            other_end &= rows.own_steps[:, 0] != rows.length  # the own goal's reach caused it: not under another goal
        return other_end

    def reach_after_t(self, view: DrawView, r: Relabeled) -> np.ndarray:
        """Where successes terminate: the first step after ``t`` whose achieved goal reaches the drawn goal, within
        the served window (``(B, 1)``; -1 when not in it).

        The replayed episode starts at ``t``: whether the goal was also passed before ``t`` does not matter (HER's
        draw). Looking only ``n_steps`` ahead keeps it O(batch * n_steps).
        """
        if view.n_steps == 1:  # the window is the transition itself: one gather, one test
            achieved = take_rows(view.achieved, r.flat)
            goal = r.goals[:, 0]
            hit = np.asarray(view.goal_spec.reached(achieved.reshape(goal.shape), goal), dtype=bool)
            return np.where(hit, r.t + 1, -1)[:, None]
        offsets = np.arange(view.n_steps)
        ahead = np.minimum(offsets, (r.length - r.t - 1)[:, None])  # (B, n): the window, cut at the episode's end
        rows = (r.start[:, None] + r.t[:, None] + ahead) % view.buffer_size
        achieved = view.achieved_at(rows, r.env[:, None])  # achieved after each transition of the window
        hits = np.asarray(view.goal_spec.reached(achieved, r.goals), dtype=bool)  # goals (B, 1, *goal_shape)
        hits &= offsets < (r.length - r.t)[:, None]
        return np.where(hits.any(axis=1), r.t + 1 + hits.argmax(axis=1), -1)[:, None]

    def _draw_compiled(self, view: DrawView, count: int, upper: int) -> Relabeled | None:
        if self.cfg is None:
            self.cfg = self._config(view, selection=compiled.SELECTIONS[view.goal_selection])
        return self._run_kernel(view, draw_her, count, upper, self.cfg, view.terminates_on_success)


def her_steps(rng: np.random.Generator, t: np.ndarray, length: np.ndarray, goal_selection: str) -> np.ndarray:
    """HER's goal step for each transition ``t`` of an episode of ``length`` steps: ``"future"`` uniform in
    ``t+1..T``, ``"episode"`` uniform in ``1..T``, ``"final"`` ``T``."""
    if goal_selection == "future":
        return t + 1 + (rng.random(len(t)) * (length - t)).astype(np.int64)
    if goal_selection == "episode":
        return 1 + (rng.random(len(t)) * length).astype(np.int64)
    return length.copy()


@compiled.kernel
def _her_round(rng, meta, envs, flat, t, length, keep, start, batch, cfg, params):  # type: ignore[no-untyped-def]
    """``HerDraw._instructions`` and ``_other_end`` for one round of :func:`~sb3_hir.buffers.draws.base.draw_rounds`
    (``params``: ``(terminates,)``)."""
    c = cfg[0]
    terminates = params[0]
    steps = np.empty((batch, 1), np.int64)
    reach = np.full((batch, 1), -1, np.int64)
    ok = np.ones(batch, np.bool_)
    other_end = np.empty(batch, np.bool_)
    for b in range(batch):
        i = keep[b]
        if c.selection == 0:
            steps[b, 0] = t[i] + 1 + np.int64(rng.random() * (length[i] - t[i]))
        elif c.selection == 1:
            steps[b, 0] = 1 + np.int64(rng.random() * length[i])
        else:
            steps[b, 0] = length[i]
        own_step = meta[start[b] * c.n_envs + envs[i], c.f_own]
        other_end[b] = meta[flat[i], c.f_end] > 0 and not (terminates and own_step == length[i])
    return steps, reach, ok, other_end


@compiled.kernel
def draw_her(box, meta, achieved, own_goals, nothing, admitted, upper, missing, cfg, terminates):  # type: ignore[no-untyped-def]
    """:class:`HerDraw`'s draw in one call, before ``reach_after_t`` (``cfg``: ``selection`` and the index columns;
    ``terminates``: whether successes terminate, which decides ``other_end``)."""
    return draw_rounds(box.rng, meta, achieved, own_goals, nothing, admitted, upper, missing, cfg, _here._her_round,
                       (terminates,))
