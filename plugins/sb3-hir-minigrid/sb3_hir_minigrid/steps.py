"""BabyAI's instruction tree (``env.instrs``) as an ordered list of steps of go-to goals.

The tree is read, not the mission text: the text is generated from the tree, and the tree is what BabyAI's own
``verify`` judges success by. A *step* is a group of goals that may be reached in any order within the group
(``AndInstr``); steps are reached in order (``BeforeInstr``: a then b; ``AfterInstr`` "a after you b": b then a).
A goal is a partial description: BabyAI's ``ObjDesc`` with color None means any color (type None: any object).

Only what the replay in :mod:`sb3_hir_minigrid.replay` reproduces exactly is accepted; anything else is refused
with :class:`UnsupportedInstructionError`, naming why, so a mission is never silently judged by other rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sb3_hir_minigrid.codes import COLOR_TO_CODE, GOAL_DTYPE, GOAL_TYPES, PAD, PAD_ROW, color_code, type_code

__all__ = [
    "GoToGoal",
    "Steps",
    "UnsupportedInstructionError",
    "encode_steps",
    "instruction_steps",
    "num_goals",
]


class UnsupportedInstructionError(ValueError):
    """A BabyAI instruction that is not made of go-to goals in ordered, unordered groups (pick up, open, put next,
    a location such as "on your left", or a nesting no list of steps expresses)."""


@dataclass(frozen=True)
class GoToGoal:
    """"Go to" an object of this color and type; None in either field matches any value (BabyAI's ``ObjDesc``)."""

    color: str | None
    type: str | None

    def __post_init__(self) -> None:
        if self.color is not None and self.color not in COLOR_TO_CODE:
            raise ValueError(f"color must be one of {sorted(COLOR_TO_CODE)} or None, got {self.color!r}")
        if self.type is not None and self.type not in GOAL_TYPES:
            raise ValueError(f"type must be one of {sorted(GOAL_TYPES)} or None, got {self.type!r}")

    def code(self) -> tuple[int, int]:
        """``(color code, type code)`` with :data:`~sb3_hir_minigrid.codes.WILDCARD` for None."""
        return color_code(self.color), type_code(self.type)


#: Ordered steps; each step is a non-empty tuple of goals reachable in any order within it.
Steps = tuple[tuple[GoToGoal, ...], ...]


def instruction_steps(instr: Any) -> Steps:
    """The ordered steps of a BabyAI instruction tree (``env.unwrapped.instrs`` after reset).

    ``GoToInstr`` is one step of one goal; ``AndInstr`` of two single-step parts is one step holding both parts'
    goals; ``BeforeInstr(a, b)`` is a's steps then b's, ``AfterInstr(a, b)`` b's steps then a's.

    :raises UnsupportedInstructionError: for pick up / open / put next, an ``ObjDesc`` with ``loc`` set (its
        matching objects are fixed by the agent's start pose, not by color and type), or an ``AndInstr`` whose
        parts are sequences (a partial order, not a list of steps; BabyAI's grammar never builds one).
    """
    from minigrid.envs.babyai.core.verifier import AfterInstr, AndInstr, BeforeInstr, GoToInstr

    if isinstance(instr, GoToInstr):
        desc = instr.desc
        if desc.loc is not None:
            raise UnsupportedInstructionError(
                f"'go to' with location {desc.loc!r} ({desc!r}): the objects it names depend on the agent's start "
                "pose, which a (color, type) goal cannot express"
            )
        return ((GoToGoal(desc.color, desc.type),),)
    if isinstance(instr, AndInstr):
        a, b = instruction_steps(instr.instr_a), instruction_steps(instr.instr_b)
        if len(a) != 1 or len(b) != 1:
            raise UnsupportedInstructionError(
                f"'and' of sequences ({type(instr.instr_a).__name__}, {type(instr.instr_b).__name__}) is a partial "
                "order, not a list of steps"
            )
        return (a[0] + b[0],)
    if isinstance(instr, BeforeInstr):
        return instruction_steps(instr.instr_a) + instruction_steps(instr.instr_b)
    if isinstance(instr, AfterInstr):
        return instruction_steps(instr.instr_b) + instruction_steps(instr.instr_a)
    raise UnsupportedInstructionError(
        f"{type(instr).__name__} is not a go-to goal nor an and / before / after of go-to goals"
    )


def num_goals(steps: Steps) -> int:
    """Number of goals over all steps."""
    return sum(len(step) for step in steps)


def encode_steps(steps: Steps, k_max: int) -> tuple[np.ndarray, np.ndarray]:
    """``(goals, step_ids)``: goals ``(k_max, 2)`` in step order, then :data:`~sb3_hir_minigrid.codes.PAD` rows;
    step_ids ``(k_max,)`` the step index of each goal, ``PAD`` for padding slots.

    :raises UnsupportedInstructionError: for more than ``k_max`` goals (or an empty instruction).
    """
    count = num_goals(steps)
    if count == 0 or count > k_max:
        raise UnsupportedInstructionError(f"{count} goals do not fit an instruction of 1 to k_max={k_max} goals")
    goals = np.tile(PAD_ROW, (k_max, 1))
    step_ids = np.full(k_max, PAD, dtype=GOAL_DTYPE)
    slot = 0
    for index, step in enumerate(steps):
        for goal in step:
            goals[slot] = goal.code()
            step_ids[slot] = index
            slot += 1
    return goals, step_ids
