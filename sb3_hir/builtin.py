"""The built-in plugin: sb3-hir's own components, registered exactly as a third-party plugin registers its own.

It is declared under ``[project.entry-points.sb3_hir]`` in ``pyproject.toml``; imports happen inside the hooks
so that listing plugins stays cheap until a component is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

    if isinstance(rampdown_rounds, bool) or not isinstance(rampdown_rounds, int) or rampdown_rounds < 1:
        raise ValueError(f"rampdown_rounds must be an integer >= 1; got {rampdown_rounds!r}")
    return dagger.LinearBetaSchedule(rampdown_rounds)


def exponential_beta_schedule(decay_probability: float = 0.5) -> ExponentialBetaSchedule:
    """imitation's exponential schedule: beta = decay_probability ** round."""
    dagger = require("imitation.algorithms.dagger", "beta schedule 'exponential'")
    if isinstance(decay_probability, bool) or not isinstance(decay_probability, int | float) or not (
        0.0 < decay_probability <= 1.0
    ):
        raise ValueError(f"decay_probability must be a number in (0, 1]; got {decay_probability!r}")
    return dagger.ExponentialBetaSchedule(decay_probability)


@hookimpl
def register_beta_schedules(register: Register) -> None:
    if not has("imitation"):  # imitation's schedules: they come with DAgger, in the 'dagger' extra
        return
    register("linear", linear_beta_schedule)
    register("exponential", exponential_beta_schedule)
