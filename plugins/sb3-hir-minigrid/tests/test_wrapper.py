"""The instruction-env wrapper on real BabyAI levels, its discovery as a plugin, and what the core check accepts."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from sb3_hir_minigrid.codes import MASK, NOTHING, PAD, WILDCARD
from sb3_hir_minigrid.replay import replay_goto
from sb3_hir_minigrid.steps import UnsupportedInstructionError
from sb3_hir_minigrid.wrapper import BABYAI_MAX_GOALS, BabyAIGoToInstruction, make_babyai_goto

from sb3_hir import plugins
from sb3_hir.testing import check_instruction_env


@pytest.fixture(autouse=True)
def _fresh_plugin_manager():
    plugins.reset()
    yield
    plugins.reset()


@pytest.fixture(autouse=True)
def _quiet_rejection_sampling():
    """BabyAI prints every rejected layout; keep the test output to what matters."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def rollout(env: BabyAIGoToInstruction, seed: int, steps: int = 300):
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    record, rewards, infos = [obs], [], [info]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        record.append(obs)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            break
    return record, np.array(rewards), infos


def test_the_env_is_discovered_through_the_entry_point():
    envs = plugins.available("env")
    assert envs["babyai-goto"].plugin == "minigrid"
    assert envs["babyai-goto"].distribution == "sb3-hir-minigrid"
    ours = [p for p in plugins.plugins() if p.distribution == "sb3-hir-minigrid"]
    assert [p.name for p in ours] == ["minigrid"] and not ours[0].broken
    env = plugins.create("env", "babyai-goto", env_id="BabyAI-GoToSeqS5R2-v0", k_max=BABYAI_MAX_GOALS)
    assert isinstance(env, BabyAIGoToInstruction) and env.observation_space["goals"].shape == (4, 2)


def test_observations_mask_reached_goals_pad_the_rest_and_report_the_tracked_event():
    env = make_babyai_goto("BabyAI-GoToSeqS5R2-v0", k_max=BABYAI_MAX_GOALS)
    image_size = int(np.prod(env.env.observation_space["image"].shape))
    successes = 0
    for seed in range(30):
        record, rewards, infos = rollout(env, seed)
        for obs in record:
            assert env.observation_space.contains(obs), seed
            assert obs["obs"].shape == (image_size + 1,) and obs["obs"][-1] < 4  # image, then direction
        first = record[0]
        n_goals = int(np.sum(first["goal_steps"] != PAD))
        assert np.all(first["goals"][n_goals:] == PAD) and np.all(first["goals"][:n_goals] != PAD)
        # the masks, rewards and infos are the replay's over the achieved events
        replay = replay_goto(first["goals"], first["goal_steps"], np.array([o["achieved"] for o in record[1:]]))
        for t, obs in enumerate(record):
            masked = np.all(obs["goals"] == MASK, axis=-1)
            np.testing.assert_array_equal(masked, replay.reached[t])
            np.testing.assert_array_equal(obs["goal_steps"], first["goal_steps"])
            assert infos[t]["goals_reached"] == replay.done[t]
            assert infos[t]["is_success"] == (replay.done[t] == n_goals)
        np.testing.assert_array_equal(rewards, np.diff(replay.done))
        successes += int(infos[-1]["is_success"])
    assert successes >= 1


def test_nothing_is_achieved_when_facing_no_goal_object():
    env = make_babyai_goto("BabyAI-GoToLocal-v0")
    seen = set()
    for seed in range(5):
        record, _, _ = rollout(env, seed, steps=50)
        seen.update(tuple(obs["achieved"]) for obs in record)
    assert (NOTHING, NOTHING) in seen and len(seen) > 1


def test_missions_other_than_go_to_are_refused_at_reset():
    env = make_babyai_goto("BabyAI-Pickup-v0", k_max=BABYAI_MAX_GOALS)
    with pytest.raises(UnsupportedInstructionError):
        env.reset(seed=0)


def test_a_mission_longer_than_k_max_is_refused_at_reset():
    env = make_babyai_goto("BabyAI-GoToSeqS5R2-v0", k_max=1)
    with pytest.raises(UnsupportedInstructionError, match="k_max=1"):
        for seed in range(20):
            env.reset(seed=seed)


@pytest.mark.parametrize("env_id", ["BabyAI-GoToLocal-v0", "BabyAI-GoTo-v0"])
def test_single_goal_levels_keep_the_core_contract_as_checked_today(env_id):
    """One goal, no padding: under the env's declared goal spec (events with a nothing value, partial descriptions,
    several goals per step) the core check holds: replay, is_success, no goal ever the nothing value; the env takes
    no instruction at reset, so no counterfactual replay."""
    env = make_babyai_goto(env_id, k_max=1)
    assert env.goal_spec.nothing_value == NOTHING and env.goal_spec.wildcard_value == WILDCARD
    check_instruction_env(env, n_episodes=4, max_steps=200)


@pytest.mark.parametrize("env_id", ["BabyAI-GoToSeqS5R2-v0", "BabyAI-GoToSeq-v0"])
def test_goto_seq_levels_keep_the_core_contract_with_padding_and_groups(env_id):
    """Missions of 1 to 4 goals, "and"s in either order: under the declared padding and groups the core's replay of
    each episode's own instruction reproduces the env (rewards, masks, terminations, is_success) step by step, and
    the instruction form holds (padding at the end, groups counting up)."""
    env = make_babyai_goto(env_id, k_max=BABYAI_MAX_GOALS)
    assert env.goal_spec.pad_value == PAD and env.goal_spec.groups_key == "goal_steps"
    check_instruction_env(env, n_episodes=12, max_steps=400)


def test_without_padding_and_groups_declared_goto_seq_breaks_the_core_contract():
    """The counterfactual: the same env with the spec's padding and groups taken away; the core then waits for a
    padding goal that no step reaches, or for an "and" in slot order, and its replay disagrees with BabyAI's."""
    from sb3_hir.goals import ExactGoalSpec

    env = make_babyai_goto("BabyAI-GoToSeqS5R2-v0", k_max=BABYAI_MAX_GOALS)
    spec = env.goal_spec
    env.goal_spec = ExactGoalSpec(mask_value=spec.mask_value, nothing_value=spec.nothing_value,
                                  wildcard_value=spec.wildcard_value, description_levels=spec.description_levels,
                                  same_step_goals=True)
    with pytest.raises(AssertionError):
        check_instruction_env(env, n_episodes=12, max_steps=400)


def test_train_runs_goto_seq_end_to_end_and_its_policy_reads_the_groups(tmp_path):
    import zipfile

    from sb3_hir import cli

    out = tmp_path / "run"
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(["train", "--env", "babyai-goto", "--env-kwarg", "env_id=BabyAI-GoToSeqS5R2-v0", "--env-kwarg",
                  "k_max=4", "--timesteps", "300", "--eval-freq", "300", "--eval-episodes", "2", "--relabel", "some",
                  "--no-progress", "--out", str(out)])
    models = list(out.rglob("*.zip"))
    assert models
    with zipfile.ZipFile(models[0]) as archive:
        data = archive.read("data").decode()
    assert '"goal_steps"' in data  # the extractor's keys: the policy sees which goals form a group


def test_a_buffer_sb3_built_without_the_env_refuses_to_relabel_by_another_spec_than_the_envs():
    """SB3 hands only its own HerReplayBuffer the env, so HindsightInstructionReplayBuffer cannot read env.goal_spec;
    the env's info names it, and the default-spec buffer refuses the first transition, before storing anything."""
    from stable_baselines3 import DQN
    from stable_baselines3.common.env_util import make_vec_env

    from sb3_hir.buffers import HindsightInstructionReplayBuffer

    venv = make_vec_env(lambda: make_babyai_goto(), n_envs=2, seed=0)
    model = DQN("MultiInputPolicy", venv, learning_starts=50, seed=0,
                replay_buffer_class=HindsightInstructionReplayBuffer)
    with pytest.raises(ValueError, match=r"replay_buffer_kwargs=dict\(goal_spec=env.goal_spec\)"), \
            contextlib.redirect_stdout(io.StringIO()):
        model.learn(20)
    assert model.replay_buffer.size() == 0  # nothing stored under the wrong spec
    spec = venv.get_attr("goal_spec", indices=[0])[0]
    model = DQN("MultiInputPolicy", venv, learning_starts=50, seed=0,
                replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(goal_spec=spec))
    with contextlib.redirect_stdout(io.StringIO()):
        model.learn(60)
    assert model.replay_buffer.size() > 0 and model.replay_buffer.goal_spec is spec
