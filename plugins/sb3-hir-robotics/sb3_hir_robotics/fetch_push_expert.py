"""A scripted controller for gymnasium-robotics' FetchPush, the demonstrations of ``bench_her_dropin.py --suite push``.

Three phases per episode, from the observation alone (gripper position ``obs[0:3]``, object position ``obs[3:6]``,
the desired goal): move above the point 7 cm behind the object on the line from the goal through the object, go
down to the object's height, then push. While pushing, the gripper aims 6 cm ahead of the contact point, on the
object-to-goal line recomputed each step, so it steers the object back onto the line as it drifts. When the object
slips sideways (more than 3 cm off the line) or the gripper passes it, the controller goes back to the first phase.
The gripper stays closed.

On FetchPush-v4 it succeeds in 50 of 50 episodes (seeds 0-49): ``python benchmarks/fetch_push_expert.py``.

Registered as the expert plugin ``"fetch-push-scripted"`` (a DAgger teacher,
:mod:`sb3_hir_robotics.scripted_experts`); ``bench_her_dropin.py --suite push`` and ``bench_demos_box.py --env push``
take its demonstrations, and ``benchmarks/fetch_push_expert.py`` measures its success rate.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from sb3_hir import Episode

__all__ = ["ScriptedPusher", "push_demos", "push_env_id"]

#: gripper positions, in metres from the object's centre along the object-to-goal line
BEHIND, CONTACT, AHEAD = 0.07, 0.045, 0.06
#: height above the object at which the gripper moves behind it; off-line distance that restarts the approach
ABOVE, OFF_LINE = 0.1, 0.03
GAIN = 10.0


class ScriptedPusher:
    """One episode's controller: call it with each observation of the episode (``reset`` starts a new one)."""

    def __init__(self) -> None:
        self.phase = 0

    def reset(self) -> None:
        self.phase = 0

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        o = obs["observation"]
        grip, block, goal = o[0:3], o[3:6], obs["desired_goal"]
        to_goal = goal[:2] - block[:2]
        dist = float(np.linalg.norm(to_goal))
        u = to_goal / max(dist, 1e-6)
        behind = block[:2] - BEHIND * u
        rel = grip[:2] - block[:2]
        along = float(rel @ u)
        lateral = float(np.linalg.norm(rel - along * u))
        action = np.zeros(4, dtype=np.float32)
        action[3] = -1.0
        if self.phase == 2 and (lateral > OFF_LINE or along > -0.02):
            self.phase = 0
        if self.phase == 0:
            target = np.array([*behind, block[2] + ABOVE])
            if np.linalg.norm(grip[:2] - behind) < 0.015:
                self.phase = 1
        if self.phase == 1:
            target = np.array([*behind, block[2]])
            if abs(grip[2] - block[2]) < 0.015:
                self.phase = 2
        if self.phase == 2:
            if dist < 0.01:
                return action
            target = np.array([*(block[:2] - (CONTACT - min(AHEAD, dist)) * u), block[2]])
        action[:3] = np.clip(GAIN * (target - grip), -1.0, 1.0)
        return action


def push_env_id() -> str:
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    return max(e for e in gym.registry if e.startswith("FetchPush-v"))


def push_demos(n_episodes: int, seed: int) -> list[Episode]:
    """``n_episodes`` episodes of the controller, seeded ``seed``, ``seed + 1``, ...: the env's observations,
    rewards, terminations and time-limit truncations, as the training env records them."""
    env = gym.make(push_env_id())
    pusher = ScriptedPusher()
    episodes = []
    for i in range(n_episodes):
        pusher.reset()
        episodes.append(Episode.record(env, pusher, seed=seed + i, info_keys=("is_success",)))
    env.close()
    return episodes
