"""Argument checks of the DAgger API, each in one place: collector, trainers and checkpoints call these.

Every error names the argument, what it got and what is accepted, so a wrong call is fixed from the message.
"""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from sb3_hir._validate import check_choice, check_int

__all__ = [
    "RelabelLabels",
    "UnfinishedPolicy",
    "check_beta",
    "check_episodes_per_file",
    "check_policy_spaces",
    "check_positive_int",
    "check_relabel_labels",
    "check_rng",
    "check_unfinished",
]

UnfinishedPolicy = Literal["complete", "report"]
RelabelLabels = Literal["auto", "expert", "executed"]


def check_beta(beta: Any, what: str = "beta") -> float:
    """``beta`` as a float in [0, 1] (the chance of executing the expert's action)."""
    try:
        value = float(beta)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(
            f"{what} must be a probability in [0, 1] (the chance of executing the expert's action); got "
            f"{beta!r}. Use a schedule that stays in [0, 1], e.g. 'linear' or 'exponential'."
        )
    return value


def check_positive_int(value: Any, name: str) -> int:
    return check_int(value, name, 1)


def check_episodes_per_file(value: Any) -> int:
    return check_int(value, "episodes_per_file", 1, hint="1, the default, writes every episode as it ends")


def check_relabel_labels(value: Any, name: str = "relabel_labels") -> RelabelLabels:
    return check_choice(value, name, get_args(RelabelLabels))  # type: ignore[no-any-return]


def check_unfinished(value: Any, name: str = "unfinished") -> UnfinishedPolicy:
    return check_choice(value, name, get_args(UnfinishedPolicy))  # type: ignore[no-any-return]


def check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)); got {rng!r}")
    return rng


def check_policy_spaces(policy: Any, venv: VecEnv, name: str) -> None:
    """A policy that declares its spaces must have the venv's (pass a :class:`PolicyRunner`'s ``.policy``).

    The message starts with imitation's sentence (``Mismatched observation space between expert_policy and
    venv``), so code that matches imitation's errors matches ours; the detail follows it.
    """
    for attr in ("observation_space", "action_space"):
        space = getattr(policy, attr, None)
        if isinstance(space, gym.Space) and space != getattr(venv, attr):
            raise ValueError(
                f"Mismatched {attr.split('_')[0]} space between {name} and venv: {name}.{attr} {space} does not "
                f"match venv.{attr} {getattr(venv, attr)}; pass a {name} built for this environment (same spaces)"
            )
