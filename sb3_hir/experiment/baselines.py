"""The uniform random policy, scored by the same evaluator as the learners.

Why: on a partially observed task a learned greedy policy can loop and score below chance (BabyAI's GoToLocal
did, issue 45); a curve means little without the level a policy that knows nothing reaches on the same episodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["UniformRandomPolicy"]


class UniformRandomPolicy:
    """Actions drawn uniformly from ``action_space``, with SB3's ``predict`` signature (so
    :func:`sb3_hir.callbacks.evaluate_instruction_policy` and SB3's ``evaluate_policy`` take it as a model).

    :param action_space: one env's action space.
    :param seed: seed of the policy's own generator (the action space is copied, never reseeded).
    """

    def __init__(self, action_space: spaces.Space, seed: int | None = None) -> None:
        if not isinstance(action_space, spaces.Space):
            raise TypeError(f"action_space must be a gymnasium Space, got {type(action_space).__name__}")
        self.action_space = action_space
        self.rng = np.random.default_rng(seed)

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, None]:
        """One action per env of the (vectorised) ``observation``."""
        first = next(iter(observation.values())) if isinstance(observation, dict) else observation
        n = int(np.asarray(first).shape[0])
        if isinstance(self.action_space, spaces.Discrete):
            actions = self.action_space.start + self.rng.integers(self.action_space.n, size=n)
        elif isinstance(self.action_space, spaces.Box):
            low, high = self.action_space.low, self.action_space.high
            if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
                raise ValueError("a uniform random policy needs a bounded Box action space")
            actions = self.rng.uniform(low, high, size=(n, *self.action_space.shape)).astype(self.action_space.dtype)
        else:
            raise TypeError(f"action_space must be Discrete or a bounded Box, got {self.action_space}")
        return np.asarray(actions), None
