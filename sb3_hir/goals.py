"""Goal specifications: where an instruction lives in a Dict observation and how achievement is judged.

An instruction is a sequence of ``k`` goals stored under :attr:`GoalSpec.goals_key` as an array of shape
``(k, *goal_shape)``; goals already reached are overwritten with :attr:`GoalSpec.mask_value`. The value the
agent currently achieves lives under :attr:`GoalSpec.achieved_key`, with shape ``goal_shape`` or
``(1, *goal_shape)`` (the latter lets an env share one Box layout between goals and achieved; it is squeezed
before comparison).

Relabelers and the replay buffer only ever talk to a goal spec, so supporting a new kind of goal (a different
distance, a different mask) means writing one small subclass, registered as a ``"goal_spec"`` plugin.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces

from sb3_hir._validate import check_int, check_number

if TYPE_CHECKING:
    from sb3_hir.protocols import GoalSpecProtocol

__all__ = ["ExactGoalSpec", "GoalSpec", "ToleranceGoalSpec", "indexable_by_value", "instruction_complete",
           "pack_goals", "padding_mask"]


class GoalSpec(ABC):
    """Where goals live in the observation and when a goal counts as reached.

    One object says where the instruction lives and what counts as reached, so the env, the relabelers, the buffer and
    the checks cannot disagree about success.

    :param goals_key: observation key of the instruction, shape ``(k, *goal_shape)``.
    :param achieved_key: observation key of the achieved value, shape ``goal_shape`` or ``(1, *goal_shape)``.
    :param mask_value: value that replaces a goal once it is reached.
    :param goal_reward: reward earned by the transition that reaches the active goal.
    :param step_reward: reward every transition earns on top (HER's -1/0 scale is ``step_reward=-1.0`` with
        ``goal_reward=1.0``): part of the env's semantics, so replays and the buffer serve it too. A constant per
        step keeps the optimal policy (reach the goals in order, as fast as possible) while episodes end on the
        k-th goal, and gives returns below zero, which SAC's entropy term and TD targets read differently.
    :param goal_ndim: number of trailing dimensions one goal spans (1 for an ``(x, y)`` cell); :meth:`reached`
        reduces over exactly these, so every leading dimension broadcasts.
    :param nothing_value: the achieved value (every component equal to it) of a step at which nothing was achieved,
        for envs whose goals are events (face an object, pick up a key) rather than positions. Such a step reaches
        no goal and is never drawn as a hindsight goal. None (default): every step achieves a goal value.
    :param wildcard_value: a goal component equal to it matches any achieved value there: a partial description
        ("go to a ball", any color). None (default): every component must match. Refused by a spec whose
        :meth:`reached` does not read it (:attr:`honours_wildcard` False, e.g. :class:`ToleranceGoalSpec`).
    :param same_step_goals: the next goal is checked from the step that reached the previous one, so one step can
        complete several goals (an object that matches two descriptions, as in BabyAI); False (default): from the
        step after, one goal per step.
    :param description_levels: the levels of description a hindsight goal drawn from an achieved value may take,
        each a mask over the goal's components (flattened), True where the level keeps the value and the rest
        becomes ``wildcard_value``; a drawn goal takes one level uniformly. None (default): drawn goals keep every
        component. Needs ``wildcard_value``.
    :param pad_value: a goal slot equal to it (every component) is no goal: instructions of up to ``k`` goals,
        padded at the end (BabyAI's missions have 1 to 4). A pad is never reached, never masked and never rewarded;
        the instruction is complete when its real goals are, and a relabeled instruction keeps its episode's length.
        None (default): every slot holds a goal.
    :param groups_key: observation key of a ``(k,)`` integer array, constant over an episode: the group of each goal
        slot (0, 1, 2, ... non-decreasing over the real goals). The goals of one group may be reached in any order
        ("the red ball and the blue key, then the box"), each from the step its group becomes active; the next group
        becomes active when every goal of this one is reached. Relabeled instructions keep their episode's groups.
        None (default): each goal is its own group, in slot order.
    """

    #: whether :meth:`reached` reads :attr:`wildcard_value`; a spec that does not refuses one rather than ignore it.
    honours_wildcard: ClassVar[bool] = False
    #: class defaults, for specs pickled before event goals (an instance sets its own).
    nothing_value: float | None = None
    wildcard_value: float | None = None
    description_levels: np.ndarray | None = None
    same_step_goals: bool = False
    pad_value: float | None = None
    groups_key: str | None = None

    def __init__(
        self,
        goals_key: str = "goals",
        achieved_key: str = "achieved",
        mask_value: float = -1,
        goal_reward: float = 1.0,
        goal_ndim: int = 1,
        step_reward: float = 0.0,
        nothing_value: float | None = None,
        wildcard_value: float | None = None,
        description_levels: Sequence[Sequence[bool]] | None = None,
        same_step_goals: bool = False,
        pad_value: float | None = None,
        groups_key: str | None = None,
    ) -> None:
        _check_keys(goals_key, achieved_key)
        if isinstance(mask_value, bool) or not isinstance(mask_value, (int, float, np.number)):
            raise ValueError(f"mask_value must be a number, got {mask_value!r}")
        _check_nothing_value(nothing_value, mask_value)
        _check_wildcard_value(wildcard_value, mask_value, nothing_value, type(self))
        levels = _description_masks(description_levels, wildcard_value)
        _check_pad_value(pad_value, mask_value, nothing_value, wildcard_value)
        _check_groups_key(groups_key, goals_key, achieved_key)
        check_number(goal_reward, "goal_reward")
        check_number(step_reward, "step_reward")
        check_int(goal_ndim, "goal_ndim", 0)
        self.goals_key = goals_key
        self.achieved_key = achieved_key
        self.mask_value = mask_value
        self.goal_reward = float(goal_reward)
        self.step_reward = float(step_reward)
        self.goal_ndim = int(goal_ndim)
        self.nothing_value = nothing_value
        self.wildcard_value = wildcard_value
        self.description_levels = levels
        if not isinstance(same_step_goals, (bool, np.bool_)):
            raise ValueError(f"same_step_goals must be a bool, got {same_step_goals!r}")
        self.same_step_goals = bool(same_step_goals)
        self.pad_value = pad_value
        self.groups_key = groups_key
        self._goal_axes = tuple(range(-self.goal_ndim, 0))

    @property
    def ordered(self) -> bool:
        """Whether every instruction is ``k`` goals reached in slot order (no padding, no groups declared): the
        case the exact-value index and the compiled first-reach draws serve."""
        return self.pad_value is None and self.groups_key is None

    def is_padding(self, goals: np.ndarray) -> np.ndarray:
        """Whether each goal (shape ``(..., *goal_shape)``) is :attr:`pad_value`: a slot that holds no goal (all False
        when the spec declares none)."""
        goals = np.asarray(goals)
        if self.pad_value is None:
            return np.zeros(goals.shape[: goals.ndim - self.goal_ndim], dtype=bool)
        return (goals == self.pad_value).all(axis=self._goal_axes)

    def is_complete(self, goals: np.ndarray) -> np.ndarray:
        """Whether each instruction (shape ``(..., k, *goal_shape)``) shows every goal reached: each slot masked or
        padding."""
        goals = np.asarray(goals)
        return (self.is_masked(goals) | self.is_padding(goals)).all(axis=-1)

    @abstractmethod
    def reached(self, achieved: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Whether ``achieved`` reaches ``goal``.

        Both have shape ``(..., *goal_shape)`` and broadcast against each other; the result has the broadcast
        leading shape, so a whole episode against a whole instruction is one call.
        """

    def is_nothing(self, values: np.ndarray) -> np.ndarray:
        """Whether each value (shape ``(..., *goal_shape)``) describes nothing (all False when the spec declares no
        :attr:`nothing_value`).

        The one statement of the rule "a step that achieved nothing is never a goal", at every level of description:
        a value is nothing when each component is :attr:`nothing_value` or :attr:`wildcard_value` and at least one is
        :attr:`nothing_value`. An achieved value of such a step holds the nothing value in every component; a goal
        drawn from it and then generalized (:meth:`generalize`, e.g. ``(-3, -3)`` to "any colour, type nothing"
        ``(-2, -3)``) is nothing too, and no step can reach it.
        """
        values = np.asarray(values)
        if self.nothing_value is None:
            return np.zeros(values.shape[: values.ndim - self.goal_ndim], dtype=bool)
        nothing = values == self.nothing_value
        if self.wildcard_value is None:
            return nothing.all(axis=self._goal_axes)
        blank = nothing | (values == self.wildcard_value)
        return blank.all(axis=self._goal_axes) & nothing.any(axis=self._goal_axes)

    def generalize(self, goals: np.ndarray, drawn: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``goals`` ``(B, k, *goal_shape)`` with each ``drawn`` ``(B, k)`` slot at a level of description drawn
        uniformly from :attr:`description_levels` (its dropped components set to :attr:`wildcard_value`);
        unchanged when the spec declares no levels."""
        levels = self.description_levels
        if levels is None or not drawn.any():
            return goals
        batch, k = drawn.shape
        flat = goals.reshape(batch, k, -1)
        if levels.shape[1] != flat.shape[2]:
            raise ValueError(f"description_levels mask {levels.shape[1]} components; goals have {flat.shape[2]}")
        keep = levels[rng.integers(0, len(levels), size=(batch, k))]  # (B, k, D)
        keep |= ~drawn[..., None]
        return np.where(keep, flat, np.asarray(self.wildcard_value, dtype=goals.dtype)).reshape(goals.shape)

    def _not_nothing(self, achieved: np.ndarray, hits: np.ndarray) -> np.ndarray:
        """``hits`` of :meth:`reached` with the steps that achieved nothing taken out (they reach no goal)."""
        if self.nothing_value is None:
            return hits
        return hits & ~self.is_nothing(achieved)

    def is_masked(self, goals: np.ndarray) -> np.ndarray:
        """Whether each goal in ``goals`` (shape ``(..., *goal_shape)``) is the mask, i.e. already reached."""
        return (np.asarray(goals) == self.mask_value).all(axis=self._goal_axes)

    def achieved_values(
        self, achieved: np.ndarray, goal_shape: Sequence[int], leading_ndim: int = 1
    ) -> np.ndarray:
        """``achieved`` reshaped to ``(*leading, *goal_shape)``, squeezing a ``(1, *goal_shape)`` layout.

        :param achieved: achieved values with ``leading_ndim`` leading dimensions (time, env, ...).
        :param goal_shape: shape of one goal.
        :param leading_ndim: how many leading dimensions precede the per-step value.
        """
        achieved = np.asarray(achieved)
        goal_shape = tuple(goal_shape)
        per_step = achieved.shape[leading_ndim:]
        if per_step == goal_shape:
            return achieved
        if per_step == (1, *goal_shape):
            return achieved.reshape(achieved.shape[:leading_ndim] + goal_shape)
        raise ValueError(
            f"{self.achieved_key!r} values must have shape {goal_shape} or {(1, *goal_shape)} per step to "
            f"match goals of shape {goal_shape}, got {per_step}"
        )

    def validate_space(self, observation_space: spaces.Space) -> tuple[int, tuple[int, ...]]:
        """Check that ``observation_space`` carries an instruction this spec understands.

        Called at construction time by buffers and wrappers, so a misconfigured env fails before any training.

        :return: ``(k, goal_shape)``: the number of goals and the shape of one goal.
        """
        expected = f"a gymnasium.spaces.Dict with keys {self.goals_key!r} and {self.achieved_key!r}"
        if not isinstance(observation_space, spaces.Dict):
            raise ValueError(f"observation_space must be {expected}, got {observation_space!r}")
        present = list(observation_space.spaces.keys())
        missing = [key for key in (self.goals_key, self.achieved_key) if key not in observation_space.spaces]
        if missing:
            raise ValueError(
                f"observation_space is missing the goal spec's keys {missing}; keys present: {present} "
                f"(expected {expected})"
            )
        goals_shape = observation_space[self.goals_key].shape
        achieved_shape = observation_space[self.achieved_key].shape
        if goals_shape is None or len(goals_shape) != 1 + self.goal_ndim:
            raise ValueError(
                f"observation_space[{self.goals_key!r}] must have shape (k, *goal_shape) with "
                f"{self.goal_ndim} goal dimension(s) (goal_ndim={self.goal_ndim}), got {goals_shape}"
            )
        k, goal_shape = int(goals_shape[0]), tuple(int(d) for d in goals_shape[1:])
        if k < 1:
            raise ValueError(
                f"observation_space[{self.goals_key!r}] must hold at least one goal, got shape {goals_shape}"
            )
        self._check_values_fit(observation_space)
        levels = self.description_levels
        if levels is not None and levels.shape[1] != math.prod(goal_shape):
            raise ValueError(f"description_levels masks {levels.shape[1]} components, but a goal of "
                             f"observation_space[{self.goals_key!r}] has {math.prod(goal_shape)} ({goal_shape})")
        groups_key = self.groups_key
        if groups_key is not None:
            if groups_key not in observation_space.spaces:
                raise ValueError(f"observation_space is missing the goal spec's groups_key {groups_key!r}; keys "
                                 f"present: {present}")
            groups = observation_space[groups_key]
            if groups.shape != (k,) or np.dtype(groups.dtype).kind not in "iu":
                raise ValueError(f"observation_space[{groups_key!r}] (groups_key) must be an integer array of shape "
                                 f"(k,) = ({k},), one group per goal slot; got {groups}")
        if achieved_shape not in (goal_shape, (1, *goal_shape)):
            raise ValueError(
                f"observation_space[{self.achieved_key!r}] must have shape {goal_shape} or "
                f"{(1, *goal_shape)} to match {self.goals_key!r} of shape {goals_shape}, got {achieved_shape}"
            )
        return k, goal_shape

    def _check_values_fit(self, observation_space: spaces.Dict) -> None:
        """Refuse a declared value that integer goals (or achieved values) cannot hold: numpy would cast it, and a
        wildcard 2.5 stored as 2 asks for column 2."""
        values = {"mask_value": (self.mask_value, self.goals_key),
                  "wildcard_value": (self.wildcard_value, self.goals_key),
                  "pad_value": (self.pad_value, self.goals_key),
                  "nothing_value": (self.nothing_value, self.achieved_key)}
        for name, (value, key) in values.items():
            dtype = np.dtype(observation_space[key].dtype)
            if value is None or dtype.kind not in "iu":
                continue
            info = np.iinfo(dtype)
            if float(value) != int(value) or not info.min <= value <= info.max:
                raise ValueError(f"{name}={value!r} does not fit observation_space[{key!r}] of dtype {dtype}, which "
                                 f"holds integers in [{info.min}, {info.max}]: it would be stored as "
                                 f"{np.asarray(value).astype(dtype).item()!r}; give an integer in that range")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(goals_key={self.goals_key!r}, achieved_key={self.achieved_key!r}, "
            f"mask_value={self.mask_value!r}, goal_reward={self.goal_reward!r}, goal_ndim={self.goal_ndim}, "
            f"step_reward={self.step_reward!r}"
            + ("" if self.nothing_value is None else f", nothing_value={self.nothing_value!r}")
            + ("" if self.wildcard_value is None else f", wildcard_value={self.wildcard_value!r}")
            + ("" if self.description_levels is None else f", description_levels={self.description_levels.tolist()}")
            + (", same_step_goals=True" if self.same_step_goals else "")
            + ("" if self.pad_value is None else f", pad_value={self.pad_value!r}")
            + ("" if self.groups_key is None else f", groups_key={self.groups_key!r}")
            + ")"
        )


def _check_keys(goals_key: str, achieved_key: str) -> None:
    """The instruction's and the achieved value's observation keys: two different non-empty strings."""
    for name, key in (("goals_key", goals_key), ("achieved_key", achieved_key)):
        if not isinstance(key, str) or not key:
            raise ValueError(f"{name} must be a non-empty str, got {key!r}")
    if goals_key == achieved_key:
        raise ValueError(f"goals_key and achieved_key must differ, both are {goals_key!r}")


def _finite_or_none(value: Any) -> bool:
    """Whether a special goal value (``nothing_value``, ``wildcard_value``, ``pad_value``) is None or a finite
    number (a bool is no number here)."""
    return value is None or (not isinstance(value, bool) and isinstance(value, (int, float, np.number))
                             and bool(np.isfinite(value)))


def _check_nothing_value(nothing_value: float | None, mask_value: float) -> None:
    """``nothing_value``: None or a finite number other than ``mask_value`` (a masked goal is a reached one)."""
    if not _finite_or_none(nothing_value):
        raise ValueError(f"nothing_value must be a finite number or None, got {nothing_value!r}")
    if nothing_value is not None and nothing_value == mask_value:
        raise ValueError(f"nothing_value must differ from mask_value ({mask_value!r}): a masked goal is a reached "
                         "one, a nothing value is a step that reached none")


def _check_wildcard_value(wildcard_value: float | None, mask_value: float, nothing_value: float | None,
                          spec_type: type[GoalSpec]) -> None:
    """``wildcard_value``: None, or a finite number distinct from the other special values that ``spec_type``'s
    ``reached()`` honours (a spec that would ignore it refuses it)."""
    if not _finite_or_none(wildcard_value):
        raise ValueError(f"wildcard_value must be a finite number or None, got {wildcard_value!r}")
    if wildcard_value is not None and not spec_type.honours_wildcard:
        raise ValueError(f"wildcard_value: {spec_type.__name__} cannot honour a wildcard (its reached() does not "
                         "read one), so a partial goal would be judged as a whole; use ExactGoalSpec, or a spec "
                         "whose reached() does (honours_wildcard = True)")
    if wildcard_value is not None and wildcard_value in (mask_value, nothing_value):
        raise ValueError(f"wildcard_value must differ from mask_value ({mask_value!r}) and nothing_value "
                         f"({nothing_value!r}); got {wildcard_value!r}")


def _description_masks(description_levels: Sequence[Sequence[bool]] | None, wildcard_value: float | None
                       ) -> np.ndarray | None:
    """``description_levels`` as a ``(levels, components)`` bool array (None: none declared), checked: it needs
    ``wildcard_value``, and each level keeps at least one component."""
    if description_levels is None:
        return None
    if wildcard_value is None:
        raise ValueError("description_levels needs wildcard_value: the components a level drops become it")
    levels = _masks(description_levels)
    if levels is None or levels.ndim != 2 or levels.dtype != bool or not len(levels) or not levels.any(axis=1).all():
        raise ValueError("description_levels must be a non-empty sequence of equal-length bool masks over a "
                         f"goal's components, each keeping at least one; got {description_levels!r}")
    return levels


def _check_pad_value(pad_value: float | None, mask_value: float, nothing_value: float | None,
                     wildcard_value: float | None) -> None:
    """``pad_value``: None, or a finite number distinct from the other special values (a pad is no goal)."""
    if not _finite_or_none(pad_value):
        raise ValueError(f"pad_value must be a finite number or None, got {pad_value!r}")
    if pad_value is not None and pad_value in (mask_value, nothing_value, wildcard_value):
        raise ValueError(f"pad_value must differ from mask_value ({mask_value!r}), nothing_value "
                         f"({nothing_value!r}) and wildcard_value ({wildcard_value!r}); got {pad_value!r}")


def _check_groups_key(groups_key: str | None, goals_key: str, achieved_key: str) -> None:
    """``groups_key``: None, or a non-empty observation key of its own."""
    if groups_key is not None and (not isinstance(groups_key, str) or not groups_key
                                   or groups_key in (goals_key, achieved_key)):
        raise ValueError(f"groups_key must be None or a non-empty str other than goals_key ({goals_key!r}) and "
                         f"achieved_key ({achieved_key!r}); got {groups_key!r}")


def _masks(description_levels: Any) -> np.ndarray | None:
    """``description_levels`` as a 2-D array, or None when its masks differ in length (numpy would say only
    "inhomogeneous shape")."""
    try:
        return np.asarray(description_levels)
    except ValueError:
        return None


def pack_goals(values: np.ndarray, goal_ndim: int) -> np.ndarray | None:
    """One unsigned integer per goal when a goal of integers fits in 8 bytes, else None.

    Equality of packed goals is equality of all their components, and it skips numpy's reduction over a tiny
    trailing axis, which costs more than the comparison itself (a (250, 3) reached matrix of 2-D int32 goals is
    about 4x faster this way).
    """
    goal_shape = values.shape[values.ndim - goal_ndim :]
    size = math.prod(goal_shape)
    nbytes = values.dtype.itemsize * size
    if values.dtype.kind not in "biu" or nbytes not in (1, 2, 4, 8):
        return None
    flat = np.ascontiguousarray(values).reshape((*values.shape[: values.ndim - goal_ndim], size))
    return flat.view(f"u{nbytes}")[..., 0]


class ExactGoalSpec(GoalSpec):
    """A goal is reached when every component of the achieved value equals it (grid cells, discrete state).

    The default for integer goals, where any tolerance would make neighbouring cells count as reached.
    """

    honours_wildcard = True

    def reached(self, achieved: np.ndarray, goal: np.ndarray) -> np.ndarray:
        achieved, goal = np.asarray(achieved), np.asarray(goal)
        ndim = self.goal_ndim
        if self.wildcard_value is not None:  # a wildcard component matches anything
            hits = ((achieved == goal) | (goal == self.wildcard_value)).all(axis=self._goal_axes)
            return self._not_nothing(achieved, hits)
        if (
            ndim
            and achieved.dtype == goal.dtype
            and min(achieved.ndim, goal.ndim) >= ndim
            and achieved.shape[achieved.ndim - ndim :] == goal.shape[goal.ndim - ndim :]
        ):
            packed = pack_goals(achieved, ndim)
            if packed is not None:
                return self._not_nothing(achieved, packed == pack_goals(goal, ndim))
        return self._not_nothing(achieved, (achieved == goal).all(axis=self._goal_axes))


class ToleranceGoalSpec(GoalSpec):
    """A goal is reached when the Euclidean distance to the achieved value is at most ``tolerance``.

    The default 0.05 is gymnasium-robotics' ``distance_threshold`` for the Fetch tasks (metres), the usual
    scale of continuous goals; grid-like continuous envs with unit cells want something like 0.5.

    :param tolerance: largest distance that still counts as reached; must be > 0 so that a value matches
        itself robustly after float round-off.
    """

    def __init__(self, tolerance: float = 0.05, **kwargs) -> None:
        super().__init__(**kwargs)
        check_number(tolerance, "tolerance", 0.0, open_low=True)
        self.tolerance = float(tolerance)

    def reached(self, achieved: np.ndarray, goal: np.ndarray) -> np.ndarray:
        diff = np.asarray(achieved, dtype=np.float64) - np.asarray(goal, dtype=np.float64)
        return self._not_nothing(achieved, np.sqrt(np.sum(np.square(diff), axis=self._goal_axes)) <= self.tolerance)

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", tolerance={self.tolerance!r})"


def indexable_by_value(spec: GoalSpecProtocol, observation_space: spaces.Dict) -> bool:
    """Whether the goal spec is exact equality (not overridden) on integer goals and achieved values, so reaches can
    be found through an index of values instead of by comparing them."""
    goals_dtype = np.dtype(observation_space[spec.goals_key].dtype)
    achieved_dtype = np.dtype(observation_space[spec.achieved_key].dtype)
    return (
        isinstance(spec, ExactGoalSpec)
        and type(spec).reached is ExactGoalSpec.reached
        and spec.wildcard_value is None  # a partial description is reached by several values
        and not spec.same_step_goals  # the index finds reaches strictly after the previous one
        and spec.ordered  # it finds each goal after the previous slot's: no padding, no unordered groups
        and achieved_dtype.kind in "biu"
        and goals_dtype.kind in "biu"
    )


def padding_mask(spec: GoalSpecProtocol, goals: np.ndarray) -> np.ndarray:
    """``spec.is_padding(goals)``, or no padding for a goal spec plugin that only keeps the protocol
    (:class:`~sb3_hir.protocols.GoalSpecProtocol` asks for no ``is_padding``)."""
    method = getattr(spec, "is_padding", None)
    if method is not None:
        return method(goals)
    goals = np.asarray(goals)
    return np.zeros(goals.shape[: goals.ndim - spec.goal_ndim], dtype=bool)


def instruction_complete(spec: object, goals: np.ndarray) -> np.ndarray:
    """``spec.is_complete(goals)``: every slot masked or padding; every slot masked for a protocol-only spec."""
    method = getattr(spec, "is_complete", None)
    if method is not None:
        return method(goals)
    return np.asarray(np.asarray(spec.is_masked(goals)).all(axis=-1))  # type: ignore[attr-defined]
