"""VecEnv wrappers between instruction envs and SB3 algorithms.

:class:`VecHideKeys` hides Dict observation keys from the policy while keeping their values. Algorithms that
take a custom replay buffer keep "achieved" in the observation and ignore it in the networks
(:class:`~sb3_hir.extractors.KeySelectExtractor`); on-policy algorithms such as sb3-contrib's ``RecurrentPPO``
accept no custom buffer and build their networks from the env's observation space, so the key has to leave the
space itself. Relabeling, logging and DAgger still need it, so the hidden values travel in ``infos``::

    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.env_util import make_vec_env
    from sb3_hir.vec_env import VecHideKeys

    venv = VecHideKeys(make_vec_env("sb3_hir/MazeRunner-v0", n_envs=4), keys=("achieved",))
    model = RecurrentPPO("MultiInputLstmPolicy", venv)   # the policy sees only "obs" and "goals"
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

__all__ = ["VecHideKeys"]

from sb3_hir._validate import check_keys
from sb3_hir.extras import require

if TYPE_CHECKING:
    from imitation.data.types import Trajectory

TrajectoryT = TypeVar("TrajectoryT", bound="Trajectory")


class VecHideKeys(VecEnvWrapper):
    """Remove ``keys`` from a Dict observation space; their values go to ``infos`` instead.

    For learners that take no custom replay buffer (PPO, RecurrentPPO) or a policy that must not see a key: the policy
    never sees ``achieved``, while relabeling, logging and DAgger still read it from ``infos``.

    Where the hidden values are, per sub-env ``i``:

    * ``infos[i][VecHideKeys.INFO_KEY]`` (``"hidden_observation"``): ``{key: value}`` of the observation returned
      by this step (after an episode end that is the first observation of the next episode); the same for the
      observation returned by ``reset()`` in ``reset_infos[i]``.
    * ``infos[i][VecHideKeys.SOURCE_INFO_KEY]`` (``"source_hidden_observation"``): the hidden part of the
      observation the step's action was chosen on, so that every transition carries both of its ends.
    * ``infos[i][VecHideKeys.TERMINAL_INFO_KEY]`` (``"terminal_hidden_observation"``): the hidden part of
      ``infos[i]["terminal_observation"]``, which is itself stripped to the visible keys, so SB3's bootstrapping
      on truncation feeds the policy exactly its observation space.
    * :attr:`last_full_observation`: the full batched observation last returned, all keys.

    :meth:`full_observation`, :meth:`full_terminal_observation` and :meth:`restore_trajectory` put the pieces back
    together, e.g. to relabel episodes a DAgger collector recorded on top of this wrapper.

    :param venv: vectorized env with a Dict observation space.
    :param keys: keys to hide (a single key may be given as a str); at least one key must stay visible.
    """

    INFO_KEY = "hidden_observation"
    SOURCE_INFO_KEY = "source_hidden_observation"
    TERMINAL_INFO_KEY = "terminal_hidden_observation"

    def __init__(self, venv: VecEnv, keys: str | Iterable[str] = ("achieved",)) -> None:
        space = venv.observation_space
        if not isinstance(space, spaces.Dict):
            raise ValueError(f"venv must have a Dict observation space to hide keys from; got {space!r}")
        hidden = check_keys(keys, space.spaces)
        visible = {key: sub for key, sub in space.spaces.items() if key not in hidden}
        if not visible:
            raise ValueError(f"keys must leave at least one observation key visible; hiding all of {hidden}")
        self.hidden_keys: tuple[str, ...] = tuple(hidden)
        #: The hidden part of the full observation space.
        self.hidden_observation_space = spaces.Dict({key: space.spaces[key] for key in self.hidden_keys})
        #: The full observation space, as the wrapped venv has it.
        self.full_observation_space = space
        super().__init__(venv, observation_space=spaces.Dict(visible))
        self._last_full: dict[str, np.ndarray] | None = None

    # -- views -----------------------------------------------------------------------------------------------
    @property
    def last_full_observation(self) -> dict[str, np.ndarray]:
        """The batched observation last returned by ``reset()`` / ``step()``, hidden keys included."""
        if self._last_full is None:
            raise RuntimeError("call reset() before reading last_full_observation")
        return self._last_full

    def _visible(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in obs.items() if key not in self.hidden_keys}

    def _hidden(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        return {key: obs[key] for key in self.hidden_keys}

    @classmethod
    def full_observation(cls, obs: Mapping[str, np.ndarray], infos: list[dict[str, Any]]) -> dict[str, np.ndarray]:
        """Batched full observation from a visible batched ``obs`` and the ``infos`` (or ``reset_infos``) with it."""
        full = dict(obs)
        hidden = [info[cls.INFO_KEY] for info in infos]
        for key in hidden[0] if hidden else ():
            full[key] = np.stack([h[key] for h in hidden])
        return full

    @classmethod
    def full_terminal_observation(cls, info: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """One sub-env's full terminal observation, from the info of the step that ended its episode."""
        if "terminal_observation" not in info:
            raise ValueError("info has no 'terminal_observation': the step did not end an episode")
        return {**info["terminal_observation"], **info.get(cls.TERMINAL_INFO_KEY, {})}

    def restore_trajectory(self, trajectory: TrajectoryT) -> TrajectoryT:
        """An imitation trajectory recorded on top of this wrapper, with the hidden keys put back.

        Observation ``t < T`` comes from ``infos[t]``'s source values, the last one from the terminal values (a
        finished episode) or the current ones (an episode cut while running). Infos read back from a DAgger
        round file (JSON lists) work too.
        """
        types = require("imitation.data.types", "VecHideKeys.restore_trajectory")
        infos = trajectory.infos
        if infos is None or len(infos) == 0:
            raise ValueError("trajectory has no infos: it was not recorded with this wrapper's infos (or is empty)")
        if not isinstance(trajectory.obs, types.DictObs):
            raise ValueError(f"trajectory.obs must be a DictObs; got {type(trajectory.obs).__name__}")
        missing = [t for t, info in enumerate(infos) if self.SOURCE_INFO_KEY not in info]
        if missing:
            raise ValueError(
                f"infos {missing[:5]} lack {self.SOURCE_INFO_KEY!r}: the trajectory was not recorded on top of "
                "VecHideKeys (or its first step came before reset())"
            )
        last = infos[-1].get(self.TERMINAL_INFO_KEY) or infos[-1][self.INFO_KEY]
        full = dict(trajectory.obs.items())
        for key, sub in self.hidden_observation_space.spaces.items():
            values = [info[self.SOURCE_INFO_KEY][key] for info in infos] + [last[key]]
            full[key] = np.asarray(values, dtype=sub.dtype).reshape(len(values), *(sub.shape or ()))
        return dataclasses.replace(trajectory, obs=types.DictObs(full))

    # -- VecEnv API ------------------------------------------------------------------------------------------
    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        assert isinstance(obs, dict)
        self._last_full = obs
        infos = [dict(info) for info in self.venv.reset_infos]
        for i, info in enumerate(infos):
            info[self.INFO_KEY] = {key: np.array(obs[key][i]) for key in self.hidden_keys}
        self.reset_infos = infos
        return self._visible(obs)

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        assert isinstance(obs, dict)
        source = self._last_full
        self._last_full = obs
        for i, info in enumerate(infos):
            info[self.INFO_KEY] = {key: np.array(obs[key][i]) for key in self.hidden_keys}
            if source is not None:
                info[self.SOURCE_INFO_KEY] = {key: np.array(source[key][i]) for key in self.hidden_keys}
            terminal = info.get("terminal_observation")
            if isinstance(terminal, Mapping):
                info[self.TERMINAL_INFO_KEY] = self._hidden(terminal)
                info["terminal_observation"] = self._visible(terminal)
        # Auto-resets refresh the wrapped venv's reset_infos (DummyVecEnv does); mirror them for the ended episodes.
        reset_infos = list(self.reset_infos)
        for i in np.flatnonzero(dones).tolist():
            reset_info = dict(self.venv.reset_infos[i])
            reset_info[self.INFO_KEY] = dict(infos[i][self.INFO_KEY])
            reset_infos[i] = reset_info
        self.reset_infos = reset_infos
        return self._visible(obs), rewards, dones, infos
