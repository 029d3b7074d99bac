"""Event goals: goal steps drawn among the steps that achieved something.

With a goal spec's ``nothing_value`` (events: "picked up the red key"), most steps of an episode achieve nothing, and
no instruction can hold such a step's value (:meth:`~sb3_hir.goals.GoalSpec.is_nothing`). A draw over all steps that
then rejects those would leave few relabeled rows (3 % of served rows on BabyAI's GoToLocal), so the draw runs over
the episode's *event steps*, as :meth:`~sb3_hir.relabel.HindsightInstructionRelabeler.relabel_goals` does per
episode: the relabeler's ``draw_goal_steps`` sees ranks ``1..E`` of the ``E`` steps that achieved something (the
episode length becomes ``E``, a transition ``t`` the number of events at or before step ``t``, the own reach steps
their ranks), and the drawn ranks map back to steps. The draw is otherwise unchanged: ``"future"`` still draws its
first goal after the transition, and goals stay distinct and in order.

A transition after which nothing more happens admits no hindsight goal. Under ``"some"`` the coin may leave it with
its own instruction, but so it would a transition that admits one, so the relabeled rows would carry hindsight goals
less often than the strategy asks. Such a transition is therefore admitted only where a draw that takes at least one
goal (the *probe*, ``at_least_one``) is admissible: relabeled transitions are uniform over those that admit a
hindsight instruction, as with the first-reach index.

Three index fields per row, written when the episode ends (:func:`index_events`): ``ecount`` (``E``), ``ebefore``
(events among steps ``1..t`` for the row's transition ``t``) and ``estep`` (in row ``start + r - 1``: the step of
event ``r``). Both backends read them: :func:`event_ranks` / :func:`rank_steps` in numpy, :func:`event_goal_steps`
compiled, the same draws from the same generator.
"""

from __future__ import annotations

import numpy as np

from sb3_hir.buffers import compiled
from sb3_hir.buffers.compiled import draw_goal_steps

__all__ = ["EVENT_FIELDS", "event_goal_steps", "event_goal_steps_boxed", "event_ranks", "index_events", "rank_steps"]

#: the index fields of event goals (module docstring).
EVENT_FIELDS = ("ecount", "ebefore", "estep")


def index_events(nothing: np.ndarray, meta: np.ndarray, field: dict[str, int]) -> None:
    """Fill :data:`EVENT_FIELDS` of an ended episode's rows from ``nothing`` ``(T,)``: whether each step ``1..T``
    achieved nothing."""
    event = ~np.asarray(nothing, dtype=bool)
    steps = np.flatnonzero(event) + 1
    meta[:, field["ecount"]] = len(steps)
    meta[:, field["ebefore"]] = np.concatenate([[0], np.cumsum(event)[:-1]])
    meta[:, field["estep"]] = 0
    meta[: len(steps), field["estep"]] = steps


def event_ranks(meta_flat: np.ndarray, field: dict[str, int], own: np.ndarray, start: np.ndarray, env: np.ndarray,
                flat: np.ndarray, size: int, n_envs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``draw_goal_steps``'s arguments in event ranks: own reach steps ``(B, k)`` as ranks (padding's -2 and never's
    -1 kept), the event counts ``E`` and, for each transition (flat row ``flat``), the events at or before it."""
    at = ((start[:, None] + np.maximum(own, 1) - 1) % size) * n_envs + env[:, None]
    own_ranks = np.where(own > 0, meta_flat[at, field["ebefore"]].astype(np.int64) + 1, own)
    count = meta_flat[flat, field["ecount"]].astype(np.int64)
    before = meta_flat[flat, field["ebefore"]].astype(np.int64)
    return own_ranks, count, before


def rank_steps(meta_flat: np.ndarray, field: dict[str, int], ranks: np.ndarray, start: np.ndarray, env: np.ndarray,
               size: int, n_envs: int) -> np.ndarray:
    """Drawn ranks ``(B, k)`` back as steps (-1 stays -1: the episode's own goal)."""
    at = ((start[:, None] + np.maximum(ranks, 1) - 1) % size) * n_envs + env[:, None]
    return np.where(ranks > 0, meta_flat[at, field["estep"]].astype(np.int64), -1)


@compiled.kernel
def event_goal_steps(rng, meta, own, start, env, flat, mode, future, cfg):  # type: ignore[no-untyped-def]
    """:func:`event_ranks`, ``draw_goal_steps`` (``mode`` as :data:`~sb3_hir.buffers.compiled.DRAW_MODES`, 3: with
    at least one goal) and :func:`rank_steps` in one call (``cfg``: ``size``, ``n_envs`` and the columns
    ``f_ecount``, ``f_ebefore``, ``f_estep``): the numpy path's draws from the same generator."""
    c = cfg[0]
    batch, k = own.shape
    ranks = np.empty((batch, k), np.int64)
    count = np.empty(batch, np.int64)
    before = np.empty(batch, np.int64)
    for b in range(batch):
        count[b] = meta[flat[b], c.f_ecount]
        before[b] = meta[flat[b], c.f_ebefore]
        for j in range(k):
            step = own[b, j]
            if step > 0:
                at = start[b] + step - 1
                if at >= c.size:
                    at -= c.size
                ranks[b, j] = meta[at * c.n_envs + env[b], c.f_ebefore] + 1
            else:
                ranks[b, j] = step
    drawn = draw_goal_steps(rng, ranks, count, before, mode, future)
    steps = np.full((batch, k), -1, np.int64)
    for b in range(batch):
        for j in range(k):
            if drawn[b, j] > 0:
                at = start[b] + drawn[b, j] - 1
                if at >= c.size:
                    at -= c.size
                steps[b, j] = meta[at * c.n_envs + env[b], c.f_estep]
    return steps


@compiled.kernel
def event_goal_steps_boxed(box, meta, own, start, env, flat, mode, future, cfg):  # type: ignore[no-untyped-def]
    """:func:`event_goal_steps` with the generator boxed (``compiled.box_generator``), as the buffer calls it."""
    return event_goal_steps(box.rng, meta, own, start, env, flat, mode, future, cfg)
