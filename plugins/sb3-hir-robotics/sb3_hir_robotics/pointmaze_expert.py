"""A scripted controller for gymnasium-robotics' PointMaze, the demonstrations of ``bench_demos_box.py``.

From the observation alone (ball position ``observation[0:2]``, velocity ``observation[2:4]``, the desired goal)
and the env's maze map: a breadth-first search over free cells from the ball's cell to the goal's cell gives the
path of cells; the waypoint is the farthest cell centre along it (the goal itself in the goal's cell) that the ball
reaches in a straight line keeping ``CLEARANCE`` from the walls, then the farthest such point on the next segment of
the path, so it cuts corners where the walls allow. A PD controller on position and velocity steers toward it:
the force is ``KD * (clip(KP * (waypoint - position), -VMAX, VMAX) - velocity)``, full speed until the ball is
close to the waypoint.

The action is computed in the maze's own units (``[-1, 1]`` force per axis) and mapped linearly to the action space
of the env it is given, clipped to it, so it drives the env under any Box rescaling (gymnasium's
``RescaleAction(env, -2.0, 2.0)``).

On PointMaze_UMaze-v3 (``continuing_task=False``, 100 steps, actions rescaled to ``[-2, 2]``) it succeeds in 46
of 50 episodes (seeds 0-49; the same on ``[-1, 1]``), 188 of 200 (seeds 0-199):
``python benchmarks/pointmaze_expert.py [--env PointMaze_UMaze-v3] [--episodes 50] [--max-episode-steps 100]
[--scale 2.0]``. Every failure is a route of 6 cells (one end of the U to the other, 13 of the 200 episodes): the
expert takes 100-111 steps on those (at most 89 on routes of 5 cells), against the limit of 100.

Registered as the expert plugin ``"pointmaze-scripted"`` (a DAgger teacher, :mod:`sb3_hir_robotics.scripted_experts`);
``bench_demos_box.py --env pointmaze`` takes its demonstrations, and ``benchmarks/pointmaze_expert.py`` measures its
success rate.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

from sb3_hir import Episode

__all__ = ["IsSuccess", "PointMazeExpert", "make_env", "maze_demos"]

#: PD gains: the velocity aimed at per unit of position error, capped at VMAX per axis (PointMaze clips the ball's
#: velocity to 5 per axis), and the force, in the maze's units ([-1, 1]), per unit of velocity error
KP, KD, VMAX = 12.0, 10.0, 6.0
#: clearance the straight segment to a waypoint must keep from the walls (the ball's radius is 0.1)
CLEARANCE = 0.12
#: spacing of the points tried along the path beyond the last visible cell centre
STEP = 0.1


class PointMazeExpert:
    """Call it with an observation of ``env`` (stateless: no reset between episodes).

    :param env: a PointMaze env, possibly wrapped; its ``action_space`` (a bounded Box) is the one the actions are
        given in, and ``env.unwrapped``'s is the maze's own.
    """

    def __init__(self, env: gym.Env, kp: float = KP, kd: float = KD, vmax: float = VMAX,
                 clearance: float = CLEARANCE) -> None:
        base: Any = env.unwrapped  # gymnasium-robotics' PointMaze (no types)
        self._setup(base.maze, base.action_space, env.action_space, kp, kd, vmax, clearance)

    @classmethod
    def from_maze(cls, maze: Any, action_space: gym.Space, kp: float = KP, kd: float = KD, vmax: float = VMAX,
                  clearance: float = CLEARANCE) -> PointMazeExpert:
        """The expert of a maze read from a VecEnv's sub-env (``get_attr("maze")``), whose actions are given in
        ``action_space``; the maze's own are PointMaze's force, ``[-1, 1]`` per axis."""
        expert = cls.__new__(cls)
        own = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
        cls._setup(expert, maze, own, action_space, kp, kd, vmax, clearance)
        return expert

    def _setup(self, maze: Any, own: gym.spaces.Box, space: gym.Space, kp: float, kd: float, vmax: float,
               clearance: float) -> None:
        self.maze = maze
        self.free = {(i, j) for i, row in enumerate(self.maze.maze_map) for j, cell in enumerate(row) if cell != 1}
        self.base_low, self.base_high = own.low, own.high
        if not isinstance(space, gym.spaces.Box) or not np.isfinite([space.low, space.high]).all():
            raise ValueError(f"the expert needs a bounded Box action space, got {space}")
        self.space: gym.spaces.Box = space
        self.kp, self.kd, self.vmax, self.clearance = kp, kd, vmax, clearance

    def cell(self, xy: np.ndarray) -> tuple[int, int]:
        i, j = self.maze.cell_xy_to_rowcol(xy)
        return int(i), int(j)

    def path(self, start: tuple[int, int], goal: tuple[int, int]) -> list[tuple[int, int]]:
        """Cells from ``start`` to ``goal`` (both included), shortest in moves between 4-neighbours."""
        parent: dict[tuple[int, int], tuple[int, int] | None] = {start: None}
        queue = deque([start])
        while queue:
            cell = queue.popleft()
            if cell == goal:
                break
            for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nxt = (cell[0] + di, cell[1] + dj)
                if nxt in self.free and nxt not in parent:
                    parent[nxt] = cell
                    queue.append(nxt)
        if goal not in parent:
            return [start]
        cells = [goal]
        while (previous := parent[cells[-1]]) is not None:
            cells.append(previous)
        return cells[::-1]

    def clear(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Whether a disc of radius ``clearance`` moves from ``a`` to ``b`` in a straight line without touching
        a wall cell (checked at points 0.05 apart)."""
        n = max(2, int(np.ceil(np.linalg.norm(b - a) / 0.05)) + 1)
        c = self.clearance
        for p in np.linspace(a, b, n):
            for dx, dy in ((c, c), (c, -c), (-c, c), (-c, -c)):
                if self.cell(p + np.array([dx, dy])) not in self.free:
                    return False
        return True

    def waypoint(self, pos: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """The farthest point of the path (the polyline through the centres of the cells after the ball's, then the
        goal) that the ball reaches in a straight line, to within ``STEP`` along the path."""
        cells = self.path(self.cell(pos), self.cell(goal))
        points = [self.maze.cell_rowcol_to_xy(np.array(c)) for c in cells[1:-1]] + [goal]
        target = points[0]
        for point in points[1:]:
            length = float(np.linalg.norm(point - target))
            if self.clear(pos, point):
                target = point
                continue
            farthest = target
            for along in np.arange(STEP, length, STEP):
                nearer = target + along / length * (point - target)
                if not self.clear(pos, nearer):
                    break
                farthest = nearer
            return farthest
        return target

    def base_action(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """The action in the maze's own units."""
        o = obs["observation"]
        pos, vel = o[0:2], o[2:4]
        target = self.waypoint(pos, np.asarray(obs["desired_goal"]))
        force = self.kd * (np.clip(self.kp * (target - pos), -self.vmax, self.vmax) - vel)
        return np.clip(force, self.base_low, self.base_high)

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        fraction = (self.base_action(obs) - self.base_low) / (self.base_high - self.base_low)
        action = self.space.low + fraction * (self.space.high - self.space.low)
        return np.clip(action, self.space.low, self.space.high).astype(self.space.dtype)


def make_env(env_id: str = "PointMaze_UMaze-v3", max_episode_steps: int = 100, scale: float | None = 2.0,
             **kwargs: Any) -> gym.Env:
    """The maze as the benchmark trains on it: episodic (ends at the goal), its actions rescaled to
    ``[-scale, scale]`` (``None``: its own ``[-1, 1]``), its ``success`` also given as ``is_success``."""
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    env = gym.make(env_id, max_episode_steps=max_episode_steps, continuing_task=False, **kwargs)
    if scale is not None:
        env = gym.wrappers.RescaleAction(env, np.float64(-scale), np.float64(scale))
    return IsSuccess(env)


class IsSuccess(gym.Wrapper):
    """PointMaze's ``info["success"]`` also as ``info["is_success"]``, the key SB3 and sb3_hir read."""

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {**info, "is_success": bool(info["success"])}


def maze_demos(env: gym.Env, n_episodes: int, seed: int) -> list[Episode]:
    """``n_episodes`` episodes of the expert on ``env``, seeded ``seed``, ``seed + 1``, ...: the env's
    observations, actions in its units, rewards, terminations and time-limit truncations, and ``is_success``."""
    expert = PointMazeExpert(env)
    return [Episode.record(env, expert, seed=seed + i, info_keys=("is_success",)) for i in range(n_episodes)]
