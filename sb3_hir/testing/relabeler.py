"""``check_relabeler``: the invariants every relabeler keeps, whatever instruction it draws.

Relabeled data is only as good as the relabeler's promise that the relabeled episode is one the env would have
produced: goals that were achieved, in order, on an unchanged trajectory. The check holds a relabeler to that on
random-policy episodes of an env that already agrees with its replay.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_hir.testing.registry import PluginCheckOptions, register_check
from sb3_hir.testing.replay import check_num_goals, env_num_goals, replay_mismatch, resolve_relabeler_for
from sb3_hir.testing.rollout import (
    Rollout,
    check_count,
    check_step_cap,
    checked_env,
    describe,
    fail,
    fail_at,
    random_rollouts,
    show,
    where,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import gymnasium as gym

    from sb3_hir.episodes import Episode
    from sb3_hir.goals import GoalSpec
    from sb3_hir.relabel import InstructionRelabeler

__all__ = ["NEVER_LOWERS_RETURN", "check_relabeler", "promises_non_decreasing_return"]

#: Attribute a relabeler sets to True when relabeling never lowers an episode's return.
NEVER_LOWERS_RETURN = "never_lowers_return"

_CHECK = "check_relabeler"


def promises_non_decreasing_return(relabeler: Any) -> bool:
    """Whether ``relabeler`` promises that relabeling never lowers an episode's return.

    Lets :func:`check_relabeler` hold a relabeler to a promise only when it makes one.

    Declared by the attribute :data:`NEVER_LOWERS_RETURN` (``never_lowers_return = True``); absent means no
    promise, so :func:`check_relabeler` does not hold the relabeler to it.
    """
    return bool(getattr(relabeler, NEVER_LOWERS_RETURN, False))


def check_relabeler(
    relabeler: InstructionRelabeler | str,
    env: gym.Env | str,
    n_episodes: int = 5,
    seed: int = 0,
    max_steps: int | None = None,
    n_relabels: int = 3,
) -> None:
    """Check the invariants every relabeler must keep, on random-policy episodes of ``env``.

    A relabeler that breaks these serves transitions the env never produced, and training still runs: the check makes
    that a test failure.

    For each episode and each of ``n_relabels`` generators ``np.random.default_rng([seed + i, draw])``:

    1. ``relabel`` is ``replay`` under ``relabel_goals`` (or the episode itself when that returns None), given
       generators in the same state;
    2. relabeled goals were achieved, in time order: every goal up to the last one changed is reached when the
       episode is walked in order (one goal per step), and no changed goal is the mask value;
    3. the relabeled episode is self-consistent (replaying it under its own instruction gives it back) and is a
       prefix of the original (same actions and non-goal observations);
    4. the return is not lowered, when the relabeler promises it (see :func:`promises_non_decreasing_return`);
    5. the relabeler's ``strategy == "none"`` variant (itself, or its class built with ``strategy="none"``)
       returns every episode unchanged.

    The env must agree with the relabeler's replay first (see :func:`~sb3_hir.testing.check_instruction_env`).

    :param relabeler: instance, or a registered name or factory, created with the env's ``num_goals`` (and the
        goal spec the env declares, if any).
    :param env: the env, or a registered ``"env"`` name (created with its defaults).
    :raises AssertionError: naming the seed, the step and the values of the first violation.
    """
    n_episodes = check_count(n_episodes, "n_episodes")
    max_steps = check_step_cap(max_steps)
    n_relabels = check_count(n_relabels, "n_relabels")
    with checked_env(env) as env:
        relabeler = resolve_relabeler_for(_CHECK, relabeler, env)
        check_num_goals(_CHECK, relabeler, env_num_goals(_CHECK, env, relabeler.goal_spec))
        twin = _none_twin(relabeler)
        for rollout in random_rollouts(env, n_episodes, seed, max_steps, _CHECK):
            episode = rollout.episode()
            fail_at(_CHECK, replay_mismatch(relabeler, rollout, episode),
                    rollout.where, lambda _, detail: (
                        f"the env disagrees with {describe(relabeler)}.replay before any relabeling: {detail}; run "
                        f"check_instruction_env(env, relabeler) first"))
            for draw in range(n_relabels):
                _check_one_relabel(relabeler, rollout, episode, draw)
            if twin is not None:
                _check_none_twin(twin, rollout, episode)


@register_check("relabeler")
def _check_relabeler_component(factory: Callable[..., Any], options: PluginCheckOptions) -> None:
    """A plugin's relabeler, created for the target env's ``num_goals`` and goal spec, keeps the invariants."""
    with options.target_env() as target:
        check_relabeler(factory, target, n_episodes=options.n_episodes, seed=options.seed,
                        max_steps=options.max_steps)


def _none_twin(relabeler: Any) -> Any | None:
    """The relabeler whose ``strategy == "none"`` must be the identity: itself, or a sibling of its class."""
    if getattr(relabeler, "strategy", None) == "none":
        return relabeler
    try:
        parameters = inspect.signature(type(relabeler)).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
        return None
    if "strategy" not in parameters or "num_goals" not in parameters:
        return None
    kwargs: dict[str, Any] = {"num_goals": relabeler.num_goals, "strategy": "none"}
    if "goal_spec" in parameters:
        kwargs["goal_spec"] = relabeler.goal_spec
    return type(relabeler)(**kwargs)


def _check_none_twin(twin: Any, rollout: Rollout, episode: Episode) -> None:
    """Item 5: ``strategy="none"`` is the identity, so users can switch relabeling off without another class."""
    relabeled = twin.relabel(episode, np.random.default_rng([rollout.seed, 0]))
    fail_at(_CHECK, _first_episode_difference(episode, relabeled), rollout.where,
            lambda _, detail: (f"{describe(twin)} has strategy 'none' and must return the episode unchanged, but "
                               f"the original and the relabeled episode differ: {detail}"))


def _reference_reach_steps(spec: GoalSpec, achieved: np.ndarray, goals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reach steps by the plain per-step rule (independent of the relabeler's own ``reach_steps``).

    :return: ``(steps, hit)``: int64 (k,) steps in 1..T or -1, and the (T, k) matrix "observation t reaches goal j".
    """
    hit = np.asarray(spec.reached(achieved[1:, None], goals[None]), dtype=bool)
    steps = np.full(len(goals), -1, dtype=np.int64)
    active = 0
    for t, row in enumerate(hit.tolist(), start=1):
        if active < len(goals) and row[active]:
            steps[active] = t
            active += 1
    return steps, hit


def _first_episode_difference(a: Episode, b: Episode) -> tuple[int, str] | None:
    """Earliest step at which two episodes differ (observations of step t, then the transition into it)."""
    for step in range(max(len(a), len(b)) + 1):
        if step > len(a) or step > len(b):
            return step, f"lengths differ: {len(a)} vs {len(b)} steps"
        if step > 0:
            t = step - 1
            for name in ("actions", "rewards", "terminated", "truncated"):
                first, second = getattr(a, name)[t], getattr(b, name)[t]
                if not np.array_equal(first, second):
                    return step, f"{name} {show(first)} vs {show(second)}"
        for key in sorted(set(a.observations) | set(b.observations)):
            if key not in a.observations or key not in b.observations:
                return 0, f"observation keys differ: {sorted(a.observations)} vs {sorted(b.observations)}"
            first, second = a.observations[key][step], b.observations[key][step]
            if first.dtype != second.dtype or not np.array_equal(first, second):
                return step, f"observation[{key!r}] {show(first)} ({first.dtype}) vs {show(second)} ({second.dtype})"
    return None


def _check_one_relabel(relabeler: Any, rollout: Rollout, episode: Episode, draw: int) -> None:
    """Items 1-4 for one draw: ``rng=np.random.default_rng([seed, draw])``, given fresh to both calls."""
    spec = relabeler.goal_spec
    place = f"{where(rollout.index, rollout.seed)}, relabel draw {draw} (rng=np.random.default_rng([{rollout.seed}, " \
            f"{draw}]))"
    own = episode.instruction(spec.goals_key)
    goals = relabeler.relabel_goals(episode, np.random.default_rng([rollout.seed, draw]))
    relabeled = relabeler.relabel(episode, np.random.default_rng([rollout.seed, draw]))
    if goals is not None:
        goals = np.asarray(goals)
        _check_relabeled_goals(place, spec, episode, own, goals)
        expected = relabeler.replay(episode, goals)
    else:
        expected = episode
    instruction = relabeled.instruction(spec.goals_key)
    at_step = f"{place}, step {{}}".format
    fail_at(_CHECK, _first_episode_difference(relabeled, relabeler.replay(relabeled, instruction)), at_step,
            lambda _, detail: (f"the relabeled episode is not self-consistent: replaying it under its own instruction "
                               f"{show(instruction)} changes it: relabeled vs replayed {detail}"))
    fail_at(_CHECK, _first_episode_difference(expected, relabeled), at_step,
            lambda _, detail: (f"relabel(episode, rng) must equal replay(episode, relabel_goals(episode, rng)) for "
                               f"generators in the same state (the episode itself when relabel_goals returns None); "
                               f"expected vs relabeled: {detail}"))
    _check_prefix(place, spec, episode, relabeled)
    if promises_non_decreasing_return(relabeler) and relabeled.episode_return < episode.episode_return:
        fail(_CHECK, place,
             f"{describe(relabeler)} promises never to lower returns ({NEVER_LOWERS_RETURN}=True) but the relabeled "
             f"return {relabeled.episode_return!r} < original {episode.episode_return!r} (original instruction "
             f"{show(own)}, relabeled {show(instruction)}, original rewards at steps "
             f"{(np.flatnonzero(episode.rewards) + 1).tolist()}, relabeled at "
             f"{(np.flatnonzero(relabeled.rewards) + 1).tolist()})")


def _check_relabeled_goals(place: str, spec: GoalSpec, episode: Episode, own: np.ndarray, goals: np.ndarray) -> None:
    """Item 2: relabeled goals have the instruction's shape, are never the mask, and were achieved in order."""
    if goals.shape != own.shape:
        fail(_CHECK, place, f"relabel_goals returned shape {goals.shape}; the instruction has shape {own.shape}")
    achieved = spec.achieved_values(episode.observations[spec.achieved_key], own.shape[1:])
    steps, hit = _reference_reach_steps(spec, achieved, goals)
    changed = ~np.all(goals == own, axis=tuple(range(1, own.ndim)))
    masked = np.asarray(spec.is_masked(goals), dtype=bool) & changed
    if masked.any():
        j = int(np.flatnonzero(masked)[0])
        fail(_CHECK, place, f"relabeled goal {j} = {show(goals[j])} is the mask value {spec.mask_value!r}")
    if not changed.any():
        return
    last = int(np.flatnonzero(changed)[-1])
    unreached = np.flatnonzero(steps[: last + 1] < 0)
    if unreached.size:
        j = int(unreached[0])
        after = int(steps[j - 1]) if j > 0 else 0
        seen = (np.flatnonzero(hit[:, j]) + 1).tolist()
        fail(_CHECK, place,
             f"relabeled goal {j} = {show(goals[j])} (was {show(own[j])}) is not reached after "
             f"{'goal ' + str(j - 1) + ' (step ' + str(after) + ')' if j else 'the reset'}; the episode "
             f"achieves it at steps {seen or 'never'} of 1..{len(episode)}. Relabeled goals must be "
             f"values the episode achieved, in time order (relabeled instruction {show(goals)}).")


def _check_prefix(place: str, spec: GoalSpec, episode: Episode, relabeled: Episode) -> None:
    """Item 3: relabeling rewrites goals, rewards and terminations only, and may only cut the episode short."""
    length = len(relabeled)
    if length > len(episode):
        fail(_CHECK, place, f"the relabeled episode has {length} steps, more than the original {len(episode)}")
    if not np.array_equal(relabeled.actions, episode.actions[:length]):
        step = int(np.flatnonzero(np.any(
            (relabeled.actions != episode.actions[:length]).reshape(length, -1), axis=1))[0]) + 1
        fail(_CHECK, f"{place}, step {step}", f"relabeling changed the action: {show(episode.actions[step - 1])} -> "
                                              f"{show(relabeled.actions[step - 1])}")
    for key, value in episode.observations.items():
        if key == spec.goals_key:
            continue
        other = relabeled.observations.get(key)
        if other is None or not np.array_equal(other, value[: length + 1]):
            fail(_CHECK, place, f"relabeling may only rewrite goals, rewards and terminations, but "
                                f"observation[{key!r}] is not the original's first {length + 1} entries")
