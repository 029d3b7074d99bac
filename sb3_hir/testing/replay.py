"""The relabeler a check replays an env's episodes with, and where that replay first disagrees with the env.

Both :func:`~sb3_hir.testing.check_instruction_env` and :func:`~sb3_hir.testing.check_relabeler` start here: a
relabeler given by name or factory is built for the env (its ``num_goals`` and the goal spec it declares), and an
episode replayed under its own instruction must reproduce what the env produced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_hir import resolvers
from sb3_hir.contract import ENV_GOAL_SPEC, declared
from sb3_hir.testing.rollout import Rollout, create, describe, fail, is_factory, show

if TYPE_CHECKING:
    import gymnasium as gym

    from sb3_hir.episodes import Episode
    from sb3_hir.goals import GoalSpec
    from sb3_hir.relabel import InstructionRelabeler

__all__ = [
    "check_num_goals",
    "declared_goal_spec",
    "env_goal_spec",
    "env_num_goals",
    "replay_context",
    "replay_mismatch",
    "resolve_relabeler_for",
]


def declared_goal_spec(env: gym.Env) -> Any:
    """``goal_spec`` declared along ``env``'s wrapper chain (see :mod:`sb3_hir.contract`), else None."""
    return declared(env, ENV_GOAL_SPEC)


def env_goal_spec(env: gym.Env) -> GoalSpec:
    """The goal spec ``env`` declares (see :data:`ENV_GOAL_SPEC`; a name or a GoalSpec), else ``"exact"``.

    The checks call GoalSpec methods beyond the protocol (``achieved_values``), hence the stricter type check.
    """
    from sb3_hir.goals import ExactGoalSpec, GoalSpec  # deferred: keeps ``import sb3_hir.testing`` cheap

    spec = declared_goal_spec(env)
    if spec is None:
        return ExactGoalSpec()
    resolved = resolvers.resolve_goal_spec(spec, argument=f"the env's {ENV_GOAL_SPEC} attribute")
    if not isinstance(resolved, GoalSpec):
        raise ValueError(f"the env's {ENV_GOAL_SPEC} attribute must be a goal-spec name or a GoalSpec, got {spec!r}")
    return resolved


def env_num_goals(check: str, env: gym.Env, spec: GoalSpec) -> int:
    """The instruction's length; an observation space the spec cannot read is the env's failure."""
    try:
        num_goals, _ = spec.validate_space(env.observation_space)
    except ValueError as error:
        fail(check, "observation_space", f"{error} (goal spec {spec!r})")
    return num_goals


def _default_relabeler(num_goals: int, spec: GoalSpec) -> InstructionRelabeler:
    """The identity relabeler: its replay is the reference every env is held to."""
    from sb3_hir.relabel import HindsightInstructionRelabeler  # deferred: keeps ``import sb3_hir.testing`` cheap

    return HindsightInstructionRelabeler(num_goals, strategy="none", goal_spec=spec)


def resolve_relabeler_for(check: str, relabeler: Any, env: gym.Env) -> Any:
    """The relabeler to check ``env`` with.

    An instance is used as is; None is the identity relabeler on the env's goal spec. A name or class goes through
    :func:`sb3_hir.resolvers.resolve_relabeler`, and a factory function (a callable without ``relabel``) is called,
    both with the env's ``num_goals`` and, when the env declares one, its goal spec. A construction failure is
    the component's fault (an AssertionError); an unknown name stays a ValueError / LookupError.
    """
    if relabeler is not None and not isinstance(relabeler, str) and not is_factory(relabeler, "relabel"):
        return relabeler
    spec = env_goal_spec(env)
    num_goals = env_num_goals(check, env, spec)
    if relabeler is None:
        return _default_relabeler(num_goals, spec)
    kwargs: dict[str, Any] = {"num_goals": num_goals}
    if declared_goal_spec(env) is not None:
        kwargs["goal_spec"] = spec
    if isinstance(relabeler, str | type):
        def build(**kw: Any) -> Any:
            return resolvers.resolve_relabeler(relabeler, **kw)

        return create(build, kwargs, label=relabeler)
    return create(relabeler, kwargs)


def check_num_goals(check: str, relabeler: Any, num_goals: int) -> None:
    """A relabeler built for another instruction length would replay the wrong goals."""
    if relabeler.num_goals != num_goals:
        fail(check, "observation_space", f"the env's instructions hold {num_goals} goals but {describe(relabeler)} "
                                         f"has num_goals={relabeler.num_goals}")


def replay_mismatch(relabeler: InstructionRelabeler, rollout: Rollout, episode: Episode) -> tuple[int, str] | None:
    """Earliest step where ``replay`` under the episode's own goals disagrees with what the env produced."""
    spec = relabeler.goal_spec
    own = episode.instruction(spec.goals_key)
    replayed = relabeler.replay(episode, own)
    env_goals, replay_goals = episode.observations[spec.goals_key], replayed.observations[spec.goals_key]
    env_rewards = np.asarray(rollout.rewards, dtype=np.float64)
    for step in range(len(replayed) + 1):
        if step > 0:
            t = step - 1
            if env_rewards[t] != float(replayed.rewards[t]):
                return step, f"env reward {show(env_rewards[t])} != replayed reward {show(replayed.rewards[t])}"
            if episode.terminated[t] != replayed.terminated[t]:
                return step, (f"env terminated={bool(episode.terminated[t])} != replayed "
                              f"terminated={bool(replayed.terminated[t])}")
        if not np.array_equal(env_goals[step], replay_goals[step]):
            return step, (f"env observation[{spec.goals_key!r}] = {show(env_goals[step])} != replayed "
                          f"{show(replay_goals[step])}")
    if len(replayed) != len(episode):  # pragma: no cover - a shorter replay terminates where the env did not
        return len(replayed), f"replay ends after {len(replayed)} steps, the env after {len(episode)}"
    return None


def replay_context(episode: Episode, spec: GoalSpec, step: int) -> str:
    """The goals shown before ``step`` and the value achieved by it, to make a replay failure readable."""
    goals = episode.observations[spec.goals_key]
    achieved = episode.observations[spec.achieved_key]
    before = goals[max(step - 1, 0)]
    return f"(goals observed before the step: {show(before)}, achieved after it: {show(achieved[step])})"
