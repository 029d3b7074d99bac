"""A goal-free memory in the observation, so that unchanged SB3 algorithms and imitation's BC get a recurrent learner.

SB3 has no recurrent DQN, SAC, TD3 or TQC, and imitation's ``bc.BC`` trains only feed-forward policies, yet
MazeRunner (a new, unseen maze every episode) needs memory. :class:`HistoryWrapper` puts the last ``length`` steps
of chosen observation keys, each with the action that led to it, into one more Dict key. Every algorithm, replay
buffer and collector then stores and serves the window like any other observation, and
:class:`~sb3_hir.extractors.HistoryExtractor` encodes it inside the policy.

Why the window never holds goals or rewards: hindsight relabeling rewrites an episode's instruction, and
:meth:`~sb3_hir.relabel.InstructionRelabeler.replay` keeps every other observation key as recorded. That is only
faithful for keys the instruction cannot change. The agent's own observations and actions qualify (the env would
have produced them under any instruction until it ends the episode); the instruction, the reached-goal mask and the
reward do not. The wrapper therefore refuses the instruction's key, and rewards never enter.

Row ``i`` of the window, oldest first, is ``[observation keys at step t - length + 1 + i, flattened | the action
taken before that observation (one-hot for discrete spaces) | valid]``; the last row is the current observation.
Before an episode's first step the rows are zeros with ``valid = 0``, so an episode start is visible to the encoder.
The wrapper sits on each sub-env (a ``gymnasium.Wrapper``, not a VecEnv wrapper), so ``SubprocVecEnv`` builds the
window in the worker processes and SB3's auto-reset gives ``terminal_observation`` the ended episode's window::

    from stable_baselines3.common.env_util import make_vec_env
    from sb3_hir.history import HistoryWrapper

    venv = make_vec_env("sb3_hir/MazeRunner-v0", n_envs=8, wrapper_class=HistoryWrapper,
                        wrapper_kwargs=dict(length=16))

:mod:`sb3_hir.action_features` keeps memory of another shape under the same rule: per discrete action, what the
agent has seen it do this episode, which a short window forgets and which tells an agent whose controls are
permuted every episode what each action does.

``VecNormalize`` works on top (it normalizes each window entry with its own statistics, padding included); for
relabeling, normalize with ``norm_obs_keys`` that leave the instruction out, as for any Dict env.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_hir._validate import check_int, check_keys
from sb3_hir.contract import ENV_GOAL_SPEC, declared

__all__ = ["HISTORY_KEY", "HistoryWrapper", "goal_free_keys", "window_dtype"]

#: The Dict key the window goes under, unless ``key=`` says otherwise.
HISTORY_KEY = "history"
#: Keys that carry the instruction in this project's envs; they may never enter the window.
_INSTRUCTION_KEYS = ("goals",)


def _action_width(space: spaces.Space) -> int:
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    if isinstance(space, (spaces.Box, spaces.MultiBinary)):
        return int(np.prod(space.shape))
    raise ValueError(
        f"env.action_space must be Discrete, MultiDiscrete, MultiBinary or Box to enter the history; got {space!r}"
    )


def _small_ints(space: spaces.Space) -> bool:
    """Every value of ``space`` is an integer in [0, 255]."""
    if isinstance(space, spaces.Discrete):
        return int(space.start) >= 0 and int(space.start) + int(space.n) - 1 <= 255
    if isinstance(space, spaces.Box):
        dtype = np.dtype(space.dtype)
        return ((np.issubdtype(dtype, np.integer) or dtype == np.bool_)
                and bool(np.all(space.low >= 0)) and bool(np.all(space.high <= 255)))
    return False


def window_dtype(env: gym.Env, keys: Iterable[str] = ("obs",), include_action: bool = True,
                 dtype: Any = "auto") -> np.dtype:
    """The window's dtype: ``auto`` is uint8 when every entry is an integer in [0, 255] (integer observations such
    as BabyAI's grid codes, one-hot actions, the valid flag), else float32.

    The window is stored twice per replay row (observation and next observation), so its dtype sets the buffer's
    size: a 400k-row DQN buffer of BabyAI windows (16 x 156) is 8 GB in float32 and 2 GB in uint8. Values are
    unchanged: SB3's ``preprocess_obs`` casts a non-image Box to float before the policy sees it.
    """
    fits = all(_small_ints(cast(spaces.Dict, env.observation_space)[name]) for name in keys) and (
        not include_action or isinstance(env.action_space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)))
    if isinstance(dtype, str) and dtype == "auto":
        return np.dtype(np.uint8 if fits else np.float32)
    try:
        chosen = np.dtype(dtype)
    except TypeError:
        chosen = None
    if chosen not in (np.dtype(np.uint8), np.dtype(np.float32)):
        raise ValueError(f"dtype must be 'auto', 'uint8' or 'float32'; got {dtype!r}")
    if chosen == np.uint8 and not fits:
        raise ValueError("dtype uint8 holds integers in [0, 255] only; the window's keys or actions (Box actions are "
                         f"stored as they are) take other values: use 'auto' or 'float32'; keys {list(keys)}")
    return chosen


def goal_free_keys(env: gym.Env, keys: str | Iterable[str], key: str) -> list[str]:
    """``keys`` as a list after checking them and the new ``key`` against ``env``'s Dict space and instruction.

    Memory in the observation may hold only keys the instruction cannot change (see the module docstring).
    """
    space = env.observation_space
    if not isinstance(space, spaces.Dict):
        raise ValueError(f"env must have a Dict observation space to add a {key!r} key to; got {space!r}")
    selected = check_keys(keys, space.spaces)
    spec = declared(env, ENV_GOAL_SPEC)
    forbidden = {*_INSTRUCTION_KEYS, *([spec.goals_key] if hasattr(spec, "goals_key") else [])}
    goal_keys = [k for k in selected if k in forbidden]
    if goal_keys:
        raise ValueError(
            f"keys must not include the instruction key {goal_keys}: memory that depends on the instruction "
            "would make relabeled observations unfaithful (see sb3_hir.history)"
        )
    if not isinstance(key, str) or key in space.spaces:
        raise ValueError(f"key must be a str not already in the observation space {list(space.spaces)}; got {key!r}")
    return selected


def _key_bounds(space: spaces.Dict, selected: list[str]) -> tuple[list[np.ndarray], list[np.ndarray], list[int]]:
    """The flattened float32 bounds of each window key, and its width: ``(lows, highs, sizes)``. A key must be a Box
    or a Discrete (its values ``start..start+n-1``)."""
    lows, highs, sizes = [], [], []
    for name in selected:
        sub = space.spaces[name]
        if isinstance(sub, spaces.Box):
            lows.append(np.asarray(sub.low, dtype=np.float32).ravel())
            highs.append(np.asarray(sub.high, dtype=np.float32).ravel())
        elif isinstance(sub, spaces.Discrete):
            lows.append(np.array([sub.start], dtype=np.float32))
            highs.append(np.array([sub.start + sub.n - 1], dtype=np.float32))
        else:
            raise ValueError(f"keys must name Box or Discrete observation keys; {name!r} is {sub!r}")
        sizes.append(lows[-1].size)
    return lows, highs, sizes


def _action_bounds(space: spaces.Space, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The bounds of the action columns: a Box action's own (its values are stored clipped to them), 0 and 1 for
    the one-hot encodings of the discrete spaces."""
    if isinstance(space, spaces.Box):
        return np.asarray(space.low, dtype=np.float32).ravel(), np.asarray(space.high, dtype=np.float32).ravel()
    return np.zeros(width, dtype=np.float32), np.ones(width, dtype=np.float32)


def _row_layout(keys: tuple[str, ...], sizes: list[int], include_action: bool, action_width: int
                ) -> dict[str, slice]:
    """:attr:`HistoryWrapper.layout`: the columns of each observation key in order, then ``"action"`` (when the
    window holds actions) and ``"valid"``."""
    layout: dict[str, slice] = {}
    start = 0
    for name, size in zip(keys, sizes, strict=True):
        layout[name] = slice(start, start + size)
        start += size
    if include_action:
        layout["action"] = slice(start, start + action_width)
        start += action_width
    layout["valid"] = slice(start, start + 1)
    return layout


class HistoryWrapper(gym.Wrapper):
    """Add ``key``: the last ``length`` observations of ``keys`` with the previous actions, zero-padded at a reset.

    Memory for learners that have none (DQN, SAC, TQC, imitation's BC): the window travels in the observation, where
    every unchanged algorithm, buffer and collector carries it, and it holds no goals, so relabeling stays faithful.

    The window is a ``Box(length, width)``; ``width`` is the flattened size of ``keys`` plus the action encoding
    (``include_action``) plus one valid channel. :attr:`layout` names the columns of each part. Its dtype is uint8
    when every entry is a small integer, else float32 (:func:`window_dtype`: a quarter of the replay memory).

    :param env: env with a Dict observation space (MazeRunner, ``InstructionWrapper``, any Dict env).
    :param length: steps in the window, current one included (>= 1).
    :param keys: observation keys that enter the window (Box or Discrete); never the instruction key.
    :param key: name of the new observation key.
    :param include_action: append the action taken before each observation (one-hot for ``Discrete``).
    :param dtype: ``"auto"`` (uint8 when every entry fits, else float32), ``"uint8"`` or ``"float32"``. A uint8
        window refuses a step whose value lies outside [0, 255] (the env's declared bounds are wrong) rather than
        store it wrapped.
    """

    def __init__(
        self,
        env: gym.Env,
        length: int = 16,
        keys: str | Iterable[str] = ("obs",),
        key: str = HISTORY_KEY,
        include_action: bool = True,
        dtype: Any = "auto",
    ) -> None:
        super().__init__(env)
        selected = goal_free_keys(env, keys, key)
        check_int(length, "length", 1, hint="steps in the window")
        self.dtype = window_dtype(env, selected, bool(include_action), dtype)
        self._auto = isinstance(dtype, str) and dtype == "auto"
        space = cast(spaces.Dict, env.observation_space)  # goal_free_keys refuses any other
        lows, highs, self._sizes = _key_bounds(space, selected)
        self.include_action = bool(include_action)
        action_width = _action_width(env.action_space) if self.include_action else 0
        self._action_bounds = _action_bounds(env.action_space, action_width) if self.include_action else None
        if self._action_bounds is not None:
            lows.append(self._action_bounds[0])
            highs.append(self._action_bounds[1])
        lows.append(np.zeros(1, dtype=np.float32))
        highs.append(np.ones(1, dtype=np.float32))
        # Padding rows are zeros, so every bound includes 0.
        low = np.minimum(np.concatenate(lows), 0.0)
        high = np.maximum(np.concatenate(highs), 0.0)
        self.length = int(length)
        self.keys: tuple[str, ...] = tuple(selected)
        self.key = key
        self.width = int(low.size)
        #: Column slices of each part of a row: every observation key, then "action" and "valid".
        self.layout: dict[str, slice] = _row_layout(self.keys, self._sizes, self.include_action, action_width)
        self._obs_width = sum(self._sizes)
        self.observation_space = spaces.Dict(
            {
                **space.spaces,
                key: spaces.Box(np.tile(low, (self.length, 1)).astype(self.dtype),
                                np.tile(high, (self.length, 1)).astype(self.dtype), dtype=self.dtype.type),
            }
        )
        self._window = np.zeros((self.length, self.width), dtype=self.dtype)

    def _row(self, obs: dict[str, Any], action: Any) -> np.ndarray:
        row = np.zeros(self.width, dtype=np.float32)
        start = 0
        for name, size in zip(self.keys, self._sizes, strict=True):
            row[start : start + size] = np.asarray(obs[name], dtype=np.float32).ravel()
            start += size
        if self.include_action and action is not None:
            space = self.env.action_space
            if isinstance(space, spaces.Discrete):
                row[start + int(action) - int(space.start)] = 1.0
            elif isinstance(space, spaces.MultiDiscrete):
                offsets = np.concatenate([[0], np.cumsum(space.nvec.ravel())[:-1]])
                row[start + offsets + (np.asarray(action).ravel() - space.start.ravel())] = 1.0
            else:
                bounds = self._action_bounds
                assert bounds is not None  # set whenever include_action
                row[self.layout["action"]] = np.clip(np.asarray(action, dtype=np.float32).ravel(), *bounds)
        row[-1] = 1.0
        return row

    def _push(self, obs: dict[str, Any], action: Any) -> dict[str, Any]:
        row = self._row(obs, action)
        if self.dtype == np.uint8:
            self._check_small(row)
        window = self._window
        window[:-1] = window[1:]
        window[-1] = row  # exact in uint8: window_dtype chose it only for small integers, and _check_small holds it
        return {**obs, self.key: window.copy()}

    def _check_small(self, row: np.ndarray) -> None:
        """Refuse a value uint8 cannot hold: the env's declared bounds chose uint8, and numpy would wrap the value
        (300 stored as 44), a silently different observation. One comparison per step."""
        outside = (row < 0) | (row > 255)
        if not outside.any():
            return
        column = int(np.argmax(outside))
        name = next(n for n, part in self.layout.items() if part.start <= column < part.stop)
        space = self.env.observation_space
        sub = space[name] if isinstance(space, spaces.Dict) and name in self.keys else self.env.action_space
        raise ValueError(
            f"HistoryWrapper: observation[{name!r}] holds {row[column]:g}, outside the bounds the env declares for it "
            f"({sub}), from which dtype {'auto' if self._auto else 'uint8'} chose a uint8 window that holds "
            f"[0, 255] only: it would be stored as {int(row[column]) % 256}. Fix the env's observation_space, or "
            "pass dtype='float32'"
        )

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._window[:] = 0.0
        return self._push(obs, None), info

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._push(obs, action), reward, terminated, truncated, info

