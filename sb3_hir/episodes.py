"""One finished (or cut) episode with Dict observations, the unit relabelers work on.

:class:`Episode` keeps gymnasium's per-step ``terminated`` / ``truncated`` split, which relabeling needs
(a goal reached makes a transition terminal; a time limit does not) and which imitation's
:class:`~imitation.data.types.TrajectoryWithRew` folds into a single ``terminal`` flag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_hir.extras import require

if TYPE_CHECKING:
    import gymnasium as gym
    from imitation.data.types import TrajectoryWithRew

__all__ = ["Episode"]

#: info key SB3's VecEnvs set on the last step of an episode cut by a time limit (and imitation keeps).
TIMEOUT_INFO_KEY = "TimeLimit.truncated"


@dataclass(eq=False)
class Episode:
    """T transitions: ``observations[key]`` has T+1 entries (the last one is the final observation).

    The one episode representation that relabelers, the replay buffer, the checks and DAgger share, so a relabeler
    written once works in all of them.

    Compared by identity (fields are arrays); arrays are coerced on construction, not copied when already right.

    :param observations: Dict observation, one array of shape ``(T+1, ...)`` per key.
    :param actions: shape ``(T, ...)``.
    :param rewards: shape ``(T,)``, stored as float32.
    :param terminated: shape ``(T,)`` bool; only the last step may be True.
    :param truncated: shape ``(T,)`` bool; only the last step may be True.
    :param infos: one info dict per transition, or None.
    """

    observations: dict[str, np.ndarray]
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    infos: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.observations, Mapping) or not self.observations:
            raise ValueError(
                "observations must be a non-empty dict of arrays of shape (T+1, ...), "
                f"got {type(self.observations)}"
            )
        self.actions = np.asarray(self.actions)
        if self.actions.ndim < 1 or len(self.actions) < 1:
            raise ValueError(f"actions must have shape (T, ...) with T >= 1, got {self.actions.shape}")
        length = len(self.actions)
        observations = {}
        for key, value in self.observations.items():
            value = np.asarray(value)
            if value.ndim < 1 or value.shape[0] != length + 1:
                raise ValueError(
                    f"observations[{key!r}] must have shape (T+1, ...) = ({length + 1}, ...) for T={length} "
                    f"actions, got {value.shape}"
                )
            observations[key] = value
        self.observations = observations
        self.rewards = np.asarray(self.rewards, dtype=np.float32)
        if self.rewards.shape != (length,):
            raise ValueError(f"rewards must have shape (T,) = ({length},), got {self.rewards.shape}")
        for name in ("terminated", "truncated"):
            flags = np.asarray(getattr(self, name))
            if flags.shape != (length,):
                raise ValueError(f"{name} must have shape (T,) = ({length},), got {flags.shape}")
            flags = flags.astype(bool, copy=False)
            if flags[:-1].any():
                raise ValueError(
                    f"{name} may only be True at the last step, got True at steps "
                    f"{np.flatnonzero(flags[:-1]).tolist()}"
                )
            setattr(self, name, flags)
        if self.infos is not None:
            self.infos = list(self.infos)
            if len(self.infos) != length:
                raise ValueError(f"infos must hold T = {length} dicts or be None, got {len(self.infos)}")

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def episode_return(self) -> float:
        """Undiscounted sum of rewards."""
        return float(self.rewards.sum(dtype=np.float64))

    def instruction(self, goals_key: str = "goals") -> np.ndarray:
        """The instruction the episode was given: the first goal observation, shape ``(k, *goal_shape)``."""
        if goals_key not in self.observations:
            raise ValueError(
                f"goals_key {goals_key!r} is not an observation key; keys: {list(self.observations)}"
            )
        return self.observations[goals_key][0]

    def to_trajectory(self) -> TrajectoryWithRew:
        """Convert to imitation's trajectory type (observations as :class:`~imitation.data.types.DictObs`).

        ``terminal`` is ``terminated[-1]``: a truncated episode is not terminal, so it round-trips through
        :meth:`from_trajectory`. Arrays are shared, not copied.
        """
        infos = None
        if self.infos is not None:
            infos = np.empty(len(self.infos), dtype=object)
            infos[:] = self.infos
        types = require("imitation.data.types", "Episode.to_trajectory")
        return types.TrajectoryWithRew(
            obs=types.DictObs(dict(self.observations)),
            acts=self.actions,
            infos=infos,
            terminal=bool(self.terminated[-1]),
            rews=self.rewards,
        )

    @classmethod
    def from_trajectory(cls, trajectory: TrajectoryWithRew) -> Episode:
        """Build an episode from imitation's trajectory type.

        The last step is truncated when the last info says so under SB3's ``"TimeLimit.truncated"`` key (what
        imitation's rollouts record, where every finished episode is ``terminal``); without that key it is
        truncated exactly when the trajectory is not terminal, the inverse of :meth:`to_trajectory`.
        """
        types = require("imitation.data.types", "Episode.from_trajectory")
        if not isinstance(trajectory, types.TrajectoryWithRew):
            raise ValueError(
                "trajectory must be an imitation.data.types.TrajectoryWithRew, "
                f"got {type(trajectory).__name__}"
            )
        if not isinstance(trajectory.obs, types.DictObs):
            raise ValueError(
                "trajectory.obs must be an imitation.data.types.DictObs (Episodes hold Dict observations), "
                f"got {type(trajectory.obs).__name__}"
            )
        length = len(trajectory.acts)
        infos = None if trajectory.infos is None else list(trajectory.infos)
        terminal = bool(trajectory.terminal)
        timeout = None
        if infos and isinstance(infos[-1], Mapping) and TIMEOUT_INFO_KEY in infos[-1]:
            timeout = bool(infos[-1][TIMEOUT_INFO_KEY])
        truncated_last = (not terminal) if timeout is None else timeout
        terminated_last = terminal and timeout is not True
        terminated = np.zeros(length, dtype=bool)
        truncated = np.zeros(length, dtype=bool)
        terminated[-1] = terminated_last
        truncated[-1] = truncated_last
        return cls(
            observations=trajectory.obs.unwrap(),
            actions=trajectory.acts,
            rewards=trajectory.rews,
            terminated=terminated,
            truncated=truncated,
            infos=infos,
        )

    @classmethod
    def record(cls, env: gym.Env, policy: Callable[[dict[str, np.ndarray]], Any], *, seed: int | None = None,
               info_keys: Sequence[str] = ()) -> Episode:
        """Play one episode of ``env`` from ``env.reset(seed=seed)``, acting ``policy(observation)``.

        How scripted experts become demonstrations: the env's own terminated / truncated flags are kept (a time
        limit stays a truncation), and ``info_keys`` of each step's info are kept (infos are ``None`` without).

        :raises ValueError: the env's observations are not dicts.
        """
        obs, _ = env.reset(seed=seed)
        if not isinstance(obs, Mapping):
            raise ValueError(f"env must have Dict observations to record an Episode, got {type(obs).__name__} "
                             f"observations from {env.observation_space}")
        seen: dict[str, list[np.ndarray]] = {key: [value] for key, value in obs.items()}
        actions, rewards, terminated, truncated, infos = [], [], [], [], []
        done = False
        while not done:
            action = policy(obs)
            obs, reward, term, trunc, info = env.step(action)
            done = bool(term or trunc)
            for key, value in obs.items():
                seen[key].append(value)
            actions.append(action)
            rewards.append(reward)
            terminated.append(term)
            truncated.append(trunc)
            infos.append({key: info[key] for key in info_keys if key in info})
        return cls({key: np.array(values) for key, values in seen.items()}, np.array(actions), np.array(rewards),
                   np.array(terminated), np.array(truncated), infos if info_keys else None)
