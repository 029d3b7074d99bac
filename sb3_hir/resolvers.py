"""One resolver per component kind: the one place an argument naming a component becomes a checked object.

A registered name or a class is built with the caller's keyword arguments; an instance passes through unchanged.
Either way the result is checked against its kind's Protocol (:mod:`sb3_hir.protocols`), so the buffer, the DAgger
trainers, the testing checks and the CLI accept and refuse the same things with the same message, naming the
argument. The plugin manager (:mod:`sb3_hir.plugins`) only finds factories by name; what a kind's arguments and
contract are is decided here.
"""

from __future__ import annotations

import inspect
import warnings
from typing import TYPE_CHECKING, Any

from sb3_hir.plugins import UnknownComponentError, get
from sb3_hir.protocols import (
    GOAL_SPEC_FLAGS,
    BetaScheduleProtocol,
    DrawStrategyProtocol,
    ExpertProtocol,
    GoalSpecProtocol,
    RelabelerProtocol,
    missing_members,
)

if TYPE_CHECKING:
    import gymnasium as gym

__all__ = [
    "UnknownComponentArgument",
    "resolve_beta_schedule",
    "resolve_draw_strategy",
    "resolve_env",
    "resolve_expert",
    "resolve_goal_spec",
    "resolve_relabeler",
]


class UnknownComponentArgument(UnknownComponentError, ValueError):
    """An argument names no installed component: a ``LookupError`` to plugin code, a ``ValueError`` to callers
    that validate arguments (the buffer, the trainers, the CLI)."""


def _build(kind: str, argument: str, spec: Any, kwargs: dict[str, Any]) -> Any:
    if isinstance(spec, str):
        return _factory(kind, argument, spec)(**kwargs)
    if isinstance(spec, type):
        return spec(**kwargs)
    return spec


def _checked(obj: Any, protocol: type, argument: str, accepted: str, spec: Any) -> Any:
    missing = missing_members(obj, protocol)
    if missing:
        built = f"{spec!r} built {type(obj).__name__}, which" if obj is not spec else f"got {obj!r}, which"
        raise ValueError(f"{argument} must be {accepted}; {built} lacks {', '.join(missing)}")
    return obj


def resolve_goal_spec(goal_spec: Any, argument: str = "goal_spec", **kwargs: Any) -> GoalSpecProtocol:
    """A goal spec from a registered name (e.g. ``"exact"``), a class, or an instance.

    The one place a goal-spec argument becomes an object checked against :class:`~sb3_hir.protocols.GoalSpecProtocol`,
    so the buffer, the trainers, the checks and the CLI accept and refuse the same goal specs with the same message.
    """
    accepted = "a goal-spec plugin name (e.g. 'exact', 'tolerance') or a GoalSpec"
    if goal_spec is None:
        raise ValueError(f"{argument} must be {accepted}; got None")
    built = _build("goal_spec", argument, goal_spec, kwargs)
    _complete_flags(built, argument)
    return _checked(built, GoalSpecProtocol, argument, accepted, goal_spec)


def _complete_flags(spec: Any, argument: str) -> None:
    """A spec written against the protocol before its semantics flags (``GOAL_SPEC_FLAGS``) were part of it gets
    their defaults (no events, no wildcard, one goal per step, no padding, no groups, slot order), with a
    ``DeprecationWarning``: from sb3-hir 0.3 such a spec is refused. A spec that cannot take them is refused now."""
    missing = [name for name in GOAL_SPEC_FLAGS if not hasattr(spec, name)]
    if not missing or not all(hasattr(spec, name) for name in ("reached", "goals_key")):
        return  # complete, or not a goal spec at all (the protocol check names what it lacks)
    done: list[str] = []
    try:
        for name in missing:
            setattr(spec, name, GOAL_SPEC_FLAGS[name])
            done.append(name)
    except (AttributeError, TypeError) as error:
        for name in done:  # a refused spec is left as it came
            delattr(spec, name)
        raise ValueError(f"{argument}: {type(spec).__name__} lacks {', '.join(missing)} (GoalSpecProtocol's "
                         f"semantics flags) and cannot take their defaults ({error}); declare them, or subclass "
                         "sb3_hir.goals.GoalSpec, which declares them") from None
    warnings.warn(f"{argument}: {type(spec).__name__} lacks {', '.join(missing)} (GoalSpecProtocol's semantics "
                  "flags); it is served with their defaults (no events, no wildcard, no padding or groups, goals in "
                  "slot order). Declare them, or subclass sb3_hir.goals.GoalSpec, which declares them: from "
                  "sb3-hir 0.3 a goal spec without them is refused", DeprecationWarning, stacklevel=3)


def resolve_relabeler(
    relabeler: Any,
    observation_space: gym.Space | None = None,
    goal_spec: Any = None,
    argument: str = "relabeler",
    **kwargs: Any,
) -> RelabelerProtocol:
    """A relabeler from a registered name (e.g. ``"hindsight"``), a class, or an instance.

    Built ones get ``goal_spec`` (resolved) and ``num_goals`` from ``kwargs``, else from the spec and
    ``observation_space`` (the instruction's length), so a name alone fits the env it relabels.
    """
    accepted = (
        "a relabeler plugin name or an object with num_goals, goal_spec, relabel_goals(episode, rng), "
        "reach_steps(achieved, goals) and replay(episode, goals) (subclass sb3_hir.relabel.InstructionRelabeler)"
    )
    if isinstance(relabeler, (str, type)):
        if goal_spec is not None:
            kwargs["goal_spec"] = resolve_goal_spec(goal_spec)
        if "num_goals" not in kwargs and observation_space is not None:
            spec = kwargs.get("goal_spec") or resolve_goal_spec("exact")
            kwargs["num_goals"] = spec.validate_space(observation_space)[0]
    elif relabeler is None:
        raise ValueError(f"{argument} must be {accepted}; got None")
    built = _build("relabeler", argument, relabeler, kwargs)
    return _takes_groups(_checked(built, RelabelerProtocol, argument, accepted, relabeler), argument)


def _takes_groups(relabeler: Any, argument: str) -> Any:
    """Refuse, at construction, a relabeler whose ``reach_steps(achieved, goals)`` cannot take the groups its goal
    spec declares: the buffer would otherwise fail with a TypeError at the first ended episode."""
    key = relabeler.goal_spec.groups_key
    if key is None:
        return relabeler
    try:
        inspect.signature(relabeler.reach_steps).bind(None, None, None)
    except TypeError:
        raise ValueError(
            f"{argument}: {type(relabeler).__name__}.reach_steps takes no groups, but its goal spec declares "
            f"groups_key {key!r}; accept reach_steps(achieved, goals, groups=None) and reach each group's goals in "
            "any order (sb3_hir.reach.reach_in_groups; sb3_hir.relabel.InstructionRelabeler does both)"
        ) from None
    except ValueError:  # no signature to read (a builtin): it is called and judged at the first episode
        pass
    return relabeler


def resolve_expert(expert: Any, venv: Any = None, argument: str = "expert", **kwargs: Any) -> ExpertProtocol:
    """An expert from a registered name (built as ``factory(venv=venv, **kwargs)``), a class, or an instance.

    The one place an expert argument becomes an object checked against :class:`~sb3_hir.protocols.ExpertProtocol`, so
    the trainers, the checks and the CLI accept and refuse the same experts with the same message.
    """
    accepted = "an expert plugin name or a policy with SB3's predict(observation, state, episode_start, deterministic)"
    if isinstance(expert, (str, type)):
        kwargs = {"venv": venv, **kwargs}
    built = _build("expert", argument, expert, kwargs)
    return _checked(built, ExpertProtocol, argument, accepted, expert)


def resolve_beta_schedule(beta_schedule: Any, argument: str = "beta_schedule", **kwargs: Any) -> BetaScheduleProtocol:
    """A beta schedule from a registered name (e.g. ``"linear"``), a class, or a callable ``round -> beta``.

    The one place a beta-schedule argument becomes a callable checked against
    :class:`~sb3_hir.protocols.BetaScheduleProtocol`, so the trainers, the checks and the CLI accept the same schedules.
    """
    accepted = "a beta-schedule plugin name or a callable round_num -> beta in [0, 1]"
    built = _build("beta_schedule", argument, beta_schedule, kwargs)
    return _checked(built, BetaScheduleProtocol, argument, accepted, beta_schedule)


def resolve_env(env: Any, argument: str = "env", **kwargs: Any) -> gym.Env:
    """An env from a registered name (built with ``kwargs``) or a ``gymnasium.Env`` instance.

    The one place an env argument is resolved, so the checks and the CLI take env plugin names and env instances alike.
    """
    if isinstance(env, str):
        return _build("env", argument, env, kwargs)
    if callable(getattr(env, "reset", None)) and callable(getattr(env, "step", None)):
        return env
    raise ValueError(f"{argument} must be an env plugin name or a gymnasium.Env; got {env!r}")


def resolve_draw_strategy(draw_strategy: Any, argument: str = "draw_strategy", kwargs: dict[str, Any] | None = None,
                          **more: Any) -> DrawStrategyProtocol:
    """A draw strategy from a registered name (e.g. ``"first-reach"``), a class, or an instance.

    The one place a draw-strategy argument becomes an object checked against
    :class:`~sb3_hir.protocols.DrawStrategyProtocol`; ``kwargs`` (the buffers' ``draw_kwargs``) build a
    name or a class and are refused with an instance, which is already built.
    """
    accepted = ("a draw-strategy plugin name (e.g. 'first-reach', 'her', 'exact-index', 'window', 'stored'), a "
                "sb3_hir.buffers.draws.DrawStrategy subclass, or an instance of one")
    kwargs = {**(kwargs or {}), **more}
    if draw_strategy is None:
        raise ValueError(f"{argument} must be {accepted}; got None")
    if not isinstance(draw_strategy, (str, type)) and kwargs:
        raise ValueError(f"{argument}_kwargs builds a named or class {argument}; {argument} is already an object "
                         f"({type(draw_strategy).__name__}), so {sorted(kwargs)} would be ignored")
    if kwargs and isinstance(draw_strategy, (str, type)):
        factory = draw_strategy if isinstance(draw_strategy, type) else _factory("draw_strategy", argument,
                                                                                 draw_strategy)
        _check_keywords(factory, kwargs, f"{argument}_kwargs", repr(draw_strategy) if isinstance(draw_strategy, str)
                        else draw_strategy.__name__)
    built = _build("draw_strategy", argument, draw_strategy, kwargs)
    return _checked(built, DrawStrategyProtocol, argument, accepted, draw_strategy)


def _factory(kind: str, argument: str, name: str) -> Any:
    try:
        return get(kind, name)
    except UnknownComponentError as exc:
        raise UnknownComponentArgument(f"{argument}: {exc}") from exc


def _check_keywords(factory: Any, kwargs: dict[str, Any], argument: str, name: str) -> None:
    """Refuse keywords ``factory`` does not take before calling it, naming ``argument`` and the component ``name``:
    its own ``TypeError`` names neither."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read: the call itself decides
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    taken = [p.name for p in parameters
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    unknown = sorted(set(kwargs) - set(taken))
    if unknown:
        raise ValueError(f"{argument}: draw strategy {name} takes no argument {', '.join(map(repr, unknown))}; it "
                         f"accepts {', '.join(map(repr, taken)) or 'none'}")
