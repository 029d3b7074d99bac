"""The episode index: a few integers per stored row, and the per-episode bookkeeping built when an episode ends.

``add()`` stores a transition exactly as ``DictReplayBuffer`` does, and the index writes three integers in its row:
the episode's id (wrapped), the transition's index ``t`` in it, and its length (0 while the episode runs, written once
when it ends). When an episode ends, bookkeeping is built once, in O(T), and stored in the episode's own rows: the
reach steps of its own goals (``own``, in its first ``k`` rows), whether its recorded termination came from outside
its goals (``end``), and the columns the draw strategy adds (``DrawStrategy.fields``, built by its
``index_episode``). Sampling reads only these rows, so it never scans the buffer.

An episode whose first row was overwritten by the circular buffer can no longer be relabeled (its instruction and
early steps are gone): the id in its first row tells. Steps fit in int16 when no episode can be longer than 32767
rows, so the index costs 10 to 22 bytes per row.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from sb3_hir.buffers.storage import Storage, goal_groups
from sb3_hir.goals import instruction_complete

if TYPE_CHECKING:
    from sb3_hir.buffers.options import BufferOptions

__all__ = ["BASE_FIELDS", "EndedEpisode", "EpisodeFields", "EpisodeIndex", "GoalEnvEpisodeIndex"]

#: The fields of every row; ``id``, ``t`` and ``len`` first, since ``add()`` writes them at once.
BASE_FIELDS = ("id", "t", "len", "end", "own")


class EndedEpisode(NamedTuple):
    """An episode that just ended, as the draw strategy indexes it."""

    env: int
    rows: np.ndarray  # (T,) the buffer rows of its transitions
    length: int
    achieved: np.ndarray  # (T, *goal_shape) achieved values after steps 1..T
    achieved_all: np.ndarray  # (T + 1, *goal_shape) the same, after the value before step 1
    own_goals: np.ndarray  # (k, *goal_shape) its recorded instruction
    own_steps: np.ndarray  # (k,) reach steps of its own goals, -1 never


class EpisodeFields(Protocol):
    """What the index asks of the draw strategy: the fields it adds to each row, and how it fills them."""

    fields: tuple[str, ...]

    def allocate(self, view: Any, steps_dtype: np.dtype) -> None: ...

    def index_episode(self, view: Any, episode: EndedEpisode, meta: np.ndarray, field: dict[str, int]) -> None: ...


class EpisodeIndex:
    """The index of an instruction env's episodes (module docstring); :class:`GoalEnvEpisodeIndex` for GoalEnvs.

    It keeps the bookkeeping; the source it belongs to has the draw strategy fill its own fields of each episode that
    ends (:meth:`end_episode`, then :meth:`store`), so the index needs neither the strategy nor its view.

    :param storage: the rows it indexes.
    :param options: the buffer's settings: the relabeler with its goal spec, the instruction's length and goal shape.
    :param fields: the draw strategy's columns beyond :data:`BASE_FIELDS`.
    """

    def __init__(self, storage: Storage, options: BufferOptions, fields: tuple[str, ...] = ()) -> None:
        dtype = np.int16 if storage.buffer_size <= np.iinfo(np.int16).max else np.int32
        # Episode ids wrap; two live episodes of one sub-env cannot collide, as that needs more episodes
        # between them than the buffer holds rows.
        self.id_mask = int(np.iinfo(dtype).max)
        self.storage = storage
        self.with_fields(fields, np.dtype(dtype))
        self.options = options
        self.warned_too_long = False
        self.warned_reward_scale = False  # the recorded rewards' scale is checked until one mismatch is reported
        #: GoalEnv mode: recorded episodes that ended on their own goal's first reach / went on after reaching it.
        self.episodes_ending_at_goal = 0
        self.episodes_going_on_after_goal = 0
        self.restart(storage.n_envs)

    def with_fields(self, fields: tuple[str, ...], dtype: np.dtype | None = None) -> None:
        """Lay the rows out for the draw strategy's ``fields`` (its ``setup`` may add some: the event fields), before
        anything is stored."""
        names = (*BASE_FIELDS, *fields)
        if tuple(getattr(self, "field", ())) == names:
            return
        meta: np.ndarray | None = getattr(self, "meta", None)
        #: column of each field in :attr:`meta`.
        self.field = {name: i for i, name in enumerate(names)}
        #: ``(buffer_size, n_envs, fields)`` integers per row.
        self.meta = np.zeros((self.storage.buffer_size, self.storage.n_envs, len(names)),
                             dtype=dtype if dtype is not None or meta is None else meta.dtype)

    def restart(self, n_envs: int) -> None:
        """Forget every episode (the buffer's ``reset``)."""
        self.meta.fill(0)
        self.num_adds = 0  # a Python int: add() touches it every step
        self.episode_start = np.zeros(n_envs, dtype=np.int64)  # value of num_adds at each episode's start
        # What add() writes in each sub-env's next row: episode id (wrapped), step t, length 0 (running).
        self.row_head = np.zeros((n_envs, 3), dtype=self.meta.dtype)

    def record_step(self, pos: int) -> None:
        """``add()`` stores a transition of every sub-env in row ``pos``."""
        self.meta[pos, :, :3] = self.row_head
        self.row_head[:, 1] += 1
        self.num_adds += 1

    def running(self) -> np.ndarray:
        """Which sub-envs have an episode running (a transition stored since their last episode ended)."""
        return self.episode_start != self.num_adds

    def end_episode(self, env_idx: int) -> tuple[EndedEpisode, np.ndarray] | None:
        """Close the running episode of sub-env ``env_idx`` (its last transition was just stored); returns it with its
        rows' index (a copy, for the draw strategy's fields; :meth:`store` writes it), or None when it cannot be
        relabeled (empty, or longer than the buffer)."""
        length = self.num_adds - int(self.episode_start[env_idx])
        self.episode_start[env_idx] = self.num_adds
        head = self.row_head[env_idx]
        head[0] = (int(head[0]) + 1) & self.id_mask
        head[1] = 0
        if length < 1:
            return None
        storage = self.storage
        if length > storage.buffer_size:
            if not self.warned_too_long:
                warnings.warn(
                    f"an episode of {length} steps is longer than the replay buffer holds per env "
                    f"({storage.buffer_size}); such episodes are served as recorded, without relabeling. "
                    "Increase buffer_size to relabel them.",
                    stacklevel=4,
                )
                self.warned_too_long = True
            return None
        # pos already points past the last transition of the episode.
        return self._index_episode(env_idx, (storage.pos - length) % storage.buffer_size, length)

    def store(self, episode: EndedEpisode, meta: np.ndarray) -> None:
        """Write an ended episode's rows of the index (from :meth:`end_episode`, the strategy's fields filled)."""
        self.meta[episode.rows, episode.env] = meta

    def _index_episode(self, env_idx: int, start: int, length: int) -> tuple[EndedEpisode, np.ndarray]:
        """Per-episode bookkeeping, built once in O(T), for the episode's own rows."""
        storage, options = self.storage, self.options
        rows = (start + np.arange(length)) % storage.buffer_size
        relabeler: Any = options.relabeler  # reach_steps takes the groups (InstructionRelabeler's signature)
        k, field, goal_shape = options.num_goals, self.field, options.goal_shape
        spec = relabeler.goal_spec
        achieved = storage.achieved_at(rows, env_idx, goal_shape)  # steps 1..T
        first = storage.obs_rows(spec.achieved_key, np.array([start * storage.n_envs + env_idx]))[0]
        achieved_all = np.concatenate([spec.achieved_values(first[None], goal_shape), achieved])
        own_goals = storage.instructions[start, env_idx].reshape(k, *goal_shape)
        groups = goal_groups(storage, spec, k, np.array([start]), np.array([env_idx]))
        own_steps = (relabeler.reach_steps(achieved_all, own_goals) if groups is None
                     else relabeler.reach_steps(achieved_all, own_goals, groups[0]))
        meta = self.meta[rows, env_idx]  # a copy (fancy indexing); written back below
        meta[:, field["len"]] = length
        other_end = bool(storage.dones[rows[-1], env_idx]) and not bool(storage.timeouts[rows[-1], env_idx])
        meta[:, field["end"]] = self._recorded_end(rows, env_idx, other_end)
        self._note_episode(rows, env_idx, own_steps, other_end)
        slots = min(k, length)
        meta[:slots, field["own"]] = own_steps[:slots]
        return EndedEpisode(env_idx, rows, length, achieved, achieved_all, own_goals, own_steps), meta

    def _recorded_end(self, rows: np.ndarray, env_idx: int, other_end: bool) -> bool:
        """Whether the episode ended in a termination its goals did not cause (its k-th goal not reached)."""
        storage, spec = self.storage, self.options.relabeler.goal_spec
        flat = np.array([int(rows[-1]) * storage.n_envs + env_idx])
        last_goals = storage.next_rows(spec.goals_key, flat)[0]
        return other_end and not bool(instruction_complete(spec, last_goals))

    def _note_episode(self, rows: np.ndarray, env_idx: int, own_steps: np.ndarray,
                      other_end: bool) -> None:
        """What an ended episode tells about the env: here, whether its rewards are the goal spec's."""
        if not self.warned_reward_scale:
            self._check_reward_scale(rows, env_idx, own_steps)

    def _check_reward_scale(self, rows: np.ndarray, env_idx: int, own_steps: np.ndarray) -> None:
        """Warn once when the env's recorded rewards are not the goal spec's: relabeled rows would be served on
        another scale than recorded ones (e.g. an env built with ``step_reward=-1.0`` and the default spec)."""
        relabeler: Any = self.options.relabeler
        spec = relabeler.goal_spec
        counts = relabeler.reach_counts(own_steps, len(rows))
        expected = spec.step_reward + spec.goal_reward * np.diff(counts)
        recorded = self.storage.rewards[rows, env_idx]
        wrong = np.flatnonzero(~np.isclose(recorded, expected, atol=1e-5))
        if len(wrong):
            t = int(wrong[0])
            warnings.warn(
                f"the env's recorded rewards differ from the goal spec's (goal_reward={spec.goal_reward}, "
                f"step_reward={spec.step_reward}): step {t} of an episode recorded {float(recorded[t])}, the spec "
                f"gives {float(expected[t])}. Relabeled transitions would be rewarded differently from recorded ones; "
                "pass the env's own spec (goal_spec=env.goal_spec), or use HerReplayBuffer, which reads it",
                stacklevel=6,
            )
            self.warned_reward_scale = True


class GoalEnvEpisodeIndex(EpisodeIndex):
    """The index of a GoalEnv's episodes: the recorded termination kept as it is (sampling decides whether the own
    goal's reach caused it), and the evidence whether the env terminates on success.

    Whether first reaches can be found (else the evidence is not gathered) is the options' ``has_success_test``.
    """

    def __init__(self, storage: Storage, options: BufferOptions, fields: tuple[str, ...] = ()) -> None:
        self.has_success_test = options.has_success_test
        super().__init__(storage, options, fields)

    def _recorded_end(self, rows: np.ndarray, env_idx: int, other_end: bool) -> bool:
        return other_end

    def _note_episode(self, rows: np.ndarray, env_idx: int, own_steps: np.ndarray,
                      other_end: bool) -> None:
        """Whether the episode ended at its own goal's first reach, or went on after it."""
        reached_at, length = int(own_steps[0]), len(rows)
        if self.has_success_test and reached_at > 0:
            if reached_at == length and other_end:
                self.episodes_ending_at_goal += 1
            elif reached_at < length:
                self.episodes_going_on_after_goal += 1
