"""``PointReachEnv`` reproduces, bit for bit, each point-reach GoalEnv that tests and benchmarks used to write.

The references below are those envs verbatim as they stood before they were replaced (``PlanarReachEnv`` from
``benchmarks/bench_goalenv_her.py``, whose results must stay reproducible; ``WideReach`` from
``tests/buffers/test_demonstrations_bad_input.py``; ``PointGoalEnv`` from ``tests/buffers/test_her_dropin.py``).
Each is stepped beside its replacement on seeded episodes, and every observation, reward (sign of zero included),
flag and info must agree byte for byte, as must batched ``compute_reward`` / ``compute_terminated``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from sb3_hir.testing import PointReachEnv

# ------------------------------------------------------------------------------------------ the frozen references


class PlanarReachEnv(gym.Env):  # benchmarks/bench_goalenv_her.py (a gymnasium_robotics GoalEnv there)
    metadata = {"render_modes": []}
    distance_threshold = 0.1

    def __init__(self) -> None:
        box = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return (distance <= self.distance_threshold).astype(np.float64)

    def compute_terminated(self, achieved_goal: Any, desired_goal: Any, info: Any) -> bool:
        return bool(self.compute_reward(achieved_goal, desired_goal, info))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1.0, 1.0, size=2)
        self.goal = self.pos
        while np.linalg.norm(self.goal - self.pos) <= 2 * self.distance_threshold:
            self.goal = self.np_random.uniform(-1.0, 1.0, size=2)
        return self._obs(), {"is_success": False}

    def step(self, action: Any):
        self.pos = np.clip(self.pos + 0.1 * np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0), -1.0, 1.0)
        obs = self._obs()
        reward = float(self.compute_reward(obs["achieved_goal"], self.goal, {}))
        return obs, reward, reward > 0, False, {"is_success": reward > 0}


class WideReach(gym.Env):  # tests/buffers/test_demonstrations_bad_input.py (a gymnasium_robotics GoalEnv there)
    metadata = {"render_modes": []}

    def __init__(self, radius: float = 0.1) -> None:
        box = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = spaces.Box(-2.0, 2.0, shape=(2,), dtype=np.float32)
        self.radius = radius

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return (distance <= self.radius).astype(np.float64)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1.0, 1.0, size=2)
        self.goal = self.np_random.uniform(-1.0, 1.0, size=2)
        return self._obs(), {"is_success": False}

    def step(self, action: Any):
        self.pos = np.clip(self.pos + 0.05 * np.asarray(action, dtype=np.float64), -1.0, 1.0)
        success = bool(self.compute_reward(self.pos, self.goal, {}))
        return self._obs(), float(success), False, False, {"is_success": success}


class PointGoalEnv(gym.Env):  # tests/buffers/test_her_dropin.py, without its info["scale"] twist (scale=1)
    radius = 0.25
    MOVES = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float32)

    def __init__(self, terminate: bool = True, discrete: bool = False) -> None:
        box = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = spaces.Discrete(4) if discrete else spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.terminate, self.discrete = terminate, discrete

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(distance > self.radius).astype(np.float32)

    def compute_terminated(self, achieved_goal: Any, desired_goal: Any, info: Any) -> bool:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return bool(self.terminate and (distance <= self.radius).all())

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self._obs(), {}

    def step(self, action):
        move = self.MOVES[int(action)] if self.discrete else np.asarray(action, dtype=np.float32)
        self.pos = np.clip(self.pos + 0.3 * move, -1, 1).astype(np.float32)
        reward = float(self.compute_reward(self.pos, self.goal, None))
        terminated = self.compute_terminated(self.pos, self.goal, {})
        return self._obs(), reward, terminated, False, {}


BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _registered_planar() -> PointReachEnv:
    """PlanarReach-v0 as bench_goalenv_her.py registers it (its own kwargs, checked here, not a copy of them)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    bench = importlib.import_module("bench_goalenv_her")
    return gym.make(bench.PLANAR_ID).unwrapped


WIDE = dict(step_size=0.05, action_bound=2.0, reward="0/1", terminate_on_success=False, dtype=np.float64)
POINT = dict(report_success=False)

#: name -> (reference, replacement); each pair built fresh per episode.
PAIRS: dict[str, tuple[Callable[[], gym.Env], Callable[[], PointReachEnv]]] = {
    "planar": (PlanarReachEnv, _registered_planar),
    "wide": (WideReach, lambda: PointReachEnv(distance_threshold=0.1, **WIDE)),
    "wide-radius-0": (lambda: WideReach(radius=0.0), lambda: PointReachEnv(distance_threshold=0.0, **WIDE)),
    "point": (PointGoalEnv, lambda: PointReachEnv(**POINT)),
    "point-endless": (lambda: PointGoalEnv(terminate=False), lambda: PointReachEnv(terminate_on_success=False,
                                                                                     **POINT)),
    "point-discrete": (lambda: PointGoalEnv(discrete=True), lambda: PointReachEnv(discrete=True, **POINT)),
}


def _same(a: Any, b: Any) -> bool:
    """Equal as bytes: arrays by dtype, shape and bytes; floats by their 8 bytes (so -0.0 is not 0.0)."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and a.tobytes() == b.tobytes())
    if isinstance(a, float) or isinstance(b, float):
        return type(a) is type(b) and np.float64(a).tobytes() == np.float64(b).tobytes()
    return type(a) is type(b) and a == b


def _policy(env: PointReachEnv, rng: np.random.Generator) -> Any:
    """Half random, half toward the goal, so that episodes reach it and both reward values are compared."""
    if rng.random() < 0.5:
        return env.action_space.sample()
    heading = env.goal - env.pos
    if isinstance(env.action_space, spaces.Discrete):
        axis = int(np.argmax(np.abs(heading)))
        return 2 * axis + int(heading[axis] < 0)  # MOVES: +x, -x, +y, -y
    return np.clip(heading / env.step_size, env.action_space.low, env.action_space.high).astype(np.float32)


@pytest.mark.parametrize("name", list(PAIRS))
def test_point_reach_env_reproduces_each_copy_byte_for_byte(name: str) -> None:
    make_reference, make_ours = PAIRS[name]
    successes = 0
    for seed in range(6):
        reference, ours = make_reference(), make_ours()
        assert isinstance(ours, PointReachEnv)
        assert ours.observation_space == reference.observation_space
        assert ours.action_space == reference.action_space
        for space in (ours.observation_space, ours.action_space):
            space.seed(seed)  # the action draws below come from ours; the reference gets the same actions
        rng = np.random.default_rng(seed)
        assert _same(ours.reset(seed=seed), reference.reset(seed=seed))
        for _ in range(40):
            action = _policy(ours, rng)
            got, want = ours.step(action), reference.step(action)
            assert _same(got, want), (name, seed, got, want)
            successes += bool(np.linalg.norm(ours.pos - ours.goal) <= ours.distance_threshold)
            if got[2]:
                break
        achieved = ours.observation_space["achieved_goal"].sample()[None].repeat(5, 0)
        desired = np.concatenate([achieved[:2], ours.observation_space["desired_goal"].sample()[None].repeat(3, 0)])
        assert _same(ours.compute_reward(achieved, desired, {}), reference.compute_reward(achieved, desired, {}))
        if hasattr(reference, "compute_terminated"):
            for goal in (achieved[0], desired[-1]):
                assert ours.compute_terminated(achieved[0], goal, {}) == reference.compute_terminated(
                    achieved[0], goal, {})
    if name != "wide-radius-0":  # radius 0: never reached in a continuous square
        assert successes > 0, "no episode reached its goal: the reward at the goal was never compared"
    reference, ours = make_reference(), make_ours()
    redrawn = 0
    for seed in range(200):  # resets alone, enough of them that PlanarReach redraws goals that start too close
        assert _same(ours.reset(seed=seed), reference.reset(seed=seed)), (name, seed)
        first = gym.utils.seeding.np_random(seed)[0].uniform(-1.0, 1.0, size=(2, 2))
        redrawn += bool(np.linalg.norm(first[1] - first[0]) <= 0.2)
    assert redrawn > 0
