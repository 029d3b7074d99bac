"""The replay agrees with BabyAI's own verify at every step of random-policy episodes in the go-to levels.

BabyAI's state is read from its instruction tree after each step (the latches of And / Before / After), so not
only the success step but the number of goals done is compared at every step. The random policy picks up, drops
and toggles too, which moves objects: the case where the verifier's tracked positions and the front cell differ.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any, cast

import gymnasium as gym
import minigrid  # noqa: F401  (registers the BabyAI ids)
import numpy as np
import pytest
from minigrid.envs.babyai.core.verifier import AfterInstr, AndInstr, BeforeInstr, GoToInstr
from sb3_hir_minigrid.coverage import GOTO_LEVELS, mission_coverage
from sb3_hir_minigrid.events import GoalObjectTracker, front_cell_event
from sb3_hir_minigrid.replay import replay_goto
from sb3_hir_minigrid.steps import encode_steps, instruction_steps, num_goals

EPISODES_PER_LEVEL = 60
STEP_CAP = 200
#: left, right, forward, pickup, drop, toggle, done: mostly moves, with enough pickups and drops to move objects.
ACTION_PROBS = np.array([0.2, 0.2, 0.4, 0.06, 0.06, 0.05, 0.03])


def babyai_done(instr, status) -> int:
    """Goals BabyAI's verifier holds as done, read from its latches (``status``: the node's last verify result)."""
    if isinstance(instr, GoToInstr):
        return int(status == "success")
    if isinstance(instr, AndInstr):
        return babyai_done(instr.instr_a, instr.a_done) + babyai_done(instr.instr_b, instr.b_done)
    if isinstance(instr, BeforeInstr):
        first = babyai_done(instr.instr_a, instr.a_done)
        return first + (babyai_done(instr.instr_b, instr.b_done) if instr.a_done == "success" else 0)
    if isinstance(instr, AfterInstr):
        first = babyai_done(instr.instr_b, instr.b_done)
        return first + (babyai_done(instr.instr_a, instr.a_done) if instr.b_done == "success" else 0)
    raise AssertionError(f"not a go-to tree: {instr!r}")


@dataclass
class Tally:
    steps: int = 0
    successes: int = 0
    multi_goal_successes: int = 0
    same_step_completions: int = 0  # steps completing two or more goals at once
    front_cell_differs: int = 0  # steps where the naive front-cell event is not the verifier's
    front_cell_misjudged: int = 0  # episodes whose replay over front-cell events misses BabyAI's success step


def run_level(level: str, tally: Tally) -> None:
    env = gym.make(level)
    rng = np.random.default_rng(list(map(ord, level)))
    try:
        for seed in range(EPISODES_PER_LEVEL):
            with contextlib.redirect_stdout(io.StringIO()):
                env.reset(seed=seed)
            instr = cast(Any, env.unwrapped).instrs  # minigrid ships no types
            steps = instruction_steps(instr)
            goals, step_ids = encode_steps(steps, k_max=4)
            tracker = GoalObjectTracker()
            tracker.reset(env)
            events, naive, done, babyai_success = [], [], [0], None
            for t in range(1, STEP_CAP + 1):
                action = int(rng.choice(7, p=ACTION_PROBS))
                _, reward, terminated, truncated, _ = env.step(action)
                tracker.after_step(env, action)
                events.append(tracker.event(env))
                naive.append(front_cell_event(env))
                tally.front_cell_differs += int(not np.array_equal(events[-1], naive[-1]))
                done.append(babyai_done(instr, "success" if terminated else "continue"))
                if terminated:
                    assert float(reward) > 0, "go-to missions only end in success"
                    babyai_success = t
                    break
                if truncated:
                    break
            replay = replay_goto(goals, step_ids, np.array(events))
            where = f"{level} seed {seed} ({cast(Any, env.unwrapped).mission!r})"
            assert replay.success_step == babyai_success, where
            np.testing.assert_array_equal(replay.done, done, err_msg=where)
            tally.steps += len(events)
            naive_success = replay_goto(goals, step_ids, np.array(naive)).success_step
            tally.front_cell_misjudged += int(naive_success != babyai_success)
            if babyai_success is not None:
                tally.successes += 1
                tally.multi_goal_successes += int(num_goals(steps) > 1)
            tally.same_step_completions += int(np.sum(np.diff(replay.done) >= 2))
    finally:
        env.close()


def test_replay_agrees_with_babyai_verify_at_every_step_of_random_episodes():
    tally = Tally()
    for level in GOTO_LEVELS:
        run_level(level, tally)
    print(f"\nagreement: {tally}")
    assert tally.steps >= 10_000
    # not vacuous: successes, of multi-goal missions too, and steps where the front cell would have misled
    assert tally.successes >= 20 and tally.multi_goal_successes >= 3, tally
    assert tally.front_cell_differs > 0, tally


@pytest.mark.parametrize("level", GOTO_LEVELS)
def test_every_go_to_level_mission_is_go_to_only_and_expressible(level):
    coverage = mission_coverage(level, range(300))
    assert coverage.missions == coverage.goto_only == coverage.expressible == 300, coverage.row()
