"""Template sb3-hir plugin: copy this package, rename it, and replace the components.

Contributes relabeler ``"final-goal"`` and beta schedule ``"cosine"``.
"""

from __future__ import annotations

import math

import numpy as np

from sb3_hir import hookimpl
from sb3_hir.episodes import Episode
from sb3_hir.relabel import InstructionRelabeler

__all__ = ["CosineBetaSchedule", "FinalGoalRelabeler"]


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


@hookimpl
def register_relabelers(register):
    register("final-goal", FinalGoalRelabeler)


@hookimpl
def register_beta_schedules(register):
    register("cosine", CosineBetaSchedule)
