"""Fixed-seed served batches of the replay buffers, one per sampling path, for the kernel-identity test.

``python tests/served_rows.py`` writes ``tests/data/served_rows.npz`` from the buffer as it is; that file was
written by the numpy implementation before the compiled sampling kernels existed, and ``test_served_rows.py``
checks that today's ``sample()`` serves exactly those rows (same draws, same values), on both sampling backends.

Each case fills a buffer through ``add()`` with a seeded random policy in a real env (MazeRunner, SB3's
BitFlippingEnv, a continuous point GoalEnv), small enough that the circular buffer wraps (overwritten episodes
included), then samples with fixed seeds of ``np.random`` and of the buffer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv

from sb3_hir.buffers import HerReplayBuffer, HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv

GOLDEN = Path(__file__).parent / "data" / "served_rows.npz"
BATCH = 64
CALLS = 4


class PointEnv(gym.Env):
    """Continuous GoalEnv: a point moved by ``0.3 * action``, -1/0 reward within 0.25 (Fetch's scale)."""

    distance_threshold = 0.25

    def __init__(self, terminate: bool) -> None:
        box = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.terminate = terminate

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(distance > self.distance_threshold).astype(np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self._obs(), {}

    def step(self, action):
        self.pos = np.clip(self.pos + 0.3 * np.asarray(action, dtype=np.float32), -1, 1).astype(np.float32)
        reward = float(self.compute_reward(self.pos, self.goal, None))
        return self._obs(), reward, bool(self.terminate and reward == 0.0), False, {}


def _maze(k: int) -> Any:
    return make_vec_env(lambda: MazeRunnerEnv(maze_dim=7, num_goals=k, time_limit=30), n_envs=2, seed=3)


def _point(terminate: bool) -> Any:
    return make_vec_env(lambda: gym.wrappers.TimeLimit(PointEnv(terminate), 15), n_envs=2, seed=3)


def _bitflip() -> Any:
    return make_vec_env(lambda: BitFlippingEnv(n_bits=4), n_envs=2, seed=3)


#: name -> (venv factory, buffer class, buffer kwargs, steps added per sub-env). Buffers hold 150 rows per env.
CASES: dict[str, tuple[Any, type, dict[str, Any], int]] = {
    "maze_k3_some_future": (lambda: _maze(3), HindsightInstructionReplayBuffer, {}, 260),
    "maze_k3_all_episode_nstep": (
        lambda: _maze(3), HindsightInstructionReplayBuffer,
        dict(hindsight_goals="all", goal_step="episode", n_steps=3, gamma=0.9), 260,
    ),
    "maze_k2_tolerance": (lambda: _maze(2), HindsightInstructionReplayBuffer, dict(goal_spec="tolerance"), 120),
    "maze_k1_some_future": (lambda: _maze(1), HindsightInstructionReplayBuffer, {}, 260),
    "maze_k1_all_final_nstep": (
        lambda: _maze(1), HindsightInstructionReplayBuffer,
        dict(hindsight_goals="all", goal_step="final", n_steps=2, gamma=0.9), 260,
    ),
    "maze_k1_none_episode": (
        lambda: _maze(1), HindsightInstructionReplayBuffer, dict(hindsight_goals="none", goal_step="episode"), 120,
    ),
    # terminate_on_success=None: the env decides (BitFlipping terminates on success), the path these rows were
    # written on when it was the default.
    "bitflip_future": (_bitflip, HerReplayBuffer, dict(n_sampled_goal=4, terminate_on_success=None), 260),
    "bitflip_episode_nstep": (
        _bitflip, HerReplayBuffer, dict(goal_selection_strategy="episode", n_steps=3, terminate_on_success=None), 260,
    ),
    "point_continuing_future": (lambda: _point(False), HerReplayBuffer, {}, 260),
    "point_continuing_final": (lambda: _point(False), HerReplayBuffer, dict(goal_selection_strategy="final"), 120),
    "point_terminating_episode_nstep": (
        lambda: _point(True), HerReplayBuffer,
        dict(terminate_on_success=True, goal_selection_strategy="episode", n_steps=2, gamma=0.9), 260,
    ),
    "point_terminating_future": (lambda: _point(True), HerReplayBuffer, dict(terminate_on_success=True), 260),
}


def filled_buffer(name: str, steps: int | None = None, size: int = 150,
                  after_add: Callable[[HindsightInstructionReplayBuffer, int], None] | None = None, **overrides: Any
                  ) -> HindsightInstructionReplayBuffer:
    """Case ``name``'s buffer (``size`` rows per env) after ``steps`` (default: the case's) of a seeded random
    policy, added as SB3's collection adds them; ``after_add(buffer, step)`` runs after each step's ``add`` (to
    sample while the buffer fills, as training does)."""
    make_venv, cls, kwargs, case_steps = CASES[name]
    steps = case_steps if steps is None else steps
    venv = make_venv()
    buffer = cls(size, venv.observation_space, venv.action_space, env=venv, n_envs=venv.num_envs, device="cpu",
                 seed=11, **{**kwargs, **overrides})
    rng = np.random.default_rng(5)
    obs = venv.reset()
    space = venv.action_space
    for step in range(steps):
        if isinstance(space, spaces.Discrete):
            actions = rng.integers(0, int(space.n), size=venv.num_envs)
        else:
            actions = rng.uniform(-1, 1, (venv.num_envs, *space.shape)).astype(np.float32)
        new_obs, rewards, dones, infos = venv.step(actions)
        next_obs = {key: value.copy() for key, value in new_obs.items()}
        for i in np.flatnonzero(dones):
            for key in next_obs:
                next_obs[key][i] = infos[i]["terminal_observation"][key]
        stored = actions if not isinstance(space, spaces.Discrete) else actions.reshape(-1, 1)
        buffer.add(obs, next_obs, stored, rewards, dones, infos)
        if after_add is not None:
            after_add(buffer, step)
        obs = new_obs
    return buffer


def served(buffer: HindsightInstructionReplayBuffer) -> dict[str, np.ndarray]:
    """``CALLS`` batches with ``np.random`` seeded as SB3 seeds it: every served tensor and ``last_sample_info``."""
    np.random.seed(7)
    out: dict[str, np.ndarray] = {}
    for call in range(CALLS):
        samples = buffer.sample(BATCH)
        fields = {"actions": samples.actions, "rewards": samples.rewards, "dones": samples.dones}
        if samples.discounts is not None:
            fields["discounts"] = samples.discounts
        for key in samples.observations:
            fields[f"obs.{key}"] = samples.observations[key]
            fields[f"next_obs.{key}"] = samples.next_observations[key]
        for name, value in fields.items():
            out[f"{call}/{name}"] = value.numpy()
        info = buffer.last_sample_info
        assert info is not None
        for name, value in info._asdict().items():
            if name == "reach":  # added after the golden rows were written; the served rewards and dones hold it
                continue
            out[f"{call}/info.{name}"] = np.asarray(value)
    return out


def main() -> None:
    arrays = {f"{name}/{key}": value for name in CASES for key, value in served(filled_buffer(name)).items()}
    GOLDEN.parent.mkdir(exist_ok=True)
    tmp = GOLDEN.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(GOLDEN)
    print(f"wrote {len(arrays)} arrays of {len(CASES)} cases to {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    main()
