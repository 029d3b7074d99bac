"""Template sb3-hir plugin: copy this package, rename it, and replace the components.

Contributes relabeler ``"final-goal"``, beta schedule ``"cosine"`` and draw strategy ``"near-future"``.
"""

from __future__ import annotations

import math

import numpy as np

from sb3_hir import hookimpl
from sb3_hir.buffers.draws import Candidates, DrawStrategy, DrawView, Instructions
from sb3_hir.episodes import Episode
from sb3_hir.relabel import InstructionRelabeler

__all__ = ["CosineBetaSchedule", "FinalGoalRelabeler", "NearFutureDraw"]


class FinalGoalRelabeler(InstructionRelabeler):
    """HER's ``final`` strategy for instructions: the goals really reached stay, and the place where the episode
    ended becomes the next goal.

    It is deterministic, so it adds one extra success per failed episode, where ``hindsight-instruction`` adds
    several random ones.

    :param num_goals: length k of the instruction.
    :param goal_spec: goal spec name or instance.
    """

    #: Reached goals stay in place, so the return never drops.
    never_lowers_return = True

    def relabel_goals(self, episode: Episode, rng: np.random.Generator) -> np.ndarray | None:
        spec = self.goal_spec
        goals = np.array(episode.observations[spec.goals_key][0], copy=True)
        achieved = spec.achieved_values(episode.observations[spec.achieved_key], goals.shape[1:])
        steps = self.reach_steps(achieved, goals)
        n_reached = int((steps >= 0).sum())
        length = len(episode)
        if length == 0 or n_reached >= self.num_goals:
            return None
        if n_reached > 0 and steps[n_reached - 1] == length:
            return None  # the episode already ends on a reached goal: nothing new to credit
        goals[n_reached] = achieved[length]
        return goals


class CosineBetaSchedule:
    """beta follows half a cosine from 1 to 0 over ``rampdown_rounds``: a gentler start than linear decay.

    :param rampdown_rounds: rounds until beta reaches 0.
    """

    def __init__(self, rampdown_rounds: int = 10) -> None:
        if not isinstance(rampdown_rounds, int) or rampdown_rounds < 1:
            raise ValueError(f"rampdown_rounds must be an integer >= 1; got {rampdown_rounds!r}")
        self.rampdown_rounds = rampdown_rounds

    def __call__(self, round_num: int) -> float:
        if round_num < 0:
            raise ValueError(f"round_num must be >= 0; got {round_num!r}")
        progress = min(round_num, self.rampdown_rounds) / self.rampdown_rounds
        return 0.5 * (1.0 + math.cos(math.pi * progress))


class NearFutureDraw(DrawStrategy):
    """One-goal hindsight instructions whose goal lies a geometric number of steps ahead of the transition: near
    goals more often than HER's uniform ``future`` rule, a curriculum over goal distance.

    The goal is the value achieved ``Geometric(p)`` steps after the transition (capped at the episode's end). Its
    reach is the value's first reach in the episode; a goal already reached at or before the transition would have
    ended the relabeled episode there, so the buffer drops that pair and draws again.

    :param p: the geometric law's parameter: the mean offset is ``1 / p`` steps (1: always the next step).
    """

    def __init__(self, p: float = 0.5) -> None:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p <= 1.0:
            raise ValueError(f"p must be a number in (0, 1]; got {p!r}")
        self.p = float(p)
        super().__init__()

    def setup(self, view: DrawView) -> None:
        if view.num_goals != 1 or view.goal_env:
            raise ValueError(f"draw strategy 'near-future' draws one-goal instructions for instruction envs; this "
                             f"buffer's have {view.num_goals} goals{' (GoalEnv mode)' if view.goal_env else ''}")

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        size, start, env, t, length = view.buffer_size, rows.start, rows.env, rows.t, rows.length
        steps = np.minimum(t + view.rng.geometric(self.p, size=len(t)), length)  # a step in t+1..T
        goals = view.achieved_at((start + steps - 1) % size, env)[:, None]  # (B, 1, *goal_shape)
        offsets = np.arange(int(length.max()))
        window = view.achieved_at((start[:, None] + np.minimum(offsets, length[:, None] - 1)) % size, env[:, None])
        hits = np.asarray(view.goal_spec.reached(window, goals), dtype=bool) & (offsets < length[:, None])
        first = np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, -1)  # always found: the goal is reached at steps
        return Instructions(goals.astype(view.goals_dtype, copy=False), first[:, None])


@hookimpl
def register_relabelers(register):
    register("final-goal", FinalGoalRelabeler)


@hookimpl
def register_beta_schedules(register):
    register("cosine", CosineBetaSchedule)


@hookimpl
def register_draw_strategies(register):
    register("near-future", NearFutureDraw)
