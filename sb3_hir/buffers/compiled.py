"""The sampling draw compiled with numba: the same draws as the numpy code in ``hindsight.py``, in one call.

At ``sample(256)`` the numpy draw is some forty array calls of a few microseconds each on a few hundred rows, so
their fixed cost, not the arithmetic, is what a batch costs. Each kernel here does a whole draw in one call: it
consumes the buffer's ``np.random.Generator`` element by element, in the order the numpy code draws its arrays
(numba's Generator methods produce NumPy's streams), so both serve identical rows for one seed
(``tests/test_served_rows.py``). Without numba, or with ``SB3_HIR_JIT=0``, the buffer runs the numpy code.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = [
    "AVAILABLE", "EXACT", "REACH", "SINGLE", "call", "deferred_interrupt", "draw_exact", "draw_goal_steps",
    "draw_single", "enabled", "reach_indexed",
]

#: numba is a dependency; the numpy code stays the reference, and the fallback where numba has no wheel. numba is
#: imported on the first kernel call, not with the package: ``import sb3_hir`` and CLI commands that never sample
#: do not pay for it.
AVAILABLE = importlib.util.find_spec("numba") is not None

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


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold Ctrl-C until the block ends, then deliver it.

    numba compiles a kernel on its first call with new types; a ``KeyboardInterrupt`` raised while llvmlite runs
    one of its ctypes callbacks is printed and dropped ("Exception ignored on calling ctypes callback"), so a
    Ctrl-C during a first ``sample()`` would be lost and training would go on. Only the main thread receives
    signals; elsewhere the block runs as is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            if callable(previous):
                previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt
            elif previous != signal.SIG_IGN:
                raise KeyboardInterrupt


def call(warm: set[str], kernel: Callable[..., Any], *args: Any) -> Any:
    """``kernel(*args)``; its first call per buffer (``warm``: the kernels it has run), which may compile, holds
    Ctrl-C until it returns (``deferred_interrupt``). A buffer's argument types never change, so later calls do not
    compile."""
    name = kernel.__name__
    if name in warm:
        return kernel(*args)
    with deferred_interrupt():
        result = kernel(*args)
    warm.add(name)
    return result


_PENDING: dict[str, Callable[..., Any]] = {}


class _Lazy:
    """A kernel compiled on its first call: then every kernel of the module is handed to numba at once and
    replaces its stand-in, so that kernels calling each other see numba dispatchers when they compile."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any) -> Any:
        _materialize()
        return globals()[self.__name__](*args)


def _materialize() -> None:
    if not _PENDING:
        return
    import numba

    for name, fn in list(_PENDING.items()):
        globals()[name] = numba.njit(cache=True, nogil=True)(fn)
    _PENDING.clear()


def _njit(fn: Any) -> Any:
    if not AVAILABLE:
        return fn
    _PENDING[fn.__name__] = fn
    return _Lazy(fn)


@_njit
def _draw_finished_rows(rng, meta, missing, admitted, upper, n_envs, size, f_id, f_t, f_len):  # type: ignore[no-untyped-def]
    """One round's rows and sub-envs, as the numpy code draws them (rows first, then sub-envs; enough for
    ``missing`` admitted draws at the ``admitted`` share), and those whose episode is finished with its first
    row not overwritten: ``(draws, envs, flat, t, length, keep, start, batch)``, ``keep[:batch]`` indexing them.

    Each pass makes one level of independent loads over the whole batch (the row, then the episode's first row),
    so the memory system overlaps them: the rows are scattered over the buffer.
    """
    draws = min(int(missing / max(admitted, 0.05) * 1.15) + 8, 20 * missing + 8)
    rows = np.empty(draws, np.int64)
    envs = np.empty(draws, np.int64)
    for i in range(draws):
        rows[i] = rng.integers(0, upper)
    for i in range(draws):
        envs[i] = rng.integers(0, n_envs)
    flat = np.empty(draws, np.int64)
    t = np.empty(draws, np.int64)
    length = np.empty(draws, np.int64)
    row_id = np.empty(draws, np.int64)
    for i in range(draws):
        flat[i] = rows[i] * n_envs + envs[i]
        t[i] = meta[flat[i], f_t]
        length[i] = meta[flat[i], f_len]
        row_id[i] = meta[flat[i], f_id]
    keep = np.empty(draws, np.int64)
    start = np.empty(draws, np.int64)
    batch = 0
    for i in range(draws):
        first_row = rows[i] - t[i]
        if first_row < 0:
            first_row += size
        if length[i] > 0 and meta[first_row * n_envs + envs[i], f_id] == row_id[i]:
            keep[batch] = i
            start[batch] = first_row
            batch += 1
    return draws, envs, flat, t, length, keep, start, batch


@_njit
def _row_fields(total):  # type: ignore[no-untyped-def]
    """The admitted draws' row fields, shared by both kernels: ``(flat, start, env, t, length, other_end)``."""
    return (np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int64),
            np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.bool_))


@_njit
def _keep_row(rows, out, flat, start, env, t, length, other_end):  # type: ignore[no-untyped-def]
    rows[0][out], rows[1][out], rows[2][out], rows[3][out], rows[4][out] = flat, start, env, t, length
    rows[5][out] = other_end


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
    rows = _row_fields(total)
    o_goals = np.empty((total, dim), goals_out_dtype.dtype)
    o_reach = np.empty(total, np.int64)
    filled = 0
    for _ in range(rounds + 1):
        if missing == 0:
            break
        draws, envs, flat, t, length, keep, start, batch = _draw_finished_rows(
            rng, meta, missing, admitted, upper, n_envs, size, f_id, f_t, f_len
        )
        own_step = np.empty(batch, np.int64)
        for b in range(batch):
            own_step[b] = meta[start[b] * n_envs + envs[keep[b]], f_own]
        draw = np.empty(batch, np.bool_)
        for b in range(batch):
            draw[b] = goal_env or (draw_mode != 0 and own_step[b] <= 0)
        if not goal_env and draw_mode == 1:  # "some": half the transitions with a free slot draw a goal
            for b in range(batch):
                draw[b] = (rng.random() < 0.5) and draw[b]
        step = np.empty(batch, np.int64)
        first = np.empty(batch, np.int64)  # the drawn step's first reach (where searched)
        searched = not goal_env  # GoalEnvs draw as HER does (the buffer finds a terminating goal's reach after)
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
            _keep_row(rows, out, flat[i], start[b], envs[i], t[i], length[i], other_end)
            o_reach[out] = reach
            got += 1
        # The admitted share counts every admissible draw of the round, also those dropped as extra.
        admitted = max(admissible / draws, 0.01)
        filled += got
        missing -= got
    return (rows[0][:filled], rows[1][:filled], rows[2][:filled], rows[3][:filled], rows[4][:filled],
            o_goals[:filled], o_reach[:filled], rows[5][:filled], admitted)


#: ``reach_indexed``'s configuration vector.
REACH = ("size", "n_envs", "f_prev", "f_rank", "f_glo", "f_order", "f_olo", "f_ohi")


@_njit
def reach_indexed(meta, steps, start, envs, length, cfg):  # type: ignore[no-untyped-def]
    """``HindsightInstructionReplayBuffer._reach_indexed``: reach steps of ``k`` drawn goals.

    ``steps`` (B, k) are the drawn goal steps (-1: the episode's own goal j). A goal from step u is first reached at
    u unless its value occurred after the previous goal's reach; only then, and for own goals, a binary search over
    the value's occurrences runs. Goal by goal, each pass makes one level of loads over the whole batch (lookups,
    then each bisection step for every searching sample), so the scattered loads overlap in the memory system.
    """
    size, n_envs, f_prev, f_rank, f_glo, f_order, f_olo, f_ohi = (
        cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5], cfg[6], cfg[7]
    )
    batch, k = steps.shape
    reach = np.full((batch, k), -1, np.int64)
    previous = np.zeros(batch, np.int64)  # -1 once a goal is never reached: the later ones are not either
    lo = np.empty(batch, np.int64)
    hi = np.empty(batch, np.int64)
    end = np.empty(batch, np.int64)
    search = np.empty(batch, np.int64)
    work = np.empty(batch, np.int64)
    for j in range(k):
        count = 0
        for b in range(batch):
            if previous[b] < 0:
                continue
            step = steps[b, j]
            if step > 0:
                at = start[b] + step - 1
                if at >= size:
                    at -= size
                at = at * n_envs + envs[b]
                if np.int64(meta[at, f_prev]) <= previous[b]:
                    reach[b, j] = step
                    continue
                lo[b], hi[b] = meta[at, f_glo], meta[at, f_rank]
            elif j < length[b]:
                slot = start[b] + j
                if slot >= size:
                    slot -= size
                slot = slot * n_envs + envs[b]
                lo[b], hi[b] = meta[slot, f_olo], meta[slot, f_ohi]
            else:
                continue
            end[b] = hi[b]
            search[count] = b
            count += 1
        work[:count] = search[:count]
        active = count
        while active:  # one bisection step for every sample still searching, then drop the finished ones
            still = 0
            for c in range(active):
                b = work[c]
                if lo[b] >= hi[b]:
                    continue
                mid = (lo[b] + hi[b]) >> 1
                row = start[b] + mid
                if row >= size:
                    row -= size
                if np.int64(meta[row * n_envs + envs[b], f_order]) <= previous[b]:
                    lo[b] = mid + 1
                else:
                    hi[b] = mid
                work[still] = b
                still += 1
            active = still
        for c in range(count):
            b = search[c]
            if lo[b] < end[b]:
                row = start[b] + lo[b]
                if row >= size:
                    row -= size
                reach[b, j] = meta[row * n_envs + envs[b], f_order]
        for b in range(batch):
            if previous[b] >= 0:
                previous[b] = reach[b, j]
    return reach


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
        for j in range(2 * k):  # insertion sort: 2k values, cheaper than a library sort call per row
            value = excluded[b, j]
            at = j
            while at > 0 and row[at - 1] > value:
                row[at] = row[at - 1]
                at -= 1
            row[at] = value
        for j in range(k):
            out[b, j] = row[j] if row[j] < big else -1
    return out


@_njit
def _clashes(excluded, b, width, value):  # type: ignore[no-untyped-def]
    for j in range(width):  # noqa: SIM110 - a plain loop compiles to a loop; any(generator) does not
        if excluded[b, j] == value:
            return True
    return False


#: ``draw_exact``'s configuration vector.
EXACT = (
    "size", "n_envs", "upper", "missing", "rounds", "k", "strategy", "future",
    "f_id", "f_t", "f_len", "f_end", "f_own", "f_prev", "f_rank", "f_glo", "f_order", "f_olo", "f_ohi",
)


@_njit
def draw_exact(rng, meta, admitted, cfg):  # type: ignore[no-untyped-def]
    """``k``-goal relabeled draws with the exact-value index (``_draw_relabeled`` + ``_relabel_rows``), all rounds.

    Per round, as the numpy code: rows, then sub-envs, the finished-episode filter, the relabeler's goal steps
    (``draw_goal_steps``), their reach steps (``reach_indexed``) and the admissibility filter. Returns
    ``(flat, start, env, t, length, steps (B, k), reach (B, k), other_end, admitted)``; the caller gathers the goal
    values of the admitted draws only.
    """
    size, n_envs, upper, missing, rounds, k, strategy = cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5], cfg[6]
    future = cfg[7] != 0
    f_id, f_t, f_len, f_end, f_own = cfg[8], cfg[9], cfg[10], cfg[11], cfg[12]
    reach_cfg = np.empty(8, np.int64)
    reach_cfg[0], reach_cfg[1] = size, n_envs
    reach_cfg[2:] = cfg[13:19]
    total = missing
    rows = _row_fields(total)
    o_steps = np.empty((total, k), np.int64)
    o_reach = np.empty((total, k), np.int64)
    filled = 0
    for _ in range(rounds + 1):
        if missing == 0:
            break
        draws, envs, flat, t, length, keep, start, batch = _draw_finished_rows(
            rng, meta, missing, admitted, upper, n_envs, size, f_id, f_t, f_len
        )
        b_env = np.empty(batch, np.int64)
        b_t = np.empty(batch, np.int64)
        b_len = np.empty(batch, np.int64)
        own = np.full((batch, k), -1, np.int64)
        for b in range(batch):
            i = keep[b]
            b_env[b], b_t[b], b_len[b] = envs[i], t[i], length[i]
            for j in range(min(k, length[i])):
                at = start[b] + j
                if at >= size:
                    at -= size
                own[b, j] = meta[at * n_envs + envs[i], f_own]
        steps = draw_goal_steps(rng, own, b_len, b_t, strategy, future)
        reach = reach_indexed(meta, steps, start[:batch], b_env, b_len, reach_cfg)
        admissible = 0
        got = 0
        for b in range(batch):
            last = reach[b, k - 1]
            if last > 0 and last <= b_t[b]:
                continue  # the k-th goal reached before t: the transition lies outside its relabeled episode
            admissible += 1
            if filled + got >= total:
                continue  # extra admissible draws are dropped, which keeps the kept ones uniform
            out = filled + got
            i = keep[b]
            _keep_row(rows, out, flat[i], start[b], b_env[b], b_t[b], b_len[b], meta[flat[i], f_end] > 0)
            o_steps[out] = steps[b]
            o_reach[out] = reach[b]
            got += 1
        admitted = max(admissible / draws, 0.01)
        filled += got
        missing -= got
    return (rows[0][:filled], rows[1][:filled], rows[2][:filled], rows[3][:filled], rows[4][:filled],
            o_steps[:filled], o_reach[:filled], rows[5][:filled], admitted)
