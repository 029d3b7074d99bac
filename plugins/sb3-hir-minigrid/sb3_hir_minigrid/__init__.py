"""sb3-hir plugin for BabyAI (minigrid) go-to missions.

Contributes env ``"babyai-goto"``: a BabyAI go-to level (GoToLocal, GoTo, GoToSeq, ...) whose mission, read from
BabyAI's instruction tree, is an instruction of ordered steps of go-to goals; and expert ``"babyai-bot"``: BabyAI's
own bot (minigrid >= 3.0) labelling DAgger's visited states from the env's state (:mod:`sb3_hir_minigrid.bot`).
Imports happen inside the hooks, so listing plugins does not import minigrid.
"""

from __future__ import annotations

from typing import Any

from sb3_hir import hookimpl

__all__ = [
    "BabyAIBotExpert",
    "BabyAIFiLMExtractor",
    "BabyAIGoToInstruction",
    "BotStuckError",
    "BotUnavailableError",
    "GoToGoal",
    "GoalObjectTracker",
    "UnsupportedInstructionError",
    "instruction_steps",
    "make_babyai_goto",
    "replay_goto",
]

_LAZY = {
    "BabyAIBotExpert": "sb3_hir_minigrid.bot",
    "BabyAIFiLMExtractor": "sb3_hir_minigrid.film",
    "BotStuckError": "sb3_hir_minigrid.bot",
    "BotUnavailableError": "sb3_hir_minigrid.bot",
    "BabyAIGoToInstruction": "sb3_hir_minigrid.wrapper",
    "GoToGoal": "sb3_hir_minigrid.steps",
    "GoalObjectTracker": "sb3_hir_minigrid.events",
    "UnsupportedInstructionError": "sb3_hir_minigrid.steps",
    "instruction_steps": "sb3_hir_minigrid.steps",
    "make_babyai_goto": "sb3_hir_minigrid.wrapper",
    "replay_goto": "sb3_hir_minigrid.replay",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sb3_hir_minigrid' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def _babyai_goto(**kwargs: Any) -> Any:
    """A BabyAI go-to level (env_id=..., default GoToLocal) with its mission as ordered steps of go-to goals."""
    from sb3_hir_minigrid.wrapper import make_babyai_goto

    return make_babyai_goto(**kwargs)


@hookimpl
def register_envs(register: Any) -> None:
    register("babyai-goto", _babyai_goto)


@hookimpl
def register_experts(register: Any) -> None:
    from sb3_hir_minigrid.bot import BABYAI_BOT

    register("babyai-bot", BABYAI_BOT, description="BabyAI's bot (minigrid >= 3.0): labels each visited state from "
             "the env's state, replanning after the learner's actions")
