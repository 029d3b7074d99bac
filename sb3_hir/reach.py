"""Where each goal of an instruction is reached, for instructions with padding and unordered groups.

Why one function: the episode relabeler, the window draw and the checks must agree on these semantics, and the
ordered case (every slot its own group, no padding) keeps its own faster loops where it is served. The rule, as
BabyAI's verifier has it for ``AndInstr`` inside ``BeforeInstr``: the goals of the active group latch, each at the
first step from the group's start that reaches it; the next group starts at the step the last goal of this one is
reached (checked from that same step with ``same_step_goals``, else from the step after); padding slots are never
reached. A group never completed leaves the later groups unreached.
"""

from __future__ import annotations

import numpy as np

__all__ = ["instruction_end", "reach_in_groups", "slot_groups"]


def slot_groups(groups: np.ndarray | None, real: np.ndarray) -> np.ndarray:
    """``(B, k)`` int64 group of each slot: ``groups`` where given, else each slot its own group (slot order); padding
    slots (``~real``) get -1."""
    if groups is None:
        groups = np.broadcast_to(np.arange(real.shape[-1]), real.shape)
    return np.where(real, np.asarray(groups, dtype=np.int64), -1)


def reach_in_groups(hits: np.ndarray, groups: np.ndarray, same_step: bool) -> np.ndarray:
    """``(B, k)`` reach steps (``1..H``, -1 never) of each slot.

    :param hits: ``(B, H, k)`` bool: the value achieved at step ``s + 1`` reaches goal ``j`` (False past an
        episode's end and on padding slots).
    :param groups: ``(B, k)`` the slot groups (:func:`slot_groups`; -1 for padding).
    :param same_step: a group starts at the step that completed the previous one (else at the step after).
    """
    batch, horizon, k = hits.shape
    reach = np.full((batch, k), -1, dtype=np.int64)
    if not batch or not horizon:
        return reach
    step = np.arange(1, horizon + 1)
    start = np.zeros(batch, dtype=np.int64)  # step that completed the previous group (0: the reset)
    alive = np.ones(batch, dtype=bool)
    rows = np.arange(batch)[:, None]
    for g in range(int(groups.max(initial=-1)) + 1):
        members = (groups == g) & alive[:, None]  # (B, k)
        if not members.any():
            break
        allowed = (step[None] >= start[:, None]) if same_step else (step[None] > start[:, None])  # (B, H)
        candidate = hits & allowed[:, :, None] & members[:, None, :]
        first = candidate.argmax(axis=1)  # (B, k)
        found = candidate[rows, first, np.arange(k)[None]]
        reach = np.where(members & found, first + 1, reach)
        has = members.any(axis=1)
        complete = has & ~(members & ~found).any(axis=1)
        alive &= ~has | complete
        start = np.where(complete, np.where(members, reach, 0).max(axis=1), start)
    return reach


def instruction_end(reach: np.ndarray, real: np.ndarray) -> np.ndarray:
    """``(B,)`` the step at which each instruction is complete (its last real goal reached), -1 if never."""
    done = ((reach > 0) | ~real).all(axis=1) & real.any(axis=1)
    return np.where(done, np.where(real, reach, 0).max(axis=1), -1)
