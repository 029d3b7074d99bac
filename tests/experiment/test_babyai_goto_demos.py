"""``benchmarks/babyai_goto.py --demos N``: BabyAI's bot's episodes reach the DQN learner's replay buffer, all of them
and only them, and are served as ``demo_ratio`` of each batch; every variant of a seed gets the same episodes.

The real script's functions on the real level, bot, buffer and DQN (minigrid >= 3.0: the current profile)."""

from __future__ import annotations

import numpy as np
import pytest
from benchmark_module import load_benchmark

from sb3_hir.buffers.demonstrations import stored_episodes
from sb3_hir.cli.train import DEFAULT_DEMO_RATIO
from sb3_hir.experiment import seed_process

pytest.importorskip("minigrid.utils.baby_ai_bot", reason="BabyAI's bot comes with minigrid >= 3.0")
pytest.importorskip("imitation", reason="expert_episodes collects with imitation's rollout")
pytest.importorskip("sb3_hir_minigrid", reason="the babyai-bot expert is the sb3-hir-minigrid plugin's")

@pytest.fixture(scope="module")
def goto():
    return load_benchmark("babyai_goto")


def test_bot_demonstrations_reach_the_dqn_replay_buffer_and_are_served_at_demo_ratio(goto):
    _, options = goto.parse_options(["--demos", "3", "--history", "4", "--n-envs", "2", "--steps", "1000",
                                     "--variants", "some", "bc"])
    assert options["demo_ratio"] == DEFAULT_DEMO_RATIO == 0.5
    seed_process(0)
    episodes, seconds = goto.collect_demos(options, 0)
    again, _ = goto.collect_demos(options, 0)  # what the other variants of the seed (bc) collect
    assert len(episodes) == 3 and seconds > 0
    assert all(episode.infos[-1]["is_success"] for episode in episodes)  # the bot's, finished
    for first, second in zip(episodes, again, strict=True):
        np.testing.assert_array_equal(first.actions, second.actions)
        for key in first.observations:
            np.testing.assert_array_equal(first.observations[key], second.observations[key])

    model = goto.build_model(options, "some", 0, episodes)
    buffer = model.replay_buffer
    assert buffer.demo_ratio == 0.5
    assert len(buffer.demonstrations) == 3
    assert buffer.demonstrations.num_transitions == sum(len(episode) for episode in episodes)
    for stored, episode in zip(stored_episodes(buffer.demonstrations.source), episodes, strict=True):
        np.testing.assert_array_equal(stored.actions.reshape(-1), episode.actions.reshape(-1))
        np.testing.assert_array_equal(stored.rewards, episode.rewards)
        for key in episode.observations:
            np.testing.assert_array_equal(stored.observations[key], episode.observations[key])

    model.learn(200)  # fills the online storage; below learning_starts, so DQN itself samples nothing
    assert buffer.size() > 0 and buffer.num_served == 0
    # a demonstration row's window is its episode's window at that step: the region holds the episodes in order
    windows = np.concatenate([episode.observations["history"][:-1] for episode in episodes])
    batch = 128
    for _ in range(20):
        sample = buffer.sample(batch)
        rows = buffer.last_demonstration_info.rows
        assert len(rows) == batch * 0.5  # floor(64.0), nothing left to round
        served = sample.observations["history"][batch - len(rows):].numpy()  # online rows first, then theirs
        np.testing.assert_array_equal(served, windows[rows].astype(served.dtype))
    assert buffer.served_demo_share == pytest.approx(0.5)


@pytest.mark.parametrize(("argv", "message"), [
    (["--demos", "2", "--variants", "some", "ppo-mlp"],
     "--demos fills a replay buffer with the bot's episodes, and --variants ppo-mlp is on-policy PPO, which has none"),
    (["--variants", "bc"], "--variants bc is BC on the bot's demonstrations: give it --demos N with N >= 1"),
    (["--demo-ratio", "0.3"], "--demo-ratio 0.3 is the share of each DQN batch served from demonstrations"),
])
def test_demos_where_they_cannot_go_are_one_parser_error(goto, capsys, argv, message):
    with pytest.raises(SystemExit):
        goto.parse_options(argv)
    assert message in capsys.readouterr().err
