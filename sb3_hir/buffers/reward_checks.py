"""GoalEnv mode's checks of the env's ``compute_reward``, made once, at its first use.

Relabeling rewards every relabeled transition with ``compute_reward``, so a missing or non-vectorized one fails deep
inside ``sample()``, and one that disagrees with what ``step()`` returned trains silently on two reward scales (the
most common HER bug). These checks say so once, naming the env, and cost the sample path nothing afterwards.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper

__all__ = [
    "GoalEnvRewards",
    "batch_rewards",
    "check_recorded_rewards",
    "env_class_name",
    "note_batch_call",
    "require_compute_reward",
]

#: How ``compute_reward`` is called, for the messages (HER's call).
_CALL = "compute_reward(achieved_goal, desired_goal, info)"
#: The innermost env in a gymnasium wrapper chain's ``str``: ``<Name instance>`` or ``<Name<spec id>>``.
_INNERMOST = re.compile(r"<(\w+)(?: instance>|<[^<>\s]+>>)>*$")


def env_class_name(env: Any) -> str:
    """Class name of the env under its wrappers (``MyGoalEnv``, not ``Monitor``), read without pickling it.

    In-process VecEnvs give ``unwrapped`` directly; a ``SubprocVecEnv`` would have to pickle the env to send it
    (a failure there kills the worker), so its gymnasium ``str`` is sent and parsed instead.
    """
    inner = env
    while isinstance(inner, VecEnvWrapper):
        inner = inner.venv
    if isinstance(inner, DummyVecEnv):
        return type(inner.envs[0].unwrapped).__name__
    try:
        text = str(env.env_method("__str__", indices=[0])[0])
    except Exception:  # only the message depends on it
        return f"the env in {type(env).__name__}"
    match = _INNERMOST.search(text)
    return match.group(1) if match else f"the env in {type(env).__name__}"


def require_compute_reward(env: Any, owner: str) -> None:
    """Refuse an env without ``compute_reward`` before calling it (a ``SubprocVecEnv`` worker would die of it)."""
    if not env.has_attr("compute_reward"):
        raise AttributeError(
            f"{env_class_name(env)} has no compute_reward: {owner} rewards relabeled transitions with the GoalEnv's "
            f"{_CALL}, called on a batch as by SB3's HerReplayBuffer; expected it on the env or one of its wrappers "
            "(gymnasium-robotics' GoalEnv API), found none"
        )


def batch_rewards(rewards: Any, achieved_goal: np.ndarray, env: Any) -> np.ndarray:
    """``compute_reward``'s answer for a batch as float32 ``(B,)``; anything but ``B`` rewards is refused.

    ``(B, 1)`` is taken, as SB3's HER takes it. A scalar is refused (but for a batch of one) although HER takes a
    numpy one: broadcast over the batch, it would train every transition on one transition's reward.
    """
    batch = len(achieved_goal)
    if isinstance(rewards, np.ndarray) and rewards.shape == (batch,):  # the usual answer: no further checks
        return rewards.astype(np.float32, copy=False)
    try:
        array = np.asarray(rewards, dtype=np.float32)
    except (TypeError, ValueError):
        array = None
    if array is not None and (array.shape in ((batch,), (batch, 1)) or (batch == 1 and array.size == 1)):
        return array.reshape(batch)
    expected = (
        f"{env_class_name(env)}.compute_reward must be vectorized: called with a batch of {batch} (achieved_goal and "
        f"desired_goal of shape {tuple(np.shape(achieved_goal))}, info a list of {batch} dicts), as by SB3's "
        f"HerReplayBuffer, it must return an array of {batch} rewards"
    )
    if array is None or array.ndim == 0:
        raise TypeError(f"{expected}; it returned {_describe(rewards)}")
    raise ValueError(f"{expected}; it returned {_describe(rewards)}")


def note_batch_call(error: BaseException, env: Any, achieved_goal: np.ndarray) -> None:
    """Tell, on an exception raised by the first call, that ``compute_reward`` was handed a batch (Python 3.11+)."""
    if hasattr(error, "add_note"):
        error.add_note(
            f"{env_class_name(env)}.compute_reward was called with a batch of {len(achieved_goal)} (achieved_goal and "
            f"desired_goal of shape {tuple(np.shape(achieved_goal))}, info a list of dicts), as by SB3's "
            "HerReplayBuffer: it must be vectorized"
        )


def check_recorded_rewards(
    env: Any,
    computed: np.ndarray,
    recorded: np.ndarray,
    rows: np.ndarray,
    env_indices: np.ndarray,
    steps: np.ndarray,
    copy_info_dict: bool,
    stacklevel: int = 2,
) -> bool:
    """Warn when ``compute_reward`` of recorded transitions is not the reward ``step()`` returned for them.

    Relabeled transitions are served ``compute_reward``'s rewards and recorded ones the env's: where they differ,
    the learner is trained on two scales. Both sides are raw (the buffer stores rewards before ``VecNormalize``).

    :return: whether they agree.
    """
    computed = np.asarray(computed, dtype=np.float32).reshape(-1)
    recorded = np.asarray(recorded, dtype=np.float32).reshape(-1)
    wrong = np.flatnonzero(~np.isclose(computed, recorded, rtol=1e-4, atol=1e-5, equal_nan=True))
    if not len(wrong):
        return True
    i = int(wrong[0])
    infos = "" if copy_info_dict else (
        "compute_reward was given empty infos (copy_info_dict=False, as HER): pass copy_info_dict=True if it reads "
        "info. "
    )
    warnings.warn(
        f"{env_class_name(env)}.compute_reward disagrees with the rewards its step() returned: step {int(steps[i])} "
        f"of an episode (buffer row {int(rows[i])}, sub-env {int(env_indices[i])}) was recorded with reward "
        f"{float(recorded[i])!r}, {_CALL} with its next achieved_goal and its desired_goal gives "
        f"{float(computed[i])!r} ({len(wrong)} of {len(computed)} recorded transitions checked disagree). Relabeled "
        "transitions get compute_reward's rewards and recorded ones step()'s, so the learner would see two reward "
        "scales. A wrapper may scale rewards on purpose (then relabeled rewards are unscaled); else make step() "
        f"return compute_reward's value. {infos}Checked once, at the first use of compute_reward",
        UserWarning,
        stacklevel=stacklevel + 1,
    )
    return False


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} ({value.dtype})"
    if isinstance(value, np.generic):
        return f"numpy.{type(value).__name__} {value}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} items"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


class GoalEnvRewards:
    """The env's ``compute_reward`` as HER calls it (one batched call on the first sub-env), what GoalEnv serving
    asks for relabeled rewards (``serving.EnvRewards``). It holds the env, so the serving never holds the buffer; it
    is pickled without it (VecEnvs often cannot be pickled), and ``set_env`` gives it back.

    :param env: the training VecEnv, or None until ``set_env``.
    :param copy_info_dict: whether the rows' infos are stored (and handed to ``compute_reward``).
    :param owner: the buffer's class name, for the messages.
    """

    def __init__(self, env: Any, copy_info_dict: bool, owner: str) -> None:
        self.env = env
        self.copy_info_dict = copy_info_dict
        self.owner = owner
        #: whether a call has succeeded with the current env (a failing first call is told it got a batch).
        self.answered = False

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "env": None, "answered": False}

    def set_env(self, env: Any) -> None:
        self.env = env
        self.answered = False

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, infos: Any) -> np.ndarray:
        """The env's ``compute_reward`` on a batch, as float32 ``(B,)``."""
        if self.env is None:
            raise RuntimeError(
                f"{self.owner} needs the env to compute rewards for a GoalEnv: SB3 passes it at construction and "
                "load_replay_buffer() calls set_env(env); for a buffer used by hand pass env=... or call set_env(env)"
            )
        try:
            rewards = self.env.env_method("compute_reward", achieved_goal, desired_goal, infos, indices=[0])[0]
        except Exception as error:
            if not self.answered:  # the env's first call: it may not expect a batch
                note_batch_call(error, self.env, achieved_goal)
            raise
        self.answered = True
        return batch_rewards(rewards, achieved_goal, self.env)
