"""Contract checks for instruction envs and sb3-hir plugins, for users' own regression tests.

A relabeler that does not reproduce an env's reward and termination teaches the agent a different task, and
nothing crashes when it does. These checks make such disagreements loud: each one raises an
:class:`AssertionError` explaining the *first* violation it finds, with the seed, the step and the values
involved, so that the failing case can be replayed by hand::

    from sb3_hir.testing import check_instruction_env, check_plugin

    def test_my_env():
        check_instruction_env(MyInstructionEnv(), relabeler="hindsight-instruction")

    def test_my_plugin():
        check_plugin("my-sb3-hir-plugin")

Episodes come from random-policy rollouts: ``env.reset(seed=seed + i)`` and ``env.action_space.seed(seed + i)``
for episode ``i``. Nothing heavy (gymnasium, torch, pytest) is imported at package import time, so the pytest
plugin can import this package cheaply.

One module per check kind (:mod:`~sb3_hir.testing.env`, :mod:`~sb3_hir.testing.relabeler`,
:mod:`~sb3_hir.testing.goal_spec`, :mod:`~sb3_hir.testing.expert`, :mod:`~sb3_hir.testing.beta_schedule`,
:mod:`~sb3_hir.testing.draw_strategy`, the last on the served-rows oracle of :mod:`~sb3_hir.testing.served_rows`), each
registering its plugin check in :mod:`~sb3_hir.testing.registry` for :func:`check_plugin`; shared rollouts and
failure messages in :mod:`~sb3_hir.testing.rollout`. Toy GoalEnvs for tests in :mod:`~sb3_hir.testing.envs`.
"""

from __future__ import annotations

from sb3_hir.testing.beta_schedule import check_beta_schedule
from sb3_hir.testing.components import component_names, parametrize_components
from sb3_hir.testing.components import current_allow_list as current_allow_list
from sb3_hir.testing.draw_strategy import check_draw_strategy
from sb3_hir.testing.env import check_instruction_env
from sb3_hir.testing.envs import PointReachEnv
from sb3_hir.testing.expert import check_expert
from sb3_hir.testing.goal_spec import check_goal_spec
from sb3_hir.testing.plugin import check_plugin
from sb3_hir.testing.relabeler import NEVER_LOWERS_RETURN as NEVER_LOWERS_RETURN
from sb3_hir.testing.relabeler import check_relabeler, promises_non_decreasing_return
from sb3_hir.testing.rollout import DEFAULT_STEP_CAP as DEFAULT_STEP_CAP

# ``X as X`` above: public without being in __all__, as before the split (the constants the docstrings refer to,
# and the allow-list reader the pytest plugin used to import from here).
__all__ = [
    "PointReachEnv",
    "check_beta_schedule",
    "check_draw_strategy",
    "check_expert",
    "check_goal_spec",
    "check_instruction_env",
    "check_plugin",
    "check_relabeler",
    "component_names",
    "parametrize_components",
    "promises_non_decreasing_return",
]
