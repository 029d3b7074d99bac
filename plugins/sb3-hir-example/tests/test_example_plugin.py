"""The example plugin's regression tests: the template a plugin author copies.

``check_plugin`` holds every component the distribution registers to the contract of its kind; the unit tests
below pin down what this plugin's components do, on real MazeRunner episodes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sb3_hir_example import CosineBetaSchedule, FinalGoalRelabeler, NearFutureDraw

from sb3_hir import plugins
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.episodes import Episode
from sb3_hir.testing import check_beta_schedule, check_draw_strategy, check_plugin, check_relabeler
from sb3_hir.testing.served_rows import fill, make_buffer


def test_plugin_passes_the_sb3_hir_contract_checks():
    check_plugin("sb3-hir-example")


def test_components_are_registered_under_their_names():
    assert isinstance(plugins.create("relabeler", "final-goal", num_goals=2), FinalGoalRelabeler)
    assert isinstance(plugins.create("beta_schedule", "cosine"), CosineBetaSchedule)
    assert isinstance(plugins.create("draw_strategy", "near-future", p=0.3), NearFutureDraw)


# -------------------------------------------------------------------------------------------------- NearFutureDraw
@pytest.mark.parametrize("p", [1.0, 0.3])
def test_near_future_rows_are_replays_served_n_stepped_compact_and_with_demonstrations(p: float):
    """Both layouts, 1-step and 3-step serving, demonstrations mixed in: every served row is the oracle's replay."""
    check_draw_strategy("near-future", num_goals=(1,), strategy_kwargs=dict(p=p))
    check_draw_strategy(NearFutureDraw(p=p), num_goals=(1,), n_steps=(2,), memory_layouts=("compact",))


def test_near_future_with_p_1_draws_the_next_steps_value():
    """p = 1: the goal is the value achieved right after the transition, for every relabeled row."""
    buffer = make_buffer(1, size=200, n_envs=2, relabel_ratio=1.0, draw="near-future",
                         draw_kwargs=dict(p=1.0))
    fill(buffer, np.random.default_rng(0), 150)
    sample = buffer.sample(64)
    info = buffer.last_sample_info
    assert info.relabeled.sum() > 32
    next_achieved = sample.next_observations["achieved"].numpy()[:, 0]  # (B, 2): after the transition
    np.testing.assert_array_equal(info.goals[info.relabeled][:, 0], next_achieved[info.relabeled])


def test_near_future_refuses_what_it_cannot_serve():
    with pytest.raises(ValueError, match="p must be a number in"):
        NearFutureDraw(p=0.0)
    with pytest.raises(ValueError, match="'near-future' draws one-goal instructions"):
        make_buffer(2, draw="near-future")


# ---------------------------------------------------------------------------------------------- FinalGoalRelabeler
def rollout(env: MazeRunnerEnv, seed: int, expert: bool = False) -> Episode:
    """One MazeRunner episode under a seeded random policy, or under the env's shortest-path expert."""
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    observations, actions, rewards, terminated, truncated = [obs], [], [], [], []
    done = False
    while not done:
        action = env.expert_action() if expert else env.action_space.sample()
        obs, reward, term, trunc, _ = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        terminated.append(term)
        truncated.append(trunc)
        done = term or trunc
    return Episode(
        observations={key: np.stack([o[key] for o in observations]) for key in obs},
        actions=np.asarray(actions),
        rewards=np.asarray(rewards, dtype=np.float32),
        terminated=np.asarray(terminated),
        truncated=np.asarray(truncated),
    )


def test_final_goal_makes_the_final_cell_the_next_goal():
    env = MazeRunnerEnv(maze_dim=7, num_goals=3, time_limit=60)
    relabeler = FinalGoalRelabeler(3)
    relabeled_episodes = 0
    for seed in range(12):
        episode = rollout(env, seed)
        own = episode.instruction()
        achieved = episode.observations["achieved"][:, 0]
        steps = relabeler.reach_steps(achieved, own)
        n = int((steps > 0).sum())
        goals = relabeler.relabel_goals(episode, np.random.default_rng(seed))
        if n == 3 or (n > 0 and steps[n - 1] == len(episode)):
            assert goals is None
            continue
        relabeled_episodes += 1
        np.testing.assert_array_equal(goals[:n], own[:n])  # goals really reached stay
        np.testing.assert_array_equal(goals[n], achieved[-1])  # the final cell is the next goal
        np.testing.assert_array_equal(goals[n + 1 :], own[n + 1 :])  # later goals are untouched
        relabeled = relabeler.relabel(episode, np.random.default_rng(seed))
        assert relabeled.episode_return >= episode.episode_return + 1.0
        # The new goal is credited on the first visit to the final cell after the goals already reached.
        first = steps[n - 1] + 1 if n else 1
        visit = first + int(np.flatnonzero((achieved[first:] == achieved[-1]).all(axis=-1))[0])
        assert relabeled.rewards[visit - 1] == 1.0
        assert relabeled.rewards[: visit - 1].sum() == n
    assert relabeled_episodes >= 6, "random MazeRunner episodes should mostly fail, exercising the relabeling"


def test_final_goal_leaves_successful_episodes_alone():
    env = MazeRunnerEnv(maze_dim=7, num_goals=3, time_limit=60)
    relabeler = FinalGoalRelabeler(3)
    for seed in range(3):
        episode = rollout(env, seed, expert=True)
        assert episode.terminated[-1] and episode.episode_return == 3.0
        assert relabeler.relabel_goals(episode, np.random.default_rng(0)) is None
        assert relabeler.relabel(episode, np.random.default_rng(0)) is episode


def test_final_goal_ignores_the_generator():
    env = MazeRunnerEnv(maze_dim=7, num_goals=3, time_limit=60)
    relabeler = FinalGoalRelabeler(3)
    episode = rollout(env, seed=5)
    first = relabeler.relabel_goals(episode, np.random.default_rng(1))
    second = relabeler.relabel_goals(episode, np.random.default_rng(2))
    assert first is not None
    np.testing.assert_array_equal(first, second)


def test_final_goal_keeps_the_relabeler_invariants_with_continuous_actions():
    check_relabeler(FinalGoalRelabeler(2), MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=60, continuous=True))


# ---------------------------------------------------------------------------------------------- CosineBetaSchedule
def test_cosine_schedule_values():
    schedule = CosineBetaSchedule(rampdown_rounds=4)
    assert schedule(0) == 1.0
    assert schedule(2) == pytest.approx(0.5)
    assert schedule(1) == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))
    assert schedule(4) == 0.0 and schedule(100) == 0.0
    # Gentler than linear at the start: the expert keeps more control in the first rounds.
    assert schedule(1) > 1 - 1 / 4


@pytest.mark.parametrize("rampdown_rounds", [1, 4, 10])
def test_cosine_schedule_passes_the_beta_schedule_check(rampdown_rounds):
    check_beta_schedule(CosineBetaSchedule(rampdown_rounds), rounds=rampdown_rounds + 5)


def test_cosine_schedule_rejects_bad_arguments():
    with pytest.raises(ValueError, match="rampdown_rounds must be an integer >= 1"):
        CosineBetaSchedule(0)
    with pytest.raises(ValueError, match="rampdown_rounds must be an integer >= 1"):
        CosineBetaSchedule(2.5)
    with pytest.raises(ValueError, match="round_num must be >= 0"):
        CosineBetaSchedule(3)(-1)
