"""The draw-strategy interface: how a relabeled transition gets its hindsight instruction.

A strategy is a :class:`DrawStrategy` subclass that writes one method, :meth:`DrawStrategy.instructions`: for
candidate transitions (:class:`Candidates`: rows of finished episodes, with their episodes' own instructions) it draws
an instruction each and returns it with its reach steps (:class:`Instructions`). Everything else is shared: the
rounds of rejection below, the admissibility test, and serving (rewards, masks, terminations, n-step windows), which
rewrites the pairs it returns. It reads the buffer through a :class:`~sb3_hir.buffers.draws.view.DrawView` only.
Strategies are registered by name through the ``register_draw_strategies`` hook, as the built-in ones are, and picked
with the buffers' ``draw`` argument.

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
from typing import Any, NamedTuple

import numpy as np

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws.view import DrawView
from sb3_hir.buffers.episode_index import EndedEpisode
from sb3_hir.reach import instruction_end

__all__ = [
    "Candidates", "DrawContractError", "DrawStrategy", "GoalsInside", "Instructions", "Relabeled", "admissible",
    "draw_rounds", "goal_bounds", "oversample",
]


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


class GoalsInside(Relabeled):
    """A compiled draw whose kernel found every goal inside the goals' Box (``draw_rounds``, for integer goals with one
    low and one high): the buffer's bounds check (``draw_checks.check_draw``) has nothing left to refuse. Any other
    draw is a plain :class:`Relabeled`, which the check reads itself."""

    __slots__ = ()


class Instructions(NamedTuple):
    """What :meth:`DrawStrategy.instructions` returns for ``B`` candidates.

    ``reach[b, j]`` must be the step (``1..length``) at which the relabeled episode reaches goal ``j``, goals reached
    in order (each after the previous one's reach), and -1 from the first goal never reached on: serving rewards and
    terminates by it, and the project's served-rows oracle (:func:`sb3_hir.testing.check_draw_strategy`) checks it.
    A pair whose last goal is reached at or before ``t`` is dropped as not admissible (the relabeled episode ended
    before the transition), as is one with ``keep`` False.
    """

    goals: np.ndarray  # (B, k, *goal_shape) in the buffer's goals dtype
    reach: np.ndarray  # (B, k) integers
    keep: np.ndarray | None = None  # (B,) bool, or None: every draw


class DrawContractError(ValueError):
    """A draw strategy returned something serving cannot use: the message names the strategy and what it must
    return."""


class Candidates(NamedTuple):
    """One round's rows of finished episodes whose first row is intact, as a strategy draws instructions for them
    (``B`` of them; steps are 1-based: the transition at ``t`` leads to step ``t + 1``)."""

    flat: np.ndarray  # flat (row * n_envs + env) index of each transition
    start: np.ndarray  # row of its episode's first transition
    env: np.ndarray
    t: np.ndarray  # the transition's step in its episode, 0..length-1
    length: np.ndarray  # its episode's length T
    #: ``(B, F)`` each row's integers in the episode index, ``meta[:, view.index.field[name]]`` for the fields
    #: ``id``, ``t``, ``len``, ``own``, ``end`` and the strategy's own ``fields`` (:class:`DrawStrategy`), so a
    #: strategy reads what it indexed when the episode ended without touching the buffer.
    meta: np.ndarray
    #: ``(B, k, F)`` the same fields in the episode's rows ``start + j``: per-episode values kept in slot ``j`` (the
    #: ``own`` reach step of goal ``j``, a strategy's per-goal field), since one row holds one integer per field.
    slot_meta: np.ndarray
    #: ``(B, k)`` the step at which the episode reached its own goal ``j``; -1 where it never did (the recorded
    #: instruction was not completed, or ``j`` is past the episode's length).
    own_steps: np.ndarray
    own_goals: np.ndarray  # (B, k, *goal_shape) the episode's own instruction


def admissible(view: DrawView, t: np.ndarray, goals: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """Whether each drawn instruction may relabel its transition ``t``: the transition lies inside the relabeled
    episode (the instruction not complete before it), and no goal describes nothing
    (:meth:`~sb3_hir.goals.GoalSpec.is_nothing`, the one statement of that rule, at every level of description).
    Every draw path asks this, the compiled draw's kernel included (``draw_rounds``)."""
    spec = view.goal_spec
    if spec.ordered:
        inside = ~((reach[:, -1] > 0) & (reach[:, -1] <= t))
    else:  # padding or groups: the instruction ends at its last real goal's reach (sb3_hir.reach)
        end = instruction_end(reach, ~spec.is_padding(goals))
        inside = ~((end > 0) & (end <= t))
    if spec.nothing_value is not None:
        inside &= ~spec.is_nothing(goals).any(axis=1)
    return inside


@compiled.jitable
def oversample(missing: int, admitted: float) -> int:
    """Draws for one round: enough for ``missing`` admissible pairs at the ``admitted`` share, within bounds."""
    return min(int(missing / max(admitted, 0.05) * 1.15) + 8, 20 * missing + 8)


class DrawStrategy:
    """How a relabeled transition gets its hindsight instruction; one object per buffer, chosen when it is built.

    Subclass it and write :meth:`instructions` (module docstring). Optionally:

    * ``fields`` and :meth:`index_episode`: integers per row that the strategy computes once when an episode ends
      (``view.index.meta[..., view.index.field[name]]``), e.g. where each value is first reached;
    * :meth:`setup`: check that the buffer fits the strategy (raise ``ValueError`` naming what it needs) and settle
      settings that depend on it;
    * :meth:`other_end`: whether a recorded termination stands under the drawn goals;
    * a compiled draw beside the numpy one (:meth:`use_compiled`), as the built-in strategies have: identical draws
      in fewer array calls.

    ``draw`` is bound to the numpy or compiled draw by :meth:`use_compiled`, so sampling never asks which.
    """

    #: index fields this strategy adds to each row (see :class:`~sb3_hir.buffers.episode_index.EpisodeIndex`); a
    #: strategy may extend them in :meth:`setup`, before the index is built.
    fields: tuple[str, ...] = ()
    #: whether it finds reaches through an index of exact integer goal values (else by comparing values).
    exact_values = False

    def __init__(self) -> None:
        #: estimate of the admissible share of relabeled draws, kept across calls (rounds oversample by it).
        self.admitted = 1.0
        #: kernels this strategy has called (their first call may compile; see ``compiled.call``).
        self.warm: set[str] = set()
        self._boxed: tuple[np.random.Generator, Any] | None = None
        #: the arrays the draw kernels take, reshaped flat once (``_kernel_arrays``), with what they were made from.
        self._flat: tuple[Any, ...] | None = None
        #: whether a buffer has been built with this object (one buffer per strategy object: it keeps state).
        self.bound = False
        self.use_compiled(compiled.enabled())

    @property
    def name(self) -> str:
        """How errors name the strategy."""
        return type(self).__name__

    def bind(self, view: DrawView) -> None:
        """Called once by the buffer built with this strategy: refuse a second buffer, then :meth:`setup`."""
        if getattr(self, "bound", False):
            raise ValueError(f"draw: this {self.name} object already serves another buffer, and a strategy "
                             "keeps per-buffer state; pass its class or registered name, or a new object")
        self.setup(view)
        self.bound = True

    def setup(self, view: DrawView) -> None:
        """Check that the buffer fits this strategy and settle what depends on it (nothing by default)."""

    def use_compiled(self, on: bool) -> None:
        """Draw with the compiled kernels (identical draws, fewer array calls) or with the numpy code."""
        self.compiled = bool(on)
        self.draw: Callable[[DrawView, int, int], Relabeled | None] = self._draw_numpy

    def __getstate__(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if not callable(value)}
        state["warm"] = set()  # a new process compiles (or loads) the kernels again
        state["_boxed"] = None
        state.pop("_flat", None)  # views of this process's arrays
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state.get("cfg") is not None:
            state["cfg"] = None  # a kernel configuration of its day: made again at the first draw, with today's fields
        self.__dict__.update(state)
        self.use_compiled(compiled.enabled())  # where the buffer is loaded, not where it was saved

    def allocate(self, view: DrawView, steps_dtype: np.dtype) -> None:
        """Room for per-row data beyond the index fields (``steps_dtype``: the index's integers)."""

    def index_episode(self, view: DrawView, episode: EndedEpisode, meta: np.ndarray, field: dict[str, int]) -> None:
        """Fill this strategy's ``fields`` of an episode that just ended (``meta``: its rows, written back after)."""

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        """Draw an instruction for each candidate transition, with its reach steps (:class:`Instructions`).

        Every random choice must come from ``view.rng``, so a seeded buffer serves the same batches.
        """
        raise NotImplementedError(f"{self.name} must implement instructions(view, rows)")

    def other_end(self, view: DrawView, rows: Candidates) -> np.ndarray:
        """Whether the recorded episode ended in a termination that the drawn goals did not cause."""
        assert view.index is not None, "the episode index is built with the buffer, before any draw"
        return rows.meta[:, view.index.field["end"]] > 0

    # -- the numpy draw -----------------------------------------------------------------------------------------
    def _draw_numpy(self, view: DrawView, count: int, upper: int) -> Relabeled | None:
        """``count`` admissible pairs from rows ``[0, upper)``, by rounds of rejection (module docstring)."""
        parts: list[Relabeled] = []
        missing = count
        admitted = self.admitted
        for _ in range(view.max_redraws + 1):
            if missing == 0:
                break
            draws = oversample(missing, admitted)
            rows = view.rng.integers(0, upper, size=draws)
            envs = view.rng.integers(0, view.n_envs, size=draws)
            part = self._relabel_rows(view, rows, envs)
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

    def _relabel_rows(self, view: DrawView, rows: np.ndarray, envs: np.ndarray) -> Relabeled | None:
        """Draw an instruction for each (row, env) of a finished, intact episode; keep the admissible ones."""
        rows_ = self._candidates(view, rows, envs)
        if rows_ is None:
            return None
        goals, reach, keep = self._checked(view, rows_, self.instructions(view, rows_))
        inside = admissible(view, rows_.t, goals, reach)
        if keep is not None:
            inside &= keep
        other_end = self.other_end(view, rows_)
        part = Relabeled(rows_.flat, rows_.start, rows_.env, rows_.t, rows_.length, goals, reach, other_end)
        if not inside.all():
            part = Relabeled(*(a[inside] for a in part))
        return part

    def _checked(self, view: DrawView, rows: Candidates, drawn: Any) -> Instructions:
        """``drawn`` as serving takes it, or a :class:`DrawContractError` naming the strategy and what is wrong.

        Shapes, dtypes and the reach steps' form (in ``1..length`` or -1, in order, -1 from the first miss on): a
        few array operations per round, so every strategy, built-in or not, is held to the same contract.
        """
        try:
            goals, reach, keep = drawn
        except (TypeError, ValueError):
            raise DrawContractError(f"{self.name}.instructions must return Instructions(goals, reach, keep); got "
                                    f"{type(drawn).__name__}") from None
        batch, k, dtype = len(rows.t), view.num_goals, view.goals_dtype
        shape = (batch, k, *view.goal_shape)
        if not isinstance(goals, np.ndarray) or goals.shape != shape:
            raise DrawContractError(f"{self.name}.instructions: goals must be an array of shape (B, k, *goal_shape) = "
                                    f"{shape}; got {getattr(goals, 'shape', type(goals).__name__)}")
        if goals.dtype != dtype:
            if not np.can_cast(goals.dtype, dtype, "same_kind"):
                raise DrawContractError(f"{self.name}.instructions: goals must be of the buffer's goals dtype {dtype}; "
                                        f"got {goals.dtype}")
            goals = goals.astype(dtype)
        if goals.dtype.kind in "fc" and not np.isfinite(goals).all():  # NaN != any goal: served as a success
            b = int(np.argwhere(~np.isfinite(goals.reshape(batch, -1)).all(axis=1))[0, 0])
            raise DrawContractError(f"{self.name}.instructions: goals must be finite; got {goals[b].tolist()} for "
                                    f"candidate row {b} (buffer row {int(rows.flat[b]) // view.n_envs}, step "
                                    f"{int(rows.t[b])} of its episode)")
        if not isinstance(reach, np.ndarray) or reach.shape != (batch, k) or reach.dtype.kind not in "iu":
            raise DrawContractError(f"{self.name}.instructions: reach must be an integer array of shape (B, k) = "
                                    f"{(batch, k)}; got {getattr(reach, 'dtype', type(reach).__name__)} "
                                    f"{getattr(reach, 'shape', '')}")
        if keep is not None and (not isinstance(keep, np.ndarray) or keep.shape != (batch,) or keep.dtype != bool):
            raise DrawContractError(f"{self.name}.instructions: keep must be None or a bool array of shape (B,) = "
                                    f"({batch},); got {getattr(keep, 'dtype', type(keep).__name__)} "
                                    f"{getattr(keep, 'shape', '')}")
        bad = (reach < -1) | (reach == 0) | (reach > rows.length[:, None])
        spec = view.goal_spec
        if k > 1 and spec.ordered:  # in order: a reached goal after a reached one, not before it
            bad[:, 1:] |= (reach[:, 1:] > 0) & ((reach[:, :-1] <= 0) | (reach[:, 1:] < reach[:, :-1]))
        elif k > 1:  # padding and groups: a padding slot is never reached
            bad |= spec.is_padding(goals) & (reach != -1)
        if bad.any():
            b = int(np.argwhere(bad)[0, 0])
            raise DrawContractError(
                f"{self.name}.instructions: reach[b, j] must be the step (1..length) at which goal j is reached, after "
                f"goal j-1's, or -1 from the first goal never reached on; got reach {reach[b].tolist()} for an "
                f"episode of length {int(rows.length[b])}"
            )
        return Instructions(goals, reach, keep)

    @staticmethod
    def _candidates(view: DrawView, rows: np.ndarray, envs: np.ndarray) -> Candidates | None:
        """The rows of finished episodes whose first row is not overwritten, with their episodes' own goals."""
        assert view.index is not None, "the episode index is built with the buffer, before any draw"
        size, n_envs, field, k = view.buffer_size, view.n_envs, view.index.field, view.num_goals
        meta_flat = view.index.meta.reshape(size * n_envs, -1)
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
        own_goals = view.own_goals(start, envs)
        return Candidates(flat, start, envs, t, length, meta, slot_meta, own_steps, own_goals)

    # -- the compiled draw ---------------------------------------------------------------------------------------
    def _draw_compiled(self, view: DrawView, count: int, upper: int) -> Relabeled | None:
        """The numpy draw in one kernel call, where the strategy has one (identical draws)."""
        raise NotImplementedError

    def _config(self, view: DrawView, **settings: int) -> np.ndarray:
        """The named configuration of :func:`draw_rounds` with the strategy's ``settings``: sizes, rounds, the index
        columns (``f_<field>``)."""
        assert view.index is not None, "the episode index is built with the buffer, before any draw"
        columns = {f"f_{name}": column for name, column in view.index.field.items()}
        return compiled.config(size=view.buffer_size, n_envs=view.n_envs, rounds=view.max_redraws,
                               k=view.num_goals, **columns, **goal_bounds(view.goals_space), **settings)

    def _generator(self, view: DrawView) -> Any:
        """The buffer's generator as the entry kernels take it (``compiled.box_generator``), boxed once."""
        if self._boxed is None or self._boxed[0] is not view.rng:
            self._boxed = (view.rng, compiled.call(self.warm, compiled.box_generator, view.rng))
        return self._boxed[1]

    def _kernel_arrays(self, view: DrawView) -> tuple[tuple[np.ndarray, ...], tuple[int, ...]]:
        """``(meta, achieved, own_goals, nothing_row)`` as the draw kernels take them, flat over rows and sub-envs,
        and the shape of one drawn instruction ``(k, *goal_shape)``: made once, while the buffer keeps the same
        arrays (a loaded or reset buffer has new ones)."""
        assert view.index is not None, "the episode index is built with the buffer, before any draw"
        meta, achieved, instructions = view.index.meta, view.achieved, view.instructions
        nothing = view.goal_spec.nothing_value
        cached = self.__dict__.get("_flat")
        if (cached is not None and cached[0] is meta and cached[1] is achieved and cached[2] is instructions
                and cached[3] is nothing):
            return cached[4]
        flat_rows = view.buffer_size * view.n_envs
        own_goals = instructions.reshape(flat_rows, -1)
        flat_achieved = achieved.reshape(flat_rows, -1)
        # The nothing value as one achieved row in the goals' dtype (the kernel's output dtype), or a 0-length row.
        nothing_row = (np.empty(0, own_goals.dtype) if nothing is None
                       else np.full(flat_achieved.shape[1], nothing, own_goals.dtype))
        arrays = ((meta.reshape(flat_rows, -1), flat_achieved, own_goals, nothing_row),
                  (view.num_goals, *view.goal_shape))
        self._flat = (meta, achieved, instructions, nothing, arrays)
        return arrays

    def _run_kernel(self, view: DrawView, kernel: Callable[..., Any], count: int, upper: int,
                    cfg: np.ndarray, *extra: Any) -> Relabeled | None:
        """Call a strategy's :func:`draw_rounds` kernel on the buffer's arrays, flat over rows and sub-envs."""
        arrays, instruction_shape = self._kernel_arrays(view)
        rows, goals, reach, other_end, self.admitted, inside = compiled.call(
            self.warm, kernel, self._generator(view), *arrays, float(self.admitted), upper, count, cfg, *extra,
        )
        if not rows.shape[1]:
            return None
        flat, start, envs, t, length = rows
        made = GoalsInside if inside else Relabeled
        return made(flat, start, envs, t, length, goals.reshape(-1, *instruction_shape), reach, other_end)


def goal_bounds(space: Any) -> dict[str, int]:
    """The goals' bounds as :func:`draw_rounds` checks what it drew (``goals_bounded``, ``goals_lo``, ``goals_hi``):
    integer goals in a Box with one low and one high for every component; otherwise none (``goals_bounded`` 0), and
    the buffer's own check decides (``draw_checks``)."""
    low, high = getattr(space, "low", None), getattr(space, "high", None)
    if (low is None or high is None or not np.issubdtype(space.dtype, np.integer) or low.min() != low.max()
            or high.min() != high.max()):
        return {"goals_bounded": 0, "goals_lo": 0, "goals_hi": 0}
    return {"goals_bounded": 1, "goals_lo": int(low.min()), "goals_hi": int(high.max())}


@compiled.kernel
def _finished_rows(rng, meta, missing, admitted, upper, cfg):  # type: ignore[no-untyped-def]
    """One round's rows and sub-envs, as ``_draw_numpy`` draws them (rows first, then sub-envs), and those of finished
    episodes with their first row not overwritten: ``(draws, envs, flat, t, length, keep, start, batch)``,
    ``keep[:batch]`` indexing them.

    Each pass makes one level of independent loads over the whole batch (the row, then the episode's first row),
    so the memory system overlaps them: the rows are scattered over the view. The kept rows are listed without a
    branch, as in ``_admit_round``.
    """
    c = cfg[0]
    size, n_envs, f_t, f_len, f_id = c.size, c.n_envs, c.f_t, c.f_len, c.f_id
    draws = oversample(missing, admitted)
    rows = np.empty(draws, np.int64)
    envs = np.empty(draws, np.int64)
    for i in range(draws):
        rows[i] = compiled.below(rng, upper)
    for i in range(draws):
        envs[i] = compiled.below(rng, n_envs)
    flat = np.empty(draws, np.int64)
    t = np.empty(draws, np.int64)
    length = np.empty(draws, np.int64)
    row_id = np.empty(draws, np.int64)
    for i in range(draws):
        at = rows[i] * n_envs + envs[i]
        flat[i] = at
        t[i] = meta[at, f_t]
        length[i] = meta[at, f_len]
        row_id[i] = meta[at, f_id]
    keep = np.empty(draws, np.int64)
    start = np.empty(draws, np.int64)
    batch = 0
    for i in range(draws):  # without a branch: every row is written, and the count moves on the kept ones
        first_row = rows[i] - t[i]
        first_row += size * (first_row < 0)
        keep[batch] = i
        start[batch] = first_row
        batch += (length[i] > 0) & (meta[first_row * n_envs + envs[i], f_id] == row_id[i])
    return draws, envs, flat, t, length, keep, start, batch


@compiled.kernel
def _takes_nothing(achieved, nothing, steps, b, start, env, k, dim, size, n_envs):  # type: ignore[no-untyped-def]
    """Whether draw ``b`` takes as a goal a step whose achieved value is the nothing row."""
    for j in range(k):
        if steps[b, j] <= 0:
            continue
        row = start + steps[b, j] - 1
        if row >= size:
            row -= size
        at = row * n_envs + env
        same = True
        for d in range(dim):
            if achieved[at, d] != nothing[d]:
                same = False
                break
        if same:
            return True
    return False


@compiled.kernel
def draw_rounds(rng, meta, achieved, own_goals, nothing, admitted, upper, missing, cfg, instruct, params):  # type: ignore[no-untyped-def]
    """``DrawStrategy._draw_numpy`` in one call: every round, with ``instruct`` (the strategy's round kernel).

    ``meta`` is the ``(rows * envs, F)`` index, ``achieved`` / ``own_goals`` the ``(rows * envs, D)`` achieved values
    after each transition and ``(rows * envs, k * D)`` stored instructions, ``nothing`` the achieved row of a step that
    achieved nothing, in the goals' dtype (0-length: none declared; a draw taking such a step as a goal is not
    admissible). ``instruct(rng, meta, envs, flat, t, length, keep, start, batch, cfg, params)`` returns the round's
    ``(steps (B, k), reach (B, k), ok (B,), other_end (B,))``: goal j is the value achieved at step ``steps[b, j]``,
    or the episode's own goal j where that is -1. ``cfg[0]`` names ``size``, ``n_envs``, ``rounds``, ``k`` and the
    index columns ``f_id``, ``f_t``, ``f_len``, and the goals' bounds (:func:`goal_bounds`;
    :func:`~sb3_hir.buffers.compiled.config`). Returns ``(rows (5, B): flat, start, env, t, length; goals (B, k * D),
    reach (B, k), other_end, admitted, inside)`` of the admitted draws, ``inside`` whether every goal lies inside the
    bounds (:class:`GoalsInside`).
    """
    c = cfg[0]
    total = missing
    o_rows = np.empty((5, total), np.int64)  # flat, start, env, t, length
    o_goals = np.empty((total, c.k * achieved.shape[1]), nothing.dtype)
    o_reach = np.empty((total, c.k), np.int64)
    o_end = np.empty(total, np.bool_)
    filled = 0
    for _ in range(c.rounds + 1):
        if missing == 0:
            break
        draws, envs, flat, t, length, keep, start, batch = _finished_rows(rng, meta, missing, admitted, upper, cfg)
        steps, reach, ok, other_end = instruct(rng, meta, envs, flat, t, length, keep, start, batch, cfg, params)
        admissible, got = _admit_round(achieved, own_goals, nothing, envs, flat, t, length, keep, start, batch, steps,
                                       reach, ok, other_end, cfg, filled, o_rows, o_goals, o_reach, o_end)
        # The admitted share counts every admissible draw of the round, also those dropped as extra.
        admitted = max(admissible / draws, 0.01)
        filled += got
        missing -= got
    # Four arrays, not eight: numba boxes each returned array (benchmarks/bench_kernel_costs.py).
    return (o_rows[:, :filled], o_goals[:filled], o_reach[:filled], o_end[:filled], admitted,
            _goals_inside(o_goals, filled, cfg))


@compiled.kernel
def _goals_inside(goals: np.ndarray, filled: int, cfg: np.ndarray) -> bool:
    """Whether the first ``filled`` rows of ``goals`` lie inside the goals' bounds (``goal_bounds``; False where there
    are none): the buffer's bounds check in the pass that has just written them, where it was a second kernel call
    over them (``draw_checks.goals_within``)."""
    c = cfg[0]
    if not c.goals_bounded:
        return False
    low, high = c.goals_lo, c.goals_hi
    for i in range(filled):
        for d in range(goals.shape[1]):
            if goals[i, d] < low or goals[i, d] > high:
                return False
    return True


@compiled.kernel
def _admit_round(achieved: np.ndarray, own_goals: np.ndarray, nothing: np.ndarray, envs: np.ndarray, flat: np.ndarray,
                 t: np.ndarray, length: np.ndarray, keep: np.ndarray, start: np.ndarray, batch: int, steps: np.ndarray,
                 reach: np.ndarray, ok: np.ndarray, other_end: np.ndarray, cfg: np.ndarray, filled: int,
                 o_rows: np.ndarray, o_goals: np.ndarray, o_reach: np.ndarray, o_end: np.ndarray) -> tuple[int, int]:
    """One round of :func:`draw_rounds`: its admissible draws, in order, written to the outputs from row ``filled``
    on until they are full. Returns ``(admissible, written)``: extra admissible draws count as admissible but are
    dropped, which keeps the kept ones uniform.

    Admission first, then the copy: the admitted draws are listed without a branch (about a third fail at random, a
    mispredicted branch each: every draw is listed at the next free place and the count moves on the admissible
    ones, ``benchmarks/results/bench_compare_branchless.txt``), and only the listed ones are copied, so a draw that
    is not admitted or not needed costs no scattered load of its goals
    (``benchmarks/results/bench_compare_copy_admitted.txt``)."""
    c = cfg[0]
    k, dim, room = c.k, achieved.shape[1], len(o_end) - filled
    has_nothing = nothing.shape[0] > 0
    listed = np.empty(batch + 1, np.int64)  # one place more than the draws fill: a draw not listed lands there
    admissible = 0
    got = 0
    for b in range(batch):
        i = keep[b]
        last = reach[b, k - 1]
        # Not admissible where the relabeled episode would have ended before t.
        admit = np.int64(ok[b]) & np.int64(not ((last > 0) & (last <= t[i])))
        if has_nothing and admit and _takes_nothing(achieved, nothing, steps, b, start[b], envs[i], k, dim, c.size,
                                                    c.n_envs):
            admit = 0  # not admissible: a goal would be a step that achieved nothing
        admissible += admit
        listed[got] = b
        got += admit & np.int64(got < room)  # more than needed: dropped, which keeps the kept ones uniform
    _copy_admitted(achieved, own_goals, envs, flat, t, length, keep, start, steps, reach, other_end, cfg, filled,
                   listed, got, o_rows, o_goals, o_reach, o_end)
    return admissible, got


@compiled.kernel
def _copy_admitted(achieved: np.ndarray, own_goals: np.ndarray, envs: np.ndarray, flat: np.ndarray, t: np.ndarray,
                   length: np.ndarray, keep: np.ndarray, start: np.ndarray, steps: np.ndarray, reach: np.ndarray,
                   other_end: np.ndarray, cfg: np.ndarray, filled: int, listed: np.ndarray, got: int,
                   o_rows: np.ndarray, o_goals: np.ndarray, o_reach: np.ndarray, o_end: np.ndarray) -> None:
    """Write the ``got`` draws ``listed`` by :func:`_admit_round` to the outputs from row ``filled`` on, each with its
    goals: the achieved values of its goal steps, or its episode's own goals."""
    c = cfg[0]
    k, dim, size, n_envs = c.k, achieved.shape[1], c.size, c.n_envs
    for w in range(got):
        b = listed[w]
        i = keep[b]
        out = filled + w
        o_rows[0, out], o_rows[1, out], o_rows[2, out], o_rows[3, out] = flat[i], start[b], envs[i], t[i]
        o_rows[4, out] = length[i]
        o_end[out] = other_end[b]
        for j in range(k):
            o_reach[out, j] = reach[b, j]
            # A branch, not a select: reading both values costs a scattered load more than a misprediction.
            if steps[b, j] > 0:
                row = start[b] + steps[b, j] - 1
                if row >= size:
                    row -= size
                at = row * n_envs + envs[i]
                for d in range(dim):
                    o_goals[out, j * dim + d] = achieved[at, d]
            else:
                at = start[b] * n_envs + envs[i]
                for d in range(dim):
                    o_goals[out, j * dim + d] = own_goals[at, j * dim + d]
