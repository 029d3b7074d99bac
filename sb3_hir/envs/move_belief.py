"""MazeRunner's own per-action features: for each action, the moves it can still be, from the agent's experience.

The generic :class:`~sb3_hir.action_features.EffectTable` remembers what an action did. MazeRunner's author knows
more: the five actions are a permutation of west, north, east, south and stay, and the observation's wall sensors
say which moves a wall stops. So a try that moved the agent names the action's move (and rules it out for every
other action), and a try that did not move it rules out every move that was open from that cell. What is left is
a belief over the five moves per action; when one action's belief is a single move, or a move fits one action
only, that settles it for the others too. Only the agent's own ``obs`` (its cell and wall sensors) and its actions
enter, never the goals, so relabeled observations stay faithful.

:meth:`MazeRunnerEnv.action_features <sb3_hir.envs.MazeRunnerEnv.action_features>` returns a fresh one; wrap with
``ActionFeaturesWrapper(env, "env")``. On 9x9 with controls permuted every episode, it took the per-action Q head
from 0.61 success (each action's last nonzero move) to 0.98 (``benchmarks/results/controls_ablation.txt``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["MoveBelief"]

#: (d_row, d_col) of the canonical moves, in the order of the belief's columns (MazeRunner's ACTION_DIRECTIONS).
_MOVES = ((0, -1), (-1, 0), (0, 1), (1, 0), (0, 0))
_STAY = 4


class MoveBelief:
    """Row ``a`` = ``[can a be west, north, east, south, stay (5 flags) | taken]`` for a MazeRunner of side ``n``.

    :param maze_dim: the maze side n (positions in ``obs`` are row / n and col / n).
    :param n_actions: the number of actions (MazeRunner's 5).
    """

    def __init__(self, maze_dim: int, n_actions: int = 5) -> None:
        if n_actions != len(_MOVES):
            raise ValueError(f"n_actions must be {len(_MOVES)} (MazeRunner's moves); got {n_actions!r}")
        self.maze_dim = int(maze_dim)
        self.space = spaces.Box(0.0, 1.0, shape=(n_actions, len(_MOVES) + 1), dtype=np.float32)
        self._possible = np.ones((n_actions, len(_MOVES)), dtype=bool)
        self._taken = np.zeros(n_actions, dtype=bool)
        self._cell = (0, 0)
        self._open = np.zeros(len(_MOVES), dtype=bool)

    def _observe(self, obs: dict[str, Any]) -> None:
        o = np.asarray(obs["obs"], dtype=np.float64)
        self._cell = (round(o[0] * self.maze_dim), round(o[1] * self.maze_dim))
        self._open = np.append(o[2:6] > 0.5 / self.maze_dim, False)  # sensors count free cells; stay is never open

    def _table(self) -> np.ndarray:
        return np.concatenate([self._possible, self._taken[:, None]], axis=1).astype(np.float32)

    def reset(self, obs: dict[str, Any]) -> np.ndarray:
        self._possible[:] = True
        self._taken[:] = False
        self._observe(obs)
        return self._table()

    def update(self, action: int, obs: dict[str, Any]) -> np.ndarray:
        before, was_open = self._cell, self._open
        self._observe(obs)
        moved = (self._cell[0] - before[0], self._cell[1] - before[1])
        self._taken[action] = True
        if moved != (0, 0):
            self._possible[action] = [m == moved for m in _MOVES]
        else:
            self._possible[action] &= ~was_open  # it was stay, or a move a wall stopped
        self._propagate()
        return self._table()

    def _propagate(self) -> None:
        """The actions are a permutation of the moves: a settled action rules its move out for the others, and a
        move that only one action can still be is that action's."""
        possible = self._possible
        while True:
            before = possible.copy()
            settled = possible.sum(axis=1) == 1
            for a in np.flatnonzero(settled):
                possible[np.arange(len(possible)) != a] &= ~possible[a]
            holders = possible.sum(axis=0)
            for m in np.flatnonzero(holders == 1):
                a = int(np.flatnonzero(possible[:, m])[0])
                possible[a] = False
                possible[a, m] = True
            if np.array_equal(before, possible) or not possible.any(axis=1).all():
                return
