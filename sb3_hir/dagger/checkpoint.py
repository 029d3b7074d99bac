"""Data-only trainer checkpoints: plain JSON settings plus tensor-only ``.pt`` files, written and read back.

The trainer hands over what it holds (:func:`trainer_state`, :func:`write_checkpoint`) and gets back its
constructor arguments (:func:`trainer_kwargs`); the format lives here alone, so the trainer keeps only its rounds.

Loading a checkpoint runs no code named by the checkpoint. Tensors (policy weights, optimizer state) load with
``torch.load(weights_only=True)``; settings are JSON numbers, strings, lists and objects. Where a setting is a
class (the policy class, its activation or features extractor, the optimizer), the file holds a *name* that is
looked up in :data:`ALLOWED_CLASSES`, an allow-list written here in the source; a name that is not on it is
refused, never imported. A class that is not on the list comes from the caller instead (``bc_trainer=`` or
``policy_factory=`` of :func:`~sb3_hir.dagger.reconstruct_trainer`).

Beside the checkpoint, ``policy-latest.pt`` is written in imitation's own format (a pickled policy, what
``imitation.util.util.save_policy`` writes) so that imitation's ``bc.reconstruct_policy`` and tools built on it
read our runs; sb3-hir never loads that file.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import logging
import os
import pathlib
import pickle
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from imitation.algorithms import bc
from imitation.algorithms import dagger as imitation_dagger
from imitation.util import logger as imit_logger
from stable_baselines3.common import utils as sb3_utils
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env import VecEnv

from sb3_hir.atomic import atomic_write

__all__ = [
    "ALLOWED_CLASSES",
    "CHECKPOINT_FORMAT",
    "PolicyFactory",
    "beta_schedule_spec",
    "build_policy",
    "class_name",
    "has_checkpoint",
    "load_policy",
    "lookup_class",
    "named_spec",
    "read_checkpoint",
    "reconstruct_policy",
    "restore_bc",
    "rng_from_state",
    "save_imitation_policy",
    "save_policy",
    "simple_trainer_kwargs",
    "simple_trainer_state",
    "space_from_json",
    "space_to_json",
    "to_json",
    "trainer_kwargs",
    "trainer_state",
    "write_checkpoint",
]

logger = logging.getLogger(__name__)

#: Format tag of trainer checkpoints (``checkpoint-*.json``); 1 named code to import, 2 is data only.
CHECKPOINT_FORMAT = "sb3_hir.dagger.trainer/2"

#: The file a trainer's latest checkpoint is in, and the one a new run must not find in its ``scratch_dir``.
LATEST = "checkpoint-latest.json"

#: Builds the learner (or expert) policy for ``(observation_space, action_space)``.
PolicyFactory = Callable[[gym.Space, gym.Space], BasePolicy]


@functools.cache
def _allowed_classes() -> dict[str, type]:
    from imitation.policies.base import FeedForward32Policy
    from sb3_contrib.common.recurrent import policies as recurrent
    from stable_baselines3.common import policies, torch_layers

    from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
    from sb3_hir.policies import PerActionActorCriticPolicy

    classes: list[type] = [
        policies.ActorCriticPolicy,
        policies.ActorCriticCnnPolicy,
        policies.MultiInputActorCriticPolicy,
        PerActionActorCriticPolicy,
        FeedForward32Policy,
        recurrent.RecurrentActorCriticPolicy,
        recurrent.RecurrentActorCriticCnnPolicy,
        recurrent.RecurrentMultiInputActorCriticPolicy,
        torch_layers.FlattenExtractor,
        torch_layers.CombinedExtractor,
        torch_layers.NatureCNN,
        KeySelectExtractor,
        HistoryExtractor,
        *(getattr(th.nn, n) for n in ("Tanh", "ReLU", "ELU", "LeakyReLU", "GELU", "SiLU", "Sigmoid", "Identity")),
        *(getattr(th.optim, n) for n in ("Adam", "AdamW", "SGD", "RMSprop")),
    ]
    return {class_name(cls): cls for cls in classes}


class _AllowedClasses(Mapping[str, type]):
    """The allow-list, built on first use (importing the policy modules is not free)."""

    def __getitem__(self, name: str) -> type:
        return _allowed_classes()[name]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(_allowed_classes())

    def __len__(self) -> int:
        return len(_allowed_classes())


#: Classes a checkpoint may name, by :func:`class_name`.
ALLOWED_CLASSES: Mapping[str, type] = _AllowedClasses()

#: Constructor arguments that an allow-listed class fixes itself and rejects when given again: its
#: ``_get_constructor_parameters`` reports them, but its ``__init__(*args, **kwargs)`` signature cannot say so.
_FIXED_ARGUMENTS: dict[str, tuple[str, ...]] = {"imitation.policies.base.FeedForward32Policy": ("net_arch",)}


def class_name(cls: type) -> str:
    """The name a checkpoint stores for a class: a key of the allow-list, never imported."""
    return f"{cls.__module__}.{cls.__qualname__}"


def lookup_class(name: Any, what: str) -> type:
    """The allow-listed class called ``name``; anything else is refused without importing it."""
    cls = _allowed_classes().get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(
            f"checkpoint names {what} {name!r}, which is not on sb3_hir.dagger.checkpoint.ALLOWED_CLASSES; "
            "checkpoints are data only and never import code. Pass it yourself (reconstruct_trainer(..., "
            "bc_trainer=...) or policy_factory=...)"
        )
    return cls


class NotPlainData(TypeError):
    """A value that JSON plus the class allow-list cannot hold."""


def to_json(value: Any) -> Any:
    """``value`` as plain JSON: numbers, strings, lists, str-keyed objects; allow-listed classes as
    ``{"class": name}``. Anything else raises :class:`NotPlainData`."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value) or "class" in value:
            raise NotPlainData(f"dict keys must be str (and not 'class'): {value!r}")
        return {k: to_json(v) for k, v in value.items()}
    if inspect.isclass(value) and class_name(value) in ALLOWED_CLASSES:
        return {"class": class_name(value)}
    raise NotPlainData(f"cannot store {value!r} as plain JSON (classes must be on ALLOWED_CLASSES)")


def try_to_json(value: Any) -> Any | None:
    try:
        return to_json(value)
    except NotPlainData:
        return None


def from_json(value: Any) -> Any:
    """Inverse of :func:`to_json`: classes come from the allow-list, everything else is the JSON value."""
    if isinstance(value, list):
        return [from_json(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"class"}:
            return lookup_class(value["class"], "the class")
        return {k: from_json(v) for k, v in value.items()}
    return value


def named_spec(name: str, kwargs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A component given by its plugin name, as ``{"name", "kwargs"}``; None when its arguments are not plain data
    (the caller then passes the component again to reload)."""
    stored = try_to_json(dict(kwargs or {}))
    return None if stored is None else {"name": name, "kwargs": stored}


def beta_schedule_spec(schedule: Any, name: str | None, kwargs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A beta schedule as plain data: a plugin name and its arguments, or imitation's two schedule classes."""
    if name is not None:
        return named_spec(name, kwargs)
    if type(schedule) is imitation_dagger.LinearBetaSchedule:
        return {"name": "linear", "kwargs": {"rampdown_rounds": schedule.rampdown_rounds}}
    if type(schedule) is imitation_dagger.ExponentialBetaSchedule:
        return {"name": "exponential", "kwargs": {"decay_probability": schedule.decay_probability}}
    return None


def space_to_json(space: gym.Space) -> dict[str, Any] | None:
    """A Box, Discrete, MultiDiscrete, MultiBinary or Dict space as plain JSON, so that a policy reloads without
    the env (imitation's ``bc.reconstruct_policy(policy_path)`` takes no env); None for any other space."""
    spaces = gym.spaces
    if isinstance(space, spaces.Box):
        return {"type": "Box", "low": space.low.tolist(), "high": space.high.tolist(), "dtype": str(space.dtype)}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": space.nvec.tolist(), "dtype": str(space.dtype)}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": to_json(space.n)}
    if isinstance(space, spaces.Dict):
        parts = {k: space_to_json(v) for k, v in space.spaces.items()}
        return None if any(v is None for v in parts.values()) else {"type": "Dict", "spaces": parts}
    return None


def space_from_json(value: Mapping[str, Any]) -> gym.Space:
    """Inverse of :func:`space_to_json`; only these five space types are built, and dtypes are numpy names."""
    spaces = gym.spaces
    kind = value.get("type")
    if kind == "Box":
        dtype = np.dtype(value["dtype"])
        return spaces.Box(np.array(value["low"], dtype=dtype), np.array(value["high"], dtype=dtype), dtype=dtype)
    if kind == "Discrete":
        return spaces.Discrete(int(value["n"]), start=int(value["start"]))
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(np.array(value["nvec"]), dtype=np.dtype(value["dtype"]))
    if kind == "MultiBinary":
        return spaces.MultiBinary(value["n"])
    if kind == "Dict":
        return spaces.Dict({k: space_from_json(v) for k, v in value["spaces"].items()})
    raise ValueError(f"the checkpoint names space type {kind!r}; accepted: Box, Discrete, MultiDiscrete, "
                     "MultiBinary, Dict")


def _unused_lr_schedule(_progress_remaining: float) -> float:
    """BC trains with its own optimizer; the policy's optimizer gets BC's 'unused' learning rate."""
    return float(th.finfo(th.float32).max)


def policy_spec(policy: BasePolicy) -> dict[str, Any]:
    """How to rebuild ``policy``: its class name and constructor arguments as plain JSON (None when they are not
    plain data or the class is not allow-listed; the caller then supplies the policy on reload)."""
    params = dict(policy._get_constructor_parameters())
    params.pop("observation_space", None)
    params.pop("action_space", None)
    has_lr = params.pop("lr_schedule", None) is not None
    name = class_name(type(policy))
    kwargs = try_to_json(params) if name in ALLOWED_CLASSES else None
    if kwargs is None:
        logger.info("policy %s: architecture not stored (pass bc_trainer= or policy_factory= to reload)", name)
    return {"class": name, "kwargs": kwargs, "lr_schedule": has_lr}


def build_policy(spec: Mapping[str, Any], observation_space: gym.Space, action_space: gym.Space) -> BasePolicy:
    """A fresh policy from :func:`policy_spec`'s record, using only allow-listed classes."""
    if spec.get("kwargs") is None:
        raise ValueError(
            f"the checkpoint does not hold the architecture of policy class {spec.get('class')!r} (not on "
            "ALLOWED_CLASSES, or constructor arguments that are not plain data); pass bc_trainer= (or "
            "policy_factory=) to reconstruct_trainer to build it"
        )
    cls = lookup_class(spec["class"], "policy class")
    kwargs = from_json(spec["kwargs"])
    if not isinstance(kwargs, dict):
        raise ValueError(f"policy kwargs of the checkpoint must be a JSON object; got {kwargs!r}")
    for fixed in _FIXED_ARGUMENTS.get(spec["class"], ()):
        kwargs.pop(fixed, None)
    parameters = inspect.signature(cls).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in parameters}  # arguments this version no longer takes
    if spec.get("lr_schedule"):
        kwargs["lr_schedule"] = _unused_lr_schedule
    return cls(observation_space, action_space, **kwargs)  # type: ignore[call-arg]


def save_policy(
    policy: BasePolicy, path: pathlib.Path, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Tensors only (``torch.load(weights_only=True)`` reads them); the architecture goes into the JSON."""
    payload = {"policy": policy.state_dict(), **(extra or {})}
    atomic_write(path, lambda f: th.save(payload, f))
    return {"file": path.name, **policy_spec(policy)}


def load_policy(
    entry: Mapping[str, Any],
    directory: pathlib.Path,
    observation_space: gym.Space,
    action_space: gym.Space,
    device: th.device,
    policy: BasePolicy | PolicyFactory | None = None,
) -> tuple[BasePolicy, dict[str, Any]]:
    """The weights of ``entry`` in a policy built from the allow-list, or in ``policy`` (a policy or a factory)
    given by the caller; returns it with the file's other tensors (e.g. the optimizer state)."""
    payload = th.load(directory / entry["file"], map_location=device, weights_only=True)
    if policy is None:
        policy = build_policy(entry, observation_space, action_space)
    elif not isinstance(policy, BasePolicy):
        policy = policy(observation_space, action_space)
        if not isinstance(policy, BasePolicy):
            raise ValueError(f"policy_factory must return an SB3 BasePolicy; got {type(policy).__name__}")
    policy = policy.to(device)
    policy.load_state_dict(payload.pop("policy"))  # strict: a different architecture fails here, by name
    return policy, payload


def restore_bc(
    state: Mapping[str, Any],
    directory: pathlib.Path,
    observation_space: gym.Space,
    action_space: gym.Space,
    device: th.device,
    rng: np.random.Generator,
    custom_logger: imit_logger.HierarchicalLogger | None = None,
    bc_trainer: bc.BC | None = None,
    policy_factory: PolicyFactory | None = None,
) -> bc.BC:
    """The checkpoint's BC learner: weights and optimizer state loaded into ``bc_trainer`` when the caller gives
    one, else into a ``bc.BC`` rebuilt from the stored settings (policy from ``policy_factory`` or the allow-list)."""
    if bc_trainer is not None:
        if not isinstance(bc_trainer, bc.BC):
            raise ValueError(f"bc_trainer must be an imitation.algorithms.bc.BC; got {type(bc_trainer).__name__}")
        _, extra = load_policy(state["policy"], directory, observation_space, action_space, device, bc_trainer.policy)
    else:
        policy, extra = load_policy(state["policy"], directory, observation_space, action_space, device,
                                    policy_factory)
        settings = state["bc"]
        if settings["optimizer_class"] is None:
            raise ValueError("the checkpoint's BC optimizer class is not on ALLOWED_CLASSES; pass bc_trainer=")
        bc_trainer = bc.BC(
            observation_space=observation_space,
            action_space=action_space,
            rng=rng,
            policy=policy,  # type: ignore[arg-type]
            batch_size=settings["batch_size"],
            minibatch_size=settings["minibatch_size"],
            optimizer_cls=lookup_class(settings["optimizer_class"], "optimizer class"),
            ent_weight=settings["ent_weight"],
            l2_weight=settings["l2_weight"],
            device=device,
            custom_logger=custom_logger,
        )
    if "optimizer" in extra:
        bc_trainer.optimizer.load_state_dict(extra["optimizer"])
    return bc_trainer


def save_imitation_policy(policy: BasePolicy, path: pathlib.Path) -> pathlib.Path | None:
    """imitation's policy file (``th.save(policy)``, as ``imitation.util.util.save_policy``), for imitation's
    ``bc.reconstruct_policy``. A policy that cannot be pickled is skipped with a warning: our checkpoint does
    not need this file."""
    try:
        atomic_write(path, lambda f: th.save(policy, f))
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        # stacklevel: the caller of save_trainer, through write_checkpoint
        warnings.warn(f"{path.name} (imitation's policy format) not written: {exc}", RuntimeWarning, stacklevel=4)
        return None
    return path


def trainer_state(
    trainer: str,
    round_num: int,
    rng: np.random.Generator,
    venv: VecEnv,
    bc_trainer: bc.BC,
    *,
    beta_schedule: dict[str, Any] | None,
    relabeler: dict[str, Any] | None,
    relabeler_object: bool,
    relabel_labels: str,
    deterministic_learner: bool,
    episodes_per_file: int,
    fsync: bool,
) -> dict[str, Any]:
    """A trainer's checkpoint entries but the weights (:func:`write_checkpoint` adds those).

    ``trainer`` is the class name :func:`~sb3_hir.dagger.reconstruct_trainer` dispatches on; ``beta_schedule``
    and ``relabeler`` are :func:`named_spec` records (None: not data, passed again on reload), and
    ``relabeler_object`` says that a relabeler was given which could not be stored, so a reload without one fails
    instead of training unrelabeled.
    """
    loss = bc_trainer.loss_calculator
    optimizer = class_name(type(bc_trainer.optimizer))
    return {
        "format": CHECKPOINT_FORMAT,
        "trainer": trainer,
        "round_num": round_num,
        "rng_state": rng_state(rng),
        "beta_schedule": beta_schedule,
        "relabeler": relabeler,
        "relabeler_object": relabeler_object,
        "relabel_labels": relabel_labels,
        "deterministic_learner": deterministic_learner,
        "episodes_per_file": episodes_per_file,
        "fsync": fsync,
        "observation_space": str(venv.observation_space),
        "action_space": str(venv.action_space),
        # the spaces as data, for reconstruct_policy(policy_path) without an env (None: not representable)
        "spaces": {"observation": space_to_json(venv.observation_space),
                   "action": space_to_json(venv.action_space)},
        "bc": {
            "batch_size": bc_trainer.batch_size,
            "minibatch_size": bc_trainer.minibatch_size,
            "ent_weight": float(loss.ent_weight),
            "l2_weight": float(loss.l2_weight),
            "optimizer_class": optimizer if optimizer in ALLOWED_CLASSES else None,
        },
        "torch_version": th.__version__,
    }


def write_checkpoint(
    scratch_dir: pathlib.Path,
    state: dict[str, Any],
    bc_trainer: bc.BC,
    add_entries: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[pathlib.Path, pathlib.Path]:
    """``weights-NNN.pt`` (tensors only), then ``checkpoint-NNN.json`` and ``checkpoint-latest.json``, then
    ``policy-latest.pt`` in imitation's format; returns ``(checkpoint_path, policy_path)`` as imitation does.

    Each file is written atomically and the JSON after the weights it names, so a crash at any point leaves the
    previous consistent checkpoint in place. ``add_entries`` adds a subclass's own entries (and may write files
    of its own) before the JSON is written.
    """
    round_num = int(state["round_num"])
    scratch_dir.mkdir(parents=True, exist_ok=True)
    state["policy"] = save_policy(
        bc_trainer.policy, scratch_dir / f"weights-{round_num:03d}.pt", {"optimizer": bc_trainer.optimizer.state_dict()}
    )
    if add_entries is not None:
        add_entries(state)
    text = json.dumps(state, indent=1)
    checkpoint_path = scratch_dir / f"checkpoint-{round_num:03d}.json"
    for path in (checkpoint_path, scratch_dir / LATEST):
        atomic_write(path, lambda f: f.write(text.encode()))
    policy_path = scratch_dir / "policy-latest.pt"
    save_imitation_policy(bc_trainer.policy, policy_path)
    return checkpoint_path, policy_path


def has_checkpoint(scratch_dir: pathlib.Path) -> bool:
    return (scratch_dir / LATEST).exists()


def _read_json_checkpoint(path: pathlib.Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"checkpoint {str(path)!r} is not valid JSON: {exc}") from exc
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        found = state.get("format") if isinstance(state, dict) else None
        raise ValueError(f"checkpoint {str(path)!r} has format {found!r}, expected {CHECKPOINT_FORMAT!r}")
    return state


def read_checkpoint(scratch_dir: pathlib.Path) -> dict[str, Any]:
    """The newest checkpoint of ``scratch_dir``: ``checkpoint-latest.json``, or a numbered one of a later round
    (a process killed between writing ``checkpoint-NNN.json`` and ``checkpoint-latest.json`` left that one)."""
    latest = scratch_dir / LATEST
    if not latest.exists():
        raise FileNotFoundError(
            f"no DAgger checkpoint at {str(latest)!r}; call save_trainer() in the first process (SimpleDAggerTrainer"
            ".train saves after every round) before reconstruct_trainer"
        )
    state = _read_json_checkpoint(latest)
    rounds = [int(p.stem[11:]) for p in scratch_dir.glob("checkpoint-*.json") if p.stem[11:].isdigit()]
    if rounds and max(rounds) > int(state["round_num"]):
        state = _read_json_checkpoint(scratch_dir / f"checkpoint-{max(rounds):03d}.json")
    return state


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return to_json(rng.bit_generator.state)  # type: ignore[no-any-return]


#: numpy bit generators a checkpoint may name.
_BIT_GENERATORS = {n: getattr(np.random, n) for n in ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")}


def rng_from_state(state: Mapping[str, Any]) -> np.random.Generator:
    cls = _BIT_GENERATORS.get(state.get("bit_generator"))  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"the checkpoint's rng_state names bit generator {state.get('bit_generator')!r}; "
                         f"accepted: {', '.join(_BIT_GENERATORS)}")
    bit_generator = cls()
    try:
        bit_generator.state = dict(state)  # type: ignore[attr-defined]
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"the checkpoint's rng_state is not a {state['bit_generator']} state: {exc}") from exc
    return np.random.Generator(bit_generator)  # type: ignore[arg-type]


@dataclasses.dataclass
class Restore:
    """One reload: the checkpoint's ``state`` and what the caller passes again beside it.

    Each part of the trainer pops its own entries from ``overrides``; what is left goes to the constructor as given.
    """

    state: Mapping[str, Any]
    scratch_dir: pathlib.Path
    venv: VecEnv
    custom_logger: imit_logger.HierarchicalLogger | None
    device: th.device
    overrides: dict[str, Any]


def trainer_kwargs(restore: Restore) -> dict[str, Any]:
    """The constructor arguments of the checkpoint's trainer on ``restore.venv``.

    ``restore.overrides`` give what could not be stored as data: ``bc_trainer=`` or ``policy_factory=``,
    ``beta_schedule=`` (with ``beta_schedule_kwargs=``), ``relabeler=`` (with ``relabeler_kwargs=``).
    """
    state, scratch_dir, venv, overrides = restore.state, restore.scratch_dir, restore.venv, restore.overrides
    for attr in ("observation_space", "action_space"):
        if str(getattr(venv, attr)) != state[attr]:
            raise ValueError(
                f"venv.{attr} {getattr(venv, attr)} differs from the checkpoint's {state[attr]}; pass the "
                "environment the trainer was created with"
            )
    rng = rng_from_state(state["rng_state"])
    bc_trainer = restore_bc(state, scratch_dir, venv.observation_space, venv.action_space, restore.device, rng,
                            restore.custom_logger, overrides.pop("bc_trainer", None),
                            overrides.pop("policy_factory", None))
    beta_schedule = overrides.pop("beta_schedule", None)
    beta_kwargs = overrides.pop("beta_schedule_kwargs", None)
    if beta_schedule is None:
        spec = state["beta_schedule"]
        if spec is None:
            raise ValueError(
                "the checkpoint's beta schedule could not be stored as data (e.g. a lambda); pass "
                "beta_schedule= to reconstruct_trainer"
            )
        beta_schedule, beta_kwargs = spec["name"], from_json(spec["kwargs"])
    relabeler = overrides.pop("relabeler", None)
    relabeler_kwargs = overrides.pop("relabeler_kwargs", None)
    if relabeler is None and state["relabeler"] is not None:
        relabeler = state["relabeler"]["name"]
        relabeler_kwargs = from_json(state["relabeler"]["kwargs"])
    elif relabeler is None and state["relabeler_object"]:
        raise ValueError("the trainer's relabeler could not be stored as data; pass relabeler= to "
                         "reconstruct_trainer")
    kwargs = {
        "venv": venv,
        "scratch_dir": scratch_dir,
        "rng": rng,
        "beta_schedule": beta_schedule,
        "beta_schedule_kwargs": beta_kwargs,
        "bc_trainer": bc_trainer,
        "custom_logger": restore.custom_logger,
        "deterministic_learner": state["deterministic_learner"],
        "episodes_per_file": state["episodes_per_file"],
        "fsync": state.get("fsync", False),
        "relabeler": relabeler,
        "relabeler_kwargs": relabeler_kwargs,
        "relabel_labels": state["relabel_labels"],
    }
    return kwargs


def simple_trainer_state(
    unfinished: str, expert_spec: dict[str, Any] | None, expert_policy: Any, scratch_dir: pathlib.Path
) -> dict[str, Any]:
    """``SimpleDAggerTrainer``'s own entries: its expert as a plugin name (``expert_spec``, from :func:`named_spec`),
    else as weights in ``expert-policy.pt``, else None (passed again on reload)."""
    if expert_spec is not None:
        expert = expert_spec
    elif isinstance(expert_policy, BasePolicy) and any(True for _ in expert_policy.parameters()):
        # A parameter-free policy (e.g. ShortestPathExpert) is bound to something a checkpoint cannot hold.
        expert = {"policy": save_policy(expert_policy, scratch_dir / "expert-policy.pt")}
    else:
        expert = None
    return {"unfinished": unfinished, "expert": expert}


def simple_trainer_kwargs(restore: Restore) -> dict[str, Any]:
    """``SimpleDAggerTrainer``'s own constructor arguments (its expert unless ``restore.overrides`` gives one)."""
    state, venv = restore.state, restore.venv
    kwargs: dict[str, Any] = {"unfinished": state.get("unfinished", "complete")}
    if "expert_policy" in restore.overrides:
        return kwargs
    spec = state.get("expert")
    if spec is None:
        raise ValueError(
            "the checkpoint's expert could not be stored as data (a callable or custom object); pass "
            "expert_policy= to reconstruct_trainer"
        )
    if "name" in spec:
        kwargs["expert_policy"] = spec["name"]
        kwargs["expert_kwargs"] = from_json(spec["kwargs"])
    else:
        try:
            kwargs["expert_policy"], _ = load_policy(
                spec["policy"], restore.scratch_dir, venv.observation_space, venv.action_space, restore.device
            )
        except ValueError as exc:
            raise ValueError(f"{exc} (for the expert: pass expert_policy= to reconstruct_trainer)") from exc
    return kwargs


def reconstruct_policy(
    policy_path: str | os.PathLike[str],
    device: th.device | str = "auto",
    *,
    venv: VecEnv | None = None,
    policy_factory: PolicyFactory | None = None,
) -> BasePolicy:
    """The learner policy of the latest checkpoint, without the trainer, reading data only.

    Takes imitation's call shape, ``bc.reconstruct_policy(policy_path, device)``, where imitation unpickles the
    file (refused by torch >= 2.6's ``weights_only`` default unless ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` is set):
    ``policy_path`` is ``scratch_dir/policy-latest.pt`` as :meth:`~sb3_hir.dagger.DAggerTrainer.save_trainer`
    returns it, or the ``scratch_dir``; the weights come from the checkpoint beside it and the spaces from the
    checkpoint too, or from ``venv`` when given. ``policy_factory`` builds a policy class that is not on
    ``ALLOWED_CLASSES``.
    """
    path = pathlib.Path(policy_path)
    scratch_dir = path if path.is_dir() else path.parent
    if not has_checkpoint(scratch_dir):
        raise FileNotFoundError(
            f"policy_path {str(path)!r}: no sb3-hir checkpoint (checkpoint-latest.json) in {str(scratch_dir)!r}; "
            "pass the policy-latest.pt that save_trainer() returned, or its scratch_dir (a file of imitation's "
            "util.save_policy loads with imitation's bc.reconstruct_policy)"
        )
    state = read_checkpoint(scratch_dir)
    if venv is not None:
        observation_space, action_space = venv.observation_space, venv.action_space
    else:
        stored = state.get("spaces") or {}
        if stored.get("observation") is None or stored.get("action") is None:
            raise ValueError(
                f"the checkpoint in {str(scratch_dir)!r} does not hold its spaces as data "
                f"({state['observation_space']}, {state['action_space']}); pass venv= to reconstruct_policy"
            )
        observation_space = space_from_json(stored["observation"])
        action_space = space_from_json(stored["action"])
    policy, _ = load_policy(state["policy"], scratch_dir, observation_space, action_space,
                            sb3_utils.get_device(device), policy_factory)
    return policy
