"""Hindsight goals served on BabyAI exist: judged by BabyAI's own instruction code, not by the goal spec.

Random play on GoToLocal is stored in the relabeling buffer as SB3 stores it; every served hindsight goal must be an
object description BabyAI can state (``verifier.ObjDesc``: a type and a color from its vocabulary, or "any") that
matches an object of that episode's room (``ObjDesc.find_matching_objs``). Before the fix, most were "any color,
type nothing", a goal no step can reach. And the relabeled rows carry a hindsight goal as often as "some" asks.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gymnasium import spaces
from sb3_hir_minigrid.codes import WILDCARD
from sb3_hir_minigrid.wrapper import make_babyai_goto

from sb3_hir.buffers import HindsightInstructionReplayBuffer

RATIO = 0.8


def _fill(episodes: int, seed: int) -> tuple[HindsightInstructionReplayBuffer, dict[int, object], dict[int, bool]]:
    """Random play stored as SB3's off-policy loop stores it (one env); the env at each episode's first row, and
    whether the episode reached its own goal (BabyAI's success)."""
    env = make_babyai_goto("BabyAI-GoToLocal-v0", k_max=1)
    rng = np.random.default_rng(seed)
    space, actions = env.observation_space, env.action_space
    assert isinstance(space, spaces.Dict) and isinstance(actions, spaces.Discrete)
    buffer = HindsightInstructionReplayBuffer(
        episodes * 70, space, actions, device="cpu", goal_spec=env.goal_spec,
        hindsight_goals="some", relabel_ratio=RATIO, seed=seed,
    )
    rooms: dict[int, object] = {}
    success: dict[int, bool] = {}
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed * 1000 + episode)
        start = buffer.pos
        rooms[start] = copy.deepcopy(env.unwrapped)  # go-to levels never move their objects
        done = False
        while not done:
            action = int(rng.integers(actions.n))
            next_obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            info = dict(info, TimeLimit_truncated=truncated and not terminated)
            buffer.add({key: value[None] for key, value in obs.items()},
                       {key: value[None] for key, value in next_obs.items()},
                       np.array([[action]]), np.array([reward]), np.array([done]), [info])
            obs = next_obs
        success[start] = bool(terminated)
    return buffer, rooms, success


def _description(goal: np.ndarray) -> object:
    """BabyAI's own description of a goal row ``(color, type)``; fails on anything its vocabulary cannot say."""
    from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT
    from minigrid.envs.babyai.core.verifier import OBJ_TYPES, ObjDesc

    color, kind = (int(value) for value in goal)
    color_name = None if color == WILDCARD else IDX_TO_COLOR.get(color)
    type_name = None if kind == WILDCARD else IDX_TO_OBJECT.get(kind)
    assert color == WILDCARD or color_name is not None, f"goal {goal.tolist()}: no color {color}"
    assert kind == WILDCARD or type_name in OBJ_TYPES, f"goal {goal.tolist()}: no object type {kind}"
    return ObjDesc(type_name, color_name)


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
def test_every_served_hindsight_goal_is_an_object_of_its_room_and_there_are_as_many_as_asked(jit):
    buffer, rooms, success = _fill(episodes=40, seed=1)
    buffer.jit = jit
    hindsight = rows = relabeled = 0
    for _ in range(20):
        buffer.sample(128)
        info = buffer.last_sample_info
        relabeled += int(info.relabeled.sum())
        for b in np.flatnonzero(info.relabeled):
            start = int(info.episode_start[b])
            if success[start]:
                continue  # its own goal reached: k = 1 leaves no goal to draw
            rows += 1
            goal = info.goals[b, 0]
            recorded = buffer.observations["goals"][start, 0].reshape(goal.shape)
            if np.array_equal(goal, recorded):
                continue  # the episode's own goal: BabyAI's mission
            hindsight += 1
            desc = _description(goal)
            desc.find_matching_objs(rooms[start])
            assert desc.obj_set, f"goal {goal.tolist()} ({desc.surface(rooms[start])}) names no object of its room"
    # "some": half the relabeled rows of failed episodes draw a hindsight goal (before the fix: about 6 %).
    assert abs(relabeled / (20 * 128) - RATIO) < 0.05
    assert abs(hindsight / rows - 0.5) < 0.05, hindsight / rows
