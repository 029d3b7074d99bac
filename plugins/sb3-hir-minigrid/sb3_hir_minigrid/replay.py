"""Replay of a go-to instruction over a sequence of achieved events, with BabyAI's own semantics (pure numpy).

This is what relabeling needs from the env: given the steps of an instruction (any instruction, also one the
episode was not played under) and the events the agent achieved, which goals are done after each step and when
the mission succeeds. BabyAI's ``verify`` (``minigrid.envs.babyai.core.verifier``), which this reproduces:

* ``GoToInstr`` holds at a step when the agent faces a matching object; it keeps no state, so it holds again
  whenever that is true, and one event can satisfy several goals that match it.
* ``AndInstr`` latches each part the first step it holds; both may latch at the same step.
* ``BeforeInstr(a, b)`` evaluates b only once a has succeeded, and from the very step a succeeds (its ``verify``
  calls itself again on the same action), so a and b may complete at one step; b's goals met before that step do
  not count (b is not evaluated then). ``AfterInstr(a, b)`` is the same with b first.

Hence: the active step's goals that match the event are latched; when the active step is complete, the next
step is active *at the same event*, and so on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sb3_hir_minigrid.codes import MASK, NOTHING, PAD, WILDCARD

__all__ = ["GoToReplay", "advance", "goal_matches", "replay_goto", "step_members"]


def goal_matches(events: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """Whether each event ``(..., 2)`` satisfies each goal ``(..., 2)`` (broadcast): every goal column is the
    event's or :data:`WILDCARD`; :data:`NOTHING` events and :data:`PAD` / :data:`MASK` goals never match."""
    events, goals = np.asarray(events), np.asarray(goals)
    columns = (goals == events) | (goals == WILDCARD)
    real_goal = ~np.isin(goals, (PAD, MASK)).any(axis=-1)
    real_event = events[..., 0] != NOTHING
    return columns.all(axis=-1) & real_goal & real_event


@dataclass(frozen=True)
class GoToReplay:
    """Outcome of :func:`replay_goto` over ``T`` events and ``k_max`` goal slots.

    :ivar reached: ``(T + 1, k_max)`` whether each goal is done after each step (row 0: after reset, none; all
        done from the success step on).
    :ivar done: ``(T + 1,)`` goals done after each step.
    :ivar success_step: the 1-based step at which the last goal is done, None if never within the events.
    """

    reached: np.ndarray
    done: np.ndarray
    success_step: int | None


def step_members(step_ids: np.ndarray) -> list[np.ndarray]:
    """The goal slots of each step, in step order (``step_ids`` as :func:`replay_goto` takes them)."""
    step_ids = np.asarray(step_ids)
    order = step_ids[step_ids != PAD]
    if len(order) == 0:
        raise ValueError("the instruction has no goals (all step_ids are PAD)")
    if order[0] != 0 or np.any(np.diff(order) < 0) or np.any(np.diff(order) > 1):
        raise ValueError(f"step_ids of real goals must count up from 0 without gaps, got {step_ids.tolist()}")
    return [np.flatnonzero(step_ids == s) for s in range(int(order[-1]) + 1)]


def advance(reached: np.ndarray, active: int, matches: np.ndarray, members: list[np.ndarray]) -> int:
    """One step of BabyAI's ``verify``: latch the active step's goals that ``matches`` (one event against every
    slot) satisfies, in place in ``reached``; while the active step is complete, move on and judge the next
    step on the same event (Before / After re-enter ``verify`` on the same action). Returns the new active step
    (``len(members)`` once the mission succeeded). The env wrapper and :func:`replay_goto` share it."""
    while active < len(members):
        slots = members[active]
        reached[slots] |= matches[slots]
        if not reached[slots].all():
            break
        active += 1
    return active


def replay_goto(goals: np.ndarray, step_ids: np.ndarray, events: np.ndarray) -> GoToReplay:
    """Replay an instruction over achieved events, following BabyAI's ``verify`` step by step.

    :param goals: ``(k_max, 2)`` goal rows (:func:`sb3_hir_minigrid.steps.encode_steps`); PAD rows are unused.
    :param step_ids: ``(k_max,)`` step index of each goal (0, 1, ... non-decreasing over real goals), PAD for
        padding.
    :param events: ``(T, 2)`` the achieved event after each step (:data:`NOTHING` rows for no object).
    """
    goals = np.asarray(goals)
    step_ids = np.asarray(step_ids)
    events = np.asarray(events).reshape(-1, 2)
    members = step_members(step_ids)
    n_steps = len(members)
    matches = goal_matches(events[:, None, :], goals[None, :, :])  # (T, k_max)
    reached = np.zeros((len(events) + 1, len(goals)), dtype=bool)
    active, success_step = 0, None
    for t in range(len(events)):
        row = reached[t + 1]
        row[:] = reached[t]
        active = advance(row, active, matches[t], members)
        if active == n_steps:
            success_step = t + 1
            reached[t + 2 :] = row  # the mission stays done (BabyAI's episode ends here)
            break
    return GoToReplay(reached=reached, done=reached.sum(axis=-1), success_step=success_step)
