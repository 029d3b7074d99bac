"""``check_expert``: an expert keeps SB3's ``predict`` contract, which DAgger and imitation call it through.

A ``predict`` returning the wrong shape, an action outside the space, or different actions for one observation
under ``deterministic=True`` breaks data collection in ways that surface far from the expert, so each is reported
at the step it happens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_hir import resolvers
from sb3_hir.testing.registry import PluginCheckOptions, register_check
from sb3_hir.testing.rollout import check_count, checked_env, describe, fail, is_factory, show

if TYPE_CHECKING:
    import gymnasium as gym
    from stable_baselines3.common.vec_env import VecEnv

__all__ = ["check_expert"]

_CHECK = "check_expert"


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
    # Deferred: stable_baselines3 imports torch, which ``import sb3_hir.testing`` (and the pytest plugin) must not.
    from stable_baselines3.common.vec_env import DummyVecEnv

    from sb3_hir.env_experts import env_state_factory  # deferred with SB3 (it imports the VecEnv classes)

    n_steps = check_count(n_steps, "n_steps")
    labels = env_state_factory(expert)
    if labels is not None and labels.check is not None:
        labels.check()  # the expert cannot run in this install: its own error, before any env is built
    with checked_env(env) as env:
        # An expert that reads the env labels from a wrapper of it (sb3_hir.env_experts), as DAgger builds it.
        wrapped = env if labels is None else labels.wrap(env)
        venv = DummyVecEnv([lambda: wrapped])
        expert = _resolve_expert(expert, venv)
        name = describe(expert)
        if not callable(getattr(expert, "predict", None)):
            fail(_CHECK, name, "an expert must have SB3's predict(observation, state, episode_start, deterministic)")
        venv.seed(seed)
        obs = venv.reset()
        state, starts = None, np.ones(venv.num_envs, dtype=bool)
        episodes = successes = 0
        for step in range(1, n_steps + 1):
            actions, new_state = _checked_prediction(expert, name, f"seed={seed}, step {step}", venv, obs, state,
                                                     starts)
            obs, _rewards, dones, infos = venv.step(actions)
            state, starts = new_state, dones
            if dones[0]:
                episodes += 1
                successes += bool(infos[0].get("is_success", False))
        if min_success_rate is not None:
            rate = successes / episodes if episodes else 0.0
            if rate < min_success_rate:
                fail(_CHECK, f"seed={seed}, {n_steps} steps",
                     f"{name} succeeded in {successes} of {episodes} finished episodes (rate {rate:.2f}), below "
                     f"min_success_rate={min_success_rate}")


@register_check("expert")
def _check_expert_component(factory: Callable[..., Any], options: PluginCheckOptions) -> None:
    """A plugin's expert, created for the target env, keeps SB3's ``predict`` contract.

    An expert made for one env family names it on its factory (``factory.env``): a registered env name (an
    env-state expert plans in its own env, :class:`~sb3_hir.env_experts.EnvStateExpertFactory`), or a zero-argument
    function making the env (a scripted controller of a gymnasium-robotics GoalEnv); it is checked there.
    """
    planned_in = getattr(factory, "env", None)
    if isinstance(planned_in, str):
        check_expert(factory, planned_in, seed=options.seed)
        return
    if callable(planned_in):
        env = planned_in()
        try:
            check_expert(factory, env, seed=options.seed)
        finally:
            env.close()
        return
    with options.target_env() as target:
        check_expert(factory, target, seed=options.seed)


def _resolve_expert(expert: Any, venv: VecEnv) -> Any:
    """A name or class through :func:`sb3_hir.resolvers.resolve_expert` (built with ``venv``); a factory function
    (a callable without ``predict``) is called as ``factory(venv)``; an instance is used as is."""
    if isinstance(expert, str | type):
        return resolvers.resolve_expert(expert, venv=venv)
    if is_factory(expert, "predict"):
        return expert(venv)
    return expert


def _checked_prediction(expert: Any, name: str, place: str, venv: VecEnv, obs: Any, state: Any,
                        starts: np.ndarray) -> tuple[np.ndarray, Any]:
    """One ``predict``: ``(actions, state)``, one in-space action per env, the same when asked again."""
    space = venv.action_space
    out = expert.predict(obs, state=state, episode_start=starts, deterministic=True)
    if not isinstance(out, tuple) or len(out) != 2:
        fail(_CHECK, place, f"{name}.predict must return (actions, state), got {show(out)}")
    actions, new_state = out
    actions = np.asarray(actions)
    expected_shape = (venv.num_envs, *(space.shape or ()))
    if actions.shape != expected_shape:
        fail(_CHECK, place, f"{name}.predict returned actions of shape {actions.shape}, expected "
                            f"{expected_shape} (one action per env of {space})")
    if not space.contains(np.asarray(actions[0], dtype=space.dtype)) or (
        np.issubdtype(np.dtype(space.dtype), np.integer) and not np.issubdtype(actions.dtype, np.integer)
    ):
        fail(_CHECK, place, f"{name}.predict returned action {show(actions[0])} ({actions.dtype}), which "
                            f"is not in the action space {space}")
    again = np.asarray(expert.predict(obs, state=state, episode_start=starts, deterministic=True)[0])
    if not np.array_equal(again, actions):
        fail(_CHECK, place, f"{name}.predict(deterministic=True) returned {show(actions)}, then "
                            f"{show(again)} for the same observation")
    return actions, new_state

