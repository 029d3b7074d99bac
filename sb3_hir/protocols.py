"""What each component kind must provide: ``typing.Protocol`` contracts, one per kind, in one place.

A plugin satisfies a contract by shape, not by inheritance (subclassing :class:`~sb3_hir.relabel.InstructionRelabeler`
or :class:`~sb3_hir.goals.GoalSpec` is the easy way, not a requirement). The resolvers of :mod:`sb3_hir.resolvers`
check objects against these with ``isinstance``, so the buffer, the DAgger trainers, the testing checks and the
CLI all accept and refuse the same things, with the same message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    from gymnasium import spaces

    from sb3_hir.episodes import Episode

__all__ = [
    "GOAL_SPEC_FLAGS",
    "BetaScheduleProtocol",
    "DrawStrategyProtocol",
    "EventGoalSpecProtocol",
    "ExpertProtocol",
    "GoalSpecProtocol",
    "LevelsGoalSpecProtocol",
    "RelabelerProtocol",
    "declares_levels",
    "declares_nothing",
    "missing_members",
]


@runtime_checkable
class GoalSpecProtocol(Protocol):
    """Where the instruction and the achieved value live, the rewards, and the vectorized success test.

    Checked by :func:`sb3_hir.resolvers.resolve_goal_spec`, so a goal spec from any plugin is refused up front, naming
    what it lacks, rather than failing deep inside a sample.
    """

    goals_key: str
    achieved_key: str
    mask_value: Any
    goal_reward: float
    step_reward: float
    goal_ndim: int
    #: The semantics flags (:class:`sb3_hir.goals.GoalSpec` documents each and declares their defaults,
    #: :data:`GOAL_SPEC_FLAGS`): event goals (``nothing_value``), partial descriptions (``wildcard_value``,
    #: ``description_levels``), several goals per step (``same_step_goals``), instructions of up to k goals
    #: (``pad_value``) and goal groups (``groups_key``); ``ordered``: none of the last two, every instruction k goals
    #: in slot order. Every part of sb3-hir reads them as attributes.
    nothing_value: float | None
    wildcard_value: float | None
    description_levels: np.ndarray | None
    same_step_goals: bool
    pad_value: float | None
    groups_key: str | None

    @property
    def ordered(self) -> bool: ...

    def reached(self, achieved: np.ndarray, goal: np.ndarray) -> np.ndarray: ...

    def is_masked(self, goals: np.ndarray) -> np.ndarray: ...

    def validate_space(self, observation_space: spaces.Space) -> tuple[int, tuple[int, ...]]: ...

    def achieved_values(self, achieved: np.ndarray, goal_shape: Sequence[int], leading_ndim: int = 1) -> np.ndarray:
        """``achieved`` as ``(*leading, *goal_shape)`` values: what every relabeler, buffer and check reads."""
        ...


class EventGoalSpecProtocol(GoalSpecProtocol, Protocol):
    """A goal spec whose goals are events: one that declares a ``nothing_value`` also says which values describe
    nothing (:meth:`sb3_hir.goals.GoalSpec.is_nothing`).

    Optional, so not checked by the resolvers (a plugin spec without events need not define ``is_nothing``); the
    code asks :func:`declares_nothing` before it calls it.
    """

    def is_nothing(self, values: np.ndarray) -> np.ndarray: ...


class LevelsGoalSpecProtocol(GoalSpecProtocol, Protocol):
    """A goal spec that declares ``description_levels`` also generalizes drawn goals to them
    (:meth:`sb3_hir.goals.GoalSpec.generalize`).

    Optional, so not checked by the resolvers; the code asks :func:`declares_levels` before it calls ``generalize``.
    """

    def generalize(self, goals: np.ndarray, drawn: np.ndarray, rng: np.random.Generator) -> np.ndarray: ...


#: :class:`GoalSpecProtocol`'s semantics flags and the value each takes in a spec that declares nothing of them
#: (:class:`sb3_hir.goals.GoalSpec`'s defaults): what :func:`sb3_hir.resolvers.resolve_goal_spec` gives a spec
#: written against the protocol before the flags were part of it.
GOAL_SPEC_FLAGS: dict[str, Any] = {
    "nothing_value": None,
    "wildcard_value": None,
    "description_levels": None,
    "same_step_goals": False,
    "pad_value": None,
    "groups_key": None,
    "ordered": True,
}


def declares_nothing(spec: GoalSpecProtocol) -> TypeGuard[EventGoalSpecProtocol]:
    """Whether ``spec`` declares a nothing value (event goals), and so defines ``is_nothing``."""
    return spec.nothing_value is not None


def declares_levels(spec: GoalSpecProtocol) -> TypeGuard[LevelsGoalSpecProtocol]:
    """Whether ``spec`` declares levels of description, and so defines ``generalize``."""
    return spec.description_levels is not None


@runtime_checkable
class RelabelerProtocol(Protocol):
    """Which instruction an episode is replayed under, and the replay itself (the env's semantics).

    Checked by :func:`sb3_hir.resolvers.resolve_relabeler`, so a relabeler from any plugin is refused up front, naming
    what it lacks, rather than failing deep inside a sample.
    """

    num_goals: int
    goal_spec: GoalSpecProtocol

    def relabel_goals(self, episode: Episode, rng: np.random.Generator) -> np.ndarray | None: ...

    def reach_steps(self, achieved: np.ndarray, goals: np.ndarray) -> np.ndarray:
        """Also called as ``reach_steps(achieved, goals, groups)`` when the goal spec declares a ``groups_key``."""
        ...

    def replay(self, episode: Episode, goals: np.ndarray) -> Episode: ...


@runtime_checkable
class ExpertProtocol(Protocol):
    """SB3's ``predict``: a DAgger expert, usable as imitation's ``expert_policy`` too.

    Checked by :func:`sb3_hir.resolvers.resolve_expert`, so an expert from any plugin is refused before a round starts,
    naming what it lacks.
    """

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, Any]: ...


@runtime_checkable
class BetaScheduleProtocol(Protocol):
    """``schedule(round_num) -> beta`` in ``[0, 1]``, as imitation's ``BetaSchedule``.

    Checked by :func:`sb3_hir.resolvers.resolve_beta_schedule`, so a schedule from any plugin is refused before
    training, not at the first round.
    """

    def __call__(self, round_num: int) -> float: ...


@runtime_checkable
class DrawStrategyProtocol(Protocol):
    """How a relabeled transition gets its hindsight instruction (:class:`sb3_hir.buffers.draws.DrawStrategy`).

    Checked by :func:`sb3_hir.resolvers.resolve_draw_strategy`, so a strategy from any plugin is refused when the
    buffer is built, naming what it lacks, rather than at the first sample.
    """

    fields: tuple[str, ...]

    def bind(self, view: Any) -> None: ...

    def use_compiled(self, on: bool) -> None: ...

    def allocate(self, view: Any, steps_dtype: Any) -> None: ...

    def index_episode(self, view: Any, episode: Any, meta: np.ndarray, field: dict[str, int]) -> None: ...

    def instructions(self, view: Any, rows: Any) -> Any: ...

    def draw(self, view: Any, count: int, upper: int) -> Any: ...


def missing_members(obj: Any, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks (or has but cannot call), for an error that names them."""
    names = [n for n in getattr(protocol, "__protocol_attrs__", None) or _protocol_attrs(protocol)]
    missing = []
    for name in sorted(names):
        if not hasattr(obj, name) or (callable(getattr(protocol, name, None)) and not callable(getattr(obj, name))):
            missing.append(name)
    return missing


def _protocol_attrs(protocol: type) -> set[str]:
    """Python < 3.12 keeps no ``__protocol_attrs__``: the annotated and defined names of the protocol body."""
    names = set(getattr(protocol, "__annotations__", {}))
    members = vars(protocol).items()
    names |= {n for n, v in members if (callable(v) or isinstance(v, property)) and not n.startswith("_")}
    if "__call__" in vars(protocol):
        names.add("__call__")
    return names
