"""Draw strategies: how a relabeled transition gets its hindsight instruction, one object chosen per buffer.

The public interface (see the docs' "Write your own draw strategy"): subclass :class:`DrawStrategy`, write
:meth:`DrawStrategy.instructions`, which reads the buffer through a :class:`DrawView` and returns
:class:`Instructions` for :class:`Candidates`; register it with the ``register_draw_strategies`` hook, or pass it as
the buffers' ``draw``. The built-in strategies below are registered and built the same way; the helpers
their draws share (:func:`her_steps`, :func:`takes_drawn_goal`) are public for strategies that vary them.
"""

from sb3_hir.buffers.draws.base import Candidates, DrawContractError, DrawStrategy, Instructions, Relabeled
from sb3_hir.buffers.draws.exact_index import ExactIndexDraw
from sb3_hir.buffers.draws.first_reach import FirstReachDraw, takes_drawn_goal
from sb3_hir.buffers.draws.goal_steps import GoalStepsDraw
from sb3_hir.buffers.draws.her import HerDraw, her_steps
from sb3_hir.buffers.draws.stored import StoredDraws
from sb3_hir.buffers.draws.view import DrawView
from sb3_hir.buffers.draws.window import WindowDraw

__all__ = [
    "Candidates",
    "DrawContractError",
    "DrawStrategy",
    "DrawView",
    "ExactIndexDraw",
    "FirstReachDraw",
    "GoalStepsDraw",
    "HerDraw",
    "Instructions",
    "Relabeled",
    "StoredDraws",
    "WindowDraw",
    "her_steps",
    "takes_drawn_goal",
]
