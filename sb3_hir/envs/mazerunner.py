"""MazeRunner: reach a sequence of k goal cells, in order, in a freshly generated grid maze.

A grid adaptation of Memory Maze from AMAGO (arXiv 2310.09971, App. C.4). The agent never sees the maze: only its
cell, four wall-distance sensors and a timer, plus the goal instruction. Compared with the implementation in common
use, this one draws every random number from ``self.np_random`` (reproducible by seed), only places goals the start
can reach, and precomputes the sensors per maze so that :meth:`MazeRunnerEnv.step` is a table lookup.
"""

from __future__ import annotations

import math
from collections import deque
from functools import lru_cache
from itertools import chain, islice
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_hir._validate import check_int, check_number, is_int
from sb3_hir.contract import RESET_GOALS_OPTION
from sb3_hir.envs.move_belief import MoveBelief
from sb3_hir.goals import ExactGoalSpec

__all__ = [
    "ACTION_DIRECTIONS",
    "MazeRunnerEnv",
    "make_maze",
    "min_reachable_goal_cells",
    "random_maze",
    "reachable_cells",
    "wall_distances",
]

#: (d_row, d_col) of the canonical actions: west, north, east, south, stay.
ACTION_DIRECTIONS: tuple[tuple[int, int], ...] = ((0, -1), (-1, 0), (0, 1), (1, 0), (0, 0))
#: Canonical continuous action vector (x = column axis, y = row axis) for each canonical action.
_CONTINUOUS_VECTORS = np.array([[-1.0, 0.0], [0.0, -1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], dtype=np.float32)
_DEAD_ZONE = 1.0 / 3.0
_STAY = 4


class _Grid:
    """Maze-independent tables for one side length, built once per size and shared (read-only) by all envs."""

    def __init__(self, n: int) -> None:
        self.n = n
        size = n * n
        cells = np.arange(size)
        self.cells = cells
        rows, cols = cells // n, cells % n
        # Wall-growing walker of the generator: it lives on the even lattice; a move to q also walls the cell m
        # between. pick[p][r] for r in 0..11 is a uniform choice among p's 2, 3 or 4 moves (12 = lcm(2, 3, 4)).
        self.lattice: list[int] = []
        self.pick: list[tuple[tuple[int, int], ...]] = [() for _ in range(size)]
        self.stuck_check: list[tuple[int, ...]] = [() for _ in range(size)]
        for y in range(0, n, 2):
            for x in range(0, n, 2):
                p = y * n + x
                self.lattice.append(p)
                moves = []
                if x > 1:
                    moves.append((p - 2, p - 1))
                if x < n - 2:
                    moves.append((p + 2, p + 1))
                if y > 1:
                    moves.append((p - 2 * n, p - n))
                if y < n - 2:
                    moves.append((p + 2 * n, p + n))
                self.pick[p] = tuple(moves[r % len(moves)] for r in range(12))
                self.stuck_check[p] = tuple(q for q, _ in moves)
        # Neighbour of every cell per canonical direction, clipped into the grid (only border cells clip).
        offsets = np.array([dr * n + dc for dr, dc in ACTION_DIRECTIONS])
        self.targets = np.clip(cells[None, :] + offsets[:, None], 0, size - 1)
        # Sensor scans: the cells in the order each direction's scan visits them (west: row-major; north:
        # column-major; east, south: the same reversed), and where each cell sits in each scan.
        col_major = (cells % n) * n + cells // n  # col_major[i] = cell visited i-th in a column-major scan
        self.scan_order = np.stack([cells, col_major, cells[::-1], col_major[::-1]])
        scan_position = np.argsort(self.scan_order, axis=1)  # (4, size): position of each cell in each scan
        self.scan_gather = (scan_position + size * np.arange(4)[:, None]).T.copy()  # (size, 4) into the flat scans
        self.scan_positions = cells
        self.scan_positions_minus_1 = cells - 1
        self.obs_base = np.zeros((size, 7), dtype=np.float32)
        self.obs_base[:, 0] = rows / n
        self.obs_base[:, 1] = cols / n
        achieved = np.stack([rows, cols], axis=-1).astype(np.int32)[:, None, :]
        achieved.setflags(write=False)
        self.achieved = list(achieved)
        # Border walls, and the spawn-area rows as (slice, bytes) to paste into a row-major wall bytearray.
        border = np.zeros((n, n), dtype=np.uint8)
        border[[0, -1], :] = 1
        border[:, [0, -1]] = 1
        self.border = border.tobytes()
        self.spawn_rows: list[tuple[slice, bytes]] = []
        for r in range(max(1, n - 5), n - 1):
            pattern = bytearray(n - 2)
            if r >= n - 4:
                pattern[n // 2 - 2] = 1  # columns n//2 - 1 and n//2 + 1, offset by the border column
                pattern[n // 2] = 1
            self.spawn_rows.append((slice(r * n + 1, r * n + n - 1), bytes(pattern)))


@lru_cache(maxsize=32)
def _grid(n: int) -> _Grid:
    return _Grid(n)


def _random_maze_flat(n: int, rng: np.random.Generator, complexity: float, density: float) -> bytearray:
    """Row-major walls (1 = wall) of the random-walk maze; see :func:`random_maze`."""
    grid = _grid(n)
    walk_len = int(complexity * (5 * (n + n)))
    n_walkers = int(density * ((n // 2) * (n // 2)))
    wall = bytearray(grid.border)
    if n_walkers <= 0 or walk_len <= 0:
        return wall
    lattice, pick, stuck_check = grid.lattice, grid.pick, grid.stuck_check
    # Walker starts, then one lazily refilled stream of uniform draws in 0..11 (u * 12 floored): walkers are
    # usually boxed in long before walk_len, so drawing walk_len numbers per walker would cost more than the walk.
    chunk = 16 * n
    u = rng.random(n_walkers + chunk)
    starts = (u[:n_walkers] * len(lattice)).astype(np.intp).tolist()
    first = (u[n_walkers:] * 12).astype(np.uint8).tobytes()
    refills = iter(lambda: (rng.random(chunk) * 12).astype(np.uint8).tobytes(), None)
    draws = chain(first, chain.from_iterable(refills))
    for start in starts:
        p = lattice[start]
        wall[p] = 1
        for r in islice(draws, walk_len):
            q, m = pick[p][r]
            if not wall[q]:
                wall[q] = 1
                wall[m] = 1
                p = q
                continue
            for other in stuck_check[p]:
                if not wall[other]:
                    break
            else:  # boxed in: no later draw could change anything
                break
    return wall


def random_maze(size: int, rng: np.random.Generator, complexity: float = 0.75, density: float = 0.75) -> np.ndarray:
    """Classic complexity/density random-walk maze (mazelab), driven by ``rng``.

    Kept because it is the generator MazeRunner results in the field were produced with: ``density`` sets the
    number of wall-growing walkers, ``complexity`` their maximum length. A walker boxed in by walls stops early,
    which changes nothing (walls are only ever added).

    :param size: side length; must be odd and >= 3.
    :param rng: source of all randomness.
    :return: bool array (size, size), True = wall, border walled.
    """
    if not is_int(size) or size < 3 or size % 2 == 0:
        raise ValueError(f"size must be an odd int >= 3, got {size!r}")
    n = int(size)
    wall = _random_maze_flat(n, rng, complexity, density)
    return np.frombuffer(bytes(wall), dtype=bool).reshape(n, n).copy()


def _apply_spawn_area(wall: bytearray, n: int) -> bytearray:
    """Clear the spawn area and raise its two short walls (in place), as in AMAGO's MazeRunner.

    Rows n-5..n-2 are cleared (row 0 stays a border wall when n == 5); columns n//2-1 and n//2+1 are walled on
    rows n-4..n-2 so the start cell (n-2, n//2) opens north into a short corridor.
    """
    for row_slice, pattern in _grid(n).spawn_rows:
        wall[row_slice] = pattern
    return wall


def make_maze(size: int, rng: np.random.Generator) -> np.ndarray:
    """A MazeRunner maze: :func:`random_maze` plus the spawn area; bool (size, size), True = wall."""
    if not is_int(size) or size < 5 or size % 2 == 0:
        raise ValueError(f"size must be an odd int >= 5, got {size!r}")
    n = int(size)
    wall = _apply_spawn_area(_random_maze_flat(n, rng, 0.75, 0.75), n)
    return np.frombuffer(bytes(wall), dtype=bool).reshape(n, n).copy()


def _flood_fill(wall: bytes | bytearray, n: int, start: int) -> list[int]:
    """Sorted flat indices of the free cells 4-connected to ``start`` (the border must be walled).

    Runs at every reset, hence the unrolled neighbours and the list that is its own queue.
    """
    blocked = bytearray(wall)  # visited cells are marked as walls: one test per neighbour
    blocked[start] = 1
    found = [start]
    append = found.append
    for p in found:  # iterating a list while appending to it visits the appended items too
        q = p - 1
        if not blocked[q]:
            blocked[q] = 1
            append(q)
        q = p + 1
        if not blocked[q]:
            blocked[q] = 1
            append(q)
        q = p - n
        if not blocked[q]:
            blocked[q] = 1
            append(q)
        q = p + n
        if not blocked[q]:
            blocked[q] = 1
            append(q)
    found.sort()
    return found


def reachable_cells(maze: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """Flat indices (sorted) of the free cells reachable from ``start`` by 4-neighbour moves (flood fill)."""
    maze = np.asarray(maze, dtype=bool)
    if maze.ndim != 2 or not (maze[0].all() and maze[-1].all() and maze[:, 0].all() and maze[:, -1].all()):
        raise ValueError("maze must be a 2-D bool array with wall borders")
    n = maze.shape[1]
    if maze[start]:
        raise ValueError(f"start {start} is a wall")
    return np.array(_flood_fill(maze.astype(np.uint8).tobytes(), n, start[0] * n + start[1]), dtype=np.int64)


def min_reachable_goal_cells(maze_dim: int) -> int:
    """Goal cells every MazeRunner maze of this (odd) size is guaranteed to offer.

    Reachability only grows as cells are freed, and the spawn area is always free and connected to the start, so
    the worst case is a fully walled interior plus the spawn area: 4n - 15 cells besides the start for n >= 7
    (2 for n == 5). ``num_goals`` is validated against this bound so that goal sampling can never fail.
    """
    n = int(maze_dim)
    wall = _apply_spawn_area(bytearray(b"\x01" * (n * n)), n)
    return len(_flood_fill(wall, n, (n - 2) * n + n // 2)) - 1


def _wall_runs(maze: np.ndarray, grid: _Grid) -> np.ndarray:
    """Free cells between each cell and the nearest wall, west/north/east/south: int (n*n, 4); walls get -1.

    Vectorised run lengths: along a scan, the position of the last wall at or before each cell is a running
    maximum, and the run is the distance to it minus one. With wall borders a run never crosses a line, so one
    1-D scan per direction (row-major, column-major, and both reversed) covers the whole maze in a few calls.
    """
    walls = maze.ravel()[grid.scan_order]  # (4, size)
    last_wall = np.maximum.accumulate(np.where(walls, grid.scan_positions, -1), axis=1)
    runs = grid.scan_positions_minus_1 - last_wall
    return runs.ravel()[grid.scan_gather]


def wall_distances(maze: np.ndarray) -> np.ndarray:
    """Free cells between each cell and the nearest wall to the west, north, east, south: int (n, n, 4).

    ``maze`` must be a square bool array with wall borders; wall cells get 0.
    """
    n = maze.shape[0]
    if maze.shape != (n, n) or not (maze[0].all() and maze[-1].all() and maze[:, 0].all() and maze[:, -1].all()):
        raise ValueError("maze must be a square bool array with wall borders")
    return np.maximum(_wall_runs(maze.astype(bool), _grid(n)), 0).reshape(n, n, 4)


#: Largest maze side: the per-size tables and the maze are O(n^2) (a 10**4 side would need gigabytes).
MAX_MAZE_DIM = 501


def _checked_size(maze_dim: int, num_goals: int) -> tuple[int, int]:
    """``maze_dim`` and ``num_goals`` checked as :class:`MazeRunnerEnv` takes them: ``(n, k)``, n odd in
    ``[5, MAX_MAZE_DIM]`` and k at most the goal cells every maze of side n guarantees reachable."""
    n = check_int(maze_dim, "maze_dim", 5)
    if n % 2 == 0 or n > MAX_MAZE_DIM:
        raise ValueError(f"maze_dim must be an odd int in [5, {MAX_MAZE_DIM}] (walls sit on even rows and "
                         f"columns; larger mazes outgrow memory), got {maze_dim!r}"
                         + (f"; use {n - 1} or {n + 1}" if n % 2 == 0 and n < MAX_MAZE_DIM else ""))
    k = check_int(num_goals, "num_goals", 1)
    bound = min_reachable_goal_cells(n)
    if k > bound:
        raise ValueError(
            f"num_goals must be <= {bound} for maze_dim={n} (the free cells besides the start that every "
            f"maze of that size guarantees reachable), got {num_goals!r}"
        )
    return n, k


def _observation_space(n: int, k: int) -> spaces.Dict:
    """MazeRunner's observations in a maze of side ``n`` with ``k`` goals (see :class:`MazeRunnerEnv`)."""
    return spaces.Dict(
        {
            "achieved": spaces.Box(0, n - 1, shape=(1, 2), dtype=np.int32),
            "goals": spaces.Box(-1, n - 1, shape=(k, 2), dtype=np.int32),
            "obs": spaces.Box(0.0, 1.0, shape=(7,), dtype=np.float32),
        }
    )


class MazeRunnerEnv(gym.Env):
    """Reach ``num_goals`` goal cells in order in a new random maze each episode.

    AMAGO's multi-goal benchmark, rebuilt so that all randomness comes from ``env.np_random`` (reproducible by seed) and
    every goal is reachable: a small, fast env on which relabeling and memory make a measurable difference.

    Observation: Dict ``obs`` float32 (7,) = [row/n, col/n, west/n, north/n, east/n, south/n, t/time_limit]
    (sensors count the free cells between the agent and the nearest wall), ``goals`` int32 (k, 2) with reached
    goals replaced by (-1, -1), ``achieved`` int32 (1, 2) = current cell. Reward ``step_reward`` on every step,
    plus 1.0 on the step the agent stands on the active goal (then the next goal becomes active, checked from the
    next step on); terminated when all k are reached, truncated when t reaches ``time_limit``. ``info`` has
    ``is_success`` and ``goals_reached``. ``goal_spec`` declares the same semantics (exact cells, mask -1, the
    rewards), so the buffer and :func:`sb3_hir.testing.check_instruction_env` relabel with them.

    Every observation array is fresh on every step (gymnasium 1.x's env checker asserts that no two calls share an
    object, since users keep what they are given).

    ``reset(options={"goals": goals})`` plays the episode under ``goals`` (int (k, 2) cells, repeats allowed, no
    walls): the maze, start and the env's own goal draw are made exactly as without it, so one seed gives the
    same maze under any instruction (what :func:`sb3_hir.testing.check_instruction_env` replays relabeled
    instructions against).

    Episode state for tools and tests: ``maze`` (read-only bool (n, n), True = wall), ``start`` = (n-2, n//2),
    ``goal_positions`` (read-only int32 (k, 2)), ``action_permutation`` (action index -> index into
    :data:`ACTION_DIRECTIONS`), ``agent_pos``, ``goals_reached``, ``t``; before the first reset the arrays are
    empty and the agent stands on the start. For n = 5 the spawn area starts at row 1 so that the border stays
    walled.

    :param maze_dim: side n, odd, in ``[5, MAX_MAZE_DIM]`` (501).
    :param num_goals: k, at most :func:`min_reachable_goal_cells` (4n - 15 for n >= 7, 2 for n = 5): the cells
        every maze guarantees reachable from the start (the spawn area), so goal sampling can never fail.
    :param time_limit: steps per episode (>= 1).
    :param randomized_actions: permute the five moves afresh every episode.
    :param continuous: ``Box(-1, 1, (2,))`` actions (x = column axis, y = row axis): the move follows the axis
        with the larger magnitude (x on ties), stay when both are below 1/3.
    :param render_mode: ``"rgb_array"`` (uint8 image) or ``"ansi"`` (text grid) or None.
    :param step_reward: reward of every step on top of the goal reward: 0.0 gives 0/1 rewards, -1.0 HER's -1/0
        scale. The optimal policy is the same (the episode ends at the k-th goal; reach the goals in order, as fast
        as possible).
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array", "ansi"], "render_fps": 8}

    #: ``reset(options={"goals": ...})`` is honoured (see :mod:`sb3_hir.contract`).
    accepts_reset_goals: ClassVar[bool] = True

    #: Columns of ``obs`` whose change is an action's effect (row and column; the clock advances on every step),
    #: for the generic :class:`~sb3_hir.action_features.EffectTable` (see :mod:`sb3_hir.contract`).
    effect_columns: ClassVar[tuple[int, ...]] = (0, 1)

    #: Pixels per maze cell in ``rgb_array`` renders.
    cell_pixels: int = 16

    def __init__(
        self,
        maze_dim: int = 11,
        num_goals: int = 3,
        time_limit: int = 250,
        randomized_actions: bool = False,
        continuous: bool = False,
        render_mode: str | None = None,
        step_reward: float = 0.0,
    ) -> None:
        super().__init__()
        n, k = _checked_size(maze_dim, num_goals)
        self.time_limit = check_int(time_limit, "time_limit", 1)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.maze_dim = n
        self.num_goals = k
        self.randomized_actions = bool(randomized_actions)
        self.continuous = bool(continuous)
        check_number(step_reward, "step_reward")
        self.step_reward = float(step_reward)
        #: The semantics relabeling must reproduce (see :data:`sb3_hir.contract.ENV_GOAL_SPEC`).
        self.goal_spec = ExactGoalSpec(mask_value=-1, goal_reward=1.0, step_reward=self.step_reward)
        self.render_mode = render_mode
        self.start = (n - 2, n // 2)
        self._grid = _grid(n)

        self.observation_space = _observation_space(n, k)
        self.action_space: spaces.Space = (spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32) if self.continuous
                                           else spaces.Discrete(5))

        # Episode state: drawn afresh by reset(); until the first reset, empty arrays and the start cell, and
        # step(), expert_action() and render() refuse to run (``_started``, ``_done``).
        #: This episode's maze, read-only bool (n, n), True = wall; (0, 0) before the first reset.
        self.maze: np.ndarray = np.zeros((0, 0), dtype=bool)
        #: This episode's goal cells in order, read-only int32 (k, 2); (0, 2) before the first reset.
        self.goal_positions: np.ndarray = np.zeros((0, 2), dtype=np.int32)
        #: Action index -> index into :data:`ACTION_DIRECTIONS` (the identity unless ``randomized_actions``);
        #: (0,) before the first reset.
        self.action_permutation: np.ndarray = np.arange(0)
        self._goal_cells: list[int] = []  # goal_positions as flat cell indices
        self._dest_by_direction: list[list[int]] = []  # [direction][cell]: the cell a move reaches (walls stop it)
        self._moves: dict[int, list[int]] = {}  # the same by action index, through action_permutation
        self._obs_table: np.ndarray = np.zeros((0, 7), dtype=np.float32)  # every cell's obs, slot 6 (time) zero
        self._obs_rows: list[np.ndarray | None] = []  # views of _obs_table's rows, made on a cell's first visit
        self._cell: int = self.start[0] * n + self.start[1]  # the agent's flat cell
        self._t: int = 0  # steps taken this episode
        self._goals_reached: int = 0
        self._active_goal: int = -1  # flat cell of the goal to reach next; -1 once all are reached
        self._goals_obs: np.ndarray = self.goal_positions  # observed goals, reached ones -1, read-only
        self._expert_dist: list[int] | None = None  # BFS distances (moves) to _expert_goal, for expert_action
        self._expert_goal: int = -1
        self._started = False  # reset() has run once
        self._done = True  # the episode ended (or none began): step() needs a reset

    # ------------------------------------------------------------------ episode state
    @property
    def agent_pos(self) -> tuple[int, int]:
        """Current (row, col)."""
        return divmod(self._cell, self.maze_dim)

    @property
    def goals_reached(self) -> int:
        """Goals reached so far this episode; the active goal is ``goal_positions[goals_reached]``."""
        return self._goals_reached

    @property
    def t(self) -> int:
        """Steps taken this episode."""
        return self._t

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """New maze, goal sequence and (with ``randomized_actions``) action permutation, all from ``np_random``."""
        super().reset(seed=seed)
        rng = self.np_random
        n, grid = self.maze_dim, self._grid
        wall = bytes(_apply_spawn_area(_random_maze_flat(n, rng, 0.75, 0.75), n))
        self.maze = np.frombuffer(wall, dtype=bool).reshape(n, n)  # read-only view: True = wall
        start = self.start[0] * n + self.start[1]
        candidates = _flood_fill(wall, n, start)
        candidates.remove(start)
        # Partial Fisher-Yates: k distinct cells in uniformly random order.
        k, m = self.num_goals, len(candidates)
        for i, u in enumerate(rng.random(k).tolist()):
            j = i + int(u * (m - i))
            candidates[i], candidates[j] = candidates[j], candidates[i]
        self._goal_cells = candidates[:k]
        given = None if options is None else options.get(RESET_GOALS_OPTION)
        if given is not None:
            self._goal_cells = self._given_goal_cells(given)
        self.goal_positions = np.array([divmod(c, n) for c in self._goal_cells], dtype=np.int32)
        self.goal_positions.setflags(write=False)
        self.action_permutation = rng.permutation(5) if self.randomized_actions else np.arange(5)

        # Destination of each canonical direction from every cell (walls stop moves), then per action index.
        targets = grid.targets
        self._dest_by_direction = np.where(self.maze.ravel()[targets], grid.cells, targets).tolist()
        self._moves = {a: self._dest_by_direction[d] for a, d in enumerate(self.action_permutation.tolist())}
        self._build_sensor_table()

        self._cell = start
        self._t = 0
        self._goals_reached = 0
        self._active_goal = self._goal_cells[0]
        self._goals_obs = self.goal_positions
        self._expert_dist = None
        self._expert_goal = -1
        self._started = True
        self._done = False
        obs = self._sensor_obs(start)
        obs[6] = 0.0
        observation = {"achieved": grid.achieved[start].copy(), "goals": self._goals_obs.copy(), "obs": obs}
        return observation, {"is_success": False, "goals_reached": 0}

    def _given_goal_cells(self, given: Any) -> list[int]:
        """Cells of an instruction passed to ``reset``, validated (the maze must already be drawn)."""
        n, k = self.maze_dim, self.num_goals
        goals = np.asarray(given)
        if goals.shape != (k, 2) or not (
            np.issubdtype(goals.dtype, np.integer) or (np.issubdtype(goals.dtype, np.floating) and
                                                       np.array_equal(goals, np.round(goals)))
        ):
            raise ValueError(f"options[{RESET_GOALS_OPTION!r}] must be {k} integer (row, col) cells, shape ({k}, 2); "
                             f"got shape {goals.shape}, dtype {goals.dtype}")
        goals = goals.astype(np.int64)
        outside = ((goals < 0) | (goals >= n)).any(axis=1)
        if outside.any():
            raise ValueError(f"options[{RESET_GOALS_OPTION!r}]: goal {goals[outside][0].tolist()} lies outside the "
                             f"{n}x{n} maze")
        walls = self.maze[goals[:, 0], goals[:, 1]]
        if walls.any():
            raise ValueError(f"options[{RESET_GOALS_OPTION!r}]: goal {goals[walls][0].tolist()} is a wall in this "
                             "episode's maze")
        return (goals[:, 0] * n + goals[:, 1]).tolist()

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Move (walls stop the move), reward the active goal, advance it: O(1) table lookups."""
        if self._done:
            if not self._started:
                raise RuntimeError("MazeRunnerEnv.step() called before reset(); call reset() first")
            raise RuntimeError(
                "MazeRunnerEnv.step() called after the episode ended (terminated or truncated); call reset() first"
            )
        if self.continuous:
            table = self._moves[self._continuous_index(action)]
        else:
            try:
                found = self._moves.get(action)
            except TypeError:  # unhashable, e.g. a size-1 array
                found = None
            table = self._moves[self._discrete_index(action)] if found is None else found
        cell = table[self._cell]
        self._cell = cell
        t = self._t + 1
        self._t = t
        reward = self.step_reward
        terminated = False
        if cell == self._active_goal:
            reward += 1.0
            self._goals_reached += 1
            if self._goals_reached == self.num_goals:
                terminated = True
                self._active_goal = -1
            else:
                self._active_goal = self._goal_cells[self._goals_reached]
            self._set_goals_obs()
        truncated = t >= self.time_limit
        self._done = terminated or truncated
        obs = self._sensor_obs(cell)
        obs[6] = t / self.time_limit
        observation = {"achieved": self._grid.achieved[cell].copy(), "goals": self._goals_obs.copy(), "obs": obs}
        info = {"is_success": terminated, "goals_reached": self._goals_reached}
        return observation, reward, terminated, truncated, info

    def _set_goals_obs(self) -> None:
        goals = self.goal_positions.copy()
        goals[: self._goals_reached] = -1
        goals.setflags(write=False)
        self._goals_obs = goals

    # ------------------------------------------------------------------ actions
    def _discrete_index(self, action: Any) -> int:
        arr = np.asarray(action)
        if arr.size != 1 or not np.issubdtype(arr.dtype, np.integer) or not 0 <= int(arr.reshape(())) < 5:
            raise ValueError(f"action must be an int in [0, 5) for Discrete(5), got {action!r}")
        return int(arr.reshape(()))

    def _continuous_index(self, action: Any) -> int:
        """Action index of a Box(-1, 1, (2,)) action: the larger-magnitude axis, 1/3 dead zone."""
        arr = np.asarray(action, dtype=np.float64)
        if arr.shape != (2,):
            raise ValueError(f"action must have shape (2,) for the continuous MazeRunner, got {action!r}")
        x, y = arr.tolist()
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f"action must be finite, got {action!r}")
        ax, ay = abs(x), abs(y)
        if ax < _DEAD_ZONE and ay < _DEAD_ZONE:
            return _STAY
        if ax >= ay:
            return 2 if x > 0 else 0
        return 3 if y > 0 else 1

    def action_index(self, action: Any) -> int:
        """Action index (0..4, before the episode's permutation) that ``action`` selects."""
        return self._continuous_index(action) if self.continuous else self._discrete_index(action)

    def action_features(self) -> MoveBelief:
        """A fresh :class:`~sb3_hir.envs.move_belief.MoveBelief`: per action, the moves it can still be, from the
        agent's own cells, wall sensors and actions (the :mod:`sb3_hir.contract` hook of
        ``ActionFeaturesWrapper(env, "env")``)."""
        if self.continuous:
            raise ValueError("action_features needs Discrete actions; this MazeRunner has continuous=True")
        return MoveBelief(self.maze_dim)

    # ------------------------------------------------------------------ observation
    def _build_sensor_table(self) -> None:
        """Precompute [row/n, col/n, west/n, north/n, east/n, south/n, 0] for every cell of the new maze.

        Wall cells get meaningless (negative) sensors: the agent never stands on them.
        """
        table = self._grid.obs_base.copy()
        table[:, 2:6] = _wall_runs(self.maze, self._grid) / self.maze_dim
        self._obs_table = table
        # Row views, made on first visit: an episode visits a fraction of the cells, and a view per cell up front
        # costs more than the lookups it saves.
        self._obs_rows = [None] * len(table)

    def _sensor_obs(self, cell: int) -> np.ndarray:
        """Fresh float32 (7,) holding position and wall sensors of ``cell``; slot 6 is the caller's."""
        row = self._obs_rows[cell]
        if row is None:
            row = self._obs_rows[cell] = self._obs_table[cell]
        return row.copy()

    # ------------------------------------------------------------------ expert
    def _distance_to_active_goal(self) -> list[int]:
        """BFS distances (in moves) to the active goal; recomputed only when the active goal changes."""
        goal = self._active_goal
        if self._expert_dist is None or self._expert_goal != goal:
            size = self.maze_dim * self.maze_dim
            dist = [size] * size
            dist[goal] = 0
            dest = self._dest_by_direction[:4]
            frontier = deque([goal])
            while frontier:
                p = frontier.popleft()
                d = dist[p] + 1
                for table in dest:
                    q = table[p]
                    if dist[q] > d:
                        dist[q] = d
                        frontier.append(q)
            self._expert_dist = dist
            self._expert_goal = goal
        return self._expert_dist

    def expert_action(self) -> int | np.ndarray:
        """Optimal action toward the active goal under this episode's action permutation.

        An int for Discrete actions, the canonical float32 (2,) vector for continuous ones; "stay" once all goals
        are reached. Ties go to the lowest action index, so the expert is deterministic.
        """
        if not self._started:
            raise RuntimeError("MazeRunnerEnv.expert_action() called before reset()")
        if self._active_goal < 0:
            best = int(np.flatnonzero(self.action_permutation == _STAY)[0])
        else:
            dist = self._distance_to_active_goal()
            cell, moves = self._cell, self._moves
            best = min(range(5), key=lambda a: dist[moves[a][cell]])
        if self.continuous:
            return _CONTINUOUS_VECTORS[best].copy()
        return best

    # ------------------------------------------------------------------ rendering
    def render(self) -> Any:  # an RGB array or the ANSI text, per render_mode
        """``rgb_array``: walls, goals numbered 1..k in distinct colours (reached ones dimmed), the agent as a blue
        disc; ``ansi``: the same as a text grid."""
        if self.render_mode is None:
            gym.logger.warn("MazeRunnerEnv.render() called without a render_mode; pass render_mode to the constructor")
            return None
        if not self._started:
            raise RuntimeError("MazeRunnerEnv.render() called before reset()")
        if self.render_mode == "ansi":
            return self._render_ansi()
        return self._render_rgb()

    def _render_ansi(self) -> str:
        n = self.maze_dim
        grid = np.where(self.maze, "#", ".").astype("<U1")
        labels = "123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        for j, (r, c) in enumerate(self.goal_positions.tolist()):
            if j < self._goals_reached:
                grid[r, c] = "+"
            else:
                grid[r, c] = labels[j] if j < len(labels) else "*"
        r, c = divmod(self._cell, n)
        grid[r, c] = "@"
        header = f"t={self._t}/{self.time_limit} goals_reached={self._goals_reached}/{self.num_goals}"
        return header + "\n" + "\n".join("".join(row) for row in grid) + "\n"

    def _render_rgb(self) -> np.ndarray:
        n, px = self.maze_dim, self.cell_pixels
        free_colour = np.array([238, 238, 238], dtype=np.float64)
        cell_colours = np.where(self.maze[..., None], np.array([70, 70, 70.0]), free_colour)
        palette = _goal_palette(self.num_goals)
        for j, (r, c) in enumerate(self.goal_positions.tolist()):
            colour = palette[j]
            if j < self._goals_reached:
                colour = 0.3 * colour + 0.7 * free_colour
            cell_colours[r, c] = colour
        img = np.repeat(np.repeat(cell_colours.astype(np.uint8), px, axis=0), px, axis=1)
        for j, (r, c) in enumerate(self.goal_positions.tolist()):
            ink = 150 if j < self._goals_reached else 0
            _draw_number(img[r * px : (r + 1) * px, c * px : (c + 1) * px], (j + 1) % 100, ink)
        r, c = divmod(self._cell, n)
        yy, xx = np.mgrid[0:px, 0:px]
        centre = (px - 1) / 2
        disc = (yy - centre) ** 2 + (xx - centre) ** 2 <= (px * 0.36) ** 2
        patch = img[r * px : (r + 1) * px, c * px : (c + 1) * px]
        patch[disc] = np.array([20, 60, 200], dtype=np.uint8)
        return img


# 3x5 bitmap digits for goal numbers in rgb_array renders.
_DIGITS = np.array(
    [
        [[1, 1, 1], [1, 0, 1], [1, 0, 1], [1, 0, 1], [1, 1, 1]],
        [[0, 1, 0], [1, 1, 0], [0, 1, 0], [0, 1, 0], [1, 1, 1]],
        [[1, 1, 1], [0, 0, 1], [1, 1, 1], [1, 0, 0], [1, 1, 1]],
        [[1, 1, 1], [0, 0, 1], [1, 1, 1], [0, 0, 1], [1, 1, 1]],
        [[1, 0, 1], [1, 0, 1], [1, 1, 1], [0, 0, 1], [0, 0, 1]],
        [[1, 1, 1], [1, 0, 0], [1, 1, 1], [0, 0, 1], [1, 1, 1]],
        [[1, 1, 1], [1, 0, 0], [1, 1, 1], [1, 0, 1], [1, 1, 1]],
        [[1, 1, 1], [0, 0, 1], [0, 0, 1], [0, 0, 1], [0, 0, 1]],
        [[1, 1, 1], [1, 0, 1], [1, 1, 1], [1, 0, 1], [1, 1, 1]],
        [[1, 1, 1], [1, 0, 1], [1, 1, 1], [0, 0, 1], [1, 1, 1]],
    ],
    dtype=bool,
)


def _draw_number(patch: np.ndarray, number: int, ink: int) -> None:
    """Stamp ``number`` (0..99) centred in a cell patch, in 2x-scaled 3x5 digits when they fit."""
    glyphs = [np.kron(_DIGITS[int(d)], np.ones((2, 2), dtype=bool)) for d in str(number)]
    gap = np.zeros((10, 2), dtype=bool)
    parts: list[np.ndarray] = []
    for i, g in enumerate(glyphs):
        if i:
            parts.append(gap)
        parts.append(g)
    mask = np.concatenate(parts, axis=1)
    h, w = mask.shape
    if h > patch.shape[0] or w > patch.shape[1]:
        return
    top, left = (patch.shape[0] - h) // 2, (patch.shape[1] - w) // 2
    patch[top : top + h, left : left + w][mask] = ink


def _goal_palette(k: int) -> np.ndarray:
    """k distinct saturated colours (golden-ratio hue steps), float (k, 3) in 0..255."""
    hue = (np.arange(k) * 0.618033988749895 + 0.08) % 1.0
    s, v = 0.7, 0.95
    i = np.floor(hue * 6).astype(int) % 6
    f = hue * 6 - np.floor(hue * 6)
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    vv = np.full(k, v)
    pp = np.full(k, p)
    choices = [
        np.stack([vv, t, pp], -1),
        np.stack([q, vv, pp], -1),
        np.stack([pp, vv, t], -1),
        np.stack([pp, q, vv], -1),
        np.stack([t, pp, vv], -1),
        np.stack([vv, pp, q], -1),
    ]
    rgb = np.choose(i[:, None], choices)
    return rgb * 255.0
