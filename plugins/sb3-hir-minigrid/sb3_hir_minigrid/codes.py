"""Integer codes of BabyAI go-to goals and achieved events, as named constants.

A goal or an achieved event is a row ``(color, type)``. Colors and types use minigrid's own indices
(``minigrid.core.constants.COLOR_TO_IDX`` / ``OBJECT_TO_IDX``, the same numbers as the image channels), copied
here so that the codes are fixed without importing minigrid; a test holds them equal to minigrid's. The
special values are negative so that they can never be a real index, and distinct so that every row says what it
is: a reached goal (:data:`MASK`), a padding slot (:data:`PAD`), a partial description (:data:`WILDCARD` in one
column) or a step where the agent faces no goal-able object (:data:`NOTHING`).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "COLOR_TO_CODE",
    "GOAL_DTYPE",
    "GOAL_TYPES",
    "MASK",
    "NOTHING",
    "NOTHING_ROW",
    "PAD",
    "PAD_ROW",
    "TYPE_TO_CODE",
    "WILDCARD",
    "color_code",
    "type_code",
]

#: minigrid's ``COLOR_TO_IDX``.
COLOR_TO_CODE: dict[str, int] = {"red": 0, "green": 1, "blue": 2, "purple": 3, "yellow": 4, "grey": 5}
#: minigrid's ``OBJECT_TO_IDX`` restricted to the types BabyAI describes in language (``verifier.OBJ_TYPES``).
TYPE_TO_CODE: dict[str, int] = {"door": 4, "key": 5, "ball": 6, "box": 7}
#: Object types a go-to goal can name, hence the only ones an achieved event reports.
GOAL_TYPES: frozenset[str] = frozenset(TYPE_TO_CODE)

#: A reached goal's row, both columns (sb3-hir's default ``mask_value``).
MASK = -1
#: "Any": a goal column BabyAI leaves unspecified (``ObjDesc`` color or type None), e.g. "go to a ball".
WILDCARD = -2
#: The achieved row, both columns, of a step whose front cell holds no goal-able object.
NOTHING = -3
#: The row, both columns, of a goal slot beyond the instruction's length (instructions have 1 to k_max goals).
PAD = -4

GOAL_DTYPE = np.int32
NOTHING_ROW = np.array([NOTHING, NOTHING], dtype=GOAL_DTYPE)
PAD_ROW = np.array([PAD, PAD], dtype=GOAL_DTYPE)


def color_code(color: str | None) -> int:
    """The code of a color name, :data:`WILDCARD` for None ("any color")."""
    return WILDCARD if color is None else COLOR_TO_CODE[color]


def type_code(kind: str | None) -> int:
    """The code of a goal-able object type, :data:`WILDCARD` for None ("any object")."""
    return WILDCARD if kind is None else TYPE_TO_CODE[kind]
