"""GoalEnv mode's arguments: what the buffer derives from HER's names and from the env it is handed.

Kept apart from the buffer's storage and sampling: each function turns HER's constructor arguments or the env's
attributes (``distance_threshold``, ``compute_terminated``, a declared ``goal_spec``) into one setting of the core.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.preprocessing import get_obs_shape
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper
from stable_baselines3.her.goal_selection_strategy import KEY_TO_GOAL_STRATEGY, GoalSelectionStrategy

from sb3_hir import resolvers
from sb3_hir._validate import check_choice, check_int, check_number
from sb3_hir.buffers.reward_checks import env_class_name
from sb3_hir.contract import ENV_GOAL_SPEC
from sb3_hir.goals import ExactGoalSpec, GoalSpec, ToleranceGoalSpec
from sb3_hir.protocols import GoalSpecProtocol
from sb3_hir.relabel import GOAL_SELECTIONS

__all__ = [
    "ACHIEVED_GOAL",
    "DESIRED_GOAL",
    "check_goal_env_space",
    "env_distance_threshold",
    "env_goal_spec",
    "goal_env_shape",
    "goal_env_spec",
    "is_goal_env_space",
    "probe_compute_terminated",
    "resolve_goal_step",
    "resolve_relabel_ratio",
]


#: GoalEnv observation keys (gymnasium-robotics' and SB3's HER convention).
DESIRED_GOAL = "desired_goal"
ACHIEVED_GOAL = "achieved_goal"


def resolve_relabel_ratio(relabel_ratio: Any, n_sampled_goal: Any) -> float:
    """``relabel_ratio`` from it or from HER's ``n_sampled_goal``; both must agree when both are given."""
    if relabel_ratio is not None:
        check_number(relabel_ratio, "relabel_ratio", 0.0, 1.0)
    if n_sampled_goal is None:
        return 0.8 if relabel_ratio is None else float(relabel_ratio)
    n = check_int(n_sampled_goal, "n_sampled_goal", 0)
    ratio = n / (n + 1)
    if relabel_ratio is not None and not np.isclose(float(relabel_ratio), ratio):
        raise ValueError(
            f"relabel_ratio={relabel_ratio!r} and n_sampled_goal={n_sampled_goal!r} disagree: n_sampled_goal={n} "
            f"means relabel_ratio={ratio:.4g}; give one of them"
        )
    return ratio


def resolve_goal_step(goal_step: Any, strategy: Any) -> str:
    """``goal_step`` from it or from HER's ``goal_selection_strategy`` (a string or SB3's enum)."""
    if goal_step is not None:
        check_choice(goal_step, "goal_step", [*GOAL_SELECTIONS, "final"])
    if strategy is None:
        return "future" if goal_step is None else goal_step
    if isinstance(strategy, GoalSelectionStrategy):
        name = {value: key for key, value in KEY_TO_GOAL_STRATEGY.items()}[strategy]
    else:  # names in any case, as SB3's HerReplayBuffer takes them
        name = check_choice(strategy.lower() if isinstance(strategy, str) else strategy, "goal_selection_strategy",
                            KEY_TO_GOAL_STRATEGY, hint="or a GoalSelectionStrategy; case is ignored")
    if goal_step is not None and goal_step != name:
        raise ValueError(
            f"goal_step={goal_step!r} and goal_selection_strategy={strategy!r} disagree; give one of them"
        )
    return name


def is_goal_env_space(observation_space: spaces.Space, goal_spec: Any) -> bool:
    """Whether the space is a GoalEnv's (and no goal spec names instruction keys in it)."""
    if not isinstance(observation_space, spaces.Dict):
        return False
    keys = observation_space.spaces
    if isinstance(goal_spec, GoalSpec) and goal_spec.goals_key in keys and goal_spec.goals_key != DESIRED_GOAL:
        return False
    return DESIRED_GOAL in keys and ACHIEVED_GOAL in keys


def check_goal_env_space(
    observation_space: spaces.Space, goal_spec: Any, relabeler: Any, env: Any, owner: str, drop_in: bool
) -> None:
    """Refuse in GoalEnv terms a space that is not a GoalEnv's where one was meant (GoalEnv mode is off).

    Instruction mode would otherwise ask for its own keys (``goals``, ``achieved``), which a HER user never heard of.
    Meant: the drop-in (``drop_in``), unless the space is an instruction env's, or any space with exactly one of
    ``achieved_goal`` / ``desired_goal`` (a partial GoalEnv).
    """
    is_dict = isinstance(observation_space, spaces.Dict)
    if not drop_in and not is_dict:
        return  # the instruction buffer keeps its own message
    keys = list(observation_space.spaces) if isinstance(observation_space, spaces.Dict) else []
    instruction = _instruction_keys(goal_spec, relabeler, env)
    if is_dict and (instruction is None or all(key in keys for key in instruction)):
        return  # an instruction env's, or a goal spec that does not resolve: instruction mode says which
    missing = [key for key in (ACHIEVED_GOAL, DESIRED_GOAL) if key not in keys]
    if not drop_in and len(missing) != 1:
        return
    if is_dict:
        got = f"a Dict with keys {sorted(keys)}, missing {' and '.join(repr(key) for key in missing)}"
    else:
        got = repr(observation_space)
    if env is not None:
        got += f" (the env: {env_class_name(env)})"
    alternative = "" if instruction is None else (
        f" (or an instruction env's, with the goal spec's keys {instruction[0]!r} and {instruction[1]!r})"
    )
    raise ValueError(
        f"observation_space must be a GoalEnv's for {owner}: a gymnasium.spaces.Dict with keys 'observation', "
        f"'{ACHIEVED_GOAL}' and '{DESIRED_GOAL}'{alternative}; got {got}"
    )


def _instruction_keys(goal_spec: Any, relabeler: Any, env: Any) -> tuple[str, str] | None:
    """The goals and achieved keys instruction mode would ask for; None when its goal spec does not resolve."""
    spec = None if isinstance(relabeler, (str, type)) else getattr(relabeler, "goal_spec", None)
    if spec is None:
        try:
            spec = resolvers.resolve_goal_spec(goal_spec if goal_spec is not None else env_goal_spec(env))
        except Exception:  # instruction mode reports a goal spec that does not resolve, in its own words
            return None
    goals_key, achieved_key = getattr(spec, "goals_key", None), getattr(spec, "achieved_key", None)
    if not isinstance(goals_key, str) or not isinstance(achieved_key, str):
        return None
    return goals_key, achieved_key


def goal_env_shape(observation_space: spaces.Dict) -> tuple[int, ...]:
    """Shape of one goal as the buffer stores it (SB3's ``get_obs_shape``: ``(1,)`` for a Discrete goal)."""
    desired = get_obs_shape(observation_space[DESIRED_GOAL])
    achieved = get_obs_shape(observation_space[ACHIEVED_GOAL])
    if tuple(desired) != tuple(achieved):
        raise ValueError(
            f"observation_space['{ACHIEVED_GOAL}'] and ['{DESIRED_GOAL}'] must have the same shape (HER compares "
            f"them); got {achieved} and {desired}"
        )
    return tuple(int(d) for d in desired)


def goal_env_spec(
    goal_spec: str | GoalSpec | None, observation_space: spaces.Dict, goal_shape: tuple[int, ...], env: Any
) -> GoalSpecProtocol | None:
    """The success test that finds a goal's first reach in GoalEnv mode, or None when none can be derived."""
    goal_ndim = len(goal_shape)
    if isinstance(goal_spec, GoalSpec):
        if (goal_spec.goals_key, goal_spec.achieved_key, goal_spec.goal_ndim) != (DESIRED_GOAL, ACHIEVED_GOAL,
                                                                                  goal_ndim):
            raise ValueError(
                f"goal_spec for a GoalEnv must judge '{ACHIEVED_GOAL}' against '{DESIRED_GOAL}' with goal_ndim="
                f"{len(goal_shape)}; got {goal_spec!r}"
            )
        return goal_spec
    if goal_spec is not None:
        return resolvers.resolve_goal_spec(goal_spec, goals_key=DESIRED_GOAL, achieved_key=ACHIEVED_GOAL,
                                           goal_ndim=goal_ndim)
    dtype = np.dtype(observation_space[DESIRED_GOAL].dtype)
    if dtype.kind in "biu":
        return ExactGoalSpec(goals_key=DESIRED_GOAL, achieved_key=ACHIEVED_GOAL, goal_ndim=goal_ndim)
    threshold = env_distance_threshold(env)
    return None if threshold is None else ToleranceGoalSpec(tolerance=threshold, goals_key=DESIRED_GOAL,
                                                            achieved_key=ACHIEVED_GOAL, goal_ndim=goal_ndim)


def env_distance_threshold(env: Any) -> float | None:
    """The env's success radius: ``distance_threshold`` on the env (gymnasium-robotics) or on its ``task``.

    panda-gym keeps the radius on ``env.task`` (``RobotTaskEnv``); without it, float goals would fall back to HER's
    recorded dones although the env terminates on success. The task is read in-process only (``DummyVecEnv``, under
    any VecEnv wrappers): a ``SubprocVecEnv`` would have to pickle it, simulator included.
    """
    if env is None:
        return None
    threshold = None
    if env.has_attr("distance_threshold"):
        threshold = env.get_attr("distance_threshold", indices=[0])[0]
    else:
        inner = env
        while isinstance(inner, VecEnvWrapper):
            inner = inner.venv
        if isinstance(inner, DummyVecEnv):
            task = getattr(inner.envs[0].unwrapped, "task", None)
            threshold = getattr(task, "distance_threshold", None)
    if isinstance(threshold, (int, float, np.number)) and not isinstance(threshold, bool) and threshold > 0:
        return float(threshold)
    return None


def env_goal_spec(env: Any) -> str | GoalSpec:
    """The goal spec the env declares (``env.goal_spec``: its rewards, mask and success test), else ``"exact"``.

    Read through the VecEnv SB3 hands over, so that an env with a per-step reward (``step_reward``) is relabeled
    with it without the user repeating it in ``replay_buffer_kwargs``.
    """
    if env is not None and env.has_attr(ENV_GOAL_SPEC):
        spec = env.get_attr(ENV_GOAL_SPEC, indices=[0])[0]
        if isinstance(spec, (str, GoalSpec)):
            return spec
    return "exact"


def probe_compute_terminated(env: Any, observation_space: spaces.Dict) -> bool | None:
    """Whether the env ends an episode on success: its ``compute_terminated`` at a goal reached exactly.

    gymnasium-robotics' GoalEnvs define it (Fetch: never; PointMaze/AntMaze: unless ``continuing_task``); None
    when the env has none (then the recorded episodes decide).
    """
    if env is None or not env.has_attr("compute_terminated"):
        return None
    goal = observation_space[DESIRED_GOAL].sample()
    return bool(np.asarray(env.env_method("compute_terminated", goal, goal, {}, indices=[0])[0]).all())
