"""sb3-hir: hindsight instruction relabeling and DAgger collection for Stable-Baselines3, as pluggy plugins.

Public names are imported lazily, so ``import sb3_hir`` stays cheap until a component is used: it never imports
torch. The gymnasium id ``sb3_hir/MazeRunner-v0`` is registered through gymnasium 0.29's env entry points
(``gymnasium.envs``) whenever gymnasium is imported, so there ``import sb3_hir`` does not import gymnasium (and a
CLI can keep third-party import notices quiet); gymnasium 1.x dropped those entry points, so there ``import
sb3_hir`` registers the id itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sb3_hir.hookspecs import hookimpl, hookspec

__version__ = "0.1.0"


def _register_with_gymnasium() -> None:
    from importlib import metadata

    try:
        major = int(metadata.version("gymnasium").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):  # pragma: no cover - gymnasium is a dependency
        return
    if major >= 1:  # no env entry points any more: register now
        from sb3_hir.envs.registration import register_gymnasium_envs

        register_gymnasium_envs()


_register_with_gymnasium()

_LAZY: dict[str, str] = {
    "Episode": "sb3_hir.episodes",
    "GoalSpec": "sb3_hir.goals",
    "ExactGoalSpec": "sb3_hir.goals",
    "ToleranceGoalSpec": "sb3_hir.goals",
    "InstructionRelabeler": "sb3_hir.relabel",
    "HindsightInstructionRelabeler": "sb3_hir.relabel",
    "HindsightInstructionReplayBuffer": "sb3_hir.buffers",
    "HerReplayBuffer": "sb3_hir.buffers",
    "DrawStrategy": "sb3_hir.buffers.draws",
    "expert_episodes": "sb3_hir.buffers.demonstrations",
    "KeySelectExtractor": "sb3_hir.extractors",
    "HistoryExtractor": "sb3_hir.extractors",
    "HistoryWrapper": "sb3_hir.history",
    "ActionEffectWrapper": "sb3_hir.action_features",
    "ActionFeaturesWrapper": "sb3_hir.action_features",
    "PerActionActorCriticPolicy": "sb3_hir.policies",
    "PerActionDQNPolicy": "sb3_hir.policies",
    "PerActionQRDQNPolicy": "sb3_hir.policies",
    "MazeRunnerEnv": "sb3_hir.envs",
    "ShortestPathExpert": "sb3_hir.envs",
    "EnvStateExpert": "sb3_hir.env_experts",
    "EnvStateExpertFactory": "sb3_hir.env_experts",
    "EnvStateLabelExpert": "sb3_hir.env_experts",
    "EnvStateLabels": "sb3_hir.env_experts",
    "with_expert_labels": "sb3_hir.env_experts",
    "DAggerCollector": "sb3_hir.dagger",
    "DAggerTrainer": "sb3_hir.dagger",
    "SimpleDAggerTrainer": "sb3_hir.dagger",
    "reconstruct_trainer": "sb3_hir.dagger",
    "InstructionWrapper": "sb3_hir.instruction",
    "VecHideKeys": "sb3_hir.vec_env",
    "InstructionEvalCallback": "sb3_hir.callbacks",
    "evaluate_instruction_policy": "sb3_hir.callbacks",
}

__all__ = [
    "ActionEffectWrapper",
    "ActionFeaturesWrapper",
    "DAggerCollector",
    "DAggerTrainer",
    "DrawStrategy",
    "EnvStateExpert",
    "EnvStateExpertFactory",
    "EnvStateLabelExpert",
    "EnvStateLabels",
    "Episode",
    "ExactGoalSpec",
    "GoalSpec",
    "HerReplayBuffer",
    "HindsightInstructionRelabeler",
    "HindsightInstructionReplayBuffer",
    "HistoryExtractor",
    "HistoryWrapper",
    "InstructionEvalCallback",
    "InstructionRelabeler",
    "InstructionWrapper",
    "KeySelectExtractor",
    "MazeRunnerEnv",
    "PerActionActorCriticPolicy",
    "PerActionDQNPolicy",
    "PerActionQRDQNPolicy",
    "ShortestPathExpert",
    "SimpleDAggerTrainer",
    "ToleranceGoalSpec",
    "VecHideKeys",
    "__version__",
    "envs",
    "evaluate_instruction_policy",
    "expert_episodes",
    "hookimpl",
    "hookspec",
    "reconstruct_trainer",
    "with_expert_labels",
]

if TYPE_CHECKING:
    from sb3_hir import envs
    from sb3_hir.action_features import ActionEffectWrapper, ActionFeaturesWrapper
    from sb3_hir.buffers import HerReplayBuffer, HindsightInstructionReplayBuffer
    from sb3_hir.buffers.demonstrations import expert_episodes
    from sb3_hir.buffers.draws import DrawStrategy
    from sb3_hir.callbacks import InstructionEvalCallback, evaluate_instruction_policy
    from sb3_hir.dagger import DAggerCollector, DAggerTrainer, SimpleDAggerTrainer, reconstruct_trainer
    from sb3_hir.env_experts import (
        EnvStateExpert,
        EnvStateExpertFactory,
        EnvStateLabelExpert,
        EnvStateLabels,
        with_expert_labels,
    )
    from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
    from sb3_hir.episodes import Episode
    from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
    from sb3_hir.goals import ExactGoalSpec, GoalSpec, ToleranceGoalSpec
    from sb3_hir.history import HistoryWrapper
    from sb3_hir.instruction import InstructionWrapper
    from sb3_hir.policies import PerActionActorCriticPolicy, PerActionDQNPolicy, PerActionQRDQNPolicy
    from sb3_hir.relabel import HindsightInstructionRelabeler, InstructionRelabeler
    from sb3_hir.vec_env import VecHideKeys


def __getattr__(name: str) -> Any:
    if name == "envs":
        return importlib.import_module("sb3_hir.envs")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sb3_hir' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"envs"})
