"""What an instruction env declares about itself, so that sb3-hir can relabel its data and check that it may.

Relabeling rewrites a recorded episode as if it had been played under another instruction. That is only sound
when the env, given that instruction, would have produced the same episode: the same rewards, terminations and
goal observations. An env can let :func:`sb3_hir.testing.check_instruction_env` verify this against the env
itself (counterfactual replay) by taking an instruction at reset::

    class MyEnv(gym.Env):
        accepts_reset_goals = True  # reset(options={"goals": goals}) plays the episode under `goals`

The declarations are attributes of the env or of any wrapper around it (looked up along the wrapper chain).
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = [
    "ACCEPTS_RESET_GOALS",
    "ACTION_FEATURES",
    "EFFECT_COLUMNS",
    "ENV_GOAL_SPEC",
    "RESET_GOALS_OPTION",
    "TERMINATIONS_UNRELATED_TO_GOALS",
    "declared",
]

#: Key of ``reset(options=...)`` holding an instruction ``(k, *goal_shape)`` to play the episode under. The env
#: draws everything else (layout, start, its own instruction) exactly as without it, so the same seed gives the
#: same episode under another instruction.
RESET_GOALS_OPTION = "goals"

#: Attribute an env sets to True when it honours :data:`RESET_GOALS_OPTION`.
ACCEPTS_RESET_GOALS = "accepts_reset_goals"

#: Attribute an env sets to True when its terminations never depend on the goals (falls, crashes), to opt out
#: of the check that flags a termination on the step that reaches a non-final goal. Relabeling keeps such
#: terminations under every instruction; an env that ends an episode *because* a goal was reached must not set it.
TERMINATIONS_UNRELATED_TO_GOALS = "terminations_unrelated_to_goals"

#: Attribute naming the goal spec the env's goals are judged by (a registered name or a GoalSpec); envs
#: without one are judged by ``"exact"``.
ENV_GOAL_SPEC = "goal_spec"

#: Info key under which an env may also return that goal spec at every step. SB3 builds replay buffers without the
#: env (only its own ``HerReplayBuffer`` is handed it), so a :class:`~sb3_hir.HindsightInstructionReplayBuffer`
#: given no ``goal_spec`` cannot read the attribute; it reads this key at its first ``add`` and refuses to store
#: under another spec, where it would otherwise relabel by ``"exact"`` in silence (events, wildcards, padding).
INFO_GOAL_SPEC = "goal_spec"


#: Method an env defines to return a fresh :class:`sb3_hir.action_features.ActionFeatures`: per-action features
#: built from the agent's own observations and actions with what only the env knows (MazeRunner: which moves an
#: action can still be). ``ActionFeaturesWrapper(env, "env")`` uses it.
ACTION_FEATURES = "action_features"

#: Attribute naming the flattened columns of the env's ``"obs"`` key whose change is an action's effect (not a
#: clock that advances on every step), for the generic :class:`sb3_hir.action_features.EffectTable`.
EFFECT_COLUMNS = "effect_columns"


def declared(env: Any, name: str, default: Any = None) -> Any:
    """``name`` of the outermost wrapper (or the env) in ``env``'s wrapper chain that defines it, else ``default``.

    Looked up statically on each level, so gymnasium's attribute forwarding through wrappers is not relied on.
    """
    current: Any = env
    while current is not None:
        if inspect.getattr_static(current, name, None) is not None:
            return getattr(current, name)
        current = inspect.getattr_static(current, "env", None)
    return default
