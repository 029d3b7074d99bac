"""The built-in plugin: sb3-hir's own components, registered exactly as a third-party plugin registers its own.

It is declared under ``[project.entry-points.sb3_hir]`` in ``pyproject.toml``; imports happen inside the hooks
so that listing plugins stays cheap until a component is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sb3_hir._validate import check_int, check_number
from sb3_hir.extras import has, require
from sb3_hir.hookspecs import Register, hookimpl

if TYPE_CHECKING:
    from imitation.algorithms.dagger import ExponentialBetaSchedule, LinearBetaSchedule


@hookimpl
def register_relabelers(register: Register) -> None:
    from sb3_hir.relabel import HindsightInstructionRelabeler

    register("hindsight-instruction", HindsightInstructionRelabeler)


@hookimpl
def register_goal_specs(register: Register) -> None:
    from sb3_hir.goals import ExactGoalSpec, ToleranceGoalSpec

    register("exact", ExactGoalSpec)
    register("tolerance", ToleranceGoalSpec)


@hookimpl
def register_envs(register: Register) -> None:
    from sb3_hir.envs import MazeRunnerEnv

    register("mazerunner", MazeRunnerEnv)


@hookimpl
def register_experts(register: Register) -> None:
    from sb3_hir.envs import ShortestPathExpert

    register("shortest-path", ShortestPathExpert)


def linear_beta_schedule(rampdown_rounds: int = 15) -> LinearBetaSchedule:
    """imitation's linear schedule: beta falls from 1 to 0 over ``rampdown_rounds`` (imitation's default 15)."""
    dagger = require("imitation.algorithms.dagger", "beta schedule 'linear'")

    check_int(rampdown_rounds, "rampdown_rounds", 1)
    return dagger.LinearBetaSchedule(rampdown_rounds)


def exponential_beta_schedule(decay_probability: float = 0.5) -> ExponentialBetaSchedule:
    """imitation's exponential schedule: beta = decay_probability ** round."""
    dagger = require("imitation.algorithms.dagger", "beta schedule 'exponential'")
    check_number(decay_probability, "decay_probability", 0.0, 1.0, open_low=True)
    return dagger.ExponentialBetaSchedule(decay_probability)


@hookimpl
def register_beta_schedules(register: Register) -> None:
    if not has("imitation"):  # imitation's schedules: they come with DAgger, in the 'dagger' extra
        return
    register("linear", linear_beta_schedule)
    register("exponential", exponential_beta_schedule)


@hookimpl
def register_draw_strategies(register: Register) -> None:
    from sb3_hir.buffers.draws import ExactIndexDraw, FirstReachDraw, HerDraw, StoredDraws, WindowDraw

    register("first-reach", FirstReachDraw, description="one goal: first reached after the transition, in O(1)")
    register("her", HerDraw, description="one goal: HER's future, episode or final rule (GoalEnv mode's draw)")
    register("exact-index", ExactIndexDraw, description="k goals, exact integer values: reaches from a value index")
    register("window", WindowDraw, description="k goals, any goal spec: reaches by comparing the episode window")
    register("stored", StoredDraws, description="relabelers without draw_goal_steps: draws made at episode ends")
