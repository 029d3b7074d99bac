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

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from sb3_hir._validate import check_int, is_int

__all__ = ["MoveBelief"]

#: (d_row, d_col) of the canonical moves, in the order of the belief's columns (MazeRunner's ACTION_DIRECTIONS).
_MOVES = ((0, -1), (-1, 0), (0, 1), (1, 0), (0, 0))
#: a move's bit in a belief mask (bit m: "can be move m"); an unknown displacement is no move.
_MOVE_BIT = {move: 1 << m for m, move in enumerate(_MOVES)}
_ALL = (1 << len(_MOVES)) - 1
#: the belief row of each mask, so a table is one gather.
_ROWS = np.array([[(mask >> m) & 1 for m in range(len(_MOVES))] for mask in range(_ALL + 1)], dtype=np.float32)
#: the maze sides a MazeRunner can have (odd, 5 to MAX_MAZE_DIM), to name the one an observation fits.
_SIDES = np.arange(5, 502, 2)


class MoveBelief:
    """Row ``a`` = ``[can a be west, north, east, south, stay (5 flags) | taken]`` for a MazeRunner of side ``n``.

    It runs on every env step, so the belief is five Python bit masks rather than a boolean array: the propagation
    is a few integer operations where numpy's per-call overhead on a 5x5 array cost ~40x the env's own step
    (``benchmarks/bench_action_features.py``).

    The first :meth:`reset` checks that its observation is a MazeRunner one of side ``maze_dim`` (an ``"obs"`` key
    whose position and sensors are whole cells of that maze), and :meth:`update` that a move is one cell: a wrong
    ``maze_dim`` reads every move as none and fills the table with wrong beliefs, silently.

    :param maze_dim: the maze side n (positions in ``obs`` are row / n and col / n): the env's ``maze_dim``.
    :param n_actions: the number of actions (MazeRunner's 5).
    """

    def __init__(self, maze_dim: int, n_actions: int = 5) -> None:
        if not is_int(n_actions) or n_actions != len(_MOVES):
            raise ValueError(f"n_actions must be {len(_MOVES)} (MazeRunner's moves); got {n_actions!r}")
        n = check_int(maze_dim, "maze_dim", 5, hint="the env's maze_dim")
        if n % 2 == 0:
            raise ValueError(f"maze_dim must be odd, as MazeRunner's are (the env's maze_dim); got {maze_dim!r}")
        self.maze_dim = n
        self.space = spaces.Box(0.0, 1.0, shape=(n_actions, len(_MOVES) + 1), dtype=np.float32)
        #: per action, the moves it can still be (bit m: move m).
        self._possible = [_ALL] * n_actions
        self._taken = np.zeros(n_actions, dtype=np.float32)
        self._cell = (0, 0)
        #: the moves open from the current cell, as a mask (stay is never open).
        self._open = 0
        #: whether the last propagation ended at its fixed point: then a step that changes nothing needs none.
        self._at_fixpoint = True
        self._last_table: np.ndarray | None = None
        #: the first reset checked its observation (and update may run).
        self._checked = False

    def _check(self, obs: Any) -> None:
        """Refuse an observation that is not MazeRunner's of side ``maze_dim``: a wrong side is silently wrong."""
        n = self.maze_dim
        if not isinstance(obs, Mapping) or "obs" not in obs:
            got = f"keys {list(obs)}" if isinstance(obs, Mapping) else f"a {type(obs).__name__}"
            raise ValueError(f"MoveBelief needs MazeRunner's observation, a dict with an 'obs' key (the agent's "
                             f"cell and wall sensors); got {got}")
        o = np.asarray(obs["obs"])
        if o.ndim != 1 or o.size < 6 or not (np.issubdtype(o.dtype, np.number) and np.isfinite(o[:6]).all()):
            raise ValueError(f"obs['obs'] must be MazeRunner's, row/n, col/n and four wall sensors/n (shape (7,)); "
                             f"got shape {o.shape}, dtype {o.dtype}")
        if not _fits(o[:6], np.array([n]))[0]:
            sides = _SIDES[_fits(o[:6], _SIDES)]
            fit = (f"it fits maze_dim={int(sides[0])}" if len(sides) else "no MazeRunner maze size fits it")
            raise ValueError(f"maze_dim={n} does not match the env's maze: obs['obs'][:6] * {n} = "
                             f"{np.round(o[:6].astype(np.float64) * n, 3).tolist()} are not cells of a {n}x{n} maze; "
                             f"{fit} (pass the env's maze_dim, e.g. MoveBelief(env.unwrapped.maze_dim))")

    def _observe(self, obs: dict[str, Any]) -> None:
        try:
            o = obs["obs"]
        except (KeyError, TypeError, IndexError):
            raise ValueError(f"MoveBelief needs MazeRunner's observation, a dict with an 'obs' key; got "
                             f"{list(obs) if isinstance(obs, Mapping) else type(obs).__name__}") from None
        n = self.maze_dim
        self._cell = (round(float(o[0]) * n), round(float(o[1]) * n))
        threshold = 0.5 / n  # sensors count free cells
        self._open = sum(1 << m for m in range(4) if float(o[2 + m]) > threshold)

    def _table(self) -> np.ndarray:
        if self._last_table is None:  # built again only after a change: most steps of an episode change nothing
            self._last_table = np.empty(self.space.shape, dtype=np.float32)
            self._last_table[:, :-1] = _ROWS[self._possible]
            self._last_table[:, -1] = self._taken
        return self._last_table.copy()

    def reset(self, obs: dict[str, Any]) -> np.ndarray:
        if not self._checked:
            self._check(obs)
            self._checked = True
        self._possible = [_ALL] * len(self._possible)
        self._taken[:] = 0.0
        self._at_fixpoint, self._last_table = True, None
        self._observe(obs)
        return self._table()

    def update(self, action: int, obs: dict[str, Any]) -> np.ndarray:
        if not (isinstance(action, (int, np.integer)) and 0 <= action < len(self._possible)) \
                or isinstance(action, bool) or not self._checked:
            if not self._checked:
                raise RuntimeError("MoveBelief.update() was called before reset()")
            raise ValueError(f"action must be an int in [0, {len(self._possible)}); got {action!r}")
        before, was_open = self._cell, self._open
        self._observe(obs)
        moved = (self._cell[0] - before[0], self._cell[1] - before[1])
        known = self._possible[action]
        if moved != (0, 0):
            bit = _MOVE_BIT.get(moved)
            if bit is None:
                self._cell, self._open = before, was_open  # refused: nothing changed
                raise ValueError(f"maze_dim={self.maze_dim} does not match the env's maze: action {action} moved the "
                                 f"agent by {moved} cells, and MazeRunner's moves are one cell (pass the env's "
                                 "maze_dim, e.g. MoveBelief(env.unwrapped.maze_dim))")
            self._possible[action] = bit
        else:
            self._possible[action] &= ~was_open  # it was stay, or a move a wall stopped
        if self._possible[action] != known or not self._at_fixpoint:
            self._propagate()
            self._last_table = None
        if not self._taken[action]:
            self._taken[action] = 1.0
            self._last_table = None
        return self._table()

    def _propagate(self) -> None:
        """The actions are a permutation of the moves: a settled action rules its move out for the others, and a
        move that only one action can still be is that action's."""
        possible = self._possible
        while True:
            before = possible[:]
            for a in [a for a, p in enumerate(possible) if p and not p & (p - 1)]:  # settled: one move left
                mine = possible[a]
                possible[:] = [p if b == a else p & ~mine for b, p in enumerate(possible)]
            once = twice = 0
            for p in possible:
                twice |= once & p
                once |= p
            single = once & ~twice  # the moves exactly one action can still be, taken from the lowest
            while single:
                move = single & -single
                single ^= move
                holder = next((a for a, p in enumerate(possible) if p & move), None)
                if holder is not None:  # None only when the belief contradicts itself (an env that is no permutation)
                    possible[holder] = move
            self._at_fixpoint = possible == before
            if self._at_fixpoint or not all(possible):
                return


def _fits(values: np.ndarray, sides: np.ndarray) -> np.ndarray:
    """Per side n, whether every ``values * n`` is a whole cell index in [0, n - 1] (float32 rounding allowed)."""
    cells = np.outer(sides, values.astype(np.float64))
    return np.asarray(((np.abs(cells - np.round(cells)) < 1e-3) & (cells > -1e-3)
                       & (cells < sides[:, None] - 1 + 1e-3)).all(1))
