"""Policies as ``obs -> actions`` for a VecEnv, with a recurrent policy's state carried per sub-env.

imitation's ``rollout.policy_to_callable`` does the same conversion but calls ``predict`` with ``state=None`` on
every step, which resets a recurrent policy's memory each step; DAgger needs learners and experts with memory, so
:class:`PolicyRunner` keeps the state and resets it exactly where a sub-env's episode starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs

__all__ = ["PolicyRunner"]


def _known_statefulness(policy: Any) -> bool | None:
    """True for sb3-contrib's recurrent policies, False for SB3 policies that keep SB3's own stateless
    ``predict``, None otherwise (a first call on every sub-env tells)."""
    if isinstance(policy, BaseAlgorithm):
        policy = policy.policy
    if isinstance(policy, RecurrentActorCriticPolicy):
        return True
    if isinstance(policy, BasePolicy) and type(policy).predict is BasePolicy.predict:
        return False
    return None


class PolicyRunner:
    """Turns an SB3 policy/algorithm, a ``predict``-er (e.g. ``ShortestPathExpert``) or a plain
    ``callable(obs) -> actions`` into ``obs -> actions`` for a VecEnv, carrying recurrent state per sub-env.

    Call :meth:`observe_dones` after every step so that states reset at episode start.

    :param deterministic: ask ``predict`` for the mode; ``False`` samples (imitation's learners sample).
    """

    def __init__(self, policy: Any, num_envs: int, deterministic: bool = True) -> None:
        if isinstance(policy, PolicyRunner):
            raise ValueError("policy is already a PolicyRunner; pass it directly")
        self.policy = policy
        predict = getattr(policy, "predict", None)
        if callable(predict):
            self._predict: Callable[..., Any] | None = predict
        elif callable(policy):
            self._predict = None
        else:
            raise ValueError(
                "policy must be an SB3 policy or algorithm, an object with SB3's predict(observation, state, "
                f"episode_start, deterministic), or a callable(obs) -> actions; got {type(policy).__name__}"
            )
        self.num_envs = num_envs
        self.deterministic = deterministic
        self.state: tuple[np.ndarray, ...] | None = None
        self.episode_start = np.ones(num_envs, dtype=bool)
        #: Whether the policy carries a recurrent state: known for plain callables and SB3 policies, otherwise
        #: None until the first call tells.
        self.stateful: bool | None = _known_statefulness(policy) if self._predict is not None else False

    def reset(self) -> None:
        self.state = None
        self.episode_start = np.ones(self.num_envs, dtype=bool)

    def observe_dones(self, dones: np.ndarray) -> None:
        self.episode_start = np.asarray(dones, dtype=bool).copy()

    def __call__(self, obs: VecEnvObs, rows: np.ndarray | None = None) -> np.ndarray:
        """Actions for ``obs``, or for its ``rows`` only (sub-env indices), whose observations alone the policy
        gets; ``rows`` needs a stateless policy (:attr:`stateful` False), since a state covers every sub-env."""
        if rows is not None:
            if self.stateful is not False:
                raise ValueError("rows= needs a stateless policy: a recurrent state covers every sub-env")
            obs = {k: v[rows] for k, v in obs.items()} if isinstance(obs, Mapping) else obs[rows]
        if self._predict is not None:
            starts = self.episode_start if rows is None else self.episode_start[rows]
            acts, state = self._predict(
                obs, state=None if rows is not None else self.state, episode_start=starts,
                deterministic=self.deterministic,
            )
            if rows is None:
                self.state = state
            if self.stateful is None:
                self.stateful = state is not None
        else:
            acts = self.policy(obs)
            if isinstance(acts, tuple):
                acts = acts[0]
        return np.asarray(acts)

    def catch_up(self, observations: Iterable[VecEnvObs], episode_starts: Iterable[np.ndarray]) -> None:
        """Rebuild the recurrent state by feeding past observations (a runner that joins mid-episode).

        Stops after the first step when the policy turns out to be stateless, so feed-forward policies cost one
        call. ``episode_starts`` flags, per row, the sub-envs whose episode begins there.
        """
        if self._predict is None or self.stateful is False:
            return
        for obs, starts in zip(observations, episode_starts, strict=True):
            self.episode_start = np.asarray(starts, dtype=bool)
            self(obs)
            if not self.stateful:
                return
