"""Per-action features from the agent's own experience, so a policy can tell what each action does this episode.

With controls that change every episode (MazeRunner's ``randomized_actions=True``) an action's index says nothing
about its move; what the agent has seen each action do does. :class:`ActionFeaturesWrapper` adds one more Dict key,
a ``(n_actions, d)`` table with one row per action, that the per-action Q heads of :mod:`sb3_hir.policies` read
row by row. The table is built by an :class:`ActionFeatures` tracker from the observations and actions only, never
goals or rewards, so relabeled observations stay faithful (the rule of :mod:`sb3_hir.history`) and
:func:`sb3_hir.testing.check_instruction_env` passes with it on.

Two trackers:

- :class:`EffectTable` (generic, any Dict env with Discrete actions): per action, the last change it made to the
  observation, which a later try without effect (a wall bump) does not erase, and whether it was ever seen to do
  nothing. :class:`ActionEffectWrapper` is the wrapper with this tracker.
- the env's own, through the contract below: what only the env's author knows (MazeRunner: a blocked try rules out
  every move that was open, and the moves are a permutation) gives sharper features. MazeRunner's is
  :class:`sb3_hir.envs.move_belief.MoveBelief`.

The contract (:mod:`sb3_hir.contract`): an env, or any wrapper around it, may define

- ``action_features()`` returning a fresh :class:`ActionFeatures` (``ActionFeaturesWrapper(env, "env")`` uses it);
- ``effect_columns``: the flattened observation columns whose change is an action's effect, for
  :class:`EffectTable` (a clock that advances on every step is not an effect; MazeRunner declares its row and
  column). Without it, :class:`EffectTable` finds a clock itself (see there).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, SupportsFloat, cast, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_hir._validate import check_choice, check_number, describe
from sb3_hir.contract import ACTION_FEATURES, EFFECT_COLUMNS, declared
from sb3_hir.history import goal_free_keys

__all__ = [
    "ACTION_FEATURES_KEY",
    "EFFECTS_KEY",
    "FEATURE_SOURCES",
    "ActionEffectWrapper",
    "ActionFeatures",
    "ActionFeaturesWrapper",
    "EffectTable",
]

#: The Dict key of :class:`ActionFeaturesWrapper`'s table, unless ``key=`` says otherwise.
ACTION_FEATURES_KEY = "action_features"
#: The Dict key of :class:`ActionEffectWrapper`'s table, unless ``key=`` says otherwise.
EFFECTS_KEY = "effects"
#: ``features=`` names of :class:`ActionFeaturesWrapper`: the generic effect table, or the env's own tracker.
FEATURE_SOURCES = ("effects", "env")
#: Steps (of at least two different actions) after which :class:`EffectTable`, given no effect columns, takes a column
#: that changed by the same nonzero amount on every one of them for a clock.
CLOCK_STEPS = 8


@runtime_checkable
class ActionFeatures(Protocol):
    """Builds one episode's ``(n_actions, d)`` table from the observations and the actions taken, nothing else.

    ``space`` is the table's float32 Box; ``reset`` and ``update`` return a fresh table (the caller keeps it).
    """

    space: spaces.Box

    def reset(self, obs: dict[str, Any]) -> np.ndarray: ...

    def update(self, action: int, obs: dict[str, Any]) -> np.ndarray: ...


def _flat_keys(env: gym.Env, keys: str | Iterable[str]) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    """The goal-free Box ``keys`` of ``env`` with their flattened lows and highs."""
    selected = goal_free_keys(env, keys, "\0")
    lows, highs = [], []
    for name in selected:
        sub = cast(spaces.Dict, env.observation_space).spaces[name]  # goal_free_keys refuses any other
        if not isinstance(sub, spaces.Box):
            raise ValueError(f"keys must name Box observation keys; {name!r} is {sub!r}")
        lows.append(np.asarray(sub.low, dtype=np.float64).ravel())
        highs.append(np.asarray(sub.high, dtype=np.float64).ravel())
    return selected, lows, highs


class EffectTable:
    """Row ``a`` = ``[the last change a made to keys | taken | effect known | seen without effect]``.

    A change is an effect when one of ``columns`` (indices into the flattened keys) moved by more than ``atol``. A
    try without effect (a wall bump) sets the last flag and leaves the known effect in place, so "blocked once" never
    reads as "does nothing" (the fault of the first version of this table, measured in
    ``benchmarks/results/controls_ablation.txt``). Zeros with ``taken = 0`` before ``a`` is first taken.

    A clock in the observation (AMAGO's MazeRunner puts ``timer / time_limit`` in ``obs``) moves on every step,
    blocked or not, so counted as an effect it would make every wall bump an effect and overwrite the action's known
    move. Given no columns (none passed, none declared), the table finds it: a column that changed by the same
    nonzero amount (within ``atol``) on each of the first :data:`CLOCK_STEPS` steps, over at least two different
    actions, moves whatever the action and is left out of the effect test from then on, with one warning naming it
    (:attr:`clock_columns`). Until then every column counts, and when a clock is found the current episode's rows
    are rebuilt without it, so from that step on the table is the one that declared columns would have given. An
    effect column cannot pass: a blocked or different move changes it differently; a column that two actions move
    alike on eight steps in a row would, and is then declared with ``columns``.

    :param env: env with a Dict observation space and ``Discrete`` actions.
    :param keys: Box observation keys whose change is recorded; never the instruction key.
    :param columns: flattened columns of ``keys`` whose change counts as an effect (None: the env's declared
        ``effect_columns`` if ``keys`` is its default, else all but a clock found as above).
    :param atol: changes at or below this are no effect.
    """

    def __init__(self, env: gym.Env, keys: str | Iterable[str] = ("obs",), columns: Sequence[int] | None = None,
                 atol: float = 1e-6) -> None:
        if not isinstance(env, gym.Env):
            raise TypeError(f"env must be a gymnasium.Env; got {type(env).__name__}")
        if not isinstance(env.action_space, spaces.Discrete):
            raise ValueError(
                f"env.action_space must be Discrete to keep one effect per action; got {describe(env.action_space)}"
            )
        self.keys, lows, highs = _flat_keys(env, keys)
        width = int(sum(low.size for low in lows))
        if columns is None and list(self.keys) == ["obs"]:
            columns = declared(env, EFFECT_COLUMNS)
        if columns is None:
            chosen = np.arange(width)
        elif isinstance(columns, (str, bytes)) or not isinstance(columns, Iterable):
            chosen = np.zeros(0, dtype=np.intp)
        else:
            chosen = np.asarray(list(columns))
        if chosen.ndim != 1 or chosen.size == 0 or not np.issubdtype(chosen.dtype, np.integer) \
                or ((chosen < 0) | (chosen >= width)).any():
            raise ValueError(f"columns must be one or more int indices into the {width} flattened columns of keys "
                             f"{list(self.keys)}; got {columns!r}")
        self.atol = check_number(atol, "atol", 0.0)
        self.columns = chosen
        #: The flattened columns found to be a clock (see above) and left out of the effect test.
        self.clock_columns: tuple[int, ...] = ()
        self._width = width
        if columns is None:
            warnings.warn(
                f"EffectTable: {type(env.unwrapped).__name__} declares no effect_columns and no columns= was given, so "
                f"effects are found heuristically: every column of keys {list(self.keys)} counts until a clock (a "
                f"column that moves whatever the action) is ruled in or out after {CLOCK_STEPS} steps over two "
                "actions; before that, a wall bump in an env with a clock is recorded as an effect. Declare "
                "effect_columns on the env, or pass columns=, to choose",
                stacklevel=3,
            )
        # Clock search, only without columns: the first step's change, which columns kept it on every step since,
        # the steps and actions seen, and this episode's (row, change) to rebuild it once a clock is found.
        self._watch = columns is None
        self._first_change: np.ndarray | None = None
        self._same = np.ones(width, dtype=bool)
        self._watched = 0
        self._actions: set[int] = set()
        self._episode: list[tuple[int, np.ndarray]] = []
        self.n_actions = int(env.action_space.n)
        self._start = int(env.action_space.start)
        low = np.concatenate([np.concatenate(lows) - np.concatenate(highs), [0.0, 0.0, 0.0]]).astype(np.float32)
        high = np.concatenate([np.concatenate(highs) - np.concatenate(lows), [1.0, 1.0, 1.0]]).astype(np.float32)
        low[:width] = np.minimum(low[:width], 0.0)  # rows of untaken actions are zeros
        high[:width] = np.maximum(high[:width], 0.0)
        self.space: spaces.Box = spaces.Box(np.tile(low, (self.n_actions, 1)), np.tile(high, (self.n_actions, 1)),
                                            dtype=np.float32)
        self._table = np.zeros(self.space.shape, dtype=np.float32)
        self._last = np.zeros(width, dtype=np.float32)
        self._started = False

    def _flat(self, obs: dict[str, Any]) -> np.ndarray:
        try:
            flat = np.concatenate([np.asarray(obs[name], dtype=np.float32).ravel() for name in self.keys])
        except (KeyError, TypeError, ValueError, IndexError):
            flat = None
        if flat is None or flat.size != self._width:
            got = (f"keys {list(obs)}" if isinstance(obs, Mapping) else f"a {type(obs).__name__}") if flat is None \
                else f"{flat.size} numbers"
            raise ValueError(f"obs must be a dict holding the keys {list(self.keys)} with {self._width} numbers in "
                             f"all, as the env's observation space gave them; got {got}")
        return flat

    def reset(self, obs: dict[str, Any]) -> np.ndarray:
        last = self._flat(obs)
        self._table[:] = 0.0
        self._last = last
        self._started = True
        self._episode = []
        return self._table.copy()

    def update(self, action: int, obs: dict[str, Any]) -> np.ndarray:
        index = action - self._start if isinstance(action, (int, np.integer)) and not isinstance(action, bool) else -1
        if not 0 <= index < self.n_actions or not self._started:
            if not self._started:
                raise RuntimeError("EffectTable.update() was called before reset()")
            raise ValueError(f"action must be an int in [{self._start}, {self._start + self.n_actions}) (the "
                             f"env's Discrete actions); got {action!r}")
        current = self._flat(obs)
        change = current - self._last
        self._last = current
        if self._watch:
            self._watch_clock(int(index), change)
        self._record(int(index), change)
        return self._table.copy()

    def _record(self, index: int, change: np.ndarray) -> None:
        row = self._table[index]
        row[-3] = 1.0
        if self.columns.size and np.abs(change[self.columns]).max() > self.atol:
            row[:-3] = change
            row[-2] = 1.0
        else:
            row[-1] = 1.0

    def _watch_clock(self, index: int, change: np.ndarray) -> None:
        """One more step of the clock search (see the class docstring); at its end, leave a clock out."""
        if self._first_change is None:
            self._first_change = change.copy()
        else:
            self._same &= np.abs(change - self._first_change) <= self.atol
        self._watched += 1
        self._actions.add(index)
        if self._watched < CLOCK_STEPS or len(self._actions) < 2:
            self._episode.append((index, change))
            return
        clock = self._same & (np.abs(self._first_change) > self.atol)
        self._watch = False
        if clock.any():
            self.clock_columns = tuple(int(c) for c in np.flatnonzero(clock))
            self.columns = np.flatnonzero(~clock)
            warnings.warn(
                f"EffectTable: columns {list(self.clock_columns)} of keys {list(self.keys)} changed by the same "
                f"amount on each of the first {self._watched} steps, whatever the action: a clock, not an effect, so "
                "they are left out of the effect test (declare effect_columns on the env, or pass columns=, to choose)",
                stacklevel=4,
            )
            self._table[:] = 0.0  # this episode's rows again, without the clock
            for seen, seen_change in self._episode:
                self._record(seen, seen_change)
        self._episode = []


class ActionFeaturesWrapper(gym.Wrapper):
    """Add ``key``: an :class:`ActionFeatures` table, one row per action, rebuilt every step from the agent's own
    observations and actions.

    :param env: env with a Dict observation space and ``Discrete`` actions.
    :param features: ``"env"`` (the env's declared ``action_features()``), ``"effects"`` (:class:`EffectTable`),
        or a callable that takes the env and returns a fresh :class:`ActionFeatures`.
    :param key: name of the new observation key.
    """

    def __init__(self, env: gym.Env, features: str | Callable[[gym.Env], ActionFeatures] = "env",
                 key: str = ACTION_FEATURES_KEY) -> None:
        if not isinstance(env, gym.Env):
            raise TypeError(f"env must be a gymnasium.Env; got {type(env).__name__}")
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, spaces.Dict):
            raise ValueError(f"env must have a Dict observation space to add a {key!r} key to; got {describe(space)}")
        if not isinstance(key, str) or key in space.spaces:
            raise ValueError(f"key must be a str not already in the observation space {list(space.spaces)}; "
                             f"got {key!r}")
        tracker = self.tracker(env, features)
        if not isinstance(tracker, ActionFeatures) or not isinstance(tracker.space, spaces.Box) \
                or len(tracker.space.shape) != 2:
            raise TypeError(f"features must give an ActionFeatures (space: a (n_actions, d) Box, reset, update); "
                            f"got {tracker!r}")
        if not isinstance(env.action_space, spaces.Discrete):
            raise ValueError("env.action_space must be Discrete to keep one row per action; got "
                             f"{describe(env.action_space)}")
        if tracker.space.shape[0] != env.action_space.n:
            raise ValueError(f"features gave a table of shape {tracker.space.shape}, whose {tracker.space.shape[0]} "
                             f"rows must be the env's {env.action_space.n} actions ({describe(env.action_space)})")
        self.features = tracker
        self.key = key
        self.observation_space = spaces.Dict({**space.spaces, key: tracker.space})
        self._started = False

    @staticmethod
    def tracker(env: gym.Env, features: str | Callable[[gym.Env], ActionFeatures]) -> Any:
        """The :class:`ActionFeatures` that ``features`` names for ``env`` (what the wrapper would use)."""
        if callable(features):
            return features(env)
        check_choice(features, "features", FEATURE_SOURCES)
        if features == "effects":
            return EffectTable(env)
        factory = declared(env, ACTION_FEATURES)
        if factory is None:
            raise ValueError(f"features='env': {type(env.unwrapped).__name__} declares no {ACTION_FEATURES}() (see "
                             "sb3_hir.action_features); use features='effects' for the generic effect table")
        return factory()

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._started = True
        return {**obs, self.key: self.features.reset(obs)}, info

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}.step() was called before reset()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        return {**obs, self.key: self.features.update(int(action), obs)}, reward, terminated, truncated, info


class ActionEffectWrapper(ActionFeaturesWrapper):
    """:class:`ActionFeaturesWrapper` with the generic :class:`EffectTable` under ``key`` (``"effects"``).

    :param env: env with a Dict observation space and ``Discrete`` actions.
    :param keys: Box observation keys whose change is recorded; never the instruction key.
    :param key: name of the new observation key.
    :param columns: see :class:`EffectTable`.
    """

    def __init__(self, env: gym.Env, keys: str | Iterable[str] = ("obs",), key: str = EFFECTS_KEY,
                 columns: Sequence[int] | None = None) -> None:
        super().__init__(env, lambda e: EffectTable(e, keys, columns), key)
        assert isinstance(self.features, EffectTable)
        self.keys = self.features.keys
