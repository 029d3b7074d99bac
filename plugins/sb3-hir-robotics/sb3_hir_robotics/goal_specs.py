"""Goal spec ``"distance-threshold"``: a tolerance goal spec whose tolerance is the env's own success radius.

Relabeling recomputes which goals an episode reached, so the goal spec must agree with the env's success test:
gymnasium-robotics' Fetch and Hand envs test ``distance <= env.distance_threshold``, the mazes
``distance <= 0.45``. Given the env, this spec reads that threshold, and from an
:class:`~sb3_hir.instruction.InstructionWrapper` in the env's wrapper chain the mask value and goal reward, so the
buffer masks and rewards relabeled goals exactly as the env does.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sb3_hir.goals import ToleranceGoalSpec
from sb3_hir.instruction import InstructionWrapper

__all__ = [
    "MAZE_DISTANCE_THRESHOLD",
    "DistanceThresholdGoalSpec",
    "declare_goal_spec",
    "env_distance_threshold",
    "find_instruction_wrapper",
]

#: Success radius hard-coded in gymnasium-robotics' maze envs (``maze_v4.MazeEnv``), in maze units.
MAZE_DISTANCE_THRESHOLD = 0.45


def env_distance_threshold(env: gym.Env) -> float:
    """The env's success radius: ``distance_threshold`` (Fetch, Hand), or 0.45 for gymnasium-robotics mazes."""
    unwrapped = env.unwrapped
    threshold = getattr(unwrapped, "distance_threshold", None)
    if threshold is not None:
        return float(threshold)
    if hasattr(unwrapped, "maze"):
        return MAZE_DISTANCE_THRESHOLD
    raise ValueError(
        f"env {type(unwrapped).__name__} has no distance_threshold attribute and is not a gymnasium-robotics maze; "
        "pass distance_threshold= explicitly"
    )


def find_instruction_wrapper(env: gym.Env) -> InstructionWrapper | None:
    """The outermost :class:`InstructionWrapper` in ``env``'s wrapper chain, if any."""
    current: Any = env
    while isinstance(current, gym.Wrapper):
        if isinstance(current, InstructionWrapper):
            return current
        current = current.env
    return None


class DistanceThresholdGoalSpec(ToleranceGoalSpec):
    """:class:`~sb3_hir.goals.ToleranceGoalSpec` with the env's own success radius as tolerance.

    Pass the instance (not the name) to the replay buffer, since it needs the env::

        spec = plugins.create("goal_spec", "distance-threshold", env=env)
        HindsightInstructionReplayBuffer(..., goal_spec=spec)

    :param env: the env (an instruction env built by this plugin, or a bare GoalEnv); the threshold is read from
        it, and ``mask_value`` / ``goal_reward`` / ``step_reward`` from its :class:`InstructionWrapper` unless
        given.
    :param distance_threshold: the tolerance, when the env does not tell it (checked against the env's otherwise);
        with neither given, the gymnasium-robotics mazes' 0.45.
    :param kwargs: further :class:`~sb3_hir.goals.GoalSpec` arguments (keys, ``mask_value``, ``goal_reward``).
    """

    def __init__(self, env: gym.Env | None = None, distance_threshold: float | None = None, **kwargs: Any) -> None:
        if env is None and distance_threshold is None:
            # Created with its defaults (plugin listings, check_plugin): the mazes' radius, which this plugin's
            # own envs use. Pass env= to read any other GoalEnv's threshold.
            distance_threshold = MAZE_DISTANCE_THRESHOLD
        if env is not None:
            if not isinstance(env, gym.Env):
                raise ValueError(f"env must be a gymnasium.Env; got {type(env).__name__}")
            try:
                found: float | None = env_distance_threshold(env)
            except ValueError:
                if distance_threshold is None:
                    raise
                found = None  # the env does not say; the given threshold stands
            if found is not None:
                if distance_threshold is not None and float(distance_threshold) != found:
                    raise ValueError(
                        f"distance_threshold={distance_threshold} disagrees with the env's own {found}; omit it to "
                        "use the env's"
                    )
                distance_threshold = found
            wrapper = find_instruction_wrapper(env)
            if wrapper is not None:
                for name in ("mask_value", "goal_reward", "step_reward"):
                    ours = getattr(wrapper, name)
                    if name in kwargs and float(kwargs[name]) != ours:
                        raise ValueError(
                            f"{name}={kwargs[name]} disagrees with the instruction env's {name}={ours}; relabeled "
                            "goals would be masked or rewarded differently from the env's; omit it"
                        )
                    kwargs[name] = ours
        if distance_threshold is None:
            raise ValueError("the env does not say its distance_threshold: pass distance_threshold=")
        super().__init__(tolerance=distance_threshold, **kwargs)
        self.distance_threshold = self.tolerance


def declare_goal_spec(wrapper: InstructionWrapper) -> InstructionWrapper:
    """Give a float-goal instruction env its ``"distance-threshold"`` spec as ``wrapper.goal_spec``.

    The buffer, the CLI and :func:`sb3_hir.testing.check_instruction_env` read the env's declared goal spec; without
    it they fall back to exact equality, under which a relabeled goal taken from an achieved position is reached
    only at that very position, never within the env's radius. Integer goals keep their exact spec; an env that
    tells no threshold keeps None.
    """
    if wrapper.goal_spec is None:
        try:
            env_distance_threshold(wrapper)
        except ValueError:
            return wrapper
        wrapper.goal_spec = DistanceThresholdGoalSpec(env=wrapper)
    return wrapper
