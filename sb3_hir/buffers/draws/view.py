"""What a draw strategy reads of a replay buffer: :class:`DrawView`, the narrow view it receives instead of the buffer.

A strategy draws hindsight instructions for stored transitions; it needs the sizes, the relabeling settings, the
generator, the episode index and the achieved values, not SB3's arrays, the layout or the serving. The view forwards
exactly those: the settings from the buffer's :class:`~sb3_hir.buffers.options.BufferOptions`, the rows read through
its source's :class:`~sb3_hir.buffers.storage.Storage` at each access (so a strategy sees a regrown region as it is),
that source's episode index and generator. It never holds the buffer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_hir.buffers.storage import Storage, goal_groups, take_rows
from sb3_hir.episodes import Episode
from sb3_hir.goals import GoalSpec
from sb3_hir.relabel import InstructionRelabeler, has_builtin_draw

if TYPE_CHECKING:
    from sb3_hir.buffers.episode_index import EpisodeIndex
    from sb3_hir.buffers.options import BufferOptions
    from sb3_hir.buffers.termination import SuccessTermination

__all__ = ["DrawView"]


class DrawView:
    """The part of a replay buffer a draw strategy reads (module docstring).

    Rows are indexed as in SB3, ``(buffer_size, n_envs)``; a *flat* index is ``row * n_envs + env``. An episode's
    step ``s`` (1-based) is the transition stored in row ``(start + s - 1) % buffer_size``.

    :param options: the buffer's settings, decided once (:class:`~sb3_hir.buffers.options.BufferOptions`).
    :param storage: the rows it draws from: the buffer's own, or its demonstrations' (a second source).
    :param index: the episode index of these rows: integers per row (``meta``, columns named by ``field``): ``id``,
        ``t`` (the step within its episode), ``len`` (0 while running), ``own`` (in the episode's rows ``start + j``:
        its own goal j's reach step), ``end``, and the strategy's own ``fields``.
    :param rng: the generator of this source's draws: every random choice of a draw comes from it, so a seeded buffer
        draws the same.
    :param termination: whether a relabeled success is served as terminal, decided as the buffer decides it
        (:class:`~sb3_hir.buffers.termination.SuccessTermination`); None: never.
    """

    __slots__ = ("_options", "_storage", "_termination", "index", "rng")

    def __init__(self, options: BufferOptions, storage: Storage, index: EpisodeIndex, rng: np.random.Generator,
                 termination: SuccessTermination | None = None) -> None:
        self._options = options
        self._storage = storage
        self.index = index
        self.rng = rng
        self._termination = termination

    def __setstate__(self, state: Any) -> None:
        """A view pickled by sb3-hir 0.2 read the buffer (``_buffer``); the buffer's upgrade builds a new one
        (``legacy``), so such a state is kept only as far as today's slots hold it."""
        slots = dict((state[1] if isinstance(state, tuple) else state) or {})
        slots.setdefault("rng", slots.get("_rng"))
        for name in self.__slots__:
            object.__setattr__(self, name, slots.get(name))

    # -- sizes and settings ----------------------------------------------------------------------------------------
    @property
    def buffer_size(self) -> int:
        """Rows per sub-env."""
        return self._storage.buffer_size

    @property
    def n_envs(self) -> int:
        return self._storage.n_envs

    @property
    def num_goals(self) -> int:
        """``k``, the goals per instruction (1 for GoalEnvs)."""
        return self._options.num_goals

    @property
    def goal_shape(self) -> tuple[int, ...]:
        return self._options.goal_shape

    @property
    def goal_spec(self) -> GoalSpec:
        """The success test (``reached``) and the keys of the goals and the achieved values."""
        spec: Any = self._options.relabeler.goal_spec  # a GoalSpec, or a plugin's that has its methods
        return spec

    @property
    def relabeler(self) -> InstructionRelabeler:
        """The relabeler: its ``strategy`` (``"some"``, ``"all"``, ``"none"``), ``draw_goal_steps``, ``reach_steps``."""
        relabeler: Any = self._options.relabeler  # resolved as the relabeler plugins are
        return relabeler

    @property
    def goal_selection(self) -> str:
        """``"future"``, ``"episode"`` or ``"final"``."""
        return self._options.goal_selection

    @property
    def n_steps(self) -> int:
        """Transitions per served window (n-step returns)."""
        return self._options.n_steps

    @property
    def max_redraws(self) -> int:
        """Rounds of redrawing for pairs that are not admissible."""
        return self._options.max_redraws

    @property
    def terminates_on_success(self) -> bool:
        """Whether a relabeled success is served as terminal (GoalEnv mode decides it from the env)."""
        return self._termination is not None and self._termination.terminates

    @property
    def goal_env(self) -> bool:
        """GoalEnv mode (one goal, the env's ``compute_reward``) rather than instruction mode."""
        return self._options.goal_env

    # -- the episode index and the stored values ------------------------------------------------------------------
    @property
    def achieved(self) -> np.ndarray:
        """``(buffer_size, n_envs, *goal_shape)`` the value achieved after each transition (stored in either
        layout)."""
        return self._storage.achieved

    @property
    def instructions(self) -> np.ndarray:
        """``(buffer_size, n_envs, ...)`` the instruction observed before each transition; an episode's first row
        holds its own instruction, unmasked."""
        return self._storage.instructions

    @property
    def goals_space(self) -> Any:
        """The goals' observation space: every drawn goal must lie in it (``draw_checks``)."""
        return self._storage.observation_space[self.goal_spec.goals_key]

    @property
    def goals_dtype(self) -> np.dtype:
        """The dtype drawn goals are served in."""
        return self.instructions.dtype

    def achieved_at(self, rows: np.ndarray, env_idx: np.ndarray | int) -> np.ndarray:
        """Achieved values after the transitions in ``rows`` of sub-envs ``env_idx``: ``(*rows.shape,
        *goal_shape)``."""
        return self._storage.achieved_at(rows, env_idx, self._options.goal_shape)

    def own_goals(self, start: np.ndarray, env_idx: np.ndarray) -> np.ndarray:
        """``(B, k, *goal_shape)`` the recorded instruction of the episodes starting in rows ``start``."""
        goals = take_rows(self.instructions, np.asarray(start) * self.n_envs + env_idx)
        return goals.reshape(len(goals), self.num_goals, *self.goal_shape)  # GoalEnvs store one goal without k

    def own_groups(self, start: np.ndarray, env_idx: np.ndarray) -> np.ndarray | None:
        """``(B, k)`` the goal groups (goal spec's ``groups_key``) of the episodes starting in rows ``start``, None
        when the spec declares none (every goal its own group, in slot order)."""
        return goal_groups(self._storage, self.goal_spec, self.num_goals, start, env_idx)

    def episode(self, env_idx: int, rows: np.ndarray) -> Episode:
        """The stored episode of sub-env ``env_idx`` in ``rows``, as an :class:`~sb3_hir.episodes.Episode`
        (observations ``[obs_0, next_obs_0, ..., next_obs_{T-1}]``), for strategies that call a relabeler on it."""
        return self._storage.episode(env_idx, rows, with_infos=False)

    # -- facts decided when the buffer is built ---------------------------------------------------------------------
    @property
    def exact_values(self) -> bool:
        """Goals are integers compared by exact equality, so reaches can be found by value (an index)."""
        return self._options.exact_values

    @property
    def builtin_relabeler(self) -> bool:
        """The relabeler's ``draw_goal_steps`` is the built-in one, which the compiled kernels reproduce."""
        return has_builtin_draw(self.relabeler)
