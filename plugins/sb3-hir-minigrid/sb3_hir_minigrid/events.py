"""The achieved event of a step: which goal-able object the agent faces, as BabyAI's verifier sees it.

BabyAI's ``GoToInstr.verify`` does not look at the front cell's object: it compares the agent's front position
with ``ObjDesc.obj_poss``, the positions of the matching objects recorded at reset and re-read from the grid
only after a ``drop`` action (``RoomGridLevel.step`` calls ``update_objs_poss`` then). So after the agent picks
up (or toggles away) a matching object, facing the now empty cell still counts until the next ``drop`` action;
after that ``drop``, a carried object has no position at all. :class:`GoalObjectTracker` keeps exactly those
positions for every goal-able object, so the event agrees with ``verify`` where the front cell's content would
not. :func:`front_cell_event` is the naive reading, kept to measure how often the two differ.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sb3_hir_minigrid.codes import COLOR_TO_CODE, GOAL_DTYPE, GOAL_TYPES, NOTHING_ROW, TYPE_TO_CODE

__all__ = ["GoalObjectTracker", "front_cell_event", "object_event"]


def object_event(obj: Any) -> np.ndarray:
    """``(color code, type code)`` of a goal-able minigrid object, the NOTHING row for None or any other type."""
    if obj is None or obj.type not in GOAL_TYPES:
        return NOTHING_ROW.copy()
    return np.array([COLOR_TO_CODE[obj.color], TYPE_TO_CODE[obj.type]], dtype=GOAL_DTYPE)


def front_cell_event(env: Any) -> np.ndarray:
    """The object in the agent's front cell now (not what BabyAI's verifier judges by: see the module doc)."""
    unwrapped = env.unwrapped
    return object_event(unwrapped.grid.get(*unwrapped.front_pos))


class GoalObjectTracker:
    """Positions of the goal-able objects (ball, box, key, door) as BabyAI's verifier tracks them.

    Call :meth:`reset` right after the env's reset, :meth:`after_step` right after each env step, then read
    :meth:`event`.
    """

    def __init__(self) -> None:
        self._objects: list[Any] = []
        self._positions: list[tuple[int, int] | None] = []

    def reset(self, env: Any) -> None:
        """Record every goal-able object in the grid with its position (BabyAI's ``find_matching_objs`` at reset)."""
        grid = env.unwrapped.grid
        self._objects, self._positions = [], []
        for index, cell in enumerate(grid.grid):
            if cell is not None and cell.type in GOAL_TYPES:
                self._objects.append(cell)
                self._positions.append((index % grid.width, index // grid.width))

    def after_step(self, env: Any, action: Any) -> None:
        """After a ``drop`` action (successful or not), re-read the tracked objects' positions from the grid; an
        object not in the grid (carried, or a box toggled away) then has none (``update_objs_poss``)."""
        unwrapped = env.unwrapped
        if int(action) != int(unwrapped.actions.drop):
            return
        grid = unwrapped.grid
        where = {id(cell): index for index, cell in enumerate(grid.grid) if cell is not None}
        self._positions = [
            None if id(obj) not in where else (where[id(obj)] % grid.width, where[id(obj)] // grid.width)
            for obj in self._objects
        ]

    def event(self, env: Any) -> np.ndarray:
        """The tracked object at the agent's front position, as ``(color code, type code)``, else NOTHING."""
        front = tuple(int(v) for v in env.unwrapped.front_pos)
        found = [obj for obj, pos in zip(self._objects, self._positions, strict=True) if pos == front]
        if len(found) > 1:  # cannot happen in minigrid: only a drop moves an object, and a drop re-reads positions
            raise RuntimeError(f"{len(found)} tracked objects at the front position {front}: {found}")
        return object_event(found[0] if found else None)
