"""Turn a single-goal GoalEnv into a k-goal instruction env with MazeRunner's contract.

gymnasium-robotics' GoalEnvs (PointMaze, AntMaze, Fetch, ...) expose ``observation``, ``achieved_goal`` and
``desired_goal`` and judge success themselves. :class:`InstructionWrapper` keeps that success test and the env's
dynamics, and only changes which goal is installed: it samples an instruction of ``k`` goals at reset, installs
the first one in the env, and installs the next one whenever the env's own test says the active goal is reached.
The result is a drop-in for MazeRunner: the replay buffer, the relabelers, DAgger and the CLI work on it
unchanged.

How goals are sampled, installed and tested differs per env family, so it is supplied by a :class:`GoalSampler`
(env plugins provide one, e.g. ``sb3-hir-robotics``'s PointMaze sampler); nothing here knows about a particular
env. :class:`DesiredGoalSampler` is the generic k = 1 sampler: the instruction is the env's own goal.

Goal spaces: ``achieved_goal`` and ``desired_goal`` may be a 1-D ``Box``, a 1-D ``MultiBinary(n)`` or
``MultiDiscrete([n_1, ..., n_d])``, or a ``Discrete(n)`` (one integer, goal_dim 1), so SB3's ``BitFlippingEnv``
works as well as gymnasium-robotics' envs; one goal is always a ``(goal_dim,)`` vector. Integer goals stay
integers, in a signed dtype that also holds the mask (int8 for MultiBinary, int16 for uint8 goals), and are
compared exactly: the wrapper declares the built-in ``"exact"`` goal spec with its mask value and goal reward as
:attr:`InstructionWrapper.goal_spec`, which reproduces an env whose success test is equality. Float goals keep the
env's dtype; their goal spec must know the env's success radius (``sb3-hir-robotics``'s ``"distance-threshold"``).

Mask value: reached goals are overwritten with ``mask_value`` in every component, as in MazeRunner. The mask must
lie outside the goal range or a real goal would read as "reached": the wrapper takes ``mask_value`` from the
argument, else from ``sampler.mask_value``, else -1, or one below the lowest bound when the goal range reaches
down to -1 (:func:`goal_space_mask_value`; -4 for ``Discrete(n, start=-3)``). It rejects a mask inside finite
``desired_goal`` bounds (and a non-integer mask for integer goals) and raises as soon as a sampled goal equals the
mask. Goal specs used for relabeling must share the same mask value and ``goal_reward`` (``"distance-threshold"``
reads both from the wrapper).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_hir._validate import check_int, check_number
from sb3_hir.contract import RESET_GOALS_OPTION
from sb3_hir.goals import ExactGoalSpec, GoalSpec

__all__ = [
    "ACCEPTED_GOAL_SPACES",
    "GOAL_ENV_KEYS",
    "DesiredGoalSampler",
    "GoalSampler",
    "InstructionWrapper",
    "check_goal_env",
    "env_success",
    "goal_box",
    "goal_space_mask_value",
]

#: The observation keys of gymnasium-robotics' GoalEnv API.
GOAL_ENV_KEYS: tuple[str, str, str] = ("observation", "achieved_goal", "desired_goal")

#: The goal spaces :func:`check_goal_env` accepts, for error messages.
ACCEPTED_GOAL_SPACES = (
    "a 1-D Box (goal_dim,), a 1-D MultiBinary(n), a 1-D MultiDiscrete([n_1, ..., n_d]) or a Discrete(n)"
)

# Second entropy word of the wrapper's generator, so that reset(seed=s) gives goal draws independent of the
# env's own stream seeded with the same s.
_STREAM = 0x48_49_52_31


@runtime_checkable
class GoalSampler(Protocol):
    """How one env family samples, installs and tests goals (supplied by env plugins).

    Every method receives the :class:`InstructionWrapper` as ``env``: ``env.unwrapped`` is the GoalEnv and
    ``env.env_observation`` its latest Dict observation. An optional attribute ``mask_value`` (float) proposes a
    mask value outside the family's goal range; an optional ``installs_goals = True`` says that :meth:`install`
    makes *any* goal the env's (not only one :meth:`sample` drew), so the wrapper can take an instruction at reset.
    """

    def sample(self, env: InstructionWrapper, rng: np.random.Generator, k: int) -> np.ndarray:
        """``k`` distinct goals, shape ``(k, goal_dim)``, drawn only from ``rng`` (called after the env's reset)."""
        ...

    def install(self, env: InstructionWrapper, goal: np.ndarray) -> None:
        """Make ``goal`` the env's desired goal, so that its own success test applies to it."""
        ...

    def reached(self, env: InstructionWrapper, achieved: np.ndarray, goal: np.ndarray, info: dict[str, Any]) -> bool:
        """The env's own success test for the installed ``goal`` after a step (``info`` is the env's info)."""
        ...


def env_success(env: gym.Env, achieved: np.ndarray, goal: np.ndarray, info: Mapping[str, Any],
                success_reward: float | None = None) -> bool:
    """The GoalEnv's own success test: ``info["is_success"]`` (Fetch, Hand), else ``info["success"]`` (mazes).

    Envs that report neither are tested with ``compute_reward(achieved, goal, info) == success_reward`` (0 for
    gymnasium-robotics' sparse ``-1 / 0`` rewards), which must then be given.
    """
    for key in ("is_success", "success"):
        if key in info:
            return bool(np.asarray(info[key]).item())
    if success_reward is None:
        raise ValueError(
            "the env's info has neither 'is_success' nor 'success'; pass success_reward (the compute_reward value "
            "of a reached goal, e.g. 0.0 for sparse -1/0 rewards) to test success with compute_reward"
        )
    reward = env.unwrapped.compute_reward(achieved, goal, dict(info))  # type: ignore[attr-defined]
    return bool(np.asarray(reward).item() == success_reward)


def _is_integer(dtype: Any) -> bool:
    return np.dtype(dtype).kind in "biu"


def goal_box(space: spaces.Space, name: str = "the goal space") -> spaces.Box:
    """The range of one goal of ``space`` as a 1-D Box ``(goal_dim,)`` of the space's dtype.

    Every accepted goal space becomes the same kind of object, so the wrapper handles them alike:
    ``Discrete(n, start)`` is one integer in ``[start, start + n - 1]``, ``MultiBinary(n)`` n integers in ``[0, 1]``,
    ``MultiDiscrete(nvec, start)`` ``len(nvec)`` integers in ``[start, start + nvec - 1]``; a 1-D Box is itself.

    :param name: how the error message names ``space``.
    :raises ValueError: for any other space, or a multi-dimensional one.
    """
    if isinstance(space, spaces.Discrete):
        low = np.full(1, space.start, dtype=space.dtype)
        return spaces.Box(low, low + (space.n - 1), dtype=space.dtype)
    if isinstance(space, spaces.Box | spaces.MultiBinary | spaces.MultiDiscrete) and len(space.shape) == 1:
        if isinstance(space, spaces.Box):
            return space
        if isinstance(space, spaces.MultiBinary):
            low = np.zeros(space.shape, dtype=space.dtype)
            return spaces.Box(low, low + 1, dtype=space.dtype)
        low = np.asarray(space.start, dtype=space.dtype)
        return spaces.Box(low, low + (space.nvec - 1), dtype=space.dtype)
    shown = " ".join(repr(space).split())  # one line, also for a 2-D nvec
    shape = "" if space.shape is None else f" of shape {space.shape}"
    raise ValueError(f"{name} must be {ACCEPTED_GOAL_SPACES}; got {shown}{shape}")


def goal_space_mask_value(space: spaces.Space) -> float:
    """-1, unless the goal range of ``space`` reaches down to -1: then the first integer below its lowest bound.

    A default mask no real goal can equal (integer-valued, so it suits integer goals too). Unbounded Boxes keep -1.
    """
    low = goal_box(space).low
    if np.all(np.isfinite(low)) and np.min(low) <= -1:
        return float(np.floor(np.min(low)) - 1)
    return -1.0


def check_goal_env(env: gym.Env) -> tuple[spaces.Box, spaces.Box]:
    """Check the GoalEnv API structurally (no gymnasium-robotics import) and return the goal spaces.

    :return: ``(achieved_goal space, desired_goal space)`` as 1-D Boxes of one goal's range (see
        :func:`goal_box`), of the same shape and both integer or both float.
    """
    space = env.observation_space
    if not isinstance(space, spaces.Dict):
        raise ValueError(
            f"env must be a GoalEnv with a Dict observation space holding keys {list(GOAL_ENV_KEYS)}; "
            f"got observation_space {space!r}"
        )
    missing = [key for key in GOAL_ENV_KEYS if key not in space.spaces]
    if missing:
        raise ValueError(
            f"env is not a GoalEnv: its observation space is missing the key(s) {missing}; "
            f"keys present: {list(space.spaces)}; a GoalEnv has {list(GOAL_ENV_KEYS)}"
        )
    if not callable(getattr(env.unwrapped, "compute_reward", None)):
        raise ValueError(
            f"env is not a GoalEnv: {type(env.unwrapped).__name__} has no compute_reward(achieved_goal, "
            "desired_goal, info) method"
        )
    achieved, desired = (goal_box(space[key], f"env.observation_space[{key!r}]") for key in GOAL_ENV_KEYS[1:])
    if achieved.shape != desired.shape:
        raise ValueError(
            f"observation_space['achieved_goal'] and ['desired_goal'] must have the same shape; got "
            f"{achieved.shape} and {desired.shape}"
        )
    if _is_integer(achieved.dtype) != _is_integer(desired.dtype):
        raise ValueError(
            f"observation_space['achieved_goal'] and ['desired_goal'] must both hold integers or both floats, so "
            f"that goals compare as the env compares them; got dtypes {achieved.dtype} and {desired.dtype}"
        )
    return achieved, desired


class DesiredGoalSampler:
    """The env's own goal as a one-goal instruction: the generic k = 1 adapter for any GoalEnv.

    ``install`` is a no-op (the goal is already the env's), so the wrapper cannot take another instruction at
    reset, and ``reached`` is :func:`env_success` on the env's own
    ``achieved_goal`` and the goal in the env's format (:meth:`InstructionWrapper.env_goal`).

    :param success_reward: see :func:`env_success`; only needed for envs whose info reports neither
        ``is_success`` (Fetch, Hand, SB3's ``BitFlippingEnv``) nor ``success`` (mazes): pass the ``compute_reward``
        value of a reached goal, 0.0 for the usual sparse ``-1 / 0`` reward.
    :param mask_value: proposed mask value; None lets the wrapper pick one outside the goal range (see the module
        docstring).
    """

    def __init__(self, success_reward: float | None = None, mask_value: float | None = None) -> None:
        self.success_reward = success_reward
        self.mask_value = mask_value

    def sample(self, env: InstructionWrapper, rng: np.random.Generator, k: int) -> np.ndarray:
        if k != 1:
            raise ValueError(
                f"DesiredGoalSampler provides the env's single desired goal, so num_goals must be 1; got {k}. "
                "Use an env plugin's sampler for k-goal instructions"
            )
        return np.reshape(env.env_observation["desired_goal"], (1, env.goal_dim)).copy()

    def install(self, env: InstructionWrapper, goal: np.ndarray) -> None:
        return None

    def reached(self, env: InstructionWrapper, achieved: np.ndarray, goal: np.ndarray, info: dict[str, Any]) -> bool:
        # The env's own formats: its compute_reward may want a plain int for a Discrete goal space.
        return env_success(env, env.env_observation["achieved_goal"], env.env_goal(goal), info, self.success_reward)


def _check_sampler(sampler: Any) -> None:
    missing = [name for name in ("sample", "install", "reached") if not callable(getattr(sampler, name, None))]
    if missing:
        raise ValueError(
            f"sampler must implement the GoalSampler protocol (sample, install, reached); "
            f"{type(sampler).__name__} lacks {missing}"
        )


def _checked_mask_value(env: gym.Env, sampler: Any, desired_space: spaces.Box, mask_value: float | None,
                        goal_reward: float, step_reward: float, integer: bool) -> float:
    """The mask of reached goals (given, the sampler's, or the space's default), checked to never equal a goal."""
    if mask_value is None:
        mask_value = getattr(sampler, "mask_value", None)
    if mask_value is None:
        mask_value = goal_space_mask_value(desired_space)
    for name, value in (("mask_value", mask_value), ("goal_reward", goal_reward), ("step_reward", step_reward)):
        check_number(value, name)
    if integer and not float(mask_value).is_integer():
        raise ValueError(
            f"mask_value must be an integer for integer goals (observation_space['desired_goal'] = "
            f"{env.observation_space['desired_goal']!r}), so that it compares exactly; got {mask_value!r}"
        )
    low, high = desired_space.low, desired_space.high
    if np.all(np.isfinite(low) & np.isfinite(high)) and np.all((low <= mask_value) & (mask_value <= high)):
        raise ValueError(
            f"mask_value={mask_value} lies inside the desired_goal bounds [{low}, {high}], so a real goal could "
            "equal the mask; choose a mask_value outside them"
        )
    return mask_value


def _goal_dtypes(achieved_space: spaces.Box, desired_space: spaces.Box, mask_value: float,
                 integer: bool) -> tuple[np.dtype, np.dtype, np.ndarray, np.ndarray]:
    """Goal and achieved dtypes, and the achieved key's bounds (1, d), wide enough to hold the mask."""
    d = int(desired_space.shape[0])
    achieved_low, achieved_high = achieved_space.low.reshape(1, d), achieved_space.high.reshape(1, d)
    if not integer:
        return np.dtype(desired_space.dtype), np.dtype(achieved_space.dtype), achieved_low, achieved_high
    # Unsigned or tiny dtypes cannot hold a mask below the range: widen to a signed dtype that holds both.
    dtype = np.result_type(desired_space.dtype, achieved_space.dtype, np.min_scalar_type(mask_value))
    if not _is_integer(dtype):
        raise ValueError(
            f"mask_value={mask_value} and goals of dtype {desired_space.dtype} fit no common integer "
            "dtype; choose a mask_value just outside the goal range"
        )
    return (np.dtype(dtype), np.dtype(dtype), np.minimum(achieved_low.astype(dtype), mask_value),
            np.maximum(achieved_high.astype(dtype), mask_value))


class InstructionWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A k-goal instruction over a single-goal GoalEnv, with MazeRunner's observation, reward and termination.

    So that existing GoalEnvs (gymnasium-robotics, SB3's BitFlippingEnv) become k-goal instruction tasks for the buffer,
    the relabelers, DAgger and the checks without rewriting the env.

    Observation: Dict ``"obs"`` = the env's ``observation``; ``"goals"`` (k, goal_dim) with reached goals
    overwritten by ``mask_value``; ``"achieved"`` (1, goal_dim) = the env's ``achieved_goal``. Float goals keep the
    env's dtype (float64 for gymnasium-robotics), so the env's success test and a goal spec's distance see the same
    numbers; integer goals (MultiBinary, MultiDiscrete, Discrete, integer Box) get a signed dtype that holds both
    their range and the mask, and ``"goals"`` / ``"achieved"`` bounds include the mask.

    Reward ``step_reward`` on every step plus ``goal_reward`` on the step the active goal is reached by the env's
    own test (``sampler.reached``); then the next goal is installed in the env and checked from the next step on.
    Terminated when all k are reached; the env's own termination passes through except on a step that reaches a
    non-final goal (episodic GoalEnvs terminate on success, the instruction goes on); truncation (``TimeLimit``)
    passes through. ``info`` keeps the env's keys, with ``"is_success"`` (all k reached) and ``"goals_reached"``
    overwritten, the env's own reward in ``"env_reward"`` and its own ``"is_success"`` in ``"env_is_success"``.

    ``reset(options={"goals": goals})`` plays the episode under ``goals`` (k, goal_dim) instead of a drawn
    instruction; the option is taken out before the env's reset, and the instruction is still drawn (and
    discarded), so one seed gives the same episode under any instruction.

    Goals are drawn from :attr:`np_random`, the wrapper's own generator, seeded by ``reset(seed=...)``
    independently of the env's stream. ``reset(seed=...)`` also seeds ``env.unwrapped.np_random`` before the env's
    reset, for envs with their own seeding that never do (SB3's ``BitFlippingEnv``), as gymnasium's env checker
    and code drawing from it expect; an env that seeds it itself reseeds it to the same state.

    :param env: a GoalEnv (Dict observation with ``observation``, ``achieved_goal``, ``desired_goal`` and a
        ``compute_reward`` method), usually already wrapped in ``TimeLimit`` by ``gymnasium.make``.
    :param sampler: the env family's :class:`GoalSampler`.
    :param num_goals: k >= 1.
    :param mask_value: value of a reached goal; None takes ``sampler.mask_value``, else
        :func:`goal_space_mask_value` (-1 unless the goal range reaches it); an integer for integer goals.
    :param goal_reward: reward for reaching the active goal (MazeRunner: 1.0).
    :param step_reward: reward of every step on top (0.0: 0/1 rewards; -1.0: HER's -1/0 scale, the Fetch envs').
    :param require_distinct: reject instructions with repeated goals (a repeated goal would be reached twice
        without moving).
    """

    @property
    def accepts_reset_goals(self) -> bool:
        """``reset(options={"goals": ...})`` is honoured when the sampler installs any goal (see
        :mod:`sb3_hir.contract`)."""
        return bool(getattr(self.sampler, "installs_goals", False))

    def __init__(
        self,
        env: gym.Env,
        sampler: GoalSampler,
        num_goals: int = 3,
        mask_value: float | None = None,
        goal_reward: float = 1.0,
        require_distinct: bool = True,
        step_reward: float = 0.0,
    ) -> None:
        check_int(num_goals, "num_goals", 1)
        _check_sampler(sampler)
        achieved_space, desired_space = check_goal_env(env)
        gym.utils.RecordConstructorArgs.__init__(
            self, sampler=sampler, num_goals=num_goals, mask_value=mask_value, goal_reward=goal_reward,
            require_distinct=require_distinct, step_reward=step_reward,
        )
        gym.Wrapper.__init__(self, env)
        integer = _is_integer(desired_space.dtype)
        mask = _checked_mask_value(env, sampler, desired_space, mask_value, goal_reward, step_reward, integer)
        self.sampler = sampler
        self.num_goals = int(num_goals)
        self.mask_value: float = int(mask) if integer else float(mask)
        self.goal_reward = float(goal_reward)
        self.step_reward = float(step_reward)
        self.require_distinct = bool(require_distinct)
        self.goal_dim = int(desired_space.shape[0])
        k, d = self.num_goals, self.goal_dim
        self.goal_dtype, self.achieved_dtype, achieved_low, achieved_high = _goal_dtypes(
            achieved_space, desired_space, self.mask_value, integer)
        low, high = desired_space.low, desired_space.high
        #: The goal spec relabeling must use, when the wrapper knows it: exact equality for integer goals (what
        #: ``sb3_hir.testing.check_instruction_env`` checks by default); None for float goals, whose tolerance is
        #: the env's success radius (env plugins set it, e.g. sb3-hir-robotics' ``declare_goal_spec``).
        self.goal_spec: GoalSpec | None = (
            ExactGoalSpec(mask_value=self.mask_value, goal_reward=self.goal_reward, step_reward=self.step_reward)
            if integer
            else None
        )
        self._desired_space = env.observation_space["desired_goal"]
        self._obs_dtype = env.observation_space["observation"].dtype

        goal_low = np.minimum(np.broadcast_to(low, (k, d)).astype(self.goal_dtype), self.mask_value)
        goal_high = np.maximum(np.broadcast_to(high, (k, d)).astype(self.goal_dtype), self.mask_value)
        self.observation_space = spaces.Dict(
            {
                "achieved": spaces.Box(
                    achieved_low.astype(self.achieved_dtype), achieved_high.astype(self.achieved_dtype),
                    dtype=self.achieved_dtype,
                ),
                "goals": spaces.Box(goal_low, goal_high, dtype=self.goal_dtype),
                "obs": env.observation_space["observation"],
            }
        )
        self._goal_rng: np.random.Generator | None = None
        self._goals = np.full((k, d), self.mask_value, dtype=self.goal_dtype)
        self._goals_obs = self._goals.copy()
        self._num_reached = 0
        self._env_obs: dict[str, Any] | None = None

    # -- randomness ------------------------------------------------------------------------------------------
    @property
    def np_random(self) -> np.random.Generator:
        """The wrapper's own generator, from which every instruction is drawn (not the env's)."""
        if self._goal_rng is None:
            self._goal_rng = np.random.default_rng()
        return self._goal_rng

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self._goal_rng = value

    # -- state -----------------------------------------------------------------------------------------------
    @property
    def env_observation(self) -> dict[str, Any]:
        """The env's latest Dict observation (``observation``, ``achieved_goal``, ``desired_goal``)."""
        if self._env_obs is None:
            raise RuntimeError("call reset() before reading env_observation")
        return self._env_obs

    @property
    def goals(self) -> np.ndarray:
        """This episode's instruction, unmasked, shape ``(k, goal_dim)`` (a copy)."""
        return self._goals.copy()

    @property
    def goals_reached(self) -> int:
        """Goals reached so far; the active goal is ``goals[goals_reached]``."""
        return self._num_reached

    def env_goal(self, goal: np.ndarray) -> Any:
        """``goal`` (goal_dim,) in the env's own format, e.g. for its ``compute_reward``: a Python int for a
        ``Discrete`` goal space (as its observations carry it), else an array of its ``desired_goal`` dtype."""
        if isinstance(self._desired_space, spaces.Discrete):
            return int(np.asarray(goal).reshape(-1)[0])
        return np.asarray(goal).reshape(self._desired_space.shape).astype(self._desired_space.dtype)

    def _check_env_obs(self, obs: Any) -> dict[str, Any]:
        if not isinstance(obs, Mapping) or any(key not in obs for key in GOAL_ENV_KEYS):
            present = list(obs) if isinstance(obs, Mapping) else type(obs).__name__
            raise ValueError(f"the env returned an observation without the GoalEnv keys {list(GOAL_ENV_KEYS)}: "
                             f"{present}")
        return dict(obs)

    def _sample_instruction(self) -> np.ndarray:
        k, d = self.num_goals, self.goal_dim
        name = type(self.sampler).__name__
        raw = np.asarray(self.sampler.sample(self, self.np_random, k))
        if raw.shape != (k, d):
            raise ValueError(f"{name}.sample returned goals of shape {raw.shape}; "
                             f"expected (num_goals, goal_dim) = {(k, d)}")
        if not np.all(np.isfinite(raw)):
            raise ValueError(f"{name}.sample returned non-finite goals: {raw}")
        goals = raw.astype(self.goal_dtype, copy=True)
        if _is_integer(self.goal_dtype) and not np.array_equal(goals, raw):
            raise ValueError(f"{name}.sample returned goals {raw.tolist()} that are not integers of the goal dtype "
                             f"{self.goal_dtype}; integer goal spaces need integer goals")
        if np.any(np.all(goals == self.mask_value, axis=-1)):
            raise ValueError(
                f"{type(self.sampler).__name__}.sample returned a goal equal to mask_value={self.mask_value}, which "
                "would read as already reached; choose a mask_value outside the goal range"
            )
        if self.require_distinct and len(np.unique(goals, axis=0)) < k:
            raise ValueError(
                f"{type(self.sampler).__name__}.sample returned repeated goals {goals.tolist()}; it must produce "
                f"num_goals={k} distinct goals"
            )
        return goals

    def _given_instruction(self, given: Any) -> np.ndarray:
        k, d = self.num_goals, self.goal_dim
        name = f"options[{RESET_GOALS_OPTION!r}]"
        raw = np.asarray(given)
        if raw.shape != (k, d) or not np.issubdtype(raw.dtype, np.number) or not np.all(np.isfinite(raw)):
            raise ValueError(f"{name} must be {k} finite goals of dimension {d}, shape ({k}, {d}); got shape "
                             f"{raw.shape}, dtype {raw.dtype}")
        goals = raw.astype(self.goal_dtype, copy=True)
        if _is_integer(self.goal_dtype) and not np.array_equal(goals, raw):
            raise ValueError(f"{name} = {raw.tolist()} must hold integers of the goal dtype {self.goal_dtype}")
        if np.any(np.all(goals == self.mask_value, axis=-1)):
            raise ValueError(f"{name} holds the mask value {self.mask_value}, which reads as an already reached goal")
        return goals

    def _observation(self) -> dict[str, np.ndarray]:
        env_obs = self.env_observation
        return {
            "achieved": np.array(env_obs["achieved_goal"], dtype=self.achieved_dtype).reshape(1, self.goal_dim),
            "goals": self._goals_obs.copy(),
            # np.array: a Discrete observation (a plain int) becomes a 0-d array of the space's dtype
            "obs": np.array(env_obs["observation"], dtype=self._obs_dtype),
        }

    # -- gymnasium API ---------------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the env, then draw an instruction from :attr:`np_random` and install its first goal."""
        if seed is not None:
            self._goal_rng = np.random.default_rng([int(seed), _STREAM])
            gym.Env.reset(self.unwrapped, seed=seed)  # what super().reset(seed=seed) does (see the class docstring)
        given = None
        if options is not None and RESET_GOALS_OPTION in options:
            if not self.accepts_reset_goals:
                raise ValueError(
                    f"options[{RESET_GOALS_OPTION!r}] needs a goal sampler that installs any goal in the env "
                    f"(installs_goals = True); {type(self.sampler).__name__} does not"
                )
            options = dict(options)
            given = options.pop(RESET_GOALS_OPTION)
        obs, info = self.env.reset(seed=seed, options=options or None)
        self._env_obs = self._check_env_obs(obs)
        self._goals = self._sample_instruction()  # drawn even when given: the same stream under any instruction
        if given is not None:
            self._goals = self._given_instruction(given)
        self._goals_obs = self._goals.copy()
        self._num_reached = 0
        self.sampler.install(self, self._goals[0].copy())
        info = dict(info)
        if "is_success" in info:
            info["env_is_success"] = info["is_success"]
        info["is_success"] = False
        info["goals_reached"] = 0
        return self._observation(), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        k = self.num_goals
        if self._env_obs is None or self._num_reached >= k:
            raise RuntimeError("call reset() before step() (also after the instruction was completed)")
        obs, env_reward, env_terminated, truncated, info = self.env.step(action)
        self._env_obs = self._check_env_obs(obs)
        active = self._goals[self._num_reached]
        reached = bool(self.sampler.reached(self, np.asarray(obs["achieved_goal"]), active.copy(), info))
        reward = self.step_reward
        if reached:
            self._goals_obs[self._num_reached] = self.mask_value
            self._num_reached += 1
            reward += self.goal_reward
            if self._num_reached < k:
                self.sampler.install(self, self._goals[self._num_reached].copy())
        success = self._num_reached == k
        terminated = success or (bool(env_terminated) and not reached)
        info = dict(info)
        if "is_success" in info:
            info["env_is_success"] = info["is_success"]
        info["env_reward"] = float(np.asarray(env_reward).item())
        info["is_success"] = success
        info["goals_reached"] = self._num_reached
        return self._observation(), reward, terminated, bool(truncated), info
