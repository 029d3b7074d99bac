"""``check_beta_schedule``: a DAgger beta schedule is a deterministic probability, handing control over gradually.

beta is the probability that the expert acts, so anything outside ``[0, 1]`` breaks the collector, and a schedule
that differs between two calls for one round makes a run impossible to reproduce.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from sb3_hir import resolvers
from sb3_hir.testing.registry import PluginCheckOptions, register_check
from sb3_hir.testing.rollout import check_count, create, describe, fail, show

__all__ = ["check_beta_schedule"]

_CHECK = "check_beta_schedule"


def check_beta_schedule(schedule: Callable[[int], float] | str, rounds: int = 50, non_increasing: bool = True) -> None:
    """Check a DAgger beta schedule: ``schedule(r)`` is a number in ``[0, 1]`` for ``r = 0..rounds-1``.

    beta is the probability that the expert acts, so anything outside ``[0, 1]`` breaks the collector. The
    schedule must be deterministic and, unless ``non_increasing=False``, hand control to the learner gradually
    (beta never rises), as imitation's and sb3-hir's schedules do.

    :param schedule: the callable, or a registered ``"beta_schedule"`` name or a class (created with its defaults).
    """
    rounds = check_count(rounds, "rounds")
    if isinstance(schedule, str | type):
        schedule = resolvers.resolve_beta_schedule(schedule, argument="schedule")
    name = describe(schedule)
    if not callable(schedule):
        fail(_CHECK, name, "a beta schedule must be callable as schedule(round_num) -> beta")
    previous: float | None = None
    for round_num in range(rounds):
        beta = schedule(round_num)
        place = f"{name}, round {round_num}"
        if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not math.isfinite(beta):
            fail(_CHECK, place, f"beta must be a finite real number, got {type(beta).__name__} {show(beta)}")
        if not 0.0 <= beta <= 1.0:
            fail(_CHECK, place, f"beta = {beta!r} lies outside [0, 1] (it is the probability that the expert acts)")
        again = schedule(round_num)
        if again != beta:
            fail(_CHECK, place, f"not deterministic: beta = {beta!r}, then {again!r} for the same round")
        if non_increasing and previous is not None and beta > previous:
            fail(_CHECK, place, f"beta rose from {previous!r} (round {round_num - 1}) to {beta!r}; a schedule hands "
                                f"control to the learner and must not increase (pass non_increasing=False to allow)")
        previous = float(beta)


@register_check("beta_schedule")
def _check_beta_schedule_component(factory: Callable[..., Any], options: PluginCheckOptions) -> None:
    """A plugin's beta schedule, created with its defaults, is a valid schedule."""
    check_beta_schedule(create(factory))
