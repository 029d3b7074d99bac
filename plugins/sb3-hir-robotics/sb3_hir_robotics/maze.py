"""k-goal instructions in gymnasium-robotics' mazes (PointMaze; AntMaze v4 shares the goal machinery).

A maze env draws one goal per episode from ``maze.unique_goal_locations`` (cell centres), jitters it with
``add_xy_position_noise`` and shows it with ``update_target_site_pos``; ``info["success"]`` is its own test,
``||achieved - goal|| <= 0.45`` against ``env.goal``. :class:`MazeGoalSampler` does the same for k goals: it draws
k distinct goal cells (not the agent's start cell) from the wrapper's generator, jitters them the same way, and
installs a goal by setting ``env.goal``, so the env's own success test judges the active goal.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import gymnasium_robotics  # noqa: F401  (registers the PointMaze / AntMaze ids)
import numpy as np
from gymnasium.envs.registration import load_env_creator

from sb3_hir.instruction import InstructionWrapper
from sb3_hir_robotics.goal_specs import MAZE_DISTANCE_THRESHOLD, declare_goal_spec

__all__ = [
    "DEFAULT_MASK_VALUE",
    "MAZE_DISTANCE_THRESHOLD",
    "MazeGoalSampler",
    "goal_cells",
    "make_pointmaze_instruction",
    "maze_extent",
    "outside_mask_value",
]


#: Mask of a reached maze goal: below every coordinate of the standard maps (the Large map spans +-6), so a
#: real goal never equals it, and the same value across maps so a policy sees one mask.
DEFAULT_MASK_VALUE = -10.0


def _maze_env(env: gym.Env) -> Any:
    unwrapped = env.unwrapped
    missing = [name for name in ("maze", "update_target_site_pos") if not hasattr(unwrapped, name)]
    if missing:
        raise ValueError(
            f"env must be a gymnasium-robotics maze env (PointMaze, AntMaze); {type(unwrapped).__name__} lacks "
            f"{missing}"
        )
    return unwrapped


def maze_extent(maze: Any) -> float:
    """Largest absolute x or y coordinate inside the maze (the map is centred on the origin)."""
    return float(max(maze.x_map_center, maze.y_map_center))


def outside_mask_value(maze: Any, preferred: float = DEFAULT_MASK_VALUE) -> float:
    """``preferred`` when it lies outside the maze, else the first integer below the maze's extent."""
    extent = maze_extent(maze)
    if abs(preferred) > extent:
        return float(preferred)
    return -float(math.floor(extent) + 1)


def goal_cells(maze: Any) -> np.ndarray:
    """The distinct goal cells ``(row, col)`` of a maze, int64 ``(m, 2)``, from ``maze.unique_goal_locations``."""
    xy = np.asarray(maze.unique_goal_locations, dtype=np.float64).reshape(-1, 2)
    scale = maze.maze_size_scaling
    rows = np.floor((maze.y_map_center - xy[:, 1]) / scale).astype(np.int64)
    cols = np.floor((xy[:, 0] + maze.x_map_center) / scale).astype(np.int64)
    return np.unique(np.stack([rows, cols], axis=-1), axis=0)


class MazeGoalSampler:
    """Goal sampling and installation for gymnasium-robotics maze envs (a :class:`sb3_hir.instruction.GoalSampler`).

    :param position_noise: jitter each goal inside its cell by the env's ``position_noise_range``, as the env
        does for its own goal; False puts goals on cell centres.
    :param exclude_start_cell: never put a goal in the agent's cell at reset (it would count as reached on the
        first step).
    :param mask_value: proposed mask value; :func:`make_pointmaze_instruction` moves it outside the maze.
    """

    #: install() sets ``env.goal`` to any position, so the wrapper takes an instruction at reset.
    installs_goals = True

    def __init__(self, position_noise: bool = True, exclude_start_cell: bool = True,
                 mask_value: float = DEFAULT_MASK_VALUE) -> None:
        self.position_noise = bool(position_noise)
        self.exclude_start_cell = bool(exclude_start_cell)
        self.mask_value = float(mask_value)

    def max_goals(self, env: gym.Env) -> int:
        """The most distinct goals one instruction can hold in this maze."""
        return len(goal_cells(_maze_env(env).maze)) - int(self.exclude_start_cell)

    def check(self, env: gym.Env, k: int) -> None:
        """Raise ``ValueError`` when the maze cannot hold ``k`` distinct goals or the mask lies inside it."""
        maze = _maze_env(env).maze
        available = self.max_goals(env)
        if k > available:
            start = " besides the agent's start cell" if self.exclude_start_cell else ""
            raise ValueError(
                f"num_goals={k} distinct goals cannot be drawn: this maze has only {available} goal cell(s){start}"
            )
        if abs(self.mask_value) <= maze_extent(maze):
            raise ValueError(
                f"mask_value={self.mask_value} lies inside the maze (coordinates within +-{maze_extent(maze)}), so a "
                "real goal could equal it; use a value outside, e.g. outside_mask_value(maze)"
            )

    def sample(self, env: InstructionWrapper, rng: np.random.Generator, k: int) -> np.ndarray:
        self.check(env, k)
        unwrapped = _maze_env(env)
        maze = unwrapped.maze
        cells = goal_cells(maze)
        if self.exclude_start_cell:
            start = maze.cell_xy_to_rowcol(np.asarray(env.env_observation["achieved_goal"], dtype=np.float64))
            cells = cells[np.any(cells != np.asarray(start), axis=-1)]
        if len(cells) < k:
            raise ValueError(f"num_goals={k} distinct goals cannot be drawn from {len(cells)} goal cell(s)")
        chosen = cells[rng.choice(len(cells), size=k, replace=False)]
        scale = maze.maze_size_scaling
        xy = np.stack(
            [(chosen[:, 1] + 0.5) * scale - maze.x_map_center, maze.y_map_center - (chosen[:, 0] + 0.5) * scale],
            axis=-1,
        )
        if self.position_noise:
            noise = float(unwrapped.position_noise_range)
            xy = xy + rng.uniform(-noise, noise, size=xy.shape) * scale
        return xy

    def install(self, env: InstructionWrapper, goal: np.ndarray) -> None:
        unwrapped = _maze_env(env)
        unwrapped.goal = np.array(goal, dtype=np.float64)
        unwrapped.update_target_site_pos()

    def reached(self, env: InstructionWrapper, achieved: np.ndarray, goal: np.ndarray, info: dict[str, Any]) -> bool:
        # The maze's own test, computed in step() against env.goal, which install() set to the active goal.
        return bool(info["success"])


def make_pointmaze_instruction(
    maze_id: str = "PointMaze_UMaze-v3",
    num_goals: int = 3,
    max_episode_steps: int | None = None,
    continuing_task: bool = True,
    mask_value: float | None = None,
    goal_reward: float = 1.0,
    position_noise: bool = True,
    **make_kwargs: Any,
) -> InstructionWrapper:
    """A PointMaze (or AntMaze v4) with an instruction of ``num_goals`` goals: env plugin ``"pointmaze-instruction"``.

    :param maze_id: gymnasium id of a maze env, e.g. ``"PointMaze_UMaze-v3"``, ``"PointMaze_Medium-v3"``.
    :param num_goals: k; at most the number of goal cells minus the start cell (6 in the U-maze).
    :param max_episode_steps: time limit; None keeps the id's (300 for the PointMaze maps).
    :param continuing_task: passed to the env; with False the env would end the episode at every reached goal,
        which the wrapper overrides for the non-final ones.
    :param mask_value: mask of a reached goal; None uses :data:`DEFAULT_MASK_VALUE` (outside the standard maps).
    :param goal_reward: reward per reached goal.
    :param position_noise: jitter goals inside their cells as the env does.
    :param make_kwargs: further ``gymnasium.make`` arguments (``reward_type``, ``maze_map``, ...). ``reset_target``
        must stay False: the env would move the goal on its own.
    """
    if not isinstance(maze_id, str) or not maze_id:
        raise ValueError(f"maze_id must be a gymnasium id of a maze env (e.g. 'PointMaze_UMaze-v3'); got {maze_id!r}")
    if make_kwargs.get("reset_target", False):
        raise ValueError("reset_target must be False: the env would replace the installed goal by its own")
    try:
        spec = gym.spec(maze_id)
    except gym.error.Error as exc:
        raise ValueError(f"maze_id {maze_id!r} is not a registered gymnasium id: {exc}") from exc
    if spec.entry_point is None:
        raise ValueError(f"maze_id {maze_id!r} is registered without an entry point")
    creator = spec.entry_point if callable(spec.entry_point) else load_env_creator(spec.entry_point)
    if not hasattr(creator, "update_target_site_pos"):
        raise ValueError(
            f"maze_id must be a gymnasium-robotics maze env (PointMaze, AntMaze v4); {maze_id!r} makes "
            f"{getattr(creator, '__name__', creator)!r}"
        )
    make_kwargs["reset_target"] = False
    if max_episode_steps is not None:
        if isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int) or max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be an int >= 1 or None; got {max_episode_steps!r}")
        make_kwargs["max_episode_steps"] = max_episode_steps
    env = gym.make(maze_id, continuing_task=continuing_task, **make_kwargs)
    try:
        maze = _maze_env(env).maze
        sampler = MazeGoalSampler(
            position_noise=position_noise,
            mask_value=outside_mask_value(maze) if mask_value is None else mask_value,
        )
        if isinstance(num_goals, bool) or not isinstance(num_goals, int) or num_goals < 1:
            raise ValueError(f"num_goals must be an int >= 1; got {num_goals!r}")
        sampler.check(env, num_goals)
        return declare_goal_spec(InstructionWrapper(env, sampler, num_goals=num_goals, goal_reward=goal_reward))
    except Exception:
        env.close()
        raise
