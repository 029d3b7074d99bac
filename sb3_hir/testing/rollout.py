"""What every check shares: random-policy rollouts, failure messages, argument checks and component creation.

A failure is an :class:`AssertionError` reading ``"<check>: <where>: <detail>"``, where ``where`` names the
episode's seed and step, so that the failing case can be replayed by hand. Episode ``i`` of a run seeded ``seed``
is ``env.reset(seed=seed + i)`` with ``env.action_space.seed(seed + i)``.
"""

from __future__ import annotations

import contextlib
import inspect
import numbers
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from sb3_hir import plugins, resolvers
from sb3_hir._validate import check_int

if TYPE_CHECKING:
    import gymnasium as gym

    from sb3_hir.episodes import Episode

__all__ = [
    "DEFAULT_STEP_CAP",
    "Rollout",
    "check_count",
    "check_step_cap",
    "create",
    "describe",
    "fail",
    "first_rollout_difference",
    "is_factory",
    "random_rollout",
    "random_rollouts",
    "show",
    "where",
]

#: Step cap of a rollout when ``max_steps`` is None and the env never ends an episode by itself.
DEFAULT_STEP_CAP = 1000


# ---------------------------------------------------------------------------------------------- formatting
def show(value: Any, limit: int = 240) -> str:
    """Readable, bounded rendering of an array or scalar: a message must stay legible for a large observation."""
    text = repr(value.tolist()) if isinstance(value, np.ndarray | np.generic) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(obj: Any) -> str:
    """A component's repr when it is informative (it shows the parameters), else its qualified name."""
    if inspect.isroutine(obj) or inspect.isclass(obj):
        return getattr(obj, "__qualname__", repr(obj))
    text = repr(obj)
    return text if len(text) <= 300 and " object at 0x" not in text else type(obj).__qualname__


def fail(check: str, place: str, detail: str) -> NoReturn:
    """Raise the one failure format of every check, so users can grep and replay any of them alike."""
    raise AssertionError(f"{check}: {place}: {detail}")


def fail_at(check: str, difference: tuple[int, str] | None, place: Callable[[int], str],
            explain: Callable[[int, str], str]) -> None:
    """Fail ``check`` where two runs first part, if they do.

    :param difference: ``(step, detail)`` from a first-difference finder, or None where the runs agree.
    :param place: the failure's place from the step, e.g. :meth:`Rollout.where`.
    :param explain: the failure's text from the step and the detail, so each check says what the difference implies.
    """
    if difference is not None:
        step, detail = difference
        fail(check, place(step), explain(step, detail))


def where(index: int, seed: int, step: int | None = None) -> str:
    """``"episode i (seed=s), step t"``: what replaying a failure by hand needs."""
    text = f"episode {index} (seed={seed})"
    return text if step is None else f"{text}, step {step}"


@contextlib.contextmanager
def checked_env(env: Any) -> Iterator[gym.Env]:
    """The env under check: ``env`` itself, or the one a registered name creates, closed only when created here."""
    created = isinstance(env, str)
    resolved = resolvers.resolve_env(env)
    try:
        yield resolved
    finally:
        if created:
            resolved.close()


# ---------------------------------------------------------------------------------------------- arguments
def check_count(value: Any, name: str) -> int:
    """A count of episodes, steps or draws: an ``int >= 1`` (a ``bool`` is refused)."""
    return check_int(value, name, minimum=1)


def check_step_cap(max_steps: Any) -> int | None:
    """``max_steps``: None (the env ends its episodes, at most :data:`DEFAULT_STEP_CAP` steps) or an ``int >= 1``."""
    if max_steps is None:
        return None
    try:
        return check_int(max_steps, "max_steps", minimum=1)
    except ValueError:
        raise ValueError(f"max_steps must be an int >= 1 or None; got {max_steps!r}") from None


# ---------------------------------------------------------------------------------------------- components
def is_factory(obj: Any, method: str) -> bool:
    """Whether ``obj`` builds components (a class, or a callable without the component's ``method``)."""
    return inspect.isclass(obj) or (callable(obj) and not hasattr(obj, method))


def create(factory: Callable[..., Any], kwargs: Mapping[str, Any] | None = None, label: Any = None) -> Any:
    """``factory(**kwargs)``, a failure being the component's fault: an AssertionError showing the call.

    An unknown name stays the caller's error (:class:`~sb3_hir.plugins.UnknownComponentError`, a LookupError).

    :param label: what the message shows as the factory (default: ``factory`` itself).
    """
    kwargs = dict(kwargs or {})
    try:
        return factory(**kwargs)
    except plugins.UnknownComponentError:
        raise
    except Exception as error:
        args = ", ".join(f"{key}={show(value, 60)}" for key, value in kwargs.items())
        raise AssertionError(f"cannot be created with its defaults ({describe(factory if label is None else label)}"
                             f"({args})): {type(error).__name__}: {error}") from error


# ---------------------------------------------------------------------------------------------- rollouts
@dataclass
class Rollout:
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

    def where(self, step: int | None = None) -> str:
        """:func:`where` for this rollout."""
        return where(self.index, self.seed, step)

    def episode(self) -> Episode:
        """The rollout as the relabelers see it; a cut by ``max_steps`` is a time limit, not a terminal state."""
        from sb3_hir.episodes import Episode  # deferred: keeps ``import sb3_hir.testing`` cheap (see __init__)

        keys = self.observations[0].keys()
        truncated = list(self.truncated)
        if not (self.terminated[-1] or truncated[-1]):
            truncated[-1] = True
        return Episode(
            observations={key: np.stack([obs[key] for obs in self.observations]) for key in keys},
            actions=np.asarray(self.actions),
            rewards=np.asarray(self.rewards, dtype=np.float32),
            terminated=np.asarray(self.terminated, dtype=bool),
            truncated=np.asarray(truncated, dtype=bool),
            infos=list(self.infos),
        )


def _check_observation(check: str, place: str, obs: Any, space: Any) -> None:
    """Raise on the first key whose value breaks ``space`` (keys, array type, dtype, shape, bounds)."""
    if not isinstance(obs, Mapping):
        fail(check, place, f"the observation must be a dict (observation_space is a Dict), got {type(obs).__name__}")
    expected, present = list(space.spaces), list(obs)
    if sorted(expected) != sorted(present):
        fail(check, place, f"observation keys {sorted(present)} differ from observation_space keys {sorted(expected)}")
    for key in expected:
        value, sub = obs[key], space[key]
        if not isinstance(value, np.ndarray):
            fail(check, place, f"observation[{key!r}] must be a numpy array, got {type(value).__name__} "
                               f"{show(value)}")
        if sub.dtype is not None and value.dtype != sub.dtype:
            fail(check, place, f"observation[{key!r}] has dtype {value.dtype}, but observation_space[{key!r}] "
                               f"declares {sub.dtype}; value {show(value)}")
        if sub.shape is not None and value.shape != sub.shape:
            fail(check, place, f"observation[{key!r}] has shape {value.shape}, but observation_space[{key!r}] "
                               f"declares {sub.shape}; value {show(value)}")
        if not sub.contains(value):
            fail(check, place, f"observation[{key!r}] = {show(value)} lies outside observation_space[{key!r}] = "
                               f"{sub}")


def _check_success_flag(check: str, place: str, info: Any) -> None:
    """``info["is_success"]`` on every step: SB3's HER and evaluation read it."""
    if not isinstance(info, Mapping) or "is_success" not in info:
        keys = sorted(info) if isinstance(info, Mapping) else type(info).__name__
        fail(check, place, f"info must carry 'is_success' on every step; info keys: {keys}")
    flag = info["is_success"]
    if not isinstance(flag, bool | np.bool_) and not (isinstance(flag, numbers.Real) and flag in (0, 1)):
        fail(check, place, f"info['is_success'] must be a bool (or 0/1), got {type(flag).__name__} {show(flag)}")


def random_rollout(env: gym.Env, index: int, seed: int, max_steps: int | None, check: str) -> Rollout:
    """Run one random-policy episode, checking the observation and info contract on every step."""
    space = env.observation_space
    cap = DEFAULT_STEP_CAP if max_steps is None else max_steps
    out = Rollout(index=index, seed=seed)
    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    _check_observation(check, where(index, seed, 0), obs, space)
    out.observations.append({key: np.array(value, copy=True) for key, value in obs.items()})
    out.reset_info = dict(info)
    for step in range(1, cap + 1):
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        place = where(index, seed, step)
        _check_observation(check, place, obs, space)
        if not isinstance(reward, numbers.Real) or isinstance(reward, bool):
            fail(check, place, f"reward must be a real number, got {type(reward).__name__} {show(reward)}")
        _check_success_flag(check, place, info)
        out.observations.append({key: np.array(value, copy=True) for key, value in obs.items()})
        out.actions.append(action)
        out.rewards.append(float(reward))
        out.terminated.append(bool(terminated))
        out.truncated.append(bool(truncated))
        out.infos.append(dict(info))
        if terminated or truncated:
            break
    return out


def random_rollouts(env: gym.Env, n_episodes: int, seed: int, max_steps: int | None, check: str) -> list[Rollout]:
    """Episodes ``0..n_episodes-1``, episode ``i`` seeded with ``seed + i``."""
    return [random_rollout(env, i, seed + i, max_steps, check) for i in range(n_episodes)]


def first_rollout_difference(a: Rollout, b: Rollout) -> tuple[int, str] | None:
    """Earliest step at which two rollouts differ, and how: the first sign of unseeded randomness."""
    for step in range(max(len(a.observations), len(b.observations))):
        if step >= len(a.observations) or step >= len(b.observations):
            lengths = (len(a.observations) - 1, len(b.observations) - 1)
            return step, f"the episode lasted {lengths[0]} steps the first time and {lengths[1]} the second"
        if step > 0:
            for name in ("rewards", "terminated", "truncated"):
                first, second = getattr(a, name)[step - 1], getattr(b, name)[step - 1]
                if first != second:
                    return step, f"{name[:-1] if name == 'rewards' else name} {show(first)} the first time, " \
                                 f"{show(second)} the second"
        for key, value in a.observations[step].items():
            other = b.observations[step][key]
            if not np.array_equal(value, other):
                return step, f"observation[{key!r}] {show(value)} the first time, {show(other)} the second"
    return None
