"""The uniform random policy, scored by the same evaluator as the learners.

Why: on a partially observed task a learned greedy policy can loop and score below chance (BabyAI's GoToLocal
did, issue 45); a curve means little without the level a policy that knows nothing reaches on the same episodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["EpsilonGreedy", "UniformRandomPolicy"]


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


class EpsilonGreedy:
    """``model``'s greedy action, replaced by a uniform one with probability ``epsilon``, with SB3's ``predict``.

    Why: a greedy memoryless policy in a partially observed room can loop forever where a little noise escapes;
    scoring the same model greedy and epsilon-greedy measures how much of its failure is that.

    :param model: anything with SB3's ``predict`` (an algorithm or a policy).
    :param action_space: one env's (Discrete) action space.
    :param epsilon: probability of the uniform action, in [0, 1].
    :param seed: seed of the wrapper's own generator.
    """

    def __init__(self, model: Any, action_space: spaces.Space, epsilon: float, seed: int | None = None) -> None:
        if not 0.0 <= float(epsilon) <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        self.model = model
        self.epsilon = float(epsilon)
        self.uniform = UniformRandomPolicy(action_space, seed)

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, Any]:
        actions, state = self.model.predict(observation, state, episode_start, deterministic=True)
        random_actions, _ = self.uniform.predict(observation)
        explore = self.uniform.rng.random(len(random_actions)) < self.epsilon
        return np.where(explore, random_actions, actions), state
