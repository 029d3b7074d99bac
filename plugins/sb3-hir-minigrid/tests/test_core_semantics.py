"""The core relabeler's reach semantics (padding, groups, same-step goals, wildcards, nothing events) against the
plugin's replay of BabyAI's ``verify`` (itself checked against BabyAI in ``test_agreement.py``), on the real missions
of the GoToSeq levels and event sequences made to hit their goals in every order."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from sb3_hir_minigrid.codes import COLOR_TO_CODE, NOTHING, PAD, TYPE_TO_CODE, WILDCARD
from sb3_hir_minigrid.replay import replay_goto
from sb3_hir_minigrid.wrapper import BABYAI_MAX_GOALS, make_babyai_goto

from sb3_hir.reach import instruction_end
from sb3_hir.relabel import HindsightInstructionRelabeler


def random_events(rng: np.random.Generator, goals: np.ndarray, length: int) -> np.ndarray:
    """Events that often satisfy one of the goals (a wildcard color filled at random), else nothing or any object."""
    real = goals[(goals != PAD).all(axis=1)]
    events = np.full((length, 2), NOTHING, np.int32)
    colors, types = list(COLOR_TO_CODE.values()), list(TYPE_TO_CODE.values())
    for t in range(length):
        draw = rng.random()
        if draw < 0.45:
            goal = real[rng.integers(len(real))]
            color = goal[0] if goal[0] != WILDCARD else rng.choice(colors)
            events[t] = (color, goal[1])
        elif draw < 0.6:
            events[t] = (rng.choice(colors), rng.choice(types))
    return events


@pytest.mark.parametrize("env_id", ["BabyAI-GoToSeqS5R2-v0", "BabyAI-GoToSeq-v0"])
def test_core_reach_steps_are_babyais_on_real_missions(env_id):
    env = make_babyai_goto(env_id, k_max=BABYAI_MAX_GOALS)
    relabeler = HindsightInstructionRelabeler(BABYAI_MAX_GOALS, "none", env.goal_spec)
    rng = np.random.default_rng(0)
    out_of_order = same_step = successes = padded = 0
    for seed in range(150):
        with contextlib.redirect_stdout(io.StringIO()):
            obs, _ = env.reset(seed=seed)
        goals, groups = obs["goals"], obs["goal_steps"]
        padded += int((goals == PAD).all(axis=1).any())
        for _ in range(4):
            events = random_events(rng, goals, int(rng.integers(3, 25)))
            babyai = replay_goto(goals, groups, events)
            achieved = np.concatenate([np.full((1, 2), NOTHING, np.int32), events])
            reach = relabeler.reach_steps(achieved, goals, groups)
            first = np.where(babyai.reached.any(axis=0), babyai.reached.argmax(axis=0), -1)
            np.testing.assert_array_equal(reach, first, err_msg=f"seed {seed}: goals {goals.tolist()}, groups "
                                                                 f"{groups.tolist()}, events {events.tolist()}")
            real = (goals != PAD).all(axis=1)
            end = int(instruction_end(reach[None], real[None])[0])
            assert end == (babyai.success_step if babyai.success_step is not None else -1)
            successes += end > 0
            reached = reach[reach > 0]
            same_step += len(reached) != len(set(reached.tolist()))
            out_of_order += any(reach[j] > 0 and reach[i] > 0 and reach[j] < reach[i] and groups[i] == groups[j]
                                for i in range(len(reach)) for j in range(i + 1, len(reach)))
    # the cases the core added are all exercised
    assert padded > 50 and successes > 50 and out_of_order > 20 and same_step > 5, (padded, successes, out_of_order,
                                                                                    same_step)
