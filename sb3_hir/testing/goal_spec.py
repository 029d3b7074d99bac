"""``check_goal_spec``: a goal spec's attributes and its vectorised ``reached`` / ``is_masked``.

The buffer judges whole batches of goals at once; a ``reached`` that only handles one pair, or an ``is_masked``
that fires on one masked component, relabels silently wrong, so both are checked against one-at-a-time calls.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_hir import resolvers
from sb3_hir.testing.registry import PluginCheckOptions, register_check
from sb3_hir.testing.rollout import create, describe, fail, show

if TYPE_CHECKING:
    from sb3_hir.goals import GoalSpec

__all__ = ["check_goal_spec"]

_CHECK = "check_goal_spec"

#: Test goals per check: enough pairs for the vectorised-vs-single comparison, few enough to stay instant.
_N_GOALS = 6


def check_goal_spec(spec: GoalSpec | str, goal_shape: Sequence[int] | None = None, seed: int = 0) -> None:
    """Check a goal spec's contract: attributes, vectorised ``reached`` and ``is_masked``.

    ``reached`` must say a goal reaches itself and a goal 1000 away does not, return a bool array of the
    broadcast leading shape, and agree with one-pair-at-a-time calls; ``is_masked`` must be True on a goal made
    of ``mask_value`` only and False otherwise.

    :param spec: instance, or registered name or class (created with its defaults).
    :param goal_shape: shape of one goal; default ``(2,) * spec.goal_ndim``.
    :param seed: seed of the random test goals.
    """
    if isinstance(spec, str | type):
        spec = resolvers.resolve_goal_spec(spec, argument="spec")
    name = describe(spec)
    mask = _check_attributes(name, spec)
    if goal_shape is None:
        goal_shape = (2,) * int(getattr(spec, "goal_ndim", 1))
    goal_shape = tuple(int(d) for d in goal_shape)
    rng = np.random.default_rng(seed)
    # Integer-valued goals away from the mask value, so that exact and tolerance specs judge them alike.
    goals = (mask + 1 + rng.integers(0, 20, size=(_N_GOALS, *goal_shape))).astype(np.float64)
    place = f"{name}, seed={seed}"
    _check_reached(place, spec, goals, goal_shape)
    _check_is_masked(place, spec, goals, goal_shape, mask)


@register_check("goal_spec")
def _check_goal_spec_component(factory: Callable[..., Any], options: PluginCheckOptions) -> None:
    """A plugin's goal spec, created with its defaults, keeps the goal-spec contract."""
    check_goal_spec(create(factory), seed=options.seed)


def _check_attributes(name: str, spec: Any) -> Any:
    """Keys, ``mask_value`` and ``goal_reward`` the buffer reads; returns ``mask_value``."""
    for attribute in ("goals_key", "achieved_key"):
        value = getattr(spec, attribute, None)
        if not isinstance(value, str) or not value:
            fail(_CHECK, name, f"{attribute} must be a non-empty str, got {value!r}")
    if spec.goals_key == spec.achieved_key:
        fail(_CHECK, name, f"goals_key and achieved_key must differ, both are {spec.goals_key!r}")
    mask = getattr(spec, "mask_value", None)
    if not isinstance(mask, numbers.Real) or isinstance(mask, bool):
        fail(_CHECK, name, f"mask_value must be a number, got {mask!r}")
    reward = getattr(spec, "goal_reward", None)
    if not isinstance(reward, numbers.Real) or isinstance(reward, bool) or not math.isfinite(reward):
        fail(_CHECK, name, f"goal_reward must be a finite number, got {reward!r}")
    return mask


def _check_reached(place: str, spec: Any, goals: np.ndarray, goal_shape: tuple[int, ...]) -> None:
    """``reached``: self-reach, far misses, bool output of the broadcast shape, vectorised == one at a time."""
    n = len(goals)
    same = np.asarray(spec.reached(goals, goals))
    if same.shape != (n,) or same.dtype != np.bool_:
        fail(_CHECK, place, f"reached(achieved, goal) on {n} goals of shape {goal_shape} must return a bool array of "
                            f"shape ({n},), got {same.dtype} {same.shape}")
    if not same.all():
        j = int(np.flatnonzero(~same)[0])
        fail(_CHECK, place, f"a goal must reach itself, but reached({show(goals[j])}, {show(goals[j])}) is False")
    far = np.asarray(spec.reached(goals + 1000.0, goals))
    if far.any():
        j = int(np.flatnonzero(far)[0])
        fail(_CHECK, place, f"reached({show(goals[j] + 1000.0)}, {show(goals[j])}) is True for values 1000 apart")
    table = np.asarray(spec.reached(goals[:, None], goals[None]))
    if table.shape != (n, n):
        fail(_CHECK, place, f"reached must broadcast leading dims: achieved {(n, 1, *goal_shape)} against goals "
                            f"{(1, n, *goal_shape)} gave shape {table.shape}, expected {(n, n)}")
    for a in range(n):
        for b in range(n):
            single = bool(np.asarray(spec.reached(goals[a], goals[b])))
            if single != bool(table[a, b]):
                fail(_CHECK, place, f"reached({show(goals[a])}, {show(goals[b])}) is {single} alone but "
                                    f"{bool(table[a, b])} when vectorised")


def _check_is_masked(place: str, spec: Any, goals: np.ndarray, goal_shape: tuple[int, ...], mask: Any) -> None:
    """``is_masked``: True exactly on goals made of ``mask_value`` only (every component)."""
    n = len(goals)
    masked = np.asarray(spec.is_masked(np.full((n, *goal_shape), mask, dtype=np.float64)))
    if masked.shape != (n,) or not masked.all():
        fail(_CHECK, place, f"is_masked on {n} goals filled with mask_value={mask!r} must be {n} Trues, got "
                            f"{show(masked)}")
    unmasked = np.asarray(spec.is_masked(goals))
    if unmasked.any():
        j = int(np.flatnonzero(unmasked)[0])
        fail(_CHECK, place, f"is_masked({show(goals[j])}) is True but the goal is not the mask value {mask!r}")
    if int(np.prod(goal_shape)) > 1:
        partial = goals.copy()
        partial.reshape(n, -1)[:, 0] = mask
        if np.asarray(spec.is_masked(partial)).any():
            fail(_CHECK, place, f"is_masked must need every component to be the mask value, but "
                                f"is_masked({show(partial[0])}) is True")
