"""What every draw strategy shares: the rows it hands to serving, and the rounds of rejection that draw them.

A relabeled transition must lie inside its relabeled episode (the instruction's last goal not reached before it).
Each round draws rows and sub-envs uniformly, keeps those of finished episodes whose first row is not overwritten,
lets the strategy draw an instruction for each (:meth:`DrawStrategy._instructions`) and keeps the admissible pairs;
what is still missing is redrawn, up to ``max_redraws`` rounds, so relabeled transitions are uniform over the
admissible (transition, instruction) pairs. Every round costs a fixed ~30 numpy calls, so a round draws enough for
the missing pairs at the admitted share seen so far (:func:`oversample`); extra admissible pairs are dropped, which
keeps the kept ones uniform.

:func:`draw_rounds` is the same loop as a kernel, which takes the strategy's round kernel as an argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import numpy as np

from sb3_hir.buffers import compiled
from sb3_hir.buffers.episode_index import EndedEpisode, EpisodeIndex
from sb3_hir.buffers.storage import Storage, take_rows

__all__ = ["Candidates", "DrawStrategy", "Relabeled", "draw_rounds", "oversample"]


class Relabeled(NamedTuple):
    """Admissible (transition, hindsight instruction) pairs, as serving rewrites them."""

    flat: np.ndarray  # flat (row * n_envs + env) index of each transition
    start: np.ndarray  # row of the episode's first transition
    env: np.ndarray
    t: np.ndarray
    length: np.ndarray
    goals: np.ndarray  # (B, k, *goal_shape)
    reach: np.ndarray  # (B, k) reach steps under goals, -1 never
    other_end: np.ndarray  # the recorded episode ended in a termination its goals did not cause


class Candidates(NamedTuple):
    """One round's rows of finished episodes whose first row is intact, as a strategy draws instructions for them."""

    flat: np.ndarray
    start: np.ndarray
    env: np.ndarray
    t: np.ndarray
    length: np.ndarray
    meta: np.ndarray  # (B, F) the rows' index fields
    slot_meta: np.ndarray  # (B, k, F) index fields of the episode's rows start + j (per-episode slots j)
    own_steps: np.ndarray  # (B, k) reach steps of the episode's own goals, -1 never
    own_goals: np.ndarray  # (B, k, *goal_shape) the episode's own instruction


@compiled.jitable
def oversample(missing: int, admitted: float) -> int:
    """Draws for one round: enough for ``missing`` admissible pairs at the ``admitted`` share, within bounds."""
    return min(int(missing / max(admitted, 0.05) * 1.15) + 8, 20 * missing + 8)


class DrawStrategy:
    """How a relabeled transition gets its hindsight instruction; chosen once, when the buffer is built.

    A strategy owns the index fields it adds to every row (``fields``, built by :meth:`index_episode` when an episode
    ends), its numpy draw (:meth:`_instructions`) and, where it has one, its compiled draw beside it. ``draw`` is
    bound to one of them by :meth:`use_compiled`, so sampling never asks which.
    """

    #: index fields this strategy adds to each row (see :class:`~sb3_hir.buffers.episode_index.EpisodeIndex`).
    fields: ClassVar[tuple[str, ...]] = ()
    #: whether it finds reaches through an index of exact integer goal values (else by comparing values).
    exact_values = False

    def __init__(self) -> None:
        #: estimate of the admissible share of relabeled draws, kept across calls (rounds oversample by it).
        self.admitted = 1.0
        #: kernels this strategy has called (their first call may compile; see ``compiled.call``).
        self.warm: set[str] = set()
        self._boxed: tuple[np.random.Generator, Any] | None = None
        self.use_compiled(compiled.enabled())

    def use_compiled(self, on: bool) -> None:
        """Draw with the compiled kernels (identical draws, fewer array calls) or with the numpy code."""
        self.compiled = bool(on)
        self.draw: Callable[[Storage, EpisodeIndex, int, int], Relabeled | None] = self._draw_numpy

    def __getstate__(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if not callable(value)}
        state["warm"] = set()  # a new process compiles (or loads) the kernels again
        state["_boxed"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.use_compiled(compiled.enabled())  # where the buffer is loaded, not where it was saved

    def allocate(self, buffer: Storage, steps_dtype: np.dtype) -> None:
        """Room for per-row data beyond the index fields (``steps_dtype``: the index's integers)."""

    def index_episode(self, buffer: Storage, episode: EndedEpisode, meta: np.ndarray, field: dict[str, int]) -> None:
        """Fill this strategy's ``fields`` of an episode that just ended (``meta``: its rows, written back after)."""

    # -- the numpy draw -----------------------------------------------------------------------------------------
    def _draw_numpy(self, buffer: Storage, index: EpisodeIndex, count: int, upper: int) -> Relabeled | None:
        """``count`` admissible pairs from rows ``[0, upper)``, by rounds of rejection (module docstring)."""
        parts: list[Relabeled] = []
        missing = count
        admitted = self.admitted
        for _ in range(buffer.max_redraws + 1):
            if missing == 0:
                break
            draws = oversample(missing, admitted)
            rows = buffer.rng.integers(0, upper, size=draws)
            envs = buffer.rng.integers(0, buffer.n_envs, size=draws)
            part = self._relabel_rows(buffer, index, rows, envs)
            got = 0 if part is None else len(part.flat)
            admitted = max(got / draws, 0.01)
            self.admitted = admitted
            if part is not None and got:
                if got > missing:
                    part = Relabeled(*(a[:missing] for a in part))
                parts.append(part)
                missing -= len(part.flat)
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return Relabeled(*(np.concatenate(arrays) for arrays in zip(*parts, strict=True)))

    def _relabel_rows(self, buffer: Storage, index: EpisodeIndex, rows: np.ndarray, envs: np.ndarray
                      ) -> Relabeled | None:
        """Draw an instruction for each (row, env) of a finished, intact episode; keep the admissible ones."""
        rows_ = self._candidates(buffer, index, rows, envs)
        if rows_ is None:
            return None
        goals, reach, keep = self._instructions(buffer, index, rows_)
        # Admissible: the transition lies inside the relabeled episode (the k-th goal not reached before it).
        inside = ~((reach[:, -1] > 0) & (reach[:, -1] <= rows_.t))
        if keep is not None:
            inside &= keep
        other_end = self._other_end(buffer, rows_, index.field)
        part = Relabeled(rows_.flat, rows_.start, rows_.env, rows_.t, rows_.length, goals, reach, other_end)
        if not inside.all():
            part = Relabeled(*(a[inside] for a in part))
        return part

    @staticmethod
    def _candidates(buffer: Storage, index: EpisodeIndex, rows: np.ndarray, envs: np.ndarray) -> Candidates | None:
        """The rows of finished episodes whose first row is not overwritten, with their episodes' own goals."""
        size, n_envs, field, k = buffer.buffer_size, buffer.n_envs, index.field, buffer.num_goals
        meta_flat = index.meta.reshape(size * n_envs, -1)
        flat = rows * n_envs + envs
        meta = meta_flat.take(flat, axis=0)
        t = meta[:, field["t"]].astype(np.int64)
        length = meta[:, field["len"]].astype(np.int64)
        start = (rows - t) % size
        start_id = meta_flat[start * n_envs + envs, field["id"]]
        ok = (length > 0) & (start_id == meta[:, field["id"]])
        if not ok.all():
            keep = np.flatnonzero(ok)
            if not len(keep):
                return None
            rows, envs, flat, meta, t, length, start = (a[keep] for a in (rows, envs, flat, meta, t, length, start))
        # Per-episode slots j (own reach steps, own-goal value ranges) live in the episode's rows start + j.
        slots = (start[:, None] + np.arange(k)) % size
        slot_meta = meta_flat.take(slots * n_envs + envs[:, None], axis=0)  # (B, k, F)
        own_steps = np.where(np.arange(k) < length[:, None], slot_meta[..., field["own"]], -1).astype(np.int64)
        own_goals = take_rows(buffer.observations[buffer.goal_spec.goals_key], start * n_envs + envs)
        own_goals = own_goals.reshape(len(start), k, *buffer.goal_shape)  # GoalEnvs store one goal without k
        return Candidates(flat, start, envs, t, length, meta, slot_meta, own_steps, own_goals)

    # -- the compiled draw ---------------------------------------------------------------------------------------
    def _draw_compiled(self, buffer: Storage, index: EpisodeIndex, count: int, upper: int) -> Relabeled | None:
        """The numpy draw in one kernel call, where the strategy has one (identical draws)."""
        raise NotImplementedError

    def _config(self, buffer: Storage, index: EpisodeIndex, **settings: int) -> np.ndarray:
        """The named configuration of :func:`draw_rounds` with the strategy's ``settings``: sizes, rounds, the index
        columns (``f_<field>``)."""
        columns = {f"f_{name}": column for name, column in index.field.items()}
        return compiled.config(size=buffer.buffer_size, n_envs=buffer.n_envs, rounds=buffer.max_redraws,
                               k=buffer.num_goals, **columns, **settings)

    def _generator(self, buffer: Storage) -> Any:
        """The buffer's generator as the entry kernels take it (``compiled.box_generator``), boxed once."""
        if self._boxed is None or self._boxed[0] is not buffer.rng:
            self._boxed = (buffer.rng, compiled.call(self.warm, compiled.box_generator, buffer.rng))
        return self._boxed[1]

    def _run_kernel(self, buffer: Storage, index: EpisodeIndex, kernel: Callable[..., Any], count: int, upper: int,
                    cfg: np.ndarray, *extra: Any) -> Relabeled | None:
        """Call a strategy's :func:`draw_rounds` kernel on the buffer's arrays, flat over rows and sub-envs."""
        flat_rows = buffer.buffer_size * buffer.n_envs
        own_goals = buffer.observations[buffer.goal_spec.goals_key].reshape(flat_rows, -1)
        flat, start, envs, t, length, goals, reach, other_end, self.admitted = compiled.call(
            self.warm, kernel, self._generator(buffer), index.meta.reshape(flat_rows, -1),
            buffer.next_observations[buffer.goal_spec.achieved_key].reshape(flat_rows, -1), own_goals, own_goals[:0],
            float(self.admitted), upper, count, cfg, *extra,
        )
        if not len(flat):
            return None
        goals = goals.reshape(len(flat), buffer.num_goals, *buffer.goal_shape)
        return Relabeled(flat, start, envs, t, length, goals, reach, other_end)

    def _instructions(self, buffer: Storage, index: EpisodeIndex, rows: Candidates
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(goals (B, k, *goal_shape), reach (B, k), keep)`` drawn for the candidate rows; ``keep`` (or None: all)
        marks draws admissible beyond the reach test."""
        raise NotImplementedError

    def _other_end(self, buffer: Storage, rows: Candidates, field: dict[str, int]) -> np.ndarray:
        """Whether the recorded episode ended in a termination that the drawn goals did not cause."""
        return rows.meta[:, field["end"]] > 0


@compiled.kernel
def _finished_rows(rng, meta, missing, admitted, upper, cfg):  # type: ignore[no-untyped-def]
    """One round's rows and sub-envs, as ``_draw_numpy`` draws them (rows first, then sub-envs), and those of finished
    episodes with their first row not overwritten: ``(draws, envs, flat, t, length, keep, start, batch)``,
    ``keep[:batch]`` indexing them.

    Each pass makes one level of independent loads over the whole batch (the row, then the episode's first row),
    so the memory system overlaps them: the rows are scattered over the buffer.
    """
    c = cfg[0]
    draws = oversample(missing, admitted)
    rows = np.empty(draws, np.int64)
    envs = np.empty(draws, np.int64)
    for i in range(draws):
        rows[i] = rng.integers(0, upper)
    for i in range(draws):
        envs[i] = rng.integers(0, c.n_envs)
    flat = np.empty(draws, np.int64)
    t = np.empty(draws, np.int64)
    length = np.empty(draws, np.int64)
    row_id = np.empty(draws, np.int64)
    for i in range(draws):
        flat[i] = rows[i] * c.n_envs + envs[i]
        t[i] = meta[flat[i], c.f_t]
        length[i] = meta[flat[i], c.f_len]
        row_id[i] = meta[flat[i], c.f_id]
    keep = np.empty(draws, np.int64)
    start = np.empty(draws, np.int64)
    batch = 0
    for i in range(draws):
        first_row = rows[i] - t[i]
        if first_row < 0:
            first_row += c.size
        if length[i] > 0 and meta[first_row * c.n_envs + envs[i], c.f_id] == row_id[i]:
            keep[batch] = i
            start[batch] = first_row
            batch += 1
    return draws, envs, flat, t, length, keep, start, batch


@compiled.kernel
def draw_rounds(rng, meta, achieved, own_goals, goals_like, admitted, upper, missing, cfg, instruct, params):  # type: ignore[no-untyped-def]
    """``DrawStrategy._draw_numpy`` in one call: every round, with ``instruct`` (the strategy's round kernel).

    ``meta`` is the ``(rows * envs, F)`` index, ``achieved`` / ``own_goals`` the ``(rows * envs, D)`` achieved values
    after each transition and ``(rows * envs, k * D)`` stored instructions, ``goals_like`` a 0-length array of the
    goals' dtype. ``instruct(rng, meta, envs, flat, t, length, keep, start, batch, cfg, params)`` returns the round's
    ``(steps (B, k), reach (B, k), ok (B,), other_end (B,))``: goal j is the value achieved at step ``steps[b, j]``,
    or the episode's own goal j where that is -1. ``cfg[0]`` names ``size``, ``n_envs``, ``rounds``, ``k`` and the
    index columns ``f_id``, ``f_t``, ``f_len`` (:func:`~sb3_hir.buffers.compiled.config`). Returns ``(flat, start,
    env, t, length, goals (B, k * D), reach (B, k), other_end, admitted)`` of the admitted draws.
    """
    c = cfg[0]
    k, dim, total = c.k, achieved.shape[1], missing
    o_rows = np.empty((5, total), np.int64)  # flat, start, env, t, length
    o_goals = np.empty((total, k * dim), goals_like.dtype)
    o_reach = np.empty((total, k), np.int64)
    o_end = np.empty(total, np.bool_)
    filled = 0
    for _ in range(c.rounds + 1):
        if missing == 0:
            break
        draws, envs, flat, t, length, keep, start, batch = _finished_rows(rng, meta, missing, admitted, upper, cfg)
        steps, reach, ok, other_end = instruct(rng, meta, envs, flat, t, length, keep, start, batch, cfg, params)
        admissible = 0
        got = 0
        for b in range(batch):
            i = keep[b]
            last = reach[b, k - 1]
            if not ok[b] or (last > 0 and last <= t[i]):
                continue  # not admissible: the relabeled episode would have ended before t
            admissible += 1
            if filled + got >= total:
                continue  # more than needed: extra admissible draws are dropped, which keeps the kept ones uniform
            out = filled + got
            o_rows[0, out], o_rows[1, out], o_rows[2, out], o_rows[3, out] = flat[i], start[b], envs[i], t[i]
            o_rows[4, out] = length[i]
            o_end[out] = other_end[b]
            for j in range(k):
                o_reach[out, j] = reach[b, j]
                at = start[b] * c.n_envs + envs[i]
                if steps[b, j] > 0:
                    row = start[b] + steps[b, j] - 1
                    if row >= c.size:
                        row -= c.size
                    at = row * c.n_envs + envs[i]
                    for d in range(dim):
                        o_goals[out, j * dim + d] = achieved[at, d]
                else:
                    for d in range(dim):
                        o_goals[out, j * dim + d] = own_goals[at, j * dim + d]
            got += 1
        # The admitted share counts every admissible draw of the round, also those dropped as extra.
        admitted = max(admissible / draws, 0.01)
        filled += got
        missing -= got
    return (o_rows[0, :filled], o_rows[1, :filled], o_rows[2, :filled], o_rows[3, :filled], o_rows[4, :filled],
            o_goals[:filled], o_reach[:filled], o_end[:filled], admitted)
