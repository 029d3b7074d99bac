"""Data-only trainer checkpoints: plain JSON settings plus tensor-only ``.pt`` files.

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

import functools
import inspect
import json
import logging
import pathlib
import pickle
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from imitation.algorithms import bc
from imitation.util import logger as imit_logger
from stable_baselines3.common.policies import BasePolicy

from sb3_hir.atomic import atomic_write

__all__ = [
    "ALLOWED_CLASSES",
    "CHECKPOINT_FORMAT",
    "PolicyFactory",
    "build_policy",
    "class_name",
    "load_policy",
    "lookup_class",
    "read_checkpoint",
    "restore_bc",
    "rng_from_state",
    "save_imitation_policy",
    "save_policy",
    "space_from_json",
    "space_to_json",
    "to_json",
]

logger = logging.getLogger(__name__)

#: Format tag of trainer checkpoints (``checkpoint-*.json``); 1 named code to import, 2 is data only.
CHECKPOINT_FORMAT = "sb3_hir.dagger.trainer/2"

#: Builds the learner (or expert) policy for ``(observation_space, action_space)``.
PolicyFactory = Callable[[gym.Space, gym.Space], BasePolicy]


@functools.cache
def _allowed_classes() -> dict[str, type]:
    from imitation.policies.base import FeedForward32Policy
    from sb3_contrib.common.recurrent import policies as recurrent
    from stable_baselines3.common import policies, torch_layers

    from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor

    classes: list[type] = [
        policies.ActorCriticPolicy,
        policies.ActorCriticCnnPolicy,
        policies.MultiInputActorCriticPolicy,
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
    parameters = inspect.signature(cls.__init__).parameters
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
        warnings.warn(f"{path.name} (imitation's policy format) not written: {exc}", RuntimeWarning, stacklevel=3)
        return None
    return path


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
    latest = scratch_dir / "checkpoint-latest.json"
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
