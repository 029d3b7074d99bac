"""DAgger collection as a VecEnv wrapper, and DAgger trainers whose update step is imitation's ``bc.BC``.

:class:`DAggerCollector` plays the role of imitation's ``InteractiveTrajectoryCollector``: ``step(expert_actions)``
executes the expert's action with probability beta (per sub-env and step) and the learner's otherwise, and
labels every step with the expert's action. Unlike imitation's collector it handles Dict observations,
carries a recurrent learner's hidden state per sub-env, keeps ``terminated`` and ``truncated`` apart, never
drops an unfinished episode silently, and persists episodes in batches (one compressed ``.npz`` per round or
per N episodes, written to a temporary file and renamed) instead of one HuggingFace dataset per episode.

:class:`DAggerTrainer` / :class:`SimpleDAggerTrainer` keep imitation's API (rounds,
``create_trajectory_collector``, ``extend_and_update``, ``save_trainer``, :func:`reconstruct_trainer`); their
checkpoints are JSON plus tensor-only ``.pt`` files, so they reload with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import json
import logging
import math
import os
import pathlib
import re
import uuid
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch as th

from sb3_hir.extras import require

require("imitation", "sb3_hir.dagger")  # one line naming the 'dagger' extra, not a traceback from deep inside

from imitation.algorithms import base as algo_base
from imitation.algorithms import bc
from imitation.algorithms import dagger as imitation_dagger
from imitation.data import rollout, types
from imitation.util import logger as imit_logger
from stable_baselines3.common import utils as sb3_utils
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from sb3_hir import plugins
from sb3_hir.atomic import atomic_write

__all__ = [
    "CorruptRoundFileError",
    "DAggerCollector",
    "DAggerTrainer",
    "DAggerTrajectory",
    "NeedsDemosError",
    "PolicyRunner",
    "SimpleDAggerTrainer",
    "load_round_dir",
    "load_trajectories",
    "reconstruct_policy",
    "reconstruct_trainer",
    "relabel_trajectory",
    "round_files",
    "save_trajectories",
    "trajectory_fingerprint",
]

logger = logging.getLogger(__name__)

#: Format tag of round files; bumped on incompatible changes.
ROUND_FILE_FORMAT = "sb3_hir.dagger.round/1"
#: Format tag of trainer checkpoints (``checkpoint-*.json``).
CHECKPOINT_FORMAT = "sb3_hir.dagger.trainer/1"
#: SB3 VecEnv info keys.
TIMEOUT_KEY = "TimeLimit.truncated"
TERMINAL_OBS_KEY = "terminal_observation"

_ROUND_FILE_RE = re.compile(r"^(?P<prefix>.*?)demos-(?P<index>\d+)-(?P<token>[0-9a-f]+)\.npz$")

UnfinishedPolicy = Literal["complete", "report"]
RelabelLabels = Literal["auto", "expert", "executed"]


class CorruptRoundFileError(ValueError):
    """A round file cannot be read; ``path`` names it."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = pathlib.Path(path)
        super().__init__(
            f"round file {str(self.path)!r} is corrupt or truncated ({reason}); delete or move it, or load the "
            "remaining files with skip_corrupt=True"
        )


class NeedsDemosError(imitation_dagger.NeedsDemosException, ValueError):
    """Training was asked for before the current round has demonstrations."""


# ----------------------------------------------------------------------------------------------- trajectories
@dataclasses.dataclass(frozen=True, eq=False)
class DAggerTrajectory(types.TrajectoryWithRew):
    """imitation's ``TrajectoryWithRew`` (``acts`` are the expert labels) plus what DAgger knows besides.

    ``terminal`` means terminated; a time-limit cut is ``truncated`` instead, and an episode still running
    when its round ended (reported, not completed) has ``complete=False`` and neither flag.
    """

    truncated: bool = False
    complete: bool = True
    #: Actions actually sent to the env (expert's or learner's), shape of ``acts``.
    executed_acts: np.ndarray | None = None
    #: bool (T,): True where the learner's action was executed.
    learner_mask: np.ndarray | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("executed_acts", "learner_mask"):
            value = getattr(self, name)
            if value is not None and len(value) != len(self.acts):
                raise ValueError(f"{name} must have one entry per action ({len(self.acts)}), got {len(value)}")


def _as_dagger_trajectory(traj: types.Trajectory) -> DAggerTrajectory:
    if isinstance(traj, DAggerTrajectory):
        return traj
    if not isinstance(traj, types.TrajectoryWithRew):
        raise ValueError(
            f"trajectories must be imitation TrajectoryWithRew (rewards included), got {type(traj).__name__}"
        )
    timeout = bool(traj.infos is not None and len(traj.infos) and traj.infos[-1].get(TIMEOUT_KEY, False))
    return DAggerTrajectory(
        obs=traj.obs,
        acts=traj.acts,
        infos=traj.infos,
        terminal=bool(traj.terminal) and not timeout,
        rews=traj.rews,
        truncated=timeout,
        complete=bool(traj.terminal) or timeout,
        executed_acts=traj.acts,
        learner_mask=np.zeros(len(traj.acts), dtype=bool),
    )


def trajectory_fingerprint(traj: types.Trajectory) -> str:
    """A content hash of observations and labels, to check that an episode is stored exactly once."""
    digest = hashlib.sha1()
    obs = traj.obs
    parts = [obs.get(k) for k in sorted(obs.keys())] if isinstance(obs, types.DictObs) else [obs]
    for part in [*parts, traj.acts]:
        digest.update(np.ascontiguousarray(part).tobytes())
    return digest.hexdigest()


# ----------------------------------------------------------------------------------------------- round files
def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return repr(value)


def _json_bytes(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value, default=_json_default).encode(), dtype=np.uint8)


def save_trajectories(
    path: str | os.PathLike[str],
    trajectories: Sequence[types.Trajectory],
    *,
    meta: Mapping[str, Any] | None = None,
    save_infos: bool = True,
) -> pathlib.Path:
    """Write trajectories to one compressed ``.npz`` atomically; no pickles, so loading runs no code.

    Arrays are concatenated over episodes (``lengths`` splits them again); the JSON header and infos are stored
    as bytes. ``infos`` go through JSON: numpy values become lists/numbers, other objects their ``repr``, and the
    duplicated ``terminal_observation`` is dropped.
    """
    path = pathlib.Path(path)
    trajs = [_as_dagger_trajectory(t) for t in trajectories]
    if not trajs:
        raise ValueError("trajectories must hold at least one trajectory")
    dict_obs = isinstance(trajs[0].obs, types.DictObs)
    if any(isinstance(t.obs, types.DictObs) != dict_obs for t in trajs):
        raise ValueError("trajectories must all have Dict observations (DictObs) or all array observations")
    arrays: dict[str, np.ndarray] = {"lengths": np.array([len(t) for t in trajs], dtype=np.int64)}
    if dict_obs:
        keys = list(trajs[0].obs.keys())
        for key in keys:
            arrays[f"obs:{key}"] = np.concatenate([t.obs.get(key) for t in trajs])
    else:
        keys = None
        arrays["obs"] = np.concatenate([t.obs for t in trajs])
    arrays["acts"] = np.concatenate([t.acts for t in trajs])
    arrays["executed_acts"] = np.concatenate(
        [t.acts if t.executed_acts is None else t.executed_acts for t in trajs]
    )
    arrays["learner_mask"] = np.concatenate(
        [np.zeros(len(t), bool) if t.learner_mask is None else t.learner_mask for t in trajs]
    )
    arrays["rews"] = np.concatenate([t.rews for t in trajs])
    arrays["terminal"] = np.array([t.terminal for t in trajs], dtype=bool)
    arrays["truncated"] = np.array([t.truncated for t in trajs], dtype=bool)
    arrays["complete"] = np.array([t.complete for t in trajs], dtype=bool)
    if save_infos:
        infos = []
        for t in trajs:
            ep_infos = [{}] * len(t) if t.infos is None else list(t.infos)
            if TERMINAL_OBS_KEY in ep_infos[-1]:  # only an episode's last info holds it
                ep_infos[-1] = {k: v for k, v in ep_infos[-1].items() if k != TERMINAL_OBS_KEY}
            infos.append(ep_infos)
        arrays["infos"] = _json_bytes(infos)
    header = {"format": ROUND_FILE_FORMAT, "n_episodes": len(trajs), "obs_keys": keys, "meta": dict(meta or {})}
    arrays["header"] = _json_bytes(header)
    atomic_write(path, lambda f: np.savez_compressed(f, **arrays))
    return path


def load_trajectories(path: str | os.PathLike[str]) -> list[DAggerTrajectory]:
    """Read a file written by :func:`save_trajectories`; unreadable content raises :class:`CorruptRoundFileError`."""
    path = pathlib.Path(path)
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as data:  # np.load leaks its own handle
            header = json.loads(data["header"].tobytes())
            if header.get("format") != ROUND_FILE_FORMAT:
                raise CorruptRoundFileError(path, f"unknown format {header.get('format')!r}")
            lengths = data["lengths"]
            keys = header["obs_keys"]
            obs_arrays = {k: data[f"obs:{k}"] for k in keys} if keys is not None else {"": data["obs"]}
            fields = {
                name: data[name]
                for name in ("acts", "executed_acts", "learner_mask", "rews", "terminal", "truncated", "complete")
            }
            infos = json.loads(data["infos"].tobytes()) if "infos" in data.files else None
    except CorruptRoundFileError:
        raise
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, zlib.error, ValueError, KeyError, EOFError, OSError, TypeError) as exc:
        raise CorruptRoundFileError(path, f"{type(exc).__name__}: {exc}") from exc
    n = len(lengths)
    total = int(lengths.sum())
    if (
        header.get("n_episodes") != n
        or np.any(lengths < 1)
        or any(len(v) != total + n for v in obs_arrays.values())
        or any(len(fields[k]) != total for k in ("acts", "executed_acts", "learner_mask", "rews"))
        or any(len(fields[k]) != n for k in ("terminal", "truncated", "complete"))
        or (infos is not None and [len(i) for i in infos] != lengths.tolist())
    ):
        raise CorruptRoundFileError(path, "array lengths disagree with the header")
    act_splits = np.cumsum(lengths)[:-1]
    obs_splits = act_splits + np.arange(1, n)
    obs_parts = {k: np.split(v, obs_splits) for k, v in obs_arrays.items()}
    split = {k: np.split(fields[k], act_splits) for k in ("acts", "executed_acts", "learner_mask", "rews")}
    out = []
    for i in range(n):
        if keys is not None:
            obs: types.Observation = types.DictObs({k: obs_parts[k][i] for k in keys})
        else:
            obs = obs_parts[""][i]
        ep_infos = None
        if infos is not None:
            ep_infos = np.empty(len(infos[i]), dtype=object)
            ep_infos[:] = infos[i]
        out.append(
            DAggerTrajectory(
                obs=obs,
                acts=split["acts"][i],
                infos=ep_infos,
                terminal=bool(fields["terminal"][i]),
                rews=split["rews"][i],
                truncated=bool(fields["truncated"][i]),
                complete=bool(fields["complete"][i]),
                executed_acts=split["executed_acts"][i],
                learner_mask=split["learner_mask"][i],
            )
        )
    return out


def round_files(directory: str | os.PathLike[str]) -> list[pathlib.Path]:
    """Round files of ``directory`` in write order; temporary files of interrupted writes are ignored."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = _ROUND_FILE_RE.match(entry.name)
        if match and not entry.name.startswith("."):
            found.append((int(match["index"]), entry.name, entry))
    return [entry for _, _, entry in sorted(found)]


def _next_file_index(directory: pathlib.Path) -> int:
    indices = [int(_ROUND_FILE_RE.match(p.name)["index"]) for p in round_files(directory)]  # type: ignore[index]
    return max(indices, default=-1) + 1


def load_round_dir(directory: str | os.PathLike[str], *, skip_corrupt: bool = False) -> list[DAggerTrajectory]:
    """All trajectories of one round directory, in write order.

    :param skip_corrupt: load the readable files and warn about the others instead of raising
        :class:`CorruptRoundFileError`.
    """
    out: list[DAggerTrajectory] = []
    for path in round_files(directory):
        try:
            out.extend(load_trajectories(path))
        except CorruptRoundFileError as exc:
            if not skip_corrupt:
                raise
            warnings.warn(f"skipping {exc}", RuntimeWarning, stacklevel=2)
    return out


# ----------------------------------------------------------------------------------------------- relabeling
def _resolve_relabeler(relabeler: Any, observation_space: gym.Space, kwargs: Mapping[str, Any] | None) -> Any:
    if relabeler is None:
        return None
    kwargs = dict(kwargs or {})
    if isinstance(relabeler, str):
        if not isinstance(observation_space, gym.spaces.Dict):
            raise ValueError("relabeler needs a Dict observation space with the instruction under 'goals'")
        goals_space = observation_space.spaces.get("goals")
        if "num_goals" not in kwargs and goals_space is not None and goals_space.shape:
            kwargs["num_goals"] = goals_space.shape[0]
        return plugins.resolve("relabeler", relabeler, **kwargs)
    if not callable(getattr(relabeler, "relabel", None)):
        raise ValueError(
            "relabeler must be a relabeler plugin name or an object with relabel(episode, rng) (e.g. "
            f"sb3_hir.relabel.InstructionRelabeler); got {relabeler!r}"
        )
    return relabeler


def relabel_trajectory(
    traj: types.TrajectoryWithRew,
    relabeler: Any,
    rng: np.random.Generator,
    labels: RelabelLabels = "auto",
) -> types.TrajectoryWithRew:
    """Relabel one Dict-observation trajectory's instruction for goal-conditioned BC.

    The expert's labels point at the *original* instruction, so once the instruction changes they no longer
    fit the observations. ``labels="auto"`` therefore keeps expert labels for episodes whose instruction is
    unchanged and uses the executed actions (which did reach the new goals, as in GCSL) for relabeled ones;
    ``"expert"`` / ``"executed"`` force one source.
    """
    from sb3_hir.episodes import Episode

    if labels not in ("auto", "expert", "executed"):
        raise ValueError(f"labels must be 'auto', 'expert' or 'executed'; got {labels!r}")
    episode = Episode.from_trajectory(traj)
    goals_key = getattr(getattr(relabeler, "goal_spec", None), "goals_key", "goals")
    goals = relabeler.relabel_goals(episode, rng)
    if goals is None or (labels == "auto" and np.array_equal(goals, episode.observations[goals_key][0])):
        return traj if labels != "executed" else _with_executed_labels(traj)
    if labels != "expert":
        executed = getattr(traj, "executed_acts", None)
        if executed is not None:
            episode = dataclasses.replace(episode, actions=executed)
    return relabeler.replay(episode, goals).to_trajectory()


def _with_executed_labels(traj: types.TrajectoryWithRew) -> types.TrajectoryWithRew:
    executed = getattr(traj, "executed_acts", None)
    return traj if executed is None else dataclasses.replace(traj, acts=executed)


# ----------------------------------------------------------------------------------------------- policies
class PolicyRunner:
    """Turns an SB3 policy/algorithm, a ``predict``-er (e.g. ``ShortestPathExpert``) or a plain
    ``callable(obs) -> actions`` into ``obs -> actions`` for a VecEnv, carrying recurrent state per sub-env.

    Call :meth:`observe_dones` after every step so that states reset at episode start.
    """

    def __init__(self, policy: Any, num_envs: int, deterministic: bool = True) -> None:
        if isinstance(policy, PolicyRunner):
            raise ValueError("policy is already a PolicyRunner; pass it directly")
        self.policy = policy
        predict = getattr(policy, "predict", None)
        if callable(predict):
            self._predict: Callable[..., Any] | None = predict
        elif callable(policy):
            self._predict = None
        else:
            raise ValueError(
                "policy must be an SB3 policy or algorithm, an object with SB3's predict(observation, state, "
                f"episode_start, deterministic), or a callable(obs) -> actions; got {type(policy).__name__}"
            )
        self.num_envs = num_envs
        self.deterministic = deterministic
        self.state: tuple[np.ndarray, ...] | None = None
        self.episode_start = np.ones(num_envs, dtype=bool)
        #: None until the first call tells whether the policy returns a recurrent state.
        self.stateful: bool | None = None if self._predict is not None else False

    def reset(self) -> None:
        self.state = None
        self.episode_start = np.ones(self.num_envs, dtype=bool)

    def observe_dones(self, dones: np.ndarray) -> None:
        self.episode_start = np.asarray(dones, dtype=bool).copy()

    def __call__(self, obs: VecEnvObs) -> np.ndarray:
        if self._predict is not None:
            acts, state = self._predict(
                obs, state=self.state, episode_start=self.episode_start, deterministic=self.deterministic
            )
            self.state = state
            if self.stateful is None:
                self.stateful = state is not None
        else:
            acts = self.policy(obs)
            if isinstance(acts, tuple):
                acts = acts[0]
        return np.asarray(acts)


def _check_policy_spaces(policy: Any, venv: VecEnv, name: str) -> None:
    if isinstance(policy, PolicyRunner):
        policy = policy.policy
    for attr in ("observation_space", "action_space"):
        space = getattr(policy, attr, None)
        if isinstance(space, gym.Space) and space != getattr(venv, attr):
            raise ValueError(
                f"{name}.{attr} {space} does not match venv.{attr} {getattr(venv, attr)}; pass a {name} "
                "built for this environment (same spaces)"
            )


def _check_beta(beta: Any, what: str) -> float:
    try:
        value = float(beta)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(
            f"{what} must be a probability in [0, 1] (the chance of executing the expert's action); got "
            f"{beta!r}. Use a schedule that stays in [0, 1], e.g. 'linear' or 'exponential'."
        )
    return value


# ----------------------------------------------------------------------------------------------- collector
class _StepBuffer:
    """Time-major arrays holding the current episode of every sub-env; row ``t`` is the step being taken.

    One vectorised write per field and step; an episode is cut out (a strided copy) only when it ends. Rows no
    sub-env still needs are dropped by shifting when the buffer fills up, which is amortised O(1) per step.
    """

    def __init__(self, num_envs: int, capacity: int = 256) -> None:
        self.num_envs = num_envs
        self.capacity = capacity
        self.t = 0
        self.start = np.zeros(num_envs, dtype=np.int64)
        self.obs: dict[str, np.ndarray] | np.ndarray | None = None
        self.fields: dict[str, np.ndarray] = {}

    @staticmethod
    def _empty_like(capacity: int, value: np.ndarray) -> np.ndarray:
        return np.empty((capacity, *value.shape), dtype=value.dtype)

    def reset(self, obs: VecEnvObs) -> None:
        self.t = 0
        self.start[:] = 0
        if self.obs is None:
            if isinstance(obs, Mapping):
                self.obs = {k: self._empty_like(self.capacity, np.asarray(v)) for k, v in obs.items()}
            else:
                self.obs = self._empty_like(self.capacity, np.asarray(obs))
        self._write_obs(0, obs)

    def _write_obs(self, row: int, obs: VecEnvObs) -> None:
        if isinstance(self.obs, dict):
            for k, buf in self.obs.items():
                buf[row] = obs[k]  # type: ignore[index]
        else:
            self.obs[row] = obs  # type: ignore[index]

    def record(self, **values: Any) -> None:
        for name, value in values.items():
            buf = self.fields.get(name)
            if buf is None:
                if name == "infos":
                    buf = np.empty((self.capacity, self.num_envs), dtype=object)
                else:
                    buf = self._empty_like(self.capacity, np.asarray(value))
                self.fields[name] = buf
            buf[self.t] = value

    def _arrays(self) -> list[np.ndarray]:
        obs = list(self.obs.values()) if isinstance(self.obs, dict) else [self.obs]
        return [*obs, *self.fields.values()]  # type: ignore[list-item]

    def advance(self, next_obs: VecEnvObs, done_idx: np.ndarray) -> None:
        row = self.t + 1
        self.start[done_idx] = row
        if row >= self.capacity:
            shift = int(self.start.min())
            if shift > 0:
                for buf in self._arrays():
                    buf[: row - shift] = buf[shift:row]
                self.start -= shift
                row -= shift
            if row >= self.capacity:
                grow = self.capacity
                self.capacity += grow
                self.obs = (
                    {k: self._grow(v, grow) for k, v in self.obs.items()}
                    if isinstance(self.obs, dict)
                    else self._grow(self.obs, grow)  # type: ignore[arg-type]
                )
                self.fields = {k: self._grow(v, grow) for k, v in self.fields.items()}
        self.t = row
        self._write_obs(row, next_obs)

    @staticmethod
    def _grow(buf: np.ndarray, extra: int) -> np.ndarray:
        return np.concatenate([buf, np.empty((extra, *buf.shape[1:]), dtype=buf.dtype)])

    def steps(self, env: int) -> int:
        """Steps of ``env``'s current episode recorded so far (not counting row ``t`` before its result)."""
        return int(self.t - self.start[env])

    def cut(self, env: int, stop: int, last_obs: Any | None) -> tuple[types.Observation, dict[str, np.ndarray]]:
        """Copy out rows ``start..stop-1`` of ``env``; observations get ``last_obs`` (or row ``stop``) appended."""
        begin = int(self.start[env])

        def column(buf: np.ndarray, last: Any) -> np.ndarray:
            if last is None:
                return buf[begin : stop + 1, env].copy()
            return np.concatenate([buf[begin:stop, env], np.asarray(last)[None]])

        if isinstance(self.obs, dict):
            obs: types.Observation = types.DictObs(
                {k: column(v, None if last_obs is None else last_obs[k]) for k, v in self.obs.items()}
            )
        else:
            obs = column(self.obs, last_obs)  # type: ignore[arg-type]
        return obs, {k: v[begin:stop, env].copy() for k, v in self.fields.items()}


class DAggerCollector(VecEnvWrapper):
    """DAgger's VecEnv wrapper: executes expert or learner actions, records expert labels, saves in batches.

    Drop-in for imitation's ``InteractiveTrajectoryCollector``: drive it with ``obs = collector.reset()`` and
    ``collector.step(expert_actions)`` (or ``rollout.generate_trajectories(expert, collector, ...)``), then call
    :meth:`finish_round` so that unfinished episodes are completed or reported and the last file is written.

    :param venv: the environment; Box/Discrete or Dict observations.
    :param get_robot_acts: the learner: an SB3 policy or algorithm (recurrent ones included, their state is
        carried per sub-env and reset at episode start), anything with SB3's ``predict``, or a
        ``callable(obs) -> actions`` as imitation takes.
    :param beta: probability of executing the expert's action, drawn per sub-env and step.
    :param save_dir: directory for round files; None keeps episodes in memory only.
    :param rng: draws the expert/learner choices (and relabeling).
    :param deterministic_learner: ask SB3 learners for deterministic actions.
    :param episodes_per_file: write a file every N finished episodes; None writes one file per round (at
        :meth:`finish_round`). Smaller N loses fewer episodes to a crash.
    :param relabeler: optional relabeler (plugin name or object) applied to the in-memory episodes
        (:attr:`trajectories`); files always keep the raw episodes.
    :param relabeler_kwargs: passed to the relabeler plugin; ``num_goals`` defaults to the ``goals`` shape.
    :param relabel_labels: see :func:`relabel_trajectory`.
    :param save_infos: store info dicts (as JSON) in the files.
    :param on_flush: called with ``(path, trajectories)`` after each file is in place.
    :param buffer_steps: initial step capacity of the per-step buffer (it grows when an episode is longer).
    """

    def __init__(
        self,
        venv: VecEnv,
        get_robot_acts: Any,
        beta: float,
        save_dir: str | os.PathLike[str] | None = None,
        rng: np.random.Generator | int | None = None,
        *,
        deterministic_learner: bool = True,
        episodes_per_file: int | None = None,
        relabeler: Any = None,
        relabeler_kwargs: Mapping[str, Any] | None = None,
        relabel_labels: RelabelLabels = "auto",
        save_infos: bool = True,
        file_prefix: str = "",
        on_flush: Callable[[pathlib.Path, list[DAggerTrajectory]], None] | None = None,
        buffer_steps: int = 256,
    ) -> None:
        super().__init__(venv)
        if isinstance(venv.observation_space, gym.spaces.Tuple):
            raise ValueError("venv.observation_space must be a Box, Discrete or Dict space; Tuple is not supported")
        self.beta = beta
        if episodes_per_file is not None and (
            isinstance(episodes_per_file, bool) or not isinstance(episodes_per_file, int) or episodes_per_file < 1
        ):
            raise ValueError(
                f"episodes_per_file must be None (one file per round) or an int >= 1; got {episodes_per_file!r}"
            )
        if not isinstance(rng, np.random.Generator):
            rng = np.random.default_rng(rng)
        self.rng = rng
        _check_policy_spaces(get_robot_acts, venv, "learner")
        self.get_robot_acts = get_robot_acts
        self._learner = PolicyRunner(get_robot_acts, self.num_envs, deterministic=deterministic_learner)
        self.save_dir = None if save_dir is None else pathlib.Path(save_dir)
        self.episodes_per_file = episodes_per_file
        self.relabeler = _resolve_relabeler(relabeler, venv.observation_space, relabeler_kwargs)
        if relabel_labels not in ("auto", "expert", "executed"):
            raise ValueError(f"relabel_labels must be 'auto', 'expert' or 'executed'; got {relabel_labels!r}")
        self.relabel_labels = relabel_labels
        self.save_infos = save_infos
        self.file_prefix = file_prefix
        self.on_flush = on_flush
        action_space = venv.action_space
        self._act_shape = tuple(action_space.shape) if action_space.shape is not None else ()
        if not isinstance(buffer_steps, int) or buffer_steps < 1:
            raise ValueError(f"buffer_steps must be an int >= 1; got {buffer_steps!r}")
        self._buffer = _StepBuffer(self.num_envs, buffer_steps)
        self._pending: list[DAggerTrajectory] = []
        self._last_obs: VecEnvObs | None = None
        self._is_reset = False
        #: envs whose episode still counts; only False while :meth:`finish_round` completes the others.
        self._active = np.ones(self.num_envs, dtype=bool)
        #: Every episode collected (relabeled when a relabeler is set), across rounds.
        self.trajectories: list[types.TrajectoryWithRew] = []
        self._round_start = 0
        self.round_timesteps = 0
        self.saved_files: list[pathlib.Path] = []
        self.discarded_steps = 0

    # -- configuration ----------------------------------------------------------------------------------------
    @property
    def beta(self) -> float:
        return self._beta

    @beta.setter
    def beta(self, value: float) -> None:
        self._beta = _check_beta(value, "beta")

    @property
    def deterministic_learner(self) -> bool:
        return self._learner.deterministic

    @property
    def learner_state(self) -> tuple[np.ndarray, ...] | None:
        """The learner's recurrent state, one slice per sub-env (None for feed-forward learners)."""
        return self._learner.state

    @property
    def round_episodes(self) -> int:
        """Episodes collected since the last :meth:`finish_round`."""
        return len(self.trajectories) - self._round_start

    def seed(self, seed: int | None = None) -> Sequence[int | None]:  # type: ignore[override]
        """Seed the expert/learner choice RNG and the wrapped VecEnv, as imitation's collector does."""
        self.rng = np.random.default_rng(seed)
        return list(self.venv.seed(seed))

    # -- VecEnv interface -------------------------------------------------------------------------------------
    def reset(self) -> VecEnvObs:
        if self._is_reset:
            self._report_unfinished("reset() was called")
        obs = self.venv.reset()
        self._buffer.reset(obs)
        self._learner.reset()
        self._last_obs = obs
        self._active[:] = True
        self._is_reset = True
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Execute ``actions`` (the expert's) with probability beta per sub-env, the learner's otherwise."""
        if not self._is_reset:
            raise RuntimeError("call reset() before step() (also after finish_round())")
        labels = np.array(actions, copy=True)
        expected = (self.num_envs, *self._act_shape)
        if labels.shape != expected:
            if labels.size != math.prod(expected):
                raise ValueError(
                    f"expert actions must have shape {expected} (num_envs, *action_space.shape); got {labels.shape}"
                )
            labels = labels.reshape(expected)
        use_learner = self.rng.random(self.num_envs) >= self._beta
        executed = labels.copy()
        if self._learner.stateful is not False or use_learner.any():
            learner_acts = self._learner(self._last_obs)  # type: ignore[arg-type]
            executed[use_learner] = learner_acts.reshape(expected)[use_learner]
        self._buffer.record(acts=labels, executed_acts=executed, learner_mask=use_learner)
        self.venv.step_async(executed)

    def step_wait(self) -> VecEnvStepReturn:
        obs, rews, dones, infos = self.venv.step_wait()
        buffer = self._buffer
        buffer.record(rews=np.asarray(rews, dtype=np.float32), infos=infos)
        done_idx = np.flatnonzero(dones)
        for env in done_idx.tolist():
            info = infos[env]
            if not self._active[env]:
                self.discarded_steps += buffer.steps(env) + 1
                continue
            if TERMINAL_OBS_KEY not in info:
                raise RuntimeError(
                    f"sub-env {env} finished without info[{TERMINAL_OBS_KEY!r}]; DAggerCollector needs an SB3 "
                    "VecEnv (DummyVecEnv, SubprocVecEnv) that reports the final observation"
                )
            truncated = bool(info.get(TIMEOUT_KEY, False))
            self._add(env, buffer.t + 1, info[TERMINAL_OBS_KEY], terminal=not truncated, truncated=truncated)
        buffer.advance(obs, done_idx)
        self._last_obs = obs
        self._learner.observe_dones(dones)
        return obs, rews, dones, infos

    # -- episodes ---------------------------------------------------------------------------------------------
    def _add(self, env: int, stop: int, last_obs: Any | None, *, terminal: bool, truncated: bool) -> None:
        obs, f = self._buffer.cut(env, stop, last_obs)
        traj = DAggerTrajectory(
            obs=obs,
            acts=f["acts"],
            infos=f["infos"],
            terminal=terminal,
            rews=f["rews"],
            truncated=truncated,
            complete=last_obs is not None,
            executed_acts=f["executed_acts"],
            learner_mask=f["learner_mask"],
        )
        self.round_timesteps += len(traj)
        self.trajectories.append(self._relabel(traj))
        if self.save_dir is not None:
            self._pending.append(traj)
            if self.episodes_per_file is not None and len(self._pending) >= self.episodes_per_file:
                self.flush()

    def _relabel(self, traj: DAggerTrajectory) -> types.TrajectoryWithRew:
        if self.relabeler is None:
            return traj
        return relabel_trajectory(traj, self.relabeler, self.rng, self.relabel_labels)

    def _unfinished_steps(self) -> np.ndarray:
        """Recorded steps of each sub-env's running episode (0 before the first step or after the end)."""
        if not self._is_reset:
            return np.zeros(self.num_envs, dtype=np.int64)
        return np.where(self._active, self._buffer.t - self._buffer.start, 0)

    def _report_unfinished(self, why: str) -> list[types.TrajectoryWithRew]:
        steps = self._unfinished_steps()
        envs = np.flatnonzero(steps > 0)
        if len(envs):
            warnings.warn(
                f"{why}: {len(envs)} unfinished episode(s) with {int(steps.sum())} labelled steps are kept as "
                "partial trajectories (complete=False, terminal=False); use finish_round(policy='complete') to "
                "run them to the end instead",
                RuntimeWarning,
                stacklevel=3,
            )
        before = len(self.trajectories)
        for env in envs.tolist():
            self._add(env, self._buffer.t, None, terminal=False, truncated=False)
        self._active[:] = False
        return self.trajectories[before:]

    def flush(self) -> pathlib.Path | None:
        """Write the finished episodes not yet on disk as one file; returns its path (None when nothing to write)."""
        if not self._pending or self.save_dir is None:
            return None
        name = f"{self.file_prefix}demos-{_next_file_index(self.save_dir):05d}-{uuid.uuid4().hex[:8]}.npz"
        path = save_trajectories(
            self.save_dir / name, self._pending, meta={"beta": self._beta}, save_infos=self.save_infos
        )
        written, self._pending = self._pending, []
        self.saved_files.append(path)
        if self.on_flush is not None:
            self.on_flush(path, written)
        return path

    @property
    def has_unsaved(self) -> bool:
        """Episodes (finished or running) that :meth:`finish_round` would still write."""
        return bool(self._pending) or bool(np.any(self._unfinished_steps() > 0))

    def finish_round(
        self,
        policy: UnfinishedPolicy = "complete",
        expert: Any = None,
        *,
        max_steps: int | None = None,
    ) -> list[types.TrajectoryWithRew]:
        """End the round: deal with unfinished episodes, write the remaining episodes, return the round's.

        :param policy: ``"complete"`` keeps stepping (same expert/learner mix) until every running episode ends;
            sub-envs that finish first keep stepping too, but their new episodes are not recorded (counted in
            :attr:`discarded_steps`). ``"report"`` returns running episodes as partial trajectories with a warning.
        :param expert: needed for ``"complete"``: the expert (policy, ``predict``-er, callable or
            :class:`PolicyRunner`) that labels the extra steps.
        :param max_steps: with ``"complete"``, give up after this many vector steps and report what still runs.
        """
        if policy not in ("complete", "report"):
            raise ValueError(f"policy must be 'complete' or 'report'; got {policy!r}")
        if self._is_reset and policy == "complete" and np.any(self._unfinished_steps() > 0):
            if expert is None:
                raise ValueError(
                    "finish_round(policy='complete') needs expert= to label the remaining steps; pass the expert "
                    "or use policy='report'"
                )
            runner = expert if isinstance(expert, PolicyRunner) else PolicyRunner(expert, self.num_envs)
            if runner is not expert:
                runner.episode_start = self._learner.episode_start.copy()
            self._active = self._unfinished_steps() > 0
            obs = self._last_obs
            n = 0
            while self._active.any() and (max_steps is None or n < max_steps):
                obs, _, dones, _ = self.step(runner(obs))
                runner.observe_dones(dones)
                self._active &= ~np.asarray(dones, dtype=bool)
                n += 1
            # Episodes begun by sub-envs that finished while the others completed are not part of the round.
            self.discarded_steps += int(np.where(self._active, 0, self._buffer.t - self._buffer.start).sum())
            if self.discarded_steps:
                logger.info("finish_round: %d steps of episodes started while completing were not recorded",
                            self.discarded_steps)
        if self._is_reset:
            self._report_unfinished(f"finish_round(policy={policy!r})")
        self.flush()
        self._is_reset = False
        out = self.trajectories[self._round_start :]
        self._round_start = len(self.trajectories)
        self.round_timesteps = 0
        return out

    def close(self) -> None:
        """Write finished episodes before closing, so closing never loses them."""
        self.flush()
        super().close()


# ----------------------------------------------------------------------------------------------- JSON specs
class _NotEncodable(TypeError):
    pass


def _import_path(obj: Any) -> str:
    path = f"{obj.__module__}:{obj.__qualname__}"
    try:
        ok = _import(path) is obj
    except (ImportError, AttributeError):
        ok = False
    if not ok:
        raise _NotEncodable(f"{obj!r} is not importable by name")
    return path


def _import(path: str) -> Any:
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _encode(value: Any) -> Any:
    """JSON form of constructor arguments: primitives, containers, importable classes/functions, simple objects."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise _NotEncodable(f"dict keys must be str: {value!r}")
        return {"__dict__": {k: _encode(v) for k, v in value.items()}}
    if isinstance(value, th.device):
        return {"__device__": str(value)}
    if inspect.isclass(value) or inspect.isfunction(value) or inspect.isbuiltin(value):
        return {"__import__": _import_path(value)}
    if hasattr(value, "__dict__") and not isinstance(value, (th.nn.Module, gym.Space)):
        return {"__object__": _import_path(type(value)), "state": _encode(vars(value))}
    raise _NotEncodable(f"cannot store {value!r} as JSON")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__tuple__" in value:
        return tuple(_decode(v) for v in value["__tuple__"])
    if "__dict__" in value:
        return {k: _decode(v) for k, v in value["__dict__"].items()}
    if "__device__" in value:
        return th.device(value["__device__"])
    if "__import__" in value:
        return _import(value["__import__"])
    if "__object__" in value:
        cls = _import(value["__object__"])
        obj = cls.__new__(cls)
        obj.__dict__.update(_decode(value["state"]))
        return obj
    raise ValueError(f"unknown JSON spec {value!r}")


def _try_encode(value: Any) -> Any | None:
    try:
        return _encode(value)
    except _NotEncodable:
        return None


def _unused_lr_schedule(_progress_remaining: float) -> float:
    """BC trains with its own optimizer; the policy's optimizer gets BC's 'unused' learning rate."""
    return float(th.finfo(th.float32).max)


def _policy_spec(policy: BasePolicy) -> dict[str, Any]:
    params = dict(policy._get_constructor_parameters())
    params.pop("observation_space", None)
    params.pop("action_space", None)
    has_lr = params.pop("lr_schedule", None) is not None
    return {"class": _import_path(type(policy)), "kwargs": _encode(params), "lr_schedule": has_lr}


def _build_policy(spec: Mapping[str, Any], observation_space: gym.Space, action_space: gym.Space) -> BasePolicy:
    cls = _import(spec["class"])
    kwargs = _decode(spec["kwargs"])
    if spec.get("lr_schedule"):
        kwargs["lr_schedule"] = _unused_lr_schedule
    # Subclasses such as imitation's FeedForward32Policy fix some arguments themselves and reject them again;
    # drop exactly those (load_state_dict below still checks the architecture strictly).
    for _ in range(len(kwargs) + 1):
        try:
            return cls(observation_space=observation_space, action_space=action_space, **kwargs)
        except TypeError as exc:
            match = re.search(r"multiple values for keyword argument '(\w+)'", str(exc))
            if match is None or match[1] not in kwargs:
                raise
            kwargs.pop(match[1])
    raise RuntimeError("unreachable")  # pragma: no cover


def _save_policy(policy: BasePolicy, path: pathlib.Path, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Tensors only (``torch.load(weights_only=True)`` reads them); the architecture goes into the JSON."""
    try:
        spec: dict[str, Any] = _policy_spec(policy)
        payload = {"policy": policy.state_dict(), **(extra or {})}
        atomic_write(path, lambda f: th.save(payload, f))
    except _NotEncodable as exc:
        # An architecture we cannot describe in JSON: SB3's own format (its loader passes weights_only=False).
        logger.warning("policy %s saved with SB3's policy.save(): %s", type(policy).__name__, exc)
        atomic_write(path, lambda f: policy.save(f))  # type: ignore[arg-type]
        spec = {"class": _import_path(type(policy)), "sb3_save": True}
        if extra:
            atomic_write(path.with_suffix(".extra.pt"), lambda f: th.save(dict(extra), f))
    return {"file": path.name, **spec}


def _load_policy(
    entry: Mapping[str, Any], directory: pathlib.Path, venv: VecEnv, device: th.device
) -> tuple[BasePolicy, dict[str, Any]]:
    path = directory / entry["file"]
    if entry.get("sb3_save"):
        policy = _import(entry["class"]).load(str(path), device=device)
        extra_path = path.with_suffix(".extra.pt")
        extra = th.load(extra_path, map_location=device, weights_only=True) if extra_path.exists() else {}
    else:
        payload = th.load(path, map_location=device, weights_only=True)
        policy = _build_policy(entry, venv.observation_space, venv.action_space).to(device)
        policy.load_state_dict(payload.pop("policy"))
        extra = payload
    return policy, extra


def reconstruct_policy(
    scratch_dir: str | os.PathLike[str], venv: VecEnv, device: th.device | str = "auto"
) -> BasePolicy:
    """The learner policy of the latest checkpoint in ``scratch_dir``, without the trainer."""
    scratch_dir = pathlib.Path(scratch_dir)
    state = _read_checkpoint(scratch_dir)
    policy, _ = _load_policy(state["policy"], scratch_dir, venv, sb3_utils.get_device(device))
    return policy


def _read_checkpoint(scratch_dir: pathlib.Path) -> dict[str, Any]:
    path = scratch_dir / "checkpoint-latest.json"
    if not path.exists():
        raise FileNotFoundError(
            f"no DAgger checkpoint at {str(path)!r}; call save_trainer() in the first process (SimpleDAggerTrainer"
            ".train saves after every round) before reconstruct_trainer"
        )
    try:
        state = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"checkpoint {str(path)!r} is not valid JSON: {exc}") from exc
    if state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"checkpoint {str(path)!r} has format {state.get('format')!r}, expected {CHECKPOINT_FORMAT!r}")
    return state


def _rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return rng.bit_generator.state


def _rng_from_state(state: Mapping[str, Any]) -> np.random.Generator:
    bit_generator = getattr(np.random, state["bit_generator"])()
    bit_generator.state = dict(state)
    return np.random.Generator(bit_generator)


# ----------------------------------------------------------------------------------------------- trainers
class _Batches:
    """Re-iterable shuffled minibatches of flattened transitions for ``bc.BC`` (one pass = one epoch).

    imitation's default path wraps ``Transitions`` in a torch DataLoader that builds every sample as its own
    dict (and DictObs) and collates them again; slicing whole batches with one fancy index gives BC the same
    ``{"obs", "acts"}`` batches at a fraction of the cost.
    """

    def __init__(self, transitions: types.TransitionsMinimal, batch_size: int, rng: np.random.Generator) -> None:
        self.obs = transitions.obs
        self.acts = transitions.acts
        self.batch_size = batch_size
        self.rng = rng

    def __len__(self) -> int:
        return len(self.acts) // self.batch_size

    def __iter__(self) -> Iterator[types.TransitionMapping]:
        perm = self.rng.permutation(len(self.acts))
        for begin in range(0, len(perm) - self.batch_size + 1, self.batch_size):
            idx = perm[begin : begin + self.batch_size]
            yield {"obs": self.obs[idx], "acts": self.acts[idx]}


class DAggerTrainer(algo_base.BaseImitationAlgorithm):
    """DAgger in rounds, with imitation's API; every round's data lives in ``scratch_dir/demos/round-NNN/``.

    A round: :meth:`create_trajectory_collector`, step it with expert actions, ``collector.finish_round()``,
    then :meth:`extend_and_update` (BC on all rounds so far) and :meth:`save_trainer`. Because the round files
    and the JSON checkpoint are the whole state, another process (e.g. a human labeller tomorrow) continues
    with :func:`reconstruct_trainer`.

    :param beta_schedule: a ``beta_schedule`` plugin name (``"linear"``, ``"exponential"``, ...) or a callable
        ``round -> beta``; None is imitation's default, linear over 15 rounds.
    :param beta_schedule_kwargs: arguments of the named schedule.
    :param relabeler: relabel the loaded episodes for goal-conditioned BC (plugin name or object).
    :param skip_corrupt: load the readable round files and warn about corrupt ones instead of raising.
    """

    DEFAULT_N_EPOCHS: int = 4

    def __init__(
        self,
        *,
        venv: VecEnv,
        scratch_dir: str | os.PathLike[str],
        rng: np.random.Generator,
        beta_schedule: str | Callable[[int], float] | None = None,
        bc_trainer: bc.BC,
        custom_logger: imit_logger.HierarchicalLogger | None = None,
        beta_schedule_kwargs: Mapping[str, Any] | None = None,
        deterministic_learner: bool = True,
        episodes_per_file: int | None = None,
        relabeler: Any = None,
        relabeler_kwargs: Mapping[str, Any] | None = None,
        relabel_labels: RelabelLabels = "auto",
        skip_corrupt: bool = False,
    ) -> None:
        super().__init__(custom_logger=custom_logger)
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)); got {rng!r}")
        if not isinstance(bc_trainer, bc.BC):
            raise ValueError(f"bc_trainer must be an imitation.algorithms.bc.BC; got {type(bc_trainer).__name__}")
        self.venv = venv
        self.scratch_dir = pathlib.Path(scratch_dir)
        self.rng = rng
        if beta_schedule is None:
            beta_schedule = "linear"  # imitation's default: linear over 15 rounds
        self._beta_spec: Any = None
        if isinstance(beta_schedule, str):
            self._beta_spec = {"name": beta_schedule, "kwargs": _try_encode(dict(beta_schedule_kwargs or {}))}
        elif beta_schedule_kwargs:
            raise ValueError("beta_schedule_kwargs is only used with a beta_schedule plugin name")
        self.beta_schedule = plugins.resolve("beta_schedule", beta_schedule, **dict(beta_schedule_kwargs or {}))
        if not callable(self.beta_schedule):
            raise ValueError(f"beta_schedule must be a name or a callable round -> beta; got {beta_schedule!r}")
        if self._beta_spec is None:
            self._beta_spec = _try_encode(self.beta_schedule)
        self._relabeler_spec = None
        if isinstance(relabeler, str):
            self._relabeler_spec = {"name": relabeler, "kwargs": _try_encode(dict(relabeler_kwargs or {}))}
        self.relabeler = _resolve_relabeler(relabeler, venv.observation_space, relabeler_kwargs)
        self._has_relabeler_object = self.relabeler is not None and self._relabeler_spec is None
        if relabel_labels not in ("auto", "expert", "executed"):
            raise ValueError(f"relabel_labels must be 'auto', 'expert' or 'executed'; got {relabel_labels!r}")
        self.relabel_labels = relabel_labels
        if episodes_per_file is not None and (not isinstance(episodes_per_file, int) or episodes_per_file < 1):
            raise ValueError(f"episodes_per_file must be None or an int >= 1; got {episodes_per_file!r}")
        self.deterministic_learner = bool(deterministic_learner)
        self.episodes_per_file = episodes_per_file
        self.skip_corrupt = bool(skip_corrupt)
        self.round_num = 0
        self._last_loaded_round = -1
        self._all_demos: list[types.TrajectoryWithRew] = []
        self._collector: DAggerCollector | None = None
        sb3_utils.check_for_correct_spaces(venv, bc_trainer.observation_space, bc_trainer.action_space)
        self.bc_trainer = bc_trainer
        self.bc_trainer.logger = self.logger

    # -- imitation's accessors --------------------------------------------------------------------------------
    @property
    def logger(self) -> imit_logger.HierarchicalLogger:
        return super().logger

    @logger.setter
    def logger(self, value: imit_logger.HierarchicalLogger) -> None:
        self._logger = value
        self.bc_trainer.logger = value

    @property
    def policy(self) -> BasePolicy:
        return self.bc_trainer.policy

    @property
    def batch_size(self) -> int:
        return self.bc_trainer.batch_size

    def _demo_dir_path_for_round(self, round_num: int | None = None) -> pathlib.Path:
        return self.scratch_dir / "demos" / f"round-{self.round_num if round_num is None else round_num:03d}"

    def beta_for_round(self, round_num: int | None = None) -> float:
        """The schedule's beta for a round, checked to be a probability."""
        round_num = self.round_num if round_num is None else round_num
        return _check_beta(self.beta_schedule(round_num), f"beta_schedule({round_num}) (beta of round {round_num})")

    # -- rounds -----------------------------------------------------------------------------------------------
    def create_trajectory_collector(self) -> DAggerCollector:
        """A collector for the current round: its beta, the current learner, this round's directory."""
        beta = self.beta_for_round()
        self._collector = DAggerCollector(
            self.venv,
            self.bc_trainer.policy,
            beta,
            self._demo_dir_path_for_round(),
            self.rng,
            deterministic_learner=self.deterministic_learner,
            episodes_per_file=self.episodes_per_file,
        )
        return self._collector

    def load_demos(self, rounds: Sequence[int] | None = None) -> list[DAggerTrajectory]:
        """Raw episodes of the given rounds (default: every round up to the current one), from the files."""
        rounds = range(self.round_num + 1) if rounds is None else rounds
        out: list[DAggerTrajectory] = []
        for r in rounds:
            out.extend(load_round_dir(self._demo_dir_path_for_round(r), skip_corrupt=self.skip_corrupt))
        return out

    def _try_load_demos(self) -> None:
        demo_dir = self._demo_dir_path_for_round()
        if not round_files(demo_dir):
            raise NeedsDemosError(
                f"no demonstrations for round {self.round_num} in {str(demo_dir)!r}: collect a round first "
                "(collector = trainer.create_trajectory_collector(); obs = collector.reset(); step it with expert "
                "actions; collector.finish_round(...)), then call extend_and_update()"
            )
        if self._last_loaded_round >= self.round_num:
            return
        new = self.load_demos(range(self._last_loaded_round + 1, self.round_num + 1))
        if self.relabeler is not None:
            new = [relabel_trajectory(t, self.relabeler, self.rng, self.relabel_labels) for t in new]  # type: ignore[misc]
        if not new and not self._all_demos:
            raise NeedsDemosError(
                f"every round file up to round {self.round_num} was skipped as corrupt; collect a round first"
            )
        self._all_demos.extend(new)
        transitions = rollout.flatten_trajectories(self._all_demos)
        minibatch = self.bc_trainer.minibatch_size
        if len(transitions) < self.batch_size:
            raise ValueError(
                f"not enough transitions for one batch: {len(transitions)} < batch_size={self.batch_size}; "
                "collect more steps this round (rollout_round_min_timesteps) or use a smaller BC batch_size"
            )
        self.bc_trainer.set_demonstrations(_Batches(transitions, minibatch, self.rng))
        self._last_loaded_round = self.round_num
        logger.info("loaded %d episodes (%d transitions) for round %d", len(self._all_demos), len(transitions),
                    self.round_num)

    def extend_and_update(self, bc_train_kwargs: Mapping[str, Any] | None = None) -> int:
        """Load the new rounds' episodes, train BC on everything so far, advance the round; returns it.

        A collector of this round that was not finished is finished with ``policy="report"`` (warning) first.
        Keys as in imitation: ``log_rollouts_venv`` defaults to the venv; ``n_epochs`` to
        :attr:`DEFAULT_N_EPOCHS` unless ``n_epochs``/``n_batches`` is given.
        """
        kwargs = dict(bc_train_kwargs or {})
        kwargs.setdefault("log_rollouts_venv", self.venv)
        if "n_epochs" not in kwargs and "n_batches" not in kwargs:
            kwargs["n_epochs"] = self.DEFAULT_N_EPOCHS
        if self._collector is not None and self._collector.has_unsaved:
            self._collector.finish_round(policy="report")
        self._try_load_demos()
        self.bc_trainer.train(**kwargs)
        self.round_num += 1
        self._collector = None
        return self.round_num

    # -- checkpoints ------------------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        loss = self.bc_trainer.loss_calculator
        return {
            "format": CHECKPOINT_FORMAT,
            "trainer_class": _import_path(type(self)),
            "round_num": self.round_num,
            "rng_state": _rng_state(self.rng),
            "beta_schedule": self._beta_spec,
            "relabeler": self._relabeler_spec,
            "relabeler_object": self._has_relabeler_object,
            "relabel_labels": self.relabel_labels,
            "deterministic_learner": self.deterministic_learner,
            "episodes_per_file": self.episodes_per_file,
            "observation_space": str(self.venv.observation_space),
            "action_space": str(self.venv.action_space),
            "bc": {
                "batch_size": self.bc_trainer.batch_size,
                "minibatch_size": self.bc_trainer.minibatch_size,
                "ent_weight": loss.ent_weight,
                "l2_weight": loss.l2_weight,
                "optimizer_class": _import_path(type(self.bc_trainer.optimizer)),
            },
            "torch_version": th.__version__,
        }

    def save_trainer(self) -> tuple[pathlib.Path, pathlib.Path]:
        """Snapshot: ``policy-NNN.pt`` (tensors only) then ``checkpoint-NNN.json`` and ``checkpoint-latest.json``.

        The JSON is written last, so a crash leaves the previous consistent checkpoint in place. Returns
        ``(checkpoint_path, policy_path)`` as imitation does.
        """
        self.scratch_dir.mkdir(parents=True, exist_ok=True)
        policy_path = self.scratch_dir / f"policy-{self.round_num:03d}.pt"
        state = self._state()
        state["policy"] = _save_policy(
            self.policy, policy_path, {"optimizer": self.bc_trainer.optimizer.state_dict()}
        )
        self._extend_state(state)
        text = json.dumps(state, indent=1)
        checkpoint_path = self.scratch_dir / f"checkpoint-{self.round_num:03d}.json"
        for path in (checkpoint_path, self.scratch_dir / "checkpoint-latest.json"):
            atomic_write(path, lambda f: f.write(text.encode()))
        return checkpoint_path, policy_path

    def _extend_state(self, state: dict[str, Any]) -> None:
        """Hook for subclasses to add their own checkpoint entries."""

    @classmethod
    def reconstruct_trainer(
        cls,
        scratch_dir: str | os.PathLike[str],
        venv: VecEnv,
        custom_logger: imit_logger.HierarchicalLogger | None = None,
        device: th.device | str = "auto",
        **overrides: Any,
    ) -> DAggerTrainer:
        """See :func:`reconstruct_trainer`."""
        return reconstruct_trainer(scratch_dir, venv, custom_logger, device, **overrides)

    @classmethod
    def _reconstruct(
        cls,
        state: dict[str, Any],
        scratch_dir: pathlib.Path,
        venv: VecEnv,
        custom_logger: imit_logger.HierarchicalLogger | None,
        device: th.device,
        overrides: dict[str, Any],
    ) -> DAggerTrainer:
        for attr in ("observation_space", "action_space"):
            if str(getattr(venv, attr)) != state[attr]:
                raise ValueError(
                    f"venv.{attr} {getattr(venv, attr)} differs from the checkpoint's {state[attr]}; pass the "
                    "environment the trainer was created with"
                )
        policy, extra = _load_policy(state["policy"], scratch_dir, venv, device)
        rng = _rng_from_state(state["rng_state"])
        bc_state = state["bc"]
        bc_trainer = bc.BC(
            observation_space=venv.observation_space,
            action_space=venv.action_space,
            rng=rng,
            policy=policy,  # type: ignore[arg-type]
            batch_size=bc_state["batch_size"],
            minibatch_size=bc_state["minibatch_size"],
            optimizer_cls=_import(bc_state["optimizer_class"]),
            ent_weight=bc_state["ent_weight"],
            l2_weight=bc_state["l2_weight"],
            device=device,
            custom_logger=custom_logger,
        )
        if "optimizer" in extra:
            bc_trainer.optimizer.load_state_dict(extra["optimizer"])
        beta_schedule = overrides.pop("beta_schedule", None)
        beta_kwargs = None
        if beta_schedule is None:
            spec = state["beta_schedule"]
            if spec is None:
                raise ValueError(
                    "the checkpoint's beta schedule could not be stored (e.g. a lambda); pass beta_schedule= to "
                    "reconstruct_trainer"
                )
            if "name" in spec:
                beta_schedule, beta_kwargs = spec["name"], _decode(spec["kwargs"])
            else:
                beta_schedule = _decode(spec)
        relabeler = overrides.pop("relabeler", None)
        relabeler_kwargs = None
        if relabeler is None and state["relabeler"] is not None:
            relabeler = state["relabeler"]["name"]
            relabeler_kwargs = _decode(state["relabeler"]["kwargs"])
        elif relabeler is None and state["relabeler_object"]:
            raise ValueError("the trainer was created with a relabeler object; pass relabeler= to reconstruct_trainer")
        kwargs = {
            "venv": venv,
            "scratch_dir": scratch_dir,
            "rng": rng,
            "beta_schedule": beta_schedule,
            "beta_schedule_kwargs": beta_kwargs,
            "bc_trainer": bc_trainer,
            "custom_logger": custom_logger,
            "deterministic_learner": state["deterministic_learner"],
            "episodes_per_file": state["episodes_per_file"],
            "relabeler": relabeler,
            "relabeler_kwargs": relabeler_kwargs,
            "relabel_labels": state["relabel_labels"],
            **cls._reconstruct_kwargs(state, scratch_dir, venv, device, overrides),
            **overrides,
        }
        trainer = cls(**kwargs)
        trainer.round_num = int(state["round_num"])
        return trainer

    @classmethod
    def _reconstruct_kwargs(
        cls, state: dict[str, Any], scratch_dir: pathlib.Path, venv: VecEnv, device: th.device,
        overrides: dict[str, Any],
    ) -> dict[str, Any]:
        return {}


def reconstruct_trainer(
    scratch_dir: str | os.PathLike[str],
    venv: VecEnv,
    custom_logger: imit_logger.HierarchicalLogger | None = None,
    device: th.device | str = "auto",
    **overrides: Any,
) -> DAggerTrainer:
    """Rebuild the trainer of ``scratch_dir/checkpoint-latest.json`` on ``venv`` (in any process).

    Everything loads with ``torch.load(weights_only=True)`` and ``np.load(allow_pickle=False)``. Components that
    could not be stored by name (a lambda beta schedule, a relabeler or expert object) are passed again as
    ``overrides`` (``beta_schedule=``, ``relabeler=``, ``expert_policy=``); ``skip_corrupt=True`` loads the
    readable round files of a damaged directory.

    The random generator continues from the checkpoint, so seed ``venv`` afresh: with the killed run's env seed
    and deterministic expert and learner, a resumed round would collect the same episodes again.
    """
    scratch_dir = pathlib.Path(scratch_dir)
    state = _read_checkpoint(scratch_dir)
    cls = _import(state["trainer_class"])
    if not (inspect.isclass(cls) and issubclass(cls, DAggerTrainer)):
        raise ValueError(f"checkpoint names {state['trainer_class']!r}, not a DAggerTrainer subclass")
    return cls._reconstruct(state, scratch_dir, venv, custom_logger, sb3_utils.get_device(device), dict(overrides))


class SimpleDAggerTrainer(DAggerTrainer):
    """DAgger with a synthetic expert: :meth:`train` runs the rounds itself.

    :param expert_policy: an SB3 policy or algorithm, a ``predict``-er, a ``callable(obs) -> actions``, or an
        ``"expert"`` plugin name (e.g. ``"shortest-path"``, built on ``venv``).
    :param expert_kwargs: arguments of the named expert plugin.
    :param expert_trajs: initial demonstrations, written to round 0.
    :param unfinished: what :meth:`train` does with episodes running when a round's quota is met
        (see :meth:`DAggerCollector.finish_round`).
    """

    def __init__(
        self,
        *,
        venv: VecEnv,
        scratch_dir: str | os.PathLike[str],
        expert_policy: Any,
        rng: np.random.Generator,
        expert_trajs: Sequence[types.Trajectory] | None = None,
        expert_kwargs: Mapping[str, Any] | None = None,
        unfinished: UnfinishedPolicy = "complete",
        **dagger_trainer_kwargs: Any,
    ) -> None:
        super().__init__(venv=venv, scratch_dir=scratch_dir, rng=rng, **dagger_trainer_kwargs)
        self._expert_spec: dict[str, Any] | None = None
        if isinstance(expert_policy, str):
            self._expert_spec = {"name": expert_policy, "kwargs": _try_encode(dict(expert_kwargs or {}))}
            expert_policy = plugins.resolve("expert", expert_policy, venv=venv, **dict(expert_kwargs or {}))
        if isinstance(expert_policy, BaseAlgorithm):
            expert_policy = expert_policy.policy
        _check_policy_spaces(expert_policy, venv, "expert_policy")
        if not (callable(getattr(expert_policy, "predict", None)) or callable(expert_policy)):
            raise ValueError(
                "expert_policy must be an SB3 policy/algorithm, an object with predict(), a callable(obs) -> "
                f"actions or an expert plugin name; got {type(expert_policy).__name__}"
            )
        if unfinished not in ("complete", "report"):
            raise ValueError(f"unfinished must be 'complete' or 'report'; got {unfinished!r}")
        self.unfinished = unfinished
        self.expert_policy = expert_policy
        if expert_trajs:
            save_trajectories(
                self._demo_dir_path_for_round(0)
                / f"initial-demos-{_next_file_index(self._demo_dir_path_for_round(0)):05d}-{uuid.uuid4().hex[:8]}.npz",
                list(expert_trajs),
                meta={"source": "expert_trajs"},
            )

    def _extend_state(self, state: dict[str, Any]) -> None:
        state["unfinished"] = self.unfinished
        if self._expert_spec is not None:
            state["expert"] = self._expert_spec
        elif isinstance(self.expert_policy, BasePolicy) and any(True for _ in self.expert_policy.parameters()):
            # A parameter-free policy (e.g. ShortestPathExpert) is bound to something a checkpoint cannot hold.
            state["expert"] = {"policy": _save_policy(self.expert_policy, self.scratch_dir / "expert-policy.pt")}
        else:
            state["expert"] = None

    @classmethod
    def _reconstruct_kwargs(
        cls, state: dict[str, Any], scratch_dir: pathlib.Path, venv: VecEnv, device: th.device,
        overrides: dict[str, Any],
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"unfinished": state.get("unfinished", "complete")}
        if "expert_policy" in overrides:
            return kwargs
        spec = state.get("expert")
        if spec is None:
            raise ValueError(
                "the checkpoint's expert could not be stored (a callable or custom object); pass expert_policy= "
                "to reconstruct_trainer"
            )
        if "name" in spec:
            kwargs["expert_policy"] = spec["name"]
            kwargs["expert_kwargs"] = _decode(spec["kwargs"])
        else:
            kwargs["expert_policy"], _ = _load_policy(spec["policy"], scratch_dir, venv, device)
        return kwargs

    def collect_round(
        self,
        collector: DAggerCollector | None = None,
        *,
        min_episodes: int = 3,
        min_timesteps: int = 500,
    ) -> list[types.TrajectoryWithRew]:
        """Drive a collector with the expert until both quotas of finished episodes are met; finish the round."""
        collector = collector or self.create_trajectory_collector()
        expert = PolicyRunner(self.expert_policy, collector.num_envs, deterministic=True)
        obs = collector.reset()
        while collector.round_episodes < min_episodes or collector.round_timesteps < min_timesteps:
            obs, _, dones, _ = collector.step(expert(obs))
            expert.observe_dones(dones)
        return collector.finish_round(policy=self.unfinished, expert=expert)

    def train(
        self,
        total_timesteps: int,
        *,
        rollout_round_min_episodes: int = 3,
        rollout_round_min_timesteps: int = 500,
        bc_train_kwargs: Mapping[str, Any] | None = None,
        save_every_round: bool = True,
    ) -> None:
        """Rounds of collection and BC until ``total_timesteps`` labelled steps were collected in this call.

        :param save_every_round: checkpoint after each round, so that a killed run resumes with
            :func:`reconstruct_trainer` (imitation's ``train`` never saves).
        """
        total = 0
        while total < total_timesteps:
            trajs = self.collect_round(
                min_episodes=rollout_round_min_episodes,
                min_timesteps=max(rollout_round_min_timesteps, self.batch_size),
            )
            steps = sum(len(t) for t in trajs)
            total += steps
            for traj in trajs:
                self._logger.record_mean("dagger/mean_episode_reward", float(np.sum(traj.rews)))
            self._logger.record("dagger/total_timesteps", total)
            self._logger.record("dagger/round_num", self.round_num)
            self._logger.record("dagger/round_episode_count", len(trajs))
            self._logger.record("dagger/round_timestep_count", steps)
            self.extend_and_update(bc_train_kwargs)
            if save_every_round:
                self.save_trainer()
