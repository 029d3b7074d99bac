"""Reading BabyAI's instruction tree into steps, and the replay against BabyAI's own ``verify`` for each tree shape.

Each shape is built from minigrid's real verifier classes and judged by BabyAI's ``verify`` in a real BabyAI env,
the agent placed facing chosen objects; the replay must give the same outcome at every step.
"""

from __future__ import annotations

import contextlib
import io

import gymnasium as gym
import minigrid  # noqa: F401  (registers the BabyAI ids)
import numpy as np
import pytest
from minigrid.core.constants import COLOR_TO_IDX, DIR_TO_VEC, OBJECT_TO_IDX
from minigrid.core.world_object import Ball, Box, Key
from minigrid.envs.babyai.core.verifier import (
    OBJ_TYPES,
    AfterInstr,
    AndInstr,
    BeforeInstr,
    GoToInstr,
    ObjDesc,
    OpenInstr,
    PickupInstr,
    PutNextInstr,
)
from sb3_hir_minigrid import codes
from sb3_hir_minigrid.codes import MASK, NOTHING, PAD, WILDCARD
from sb3_hir_minigrid.events import GoalObjectTracker, front_cell_event, object_event
from sb3_hir_minigrid.replay import goal_matches, replay_goto
from sb3_hir_minigrid.steps import (
    GoToGoal,
    UnsupportedInstructionError,
    encode_steps,
    instruction_steps,
)


def goto(kind: str | None, color: str | None = None, loc: str | None = None) -> GoToInstr:
    return GoToInstr(ObjDesc(kind, color, loc))


# -- codes ----------------------------------------------------------------------------------------------------------
def test_codes_are_minigrids_indices_and_the_special_values_are_distinct():
    assert codes.COLOR_TO_CODE == COLOR_TO_IDX
    assert {kind: OBJECT_TO_IDX[kind] for kind in OBJ_TYPES} == codes.TYPE_TO_CODE
    specials = {MASK, WILDCARD, NOTHING, PAD}
    assert len(specials) == 4 and all(value < 0 for value in specials)


# -- the tree as steps ----------------------------------------------------------------------------------------------
RED_BALL, A_KEY, BLUE_DOOR, A_BOX = GoToGoal("red", "ball"), GoToGoal(None, "key"), GoToGoal("blue", "door"), \
    GoToGoal(None, "box")


def test_each_tree_shape_reads_as_ordered_steps():
    assert instruction_steps(goto("ball", "red")) == ((RED_BALL,),)
    assert instruction_steps(AndInstr(goto("ball", "red"), goto("key"))) == ((RED_BALL, A_KEY),)
    assert instruction_steps(BeforeInstr(goto("ball", "red"), goto("key"))) == ((RED_BALL,), (A_KEY,))
    # "go to the red ball after you go to a key": the key first
    assert instruction_steps(AfterInstr(goto("ball", "red"), goto("key"))) == ((A_KEY,), (RED_BALL,))
    both = BeforeInstr(AndInstr(goto("ball", "red"), goto("key")), AndInstr(goto("door", "blue"), goto("box")))
    assert instruction_steps(both) == ((RED_BALL, A_KEY), (BLUE_DOOR, A_BOX))
    after = AfterInstr(goto("door", "blue"), AndInstr(goto("ball", "red"), goto("key")))
    assert instruction_steps(after) == ((RED_BALL, A_KEY), (BLUE_DOOR,))


@pytest.mark.parametrize("instr", [
    PickupInstr(ObjDesc("ball", "red")),
    OpenInstr(ObjDesc("door", "blue")),
    PutNextInstr(ObjDesc("ball"), ObjDesc("key")),
    goto("ball", "red", loc="left"),
    BeforeInstr(goto("ball"), PickupInstr(ObjDesc("key"))),
    AndInstr(goto("ball"), OpenInstr(ObjDesc("door"))),
], ids=["pickup", "open", "putnext", "loc", "before-pickup", "and-open"])
def test_missions_other_than_go_to_without_location_are_refused_by_name(instr):
    with pytest.raises(UnsupportedInstructionError):
        instruction_steps(instr)


def test_encoding_pads_and_numbers_the_steps_and_refuses_more_than_k_max():
    steps = instruction_steps(AfterInstr(goto("door", "blue"), AndInstr(goto("ball", "red"), goto("key"))))
    goals, step_ids = encode_steps(steps, k_max=4)
    np.testing.assert_array_equal(goals, [[0, 6], [WILDCARD, 5], [2, 4], [PAD, PAD]])
    np.testing.assert_array_equal(step_ids, [0, 0, 1, PAD])
    with pytest.raises(UnsupportedInstructionError, match="k_max=2"):
        encode_steps(steps, k_max=2)


def test_goal_matching_takes_wildcards_and_never_matches_nothing_pad_or_mask():
    red_ball, any_ball, any_red = [0, 6], [WILDCARD, 6], [0, WILDCARD]
    goals = np.array([red_ball, any_ball, any_red, [2, 6], [PAD, PAD], [MASK, MASK]])
    np.testing.assert_array_equal(goal_matches(np.array([0, 6]), goals), [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(goal_matches(np.array([2, 6]), goals), [0, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(goal_matches(np.array([NOTHING, NOTHING]), goals), [0, 0, 0, 0, 0, 0])


# -- the replay against BabyAI's verify, shape by shape ----------------------------------------------------------
@pytest.fixture
def room():
    """A real BabyAI room (GoToLocal, seed 0) emptied of objects, with a red ball, a blue ball, a green key and a
    yellow box placed apart; the agent's own instruction is replaced per test."""
    env = gym.make("BabyAI-GoToLocal-v0").unwrapped
    with contextlib.redirect_stdout(io.StringIO()):
        env.reset(seed=0)
    grid = env.grid
    for index, cell in enumerate(grid.grid):
        if cell is not None and cell.type in OBJ_TYPES and cell.type != "door":
            grid.grid[index] = None
    objects = {"red ball": Ball("red"), "blue ball": Ball("blue"), "green key": Key("green"),
               "yellow box": Box("yellow")}
    for obj, pos in zip(objects.values(), [(2, 2), (5, 2), (2, 5), (5, 5)], strict=True):
        grid.set(*pos, obj)
        obj.init_pos = obj.cur_pos = pos
    env.agent_pos, env.agent_dir = (3, 3), 0
    yield env, objects
    env.close()


def face(env, obj) -> None:
    """Put the agent on the free cell west of ``obj``, facing it (east)."""
    x, y = obj.cur_pos
    env.agent_pos, env.agent_dir = (x - 1, y), 0
    assert tuple(DIR_TO_VEC[0]) == (1, 0) and env.grid.get(x - 1, y) is None


def play(env, instr, visits: list[str | None], objects) -> tuple[list[str], np.ndarray]:
    """Judge ``instr`` with BabyAI's verify while the agent faces the named objects in turn (None: a wall-free
    empty cell); returns verify's outcomes and the events the tracker reports."""
    instr.reset_verifier(env)
    tracker = GoalObjectTracker()
    tracker.reset(env)
    outcomes, events = [], []
    for name in visits:
        if name is None:
            env.agent_pos, env.agent_dir = (3, 3), 0
        else:
            face(env, objects[name])
        outcomes.append(instr.verify(env.actions.left))
        events.append(tracker.event(env))
        np.testing.assert_array_equal(events[-1], object_event(None if name is None else objects[name]))
    return outcomes, np.array(events)


def replayed_success(instr, events) -> int | None:
    goals, step_ids = encode_steps(instruction_steps(instr), k_max=4)
    return replay_goto(goals, step_ids, events).success_step


def verify_success(outcomes: list[str]) -> int | None:
    return next((t + 1 for t, outcome in enumerate(outcomes) if outcome == "success"), None)


SHAPES = {
    # one object matching both goals of an "and" completes both at one step
    "and, one object for both": (lambda: AndInstr(goto("ball", "red"), goto("ball")), ["red ball"], 1),
    "and, either order": (lambda: AndInstr(goto("ball", "red"), goto("key")), [None, "green key", "red ball"], 3),
    # Before lets its second part complete at the step its first completes (verify re-enters on the same action)
    "before, same step": (lambda: BeforeInstr(goto("ball", "red"), goto("ball")), ["red ball"], 1),
    # ... but b's goal met before a is done does not count
    "before, b first does not count": (lambda: BeforeInstr(goto("ball", "red"), goto("key")),
                                       ["green key", "red ball", None, "green key"], 4),
    "after, same step": (lambda: AfterInstr(goto("ball"), goto("ball", "red")), ["red ball"], 1),
    "after, a first does not count": (lambda: AfterInstr(goto("ball", "red"), goto("key")),
                                      ["red ball", "green key", "red ball"], 3),
    "before of ands, all at one step": (lambda: BeforeInstr(AndInstr(goto("ball"), goto(None, "red")),
                                                            AndInstr(goto("ball", "red"), goto("ball"))),
                                        ["red ball"], 1),
    "before of ands, chained": (lambda: BeforeInstr(AndInstr(goto("ball"), goto("key")),
                                                    AndInstr(goto("box"), goto("ball", "blue"))),
                                ["yellow box", "green key", "red ball", "yellow box", "blue ball"], 5),
    # the first step completes on the blue ball, which then counts for the second step at once
    "after of ands, carry over": (lambda: AfterInstr(AndInstr(goto("box"), goto("ball", "blue")),
                                                     AndInstr(goto("key"), goto("ball"))),
                                  ["green key", "blue ball", "yellow box"], 3),
    "wildcard type": (lambda: goto(None, "green"), [None, "red ball", "green key"], 3),
    "never": (lambda: BeforeInstr(goto("ball", "red"), goto("box")), ["yellow box", "red ball", "blue ball"], None),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_replay_succeeds_exactly_when_babyais_verify_does(room, shape):
    env, objects = room
    make, visits, expected = SHAPES[shape]
    outcomes, events = play(env, make(), visits, objects)
    assert verify_success(outcomes) == expected  # BabyAI's own judgement, as the shape's comment says
    assert replayed_success(make(), events) == expected


# -- events: the verifier's tracked positions, not the front cell --------------------------------------------------
def step_and_read(env, tracker, action) -> tuple[bool, list[int], list[int]]:
    """One real env step; BabyAI's success, the tracker's event and the front cell's."""
    _, _, terminated, _, _ = env.step(action)
    tracker.after_step(env, action)
    return terminated, tracker.event(env).tolist(), front_cell_event(env).tolist()


def test_a_picked_up_goal_still_counts_at_its_old_cell_until_a_drop_as_babyai_judges(room):
    env, objects = room
    env.instrs = BeforeInstr(goto("key", "green"), goto("ball", "red"))
    env.instrs.reset_verifier(env)
    tracker = GoalObjectTracker()
    tracker.reset(env)
    red_ball, nothing = [0, 6], [NOTHING, NOTHING]
    face(env, objects["red ball"])
    old_cell = env.agent_pos, env.agent_dir
    assert step_and_read(env, tracker, env.actions.pickup) == (False, red_ball, nothing)  # the key comes first
    assert env.carrying is objects["red ball"]
    face(env, objects["green key"])
    assert step_and_read(env, tracker, env.actions.done)[:2] == (False, [1, 5])
    env.agent_pos, env.agent_dir = old_cell  # facing the empty cell the ball was picked up from
    assert step_and_read(env, tracker, env.actions.done) == (True, red_ball, nothing)  # BabyAI: success


def test_a_drop_rereads_positions_even_when_it_fails(room):
    env, objects = room
    env.instrs = goto("ball", "red")
    env.instrs.reset_verifier(env)
    tracker = GoalObjectTracker()
    tracker.reset(env)
    face(env, objects["red ball"])
    old_cell = env.agent_pos, env.agent_dir
    step_and_read(env, tracker, env.actions.pickup)
    env.agent_pos, env.agent_dir = (1, 1), 2  # facing the west wall: the drop fails, the ball stays carried
    assert step_and_read(env, tracker, env.actions.drop) == (False, [NOTHING, NOTHING], [NOTHING, NOTHING])
    env.agent_pos, env.agent_dir = old_cell
    assert step_and_read(env, tracker, env.actions.done) == (False, [NOTHING, NOTHING], [NOTHING, NOTHING])
    env.agent_pos, env.agent_dir = (3, 3), 0  # drop it at (4, 3): it counts there
    assert step_and_read(env, tracker, env.actions.drop) == (True, [0, 6], [0, 6])
