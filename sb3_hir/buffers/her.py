"""The drop-in for SB3's ``HerReplayBuffer``: swap the import, nothing else."""

from __future__ import annotations

from stable_baselines3.her.her_replay_buffer import HerReplayBuffer as SB3HerReplayBuffer

from sb3_hir.buffers.hindsight import HindsightInstructionReplayBuffer

__all__ = ["HerReplayBuffer"]


class HerReplayBuffer(HindsightInstructionReplayBuffer, SB3HerReplayBuffer):
    """The drop-in for SB3's ``HerReplayBuffer``: :class:`HindsightInstructionReplayBuffer`, treated by SB3 as HER.

    Swap the import (``from sb3_hir import HerReplayBuffer``) and nothing else: the migration is one line, as for
    ``sb3_hir.dagger``, and code that tests for HER by type (SB3's ``isinstance``) or by name finds it.

    GoalEnvs as they come, HER's ``replay_buffer_kwargs``, the env's own
    ``compute_reward``. SB3 hands HER subclasses the env at construction and calls ``set_env`` when it loads a
    saved buffer (and, as for HER, ``Model.load`` then needs ``env=``). It inherits nothing of HER's storage or
    sampling: every method comes from :class:`HindsightInstructionReplayBuffer` (first in the MRO); it works for
    instruction envs too.
    """
