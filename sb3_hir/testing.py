"""Contract checks for instruction envs and sb3-hir plugins, for users' own regression tests.

A relabeler that does not reproduce an env's reward and termination teaches the agent a different task, and
nothing crashes when it does. These checks make such disagreements loud: each one raises an
:class:`AssertionError` explaining the *first* violation it finds, with the seed, the step and the values
involved, so that the failing case can be replayed by hand::

    from sb3_hir.testing import check_instruction_env, check_plugin

    def test_my_env():
        check_instruction_env(MyInstructionEnv(), relabeler="hindsight-instruction")

    def test_my_plugin():
        check_plugin("my-sb3-hir-plugin")

Episodes come from random-policy rollouts: ``env.reset(seed=seed + i)`` and ``env.action_space.seed(seed + i)``
for episode ``i``. Nothing heavy is imported at module import time, so the pytest plugin can import this module
cheaply.
"""

from __future__ import annotations

import importlib.metadata as importlib_metadata
import inspect
import math
import numbers
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from sb3_hir import plugins
from sb3_hir.contract import (
    ACCEPTS_RESET_GOALS,
    ENV_GOAL_SPEC,
    RESET_GOALS_OPTION,
    TERMINATIONS_UNRELATED_TO_GOALS,
    declared,
)

if TYPE_CHECKING:
    import gymnasium as gym
    import pytest

    from sb3_hir.episodes import Episode
    from sb3_hir.goals import GoalSpec
    from sb3_hir.relabel import InstructionRelabeler

__all__ = [
    "check_beta_schedule",
    "check_expert",
    "check_goal_spec",
    "check_instruction_env",
    "check_plugin",
    "check_relabeler",
    "component_names",
    "parametrize_components",
    "promises_non_decreasing_return",
]

#: Step cap of a rollout when ``max_steps`` is None and the env never ends an episode by itself.
DEFAULT_STEP_CAP = 1000

#: Attribute a relabeler sets to True when relabeling never lowers an episode's return.
NEVER_LOWERS_RETURN = "never_lowers_return"



# ---------------------------------------------------------------------------------------------- formatting
def _show(value: Any, limit: int = 240) -> str:
    """Readable, bounded rendering of an array or scalar for failure messages."""
    text = repr(value.tolist()) if isinstance(value, np.ndarray | np.generic) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _name(obj: Any) -> str:
    """A component's repr when it is informative (it shows the parameters), else its qualified name."""
    if inspect.isroutine(obj) or inspect.isclass(obj):
        return getattr(obj, "__qualname__", repr(obj))
    text = repr(obj)
    return text if len(text) <= 300 and " object at 0x" not in text else type(obj).__qualname__


def _fail(check: str, where: str, detail: str) -> NoReturn:
    raise AssertionError(f"{check}: {where}: {detail}")


def _where(index: int, seed: int, step: int | None = None) -> str:
    text = f"episode {index} (seed={seed})"
    return text if step is None else f"{text}, step {step}"


# ---------------------------------------------------------------------------------------------- rollouts
@dataclass
class _Rollout:
    """A random-policy episode with what the Episode type does not keep (reset info, raw float rewards)."""

    index: int
    seed: int
    observations: list[dict[str, np.ndarray]] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminated: list[bool] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    reset_info: dict[str, Any] = field(default_factory=dict)

    def episode(self) -> Episode:
        from sb3_hir.episodes import Episode

        keys = self.observations[0].keys()
        truncated = list(self.truncated)
        if not (self.terminated[-1] or truncated[-1]):
            truncated[-1] = True  # cut by max_steps: a time limit, not a terminal state
        return Episode(
            observations={key: np.stack([obs[key] for obs in self.observations]) for key in keys},
            actions=np.asarray(self.actions),
            rewards=np.asarray(self.rewards, dtype=np.float32),
            terminated=np.asarray(self.terminated, dtype=bool),
            truncated=np.asarray(truncated, dtype=bool),
            infos=list(self.infos),
        )


def _check_observation(check: str, where: str, obs: Any, space: Any) -> None:
    """Raise on the first key whose value breaks ``space`` (keys, array type, dtype, shape, bounds)."""
    if not isinstance(obs, Mapping):
        _fail(check, where, f"the observation must be a dict (observation_space is a Dict), got {type(obs).__name__}")
    expected, present = list(space.spaces), list(obs)
    if sorted(expected) != sorted(present):
        _fail(check, where, f"observation keys {sorted(present)} differ from observation_space keys {sorted(expected)}")
    for key in expected:
        value, sub = obs[key], space[key]
        if not isinstance(value, np.ndarray):
            _fail(check, where, f"observation[{key!r}] must be a numpy array, got {type(value).__name__} "
                                f"{_show(value)}")
        if sub.dtype is not None and value.dtype != sub.dtype:
            _fail(check, where, f"observation[{key!r}] has dtype {value.dtype}, but observation_space[{key!r}] "
                                f"declares {sub.dtype}; value {_show(value)}")
        if sub.shape is not None and value.shape != sub.shape:
            _fail(check, where, f"observation[{key!r}] has shape {value.shape}, but observation_space[{key!r}] "
                                f"declares {sub.shape}; value {_show(value)}")
        if not sub.contains(value):
            _fail(check, where, f"observation[{key!r}] = {_show(value)} lies outside observation_space[{key!r}] = "
                                f"{sub}")


def _check_success_flag(check: str, where: str, info: Any) -> None:
    if not isinstance(info, Mapping) or "is_success" not in info:
        keys = sorted(info) if isinstance(info, Mapping) else type(info).__name__
        _fail(check, where, f"info must carry 'is_success' on every step; info keys: {keys}")
    flag = info["is_success"]
    if not isinstance(flag, bool | np.bool_) and not (isinstance(flag, numbers.Real) and flag in (0, 1)):
        _fail(check, where, f"info['is_success'] must be a bool (or 0/1), got {type(flag).__name__} {_show(flag)}")


def _rollout(env: gym.Env, index: int, seed: int, max_steps: int | None, check: str) -> _Rollout:
    """Run one random-policy episode, checking the observation and info contract on every step."""
    space = env.observation_space
    cap = DEFAULT_STEP_CAP if max_steps is None else max_steps
    out = _Rollout(index=index, seed=seed)
    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    _check_observation(check, _where(index, seed, 0), obs, space)
    out.observations.append({key: np.array(value, copy=True) for key, value in obs.items()})
    out.reset_info = dict(info)
    for step in range(1, cap + 1):
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        where = _where(index, seed, step)
        _check_observation(check, where, obs, space)
        if not isinstance(reward, numbers.Real) or isinstance(reward, bool):
            _fail(check, where, f"reward must be a real number, got {type(reward).__name__} {_show(reward)}")
        _check_success_flag(check, where, info)
        out.observations.append({key: np.array(value, copy=True) for key, value in obs.items()})
        out.actions.append(action)
        out.rewards.append(float(reward))
        out.terminated.append(bool(terminated))
        out.truncated.append(bool(truncated))
        out.infos.append(dict(info))
        if terminated or truncated:
            break
    return out


def _rollouts(env: gym.Env, n_episodes: int, seed: int, max_steps: int | None, check: str) -> list[_Rollout]:
    return [_rollout(env, i, seed + i, max_steps, check) for i in range(n_episodes)]


def _first_rollout_difference(a: _Rollout, b: _Rollout) -> tuple[int, str] | None:
    """Earliest step at which two rollouts differ, and how."""
    for step in range(max(len(a.observations), len(b.observations))):
        if step >= len(a.observations) or step >= len(b.observations):
            lengths = (len(a.observations) - 1, len(b.observations) - 1)
            return step, f"the episode lasted {lengths[0]} steps the first time and {lengths[1]} the second"
        if step > 0:
            for name in ("rewards", "terminated", "truncated"):
                first, second = getattr(a, name)[step - 1], getattr(b, name)[step - 1]
                if first != second:
                    return step, f"{name[:-1] if name == 'rewards' else name} {_show(first)} the first time, " \
                                 f"{_show(second)} the second"
        for key, value in a.observations[step].items():
            other = b.observations[step][key]
            if not np.array_equal(value, other):
                return step, f"observation[{key!r}] {_show(value)} the first time, {_show(other)} the second"
    return None


# ---------------------------------------------------------------------------------------------- goal specs
def _declared_goal_spec(env: gym.Env) -> Any:
    """``goal_spec`` declared along ``env``'s wrapper chain (see :mod:`sb3_hir.contract`), else None."""
    return declared(env, ENV_GOAL_SPEC)


def _env_goal_spec(env: gym.Env) -> GoalSpec:
    """The goal spec ``env`` declares (see :data:`ENV_GOAL_SPEC`; a name or a GoalSpec), else ``"exact"``."""
    from sb3_hir.goals import ExactGoalSpec, GoalSpec

    declared = _declared_goal_spec(env)
    if declared is None:
        return ExactGoalSpec()
    spec = plugins.resolve("goal_spec", declared)
    if not isinstance(spec, GoalSpec):
        raise ValueError(f"the env's {ENV_GOAL_SPEC} attribute must be a goal-spec name or a GoalSpec, got "
                         f"{declared!r}")
    return spec


def _env_num_goals(check: str, env: gym.Env, spec: GoalSpec) -> int:
    try:
        num_goals, _ = spec.validate_space(env.observation_space)
    except ValueError as error:
        _fail(check, "observation_space", f"{error} (goal spec {spec!r})")
    return num_goals


def _default_relabeler(num_goals: int, spec: GoalSpec) -> InstructionRelabeler:
    from sb3_hir.relabel import HindsightInstructionRelabeler

    return HindsightInstructionRelabeler(num_goals, strategy="none", goal_spec=spec)


def _resolve_env(env: gym.Env | str) -> tuple[gym.Env, bool]:
    """``(env, owned)``: a registered env name is created with its defaults (and closed by the caller)."""
    if isinstance(env, str):
        return plugins.create("env", env), True
    return env, False


# ---------------------------------------------------------------------------------------------- replay
def _replay_mismatch(relabeler: InstructionRelabeler, rollout: _Rollout, episode: Episode) -> tuple[int, str] | None:
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
                return step, f"env reward {_show(env_rewards[t])} != replayed reward {_show(replayed.rewards[t])}"
            if episode.terminated[t] != replayed.terminated[t]:
                return step, (f"env terminated={bool(episode.terminated[t])} != replayed "
                              f"terminated={bool(replayed.terminated[t])}")
        if not np.array_equal(env_goals[step], replay_goals[step]):
            return step, (f"env observation[{spec.goals_key!r}] = {_show(env_goals[step])} != replayed "
                          f"{_show(replay_goals[step])}")
    if len(replayed) != len(episode):  # pragma: no cover - a shorter replay terminates where the env did not
        return len(replayed), f"replay ends after {len(replayed)} steps, the env after {len(episode)}"
    return None


def _context(episode: Episode, spec: GoalSpec, step: int) -> str:
    """The goals shown before ``step`` and the value achieved by it, to make a replay failure readable."""
    goals = episode.observations[spec.goals_key]
    achieved = episode.observations[spec.achieved_key]
    before = goals[max(step - 1, 0)]
    return f"(goals observed before the step: {_show(before)}, achieved after it: {_show(achieved[step])})"


# ---------------------------------------------------------------------------------------------- env check
def check_instruction_env(
    env: gym.Env | str,
    relabeler: InstructionRelabeler | str | None = None,
    n_episodes: int = 5,
    seed: int = 0,
    max_steps: int | None = None,
    counterfactual: int = 3,
) -> None:
    """Check that ``env`` keeps the instruction-env contract the relabelers rely on.

    Over ``n_episodes`` random-policy episodes (episode ``i`` seeded with ``seed + i``):

    1. every observation matches ``observation_space`` (keys, dtypes, shapes, bounds) and carries the goal spec's
       goals and achieved keys, and every ``info`` has a bool ``is_success``;
    2. replaying each episode under its own goals reproduces the env's rewards, terminations and goal
       observations exactly;
    3. ``info["is_success"]`` is True exactly when all goals are reached (masked), and ``info["goals_reached"]``,
       when present, counts the masked goals;
    4. seeding is reproducible: ``reset(seed=...)`` replays episode 0 identically after the others, and
       different seeds give ``env.unwrapped.np_random`` different states;
    5. counterfactual replay, for envs that take an instruction at reset (``accepts_reset_goals``, see
       :mod:`sb3_hir.contract`): each episode is played again from the same seed, with the same actions, under
       ``counterfactual`` hindsight instructions drawn by the relabeler (by a ``"all"`` hindsight-instruction
       relabeler when it draws none) and one instruction of achieved values in reverse order of visit; the env's
       rewards, terminations, goal observations, every other observation key (a history window included)
       and ``is_success`` must equal ``relabeler.replay(episode, goals)`` step by step. This is what relabeling
       assumes: the env, given the relabeled instruction, would have produced the relabeled episode;
    6. for envs that cannot take an instruction, a termination on the step that reaches a goal other than the
       last is flagged: replay keeps it under every instruction (as a fall), which is wrong when the goal caused
       it. Envs whose terminations never depend on the goals opt out with
       ``terminations_unrelated_to_goals = True``. This heuristic only sees goals the random policy reaches.

    :param env: the env, or a registered ``"env"`` name (created with its defaults).
    :param relabeler: whose ``replay`` must reproduce the env (instance or registered name); by default a
        ``"none"`` hindsight-instruction relabeler on the env's goal spec (the ``goal_spec`` attribute of the env
        or of a wrapper around it, if any, else ``"exact"``).
    :param n_episodes: random-policy episodes to run (>= 1).
    :param seed: seed of episode 0.
    :param max_steps: cut each episode after this many steps (default: when the env ends it, at most
        :data:`DEFAULT_STEP_CAP`).
    :param counterfactual: hindsight instructions replayed against the env per episode (0: only the reversed one).
    :raises AssertionError: naming the seed, the step and the values of the first violation.
    """
    check = "check_instruction_env"
    _check_counts(n_episodes=n_episodes, max_steps=max_steps)
    if isinstance(counterfactual, bool) or not isinstance(counterfactual, int) or counterfactual < 0:
        raise ValueError(f"counterfactual must be an int >= 0, got {counterfactual!r}")
    env, owned = _resolve_env(env)
    try:
        relabeler = _resolve_relabeler(check, relabeler, env)
        spec = relabeler.goal_spec
        num_goals = _env_num_goals(check, env, spec)
        _check_num_goals(check, relabeler, num_goals)
        rollouts = _rollouts(env, n_episodes, seed, max_steps, check)
        for rollout in rollouts:
            episode = rollout.episode()
            mismatch = _replay_mismatch(relabeler, rollout, episode)
            if mismatch is not None:
                step, detail = mismatch
                _fail(check, _where(rollout.index, rollout.seed, step),
                      f"{detail} {_context(episode, spec, step)}. {_name(relabeler)}.replay under the episode's own "
                      f"goals must reproduce the env exactly, or relabeled data teaches a different task.")
            _check_success(check, rollout, episode, spec, num_goals)
        _check_seeding(check, env, rollouts[0], seed, max_steps)
        if declared(env, ACCEPTS_RESET_GOALS, False):
            for rollout in rollouts:
                _check_counterfactual(check, env, relabeler, rollout, counterfactual)
        elif not declared(env, TERMINATIONS_UNRELATED_TO_GOALS, False):
            for rollout in rollouts:
                _check_goal_terminations(check, rollout, rollout.episode(), spec, num_goals)
    finally:
        if owned:
            env.close()


def _counterfactual_instructions(relabeler: Any, episode: Episode, rng: np.random.Generator,
                                 count: int) -> list[np.ndarray]:
    """Hindsight instructions to replay ``episode`` under: the relabeler's draws, then achieved values in reverse
    order of visit (which catches envs that ignore the goal order or pay for goals other than the active one)."""
    from sb3_hir.relabel import HindsightInstructionRelabeler

    spec, k = relabeler.goal_spec, relabeler.num_goals
    drawer = relabeler
    if getattr(relabeler, "strategy", None) == "none" or not callable(getattr(relabeler, "relabel_goals", None)):
        drawer = HindsightInstructionRelabeler(k, strategy="all", goal_spec=spec)
    instructions = []
    for _ in range(count):
        goals = drawer.relabel_goals(episode, rng)
        if goals is not None:
            instructions.append(np.asarray(goals))
    _, achieved = relabeler._episode_goal_arrays(episode)
    if len(achieved) > k:
        steps = np.sort(rng.choice(np.arange(1, len(achieved)), size=k, replace=False))[::-1]
        own = episode.instruction(spec.goals_key)
        instructions.append(achieved[steps].astype(own.dtype).reshape(own.shape))
    return instructions


_GOAL_FREE = ("replay keeps every key but the instruction as recorded, so this key must not depend on the instruction "
              "(a history window must hold no goals or rewards)")


def _check_counterfactual(check: str, env: gym.Env, relabeler: Any, rollout: _Rollout, count: int) -> None:
    """Play the rollout's actions from its seed under hindsight instructions; the env must match ``replay``."""
    spec = relabeler.goal_spec
    episode = rollout.episode()
    rng = np.random.default_rng([rollout.seed, 0x5EED])
    _, achieved = relabeler._episode_goal_arrays(episode)
    for goals in _counterfactual_instructions(relabeler, episode, rng, count):
        replayed = relabeler.replay(episode, goals)
        expected_goals = replayed.observations[spec.goals_key]
        under = f"under the instruction {_show(goals)} (reset(seed={rollout.seed}, options={{'goals': ...}}))"

        def fail(step: int, detail: str, goals_before: Any = None, under: str = under) -> NoReturn:
            shown = "" if goals_before is None else f" (goals observed before the step: {_show(goals_before)})"
            _fail(check, _where(rollout.index, rollout.seed, step),
                  f"{under}: {detail}{shown}. {_name(relabeler)}.replay under this instruction disagrees with "
                  "the env, so relabeled data would teach a task the env does not pose.")

        obs, _ = env.reset(seed=rollout.seed, options={RESET_GOALS_OPTION: goals})
        other_keys = [key for key in replayed.observations if key != spec.goals_key and key in obs]
        for key in other_keys:
            if not np.array_equal(obs[key], replayed.observations[key][0]):
                fail(0, f"observation[{key!r}] = {_show(obs[key])} after reset != the recorded "
                        f"{_show(replayed.observations[key][0])}: {_GOAL_FREE}")
        if not np.array_equal(obs[spec.goals_key], expected_goals[0]):
            fail(0, f"observation[{spec.goals_key!r}] = {_show(obs[spec.goals_key])} after reset, expected the "
                    f"instruction {_show(expected_goals[0])}: the env (or a wrapper) ignored options['goals']")
        for step in range(1, len(replayed) + 1):
            obs, reward, terminated, truncated, info = env.step(rollout.actions[step - 1])
            now = spec.achieved_values(np.asarray(obs[spec.achieved_key])[None], achieved.shape[1:])[0]
            if not np.array_equal(now, achieved[step]):
                fail(step, f"achieved {_show(now)}, but {_show(achieved[step])} with the episode's own instruction: "
                           "the dynamics depend on the instruction")
            before = expected_goals[step - 1]
            if float(reward) != float(replayed.rewards[step - 1]):
                fail(step, f"env reward {_show(float(reward))} != replayed reward "
                           f"{_show(float(replayed.rewards[step - 1]))}", before)
            if bool(terminated) != bool(replayed.terminated[step - 1]):
                fail(step, f"env terminated={bool(terminated)} != replayed "
                           f"terminated={bool(replayed.terminated[step - 1])}", before)
            if not np.array_equal(obs[spec.goals_key], expected_goals[step]):
                fail(step, f"env observation[{spec.goals_key!r}] = {_show(obs[spec.goals_key])} != replayed "
                           f"{_show(expected_goals[step])}", before)
            for key in other_keys:
                if not np.array_equal(obs[key], replayed.observations[key][step]):
                    fail(step, f"env observation[{key!r}] = {_show(obs[key])} != the recorded "
                               f"{_show(replayed.observations[key][step])}: {_GOAL_FREE}", before)
            success = bool(spec.is_masked(expected_goals[step]).all())
            if bool(info.get("is_success", False)) != success:
                fail(step, f"info['is_success'] = {_show(info.get('is_success'))}, replayed {success}", before)
            if (terminated or truncated) and step < len(replayed):
                fail(step, f"the env ended the episode (terminated={bool(terminated)}, truncated={bool(truncated)}) "
                           f"where the replay goes on for {len(replayed) - step} more steps", before)


def _check_goal_terminations(check: str, rollout: _Rollout, episode: Episode, spec: GoalSpec, k: int) -> None:
    """Flag a termination on a step that reaches goal j < k (see :func:`check_instruction_env`, item 6)."""
    counts = spec.is_masked(episode.observations[spec.goals_key]).sum(axis=-1)
    for step in range(1, len(episode) + 1):
        if episode.terminated[step - 1] and counts[step] > counts[step - 1] and counts[step] < k:
            _fail(check, _where(rollout.index, rollout.seed, step),
                  f"the env terminated on the step that reached goal {int(counts[step])} of {k}. Replay keeps a "
                  "termination the goals did not complete under every instruction, as a fall; if this one was "
                  "caused by the goal, relabeled episodes would end at the wrong step. Let the env take an "
                  f"instruction at reset ({ACCEPTS_RESET_GOALS} = True) so the check can replay it, or, if its "
                  f"terminations never depend on the goals, set {TERMINATIONS_UNRELATED_TO_GOALS} = True.")


def _check_counts(**counts: int | None) -> None:
    for name, value in counts.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
            raise ValueError(f"{name} must be an int >= 1{' or None' if name == 'max_steps' else ''}, got {value!r}")


def _is_factory(obj: Any, method: str) -> bool:
    """Whether ``obj`` builds components (a class, or a callable without the component's ``method``)."""
    return inspect.isclass(obj) or (callable(obj) and not hasattr(obj, method))


def _resolve_relabeler(check: str, relabeler: Any, env: gym.Env) -> Any:
    """An instance is used as is; a name or factory is created with the env's ``num_goals`` and declared spec."""
    if relabeler is not None and not isinstance(relabeler, str) and not _is_factory(relabeler, "relabel"):
        return relabeler
    spec = _env_goal_spec(env)
    num_goals = _env_num_goals(check, env, spec)
    if relabeler is None:
        return _default_relabeler(num_goals, spec)
    kwargs: dict[str, Any] = {"num_goals": num_goals}
    if _declared_goal_spec(env) is not None:
        kwargs["goal_spec"] = spec
    factory = plugins.get("relabeler", relabeler) if isinstance(relabeler, str) else relabeler
    return _create(factory, **kwargs)


def _check_num_goals(check: str, relabeler: Any, num_goals: int) -> None:
    if relabeler.num_goals != num_goals:
        _fail(check, "observation_space", f"the env's instructions hold {num_goals} goals but {_name(relabeler)} "
                                          f"has num_goals={relabeler.num_goals}")


def _check_success(check: str, rollout: _Rollout, episode: Episode, spec: GoalSpec, num_goals: int) -> None:
    """``is_success`` (and ``goals_reached``) must agree with the goals the observation shows as reached."""
    counts = spec.is_masked(episode.observations[spec.goals_key]).sum(axis=-1)
    for step, info in enumerate(rollout.infos, start=1):
        where = _where(rollout.index, rollout.seed, step)
        flag, success = bool(info["is_success"]), bool(counts[step] == num_goals)
        if flag != success:
            _fail(check, where, f"info['is_success'] = {_show(info['is_success'])} but {int(counts[step])} of "
                                f"{num_goals} goals are reached (observation[{spec.goals_key!r}] = "
                                f"{_show(episode.observations[spec.goals_key][step])}); is_success must be True "
                                f"exactly when all goals are reached")
        if "goals_reached" in info and info["goals_reached"] != counts[step]:
            _fail(check, where, f"info['goals_reached'] = {_show(info['goals_reached'])} but the observation shows "
                                f"{int(counts[step])} goals reached (masked): "
                                f"{_show(episode.observations[spec.goals_key][step])}")


def _check_seeding(check: str, env: gym.Env, first: _Rollout, seed: int, max_steps: int | None) -> None:
    again = _rollout(env, first.index, first.seed, max_steps, check)
    difference = _first_rollout_difference(first, again)
    if difference is not None:
        step, detail = difference
        _fail(check, _where(first.index, first.seed, step),
              f"not reproducible: re-running it with reset(seed={first.seed}) and action_space.seed({first.seed}) "
              f"gave {detail}. The env must draw all randomness from self.np_random, seeded by reset(seed=...).")
    unwrapped = getattr(env, "unwrapped", env)
    env.reset(seed=seed)
    state = _rng_state(unwrapped)
    env.reset(seed=seed + 1)
    if state is not None and state == _rng_state(unwrapped):
        _fail(check, f"reset(seed={seed}) and reset(seed={seed + 1})",
              "env.unwrapped.np_random has the same state after both: reset ignores its seed (call "
              "super().reset(seed=seed) first in reset)")


def _rng_state(env: Any) -> Any:
    rng = getattr(env, "_np_random", None)
    return None if rng is None else rng.bit_generator.state


# ---------------------------------------------------------------------------------------------- relabeler check
def promises_non_decreasing_return(relabeler: Any) -> bool:
    """Whether ``relabeler`` promises that relabeling never lowers an episode's return.

    Lets :func:`check_relabeler` hold a relabeler to a promise only when it makes one.

    Declared by the attribute :data:`NEVER_LOWERS_RETURN` (``never_lowers_return = True``); absent means no
    promise, so :func:`check_relabeler` does not hold the relabeler to it.
    """
    return bool(getattr(relabeler, NEVER_LOWERS_RETURN, False))


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
                    return step, f"{name} {_show(first)} vs {_show(second)}"
        for key in sorted(set(a.observations) | set(b.observations)):
            if key not in a.observations or key not in b.observations:
                return 0, f"observation keys differ: {sorted(a.observations)} vs {sorted(b.observations)}"
            first, second = a.observations[key][step], b.observations[key][step]
            if first.dtype != second.dtype or not np.array_equal(first, second):
                return step, f"observation[{key!r}] {_show(first)} ({first.dtype}) vs {_show(second)} ({second.dtype})"
    return None


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

    The env must agree with the relabeler's replay first (see :func:`check_instruction_env`).

    :param relabeler: instance, or a registered name or factory, created with the env's ``num_goals`` (and the
        goal spec the env declares, if any).
    :param env: the env, or a registered ``"env"`` name (created with its defaults).
    :raises AssertionError: naming the seed, the step and the values of the first violation.
    """
    check = "check_relabeler"
    _check_counts(n_episodes=n_episodes, max_steps=max_steps, n_relabels=n_relabels)
    env, owned = _resolve_env(env)
    try:
        relabeler = _resolve_relabeler(check, relabeler, env)
        spec = relabeler.goal_spec
        _check_num_goals(check, relabeler, _env_num_goals(check, env, spec))
        name = _name(relabeler)
        twin = _none_twin(relabeler)
        promised = promises_non_decreasing_return(relabeler)
        for rollout in _rollouts(env, n_episodes, seed, max_steps, check):
            episode = rollout.episode()
            mismatch = _replay_mismatch(relabeler, rollout, episode)
            if mismatch is not None:
                step, detail = mismatch
                _fail(check, _where(rollout.index, rollout.seed, step),
                      f"the env disagrees with {name}.replay before any relabeling: {detail}; run "
                      f"check_instruction_env(env, relabeler) first")
            for draw in range(n_relabels):
                _check_one_relabel(check, relabeler, name, spec, rollout, episode, draw, promised)
            if twin is not None:
                relabeled = twin.relabel(episode, np.random.default_rng([rollout.seed, 0]))
                difference = _first_episode_difference(episode, relabeled)
                if difference is not None:
                    step, detail = difference
                    _fail(check, _where(rollout.index, rollout.seed, step),
                          f"{_name(twin)} has strategy 'none' and must return the episode unchanged, but the "
                          f"original and the relabeled episode differ: {detail}")
    finally:
        if owned:
            env.close()


def _check_one_relabel(check: str, relabeler: Any, name: str, spec: GoalSpec, rollout: _Rollout, episode: Episode,
                       draw: int, promised: bool) -> None:
    where = f"{_where(rollout.index, rollout.seed)}, relabel draw {draw} (rng=np.random.default_rng([{rollout.seed}, " \
            f"{draw}]))"
    own = episode.instruction(spec.goals_key)
    goals = relabeler.relabel_goals(episode, np.random.default_rng([rollout.seed, draw]))
    relabeled = relabeler.relabel(episode, np.random.default_rng([rollout.seed, draw]))
    if goals is not None:
        goals = np.asarray(goals)
        if goals.shape != own.shape:
            _fail(check, where, f"relabel_goals returned shape {goals.shape}; the instruction has shape {own.shape}")
        achieved = spec.achieved_values(episode.observations[spec.achieved_key], own.shape[1:])
        steps, hit = _reference_reach_steps(spec, achieved, goals)
        changed = ~np.all(goals == own, axis=tuple(range(1, own.ndim)))
        masked = np.asarray(spec.is_masked(goals), dtype=bool) & changed
        if masked.any():
            j = int(np.flatnonzero(masked)[0])
            _fail(check, where, f"relabeled goal {j} = {_show(goals[j])} is the mask value {spec.mask_value!r}")
        if changed.any():
            last = int(np.flatnonzero(changed)[-1])
            unreached = np.flatnonzero(steps[: last + 1] < 0)
            if unreached.size:
                j = int(unreached[0])
                after = int(steps[j - 1]) if j > 0 else 0
                seen = (np.flatnonzero(hit[:, j]) + 1).tolist()
                _fail(check, where,
                      f"relabeled goal {j} = {_show(goals[j])} (was {_show(own[j])}) is not reached after "
                      f"{'goal ' + str(j - 1) + ' (step ' + str(after) + ')' if j else 'the reset'}; the episode "
                      f"achieves it at steps {seen or 'never'} of 1..{len(episode)}. Relabeled goals must be "
                      f"values the episode achieved, in time order (relabeled instruction {_show(goals)}).")
        expected = relabeler.replay(episode, goals)
    else:
        expected = episode
    instruction = relabeled.instruction(spec.goals_key)
    difference = _first_episode_difference(relabeled, relabeler.replay(relabeled, instruction))
    if difference is not None:
        step, detail = difference
        _fail(check, f"{where}, step {step}",
              f"the relabeled episode is not self-consistent: replaying it under its own instruction "
              f"{_show(instruction)} changes it: relabeled vs replayed {detail}")
    difference = _first_episode_difference(expected, relabeled)
    if difference is not None:
        step, detail = difference
        _fail(check, f"{where}, step {step}",
              f"relabel(episode, rng) must equal replay(episode, relabel_goals(episode, rng)) for generators in the "
              f"same state (the episode itself when relabel_goals returns None); expected vs relabeled: {detail}")
    _check_prefix(check, where, spec, episode, relabeled)
    if promised and relabeled.episode_return < episode.episode_return:
        _fail(check, where,
              f"{name} promises never to lower returns ({NEVER_LOWERS_RETURN}=True) but the relabeled return "
              f"{relabeled.episode_return!r} < original {episode.episode_return!r} (original instruction "
              f"{_show(own)}, relabeled {_show(instruction)}, original rewards at steps "
              f"{(np.flatnonzero(episode.rewards) + 1).tolist()}, relabeled at "
              f"{(np.flatnonzero(relabeled.rewards) + 1).tolist()})")


def _check_prefix(check: str, where: str, spec: GoalSpec, episode: Episode, relabeled: Episode) -> None:
    length = len(relabeled)
    if length > len(episode):
        _fail(check, where, f"the relabeled episode has {length} steps, more than the original {len(episode)}")
    if not np.array_equal(relabeled.actions, episode.actions[:length]):
        step = int(np.flatnonzero(np.any(
            (relabeled.actions != episode.actions[:length]).reshape(length, -1), axis=1))[0]) + 1
        _fail(check, f"{where}, step {step}", f"relabeling changed the action: {_show(episode.actions[step - 1])} -> "
                                              f"{_show(relabeled.actions[step - 1])}")
    for key, value in episode.observations.items():
        if key == spec.goals_key:
            continue
        other = relabeled.observations.get(key)
        if other is None or not np.array_equal(other, value[: length + 1]):
            _fail(check, where, f"relabeling may only rewrite goals, rewards and terminations, but "
                                f"observation[{key!r}] is not the original's first {length + 1} entries")


# ---------------------------------------------------------------------------------------------- goal spec check
def check_goal_spec(spec: GoalSpec | str, goal_shape: Sequence[int] | None = None, seed: int = 0) -> None:
    """Check a goal spec's contract: attributes, vectorised ``reached`` and ``is_masked``.

    ``reached`` must say a goal reaches itself and a goal 1000 away does not, return a bool array of the
    broadcast leading shape, and agree with one-pair-at-a-time calls; ``is_masked`` must be True on a goal made
    of ``mask_value`` only and False otherwise.

    :param spec: instance or registered name (created with its defaults).
    :param goal_shape: shape of one goal; default ``(2,) * spec.goal_ndim``.
    :param seed: seed of the random test goals.
    """
    check = "check_goal_spec"
    spec = plugins.resolve("goal_spec", spec)
    name = _name(spec)
    for attribute in ("goals_key", "achieved_key"):
        value = getattr(spec, attribute, None)
        if not isinstance(value, str) or not value:
            _fail(check, name, f"{attribute} must be a non-empty str, got {value!r}")
    if spec.goals_key == spec.achieved_key:
        _fail(check, name, f"goals_key and achieved_key must differ, both are {spec.goals_key!r}")
    mask = getattr(spec, "mask_value", None)
    if not isinstance(mask, numbers.Real) or isinstance(mask, bool):
        _fail(check, name, f"mask_value must be a number, got {mask!r}")
    reward = getattr(spec, "goal_reward", None)
    if not isinstance(reward, numbers.Real) or isinstance(reward, bool) or not math.isfinite(reward):
        _fail(check, name, f"goal_reward must be a finite number, got {reward!r}")
    if goal_shape is None:
        goal_shape = (2,) * int(getattr(spec, "goal_ndim", 1))
    goal_shape = tuple(int(d) for d in goal_shape)
    rng = np.random.default_rng(seed)
    n = 6
    # Integer-valued goals away from the mask value, so that exact and tolerance specs judge them alike.
    goals = (mask + 1 + rng.integers(0, 20, size=(n, *goal_shape))).astype(np.float64)
    where = f"{name}, seed={seed}"

    same = np.asarray(spec.reached(goals, goals))
    if same.shape != (n,) or same.dtype != np.bool_:
        _fail(check, where, f"reached(achieved, goal) on {n} goals of shape {goal_shape} must return a bool array of "
                            f"shape ({n},), got {same.dtype} {same.shape}")
    if not same.all():
        j = int(np.flatnonzero(~same)[0])
        _fail(check, where, f"a goal must reach itself, but reached({_show(goals[j])}, {_show(goals[j])}) is False")
    far = np.asarray(spec.reached(goals + 1000.0, goals))
    if far.any():
        j = int(np.flatnonzero(far)[0])
        _fail(check, where, f"reached({_show(goals[j] + 1000.0)}, {_show(goals[j])}) is True for values 1000 apart")
    table = np.asarray(spec.reached(goals[:, None], goals[None]))
    if table.shape != (n, n):
        _fail(check, where, f"reached must broadcast leading dims: achieved {(n, 1, *goal_shape)} against goals "
                            f"{(1, n, *goal_shape)} gave shape {table.shape}, expected {(n, n)}")
    for a in range(n):
        for b in range(n):
            single = bool(np.asarray(spec.reached(goals[a], goals[b])))
            if single != bool(table[a, b]):
                _fail(check, where, f"reached({_show(goals[a])}, {_show(goals[b])}) is {single} alone but "
                                    f"{bool(table[a, b])} when vectorised")
    masked = np.asarray(spec.is_masked(np.full((n, *goal_shape), mask, dtype=np.float64)))
    if masked.shape != (n,) or not masked.all():
        _fail(check, where, f"is_masked on {n} goals filled with mask_value={mask!r} must be {n} Trues, got "
                            f"{_show(masked)}")
    unmasked = np.asarray(spec.is_masked(goals))
    if unmasked.any():
        j = int(np.flatnonzero(unmasked)[0])
        _fail(check, where, f"is_masked({_show(goals[j])}) is True but the goal is not the mask value {mask!r}")
    if int(np.prod(goal_shape)) > 1:
        partial = goals.copy()
        partial.reshape(n, -1)[:, 0] = mask
        if np.asarray(spec.is_masked(partial)).any():
            _fail(check, where, f"is_masked must need every component to be the mask value, but "
                                f"is_masked({_show(partial[0])}) is True")


# ---------------------------------------------------------------------------------------------- beta schedules
def check_beta_schedule(schedule: Callable[[int], float] | str, rounds: int = 50, non_increasing: bool = True) -> None:
    """Check a DAgger beta schedule: ``schedule(r)`` is a number in ``[0, 1]`` for ``r = 0..rounds-1``.

    beta is the probability that the expert acts, so anything outside ``[0, 1]`` breaks the collector. The
    schedule must be deterministic and, unless ``non_increasing=False``, hand control to the learner gradually
    (beta never rises), as imitation's and sb3-hir's schedules do.

    :param schedule: the callable, or a registered ``"beta_schedule"`` name (created with its defaults).
    """
    check = "check_beta_schedule"
    _check_counts(rounds=rounds)
    schedule = plugins.resolve("beta_schedule", schedule)
    name = _name(schedule)
    if not callable(schedule):
        _fail(check, name, "a beta schedule must be callable as schedule(round_num) -> beta")
    previous: float | None = None
    for round_num in range(rounds):
        beta = schedule(round_num)
        where = f"{name}, round {round_num}"
        if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not math.isfinite(beta):
            _fail(check, where, f"beta must be a finite real number, got {type(beta).__name__} {_show(beta)}")
        if not 0.0 <= beta <= 1.0:
            _fail(check, where, f"beta = {beta!r} lies outside [0, 1] (it is the probability that the expert acts)")
        again = schedule(round_num)
        if again != beta:
            _fail(check, where, f"not deterministic: beta = {beta!r}, then {again!r} for the same round")
        if non_increasing and previous is not None and beta > previous:
            _fail(check, where, f"beta rose from {previous!r} (round {round_num - 1}) to {beta!r}; a schedule hands "
                                f"control to the learner and must not increase (pass non_increasing=False to allow)")
        previous = float(beta)


# ---------------------------------------------------------------------------------------------- experts
def check_expert(
    expert: Any,
    env: gym.Env | str,
    n_steps: int = 200,
    seed: int = 0,
    min_success_rate: float | None = None,
) -> None:
    """Check an expert's SB3 ``predict`` contract on ``env`` (wrapped in a one-env ``DummyVecEnv``).

    A DAgger expert that answers the wrong shape, or differently when asked twice, mislabels every visited state without
    an error: this makes it fail in your tests instead.

    ``predict(observation, state=None, episode_start=None, deterministic=True)`` must return ``(actions,
    state)`` with one valid action per env, the same actions when asked twice, and the expert drives
    ``n_steps`` steps. With ``min_success_rate``, at least that fraction of the finished episodes must end with
    ``info["is_success"]``.

    :param expert: an object with ``predict``, or a factory called as ``factory(venv)`` (a registered expert
        factory or a registered ``"expert"`` name).
    :param env: the env, or a registered ``"env"`` name (created with its defaults).
    """
    from stable_baselines3.common.vec_env import DummyVecEnv

    check = "check_expert"
    _check_counts(n_steps=n_steps)
    env, owned = _resolve_env(env)
    venv = DummyVecEnv([lambda: env])
    try:
        if isinstance(expert, str):
            expert = plugins.create("expert", expert, venv=venv)
        elif _is_factory(expert, "predict"):
            expert = expert(venv)
        name = _name(expert)
        if not callable(getattr(expert, "predict", None)):
            _fail(check, name, "an expert must have SB3's predict(observation, state, episode_start, deterministic)")
        space = env.action_space
        venv.seed(seed)
        obs = venv.reset()
        state, starts = None, np.ones(venv.num_envs, dtype=bool)
        episodes = successes = 0
        for step in range(1, n_steps + 1):
            where = f"seed={seed}, step {step}"
            out = expert.predict(obs, state=state, episode_start=starts, deterministic=True)
            if not isinstance(out, tuple) or len(out) != 2:
                _fail(check, where, f"{name}.predict must return (actions, state), got {_show(out)}")
            actions, new_state = out
            actions = np.asarray(actions)
            expected_shape = (venv.num_envs, *(space.shape or ()))
            if actions.shape != expected_shape:
                _fail(check, where, f"{name}.predict returned actions of shape {actions.shape}, expected "
                                    f"{expected_shape} (one action per env of {space})")
            if not space.contains(np.asarray(actions[0], dtype=space.dtype)) or (
                np.issubdtype(np.dtype(space.dtype), np.integer) and not np.issubdtype(actions.dtype, np.integer)
            ):
                _fail(check, where, f"{name}.predict returned action {_show(actions[0])} ({actions.dtype}), which "
                                    f"is not in the action space {space}")
            again = np.asarray(expert.predict(obs, state=state, episode_start=starts, deterministic=True)[0])
            if not np.array_equal(again, actions):
                _fail(check, where, f"{name}.predict(deterministic=True) returned {_show(actions)}, then "
                                    f"{_show(again)} for the same observation")
            obs, _rewards, dones, infos = venv.step(actions)
            state, starts = new_state, dones
            if dones[0]:
                episodes += 1
                successes += bool(infos[0].get("is_success", False))
        if min_success_rate is not None:
            rate = successes / episodes if episodes else 0.0
            if rate < min_success_rate:
                _fail(check, f"seed={seed}, {n_steps} steps",
                      f"{name} succeeded in {successes} of {episodes} finished episodes (rate {rate:.2f}), below "
                      f"min_success_rate={min_success_rate}")
    finally:
        if owned:
            venv.close()


# ---------------------------------------------------------------------------------------------- plugins
def _default_env() -> gym.Env:
    """Small MazeRunner: what relabelers and experts of a plugin without envs are checked on."""
    from sb3_hir.envs import MazeRunnerEnv

    return MazeRunnerEnv(maze_dim=7, num_goals=3, time_limit=60)


def check_plugin(
    distribution_name: str,
    env: gym.Env | str | Callable[[], gym.Env] | None = None,
    n_episodes: int = 3,
    seed: int = 0,
    max_steps: int | None = None,
) -> None:
    """Check that every component ``distribution_name`` contributes loads, is created with its defaults, and
    passes the check of its kind.

    Plugins are loaded afresh with only the built-in plugin and this distribution allowed, so other installed
    plugins cannot interfere. Envs go through :func:`check_instruction_env`, goal specs through
    :func:`check_goal_spec`, beta schedules through :func:`check_beta_schedule`; relabelers (created with
    ``num_goals`` from the env, and the env's declared goal spec) through :func:`check_relabeler` and experts
    through :func:`check_expert`, both on ``env``.

    :param distribution_name: the installed distribution (``pip`` name), e.g. ``"sb3-hir-example"``.
    :param env: env for relabelers and experts: instance, registered name or zero-argument factory; default a
        7x7 MazeRunner with 3 goals.
    """
    check = "check_plugin"
    if not isinstance(distribution_name, str) or not distribution_name.strip():
        raise ValueError(f"distribution_name must be a non-empty str, got {distribution_name!r}")
    try:
        importlib_metadata.distribution(distribution_name)
    except importlib_metadata.PackageNotFoundError:
        _fail(check, distribution_name, "no such distribution is installed (pip install it first)")
    wanted = _normalize(distribution_name)
    manager = plugins.PluginManager(environ={**os.environ, plugins.LOAD_ENV: distribution_name,
                                             plugins.STRICT_ENV: ""})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plugins.PluginWarning)
        infos = [info for info in manager.plugins() if info.distribution and _normalize(info.distribution) == wanted]
    if not infos:
        _fail(check, distribution_name, f"the distribution declares no entry point in the "
                                        f"{plugins.ENTRY_POINT_GROUP!r} group, so sb3-hir cannot find its components")
    for info in infos:
        if info.broken:
            _fail(check, f"{distribution_name} plugin {info.name!r}", f"failed to load: {info.error}")
    components = [(kind, name) for info in infos for kind, names in info.components.items() for name in names]
    if not components:
        _fail(check, distribution_name, "the plugin loads but registers no component")
    for kind, name in components:
        factory = manager.get(kind, name)
        label = f"{distribution_name} {kind} {name!r}"
        try:
            _check_component(kind, factory, env, n_episodes, seed, max_steps)
        except AssertionError as error:
            raise AssertionError(f"{check}: {label}: {error}") from None


def _normalize(name: str) -> str:
    return plugins.normalize_name(name)


def _create(factory: Callable[..., Any], **kwargs: Any) -> Any:
    try:
        return factory(**kwargs)
    except Exception as error:
        args = ", ".join(f"{key}={_show(value, 60)}" for key, value in kwargs.items())
        raise AssertionError(f"cannot be created with its defaults ({_name(factory)}({args})): "
                             f"{type(error).__name__}: {error}") from error


def _check_component(kind: str, factory: Callable[..., Any], env: Any, n_episodes: int, seed: int,
                     max_steps: int | None) -> None:
    if kind == "env":
        made = _create(factory)
        try:
            check_instruction_env(made, n_episodes=n_episodes, seed=seed, max_steps=max_steps)
        finally:
            made.close()
    elif kind == "goal_spec":
        check_goal_spec(_create(factory), seed=seed)
    elif kind == "beta_schedule":
        check_beta_schedule(_create(factory))
    else:
        owned = env is None or (not isinstance(env, str) and _is_factory(env, "step"))
        target = _default_env() if env is None else env() if owned else env
        target, created = _resolve_env(target)
        try:
            if kind == "relabeler":
                check_relabeler(factory, target, n_episodes=n_episodes, seed=seed, max_steps=max_steps)
            else:
                check_expert(factory, target, seed=seed)
        finally:
            if owned or created:
                target.close()


# ---------------------------------------------------------------------------------------------- pytest helpers
#: ``--sb3-hir-plugins`` of the pytest runs in progress (innermost last; pytester nests runs in one process).
#: The pytest plugin pushes and pops it; it lives here so that this module never imports the plugin.
_allow_lists: list[str | None] = []


def current_allow_list() -> str | None:
    """``--sb3-hir-plugins`` of the running pytest (None when unset or outside pytest)."""
    return _allow_lists[-1] if _allow_lists else None


def _allow_list(allowed: str | Iterable[str] | None) -> set[str] | None:
    if allowed is None:
        return None
    parts = allowed.split(",") if isinstance(allowed, str) else list(allowed)
    return {_normalize(part.strip()) for part in parts if part.strip()}


def component_names(kind: str, allowed: str | Iterable[str] | None = None) -> list[str]:
    """Names of every registered component of ``kind``, from a fresh plugin manager.

    For parametrizing your own tests over what is installed, restricted as the pytest option restricts them.

    :param allowed: restrict to components whose plugin (entry-point or distribution name) is listed, as
        ``--sb3-hir-plugins`` does; None means every installed plugin.
    """
    plugins.check_kind(kind)
    names = _allow_list(allowed)
    environ = dict(os.environ)
    if names is not None:
        environ[plugins.LOAD_ENV] = ",".join(sorted(names))
    manager = plugins.PluginManager(environ=environ)
    return [
        name for name, info in manager.available(kind).items()
        if names is None or _normalize(info.plugin) in names
        or (info.distribution is not None and _normalize(info.distribution) in names)
    ]


def parametrize_components(kind: str, argname: str | None = None,
                           allowed: str | Iterable[str] | None = None) -> pytest.MarkDecorator:
    """``pytest.mark.parametrize`` over every registered component of ``kind``: one test covers them all.

    So a plugin's test suite covers components added later without being edited.

    ::

        @parametrize_components("relabeler")
        def test_relabelers(relabeler_name):
            check_relabeler(relabeler_name, MazeRunnerEnv(maze_dim=7))

    :param argname: the test argument receiving the name; default ``f"{kind}_name"``.
    :param allowed: restrict to these plugins; default: the ``--sb3-hir-plugins`` option of the running pytest.
    """
    import pytest

    if allowed is None:
        allowed = current_allow_list()
    names = component_names(kind, allowed)
    return pytest.mark.parametrize(argname or f"{kind}_name", names, ids=names)
