"""``check_draw_strategy``: a draw strategy's served rows, held to the counterfactual served-rows oracle.

A strategy that returns wrong reach steps serves wrong rewards and terminations, and nothing crashes: the agent
learns another task. The check builds real replay buffers with the strategy (both memory layouts, 1-step and n-step
serving, demonstrations mixed in, two sub-envs, a buffer small enough to wrap), streams random episodes through
them, and compares every served row with its episode replayed under the goals drawn for it
(:mod:`sb3_hir.testing.served_rows`).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sb3_hir._validate import check_choice, check_int
from sb3_hir.resolvers import resolve_goal_spec
from sb3_hir.testing.registry import PluginCheckOptions, register_check
from sb3_hir.testing.rollout import describe

__all__ = ["check_draw_strategy", "check_goal_env_draw_strategy"]

_CHECK = "check_draw_strategy"


def check_draw_strategy(
    strategy: Any,
    num_goals: Sequence[int] = (1, 2),
    n_steps: Sequence[int] = (1, 3),
    memory_layouts: Sequence[str] = ("full", "compact"),
    demonstrations: bool = True,
    strategy_kwargs: dict[str, Any] | None = None,
    batches: int = 12,
    seed: int = 0,
    relabeler_strategy: str = "all",
    goal_spec: Any = None,
) -> None:
    """Check that every row a buffer serves with ``strategy`` is its episode's replay under the drawn goals.

    Raises :class:`AssertionError` naming the strategy, the buffer's settings and the first wrong row (the field, the
    buffer row, the step, the drawn goals and reach steps);
    :class:`~sb3_hir.buffers.draws.DrawContractError` where the strategy returns what serving cannot use; and the
    strategy's own ``ValueError`` where it refuses a buffer (pass the ``num_goals`` it serves).

    :param strategy: a registered name, a :class:`~sb3_hir.buffers.draws.DrawStrategy` subclass, or an instance
        (each source of rows binds its own copy).
    :param num_goals: instruction lengths ``k`` to check.
    :param n_steps: served windows to check (1: 1-step rows).
    :param memory_layouts: ``"full"`` and/or ``"compact"``.
    :param demonstrations: also serve a quarter of each batch from demonstrations.
    :param strategy_kwargs: ``draw_kwargs`` of a name or class.
    :param batches: batches sampled (and checked) per buffer.
    :param seed: seed of the episodes and the buffers.
    :param relabeler_strategy: the built-in relabeler's ``strategy`` the buffers are built with.
    :param goal_spec: the goal spec the buffers and the episodes follow (a name or a :class:`~sb3_hir.goals.GoalSpec`;
        None: exact goals), so a strategy for event goals is checked on them: with ``nothing_value``, about half
        the steps achieve nothing; ``wildcard_value``, ``description_levels`` and ``same_step_goals`` apply as
        declared. Padding and goal groups are not generated.
    """
    spec = _checked_settings(num_goals, n_steps, memory_layouts, batches, seed, goal_spec)
    name = strategy if isinstance(strategy, str) else describe(strategy)
    relabeled = 0
    for k, n, layout in itertools.product(num_goals, n_steps, memory_layouts):
        settings = f"{name} with k={k}, n_steps={n}, memory_layout={layout!r}, demonstrations={demonstrations}"
        buffer, online, demo = _filled_buffer(
            strategy, strategy_kwargs, k, n, layout, demonstrations, seed, relabeler_strategy, spec,
        )
        relabeled += _check_batches(buffer, online, demo, spec, batches, settings)
    if not relabeled:
        raise AssertionError(f"{_CHECK}: {name} served no relabeled row in any batch: its instructions() dropped "
                             "every candidate (keep False, or a last goal reached before the transition)")


def _checked_settings(num_goals: Sequence[int], n_steps: Sequence[int], memory_layouts: Sequence[str], batches: int,
                      seed: int, goal_spec: Any) -> Any:
    """:func:`check_draw_strategy`'s settings checked before any buffer is built; returns the resolved goal spec
    (None: exact goals), which must have no padding or groups (the check's episodes have none)."""
    check_int(batches, "batches", 1)
    check_int(seed, "seed", 0)
    for name_, values, low in (("num_goals", num_goals, 1), ("n_steps", n_steps, 1)):
        if isinstance(values, (str, int)) or not len(values):
            raise ValueError(f"{name_} must be a non-empty sequence of ints >= {low}, got {values!r}")
        for value in values:
            check_int(value, name_, low)
    if isinstance(memory_layouts, str) or not len(memory_layouts):
        raise ValueError(f"memory_layouts must be a non-empty sequence of 'full' / 'compact', got {memory_layouts!r}")
    for layout in memory_layouts:
        check_choice(layout, "memory_layouts", ("full", "compact"))
    spec = None if goal_spec is None else resolve_goal_spec(goal_spec)
    if spec is not None and (spec.pad_value is not None or spec.groups_key is not None):
        raise ValueError("goal_spec: the check's episodes have no padding or goal groups; give a spec without "
                         f"pad_value and groups_key, got {spec!r}")
    return spec


def _filled_buffer(strategy: Any, strategy_kwargs: dict[str, Any] | None, k: int, n: int, layout: str,
                   demonstrations: bool, seed: int, relabeler_strategy: str, spec: Any
                   ) -> tuple[Any, tuple[Any, Any], tuple[Any, dict[int, bool]]]:
    """A small wrapping buffer (two sub-envs) with a fresh ``strategy``, its demonstrations (six random episodes)
    and 70 steps of random episodes added: ``(buffer, (online stream, falls), (demonstration stream or None, their
    falls))``, what the oracle replays served rows against."""
    from sb3_hir.testing import served_rows as oracle  # deferred: keeps ``import sb3_hir.testing`` cheap

    rng = np.random.default_rng(seed)
    buffer = oracle.make_buffer(
        k, size=40, n_envs=2, relabel_ratio=0.8, n_steps=n, gamma=0.9, memory_layout=layout, seed=seed,
        hindsight_goals=relabeler_strategy, demo_ratio=0.25 if demonstrations else 0.0, goal_spec=spec,
        **_fresh(strategy, strategy_kwargs),
    )
    demos: list[Any] = []
    demo_falls: dict[int, bool] = {}
    if demonstrations:
        for _ in range(6):
            rec, fall = oracle.random_recorded(rng, k, spec=spec)
            demos.append(rec)
            demo_falls[id(rec)] = fall
        buffer.add_demonstrations([rec.episode for rec in demos])
    # 20 rows per env: wraps, overwrites, leaves one running
    online, falls = oracle.fill(buffer, rng, 70, spec=spec)
    demo_part = oracle.demo_stream(buffer, demos) if demonstrations else None
    return buffer, (online, falls), (demo_part, demo_falls)


def _check_batches(buffer: Any, online: tuple[Any, Any], demo: tuple[Any, dict[int, bool]], spec: Any,
                   batches: int, settings: str) -> int:
    """Sample ``batches`` batches of 32 and hold every served row (demonstration part, then online part) to the
    oracle; returns how many rows were relabeled. A wrong row raises naming ``settings`` and the batch."""
    from sb3_hir.testing import served_rows as oracle  # deferred: keeps ``import sb3_hir.testing`` cheap

    (stream, falls), (demo_part, demo_falls) = online, demo
    relabeled = 0
    for batch in range(batches):
        sample = buffer.sample(32)
        num_online = 32
        try:
            if demo_part is not None:
                served = buffer.last_demonstration_info
                num_online = 32 - len(served.rows)
                oracle.check_served(demo_part, sample, spec, falls=demo_falls, offset=num_online)
                relabeled += int(served.relabeled.sum())
            if num_online:
                oracle.check_served(stream, sample, spec, falls=falls)
                relabeled += int(buffer.last_sample_info.relabeled.sum())
        except AssertionError as error:
            raise AssertionError(f"{_CHECK}: {settings}, batch {batch}: {error}; each served row must be its "
                                 "episode's replay under the goals drawn for it") from error
    return relabeled


def _fresh(strategy: Any, kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """The buffer arguments that build a new strategy object for one buffer."""
    from sb3_hir.buffers.draws import DrawStrategy

    if isinstance(strategy, (str, type)):
        return dict(draw=strategy, draw_kwargs=kwargs)
    if isinstance(strategy, DrawStrategy):
        return dict(draw=copy.deepcopy(strategy))
    if callable(strategy):  # a registered factory function
        return dict(draw=strategy(**(kwargs or {})))
    return dict(draw=strategy)  # refused by the buffer, naming what it accepts


@register_check("draw_strategy")
def _check_draw_strategy_component(factory: Callable[..., Any], options: PluginCheckOptions) -> None:
    """A plugin's draw strategy, built with its defaults, serves the oracle's rows for each ``k`` it accepts."""
    accepted = []
    for k in (1, 2):
        try:
            check_draw_strategy(factory, num_goals=(k,), memory_layouts=("full",), batches=4, seed=options.seed)
        except ValueError as error:
            if not _refused_by_name(error):
                raise
            continue  # the strategy refuses this k, by name
        accepted.append(k)
    if not accepted:  # a GoalEnv strategy (HER's draw refuses instruction envs): GoalEnv mode's contract instead
        try:
            check_goal_env_draw_strategy(factory, seed=options.seed)
        except ValueError as error:
            if not _refused_by_name(error):
                raise
            raise AssertionError(f"{_CHECK}: {describe(factory)} refused instruction lengths 1 and 2 and GoalEnv "
                                 f"mode: {error}") from None


def _refused_by_name(error: ValueError) -> bool:
    """Whether a strategy refused the buffer naming itself ("draw strategy 'x' ...", or the 0.1 spelling
    "draw_strategy 'x' ...")."""
    return "draw strategy" in str(error) or "draw_strategy" in str(error)


def check_goal_env_draw_strategy(strategy: Any, strategy_kwargs: dict[str, Any] | None = None, seed: int = 0,
                                 batches: int = 6) -> None:
    """Check a draw strategy in GoalEnv mode: SB3's ``BitFlippingEnv`` through :class:`~sb3_hir.HerReplayBuffer`
    with it, 1-step and 3-step serving; every served reward must be the env's ``compute_reward`` of the served
    achieved and desired goals (summed over the window), and some rows must be relabeled.
    """
    from stable_baselines3.common.envs import BitFlippingEnv  # deferred: keeps ``import sb3_hir.testing`` cheap
    from stable_baselines3.common.vec_env import DummyVecEnv

    from sb3_hir.buffers import HerReplayBuffer

    check_int(batches, "batches", 1)
    check_int(seed, "seed", 0)
    name = strategy if isinstance(strategy, str) else describe(strategy)
    for n_steps in (1, 3):
        venv = DummyVecEnv([lambda: BitFlippingEnv(n_bits=4, continuous=False, max_steps=4)] * 2)
        venv.seed(seed)
        venv.action_space.seed(seed)
        buffer = HerReplayBuffer(64, venv.observation_space, venv.action_space, env=venv, n_envs=2, seed=seed,
                                 n_steps=n_steps, gamma=0.9, **_fresh(strategy, strategy_kwargs))
        obs = venv.reset()
        for _ in range(60):
            actions = np.array([venv.action_space.sample() for _ in range(2)])
            next_obs, rewards, dones, infos = venv.step(actions)
            stored = {key: value.copy() for key, value in next_obs.items()}
            for i, done in enumerate(dones):
                if done:
                    for key in stored:
                        stored[key][i] = infos[i]["terminal_observation"][key]
            buffer.add(obs, stored, actions, rewards, dones, infos)
            obs = next_obs
        relabeled = 0
        env = venv.envs[0]
        for batch in range(batches):
            sample = buffer.sample(32)
            info = buffer.last_sample_info
            served = sample.rewards.numpy()[:, 0]
            windows = info.window
            for b in np.flatnonzero(info.relabeled):
                goal = sample.observations["desired_goal"].numpy()[b]
                row, env_idx, m = int(info.rows[b]), int(info.env_indices[b]), int(windows[b])
                achieved = np.stack([buffer.next_observations["achieved_goal"][(row + i) % 64, env_idx]
                                     for i in range(m)])
                rewards = np.asarray(env.compute_reward(achieved, np.repeat(goal[None], m, axis=0), None))
                expected = float((rewards.reshape(m) * 0.9 ** np.arange(m)).sum())
                if not np.isclose(served[b], expected, atol=1e-5):
                    raise AssertionError(f"check_goal_env_draw_strategy: {name} with n_steps={n_steps}, batch "
                                         f"{batch}: served reward {served[b]} under goal {goal.tolist()}, the env's "
                                         f"compute_reward over the window gives {expected}")
            relabeled += int(info.relabeled.sum())
        if not relabeled:
            raise AssertionError(f"check_goal_env_draw_strategy: {name} served no relabeled row")
