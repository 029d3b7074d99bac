"""Evaluation callback and plotting helpers used by the CLI and the examples, on tiny real runs."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure

from sb3_hir.callbacks import EvalHistory, InstructionEvalCallback, evaluate_instruction_policy
from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
from sb3_hir.plots import (
    atomic_path,
    plot_learning_curves,
    record_episode,
    save_episode_gif,
    save_episode_png,
)

ENV_KWARGS = dict(maze_dim=7, num_goals=2, time_limit=20)


def make_env(n_envs: int = 2, seed: int = 0):
    return make_vec_env(MazeRunnerEnv, n_envs=n_envs, seed=seed, env_kwargs=ENV_KWARGS)


def test_expert_scores_full_success_and_every_goal():
    env = make_env(n_envs=3, seed=5)
    result = evaluate_instruction_policy(ShortestPathExpert(env), env, n_eval_episodes=6)
    assert result.success_rate == 1.0
    assert result.goals_reached == 2.0
    assert result.mean_reward == 2.0  # one reward per goal
    assert result.mean_length < 20


def test_seeded_evaluation_scores_the_same_episodes():
    env = make_env(n_envs=2, seed=1)
    model = DQN("MultiInputPolicy", env, seed=0, learning_starts=10**6)
    first = evaluate_instruction_policy(model, env, 4, seed=123)
    evaluate_instruction_policy(model, env, 4)  # advances the env's own stream
    assert evaluate_instruction_policy(model, env, 4, seed=123) == first


def test_callback_evaluates_at_start_every_eval_freq_and_at_the_end(tmp_path):
    model = DQN("MultiInputPolicy", make_env(), seed=0, learning_starts=50)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    callback = InstructionEvalCallback(make_env(seed=99), eval_freq=100, n_eval_episodes=2, seed=7)
    model.learn(250, callback=callback)
    history = callback.history
    assert model.num_timesteps >= 250  # DQN collects in chunks of train_freq steps
    assert history.timesteps == [0, 100, 200, model.num_timesteps]
    assert all(0.0 <= s <= 1.0 for s in history.success_rate)
    assert all(0.0 <= g <= 2.0 for g in history.goals_reached)
    # What went through SB3's logger is what the callback kept.
    assert EvalHistory.from_csv(tmp_path / "progress.csv") == history


@pytest.mark.parametrize(("kwargs", "message"), [(dict(eval_freq=0), "eval_freq"),
                                                 (dict(n_eval_episodes=0), "n_eval_episodes")])
def test_callback_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        InstructionEvalCallback(make_env(), **kwargs)


def test_recorded_expert_episode_is_drawn(tmp_path):
    env = MazeRunnerEnv(**ENV_KWARGS, render_mode="rgb_array")

    class EnvExpert:  # the expert of the single rendering env, through SB3's predict signature
        def predict(self, obs, state=None, episode_start=None, deterministic=True):
            return env.expert_action(), state

    episode = record_episode(EnvExpert(), env, seed=3)
    assert episode.is_success and episode.goals_reached == 2 and episode.seed == 3
    assert len(episode.frames) == episode.length + 1 and episode.reward == 2.0
    save_episode_png(episode.frames, tmp_path / "ep.png", title="expert")
    save_episode_gif(episode.frames, tmp_path / "ep.gif")
    with Image.open(tmp_path / "ep.png") as png:
        assert png.format == "PNG"
    with Image.open(tmp_path / "ep.gif") as gif:
        assert gif.format == "GIF" and gif.n_frames > 1  # the expert moves every step


def test_plot_learning_curves_writes_a_png(tmp_path):
    history = EvalHistory()
    for t in range(4):
        history.append(t * 10, t / 4, t / 2, t / 2)
    path = plot_learning_curves({"a": history, "b": history}, tmp_path / "curve.png", num_goals=2, title="t")
    with Image.open(path) as image:
        assert image.format == "PNG" and image.width > 300
    with pytest.raises(ValueError, match="curves"):
        plot_learning_curves({}, tmp_path / "empty.png")


def test_bad_frames_and_render_mode_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="frames"):
        save_episode_png([], tmp_path / "x.png")
    with pytest.raises(ValueError, match="rgb"):
        save_episode_gif([np.zeros((4, 4))], tmp_path / "x.gif")
    with pytest.raises(ValueError, match="render_mode"):
        record_episode(None, MazeRunnerEnv(**ENV_KWARGS))


def test_atomic_path_leaves_nothing_behind_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    with atomic_path(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
