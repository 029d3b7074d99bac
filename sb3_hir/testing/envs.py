"""Toy GoalEnvs for tests and benchmarks, shipped once (as SB3 ships ``stable_baselines3.common.envs``).

Buffer tests need a GoalEnv that is cheap, seeded and easy to reason about; each test file used to write its own
point-reach env, with its own step size, reward convention and dtype, and a benchmark's results depended on one of
them. :class:`PointReachEnv` is that env once, configurable enough to reproduce each of those copies bit for bit
(``tests/testing/test_envs.py`` checks it against them), so a test states its variant in its arguments.
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_hir._validate import check_choice, check_number

__all__ = ["PointReachEnv"]

#: The two sparse conventions: gymnasium-robotics' Fetch and SB3's HER tests (-1 until reached, then 0), and
#: PointMaze's (0 until reached, then 1).
REWARDS = ("-1/0", "0/1")


class PointReachEnv(gym.Env):
    """A point in ``[-1, 1]^2`` moved toward a goal; success is being within ``distance_threshold`` of it.

    gymnasium-robotics' GoalEnv API: ``observation``, ``achieved_goal`` (both the position) and ``desired_goal``,
    a batched ``compute_reward``, ``compute_terminated`` and ``compute_truncated``. It subclasses ``gym.Env``, not
    gymnasium-robotics' ``GoalEnv``, so that ``sb3_hir.testing`` does not need gymnasium-robotics.

    The position and the goal are drawn uniformly from ``np_random`` at reset (position first), so a seed fixes
    the episode; each step moves the point by ``step_size * action`` and clips it to the square.

    :param step_size: distance moved per unit of action.
    :param action_bound: continuous actions are ``Box(-action_bound, action_bound, (2,))`` (``2.0`` makes a space
        that is not SB3's [-1, 1], so stored actions differ from the env's) and are clipped to it, as Fetch clips.
    :param distance_threshold: the success radius, read by buffers as gymnasium-robotics' attribute (0 reaches the
        goal only exactly, so an episode in continuous space practically never succeeds).
    :param reward: ``"-1/0"`` (Fetch's) or ``"0/1"`` (PointMaze's), in ``dtype``; ``"-1/0"`` gives ``-0.0`` at
        the goal, as ``-(distance > threshold)`` does in those envs.
    :param terminate_on_success: whether reaching the goal ends the episode (``compute_terminated`` says so).
    :param discrete: four moves (+x, -x, +y, -y) as ``Discrete(4)``, the action space DQN takes.
    :param dtype: of the observations, goals and rewards; actions are always float32, as SB3 stores them.
    :param min_goal_distance: goals are redrawn while within this distance of the start (``None``: never), so
        that no episode starts solved.
    :param report_success: ``info["is_success"]`` at reset and at every step, as gymnasium-robotics reports it.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    #: The four moves of ``discrete=True``: +x, -x, +y, -y.
    MOVES = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float32)

    def __init__(
        self,
        step_size: float = 0.3,
        action_bound: float = 1.0,
        distance_threshold: float = 0.25,
        reward: Literal["-1/0", "0/1"] = "-1/0",
        terminate_on_success: bool = True,
        discrete: bool = False,
        dtype: type[np.floating] | np.dtype = np.float32,
        min_goal_distance: float | None = None,
        report_success: bool = True,
    ) -> None:
        self.step_size = check_number(step_size, "step_size", 0.0, open_low=True)
        self.action_bound = check_number(action_bound, "action_bound", 0.0, open_low=True)
        self.radius = check_number(distance_threshold, "distance_threshold", 0.0)
        self.reward = check_choice(reward, "reward", REWARDS)
        self.dtype = np.dtype(check_choice(np.dtype(dtype), "dtype", [np.dtype(np.float32), np.dtype(np.float64)]))
        self.min_goal_distance = (
            None if min_goal_distance is None else check_number(min_goal_distance, "min_goal_distance", 0.0)
        )
        self.terminate_on_success, self.discrete, self.report_success = terminate_on_success, discrete, report_success
        box = spaces.Box(-1.0, 1.0, shape=(2,), dtype=self.dtype)
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        if discrete:
            self.action_space: spaces.Space = spaces.Discrete(len(self.MOVES))
        else:
            self.action_space = spaces.Box(-self.action_bound, self.action_bound, shape=(2,), dtype=np.float32)
        self._moves = self.MOVES.astype(self.dtype)

    @property
    def distance_threshold(self) -> float:
        """The success radius under gymnasium-robotics' name. A property, so that a test's subclass can hide it
        (``distance_threshold = None``), as panda-gym keeps its radius on ``env.task``, and still reach by it."""
        return self.radius

    def _distance(self, achieved_goal: Any, desired_goal: Any) -> np.ndarray:
        return np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        """The reward of each goal pair, batched over leading axes as HER's relabeling calls it; ``info`` is unread,
        so a subclass can give it a part to play."""
        distance = self._distance(achieved_goal, desired_goal)
        if self.reward == "0/1":
            return (distance <= self.radius).astype(self.dtype)
        return -(distance > self.radius).astype(self.dtype)

    def compute_terminated(self, achieved_goal: Any, desired_goal: Any, info: Any) -> bool:
        """Whether reaching ``desired_goal`` ends the episode: buffers probe it to serve relabeled successes as
        terminal only where the env would have ended there."""
        return bool(self.terminate_on_success and (self._distance(achieved_goal, desired_goal) <= self.radius).all())

    def compute_truncated(self, achieved_goal: Any, desired_goal: Any, info: Any) -> bool:
        return False  # time limits come from a TimeLimit wrapper

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1.0, 1.0, size=2).astype(self.dtype)
        self.goal = self.np_random.uniform(-1.0, 1.0, size=2).astype(self.dtype)
        while self.min_goal_distance is not None and self._distance(self.pos, self.goal) <= self.min_goal_distance:
            self.goal = self.np_random.uniform(-1.0, 1.0, size=2).astype(self.dtype)
        return self._obs(), {"is_success": False} if self.report_success else {}

    def step(self, action: Any):
        if self.discrete:
            move = self._moves[int(action)]
        else:
            move = np.clip(np.asarray(action, dtype=self.dtype), -self.action_bound, self.action_bound)
        self.pos = np.clip(self.pos + self.step_size * move, -1.0, 1.0).astype(self.dtype)
        success = bool(self._distance(self.pos, self.goal) <= self.radius)
        info = {"is_success": success} if self.report_success else {}
        reward = float(self.compute_reward(self.pos, self.goal, info))
        return self._obs(), reward, self.compute_terminated(self.pos, self.goal, info), False, info
