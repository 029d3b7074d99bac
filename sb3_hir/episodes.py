"""One finished (or cut) episode with Dict observations, the unit relabelers work on.

:class:`Episode` keeps gymnasium's per-step ``terminated`` / ``truncated`` split, which relabeling needs
(a goal reached makes a transition terminal; a time limit does not) and which imitation's
:class:`~imitation.data.types.TrajectoryWithRew` folds into a single ``terminal`` flag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from sb3_hir._validate import check_int, check_space_values, describe
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
    :param infos: one info dict (any Mapping) per transition, or None.
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
            for t, info in enumerate(self.infos):
                if not isinstance(info, Mapping):
                    raise ValueError(f"infos[{t}] must be a dict (a Mapping), got {type(info).__name__}")

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
               info_keys: Sequence[str] = (), max_steps: int | None = None) -> Episode:
        """Play one episode of ``env`` from ``env.reset(seed=seed)``, acting ``policy(observation)``.

        How scripted experts become demonstrations: the env's own terminated / truncated flags are kept (a time
        limit stays a truncation), and ``info_keys`` of each step's info are kept (infos are ``None`` without).
        Every action is checked against ``env.action_space`` before the env is stepped with it, so a demonstration
        never holds an action the learner could not take.

        :param info_keys: info keys to keep, e.g. ``("is_success",)`` (a sequence: a bare str would be its letters).
        :param max_steps: the most steps to play; when reached before the env ends, the last step is truncated, as
            gymnasium's ``TimeLimit`` marks it. Default: the ``max_episode_steps`` of a ``TimeLimit`` in the env's
            wrapper chain (or its ``spec``), so an env that never ends cannot fill memory.
        :raises ValueError: the env's observations are not dicts, no step limit is known, an argument is malformed,
            or the policy gives an action outside the action space.
        """
        if isinstance(info_keys, str) or not isinstance(info_keys, Sequence) \
                or not all(isinstance(key, str) for key in info_keys):
            hint = f"; to keep one key write ({info_keys!r},)" if isinstance(info_keys, str) else ""
            raise ValueError(f"info_keys must be a sequence of str info keys, such as ('is_success',); "
                             f"got {info_keys!r}{hint}")
        limit = _time_limit(env) if max_steps is None else check_int(max_steps, "max_steps", 1)
        if limit is None:
            raise ValueError(
                f"max_steps is needed: {type(env.unwrapped).__name__} has no TimeLimit wrapper or "
                "spec.max_episode_steps, so an episode that never ends would be recorded until memory runs out; "
                "pass max_steps=... or wrap the env in gymnasium.wrappers.TimeLimit"
            )
        obs, _ = env.reset(seed=seed)
        if not isinstance(obs, Mapping):
            raise ValueError(f"env must have Dict observations to record an Episode, got {type(obs).__name__} "
                             f"observations from {env.observation_space}")
        seen: dict[str, list[np.ndarray]] = {key: [value] for key, value in obs.items()}
        actions: list[Any] = []
        rewards: list[Any] = []
        terminated: list[Any] = []
        truncated: list[Any] = []
        infos: list[dict[str, Any]] = []
        done = False
        while not done:
            action = policy(cast(dict[str, np.ndarray], obs))  # a Dict space's observation (checked above)
            _check_action(action, env.action_space, f"policy's action at step {len(actions)}")
            obs, reward, term, trunc, info = env.step(action)
            if not (term or trunc) and len(actions) + 1 >= limit:
                trunc = True  # the cap reached: a time limit, as TimeLimit would mark it
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


def _time_limit(env: gym.Env) -> int | None:
    """The tightest ``TimeLimit`` in ``env``'s wrapper chain, else ``env.spec.max_episode_steps``, else None."""
    from gymnasium.wrappers import TimeLimit

    limits: list[int] = []
    current: Any = env
    while current is not None:
        if isinstance(current, TimeLimit):
            limits.append(int(current._max_episode_steps))
        current = getattr(current, "env", None)
    spec = getattr(env, "spec", None)
    if not limits and spec is not None and spec.max_episode_steps is not None:
        limits.append(int(spec.max_episode_steps))
    return min(limits) if limits else None


def _check_action(action: Any, space: gym.Space, name: str) -> None:
    """Refuse ``action`` unless ``space`` holds it: the shape, then the values (finite, integral, within bounds)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        if np.size(action) != 1:
            raise ValueError(f"{name} must be one int of {describe(space)}; got {action!r}")
    elif isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        if np.shape(action) != space.shape:
            raise ValueError(f"{name} must have the shape {space.shape} of {describe(space)}; "
                             f"got shape {np.shape(action)}")
    else:
        if not space.contains(action):
            raise ValueError(f"{name} must be in the action space {describe(space)}; got {action!r}")
        return
    check_space_values(np.asarray(action)[None], space, name, bounds=True)
