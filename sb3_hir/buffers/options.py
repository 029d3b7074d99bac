"""The buffer's constructor arguments, checked once and turned into its decisions.

:class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer` takes SB3's arguments, HER's names for some of its
settings, and its own. :func:`resolve_options` checks those that decide the mode, the relabeling and the serving
once (``seed``, ``demo_ratio`` and the draw strategy are checked by the parts they configure) and makes the decisions
that follow from them and from the observation space: GoalEnv or instruction mode, the relabeler and its goal spec,
the instruction's length and goal shape. :func:`resolve_terminate_on_success` decides whether relabeled successes
terminate (GoalEnv mode); :func:`choose_draws` picks the draw strategy and
:func:`choose_serving` the serving, once: the buffer then runs them without asking again.
:func:`renamed_arguments` maps the arguments' 0.1 names (:data:`RENAMED_ARGUMENTS`) to today's.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces

from sb3_hir import resolvers
from sb3_hir._validate import ArgumentError, check_choice, check_int, check_number
from sb3_hir.buffers.draws import DrawStrategy
from sb3_hir.buffers.goal_env import (
    ACHIEVED_GOAL,
    DESIRED_GOAL,
    check_goal_env_space,
    env_goal_spec,
    goal_env_shape,
    goal_env_spec,
    is_goal_env_space,
    probe_compute_terminated,
    resolve_goal_step,
    resolve_relabel_ratio,
)
from sb3_hir.buffers.serving import EnvRewards, GoalEnvServing, NSteps, OneStep, Serving
from sb3_hir.goals import ExactGoalSpec, indexable_by_value
from sb3_hir.protocols import RelabelerProtocol
from sb3_hir.relabel import HindsightInstructionRelabeler, InstructionRelabeler, has_builtin_draw

__all__ = [
    "RENAMED_ARGUMENTS", "BufferOptions", "choose_draws", "choose_serving", "default_terminate_on_success",
    "draw_strategy_for", "renamed_arguments", "resolve_options", "resolve_terminate_on_success",
]

#: The buffer's arguments renamed in 0.2 (old name -> new name): the old names are deprecated aliases until 0.3.
RENAMED_ARGUMENTS = {
    "strategy": "hindsight_goals",
    "goal_selection": "goal_step",
    "draw_strategy": "draw",
    "draw_strategy_kwargs": "draw_kwargs",
}


def renamed_arguments(owner: str, renamed: dict[str, Any], **new_values: Any) -> dict[str, Any]:
    """``new_values`` (the renamed arguments under their new names) with the old names in ``renamed`` (the keywords
    the constructor of ``owner`` took beyond its own) mapped to them, each with a ``FutureWarning``: SB3 builds the
    buffer from ``replay_buffer_kwargs``, so a ``DeprecationWarning`` would point into SB3 and Python would hide it.

    Refused: an old name given with its new one (``ValueError``, naming both), and a keyword that is no old name
    (``TypeError``, as Python refuses an unexpected keyword)."""
    values = dict(new_values)
    for old, value in renamed.items():
        new = RENAMED_ARGUMENTS.get(old)
        if new is None or new not in values:
            raise TypeError(f"{owner}.__init__() got an unexpected keyword argument {old!r}")
        if values[new] is not None:
            raise ValueError(f"{old} is the deprecated name of {new}: give {new} only (got {old}={value!r} and "
                             f"{new}={values[new]!r})")
        warnings.warn(f"{owner}: the argument {old} is renamed {new}; {old} is deprecated and will be removed in "
                      "0.3", FutureWarning, stacklevel=3)
        values[new] = value
    return values


@dataclass(frozen=True)
class BufferOptions:
    """The constructor's arguments as the buffer uses them (see :class:`HindsightInstructionReplayBuffer`)."""

    #: GoalEnv mode: ``observation`` / ``achieved_goal`` / ``desired_goal`` taken as they come.
    goal_env: bool
    relabeler: RelabelerProtocol
    #: GoalEnv mode: whether a success test finds where a goal is first reached (not for float goals without a
    #: ``distance_threshold``); always True in instruction mode, where the goal spec is the test.
    has_success_test: bool
    num_goals: int
    goal_shape: tuple[int, ...]
    #: goals compared by exact equality of integer values: reach steps come from an index of the achieved values.
    exact_values: bool
    relabel_ratio: float
    #: the buffer's ``goal_step`` (kept under its 0.1 name, which pickled buffers hold).
    goal_selection: str
    n_steps: int
    gamma: float
    draws_per_episode: int
    max_redraws: int
    copy_info_dict: bool
    handle_timeout_termination: bool
    #: each observation stored once (``layout.CompactLayout``), from ``optimize_memory_usage`` or ``memory_layout``.
    compact: bool = False


#: ``memory_layout`` values: observations stored twice, as SB3 stores them, or once.
MEMORY_LAYOUTS = ("full", "compact")


def resolve_memory_layout(memory_layout: str | None, optimize_memory_usage: bool) -> bool:
    """Whether observations are stored once. ``memory_layout`` reaches the layout where the algorithm does not
    forward ``optimize_memory_usage`` (SBX's SAC, TQC, CrossQ and TD3 always pass False, and the name taken in
    ``replay_buffer_kwargs`` collides with theirs); None follows ``optimize_memory_usage``."""
    if memory_layout is None:
        return bool(optimize_memory_usage)
    check_choice(memory_layout, "memory_layout", MEMORY_LAYOUTS, hint="None: as optimize_memory_usage says")
    if optimize_memory_usage and memory_layout == "full":
        raise ValueError("memory_layout='full' contradicts optimize_memory_usage=True; give one of them")
    return memory_layout == "compact"


def resolve_options(
    observation_space: spaces.Dict,
    env: Any = None,
    owner: str = "HindsightInstructionReplayBuffer",
    drop_in: bool = False,
    *,
    buffer_size: int,
    n_envs: int = 1,
    optimize_memory_usage: bool = False,
    memory_layout: str | None = None,
    handle_timeout_termination: bool = True,
    n_sampled_goal: int | None = None,
    goal_selection_strategy: Any = None,
    copy_info_dict: bool = False,
    terminate_on_success: bool | None = False,
    relabeler: Any = "hindsight-instruction",
    hindsight_goals: str | None = None,
    goal_spec: Any = None,
    relabel_ratio: float | None = None,
    goal_step: str | None = None,
    n_steps: int = 1,
    gamma: float = 0.99,
    relabeler_kwargs: dict[str, Any] | None = None,
    draws_per_episode: int = 4,
    max_redraws: int = 8,
) -> BufferOptions:
    """Every argument checked once, and the mode with its relabeler; ``owner`` names the buffer class in messages,
    ``drop_in`` is whether it is the drop-in for SB3's ``HerReplayBuffer`` (which SB3 hands the env). The defaults
    are the buffer's, so a caller (the CLI) can check ``replay_buffer_kwargs`` without building a buffer."""
    ratio = resolve_relabel_ratio(relabel_ratio, n_sampled_goal)
    selection = resolve_goal_step(goal_step, goal_selection_strategy)
    check_number(gamma, "gamma", 0.0, 1.0)
    _check_flags(copy_info_dict, handle_timeout_termination, optimize_memory_usage, terminate_on_success)
    check_int(buffer_size, "buffer_size", 1)
    check_int(n_envs, "n_envs", 1)
    compact = resolve_memory_layout(memory_layout, optimize_memory_usage)
    counts = dict(
        n_steps=check_int(n_steps, "n_steps", 1),
        draws_per_episode=check_int(draws_per_episode, "draws_per_episode", 1),
        max_redraws=check_int(max_redraws, "max_redraws", 0),
    )
    _check_relabeler_kwargs(relabeler_kwargs)
    goal_env, resolved, has_test, num_goals, goal_shape = _resolve_mode(
        observation_space, env, owner, drop_in, relabeler, relabeler_kwargs, hindsight_goals, goal_spec, selection,
        terminate_on_success)
    return BufferOptions(
        goal_env=goal_env, relabeler=resolved, has_success_test=has_test, num_goals=num_goals, goal_shape=goal_shape,
        exact_values=indexable_by_value(resolved.goal_spec, observation_space), relabel_ratio=ratio,
        goal_selection=selection, gamma=float(gamma), copy_info_dict=bool(copy_info_dict),
        handle_timeout_termination=bool(handle_timeout_termination), compact=compact, **counts,
    )


def _check_flags(copy_info_dict: Any, handle_timeout_termination: Any, optimize_memory_usage: Any,
                 terminate_on_success: Any) -> None:
    """The boolean arguments are bools (numpy's included), ``terminate_on_success`` also None."""
    flags = {"copy_info_dict": copy_info_dict, "handle_timeout_termination": handle_timeout_termination,
             "optimize_memory_usage": optimize_memory_usage}
    for name, flag in flags.items():
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"{name} must be a bool; got {flag!r}")
    if terminate_on_success is not None and not isinstance(terminate_on_success, (bool, np.bool_)):
        raise ValueError(f"terminate_on_success must be True, False or None (decide from the env); got "
                         f"{terminate_on_success!r}")


def _resolve_mode(observation_space: spaces.Dict, env: Any, owner: str, drop_in: bool, relabeler: Any,
                  relabeler_kwargs: dict[str, Any] | None, hindsight_goals: str | None, goal_spec: Any,
                  selection: str, terminate_on_success: bool | None
                  ) -> tuple[bool, RelabelerProtocol, bool, int, tuple[int, ...]]:
    """GoalEnv or instruction mode, from the observation space: the relabeler, whether a success test finds first
    reaches, the instruction's length and goal shape."""
    if is_goal_env_space(observation_space, goal_spec):
        resolved, has_test, num_goals, goal_shape = _goal_env_mode(
            observation_space, env, owner, drop_in, relabeler, relabeler_kwargs, hindsight_goals, goal_spec
        )
        return True, resolved, has_test, num_goals, goal_shape
    check_goal_env_space(observation_space, goal_spec, relabeler, env, owner, drop_in=drop_in)
    resolved_relabeler, num_goals, goal_shape = _instruction_mode(
        observation_space, env, relabeler, relabeler_kwargs, hindsight_goals, goal_spec, selection,
        terminate_on_success,
    )
    return False, resolved_relabeler, True, num_goals, goal_shape


def _check_relabeler_kwargs(relabeler_kwargs: Any) -> None:
    if relabeler_kwargs is not None and not isinstance(relabeler_kwargs, dict):
        raise ValueError(
            f"relabeler_kwargs must be a dict or None; got {type(relabeler_kwargs).__name__}"
        )
    derived = sorted({"num_goals", "goal_spec"} & set(relabeler_kwargs or {}))
    if derived:
        raise ValueError(
            f"relabeler_kwargs must not set {', '.join(derived)}: the buffer derives num_goals from "
            "observation_space and passes its goal_spec argument (use goal_spec=...)"
        )


def _goal_env_mode(
    observation_space: spaces.Dict,
    env: Any,
    owner: str,
    drop_in: bool,
    relabeler: Any,
    relabeler_kwargs: dict[str, Any] | None,
    hindsight_goals: str | None,
    goal_spec: Any,
) -> tuple[InstructionRelabeler, bool, int, tuple[int, ...]]:
    """GoalEnv mode: HER's one-goal relabeler, judged by the env's success test where one can be derived."""
    if relabeler != "hindsight-instruction" or relabeler_kwargs:
        raise ValueError(
            "relabeler and relabeler_kwargs are for instruction envs; a GoalEnv (observation_space with "
            "'achieved_goal' and 'desired_goal') is relabeled by HER's rule (goal_selection_strategy)"
        )
    if hindsight_goals not in (None, "all"):
        raise ValueError(
            f"hindsight_goals must be None or 'all' for a GoalEnv (every relabeled transition gets a new goal, as "
            f"in HER); got {hindsight_goals!r}"
        )
    if env is None and not drop_in:
        raise ValueError(
            "observation_space is a GoalEnv's ('achieved_goal', 'desired_goal'), whose rewards come from the "
            "env's compute_reward: use sb3_hir.HerReplayBuffer, the drop-in for SB3's (SB3 hands it the "
            "env), "
            "or pass env= when building the buffer by hand"
        )
    goal_shape = goal_env_shape(observation_space)
    spec = goal_env_spec(goal_spec, observation_space, goal_shape, env)
    resolved = HindsightInstructionRelabeler(
        1, strategy="all", goal_spec=spec if spec is not None else ExactGoalSpec(
            goals_key=DESIRED_GOAL, achieved_key=ACHIEVED_GOAL, goal_ndim=len(goal_shape)
        )
    )
    return resolved, spec is not None, 1, goal_shape


def _instruction_mode(
    observation_space: spaces.Dict,
    env: Any,
    relabeler: Any,
    relabeler_kwargs: dict[str, Any] | None,
    hindsight_goals: str | None,
    goal_spec: Any,
    goal_step: str,
    terminate_on_success: bool | None,
) -> tuple[RelabelerProtocol, int, tuple[int, ...]]:
    """Instruction mode: the relabeler plugin, with the goal spec the env declares unless one is given."""
    if goal_spec is None:
        goal_spec = env_goal_spec(env)
    resolved = _named_relabeler(observation_space, relabeler, relabeler_kwargs, hindsight_goals, goal_spec)
    spec = resolved.goal_spec
    num_goals, goal_shape = spec.validate_space(observation_space)
    if int(resolved.num_goals) != num_goals:
        raise ValueError(
            f"relabeler has num_goals={resolved.num_goals} but observation_space"
            f"[{spec.goals_key!r}] holds {num_goals} goals"
        )
    if goal_step == "final" and num_goals > 1:
        raise ValueError(
            "goal_step 'final' is for one-goal instructions; with "
            f"{num_goals} goals use 'future' or 'episode'"
        )
    if terminate_on_success:
        raise ValueError(
            "terminate_on_success=True is for GoalEnvs; an instruction env terminates on its k-th goal, which "
            "the buffer serves as such"
        )
    return resolved, num_goals, goal_shape


def _named_relabeler(observation_space: spaces.Dict, relabeler: Any, relabeler_kwargs: dict[str, Any] | None,
                     hindsight_goals: str | None, goal_spec: Any) -> RelabelerProtocol:
    """The relabeler, a named (or class) one built with ``hindsight_goals`` as its ``strategy`` argument (unless
    ``relabeler_kwargs`` sets it); the relabeler's refusals of that argument name ``hindsight_goals``."""
    kwargs = dict(relabeler_kwargs or {})
    passed = hindsight_goals is not None and isinstance(relabeler, (str, type)) and "strategy" not in kwargs
    if passed:
        kwargs["strategy"] = hindsight_goals
    try:
        return resolvers.resolve_relabeler(relabeler, observation_space, goal_spec=goal_spec, **kwargs)
    except ArgumentError as exc:
        if passed and exc.argument == "strategy":
            raise ArgumentError("hindsight_goals", f"(the relabeler's strategy) {exc.detail}") from exc
        raise
    except TypeError as exc:
        if passed and "'strategy'" in str(exc):
            name = repr(relabeler) if isinstance(relabeler, str) else relabeler.__name__
            raise TypeError(f"hindsight_goals={hindsight_goals!r} is passed to the relabeler as its strategy, which "
                            f"relabeler {name} does not take ({exc})") from exc
        raise


def default_terminate_on_success(action_space: spaces.Space, env: Any, observation_space: spaces.Dict) -> bool | None:
    """``terminate_on_success=None`` (decide from the env) in GoalEnv mode: False for continuous actions, else the env's
    ``compute_terminated`` probe (None without one: the recorded episodes decide, see ``terminates_on_success``)."""
    if isinstance(action_space, spaces.Box):
        # Continuous actions: SAC / TQC. Their entropy bonus (ent_coef="auto" starts at 1) outweighs a -1
        # step reward early in training, so a terminal success is worth less than going on and the agent
        # learns to avoid its goals (PandaReach at 5k: 0.02 against HER's 0.70; bench_her_dropin.py).
        # HER's recorded dones keep parity; True serves the env's terminations (better once the entropy
        # bonus is small: PlanarReach with ent_coef="auto_0.05", 0.99 against 0.57 at 2k).
        return False
    return probe_compute_terminated(env, observation_space)


def resolve_terminate_on_success(
    terminate_on_success: bool | None,
    options: BufferOptions,
    action_space: spaces.Space,
    env: Any,
    observation_space: spaces.Dict,
) -> bool | None:
    """The ``terminate_on_success`` the buffer serves: as given, else decided from the action space and the env;
    False (HER's recorded dones, with a warning where the env may terminate) without a success test."""
    if not options.goal_env:
        return terminate_on_success
    if terminate_on_success is None:
        terminate_on_success = default_terminate_on_success(action_space, env, observation_space)
    if options.has_success_test:
        return terminate_on_success
    if terminate_on_success is not False:
        known = "terminates on success" if terminate_on_success else "may terminate on success"
        warnings.warn(
            f"the env {known}, but its goals are floats and it has no distance_threshold, so the buffer "
            "cannot find where a relabeled goal is first reached: the recorded dones are served, as by HER. "
            "Pass goal_spec=ToleranceGoalSpec(tolerance=<the env's success radius>, "
            "goals_key='desired_goal', achieved_key='achieved_goal') to serve relabeled terminations",
            stacklevel=3,
        )
    return False


def choose_draws(options: BufferOptions) -> tuple[str, dict[str, Any]]:
    """The built-in draw strategy for these options, as a registered name and its arguments (the buffer resolves it
    as it resolves a plugin's): the first-reach index or HER's draw for one-goal instructions of the built-in
    relabeler, else the exact-value index or the window comparison for relabelers with a batched
    ``draw_goal_steps``, else draws stored when an episode ends."""
    relabeler = options.relabeler
    if not callable(getattr(relabeler, "draw_goal_steps", None)):
        return "stored", dict(draws_per_episode=options.draws_per_episode)
    builtin = has_builtin_draw(relabeler)
    levels = options.relabeler.goal_spec.description_levels is not None
    if builtin and options.num_goals == 1 and not (levels and not options.goal_env):
        if options.goal_env:  # GoalEnvs draw as HER does: no first-reach index
            return "her", {}
        return "first-reach", dict(exact_values=options.exact_values)
    if options.exact_values:
        return "exact-index", dict(builtin=builtin)
    return "window", dict(builtin=builtin)


def choose_serving(options: BufferOptions, device: th.device, env_rewards: EnvRewards, owner: str) -> Serving:
    """How rows are served, chosen once: by the goal spec (instruction mode) or by the env's ``compute_reward``
    (``env_rewards``: the buffer), over 1-step or n-step windows."""
    windows = NSteps(options.n_steps, options.gamma) if options.n_steps > 1 else OneStep()
    if options.goal_env:
        return GoalEnvServing(options.relabeler.goal_spec, windows, device, env_rewards, owner)
    return Serving(options.relabeler.goal_spec, options.num_goals, options.goal_shape, windows, device)


def draw_strategy_for(options: BufferOptions, draw: Any = None, draw_kwargs: dict[str, Any] | None = None
                      ) -> DrawStrategy:
    """The draw strategy: the one asked for (the buffer's ``draw`` and ``draw_kwargs``), else the built-in one for
    these options (:func:`choose_draws`), resolved by name as a plugin's is."""
    if draw is None:
        if draw_kwargs:
            raise ValueError("draw_kwargs needs draw (a name or a DrawStrategy class); got draw=None with "
                             f"{sorted(draw_kwargs)}")
        name, kwargs = choose_draws(options)
        chosen: Any = resolvers.resolve_draw_strategy(name, **kwargs)
    else:
        chosen = resolvers.resolve_draw_strategy(draw, argument="draw", kwargs=draw_kwargs)
    return chosen
