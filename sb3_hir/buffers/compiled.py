"""The sampling draw compiled with numba: the same draws as the numpy code in ``hindsight.py``, in one call.

At ``sample(256)`` the numpy draw is some forty array calls of a few microseconds each on a few hundred rows, so
their fixed cost, not the arithmetic, is what a batch costs. Each kernel here does a whole draw in one call: it
consumes the buffer's ``np.random.Generator`` element by element, in the order the numpy code draws its arrays
(numba's Generator methods produce NumPy's streams), so both serve identical rows for one seed
(``tests/test_served_rows.py``). Without numba, or with ``SB3_HIR_JIT=0``, the buffer runs the numpy code.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

try:  # numba is a dependency; the numpy code stays the reference and the fallback where it cannot be imported
    import numba
except ImportError:  # pragma: no cover - exercised where numba has no wheel
    numba = None

__all__ = ["AVAILABLE", "REACH", "SINGLE", "draw_goal_steps", "draw_single", "enabled", "reach_indexed"]

AVAILABLE = numba is not None

#: ``draw_single``'s configuration vector: one int64 array, so a call unboxes one argument instead of twenty.
SINGLE = (
    "size", "n_envs", "upper", "missing", "rounds", "goal_env", "terminates", "draw_mode", "selection",
    "f_id", "f_t", "f_len", "f_end", "f_own", "f_first", "f_forder", "f_fcount", "f_ffirst",
)
#: ``draw_mode`` of ``SINGLE``: which relabeled transitions take a drawn goal (GoalEnv mode: all).
DRAW_MODES = {"none": 0, "some": 1, "all": 2}
SELECTIONS = {"future": 0, "episode": 1, "final": 2}


def enabled() -> bool:
    """Whether buffers built now use the compiled draw (numba importable and ``SB3_HIR_JIT`` not ``0``)."""
    return AVAILABLE and os.environ.get("SB3_HIR_JIT", "1") != "0"


def _njit(fn: Any) -> Any:
    return numba.njit(cache=True, nogil=True)(fn) if AVAILABLE else fn


@_njit
def draw_single(rng, meta, achieved, own_goals, goals_out_dtype, admitted, cfg):  # type: ignore[no-untyped-def]
    """One-goal relabeled draws (``_draw_relabeled`` + ``_relabel_rows`` + ``_relabel_single``), all rounds.

    ``meta`` is the ``(rows * envs, F)`` bookkeeping, ``achieved`` / ``own_goals`` the ``(rows * envs, D)`` achieved
    values after each transition and the stored goals, ``goals_out_dtype`` a 0-length array of the goals' dtype.
    Returns ``(flat, start, env, t, length, goals (B, D), reach, other_end, admitted)`` of the admitted draws.
    """
    size, n_envs, upper, missing, rounds = cfg[0], cfg[1], cfg[2], cfg[3], cfg[4]
    goal_env, terminates, draw_mode, selection = cfg[5] != 0, cfg[6] != 0, cfg[7], cfg[8]
    f_id, f_t, f_len, f_end, f_own, f_first, f_forder, f_fcount, f_ffirst = (
        cfg[9], cfg[10], cfg[11], cfg[12], cfg[13], cfg[14], cfg[15], cfg[16], cfg[17]
    )
    total = missing
    dim = achieved.shape[1]
    o_flat = np.empty(total, np.int64)
    o_start = np.empty(total, np.int64)
    o_env = np.empty(total, np.int64)
    o_t = np.empty(total, np.int64)
    o_len = np.empty(total, np.int64)
    o_goals = np.empty((total, dim), goals_out_dtype.dtype)
    o_reach = np.empty(total, np.int64)
    o_end = np.empty(total, np.bool_)
    filled = 0
    for _ in range(rounds + 1):
        if missing == 0:
            break
        draws = min(int(missing / max(admitted, 0.05) * 1.15) + 8, 20 * missing + 8)
        rows = np.empty(draws, np.int64)
        envs = np.empty(draws, np.int64)
        for i in range(draws):
            rows[i] = rng.integers(0, upper)
        for i in range(draws):
            envs[i] = rng.integers(0, n_envs)
        # Each pass below makes one level of independent loads over the whole batch (row, then episode start,
        # then drawn step...), so the memory system overlaps them: the rows are scattered over the buffer.
        flat = np.empty(draws, np.int64)
        t = np.empty(draws, np.int64)
        length = np.empty(draws, np.int64)
        row_id = np.empty(draws, np.int64)
        for i in range(draws):
            flat[i] = rows[i] * n_envs + envs[i]
            t[i] = meta[flat[i], f_t]
            length[i] = meta[flat[i], f_len]
            row_id[i] = meta[flat[i], f_id]
        # Admissible rows: their episode is finished and its first row not overwritten.
        keep = np.empty(draws, np.int64)
        start = np.empty(draws, np.int64)
        own_step = np.empty(draws, np.int64)
        batch = 0
        for i in range(draws):
            first_row = rows[i] - t[i]
            if first_row < 0:
                first_row += size
            start_flat = first_row * n_envs + envs[i]
            if length[i] > 0 and meta[start_flat, f_id] == row_id[i]:
                keep[batch] = i
                start[batch] = first_row
                own_step[batch] = meta[start_flat, f_own]
                batch += 1
        draw = np.empty(batch, np.bool_)
        for b in range(batch):
            draw[b] = goal_env or (draw_mode != 0 and own_step[b] <= 0)
        if not goal_env and draw_mode == 1:  # "some": half the transitions with a free slot draw a goal
            for b in range(batch):
                draw[b] = (rng.random() < 0.5) and draw[b]
        step = np.empty(batch, np.int64)
        first = np.empty(batch, np.int64)  # the drawn step's first reach (where searched)
        searched = not (goal_env and not terminates)
        if not searched:
            for b in range(batch):
                i = keep[b]
                if selection == 0:
                    step[b] = t[i] + 1 + np.int64(rng.random() * (length[i] - t[i]))
                elif selection == 1:
                    step[b] = 1 + np.int64(rng.random() * length[i])
                else:
                    step[b] = length[i]
        elif selection == 2:
            for b in range(batch):
                i = keep[b]
                step[b] = length[i]
                at = start[b] + length[i] - 1
                if at >= size:
                    at -= size
                first[b] = meta[at * n_envs + envs[i], f_first]
        else:
            for b in range(batch):
                i = keep[b]
                pick = np.int64(rng.random() * max(np.int64(meta[flat[i], f_fcount]), 1))
                at = start[b] + pick
                if at >= size:
                    at -= size
                step[b] = meta[at * n_envs + envs[i], f_forder]
                first[b] = meta[at * n_envs + envs[i], f_ffirst]  # same row: no second lookup
        step_flat = np.empty(batch, np.int64)
        for b in range(batch):
            at = start[b] + step[b] - 1
            if at >= size:
                at -= size
            step_flat[b] = at * n_envs + envs[keep[b]]
        got = 0
        admissible = 0
        for b in range(batch):
            i = keep[b]
            drawn = draw[b]
            ok = True
            reach_drawn = np.int64(-1)
            if searched:
                ok = (not drawn) or first[b] > t[i]
                if first[b] > 0:
                    reach_drawn = first[b]
                if goal_env:
                    drawn = drawn and ok
            reach = reach_drawn if drawn else own_step[b]
            if not ok or (reach > 0 and reach <= t[i]):
                continue  # not admissible: the relabeled episode would have ended before t
            admissible += 1
            if filled + got >= total:
                continue  # more than needed: extra admissible draws are dropped, which keeps the kept ones uniform
            out = filled + got
            start_flat = start[b] * n_envs + envs[i]
            if drawn:
                for d in range(dim):
                    o_goals[out, d] = achieved[step_flat[b], d]
            else:
                for d in range(dim):
                    o_goals[out, d] = own_goals[start_flat, d]
            other_end = meta[flat[i], f_end] > 0
            if goal_env and terminates:
                other_end = other_end and own_step[b] != length[i]
            o_flat[out], o_start[out], o_env[out], o_t[out], o_len[out] = flat[i], start[b], envs[i], t[i], length[i]
            o_reach[out], o_end[out] = reach, other_end
            got += 1
        # The admitted share counts every admissible draw of the round, also those dropped as extra.
        admitted = max(admissible / draws, 0.01)
        filled += got
        missing -= got
    return (o_flat[:filled], o_start[:filled], o_env[:filled], o_t[:filled], o_len[:filled], o_goals[:filled],
            o_reach[:filled], o_end[:filled], admitted)


#: ``reach_indexed``'s configuration vector.
REACH = ("size", "n_envs", "f_prev", "f_rank", "f_glo", "f_order", "f_olo", "f_ohi")


@_njit
def reach_indexed(meta, steps, start, envs, length, cfg):  # type: ignore[no-untyped-def]
    """``HindsightInstructionReplayBuffer._reach_indexed``: reach steps of ``k`` drawn goals, one pass per sample.

    ``steps`` (B, k) are the drawn goal steps (-1: the episode's own goal j). A goal from step u is first reached at
    u unless its value occurred after the previous goal's reach; only then, and for own goals, a binary search over
    the value's occurrences runs.
    """
    size, n_envs, f_prev, f_rank, f_glo, f_order, f_olo, f_ohi = (
        cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5], cfg[6], cfg[7]
    )
    batch, k = steps.shape
    reach = np.full((batch, k), -1, np.int64)
    for b in range(batch):
        previous = np.int64(0)
        env, first_row = envs[b], start[b]
        for j in range(k):
            step = steps[b, j]
            found = np.int64(-1)
            if step > 0:
                at = ((first_row + step - 1) % size) * n_envs + env
                if np.int64(meta[at, f_prev]) <= previous:
                    found = step
                else:
                    found = _first_after(meta, f_order, first_row, env, np.int64(meta[at, f_glo]),
                                         np.int64(meta[at, f_rank]), previous, size, n_envs)
            elif j < length[b]:
                slot = ((first_row + j) % size) * n_envs + env
                found = _first_after(meta, f_order, first_row, env, np.int64(meta[slot, f_olo]),
                                     np.int64(meta[slot, f_ohi]), previous, size, n_envs)
            reach[b, j] = found
            if found < 0:
                break
            previous = found
    return reach


@_njit
def _first_after(meta, f_order, start, env, lo, hi, after, size, n_envs):  # type: ignore[no-untyped-def]
    """``kernels.first_after`` for one sample: first step > ``after`` at positions ``[lo, hi)``, or -1."""
    end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        row = start + mid  # < 2 * size: a subtraction, not a division
        if row >= size:
            row -= size
        if np.int64(meta[row * n_envs + env, f_order]) <= after:
            lo = mid + 1
        else:
            hi = mid
    if lo < end:
        row = start + lo
        if row >= size:
            row -= size
        return np.int64(meta[row * n_envs + env, f_order])
    return np.int64(-1)


@_njit
def draw_goal_steps(rng, own, length, t, strategy, future):  # type: ignore[no-untyped-def]
    """``HindsightInstructionRelabeler.draw_goal_steps`` (``strategy`` 1 "some", 2 "all"; ``future`` as
    ``goal_selection == "future"``): the same draws from ``rng`` in the same order, one call per batch."""
    batch, k = own.shape
    out = np.full((batch, k), -1, np.int64)
    if strategy == 0 or batch == 0:
        return out
    big = np.iinfo(np.int64).max // 4
    h = np.empty(batch, np.int64)
    excluded = np.full((batch, 2 * k), big, np.int64)
    for b in range(batch):
        free = k
        for j in range(k):
            if own[b, j] > 0:
                free -= 1
                excluded[b, j] = own[b, j]
        h[b] = free
    if strategy == 1:  # "some": h uniform in 0..free
        for b in range(batch):
            h[b] = np.int64(rng.random() * (h[b] + 1))
    draw = np.empty(batch, np.int64)
    active = np.empty(batch, np.bool_)
    clash = np.empty(batch, np.int64)
    for i in range(k):
        width = k + i
        for b in range(batch):
            lo = t[b] + 1 if (i == 0 and future) else 1
            span = length[b] - lo + 1
            inside = 0
            for j in range(width):
                if excluded[b, j] >= lo and excluded[b, j] <= length[b]:
                    inside += 1
            active[b] = i < h[b] and span - inside > 0
        for b in range(batch):
            lo = t[b] + 1 if (i == 0 and future) else 1
            draw[b] = lo + np.int64(rng.random() * max(length[b] - lo + 1, 1))
        # Uniform over the free steps by rejection, redrawing the clashing rows in order, round by round.
        count = 0
        for b in range(batch):
            if active[b] and _clashes(excluded, b, width, draw[b]):
                clash[count] = b
                count += 1
        while count:
            for c in range(count):
                b = clash[c]
                lo = t[b] + 1 if (i == 0 and future) else 1
                draw[b] = lo + np.int64(rng.random() * (length[b] - lo + 1))
            still = 0
            for c in range(count):
                b = clash[c]
                if _clashes(excluded, b, width, draw[b]):
                    clash[still] = b
                    still += 1
            count = still
        for b in range(batch):
            if i == 0 and not active[b]:
                h[b] = 0  # no admissible first alternative: keep the own instruction
            if active[b]:
                excluded[b, k + i] = draw[b]
    row = np.empty(2 * k, np.int64)
    for b in range(batch):
        if h[b] == 0:
            continue
        row[:] = excluded[b]
        row.sort()
        for j in range(k):
            out[b, j] = row[j] if row[j] < big else -1
    return out


@_njit
def _clashes(excluded, b, width, value):  # type: ignore[no-untyped-def]
    for j in range(width):  # noqa: SIM110 - a plain loop compiles to a loop; any(generator) does not
        if excluded[b, j] == value:
            return True
    return False
