"""A drop-in SB3 replay buffer for hindsight instruction relabeling (HIR).

HIR generalises HER from one goal to an instruction of ``k`` goals reached in order (AMAGO,
arXiv 2310.09971, App. B). :class:`HindsightInstructionReplayBuffer` is a SB3
:class:`~stable_baselines3.common.buffers.DictReplayBuffer`, so DQN, QR-DQN, SAC, TQC, TD3 and DDPG use
it unchanged through ``replay_buffer_class``.

Design: relabel once per finished episode, at its end, and store the result with every transition.

* ``add()`` stores the transition exactly as ``DictReplayBuffer`` does (SB3 already passes the terminal
  observation as ``next_obs`` and marks time-limit truncations in ``timeouts``). When sub-env ``i``
  finishes an episode, its transitions are gathered from the circular storage into an
  :class:`~sb3_hir.episodes.Episode` and the relabeler draws one new instruction for it
  (``relabel_goals``; ``None`` keeps the episode as recorded).
* The draw is stored compactly per transition: ``relabel_goals`` (the episode's relabeled instruction)
  and ``relabel_counts[..., 0]`` / ``[..., 1]`` = ``c_t`` / ``c_{t+1}``, the number of relabeled goals
  reached before and after the transition (int8; ``-1`` = not relabeled, e.g. an unfinished episode).
* ``sample()`` costs O(batch): each sampled transition that carries relabel data is served, with
  probability ``relabel_ratio``, under the relabeled instruction, a pure function of its own row: goals
  ``where(arange(k) < c, mask_value, relabel_goals)`` (``c_{t+1}`` for the next observation), reward
  ``goal_reward * (c_{t+1} - c_t)`` and done ``c_{t+1} == k`` (or a recorded termination the goals did
  not cause, kept as :meth:`~sb3_hir.relabel.InstructionRelabeler.replay` keeps it); relabeled
  transitions are never time-outs. Transitions with ``c_t == k`` lie past the relabeled episode's end
  and, like all others, are served exactly as ``DictReplayBuffer`` serves them.

Because relabel data lives on the transition, an episode partly overwritten by the circular wrap-around
stays correct, and an episode still running is never sampled half-relabeled. Goal counts are computed on
the next observations of the episode's transitions (``[obs_0, next_obs_0, ..., next_obs_{T-1}]``), so
every relabeled transition is consistent even when an episode was spliced (``learn()`` resetting the env
without a ``done``). Compared with HER's sample-time relabeling this spends one relabeling draw per
episode instead of one per sample, and never scans the buffer. Episodes longer than the per-env buffer
cannot be relabeled (their start was overwritten); they are kept as recorded, with a warning.

Recommended setup (the policy sees the observation and the instruction; "achieved" is only for
relabeling)::

    from stable_baselines3 import DQN
    from sb3_hir.buffers import HindsightInstructionReplayBuffer
    from sb3_hir.extractors import KeySelectExtractor

    model = DQN(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HindsightInstructionReplayBuffer,
        replay_buffer_kwargs=dict(strategy="some", relabel_ratio=0.8),
        policy_kwargs=dict(
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
        ),
    )
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from sb3_hir import plugins
from sb3_hir.episodes import Episode
from sb3_hir.goals import GoalSpec
from sb3_hir.relabel import InstructionRelabeler

__all__ = ["HindsightInstructionReplayBuffer"]


#: What the buffer calls on a relabeler (the ``"relabeler"`` hook's contract).
_RELABELER_API = ("num_goals", "goal_spec", "relabel_goals", "reach_steps", "reach_counts")


def _count_dtype(num_goals: int) -> type[np.signedinteger]:
    """Smallest signed integer type holding -1..k, so the per-transition counts cost 2 bytes for small k."""
    if num_goals <= np.iinfo(np.int8).max:
        return np.int8
    if num_goals <= np.iinfo(np.int16).max:
        return np.int16
    return np.int32


class HindsightInstructionReplayBuffer(DictReplayBuffer):
    """Replay buffer that serves finished episodes under hindsight instructions (see the module docstring).

    Pass it as ``replay_buffer_class`` of any SB3 / sb3-contrib off-policy algorithm; the extra
    arguments go in ``replay_buffer_kwargs``.

    :param buffer_size: max number of transitions (split over ``n_envs`` as in SB3).
    :param observation_space: Dict space carrying the goal spec's goals and achieved keys.
    :param action_space: action space.
    :param device: PyTorch device of the sampled tensors.
    :param n_envs: number of parallel environments.
    :param optimize_memory_usage: not supported (as for ``DictReplayBuffer``); must be False.
    :param handle_timeout_termination: serve recorded time-limit truncations as non-terminal (SB3's default).
    :param relabeler: relabeler plugin name (e.g. ``"hindsight-instruction"``) or an
        :class:`~sb3_hir.relabel.InstructionRelabeler` instance (then ``strategy``, ``goal_spec`` and
        ``relabeler_kwargs`` are not used and the instance's goal spec applies).
    :param strategy: how many hindsight goals to draw (``"some"``, ``"all"`` or ``"none"``), passed to a named
        relabeler that takes one; None (the default) keeps the relabeler's own default, ``"some"`` for
        ``"hindsight-instruction"``, so relabelers without strategies (e.g. ``"final-goal"``) work by name.
    :param goal_spec: goal spec plugin name (``"exact"``, ``"tolerance"``) or a
        :class:`~sb3_hir.goals.GoalSpec`.
    :param relabel_ratio: probability that a sampled transition of a relabeled episode is served
        relabeled; the rest (and all transitions of episodes kept as recorded) are served as recorded.
    :param relabeler_kwargs: extra keyword arguments of a named relabeler.
    :param seed: seed of the relabeling generator; None draws it from ``np.random``, which SB3 seeds from the
        model's ``seed``.
    """

    relabeler: InstructionRelabeler
    goal_spec: GoalSpec

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        relabeler: str | InstructionRelabeler = "hindsight-instruction",
        strategy: str | None = None,
        goal_spec: str | GoalSpec = "exact",
        relabel_ratio: float = 0.8,
        relabeler_kwargs: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        if optimize_memory_usage:
            raise ValueError(
                "optimize_memory_usage must be False: HindsightInstructionReplayBuffer is a "
                "DictReplayBuffer, which does not support the memory-efficient variant"
            )
        if isinstance(relabel_ratio, bool) or not isinstance(relabel_ratio, (int, float, np.number)) or not (
            0.0 <= float(relabel_ratio) <= 1.0
        ):
            raise ValueError(f"relabel_ratio must be a number in [0, 1]; got {relabel_ratio!r}")
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)) or buffer_size < 1:
            raise ValueError(f"buffer_size must be an int >= 1; got {buffer_size!r}")
        if isinstance(n_envs, bool) or not isinstance(n_envs, (int, np.integer)) or n_envs < 1:
            raise ValueError(f"n_envs must be an int >= 1; got {n_envs!r}")
        if relabeler_kwargs is not None and not isinstance(relabeler_kwargs, dict):
            raise ValueError(
                f"relabeler_kwargs must be a dict or None; got {type(relabeler_kwargs).__name__}"
            )

        resolved_relabeler = self._resolve_relabeler(
            relabeler, observation_space, strategy, goal_spec, relabeler_kwargs or {}
        )
        spec = resolved_relabeler.goal_spec
        num_goals, goal_shape = spec.validate_space(observation_space)
        if int(resolved_relabeler.num_goals) != num_goals:
            raise ValueError(
                f"relabeler has num_goals={resolved_relabeler.num_goals} but observation_space"
                f"[{spec.goals_key!r}] holds {num_goals} goals"
            )

        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device=device,
            n_envs=n_envs,
            optimize_memory_usage=False,
            handle_timeout_termination=handle_timeout_termination,
        )
        self.relabeler = resolved_relabeler
        self.goal_spec = spec
        self.num_goals = num_goals
        self.goal_shape = goal_shape
        self.relabel_ratio = float(relabel_ratio)
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        self.seed = seed
        self.rng = np.random.default_rng(seed)

        goals_dtype = observation_space[spec.goals_key].dtype
        rows = (self.buffer_size, self.n_envs)
        self.relabel_goals = np.zeros((*rows, num_goals, *goal_shape), dtype=goals_dtype)
        # [..., 0] = c_t, [..., 1] = c_{t+1}: one array, so add() invalidates a row with a single write.
        self.relabel_counts = np.full((*rows, 2), -1, dtype=_count_dtype(num_goals))
        self._init_episode_bookkeeping()
        self._warned_too_long = False

    # -- construction helpers ---------------------------------------------------------------------
    @staticmethod
    def _resolve_relabeler(
        relabeler: str | InstructionRelabeler,
        observation_space: spaces.Space,
        strategy: str | None,
        goal_spec: str | GoalSpec,
        relabeler_kwargs: dict[str, Any],
    ) -> InstructionRelabeler:
        if not isinstance(relabeler, str):
            missing = [name for name in _RELABELER_API if not hasattr(relabeler, name)]
            if missing:
                raise ValueError(
                    "relabeler must be a relabeler plugin name (str) or a relabeler such as an "
                    f"InstructionRelabeler; {type(relabeler).__name__} lacks {', '.join(missing)}"
                )
            return relabeler
        if isinstance(goal_spec, str):
            try:
                spec = plugins.create("goal_spec", goal_spec)
            except plugins.UnknownComponentError as exc:
                raise ValueError(f"goal_spec: {exc}") from exc
        elif isinstance(goal_spec, GoalSpec):
            spec = goal_spec
        else:
            raise ValueError(
                "goal_spec must be a goal spec plugin name (str) or a GoalSpec; "
                f"got {type(goal_spec).__name__}"
            )
        num_goals, _ = spec.validate_space(observation_space)
        if strategy is not None:
            relabeler_kwargs = {"strategy": strategy, **relabeler_kwargs}
        try:
            created = plugins.resolve(
                "relabeler", relabeler, num_goals=num_goals, goal_spec=spec, **relabeler_kwargs
            )
        except plugins.UnknownComponentError as exc:
            raise ValueError(f"relabeler: {exc}") from exc
        missing = [name for name in _RELABELER_API if not hasattr(created, name)]
        if missing:
            raise ValueError(
                f"relabeler plugin {relabeler!r} built a {type(created).__name__}, which lacks "
                f"{', '.join(missing)} (subclass sb3_hir.relabel.InstructionRelabeler)"
            )
        return created

    def _init_episode_bookkeeping(self) -> None:
        # Plain Python ints: add() touches them every step and Python arithmetic beats 0-d numpy here.
        self._num_adds = 0
        self._episode_start = [0] * self.n_envs  # value of _num_adds when the running episode started

    @property
    def relabel_count(self) -> np.ndarray:
        """``c_t`` per stored transition, shape ``(buffer_size, n_envs)``; -1 = not relabeled (a view)."""
        return self.relabel_counts[..., 0]

    @property
    def relabel_next_count(self) -> np.ndarray:
        """``c_{t+1}`` per stored transition, shape ``(buffer_size, n_envs)``; -1 = not relabeled (a view)."""
        return self.relabel_counts[..., 1]

    def reset(self) -> None:
        super().reset()
        self.relabel_counts.fill(-1)
        self._init_episode_bookkeeping()

    # -- storage ----------------------------------------------------------------------------------
    def add(  # type: ignore[override]
        self,
        obs: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        # The row is about to hold a transition of a running episode: drop whatever relabel data it had.
        self.relabel_counts[self.pos] = -1
        super().add(obs, next_obs, action, reward, done, infos)
        self._num_adds += 1
        done = np.asarray(done)
        if np.count_nonzero(done):  # cheaper than done.any() on the per-step path
            for env_idx in np.flatnonzero(done.reshape(self.n_envs)):
                self._end_episode(int(env_idx))

    def _end_episode(self, env_idx: int) -> None:
        """Close the running episode of sub-env ``env_idx`` (its last transition was just stored)."""
        length = self._num_adds - self._episode_start[env_idx]
        self._episode_start[env_idx] = self._num_adds
        # pos already points past the last transition of the episode.
        self._relabel_stored_episode(env_idx, (self.pos - length) % self.buffer_size, length)

    def _relabel_stored_episode(self, env_idx: int, start: int, length: int) -> None:
        """Draw one instruction for the ``length`` transitions stored from row ``start`` of ``env_idx``."""
        if length < 1:
            return
        if length > self.buffer_size:
            if not self._warned_too_long:
                warnings.warn(
                    f"an episode of {length} steps is longer than the replay buffer holds per env "
                    f"({self.buffer_size}); such episodes are stored as recorded, without relabeling. "
                    "Increase buffer_size to relabel them.",
                    stacklevel=3,
                )
                self._warned_too_long = True
            return
        episode = self._stored_episode(env_idx, start, length)
        goals = self.relabeler.relabel_goals(episode, self.rng)
        if goals is None:
            return
        spec = self.goal_spec
        achieved = spec.achieved_values(episode.observations[spec.achieved_key], self.goal_shape)
        steps = self.relabeler.reach_steps(achieved, goals)
        counts = self.relabeler.reach_counts(steps, length)
        rows = (start + np.arange(length)) % self.buffer_size
        self.relabel_goals[rows, env_idx] = goals
        self.relabel_counts[rows, env_idx, 0] = counts[:-1]
        self.relabel_counts[rows, env_idx, 1] = counts[1:]

    def _stored_episode(self, env_idx: int, start: int, length: int) -> Episode:
        """The stored episode, with observations ``[obs_0, next_obs_0, ..., next_obs_{T-1}]``."""
        rows = (start + np.arange(length)) % self.buffer_size
        observations = {
            key: np.concatenate((obs[rows[:1], env_idx], self.next_observations[key][rows, env_idx]))
            for key, obs in self.observations.items()
        }
        timeouts = self.timeouts[rows, env_idx].astype(bool)
        dones = self.dones[rows, env_idx].astype(bool)
        # Only the last step can be done; a splice (a new learn() call) leaves no flag inside the episode.
        return Episode(
            observations=observations,
            actions=self.actions[rows, env_idx],
            rewards=self.rewards[rows, env_idx],
            terminated=dones & ~timeouts,
            truncated=dones & timeouts,
        )

    # -- sampling ---------------------------------------------------------------------------------
    def _get_samples(  # type: ignore[override]
        self,
        batch_inds: np.ndarray,
        env: VecNormalize | None = None,
    ) -> DictReplayBufferSamples:
        # Same draws and values as DictReplayBuffer._get_samples, but gathered with np.take on flattened
        # (row * n_envs + env) indices: cheaper than 2-D fancy indexing, which pays for the relabeling below.
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        flat = batch_inds * self.n_envs + env_indices if self.n_envs > 1 else np.asarray(batch_inds)
        obs = {key: _take(arr, flat) for key, arr in self.observations.items()}
        next_obs = {key: _take(arr, flat) for key, arr in self.next_observations.items()}
        rewards = _take(self.rewards, flat)
        dones = _take(self.dones, flat) * (1 - _take(self.timeouts, flat))

        if self.relabel_ratio > 0.0:
            counts = _take(self.relabel_counts, flat)
            # c_t in 0..k-1 <=> relabeled and not past the relabeled episode's end (-1 wraps to the top).
            eligible = counts[:, 0].view(_UNSIGNED[counts.dtype.type]) < self.num_goals
            if self.relabel_ratio < 1.0:
                eligible &= self.rng.random(len(flat)) < self.relabel_ratio
            idx = np.flatnonzero(eligible)
            if len(idx):
                self._apply_relabel(idx, flat[idx], counts[idx], obs, next_obs, rewards, dones)

        obs_ = self._normalize_obs(obs, env)
        next_obs_ = self._normalize_obs(next_obs, env)
        assert isinstance(obs_, dict) and isinstance(next_obs_, dict)
        return DictReplayBufferSamples(
            observations={key: self.to_torch(value) for key, value in obs_.items()},
            actions=self.to_torch(_take(self.actions, flat)),
            next_observations={key: self.to_torch(value) for key, value in next_obs_.items()},
            dones=self.to_torch(dones).reshape(-1, 1),
            rewards=self.to_torch(self._normalize_reward(rewards.reshape(-1, 1), env)),
        )

    def _apply_relabel(
        self,
        idx: np.ndarray,
        flat: np.ndarray,
        counts: np.ndarray,
        obs: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        rewards: np.ndarray,
        dones: np.ndarray,
    ) -> None:
        """Overwrite batch entries ``idx`` in place with their relabeled version (see module docstring)."""
        spec = self.goal_spec
        key = spec.goals_key
        goals = _take(self.relabel_goals, flat)
        masks = self._slot_masks  # masks[c] = (arange(k) < c), shaped to broadcast over one goal
        now, after = counts[:, 0], counts[:, 1]
        recorded_done = dones[idx]
        if recorded_done.any():
            # A recorded termination the instruction did not cause (goals not all masked, e.g. a fall) stays
            # terminal, as in InstructionRelabeler.replay; only an episode's last transition can carry one.
            recorded_done = (recorded_done > 0) & ~spec.is_masked(next_obs[key][idx]).all(axis=1)
            dones[idx] = (after == self.num_goals) | recorded_done
        else:
            dones[idx] = after == self.num_goals
        obs[key][idx] = np.where(masks[now], spec.mask_value, goals)
        next_obs[key][idx] = np.where(masks[after], spec.mask_value, goals)
        rewards[idx] = spec.goal_reward * (after - now)

    @property
    def _slot_masks(self) -> np.ndarray:
        """``(k+1, k, 1, ..., 1)`` bool table: row c masks the goals reached after c of them."""
        masks = self.__dict__.get("_slot_masks_cache")
        if masks is None:
            k = self.num_goals
            masks = np.arange(k)[None, :] < np.arange(k + 1)[:, None]
            masks = masks.reshape(masks.shape + (1,) * len(self.goal_shape))
            self.__dict__["_slot_masks_cache"] = masks
        return masks


#: unsigned twin of each count dtype: viewing c_t through it sends -1 above every valid count.
_UNSIGNED: dict[type, type] = {np.int8: np.uint8, np.int16: np.uint16, np.int32: np.uint32}


def _take(array: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """Rows ``flat`` of a ``(buffer_size, n_envs, ...)`` array, indexing rows and envs as one axis."""
    return array.reshape(-1, *array.shape[2:]).take(flat, axis=0)
