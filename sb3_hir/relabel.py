"""Relabelers: rewrite an episode as if it had been given a different instruction.

Hindsight instruction relabeling (HIR, AMAGO arXiv 2310.09971 App. B Alg. 1) generalises HER from one goal
to an instruction of ``k`` goals reached in order. :meth:`InstructionRelabeler.replay` recomputes, for a new
goal sequence, everything the env derives from the instruction: masked goal observations, goal rewards,
terminations and the episode length (the episode ends at the k-th goal). Replaying an episode under its own
instruction gives the episode back, which is what makes the rewritten transitions faithful to the env.

Everything is vectorised over time: the ``(T, k)`` matrix "observation t reaches goal j" is computed in one
:meth:`GoalSpec.reached <sb3_hir.goals.GoalSpec.reached>` call, and only the k goals are looped over.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np

from sb3_hir._validate import check_choice, check_int
from sb3_hir.episodes import Episode
from sb3_hir.goals import instruction_complete, padding_mask
from sb3_hir.protocols import GoalSpecProtocol, declares_levels, declares_nothing
from sb3_hir.reach import instruction_end, reach_in_groups, slot_groups
from sb3_hir.resolvers import resolve_goal_spec

if TYPE_CHECKING:
    pass

__all__ = ["HindsightInstructionRelabeler", "InstructionRelabeler", "has_builtin_draw"]

STRATEGIES = ("some", "all", "none")
#: Where per-sample hindsight goals come from (see :meth:`HindsightInstructionRelabeler.draw_goal_steps`).
GOAL_SELECTIONS = ("future", "episode")


class InstructionRelabeler(ABC):
    """Base of relabelers: replaying an episode under a goal sequence; subclasses choose the sequence.

    Subclass it and write only ``relabel_goals``: the replay, which is the env's semantics, is shared, so every
    relabeler serves the rewards and terminations the env would have given.

    :param num_goals: instruction length ``k``.
    :param goal_spec: a registered ``"goal_spec"`` plugin name or a :class:`~sb3_hir.goals.GoalSpec`.
    """

    #: Whether :meth:`relabel` never lowers an episode's return; ``sb3_hir.testing.check_relabeler`` holds
    #: relabelers that promise it to it.
    never_lowers_return: bool = False

    def __init__(self, num_goals: int, goal_spec: str | GoalSpecProtocol = "exact") -> None:
        self.num_goals = check_int(num_goals, "num_goals", 1)
        self.goal_spec = resolve_goal_spec(goal_spec)

    # ------------------------------------------------------------------ reaching
    def reach_steps(self, achieved: np.ndarray, goals: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
        """Step in ``1..T`` at which each goal is reached when walking observations ``1..T``, -1 if never.

        Goal j is only checked from the step after goal j-1 was reached (one goal per step), as the env does; from
        that same step when the goal spec says ``same_step_goals`` (one step may complete several goals). With the
        goal spec's ``pad_value`` and ``groups_key``, padding slots are never reached and the goals of one group in
        any order (:func:`sb3_hir.reach.reach_in_groups`).

        :param achieved: achieved values over the episode, shape ``(T+1, *goal_shape)`` or
            ``(T+1, 1, *goal_shape)``.
        :param goals: the goal sequence, shape ``(k, *goal_shape)``.
        :param groups: ``(k,)`` the slots' groups (the episode's ``groups_key`` observation); None: slot order.
        :return: int64 array of shape ``(k,)``, strictly increasing over its non-negative prefix (non-decreasing with
            ``same_step_goals``) for ordered instructions.
        """
        groups_key = self.goal_spec.groups_key
        if groups is None and groups_key is not None:
            raise ValueError(f"groups must be the episode's ({self.num_goals},) goal groups (its {groups_key!r} "
                             "observation, relabeler.episode_groups(episode)): the goal spec declares groups_key "
                             f"{groups_key!r}, and slot order would reach a group's goals in the wrong order")
        goals = np.asarray(goals)
        achieved = self.goal_spec.achieved_values(achieved, goals.shape[1:])
        if groups is not None or not self.goal_spec.ordered:
            real = ~padding_mask(self.goal_spec, goals)
            hit = self.goal_spec.reached(achieved[1:, None], goals[None]) & real
            return reach_in_groups(hit[None], slot_groups(None if groups is None else np.asarray(groups)[None],
                                                          real[None]),
                                   bool(self.goal_spec.same_step_goals))[0]
        steps = np.full(len(goals), -1, dtype=np.int64)
        # hit[t - 1, j]: observation t reaches goal j; one broadcast call for the whole episode.
        hit = self.goal_spec.reached(achieved[1:, None], goals[None])
        start = 0  # row of the first observation to check: the one after the previous goal's step
        again = int(bool(self.goal_spec.same_step_goals))  # 1: the same row is checked again
        for j in range(len(goals)):
            column = hit[start:, j]
            if column.size == 0:
                break
            first = int(column.argmax())
            if not column[first]:
                break
            start += first + 1
            steps[j] = start
            start -= again
        return steps

    @staticmethod
    def reach_counts(reach_steps: np.ndarray, length: int) -> np.ndarray:
        """Number of goals reached by each step ``t = 0..T`` (``c_0 = 0``), as int64 of shape ``(T+1,)``.

        Everything a replay recomputes derives from these counts: goal j is masked at ``t`` iff ``j < c_t``,
        the transition into ``t`` earns ``step_reward + goal_reward * (c_t - c_{t-1})`` and is terminal iff
        ``c_t == k``.
        Buffers use this directly to relabel stored rows without building an :class:`Episode`.
        """
        reach_steps = np.asarray(reach_steps)
        reached = np.sort(reach_steps[reach_steps > 0])  # the reached goals (a group's may be out of slot order)
        return reached.searchsorted(np.arange(length + 1), side="right").astype(np.int64, copy=False)

    # ------------------------------------------------------------------ replay
    def _episode_goal_arrays(self, episode: Episode) -> tuple[np.ndarray, np.ndarray]:
        spec = self.goal_spec
        missing = [key for key in (spec.goals_key, spec.achieved_key) if key not in episode.observations]
        if missing:
            raise ValueError(
                f"episode observations are missing the goal spec's keys {missing}; keys present: "
                f"{list(episode.observations)}"
            )
        goals_obs = episode.observations[spec.goals_key]
        if goals_obs.ndim < 2 or goals_obs.shape[1] != self.num_goals:
            raise ValueError(
                f"episode observations[{spec.goals_key!r}] must have shape (T+1, num_goals={self.num_goals}, "
                f"*goal_shape), got {goals_obs.shape}"
            )
        achieved = spec.achieved_values(episode.observations[spec.achieved_key], goals_obs.shape[2:])
        return goals_obs, achieved

    def episode_groups(self, episode: Episode) -> np.ndarray | None:
        """``(k,)`` the episode's goal groups (its first ``groups_key`` observation), None for ordered goals."""
        key = self.goal_spec.groups_key
        if key is None:
            return None
        if key not in episode.observations:
            raise ValueError(f"episode observations are missing the goal spec's groups_key {key!r}; keys present: "
                             f"{list(episode.observations)}")
        return np.asarray(episode.observations[key][0]).reshape(self.num_goals)

    def replay(self, episode: Episode, goals: np.ndarray) -> Episode:
        """The episode as the env would have produced it under the goal sequence ``goals``.

        Goal observations, rewards and terminations are recomputed; the episode ends at the step that reaches
        the k-th goal (that transition is terminal, not truncated). A termination the goals did not cause (the
        original last step is terminated while its goal observation still shows unreached goals, e.g. a robot
        falling) is kept when the replay does not reach all k goals. Other observation keys and actions are
        copied; infos are cut to the new length but not rewritten (env-specific keys such as ``is_success``
        describe the original instruction).

        :param goals: shape ``(k, *goal_shape)``.
        """
        goals_obs, achieved = self._episode_goal_arrays(episode)
        goals = np.asarray(goals)
        if goals.shape != goals_obs.shape[1:]:
            raise ValueError(
                f"goals must have shape {goals_obs.shape[1:]} (k, *goal_shape), got {goals.shape}"
            )
        spec, length = self.goal_spec, len(episode)
        steps = self.reach_steps(achieved, goals, self.episode_groups(episode))
        real = ~padding_mask(spec, goals)
        end = int(instruction_end(steps[None], real[None])[0])
        success = end > 0
        new_length = end if success else length
        counts = self.reach_counts(steps, new_length)

        # goal j is masked from its reach step on (a prefix of the slots for ordered goals; padding never)
        slot_masked = (steps > 0) & (steps <= np.arange(new_length + 1)[:, None])  # (L+1, k)
        slot_masked = slot_masked.reshape(slot_masked.shape + (1,) * (goals.ndim - 1))
        new_goals_obs = np.where(slot_masked, np.asarray(spec.mask_value, dtype=goals_obs.dtype), goals[None])
        new_goals_obs = new_goals_obs.astype(goals_obs.dtype, copy=False)

        gained = np.diff(counts)
        rewards = (gained * spec.goal_reward + spec.step_reward).astype(np.float32)
        terminated = counts[1:] == int(real.sum())
        truncated = np.zeros(new_length, dtype=bool)
        if new_length == length:
            truncated[-1] = episode.truncated[-1]
            if not success and episode.terminated[-1]:
                # Keep terminations the instruction did not cause (all goals masked = the goals caused it).
                terminated[-1] = not bool(instruction_complete(spec, goals_obs[-1]))

        observations = {
            key: (new_goals_obs if key == spec.goals_key else value[: new_length + 1].copy())
            for key, value in episode.observations.items()
        }
        return Episode(
            observations=observations,
            actions=episode.actions[:new_length].copy(),
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            infos=None if episode.infos is None else episode.infos[:new_length],
        )

    # ------------------------------------------------------------------ relabel
    @abstractmethod
    def relabel_goals(self, episode: Episode, rng: np.random.Generator) -> np.ndarray | None:
        """The goal sequence to replay ``episode`` under, shape ``(k, *goal_shape)``; None keeps it as is."""

    def relabel(self, episode: Episode, rng: np.random.Generator) -> Episode:
        """The episode replayed under :meth:`relabel_goals`, or the episode itself when that returns None."""
        goals = self.relabel_goals(episode, rng)
        return episode if goals is None else self.replay(episode, goals)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_goals={self.num_goals}, goal_spec={self.goal_spec!r})"


class HindsightInstructionRelabeler(InstructionRelabeler):
    """HIR: pretend the instruction asked for goals the agent really achieved, in the order it achieved them.

    With n of its own k goals reached (in order, at steps ``s_1 < ... < s_n``), h extra goals are added:
    ``"all"`` h = k - n (every relabeled episode is a full success), ``"some"`` h uniform in ``{0, ..., k-n}``
    (the mix AMAGO uses, so the agent also sees partial progress), ``"none"`` h = 0. The alternatives are the
    values achieved at h distinct steps drawn uniformly from ``1..T`` without the ``s_i``; merged with the
    reached goals in time order they fill the first n+h slots, the remaining slots keep their goals.

    :param num_goals: instruction length ``k``.
    :param strategy: ``"some"``, ``"all"`` or ``"none"``.
    :param goal_spec: a registered ``"goal_spec"`` plugin name or a :class:`~sb3_hir.goals.GoalSpec`.
    """

    #: Reached goals stay and alternatives only add goals after them, so no strategy lowers the return.
    never_lowers_return = True

    def __init__(self, num_goals: int, strategy: str = "some", goal_spec: str | GoalSpecProtocol = "exact") -> None:
        strategy = check_choice(strategy, "strategy", STRATEGIES)
        super().__init__(num_goals=num_goals, goal_spec=goal_spec)
        self.strategy = strategy

    def relabel_goals(self, episode: Episode, rng: np.random.Generator) -> np.ndarray | None:
        if self.strategy == "none":
            return None
        goals_obs, achieved = self._episode_goal_arrays(episode)
        own = goals_obs[0]
        steps = self.reach_steps(achieved, own, self.episode_groups(episode))
        reached_steps = np.sort(steps[steps > 0])
        n = len(reached_steps)
        free = int((~padding_mask(self.goal_spec, own)).sum()) - n  # the episode's own length: padding stays padding
        h = free if self.strategy == "all" else int(rng.integers(0, free + 1))
        if h == 0:
            return None
        candidate = np.ones(len(episode) + 1, dtype=bool)
        candidate[0] = False  # the reset observation is never checked against a goal
        candidate[reached_steps] = False
        if declares_nothing(self.goal_spec):
            candidate &= ~self.goal_spec.is_nothing(achieved)  # a step that achieved nothing is never a goal
        candidates = np.flatnonzero(candidate)
        h = min(h, len(candidates))
        if h == 0:
            return None
        picked = rng.choice(candidates, size=h, replace=False)
        merged = np.sort(np.concatenate([reached_steps, picked]))
        goals = own.copy()
        goals[: n + h] = achieved[merged]
        picked_slots = np.isin(merged, picked)
        if declares_levels(self.goal_spec) and picked_slots.any():
            drawn = np.zeros((1, len(goals)), dtype=bool)
            drawn[0, : n + h] = picked_slots
            goals = self.goal_spec.generalize(goals[None], drawn, rng)[0]
        return goals

    def draw_goal_steps(
        self,
        own_steps: np.ndarray,
        length: np.ndarray,
        t: np.ndarray,
        rng: np.random.Generator,
        goal_selection: str = "future",
        at_least_one: bool = False,
    ) -> np.ndarray:
        """:meth:`relabel_goals` for a batch of sampled transitions at once, one fresh draw per transition.

        The buffer calls this in ``sample()``, so it works on steps, not values: it never sees an episode, only
        where each sampled transition sits in its episode, and returns which achieved steps become goals. The
        strategy keeps its meaning per draw (h extra goals after the n reached ones). ``goal_selection``:

        * ``"future"``: the first alternative is drawn from steps ``t+1..T`` (at or after the sampled
          transition's next observation), the others from the whole episode. The instruction then completes no
          earlier than the transition's own step, as HER's ``future`` rule guarantees; with ``k = 1`` this *is*
          HER's rule.
        * ``"episode"``: all alternatives uniformly from ``1..T``, as AMAGO relabels a whole trajectory.

        Alternatives are distinct and never an own reach step, as in :meth:`relabel_goals`.

        :param own_steps: ``(B, k)`` reach steps of each episode's own goals (:meth:`reach_steps`), and -2 on
            padding slots (goal spec's ``pad_value``): h counts only the episode's own unreached goals, so a relabeled
            instruction keeps its episode's length.
        :param length: ``(B,)`` episode lengths ``T``.
        :param t: ``(B,)`` index of each sampled transition, ``0..T-1``.
        :param rng: generator of the draws.
        :param goal_selection: ``"future"`` or ``"episode"``.
        :param at_least_one: ``"some"`` draws h uniform in ``1..free`` instead of ``0..free``: the buffer's probe of
            whether a transition admits any hindsight instruction (event goals), so that one the coin leaves with its
            own instruction is admitted exactly when one that draws could be.
        :return: int64 ``(B, k)``: slot j's goal is the value achieved at step ``out[b, j]`` (``1..T``), or the
            episode's own goal j where it is -1. The step slots form a strictly increasing prefix; a row of -1
            keeps the episode's own instruction.
        """
        check_choice(goal_selection, "goal_selection", GOAL_SELECTIONS)
        own, length, t = _step_arrays(own_steps, length, t, self.num_goals)
        if self.strategy == "none" or len(own) == 0:
            return np.full(own.shape, -1, dtype=np.int64)
        h = _goal_counts(own, self.strategy, rng, at_least_one)
        excluded, h = _draw_alternatives(own, length, t, h, rng, goal_selection == "future")
        return _merged_goal_steps(excluded, h)

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", strategy={self.strategy!r})"


def has_builtin_draw(relabeler: object) -> bool:
    """Whether ``relabeler`` draws goal steps with :class:`HindsightInstructionRelabeler`'s own ``draw_goal_steps``,
    which the buffer's compiled kernels and first-reach index reproduce (a subclass that overrides it does not)."""
    return (isinstance(relabeler, HindsightInstructionRelabeler)
            and type(relabeler).draw_goal_steps is HindsightInstructionRelabeler.draw_goal_steps)


#: "No step" in :meth:`HindsightInstructionRelabeler.draw_goal_steps`'s working arrays: sorts after every real step.
_NO_STEP = np.iinfo(np.int64).max // 4


def _step_arrays(own_steps: np.ndarray, length: np.ndarray, t: np.ndarray, num_goals: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``draw_goal_steps``'s arguments as int64 arrays, ``own_steps`` checked to be ``(B, num_goals)``."""
    own = np.asarray(own_steps, dtype=np.int64)
    length = np.asarray(length, dtype=np.int64)
    t = np.asarray(t, dtype=np.int64)
    if own.ndim != 2 or own.shape[1] != num_goals:
        raise ValueError(f"own_steps must have shape (B, num_goals={num_goals}), got {own.shape}")
    return own, length, t


def _goal_counts(own: np.ndarray, strategy: str, rng: np.random.Generator, at_least_one: bool) -> np.ndarray:
    """How many goals each row draws (h): its own unreached goals for "all", a uniform share of them for "some"
    (one ``rng.random(B)`` call, which the compiled draw reproduces value by value)."""
    k = own.shape[1]
    free = k - (own > 0).sum(axis=1) - (own < -1).sum(axis=1)  # own unreached goals (-2: padding)
    if strategy == "all":
        return free
    if at_least_one:  # "some" with at least one drawn goal: h uniform in 1..free
        return np.minimum(1 + (rng.random(len(own)) * free).astype(np.int64), free)
    return (rng.random(len(own)) * (free + 1)).astype(np.int64)  # "some": h uniform in 0..free


def _draw_alternatives(own: np.ndarray, length: np.ndarray, t: np.ndarray, h: np.ndarray, rng: np.random.Generator,
                       future: bool) -> tuple[np.ndarray, np.ndarray]:
    """The k alternatives of every row, in turn: ``(excluded, h)``, ``excluded`` the ``(B, 2k)`` own reach steps and
    drawn steps (:data:`_NO_STEP` where none), ``h`` 0 where not even a first alternative was admissible.

    Alternative i is drawn for rows with ``i < h`` from the steps no earlier one holds; with ``future`` the first one
    from ``t+1..T``, the others (and all with ``episode``) from ``1..T``."""
    batch, k = own.shape
    excluded = np.concatenate([np.where(own > 0, own, _NO_STEP), np.full((batch, k), _NO_STEP, dtype=np.int64)],
                              axis=1)
    ones = np.ones(batch, dtype=np.int64)
    for i in range(k):
        lo = t + 1 if (i == 0 and future) else ones
        span = length - lo + 1
        present = excluded[:, : k + i]  # own reach steps and earlier picks: distinct steps (or _NO_STEP)
        free_steps = span - ((present >= lo[:, None]) & (present <= length[:, None])).sum(axis=1)
        active = (i < h) & (free_steps > 0)
        draw = _draw_free_step(lo, span, present, active, rng)
        if i == 0:
            h = np.where(active, h, 0)  # no admissible first alternative: keep the own instruction
        excluded[:, k + i] = np.where(active, draw, _NO_STEP)
    return excluded, h


def _draw_free_step(lo: np.ndarray, span: np.ndarray, present: np.ndarray, active: np.ndarray,
                    rng: np.random.Generator) -> np.ndarray:
    """One step per row uniform in ``lo..lo+span-1``, and for the ``active`` rows none of ``present``: uniform over
    the free steps by rejection (at most 2k - 1 of the span's steps are excluded), redrawing only the clashes."""
    draw = lo + (rng.random(len(lo)) * np.maximum(span, 1)).astype(np.int64)
    clash = np.flatnonzero(active & (draw[:, None] == present).any(axis=1))
    while len(clash):
        draw[clash] = lo[clash] + (rng.random(len(clash)) * span[clash]).astype(np.int64)
        clash = clash[(draw[clash, None] == present[clash]).any(axis=1)]
    return draw


def _merged_goal_steps(excluded: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``draw_goal_steps``'s answer: each row's first k own and drawn steps in ascending order, -1 for no step and on
    the rows that keep their own instruction (``h == 0``)."""
    k = excluded.shape[1] // 2
    merged = np.sort(excluded, axis=1)[:, :k]
    out = np.where(merged < _NO_STEP, merged, -1)
    out[h == 0] = -1
    return out
