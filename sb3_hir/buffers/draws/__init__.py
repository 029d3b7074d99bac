"""Draw strategies: how a relabeled transition gets its hindsight instruction, one object chosen per buffer."""

from sb3_hir.buffers.draws.base import DrawStrategy, Relabeled
from sb3_hir.buffers.draws.exact_index import ExactIndexDraw
from sb3_hir.buffers.draws.first_reach import FirstReachDraw
from sb3_hir.buffers.draws.her import HerDraw
from sb3_hir.buffers.draws.stored import StoredDraws
from sb3_hir.buffers.draws.window import WindowDraw

__all__ = ["DrawStrategy", "ExactIndexDraw", "FirstReachDraw", "HerDraw", "Relabeled", "StoredDraws", "WindowDraw"]
