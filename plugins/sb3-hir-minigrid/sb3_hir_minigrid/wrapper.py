"""A BabyAI go-to level as an sb3-hir instruction env: Dict obs ``{"obs", "goals", "achieved", "goal_steps"}``.

* ``"obs"``: the egocentric image (``agent_view_size`` x ``agent_view_size`` x 3, minigrid's encoding) flattened,
  then the agent's direction, as uint8.
* ``"goals"``: ``(k_max, 2)`` rows ``(color code, type code)`` (:mod:`sb3_hir_minigrid.codes`) in step order,
  :data:`~sb3_hir_minigrid.codes.WILDCARD` for an unspecified column, reached goals overwritten with
  :data:`~sb3_hir_minigrid.codes.MASK`, slots beyond the instruction :data:`~sb3_hir_minigrid.codes.PAD`.
* ``"achieved"``: ``(2,)`` the step's event (:class:`~sb3_hir_minigrid.events.GoalObjectTracker`), or NOTHING.
* ``"goal_steps"``: ``(k_max,)`` the step each goal belongs to (goals of one step may be reached in any order),
  PAD for padding; constant over an episode.

The reward is ``goal_reward`` per goal the step completes plus ``step_reward`` (sb3-hir's scale, not BabyAI's
time-discounted one, which ``info["babyai_reward"]`` keeps). Success and termination are BabyAI's own; the wrapper
also judges them by :func:`~sb3_hir_minigrid.replay.advance`, the replay's rule, and raises on any step where the
two disagree, so a relabeler using the replay never teaches a task BabyAI does not pose.
"""

from __future__ import annotations

from typing import Any, ClassVar, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_hir.contract import INFO_GOAL_SPEC
from sb3_hir.goals import ExactGoalSpec
from sb3_hir_minigrid.codes import GOAL_DTYPE, MASK, NOTHING, PAD, TYPE_TO_CODE, WILDCARD
from sb3_hir_minigrid.events import GoalObjectTracker
from sb3_hir_minigrid.replay import advance, goal_matches, step_members
from sb3_hir_minigrid.steps import Steps, encode_steps, instruction_steps

__all__ = ["BABYAI_MAX_GOALS", "BabyAIGoToInstruction", "make_babyai_goto"]

#: The most goals BabyAI's grammar builds: before / after of two "and"s of two go-tos (GoToSeq).
BABYAI_MAX_GOALS = 4


class BabyAIGoToInstruction(gym.Wrapper):
    """A BabyAI level whose missions are go-to goals, with the instruction-env observation described above.

    :param env: a BabyAI ``RoomGridLevel`` env (``gymnasium.make("BabyAI-GoToSeq-v0")``, ...).
    :param k_max: goal slots; a mission with more goals is refused at reset.
    :param goal_reward: reward per goal completed.
    :param step_reward: reward of every step on top.
    :raises sb3_hir_minigrid.steps.UnsupportedInstructionError: at reset, for a mission that is not go-to only.
    """

    #: BabyAI draws the mission itself; an instruction given at reset is not taken (yet).
    accepts_reset_goals: ClassVar[bool] = False

    def __init__(self, env: gym.Env, k_max: int = BABYAI_MAX_GOALS, goal_reward: float = 1.0,
                 step_reward: float = 0.0) -> None:
        super().__init__(env)
        from minigrid.envs.babyai.core import verifier

        if verifier.use_done_actions:
            raise ValueError("BABYAI_DONE_ACTIONS is set: BabyAI then judges go-to goals on the 'done' action, "
                             "which this wrapper's replay does not model")
        if isinstance(k_max, bool) or not isinstance(k_max, int) or k_max < 1:
            raise ValueError(f"k_max must be an int >= 1, got {k_max!r}")
        self.k_max = k_max
        self.goal_reward = float(goal_reward)
        self.step_reward = float(step_reward)
        self.mask_value = MASK
        #: BabyAI's go-to semantics as the core relabels by them: events (``NOTHING`` when no goal-able object is
        #: tracked in front), partial descriptions (a ``WILDCARD`` color; a hindsight goal is drawn as "the red
        #: ball" or "a ball"), several goals completed at one step (one object matching two descriptions),
        #: missions of 1 to ``k_max`` goals (``PAD`` slots) and the goals of an "and" in either order (one group
        #: per instruction step, ``"goal_steps"``).
        self.goal_spec = ExactGoalSpec(mask_value=MASK, goal_reward=goal_reward, step_reward=step_reward,
                                       nothing_value=NOTHING, wildcard_value=WILDCARD,
                                       description_levels=[(True, True), (False, True)], same_step_goals=True,
                                       pad_value=PAD, groups_key="goal_steps")
        image = cast(spaces.Dict, env.observation_space)["image"]
        top = max(TYPE_TO_CODE.values())
        self.observation_space = spaces.Dict({
            "obs": spaces.Box(0, 255, shape=(int(np.prod(image.shape or ())) + 1,), dtype=np.uint8),
            "goals": spaces.Box(PAD, top, shape=(k_max, 2), dtype=GOAL_DTYPE),
            "achieved": spaces.Box(PAD, top, shape=(2,), dtype=GOAL_DTYPE),
            "goal_steps": spaces.Box(PAD, k_max - 1, shape=(k_max,), dtype=GOAL_DTYPE),
        })
        self._tracker = GoalObjectTracker()
        self.steps: Steps = ()
        self._goals = np.zeros((k_max, 2), dtype=GOAL_DTYPE)
        self._step_ids = np.zeros(k_max, dtype=GOAL_DTYPE)
        self._members: list[np.ndarray] = []
        self._reached = np.zeros(k_max, dtype=bool)
        self._active = 0

    def _observation(self, obs: dict[str, Any], achieved: np.ndarray) -> dict[str, np.ndarray]:
        goals = self._goals.copy()
        goals[self._reached] = MASK
        flat = np.concatenate([np.asarray(obs["image"], dtype=np.uint8).reshape(-1), [np.uint8(obs["direction"])]])
        return {"obs": flat, "goals": goals, "achieved": achieved.astype(GOAL_DTYPE),
                "goal_steps": self._step_ids.copy()}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        babyai: Any = self.env.unwrapped  # minigrid ships no types
        self.steps = instruction_steps(babyai.instrs)
        self._goals, self._step_ids = encode_steps(self.steps, self.k_max)
        self._members = step_members(self._step_ids)
        self._reached = np.zeros(self.k_max, dtype=bool)
        self._active = 0
        self._tracker.reset(self.env)
        info = dict(info, is_success=False, goals_reached=0, mission=obs["mission"])
        return self._observation(obs, self._tracker.event(self.env)), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._tracker.after_step(self.env, action)
        event = self._tracker.event(self.env)
        before = int(self._reached.sum())
        self._active = advance(self._reached, self._active, goal_matches(event, self._goals), self._members)
        success = self._active == len(self._members)
        if success != bool(terminated):
            raise RuntimeError(
                f"the replay's rule says success={success} but BabyAI terminated={bool(terminated)} at step "
                f"{cast(Any, self.env.unwrapped).step_count} of mission {obs['mission']!r} (event {event.tolist()})"
            )
        done_now = int(self._reached.sum()) - before
        # the spec in every step's info too: SB3 builds replay buffers without the env (INFO_GOAL_SPEC)
        info = dict(info, is_success=success, goals_reached=int(self._reached.sum()), babyai_reward=float(reward),
                    **{INFO_GOAL_SPEC: self.goal_spec})
        return (self._observation(obs, event), self.goal_reward * done_now + self.step_reward, terminated,
                truncated, info)


def make_babyai_goto(env_id: str = "BabyAI-GoToLocal-v0", k_max: int = 1, goal_reward: float = 1.0,
                     step_reward: float = 0.0, **make_kwargs: Any) -> BabyAIGoToInstruction:
    """``gymnasium.make(env_id, **make_kwargs)`` (a BabyAI go-to level) as a :class:`BabyAIGoToInstruction`.

    The default, GoToLocal with ``k_max=1``, keeps sb3-hir's instruction-env contract under the env's declared goal
    spec (events, partial descriptions, several goals per step). GoToSeq levels need ``k_max=BABYAI_MAX_GOALS``
    (4): their missions are padded to it, and an "and" is one group of goals reached in either order.
    """
    import minigrid  # noqa: F401  (registers the BabyAI ids)

    return BabyAIGoToInstruction(gym.make(env_id, **make_kwargs), k_max=k_max, goal_reward=goal_reward,
                                 step_reward=step_reward)
