"""The SB3 replay buffers: :class:`HindsightInstructionReplayBuffer` and the drop-in :class:`HerReplayBuffer`."""

from sb3_hir.buffers.her import HerReplayBuffer
from sb3_hir.buffers.hindsight import HindsightInstructionReplayBuffer, SampleInfo

__all__ = ["HerReplayBuffer", "HindsightInstructionReplayBuffer", "SampleInfo"]
