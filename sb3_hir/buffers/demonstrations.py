"""Demonstrations: whole episodes kept apart from the circular storage and served as a share of every batch.

HER plus a demonstration buffer is the classic recipe for pushing and stacking from sparse reward (Nair et al.,
arXiv 1709.10089), and symmetric sampling (a fixed share of each batch from the demonstrations, as in RLPD, arXiv
2302.02948) needs no change to the algorithm. SB3 never shipped it (SB3 issues #249, #278).

The demonstrations are the sampler's second source (:class:`Demonstrations`, a :class:`~sb3_hir.buffers.source.Source`
of their own, built by the buffer's :class:`~sb3_hir.buffers.source.SourceBuilder`): rows of a plain
``DictReplayBuffer`` sized to hold them all and never wrapped, in the buffer's layout, with their own episode index,
generator and copy of the draw strategy. Online data cannot overwrite them, and they are relabeled, served and
n-stepped exactly as online episodes are, because the buffer's options, terminal rule and serving serve them
(:class:`~sb3_hir.buffers.mixture.Mixture`). A batch of ``B`` takes ``floor(B * demo_ratio)`` rows from
them, one more with probability of the remainder, so ``demo_ratio`` is the served share, with the least variance.

Sources (:func:`as_episodes`): :class:`~sb3_hir.episodes.Episode`\\ s, imitation ``TrajectoryWithRew`` lists (with
Dict observations, as :class:`~imitation.data.types.DictObs`), and DAgger round files or directories (a round file,
a round directory, or a scratch directory with ``demos/round-NNN/``). A DAgger trajectory is stored with the actions
that were executed, not the expert's labels, since those are what moved the env.
"""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.vec_env import VecEnv

from sb3_hir._validate import check_int, check_number, check_space_values, describe
from sb3_hir.buffers.source import Source, SourceBuilder
from sb3_hir.episodes import TIMEOUT_INFO_KEY, Episode
from sb3_hir.extras import require

__all__ = [
    "DemonstrationSource", "Demonstrations", "StoredSpaces", "as_episodes", "concat_samples", "prepare_episode",
    "stored_episodes", "to_buffer_units", "to_env_units",
]

#: What ``add_demonstrations`` takes: one source or an iterable of them.
DemonstrationSource = Any


class StoredSpaces(Protocol):
    """What a demonstration is checked against: the spaces the buffer stores (a
    :class:`~sb3_hir.buffers.source.SourceBuilder` or the buffer)."""

    observation_space: spaces.Dict
    action_space: spaces.Space

    @property
    def obs_shape(self) -> dict[str, tuple[int, ...]]: ...

    @property
    def action_dim(self) -> int: ...


class Demonstrations:
    """The demonstration region of a replay buffer: a second source of rows, served as ``ratio`` of each batch.

    :param ratio: share of each sampled batch served from the demonstrations (0: stored, never served).
    :param sources: builds the region's source with the buffer's settings (and checks episodes against its spaces).
    """

    def __init__(self, ratio: float, sources: SourceBuilder) -> None:
        self.ratio = ratio
        self.sources = sources
        #: the rows holding the demonstrations (one env, never wrapped); None until the first is added.
        self.source: Source | None = None
        self.num_episodes = 0
        #: whether ``count`` warned that ``ratio > 0`` serves nothing, since nothing was added (once per buffer).
        self.warned_empty = False

    @property
    def ratio(self) -> float:
        return self._ratio

    @ratio.setter
    def ratio(self, value: float) -> None:
        self._ratio = check_number(value, "demo_ratio", 0.0, 1.0, hint="the share of each batch from demonstrations")

    @property
    def num_transitions(self) -> int:
        return 0 if self.source is None else self.source.upper

    def __len__(self) -> int:
        return self.num_episodes

    def add(self, episodes: list[Episode], rng: np.random.Generator) -> None:
        """Store ``episodes``, all or none: every one is checked against the buffer's spaces first, and they are
        stored into a staged copy that replaces the region only once all are in, so a rejected call leaves the
        region, its counters and ``rng`` (the buffer's generator, which seeds a new region's) as they were."""
        prepared = [prepare_episode(episode, self.sources, number) for number, episode in enumerate(episodes)]
        if not prepared:
            return
        state = rng.bit_generator.state
        try:
            staged = self._staged(self.num_transitions + sum(len(episode) for episode in prepared), rng)
            for episode in prepared:
                add_episode(staged, episode)
        except BaseException:
            rng.bit_generator.state = state
            raise
        self.source = staged
        self.num_episodes += len(prepared)

    def _staged(self, needed: int, rng: np.random.Generator) -> Source:
        """A copy of the region with room for ``needed`` transitions: the same capacity if they fit, else a larger
        one holding the stored episodes again (the region never wraps)."""
        source = self.source
        if source is not None and needed <= source.storage.buffer_size:
            return self.sources.copy(source)
        capacity = max(needed, 2 * (0 if source is None else source.storage.buffer_size))
        staged = self.sources.demonstrations(capacity, int(rng.integers(2**31 - 1)))
        for episode in [] if source is None else stored_episodes(source, env_units=False):
            add_episode(staged, episode)
        return staged

    def count(self, batch_size: int, rng: np.random.Generator, online_empty: bool) -> int:
        """How many of ``batch_size`` rows the demonstrations serve: all of them while the online part is empty."""
        if self.source is None or self.ratio == 0.0:
            if self.source is None and self.ratio > 0.0 and not online_empty and not self.warned_empty:
                self.warned_empty = True
                warnings.warn(f"demo_ratio is {self.ratio:g} but no demonstrations were added: every batch comes from "
                              "the online storage; add them with add_demonstrations() before learning, or set "
                              "demo_ratio=0", UserWarning, stacklevel=5)
            return 0
        if online_empty:
            return batch_size
        expected = batch_size * self.ratio
        whole = math.floor(expected)
        return whole + int(rng.random() < expected - whole)


def prepare_episode(episode: Episode, buffer: StoredSpaces, number: int) -> Episode:
    """``episode`` checked against ``buffer``'s spaces and with its actions in the buffer's units.

    Raises ``ValueError`` naming the demonstration, the field and what the buffer accepts. Box actions are scaled
    to [-1, 1] by the rule SB3's off-policy algorithms apply before they store an online action
    (``policy.scale_action`` in ``_sample_action``), so a critic sees one action scale.
    """
    check_episode(episode, buffer, number)
    actions = episode.actions.reshape(len(episode), buffer.action_dim)
    return dataclasses.replace(episode, actions=to_buffer_units(actions, buffer.action_space))


def check_episode(episode: Episode, buffer: StoredSpaces, number: int) -> None:
    """Raise ``ValueError`` naming the demonstration, the key and what the buffer stores, unless ``episode`` fits:
    keys, shapes and values (finite, integral for integer keys, actions in the action space), rewards and infos."""
    name = f"demonstrations[{number}]"
    stored = list(buffer.observation_space.spaces)
    missing = [key for key in stored if key not in episode.observations]
    extra = [key for key in episode.observations if key not in buffer.observation_space.spaces]
    if missing or extra:
        what = f"lacks the keys {missing}" if missing else f"has keys the buffer does not store: {extra}"
        raise ValueError(
            f"{name} {what}; the buffer stores {stored} (relabeling needs the achieved goals, "
            "and the demonstrations must be observed as the training env is, wrappers included)"
        )
    for key in stored:
        values = episode.observations[key]
        expected = tuple(buffer.obs_shape[key])
        if values.shape[1:] != expected:
            raise ValueError(f"{name}.observations[{key!r}] must have shape (T+1, *{expected}), got {values.shape}")
        check_space_values(values, buffer.observation_space.spaces[key], f"{name}.observations[{key!r}]",
                           bounds=False)
    actions = episode.actions
    if actions.size != len(episode) * buffer.action_dim:
        raise ValueError(
            f"{name}.actions must have shape (T, {buffer.action_dim}) or hold T={len(episode)} "
            f"actions of the action space {describe(buffer.action_space)}, got {actions.shape}"
        )
    space = buffer.action_space
    check_space_values(actions.reshape(len(episode), -1), space, f"{name}.actions")
    if isinstance(space, spaces.Box) and not (np.isfinite(space.low).all() and np.isfinite(space.high).all()):
        raise ValueError(
            f"{name}.actions: the action space {describe(space)} is unbounded, and SB3 stores Box actions scaled "
            "to [-1, 1] by its bounds; give the env a bounded action space (as SB3's off-policy algorithms expect)"
        )
    check_space_values(episode.rewards[:, None], spaces.Box(-np.inf, np.inf, (1,)), f"{name}.rewards")
    if episode.infos is not None:
        for t, info in enumerate(episode.infos):
            if not isinstance(info, Mapping):
                raise ValueError(f"{name}.infos[{t}] must be a dict (a Mapping), got {type(info).__name__}")


def to_buffer_units(actions: np.ndarray, space: spaces.Space) -> np.ndarray:
    """Actions ``(T, action_dim)`` as SB3 stores them: Box actions scaled to [-1, 1] (in the space's dtype, as
    ``BasePolicy.scale_action`` computes them on the policy's actions), others as they are."""
    if not isinstance(space, spaces.Box):
        return actions
    low, high = space.low.reshape(-1), space.high.reshape(-1)
    return 2.0 * ((actions.astype(space.dtype) - low) / (high - low)) - 1.0


def to_env_units(actions: np.ndarray, space: spaces.Space) -> np.ndarray:
    """The inverse of :func:`to_buffer_units` (``BasePolicy.unscale_action``): stored actions in the env's units."""
    if not isinstance(space, spaces.Box):
        return actions
    low, high = space.low.reshape(-1), space.high.reshape(-1)
    return low + (0.5 * (actions + 1.0) * (high - low))


def add_episode(buffer: Source, episode: Episode) -> None:
    """Store ``episode`` (checked, actions in the buffer's units: :func:`prepare_episode`) through ``add()`` (one
    env), as a VecEnv would have handed it over; its last step ends it.

    An episode cut without termination or time-out (a DAgger episode still running when its round ended) ends
    as truncated, as ``truncate_last_trajectory`` ends an interrupted one.
    """
    length = len(episode)
    actions = episode.actions.reshape(length, 1, -1)
    truncated_last = bool(episode.truncated[-1] or not episode.terminated[-1])
    for t in range(length):
        last = t == length - 1
        info = dict(episode.infos[t]) if episode.infos is not None else {}
        info[TIMEOUT_INFO_KEY] = last and truncated_last
        buffer.add(
            {key: value[t : t + 1] for key, value in episode.observations.items()},
            {key: value[t + 1 : t + 2] for key, value in episode.observations.items()},
            actions[t],
            episode.rewards[t : t + 1],
            np.array([last]),
            [info],
        )


def stored_episodes(source: Source, env_units: bool = True) -> list[Episode]:
    """The finished episodes of a one-env source that never wrapped, in order, as ``add_episode`` stored them.

    :param env_units: Box actions in the env's units, as they were given (else as stored: scaled to [-1, 1]).
    """
    storage = source.storage
    ends = np.flatnonzero(storage.dones[: source.upper, 0])
    episodes, start = [], 0
    for end in ends.tolist():
        episode = storage.episode(0, np.arange(start, end + 1))
        if env_units:
            assert source.rows is not None, "a demonstration region holds its rows"
            episode = dataclasses.replace(episode, actions=to_env_units(episode.actions, source.rows.action_space))
        episodes.append(episode)
        start = end + 1
    return episodes


def as_episodes(source: DemonstrationSource) -> list[Episode]:
    """``source`` as episodes: an :class:`~sb3_hir.episodes.Episode`, an imitation trajectory, a DAgger round file or
    directory, or an iterable of these."""
    if isinstance(source, (str, os.PathLike)):
        return [_from_trajectory(traj, f"{source}[{i}]") for i, traj in enumerate(_load_dagger(source))]
    if isinstance(source, Episode) or _is_trajectory(source):
        source = [source]
    if not isinstance(source, Iterable) or isinstance(source, Mapping):
        raise ValueError(
            "demonstrations must be Episodes, imitation TrajectoryWithRew objects or DAgger round files / directories "
            f"(or a list of them); got {type(source).__name__}"
        )
    episodes: list[Episode] = []
    for number, item in enumerate(source):
        if isinstance(item, Episode):
            episodes.append(item)
        elif _is_trajectory(item):
            episodes.append(_from_trajectory(item, f"demonstrations[{number}]"))
        elif isinstance(item, (str, os.PathLike)):
            episodes.extend(as_episodes(item))
        else:
            raise ValueError(
                f"demonstrations[{number}] must be an Episode, an imitation TrajectoryWithRew or a DAgger round file "
                f"or directory; got {type(item).__name__}"
            )
    return episodes


def expert_episodes(expert: Any, venv: VecEnv, n_episodes: int, seed: int) -> list[Episode]:
    """``n_episodes`` episodes an expert plays in ``venv``, collected by imitation's ``generate_trajectories``.

    imitation finishes the episodes running when it has enough and shuffles them, so the first ``n_episodes`` are not
    biased toward short ones.

    :param expert: a policy with SB3's ``predict`` (an expert plugin, e.g. MazeRunner's shortest-path expert).
    :param seed: seed of the collector's generator (the env is seeded by whoever built ``venv``).
    """
    check_int(n_episodes, "n_episodes", 1)
    rollout = require("imitation.data.rollout", "demonstrations from an expert")
    trajectories = rollout.generate_trajectories(
        expert, venv, rollout.make_sample_until(min_episodes=n_episodes), rng=np.random.default_rng(seed),
        deterministic_policy=True,
    )
    return [Episode.from_trajectory(traj) for traj in trajectories[:n_episodes]]


def _is_trajectory(item: Any) -> bool:
    return all(hasattr(item, name) for name in ("obs", "acts", "terminal"))


def _from_trajectory(traj: Any, name: str) -> Episode:
    """One imitation trajectory as an episode; a DAgger trajectory with its executed actions and its truncation."""
    if getattr(traj, "rews", None) is None:
        raise ValueError(
            f"{name} is an imitation Trajectory without rewards; the buffer serves recorded rewards, so pass "
            "TrajectoryWithRew (what imitation's rollouts and DAgger's round files hold) or Episodes"
        )
    if not hasattr(traj.obs, "unwrap"):
        raise ValueError(
            f"{name}.obs must be an imitation DictObs: the buffer stores Dict observations with the achieved goals "
            f"relabeling needs; got {type(traj.obs).__name__}"
        )
    if not hasattr(traj, "executed_acts"):
        return Episode.from_trajectory(traj)
    length = len(traj.acts)
    terminated = np.zeros(length, dtype=bool)
    truncated = np.zeros(length, dtype=bool)
    terminated[-1] = bool(traj.terminal)
    truncated[-1] = bool(traj.truncated) or not traj.complete
    return Episode(
        observations=traj.obs.unwrap(),
        actions=traj.acts if traj.executed_acts is None else traj.executed_acts,
        rewards=traj.rews,
        terminated=terminated,
        truncated=truncated,
        infos=None if traj.infos is None else list(traj.infos),
    )


def _load_dagger(path: str | os.PathLike[str]) -> list[Any]:
    """The trajectories of a DAgger round file, round directory, or scratch directory (every round, in order)."""
    storage = require("sb3_hir.dagger.storage", "demonstrations from DAgger round files")
    path = pathlib.Path(path)
    if path.is_file():
        return storage.load_trajectories(path)
    if not path.is_dir():
        raise ValueError(f"demonstrations path {str(path)!r} is neither a DAgger round file nor a directory")
    if storage.round_files(path):
        return storage.load_round_dir(path)
    demos = path / "demos" if (path / "demos").is_dir() else path
    rounds = sorted(d for d in demos.glob("round-[0-9]*") if d.is_dir() and storage.round_files(d))
    if not rounds:
        raise ValueError(
            f"demonstrations path {str(path)!r} holds no DAgger round files (looked for round files in it and in "
            "its round-NNN/ or demos/round-NNN/ directories)"
        )
    return [traj for directory in rounds for traj in storage.load_round_dir(directory)]


def concat_samples(first: DictReplayBufferSamples, second: DictReplayBufferSamples) -> DictReplayBufferSamples:
    """One batch of two: ``first``'s rows, then ``second``'s."""

    def join(a: Any, b: Any) -> Any:
        if a is None or b is None:  # discounts: both parts have the same n_steps, so both or neither
            assert a is None and b is None
            return None
        if isinstance(a, dict):
            return {key: th.cat([a[key], b[key]]) for key in a}
        return th.cat([a, b])

    return DictReplayBufferSamples(*(join(a, b) for a, b in zip(first, second, strict=True)))
