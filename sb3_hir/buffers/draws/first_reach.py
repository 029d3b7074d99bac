"""One-goal instructions of the built-in relabeler (``k = 1``, any goal spec): a draw from the first-reach index.

One-goal instructions need no rejection. When the episode ends, each step's value gets the step it is first reached at
(``first``), and the steps sorted by it, latest first (``forder``). The steps whose value is first reached after ``t``
are then a prefix of that order, of a length stored per row (``fcount``), so a sample draws its goal uniformly from
them in O(1): HER's ``future`` rule, conditioned on the relabeled episode containing the transition (an instruction
env ends the episode at the reached goal). ``"episode"`` conditioned on that is the same draw; ``"final"`` is
admissible when the last value is first reached after ``t``. Transitions admitting no hindsight goal are redrawn, so
the transition is uniform over those that admit one. The first-reach steps cost O(T log T) per episode for exact
integer goals and O(T^2) (pairwise comparisons, in blocks) for other goal specs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws.base import Candidates, DrawStrategy, Instructions, Relabeled, draw_rounds
from sb3_hir.buffers.draws.view import DrawView
from sb3_hir.buffers.episode_index import EndedEpisode
from sb3_hir.buffers.storage import value_ids
from sb3_hir.goals import GoalSpec

__all__ = ["FirstReachDraw", "draw_first_reach", "first_reach", "takes_drawn_goal"]

#: this module, through which its kernels pass ``_first_reach_round`` (see ``compiled.kernels_of``).
_here = compiled.kernels_of(__name__)


class FirstReachDraw(DrawStrategy):
    """A hindsight goal first reached after the transition, from the episode's first-reach index (module docstring).

    :param exact_values: goals are integers compared by exact equality: first reaches are found by value, in
        O(T log T), instead of by pairwise comparison. None: decided from the buffer's goal spec and spaces.
    """

    #: ``ffirst`` is ``first[forder]``: the drawn step's first reach, read from the row that draws it. In the order the
    #: draw reads them: ``fcount`` beside the index's own fields, which the draw reads in the same row, then
    #: ``forder`` and ``ffirst``, read together, so each row read touches one cache line more often (0.97-0.98x of
    #: ``sample(256)`` at k = 1 in one process; with the branchless rounds 0.914x paired,
    #: ``benchmarks/results/bench_compare_branchless.txt``). Pickled buffers keep their own order: the draw reads
    #: columns by name.
    fields = ("fcount", "forder", "ffirst", "first")

    #: class default, for strategies pickled before event goals (an instance sets its own in ``__init__``).
    events = False

    def __init__(self, exact_values: bool | None = None) -> None:
        self.exact_values = exact_values  # type: ignore[assignment]
        self.cfg: np.ndarray | None = None
        self.events = False
        super().__init__()

    def __setstate__(self, state: dict[str, Any]) -> None:
        state["cfg"] = None  # rebuilt with today's settings on the first draw
        super().__setstate__(state)

    def setup(self, view: DrawView) -> None:
        if view.num_goals != 1:
            raise ValueError(f"draw strategy 'first-reach' draws one-goal instructions; this buffer's have "
                             f"{view.num_goals} goals: use 'exact-index' or 'window'")
        if getattr(view.relabeler, "strategy", None) not in ("some", "all", "none"):
            raise ValueError("draw strategy 'first-reach' follows the relabeler's strategy ('some', 'all' or 'none'); "
                             f"{type(view.relabeler).__name__} has none")
        if view.goal_spec.description_levels is not None:
            raise ValueError("draw strategy 'first-reach' indexes the first reach of exact achieved values; the goal "
                             "spec's description_levels relabel at other levels: use 'window'")
        if self.exact_values is None:
            self.exact_values = view.exact_values
        #: event goals (the goal spec declares ``nothing_value``): a step that achieved nothing is never drawn, and
        #: admission does not depend on the coin (see :meth:`instructions`).
        self.events = view.goal_spec.nothing_value is not None

    def use_compiled(self, on: bool) -> None:
        super().use_compiled(on)
        if on:
            self.draw = self._draw_compiled

    def index_episode(self, view: DrawView, episode: EndedEpisode, meta: np.ndarray, field: dict[str, int]) -> None:
        length = episode.length
        first = first_reach(episode.achieved, episode.own_goals, view.goal_spec, len(view.goal_shape),
                            self.exact_values)
        # Sorted by first reach, latest first: the values not yet reached after transition t are the first
        # fcount[t] steps of this order.
        key = np.where(first > 0, first, length + 1)
        if self.events:  # a step that achieved nothing is no goal: never first reached, never drawn
            nothing = view.goal_spec.is_nothing(episode.achieved)
            first[nothing] = 0
            key[nothing] = 0
        meta[:, field["first"]] = first
        forder = np.argsort(-key, kind="stable")
        meta[:, field["forder"]] = forder + 1
        meta[:, field["ffirst"]] = first[forder]  # the drawn step's first reach, in the row that draws it
        meta[:, field["fcount"]] = np.bincount(key, minlength=length + 2)[::-1].cumsum()[::-1][1 : length + 1]

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        """The relabeled episode must contain ``t``: its goal not reached at or before ``t``. With no such goal, or
        where the relabeler keeps the recorded instruction (``"some"``, ``"none"``), the recorded goal is kept."""
        assert view.index is not None, "the episode index is built with the buffer, before any draw"
        size, n_envs, field, rng = view.buffer_size, view.n_envs, view.index.field, view.rng
        meta_flat = view.index.meta.reshape(size * n_envs, -1)
        t, start, envs, length = rows.t, rows.start, rows.env, rows.length
        own_step, own_goals = rows.own_steps[:, 0], rows.own_goals
        batch = len(t)
        draw = takes_drawn_goal(rng, own_step, view.relabeler.strategy)  # type: ignore[attr-defined]
        if view.goal_selection == "final":
            steps = length.copy()
        else:
            count = rows.meta[:, field["fcount"]].astype(np.int64)
            pick = (rng.random(batch) * np.maximum(count, 1)).astype(np.int64)
            steps = meta_flat[((start + pick) % size) * n_envs + envs, field["forder"]].astype(np.int64)
        step_flat = ((start + steps - 1) % size) * n_envs + envs
        first = meta_flat[step_flat, field["first"]].astype(np.int64)
        if self.events and getattr(view.relabeler, "strategy", None) != "none":
            # Event goals: a transition is admitted where a drawn goal would be, whether or not the coin draws one,
            # so relabeled transitions are uniform over those that admit a hindsight goal (as GoalStepsDraw's probe).
            keep = (own_step > 0) | (first > t)
        else:
            keep = ~draw | (first > t)
        reach_drawn = np.where(first > 0, first, -1)
        achieved = view.achieved_at(step_flat // n_envs, step_flat % n_envs)[:, None]
        goals = np.where(draw.reshape(-1, *(1,) * (own_goals.ndim - 1)), achieved, own_goals)
        reach = np.where(draw, reach_drawn, own_step)[:, None]
        return Instructions(goals.astype(own_goals.dtype, copy=False), reach, keep)

    def _draw_compiled(self, view: DrawView, count: int, upper: int) -> Relabeled | None:
        if self.cfg is None:
            self.cfg = self._config(
                view, draw_mode=compiled.draw_mode(view.relabeler),
                selection=compiled.SELECTIONS[view.goal_selection], events=self.events,
            )
        return self._run_kernel(view, draw_first_reach, count, upper, self.cfg)


def takes_drawn_goal(rng: np.random.Generator, own_step: np.ndarray, strategy: str) -> np.ndarray:
    """Which transitions take a drawn goal: ``"all"`` those whose own goal is not reached, ``"some"`` half of them
    (h uniform in 0..1 free slots), ``"none"`` none."""
    draw = own_step <= 0
    if strategy == "none":
        draw[:] = False
    elif strategy == "some":
        draw &= rng.random(len(own_step)) < 0.5
    return draw


def first_reach(achieved: np.ndarray, own_goals: np.ndarray, spec: GoalSpec, goal_ndim: int, exact_values: bool
                ) -> np.ndarray:
    """Step (1..T) at which the value achieved at each step 1..T is first reached, 0 if never.

    O(T log T) for exact integer values; other goal specs compare every pair of steps, O(T^2) once per
    episode (in column blocks, so memory stays O(T))."""
    length = len(achieved)
    if exact_values:
        ids, _ = value_ids(achieved, own_goals, goal_ndim)
        _, first_index, inverse = np.unique(ids, return_index=True, return_inverse=True)
        return first_index[inverse.reshape(-1)] + 1
    first = np.zeros(length, dtype=np.int64)
    block = max(1, 2**16 // max(length, 1))
    for lo in range(0, length, block):
        hits = np.asarray(spec.reached(achieved[:, None], achieved[None, lo : lo + block]), dtype=bool)
        first[lo : lo + block] = np.where(hits.any(axis=0), hits.argmax(axis=0) + 1, 0)
    return first


@compiled.kernel
def _first_reach_round(rng, meta, envs, flat, t, length, keep, start, batch, cfg, params):  # type: ignore[no-untyped-def]
    """``FirstReachDraw._instructions`` for one round of :func:`~sb3_hir.buffers.draws.base.draw_rounds`.

    The coin and the drawn goal's reach decide each draw at random, so each is a select, not a branch
    (``_admit_round``)."""
    c = cfg[0]
    size, n_envs, mode = c.size, c.n_envs, c.draw_mode
    own_step = np.empty(batch, np.int64)
    for b in range(batch):
        own_step[b] = meta[start[b] * n_envs + envs[keep[b]], c.f_own]
    draw = np.empty(batch, np.bool_)
    for b in range(batch):
        draw[b] = (mode != 0) & (own_step[b] <= 0)
    if mode == 1:  # "some": half the transitions with a free slot draw a goal
        for b in range(batch):
            draw[b] = (rng.random() < 0.5) & draw[b]
    steps = np.empty((batch, 1), np.int64)
    reach = np.empty((batch, 1), np.int64)
    ok = np.empty(batch, np.bool_)
    other_end = np.empty(batch, np.bool_)
    f_first, f_forder, f_ffirst, f_fcount = c.f_first, c.f_forder, c.f_ffirst, c.f_fcount
    for b in range(batch):
        i = keep[b]
        if c.selection == 2:  # "final"
            step = np.int64(length[i])
            at = start[b] + length[i] - 1
            at -= size * (at >= size)
            first = np.int64(meta[at * n_envs + envs[i], f_first])
        else:
            count = np.int64(meta[flat[i], f_fcount])
            pick = np.int64(rng.random() * max(count, 1))
            at = start[b] + pick
            at -= size * (at >= size)
            # The picked row only where its goal is read: a drawn goal (or any, for event goals' admission) with
            # one first reached after t. Elsewhere the transition's own row, in cache, and no goal (first 0, which
            # is what admission makes of a pick with none after t).
            read = ((draw[b] | (c.events != 0) & (mode != 0)) & (count > 0))
            row = at * n_envs + envs[i] if read else flat[i]
            step = np.int64(meta[row, f_forder])
            first = np.int64(meta[row, f_ffirst]) if read else np.int64(0)  # same row: no second lookup
        drawn = draw[b]
        if c.events and mode != 0:  # event goals: admitted where a drawn goal would be, coin or not
            ok[b] = (own_step[b] > 0) | (first > t[i])
        else:
            ok[b] = (not drawn) | (first > t[i])
        steps[b, 0] = step if drawn else -1
        reach_drawn = first if first > 0 else -1
        reach[b, 0] = reach_drawn if drawn else own_step[b]
        other_end[b] = meta[flat[i], c.f_end] > 0
    return steps, reach, ok, other_end


@compiled.kernel
def draw_first_reach(box, meta, achieved, own_goals, nothing, admitted, upper, missing, cfg):  # type: ignore[no-untyped-def]
    """:class:`FirstReachDraw`'s draw in one call (``cfg``: ``draw_mode``, ``selection`` and the index columns)."""
    return draw_rounds(box.rng, meta, achieved, own_goals, nothing, admitted, upper, missing, cfg,
                       _here._first_reach_round, ())
