"""``check_instruction_env``: an env keeps the contract relabeling relies on, checked by replaying its episodes.

A relabeler that does not reproduce an env's reward and termination teaches the agent a different task, and
nothing crashes when it does: this check replays random-policy episodes under their own and under hindsight
instructions and reports the first step where the env and the relabeler's ``replay`` disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from sb3_hir._validate import check_int
from sb3_hir.contract import (
    ACCEPTS_RESET_GOALS,
    RESET_GOALS_OPTION,
    TERMINATIONS_UNRELATED_TO_GOALS,
    declared,
)
from sb3_hir.goals import instruction_complete, padding_mask
from sb3_hir.testing.registry import PluginCheckOptions, register_check
from sb3_hir.testing.replay import (
    check_num_goals,
    env_num_goals,
    replay_context,
    replay_mismatch,
    resolve_relabeler_for,
)
from sb3_hir.testing.rollout import (
    Rollout,
    check_count,
    check_step_cap,
    checked_env,
    create,
    describe,
    fail,
    fail_at,
    first_rollout_difference,
    random_rollout,
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

__all__ = ["check_instruction_env"]

_CHECK = "check_instruction_env"


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
       ``terminations_unrelated_to_goals = True``. This heuristic only sees goals the random policy reaches;
    7. with a goal spec that declares ``nothing_value`` (event goals: a step may achieve nothing), no instruction
       ever holds that value as a goal, since no step can reach it; every other achieved value lies inside the goals'
       space, since the buffer draws hindsight goals from achieved values (a value outside it usually marks a step
       that achieved nothing, and the goal spec must declare it as ``nothing_value``);
    8. with a goal spec that declares ``pad_value`` or ``groups_key`` (instructions of varying length, goals of a
       group in any order): padding only after the last real goal and never all of it, and the groups constant
       over the episode, counting up from 0 in steps of at most 1 over the real goals.

    :param env: the env, or a registered ``"env"`` name (created with its defaults).
    :param relabeler: whose ``replay`` must reproduce the env (instance or registered name); by default a
        ``"none"`` hindsight-instruction relabeler on the env's goal spec (the ``goal_spec`` attribute of the env
        or of a wrapper around it, if any, else ``"exact"``).
    :param n_episodes: random-policy episodes to run (>= 1).
    :param seed: seed of episode 0.
    :param max_steps: cut each episode after this many steps (default: when the env ends it, at most
        :data:`~sb3_hir.testing.DEFAULT_STEP_CAP`).
    :param counterfactual: hindsight instructions replayed against the env per episode (0: only the reversed one).
    :raises AssertionError: naming the seed, the step and the values of the first violation.
    """
    n_episodes = check_count(n_episodes, "n_episodes")
    max_steps = check_step_cap(max_steps)
    counterfactual = check_int(counterfactual, "counterfactual", minimum=0)
    with checked_env(env) as env:
        relabeler = resolve_relabeler_for(_CHECK, relabeler, env)
        num_goals = env_num_goals(_CHECK, env, relabeler.goal_spec)
        check_num_goals(_CHECK, relabeler, num_goals)
        rollouts = random_rollouts(env, n_episodes, seed, max_steps, _CHECK)
        _check_rollouts(env, relabeler, rollouts, num_goals, seed, max_steps, counterfactual)


def _check_rollouts(env: gym.Env, relabeler: Any, rollouts: list[Rollout], num_goals: int, seed: int,
                    max_steps: int | None, counterfactual: int) -> None:
    """:func:`check_instruction_env`'s items over its random-policy rollouts: each episode alone (items 1-3, 7, 8),
    then seeding (item 4), then the replays under other instructions the env's declarations allow (item 5, else
    item 6)."""
    spec = relabeler.goal_spec
    for rollout in rollouts:
        episode = rollout.episode()
        _check_own_replay(relabeler, rollout, episode)
        _check_success(rollout, episode, spec, num_goals)
        _check_no_nothing_goal(rollout, episode, spec)
        _check_achieved_in_goal_space(env, rollout, episode, spec)
        _check_instruction_form(rollout, episode, spec)
    _check_seeding(env, rollouts[0], seed, max_steps)
    if declared(env, ACCEPTS_RESET_GOALS, False):
        for rollout in rollouts:
            _check_counterfactuals(env, relabeler, rollout, counterfactual)
    elif not declared(env, TERMINATIONS_UNRELATED_TO_GOALS, False):
        for rollout in rollouts:
            _check_goal_terminations(rollout, rollout.episode(), spec, num_goals)


@register_check("env")
def _check_env_component(factory: Callable[..., Any], options: PluginCheckOptions) -> None:
    """A plugin's env, created with its defaults, keeps the instruction-env contract."""
    made = create(factory)
    try:
        check_instruction_env(made, n_episodes=options.n_episodes, seed=options.seed, max_steps=options.max_steps)
    finally:
        made.close()


def _check_own_replay(relabeler: Any, rollout: Rollout, episode: Episode) -> None:
    """Replay under the episode's own goals must give the env's episode back (item 2)."""
    fail_at(_CHECK, replay_mismatch(relabeler, rollout, episode), rollout.where,
            lambda step, detail: (
                f"{detail} {replay_context(episode, relabeler.goal_spec, step)}. {describe(relabeler)}.replay under "
                f"the episode's own goals must reproduce the env exactly, or relabeled data teaches a different task."))


def _real_goals(episode: Episode, spec: GoalSpec, num_goals: int) -> int:
    """How many goals the episode's instruction holds (``num_goals`` less its padding)."""
    return num_goals - int(padding_mask(spec, episode.observations[spec.goals_key][0]).sum())


def _check_success(rollout: Rollout, episode: Episode, spec: GoalSpec, num_goals: int) -> None:
    """``is_success`` (and ``goals_reached``) must agree with the goals the observation shows as reached."""
    counts = spec.is_masked(episode.observations[spec.goals_key]).sum(axis=-1)
    num_goals = _real_goals(episode, spec, num_goals)
    for step, info in enumerate(rollout.infos, start=1):
        place = where(rollout.index, rollout.seed, step)
        flag, success = bool(info["is_success"]), bool(counts[step] == num_goals)
        if flag != success:
            fail(_CHECK, place, f"info['is_success'] = {show(info['is_success'])} but {int(counts[step])} of "
                                f"{num_goals} goals are reached (observation[{spec.goals_key!r}] = "
                                f"{show(episode.observations[spec.goals_key][step])}); is_success must be True "
                                f"exactly when all goals are reached")
        if "goals_reached" in info and info["goals_reached"] != counts[step]:
            fail(_CHECK, place, f"info['goals_reached'] = {show(info['goals_reached'])} but the observation shows "
                                f"{int(counts[step])} goals reached (masked): "
                                f"{show(episode.observations[spec.goals_key][step])}")


def _check_no_nothing_goal(rollout: Rollout, episode: Episode, spec: GoalSpec) -> None:
    """An instruction never asks for the spec's ``nothing_value``: no step can reach it."""
    if spec.nothing_value is None:
        return
    bad = np.argwhere(spec.is_nothing(episode.observations[spec.goals_key]))
    if len(bad):
        step, slot = (int(i) for i in bad[0])
        fail(_CHECK, where(rollout.index, rollout.seed, step),
             f"goal {slot} of observation[{spec.goals_key!r}] is the goal spec's nothing_value "
             f"({spec.nothing_value!r}), which no step can reach: "
             f"{show(episode.observations[spec.goals_key][step])}")


def _check_achieved_in_goal_space(env: gym.Env, rollout: Rollout, episode: Episode, spec: GoalSpec) -> None:
    """An achieved value a hindsight goal may be drawn from lies inside the goals' Box (item 7)."""
    from gymnasium import spaces  # deferred: keeps ``import sb3_hir.testing`` cheap

    observation_space = env.observation_space
    space = observation_space[spec.goals_key] if isinstance(observation_space, spaces.Dict) else None
    if not isinstance(space, spaces.Box):
        return
    goal_shape = space.shape[1:]
    achieved = spec.achieved_values(episode.observations[spec.achieved_key], goal_shape)
    low, high = space.low.min(axis=0), space.high.max(axis=0)
    outside = ((achieved < low) | (achieved > high)).reshape(len(achieved), -1).any(axis=1)
    if spec.nothing_value is not None:  # a protocol-only spec declares no nothing value
        outside &= ~spec.is_nothing(achieved)
    if outside.any():
        step = int(np.argmax(outside))
        value = np.asarray(achieved[step])
        fail(_CHECK, where(rollout.index, rollout.seed, step),
             f"observation[{spec.achieved_key!r}] = {show(value)} lies outside observation_space[{spec.goals_key!r}] "
             f"= Box({show(space.low.min())}, {show(space.high.max())}), so a hindsight goal drawn from it is one no "
             "instruction can hold. If it marks a step that achieved nothing, declare it in the goal spec: "
             f"{type(spec).__name__}(nothing_value={show(value.ravel()[0].item())}, ...); else widen the goals' space")


def _check_instruction_form(rollout: Rollout, episode: Episode, spec: GoalSpec) -> None:
    """Padding only at the end, and groups constant and counting up over the real goals (item 8)."""
    goals = episode.observations[spec.goals_key]
    pads = padding_mask(spec, goals[0])
    if pads.all() or (pads.any() and not pads[int(pads.argmax()):].all()):
        fail(_CHECK, where(rollout.index, rollout.seed, 0),
             f"observation[{spec.goals_key!r}] = {show(goals[0])}: padding (pad_value={spec.pad_value!r}) must follow "
             "the last real goal, and an instruction must hold at least one goal")
    key = spec.groups_key
    if key is None:
        return
    groups = np.asarray(episode.observations[key])
    changed = np.flatnonzero((groups != groups[0]).any(axis=tuple(range(1, groups.ndim))))
    if len(changed):
        fail(_CHECK, where(rollout.index, rollout.seed, int(changed[0])),
             f"observation[{key!r}] (groups_key) changed during the episode, from {show(groups[0])} to "
             f"{show(groups[changed[0]])}: an instruction's groups are fixed at reset")
    real = groups[0][~pads].astype(np.int64)
    if real[0] != 0 or np.any(np.diff(real) < 0) or np.any(np.diff(real) > 1):
        fail(_CHECK, where(rollout.index, rollout.seed, 0),
             f"observation[{key!r}] (groups_key) = {show(groups[0])}: the real goals' groups must count up from 0 "
             "in steps of 0 or 1 (goals of one group are adjacent)")


def _check_seeding(env: gym.Env, first: Rollout, seed: int, max_steps: int | None) -> None:
    """Episode 0 replays identically, and another seed changes the env's generator (item 4)."""
    again = random_rollout(env, first.index, first.seed, max_steps, _CHECK)
    fail_at(_CHECK, first_rollout_difference(first, again), first.where,
            lambda _, detail: (
                f"not reproducible: re-running it with reset(seed={first.seed}) and action_space.seed({first.seed}) "
                f"gave {detail}. The env must draw all randomness from self.np_random, seeded by reset(seed=...)."))
    unwrapped = getattr(env, "unwrapped", env)
    env.reset(seed=seed)
    state = _rng_state(unwrapped)
    env.reset(seed=seed + 1)
    if state is not None and state == _rng_state(unwrapped):
        fail(_CHECK, f"reset(seed={seed}) and reset(seed={seed + 1})",
             "env.unwrapped.np_random has the same state after both: reset ignores its seed (call "
             "super().reset(seed=seed) first in reset)")


def _rng_state(env: Any) -> Any:
    rng = getattr(env, "_np_random", None)
    return None if rng is None else rng.bit_generator.state


def _check_goal_terminations(rollout: Rollout, episode: Episode, spec: GoalSpec, k: int) -> None:
    """Flag a termination on a step that reaches goal j < k (see :func:`check_instruction_env`, item 6)."""
    counts = spec.is_masked(episode.observations[spec.goals_key]).sum(axis=-1)
    k = _real_goals(episode, spec, k)
    for step in range(1, len(episode) + 1):
        if episode.terminated[step - 1] and counts[step] > counts[step - 1] and counts[step] < k:
            fail(_CHECK, where(rollout.index, rollout.seed, step),
                 f"the env terminated on the step that reached goal {int(counts[step])} of {k}. Replay keeps a "
                 "termination the goals did not complete under every instruction, as a fall; if this one was "
                 "caused by the goal, relabeled episodes would end at the wrong step. Let the env take an "
                 f"instruction at reset ({ACCEPTS_RESET_GOALS} = True) so the check can replay it, or, if its "
                 f"terminations never depend on the goals, set {TERMINATIONS_UNRELATED_TO_GOALS} = True.")


# ---------------------------------------------------------------------------------------------- counterfactual replay
def _counterfactual_instructions(relabeler: Any, episode: Episode, rng: np.random.Generator,
                                 count: int) -> list[np.ndarray]:
    """Hindsight instructions to replay ``episode`` under: the relabeler's draws, then achieved values in reverse
    order of visit (which catches envs that ignore the goal order or pay for goals other than the active one)."""
    from sb3_hir.relabel import HindsightInstructionRelabeler  # deferred: keeps ``import sb3_hir.testing`` cheap

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
    own = episode.instruction(spec.goals_key)
    real = int((~padding_mask(spec, own)).sum())
    # Steps that achieved something: an instruction never holds the nothing value (no step can reach it).
    nothing = spec.nothing_value
    goal_steps = np.arange(1, len(achieved))
    if nothing is not None:
        goal_steps = goal_steps[~spec.is_nothing(achieved[1:])]
    if len(goal_steps) >= real:
        steps = np.sort(rng.choice(goal_steps, size=real, replace=False))[::-1]
        reverse = own.copy()  # padding stays: the instruction keeps its length
        reverse[:real] = achieved[steps].astype(own.dtype).reshape(reverse[:real].shape)
        instructions.append(reverse)
    return instructions


def _check_counterfactuals(env: gym.Env, relabeler: Any, rollout: Rollout, count: int) -> None:
    """Play the rollout's actions from its seed under hindsight instructions; the env must match ``replay``."""
    episode = rollout.episode()
    rng = np.random.default_rng([rollout.seed, 0x5EED])
    _, achieved = relabeler._episode_goal_arrays(episode)
    for goals in _counterfactual_instructions(relabeler, episode, rng, count):
        _Counterfactual(relabeler, rollout, goals, relabeler.replay(episode, goals), achieved).run(env)


_GOAL_FREE = ("replay keeps every key but the instruction as recorded, so this key must not depend on the instruction "
              "(a history window must hold no goals or rewards)")


@dataclass
class _Counterfactual:
    """One rollout replayed against the env under one hindsight instruction (item 5), step by step."""

    relabeler: Any
    rollout: Rollout
    goals: np.ndarray
    replayed: Episode
    achieved: np.ndarray

    def fail(self, step: int, detail: str, goals_before: Any = None) -> NoReturn:
        shown = "" if goals_before is None else f" (goals observed before the step: {show(goals_before)})"
        under = f"under the instruction {show(self.goals)} (reset(seed={self.rollout.seed}, options={{'goals': ...}}))"
        fail(_CHECK, where(self.rollout.index, self.rollout.seed, step),
             f"{under}: {detail}{shown}. {describe(self.relabeler)}.replay under this instruction disagrees with "
             "the env, so relabeled data would teach a task the env does not pose.")

    def run(self, env: gym.Env) -> None:
        spec, replayed = self.relabeler.goal_spec, self.replayed
        obs, _ = env.reset(seed=self.rollout.seed, options={RESET_GOALS_OPTION: self.goals})
        other_keys = [key for key in replayed.observations if key != spec.goals_key and key in obs]
        self._check_reset(obs, other_keys)
        for step in range(1, len(replayed) + 1):
            self._check_step(step, env.step(self.rollout.actions[step - 1]), other_keys)

    def _check_reset(self, obs: dict[str, Any], other_keys: list[str]) -> None:
        spec, replayed = self.relabeler.goal_spec, self.replayed
        for key in other_keys:
            if not np.array_equal(obs[key], replayed.observations[key][0]):
                self.fail(0, f"observation[{key!r}] = {show(obs[key])} after reset != the recorded "
                             f"{show(replayed.observations[key][0])}: {_GOAL_FREE}")
        expected = replayed.observations[spec.goals_key][0]
        if not np.array_equal(obs[spec.goals_key], expected):
            self.fail(0, f"observation[{spec.goals_key!r}] = {show(obs[spec.goals_key])} after reset, expected the "
                         f"instruction {show(expected)}: the env (or a wrapper) ignored options['goals']")

    def _check_step(self, step: int, transition: tuple[Any, ...], other_keys: list[str]) -> None:
        obs, reward, terminated, truncated, info = transition
        spec, replayed, achieved = self.relabeler.goal_spec, self.replayed, self.achieved
        expected_goals = replayed.observations[spec.goals_key]
        now = spec.achieved_values(np.asarray(obs[spec.achieved_key])[None], achieved.shape[1:])[0]
        if not np.array_equal(now, achieved[step]):
            self.fail(step, f"achieved {show(now)}, but {show(achieved[step])} with the episode's own instruction: "
                            "the dynamics depend on the instruction")
        before = expected_goals[step - 1]
        if float(reward) != float(replayed.rewards[step - 1]):
            self.fail(step, f"env reward {show(float(reward))} != replayed reward "
                            f"{show(float(replayed.rewards[step - 1]))}", before)
        if bool(terminated) != bool(replayed.terminated[step - 1]):
            self.fail(step, f"env terminated={bool(terminated)} != replayed "
                            f"terminated={bool(replayed.terminated[step - 1])}", before)
        if not np.array_equal(obs[spec.goals_key], expected_goals[step]):
            self.fail(step, f"env observation[{spec.goals_key!r}] = {show(obs[spec.goals_key])} != replayed "
                            f"{show(expected_goals[step])}", before)
        for key in other_keys:
            if not np.array_equal(obs[key], replayed.observations[key][step]):
                self.fail(step, f"env observation[{key!r}] = {show(obs[key])} != the recorded "
                                f"{show(replayed.observations[key][step])}: {_GOAL_FREE}", before)
        success = bool(instruction_complete(spec, expected_goals[step]))
        if bool(info.get("is_success", False)) != success:
            self.fail(step, f"info['is_success'] = {show(info.get('is_success'))}, replayed {success}", before)
        if (terminated or truncated) and step < len(replayed):
            self.fail(step, f"the env ended the episode (terminated={bool(terminated)}, truncated={bool(truncated)}) "
                            f"where the replay goes on for {len(replayed) - step} more steps", before)
