"""The SB3 replay buffers: :class:`HindsightInstructionReplayBuffer` and the drop-in :class:`HerReplayBuffer`.

Module map, from the top down (each module imports only modules below it):

* ``hindsight``: the buffer: storage, ``add``, ``sample`` and their orchestration; ``her``: the drop-in for SB3's.
* ``demonstrations``: whole episodes kept apart from the circular storage (a buffer of the same class and settings)
  and served as ``demo_ratio`` of each batch; the sources they come from.
* ``legacy``: buffers pickled by the earlier layout, made today's when they load.
* ``options``: the constructor's arguments checked once, and every decision taken from them: the mode, the draw
  strategy, the episode index, the serving.
* ``serving``: a batch as the algorithm reads it (windows, terminations, n-step returns, the env's
  ``compute_reward``).
* ``draws/``: the draw strategies, each with its index fields, its numpy draw and its kernel side by side:
  ``first_reach`` (one goal, the first-reach index), ``her`` (GoalEnvs: HER's draw), ``goal_steps`` with
  ``exact_index`` and ``window`` (k goals from the relabeler's ``draw_goal_steps``), ``stored`` (relabelers without
  one); ``base``: the rejection rounds they share.
* ``episode_index``: the per-row layout, built when an episode ends; ``goal_env``: what GoalEnv mode derives from
  HER's arguments and the env; ``compiled``: how kernels compile and take named configurations.
* ``recorded_rows``: the rows a batch serves as recorded, drawn as ``DictReplayBuffer`` draws them.
* ``storage``: the buffer as its parts read it; ``rng_box``: the generator as kernels take it; ``reward_checks``: the
  checks of the env's ``compute_reward`` at its first use.
"""

from sb3_hir.buffers.her import HerReplayBuffer
from sb3_hir.buffers.hindsight import HindsightInstructionReplayBuffer, SampleInfo

__all__ = ["HerReplayBuffer", "HindsightInstructionReplayBuffer", "SampleInfo"]
