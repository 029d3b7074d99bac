"""Experts that read the env: DAgger labels computed from the env's own state at collection time.

Most real DAgger teachers are not observation -> action maps: a planner, a simulator's state, a scripted
controller such as BabyAI's bot, which plans from the full grid and its own stack of subgoals. Such an expert
runs where the env lives, beside it:

* :class:`EnvStateExpert` is what it implements: ``reset(env)`` at each episode start, ``act(env)`` once per
  visited state (its label), ``observe(env, action)`` after each step with the action that was *executed*, the
  learner's included, so that a planner replans after an action it did not choose.
* :class:`EnvStateLabels` is the gymnasium wrapper that drives it: after ``reset`` and every step it asks the
  expert for the current state's action and keeps it as :attr:`EnvStateLabels.label` and ``info["expert_action"]``.
  The expert gets ``env.unwrapped``.
* :class:`EnvStateLabelExpert` is the VecEnv-level adapter: SB3's ``predict`` returning each sub-env's current
  label (read with ``get_attr``, so SubprocVecEnv workers answer too). It is an SB3 policy, so
  :class:`~sb3_hir.dagger.DAggerCollector`, :class:`~sb3_hir.dagger.SimpleDAggerTrainer`, imitation's
  ``rollout`` and ``finish_round(expert=...)`` take it as they take any expert: the collector records the label of
  each visited state while it executes the beta-mixed action, and the wrapper then shows the expert that action.
  Nothing in the collector changes, so its guarantees (durable rounds, resume, data-only checkpoints) hold as
  they are.
* :class:`EnvStateExpertFactory` is what an ``"expert"`` plugin registers for such an expert: called as
  ``factory(venv)`` it builds the adapter (refusing a venv whose sub-envs lack the wrapper, in one sentence
  naming :func:`with_expert_labels`); ``factory.wrap(env)`` wraps one env. :func:`with_expert_labels` turns an
  env factory into one whose envs carry the expert's wrapper when the expert needs it (and leaves it unchanged
  for an observation-only expert).

The policy (which action) stays in the expert; the mechanics (when it is asked, what it is shown) are here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
from stable_baselines3.common.vec_env import VecEnv

from sb3_hir import plugins
from sb3_hir.vec_env_expert import VecEnvExpert

__all__ = [
    "EXPERT_ACTION_KEY",
    "EnvStateExpert",
    "EnvStateExpertFactory",
    "EnvStateLabelExpert",
    "EnvStateLabels",
    "env_state_factory",
    "with_expert_labels",
]

#: The info key (after ``reset`` and after each step that does not end the episode) holding the expert's action.
EXPERT_ACTION_KEY = "expert_action"


@runtime_checkable
class EnvStateExpert(Protocol):
    """An expert that labels the env's current state from the env itself (not from the observation).

    Subclass it (``reset`` and ``observe`` default to doing nothing) or implement the three methods. The
    :class:`EnvStateLabels` wrapper calls, per episode: ``reset(env)``, ``act(env)``, then after each step
    ``observe(env, executed_action)`` and ``act(env)`` again (not after the step that ends the episode). ``env`` is
    the unwrapped env, in its state after the reset or step.
    """

    def reset(self, env: gym.Env) -> None:
        """A new episode starts in ``env`` (called after the env's reset, before the first :meth:`act`)."""

    def act(self, env: gym.Env) -> Any:
        """The expert's action for ``env``'s current state; called exactly once per visited state."""
        ...

    def observe(self, env: gym.Env, action: Any) -> None:
        """``action`` was executed (by the learner or the expert) and ``env`` is in its new state.

        A planner that keeps a plan compares ``action`` with what it suggested and replans when they differ.
        """


class EnvStateLabels(gym.Wrapper):
    """Keeps the label of the env's current state: ``expert.act(env.unwrapped)`` after each reset and step.

    The label is :attr:`label` (what :class:`EnvStateLabelExpert` reads) and ``info["expert_action"]``
    (:data:`EXPERT_ACTION_KEY`). After a step that ends the episode there is no state left to label: the expert
    is not asked, and the label is the next reset's.

    :param env: the env; the expert reads ``env.unwrapped``.
    :param expert: the :class:`EnvStateExpert`.
    """

    def __init__(self, env: gym.Env, expert: EnvStateExpert) -> None:
        super().__init__(env)
        if not isinstance(expert, EnvStateExpert):
            raise ValueError(
                "expert must be an EnvStateExpert (reset(env), act(env) -> action, observe(env, action)); got "
                f"{type(expert).__name__}"
            )
        self.expert = expert
        self._label: Any = None

    @property
    def label(self) -> Any:
        """The expert's action for the current state (raises between an episode's end and the next reset)."""
        if self._label is None:
            raise RuntimeError("no state to label: the episode ended (or never started); reset the env first")
        return self._label

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.expert.reset(self.env.unwrapped)
        self._label = self.expert.act(self.env.unwrapped)
        return obs, {**info, EXPERT_ACTION_KEY: self._label}

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.expert.observe(self.env.unwrapped, action)
        if terminated or truncated:
            self._label = None
            return obs, reward, terminated, truncated, info
        self._label = self.expert.act(self.env.unwrapped)
        return obs, reward, terminated, truncated, {**info, EXPERT_ACTION_KEY: self._label}


class EnvStateLabelExpert(VecEnvExpert):
    """The VecEnv-level adapter: an SB3 policy whose ``predict`` returns each sub-env's current label.

    Every sub-env must be wrapped in :class:`EnvStateLabels` (:func:`with_expert_labels` does it). ``predict`` must be
    given the venv's *current* observation, as any policy rolling out in that venv is: the answer is the sub-envs'
    state's, the observation only fixes the batch size.

    :param venv: the VecEnv (or a wrapper of it, such as the :class:`~sb3_hir.dagger.DAggerCollector`).
    """

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        wrapped = venv.env_is_wrapped(EnvStateLabels)
        if not all(wrapped):
            raise ValueError(
                f"an env-state expert reads labels from EnvStateLabels, which {wrapped.count(False)} of the venv's "
                f"{venv.num_envs} sub-env(s) lack; build the venv from with_expert_labels(env_fn, expert) "
                "(sb3_hir.env_experts)"
            )

    def read_actions(self) -> Any:
        return self.venv.get_attr("label")


class EnvStateExpertFactory:
    """What a plugin registers (kind ``"expert"``) for an env-state expert.

    ``factory(venv)`` is the ``"expert"`` contract (an object with SB3's ``predict``): the
    :class:`EnvStateLabelExpert` on ``venv``, whose sub-envs were wrapped by :meth:`wrap`. The expert's own
    arguments go to :meth:`wrap` (each sub-env builds its own expert), not to ``factory(venv)``.

    :param make_expert: ``make_expert(**kwargs) -> EnvStateExpert``, one per sub-env; it may raise (e.g. a missing
        dependency) with the message the user should see.
    :param check: called before building the adapter, with no arguments; raises when the expert cannot be used
        here (e.g. its library lacks it), so that a venv built without the wrapper is refused for the real cause.
    :param env: the registered env it plans in (it reads that env's state), where
        :func:`~sb3_hir.testing.check_plugin` checks it; None: the check's own target env.
    """

    def __init__(self, make_expert: Callable[..., EnvStateExpert], check: Callable[[], None] | None = None,
                 env: str | None = None) -> None:
        if not callable(make_expert):
            raise ValueError(f"make_expert must be callable, got {make_expert!r}")
        if env is not None and not isinstance(env, str):
            raise ValueError(f"env must be a registered env name or None, got {env!r}")
        self.make_expert = make_expert
        self.check = check
        self.env = env
        self.__doc__ = make_expert.__doc__  # what `sb3-hir plugins` and the docs show for the expert

    def __call__(self, venv: VecEnv, **kwargs: Any) -> EnvStateLabelExpert:
        if kwargs:
            raise ValueError(
                f"an env-state expert takes its arguments where each sub-env builds it, not here (got "
                f"{sorted(kwargs)}): with_expert_labels(env_fn, expert, **kwargs)"
            )
        if self.check is not None:
            self.check()
        return EnvStateLabelExpert(venv)

    def wrap(self, env: gym.Env, **kwargs: Any) -> EnvStateLabels:
        """``env`` labelled by a new expert ``make_expert(**kwargs)``."""
        return EnvStateLabels(env, self.make_expert(**kwargs))


def env_state_factory(expert: Any) -> EnvStateExpertFactory | None:
    """The :class:`EnvStateExpertFactory` of ``expert`` (a plugin name or the factory itself), None when the expert
    reads observations only (any other name or object)."""
    if isinstance(expert, EnvStateExpertFactory):
        return expert
    if isinstance(expert, str) and expert in plugins.available("expert"):
        factory = plugins.get("expert", expert)
        return factory if isinstance(factory, EnvStateExpertFactory) else None
    return None


def with_expert_labels(env_fn: Callable[[], gym.Env], expert: Any, **kwargs: Any) -> Callable[[], gym.Env]:
    """``env_fn`` whose envs carry ``expert``'s :class:`EnvStateLabels` (outermost), when ``expert`` reads the env.

    :param env_fn: builds one env (what ``make_vec_env`` and ``DummyVecEnv`` take).
    :param expert: an ``"expert"`` plugin name, an :class:`EnvStateExpertFactory`, or an :class:`EnvStateExpert`
        class. Any other expert (one that reads observations) returns ``env_fn`` unchanged.
    :param kwargs: the expert's arguments (``make_expert(**kwargs)``, once per env).
    :raises Exception: the factory's ``check`` error (e.g. the expert's library lacks it), here, before any env.
    """
    factory = env_state_factory(expert)
    if factory is None and isinstance(expert, type) and issubclass(expert, EnvStateExpert):
        factory = EnvStateExpertFactory(expert)
    if factory is None:
        if kwargs:
            raise ValueError(f"expert {expert!r} does not read the env; its arguments {sorted(kwargs)} are not used "
                             "here")
        return env_fn
    if factory.check is not None:
        factory.check()
    made = factory

    def labelled() -> gym.Env:
        return made.wrap(env_fn(), **kwargs)

    return labelled
