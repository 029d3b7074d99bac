"""``k``-goal instructions with exact goal specs on integer goals: reach steps from an index of the achieved values.

When the episode ends, its achieved values get ids and the steps are sorted by value (``order``, steps ascending within
a value), with each step's position in that order (``rank``), the start of its value's group (``glo``) and the
previous occurrence of its value (``prev``); the own goals' value ranges go in the episode's first rows (``olo``,
``ohi``). Reach steps then cost O(k) per sample: a drawn goal taken from step ``u`` is first reached at ``u`` unless its
value occurred since the previous goal's reach, which one lookup of ``prev`` tells; only then a binary search over that
value's occurrences runs (:func:`first_after`).

The kernels read two columns of their own beside the index (:meth:`ExactIndexDraw.search_columns`):

* ``order``, contiguous over rows: a value's occurrences then share a cache line or two, where the index's rows spread
  them one row apart (0.945x of ``sample(256)`` at k = 3 paired; ``benchmarks/results/bench_compare_order.txt``);
* ``first``, each step's value's first occurrence in its episode. Goal 0 is reached there, with nothing before it to
  search past, and a later goal too when that occurrence comes after the previous goal's reach (a value the agent
  had not met before the previous goal: about half the searches of goals 1 and 2 in ``bench_buffer.py``'s walks).
  One load, where the search took a bisection (``benchmarks/results/bench_compare_first.txt`` for goal 0 alone,
  ``bench_compare_first_column.txt`` for every goal).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sb3_hir.buffers import compiled
from sb3_hir.buffers.compiled import draw_goal_steps
from sb3_hir.buffers.draws.base import Candidates, Relabeled, draw_rounds
from sb3_hir.buffers.draws.goal_steps import GoalStepsDraw
from sb3_hir.buffers.draws.view import DrawView
from sb3_hir.buffers.episode_index import EndedEpisode
from sb3_hir.buffers.storage import value_ids

__all__ = ["ExactIndexDraw", "draw_exact", "first_after", "reach_indexed"]

#: this module, through which its kernels pass ``_exact_round`` (see ``compiled.kernels_of``).
_here = compiled.kernels_of(__name__)


class ExactIndexDraw(GoalStepsDraw):
    """Reach steps from the exact-value index (module docstring). With the built-in relabeler, the compiled draw is
    one kernel call (rows, goal steps, reach steps, admissibility); with another, its ``draw_goal_steps`` runs in
    Python and the reach steps compiled."""

    fields = ("prev", "rank", "glo", "order", "olo", "ohi")
    exact_values = True

    def __init__(self, builtin: bool | None = None) -> None:
        self.cfg: np.ndarray | None = None
        super().__init__(builtin)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_columns", None)  # derived from the index: made again from it where the buffer is loaded
        return state

    def search_columns(self, view: DrawView) -> tuple[np.ndarray, np.ndarray]:
        """``(order, first)``, each ``(rows * envs,)`` contiguous, as the kernels read them (module docstring): the
        index's ``order`` column, and the step of each step's value's first occurrence in its episode. Made from the
        index once per index array (a loaded buffer's too), and kept equal to it as episodes are indexed
        (:meth:`index_episode`). Rows of no finished episode may differ (a reset index); no draw reads them."""
        assert view.index is not None, "the episode index is built with the buffer, before any draw"
        meta = view.index.meta
        held = self.__dict__.get("_columns")
        if held is None or held[0] is not meta:
            field = view.index.field
            order = np.ascontiguousarray(meta[..., field["order"]])
            # A row's episode starts t rows before it (circularly); its value's group starts glo positions after that.
            rows = np.arange(view.buffer_size)[:, None]
            at = (rows - meta[..., field["t"]] + meta[..., field["glo"]]) % view.buffer_size
            first = np.where(meta[..., field["len"]] > 0, np.take_along_axis(order, at, axis=0), 0)
            held = self._columns = (meta, order.reshape(-1), first.astype(order.dtype).reshape(-1))
        return held[1], held[2]

    def setup(self, view: DrawView) -> None:
        if not view.goal_spec.ordered:
            raise ValueError("draw strategy 'exact-index' finds each goal after the previous slot's; a goal spec with "
                             "padding (pad_value) or groups (groups_key) is served by 'window'")
        if not view.exact_values:
            raise ValueError("draw strategy 'exact-index' finds reaches by exact integer values: it needs the 'exact' "
                             "goal spec on integer goals and achieved values; use 'window' for other goal specs")
        super().setup(view)

    def use_compiled(self, on: bool) -> None:
        super().use_compiled(on)
        self.reach_steps = self._reach_compiled if on else self._reach_indexed  # type: ignore[method-assign]
        if on and self.builtin and not self.events:  # event goals draw round by round (GoalStepsDraw.instructions)
            self.draw = self._draw_compiled

    def index_episode(self, view: DrawView, episode: EndedEpisode, meta: np.ndarray, field: dict[str, int]) -> None:
        super().index_episode(view, episode, meta, field)
        length = episode.length
        ids, own_ids = value_ids(episode.achieved, episode.own_goals, len(view.goal_shape))
        order = np.argsort(ids, kind="stable")  # positions -> step offset, grouped by value, steps ascending
        sorted_ids = ids[order]
        rank = np.empty(length, dtype=np.int64)
        rank[order] = np.arange(length)
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        group_lo_sorted = starts[np.searchsorted(starts, np.arange(length), side="right") - 1]
        group_lo = group_lo_sorted[rank]
        prev = np.where(rank > group_lo, order[np.maximum(rank - 1, 0)] + 1, 0)
        meta[:, field["prev"]] = prev
        meta[:, field["rank"]] = rank
        meta[:, field["glo"]] = group_lo
        meta[:, field["order"]] = order + 1  # steps are 1-based
        held = self.__dict__.get("_columns")
        if held is not None and view.index is not None and held[0] is view.index.meta:
            held[1].reshape(view.buffer_size, view.n_envs)[episode.rows, episode.env] = order + 1
            held[2].reshape(view.buffer_size, view.n_envs)[episode.rows, episode.env] = order[group_lo] + 1
        slots = min(view.num_goals, length)
        meta[:slots, field["olo"]] = np.searchsorted(sorted_ids, own_ids, side="left")[:slots]
        meta[:slots, field["ohi"]] = np.searchsorted(sorted_ids, own_ids, side="right")[:slots]

    def _reach_indexed(self, view: DrawView, rows: Candidates, steps: np.ndarray,
                       step_rows: np.ndarray, goals: np.ndarray) -> np.ndarray:
        """Reach steps of goals drawn as achieved steps, from the exact-value index: O(k) per sample, plus
        O(log T) for a goal whose value recurs between the previous goal's reach and its own step."""
        assert view.index is not None, "the episode index is built with the buffer, before any draw"
        size, n_envs, field = view.buffer_size, view.n_envs, view.index.field
        start, envs, length, slot_meta = rows.start, rows.env, rows.length, rows.slot_meta
        meta_flat = view.index.meta.reshape(size * n_envs, -1)
        batch, k = steps.shape
        at_step = meta_flat.take(step_rows * n_envs + envs[:, None], axis=0)  # (B, k, F)
        reach = np.full((batch, k), -1, dtype=np.int64)
        previous = np.zeros(batch, dtype=np.int64)
        for j in range(k):
            alive = previous >= 0
            from_step = steps[:, j] > 0
            # A goal taken from step u: reached at u unless its value occurred after the previous reach.
            prev_occ = at_step[:, j, field["prev"]].astype(np.int64)
            reach_j = np.where(from_step & (prev_occ <= previous), steps[:, j], -1)
            lo = np.where(from_step, at_step[:, j, field["glo"]], slot_meta[:, j, field["olo"]]).astype(np.int64)
            hi = np.where(from_step, at_step[:, j, field["rank"]], slot_meta[:, j, field["ohi"]]).astype(np.int64)
            own_slot = ~from_step & (j < length)
            search = np.flatnonzero(alive & ((from_step & (prev_occ > previous)) | own_slot))
            if len(search):
                reach_j[search] = first_after(
                    meta_flat[:, field["order"]], start[search], envs[search], lo[search], hi[search],
                    previous[search], size, n_envs,
                )
            reach_j = np.where(alive, reach_j, -1)
            reach[:, j] = reach_j
            previous = reach_j
        return reach

    def _reach_compiled(self, view: DrawView, rows: Candidates, steps: np.ndarray,
                       step_rows: np.ndarray, goals: np.ndarray) -> np.ndarray:
        assert view.index is not None, "the episode index is built with the buffer, before any draw"
        (meta_flat, achieved, _, _), _ = self._kernel_arrays(view)
        return compiled.call(self.warm, reach_indexed, meta_flat, *self.search_columns(view), achieved, steps,
                             rows.start, rows.env, rows.length, self._cfg(view))

    def _draw_compiled(self, view: DrawView, count: int, upper: int) -> Relabeled | None:
        return self._run_kernel(view, draw_exact, count, upper, self._cfg(view), *self.search_columns(view))

    def _cfg(self, view: DrawView) -> np.ndarray:
        if self.cfg is None:
            self.cfg = self._config(view, draw_mode=compiled.draw_mode(view.relabeler),
                                    future=view.goal_selection == "future")
        return self.cfg


def first_after(
    order: np.ndarray,
    start: np.ndarray,
    envs: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    after: np.ndarray,
    size: int,
    n_envs: int,
) -> np.ndarray:
    """First step > ``after`` among positions ``[lo, hi]`` of each episode's value-sorted order, or -1.

    Positions ``lo..hi-1`` hold the steps of one value in ascending order; for a goal drawn from step u,
    ``hi`` is u's own position (u itself is past ``after``), for an own goal it is the group's end.
    """
    end = hi
    iterations = int((hi - lo).max()).bit_length() if len(lo) else 0
    for _ in range(iterations):  # a fixed count (the largest group's bit length): no per-round any()
        active = lo < hi
        mid = (lo + hi) >> 1
        at = start + mid
        at[at >= size] -= size
        value = order[at * n_envs + envs if n_envs > 1 else at]
        right = active & (value <= after)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right, hi, mid)
    found = lo < end
    value = order[((start + np.where(found, lo, 0)) % size) * n_envs + envs].astype(np.int64)
    return np.where(found, value, -1)


@compiled.kernel
def reach_indexed(meta, order, first, achieved, steps, start, envs, length, cfg):  # type: ignore[no-untyped-def]
    """``ExactIndexDraw._reach_indexed``: reach steps of ``k`` drawn goals (``cfg``: sizes and index columns;
    ``order``, ``first``: :meth:`ExactIndexDraw.search_columns`; ``achieved``: the achieved values, flat over rows and
    sub-envs, which the lookups bring into cache for ``_copy_admitted``).

    ``steps`` (B, k) are the drawn goal steps (-1: the episode's own goal j). A goal from step u is first reached at
    its value's first occurrence if that comes after the previous goal's reach (always, for goal 0:
    :func:`_reach_first`), else at u unless its value occurred after the previous reach; only then, and for own
    goals, a binary search over the value's occurrences runs. Goal by goal, each pass makes one level of loads over
    the whole batch (lookups, then each bisection step for every searching sample), so the scattered loads overlap in
    the memory system.
    """
    batch, k = steps.shape
    reach = np.full((batch, k), -1, np.int64)
    previous = np.empty(batch, np.int64)  # -1 once a goal is never reached: the later ones are not either
    lo = np.empty(batch, np.int64)
    hi = np.empty(batch, np.int64)
    end = np.empty(batch, np.int64)
    search = np.empty(batch, np.int64)
    work = np.empty(batch, np.int64)
    warm = np.empty(batch, achieved.dtype)
    _reach_first(meta, order, first, achieved, warm, steps, start, envs, length, cfg, reach, previous)
    for j in range(1, k):
        count = _reach_lookups(meta, first, achieved, warm, steps, start, envs, length, cfg, j, previous, reach, lo, hi,
                               end, search)
        work[:count] = search[:count]
        _bisect_after(order, start, envs, cfg, previous, lo, hi, work, count)
        _reach_found(order, start, envs, cfg, j, reach, lo, end, search, count)
        for b in range(batch):
            if previous[b] >= 0:
                previous[b] = reach[b, j]
    return reach


@compiled.kernel
def _reach_first(meta: np.ndarray, order: np.ndarray, first: np.ndarray, achieved: np.ndarray, warm: np.ndarray,
                 steps: np.ndarray, start: np.ndarray, envs: np.ndarray, length: np.ndarray, cfg: np.ndarray,
                 reach: np.ndarray, previous: np.ndarray) -> None:
    """Goal 0's reach, which needs no search: nothing precedes it, so it is reached at its value's first occurrence
    (``first`` of a drawn goal's step; the first position of the own goal's group, ``olo``, never reached if the group
    is empty). One load per sample and no branch on a loaded value; ``previous`` becomes goal 0's reach."""
    c = cfg[0]
    size, n_envs = c.size, c.n_envs
    for b in range(len(previous)):
        step, first_row = steps[b, 0], start[b]
        found = -1
        if step > 0:
            at = first_row + step - 1
            at -= size * (at >= size)
            at = at * n_envs + envs[b]
            warm[b] = achieved[at, 0]
            found = np.int64(first[at])
        elif length[b] > 0:
            slot = first_row * n_envs + envs[b]
            lo, hi = np.int64(meta[slot, c.f_olo]), np.int64(meta[slot, c.f_ohi])
            row = first_row + lo
            row -= size * (row >= size)
            value = np.int64(order[row * n_envs + envs[b]])
            found = value if lo < hi else -1
        reach[b, 0] = found
        previous[b] = found


@compiled.kernel
def _reach_lookups(meta: np.ndarray, first: np.ndarray, achieved: np.ndarray, warm: np.ndarray, steps: np.ndarray,
                   start: np.ndarray, envs: np.ndarray, length: np.ndarray, cfg: np.ndarray, j: int,
                   previous: np.ndarray, reach: np.ndarray, lo: np.ndarray, hi: np.ndarray, end: np.ndarray,
                   search: np.ndarray) -> int:
    """Goal ``j``'s reach where a lookup tells it (a drawn goal's value first met after the previous reach, or not
    seen since it), and for the rest the range of positions to search (``lo``, ``hi``, ``end``): returns how many,
    listed in ``search``.

    Samples whose previous goal is never reached are skipped, and so are own goal slots past the episode's end.

    A drawn goal's achieved value is read here too, into ``warm``, which nothing reads: its row, as scattered as the
    index row read beside it, is then in flight with it, and ``_copy_admitted``'s copy of the goal finds it in cache
    (numba has no prefetch; a load stored to an array is one LLVM keeps). 0.94x of ``sample(256)`` at k = 3
    (``benchmarks/results/bench_compare_warm.txt``)."""
    c = cfg[0]
    size, n_envs = c.size, c.n_envs
    count = 0
    for b in range(len(previous)):
        if previous[b] < 0:
            continue
        step = steps[b, j]
        if step > 0:
            at = start[b] + step - 1
            if at >= size:
                at -= size
            at = at * n_envs + envs[b]
            warm[b] = achieved[at, 0]
            met = np.int64(first[at])
            if met > previous[b]:
                reach[b, j] = met
                continue
            if np.int64(meta[at, c.f_prev]) <= previous[b]:
                reach[b, j] = step
                continue
            lo[b], hi[b] = meta[at, c.f_glo] + 1, meta[at, c.f_rank]  # the group's first step is not past previous
        elif j < length[b]:
            slot = start[b] + j
            if slot >= size:
                slot -= size
            slot = slot * n_envs + envs[b]
            lo[b], hi[b] = meta[slot, c.f_olo], meta[slot, c.f_ohi]
        else:
            continue
        end[b] = hi[b]
        search[count] = b
        count += 1
    return count


@compiled.kernel
def _bisect_after(order: np.ndarray, start: np.ndarray, envs: np.ndarray, cfg: np.ndarray, previous: np.ndarray,
                  lo: np.ndarray, hi: np.ndarray, work: np.ndarray, count: int) -> None:
    """Narrow ``lo`` of the ``count`` samples listed in ``work`` to the first position whose step is past the
    previous reach: one bisection step for every sample still searching, then drop the finished ones.

    Each step's side is a select, not a branch: it goes either way at random (a misprediction half the time), and
    the finished samples are dropped by a count, not a branch (0.98x of ``sample(256)`` at k = 3 paired, 0.95-0.98x in
    one process; ``benchmarks/results/bench_compare_bisect.txt``)."""
    c = cfg[0]
    size, n_envs = c.size, c.n_envs
    active = 0
    for w in range(count):  # an empty range has nothing to narrow
        b = work[w]
        work[active] = b
        active += lo[b] < hi[b]
    while active:
        still = 0
        for w in range(active):
            b = work[w]
            low, high = lo[b], hi[b]
            mid = (low + high) >> 1
            row = start[b] + mid
            row -= size * (row >= size)
            right = np.int64(order[row * n_envs + envs[b]]) <= previous[b]
            low = mid + 1 if right else low
            high = high if right else mid
            lo[b], hi[b] = low, high
            work[still] = b
            still += low < high
        active = still


@compiled.kernel
def _reach_found(order: np.ndarray, start: np.ndarray, envs: np.ndarray, cfg: np.ndarray, j: int, reach: np.ndarray,
                 lo: np.ndarray, end: np.ndarray, search: np.ndarray, count: int) -> None:
    """Goal ``j``'s reach for the ``count`` searched samples: the step at the position found, if inside the range
    (else it stays -1, never reached)."""
    c = cfg[0]
    for s in range(count):
        b = search[s]
        if lo[b] < end[b]:
            row = start[b] + lo[b]
            if row >= c.size:
                row -= c.size
            reach[b, j] = order[row * c.n_envs + envs[b]]


@compiled.kernel
def _exact_round(rng, meta, envs, flat, t, length, keep, start, batch, cfg, params):  # type: ignore[no-untyped-def]
    """The built-in relabeler's goal steps (``draw_goal_steps``) and their reach steps (``reach_indexed``) for one
    round of :func:`~sb3_hir.buffers.draws.base.draw_rounds`."""
    c = cfg[0]
    k = c.k
    b_env = np.empty(batch, np.int64)
    b_t = np.empty(batch, np.int64)
    b_len = np.empty(batch, np.int64)
    own = np.full((batch, k), -1, np.int64)
    other_end = np.empty(batch, np.bool_)
    for b in range(batch):
        i = keep[b]
        b_env[b], b_t[b], b_len[b] = envs[i], t[i], length[i]
        for j in range(min(k, length[i])):
            at = start[b] + j
            if at >= c.size:
                at -= c.size
            own[b, j] = meta[at * c.n_envs + envs[i], c.f_own]
        other_end[b] = meta[flat[i], c.f_end] > 0
    steps = draw_goal_steps(rng, own, b_len, b_t, c.draw_mode, c.future != 0)
    reach = reach_indexed(meta, params[0], params[1], params[2], steps, start[:batch], b_env, b_len, cfg)
    return steps, reach, np.ones(batch, np.bool_), other_end


@compiled.kernel
def draw_exact(box, meta, achieved, own_goals, nothing, admitted, upper, missing, cfg, order, first):  # type: ignore[no-untyped-def]
    """:class:`ExactIndexDraw`'s draw in one call (``cfg``: ``draw_mode``, ``future`` and the index columns;
    ``order``, ``first``: :meth:`ExactIndexDraw.search_columns`)."""
    return draw_rounds(box.rng, meta, achieved, own_goals, nothing, admitted, upper, missing, cfg,
                       _here._exact_round, (order, first, achieved))
