"""How many of a BabyAI level's missions are go-to only, and how many of those the steps list expresses.

Run as ``python -m sb3_hir_minigrid.coverage [n_seeds] [env_id ...]`` to print the table for the go-to levels.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

from sb3_hir_minigrid.steps import UnsupportedInstructionError, instruction_steps, num_goals
from sb3_hir_minigrid.wrapper import BABYAI_MAX_GOALS

__all__ = ["GOTO_LEVELS", "Coverage", "is_goto_only", "mission_coverage"]

#: The BabyAI levels whose missions should all be go-to only.
GOTO_LEVELS = ("BabyAI-GoToSeqS5R2-v0", "BabyAI-GoToSeq-v0", "BabyAI-GoToLocal-v0", "BabyAI-GoTo-v0")


def is_goto_only(instr: Any) -> bool:
    """Whether every leaf of the instruction tree is a ``GoToInstr`` (locations allowed), independently of
    :func:`~sb3_hir_minigrid.steps.instruction_steps`, which the coverage checks."""
    from minigrid.envs.babyai.core.verifier import GoToInstr, SeqInstr

    if isinstance(instr, SeqInstr):
        return is_goto_only(instr.instr_a) and is_goto_only(instr.instr_b)
    return isinstance(instr, GoToInstr)


@dataclass
class Coverage:
    """Counts over the missions of one level: all, go-to only, expressed as steps (of at most k_max goals)."""

    env_id: str
    missions: int = 0
    goto_only: int = 0
    expressible: int = 0
    goal_counts: Counter[int] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)

    def row(self) -> str:
        share = self.goto_only / self.missions if self.missions else 0.0
        expressed = self.expressible / self.goto_only if self.goto_only else 0.0
        counts = dict(sorted(self.goal_counts.items()))
        return (f"{self.env_id}: {self.missions} missions, go-to only {self.goto_only} ({share:.1%}), expressible "
                f"{self.expressible} ({expressed:.1%} of go-to only), goals per mission {counts}"
                + (f", refused: {dict(self.refusals)}" if self.refusals else ""))


def mission_coverage(env_id: str, seeds: range | list[int], k_max: int = BABYAI_MAX_GOALS) -> Coverage:
    """Reset ``env_id`` at each seed and classify its mission (BabyAI's rejection-sampling prints are silenced)."""
    import gymnasium as gym
    import minigrid  # noqa: F401  (registers the BabyAI ids)

    env = gym.make(env_id)
    result = Coverage(env_id)
    try:
        for seed in seeds:
            with contextlib.redirect_stdout(io.StringIO()):
                env.reset(seed=seed)
            instr = cast(Any, env.unwrapped).instrs  # minigrid ships no types
            result.missions += 1
            if not is_goto_only(instr):
                continue
            result.goto_only += 1
            try:
                count = num_goals(instruction_steps(instr))
            except UnsupportedInstructionError as error:
                result.refusals[str(error).split(" (")[0]] += 1
                continue
            if count > k_max:
                result.refusals[f"more than k_max={k_max} goals"] += 1
                continue
            result.expressible += 1
            result.goal_counts[count] += 1
    finally:
        env.close()
    return result


if __name__ == "__main__":
    n_seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    for level in sys.argv[2:] or GOTO_LEVELS:
        print(mission_coverage(level, range(n_seeds)).row())
