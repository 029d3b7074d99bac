"""The goal-conditioned grid encoder on the wrapper's real observations: the goals modulate the grid's features
(not only sit beside them), it trains and reloads inside SB3's DQN under a history window, and bad settings are
refused by name."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_hir_minigrid import BabyAIFiLMExtractor
from sb3_hir_minigrid.codes import COLOR_TO_CODE, TYPE_TO_CODE
from sb3_hir_minigrid.wrapper import make_babyai_goto
from stable_baselines3 import DQN
from stable_baselines3.common.preprocessing import preprocess_obs

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
from sb3_hir.history import HistoryWrapper


@pytest.fixture(autouse=True)
def _quiet_rejection_sampling():
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def batch(space: spaces.Dict, observations: list[dict[str, np.ndarray]]) -> dict[str, th.Tensor]:
    stacked = {k: th.as_tensor(np.stack([o[k] for o in observations])) for k in observations[0]}
    return preprocess_obs(stacked, space)  # type: ignore[return-value]


def two_goals(env) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One real observation, and the same one with another goal (a different color and type)."""
    obs, _ = env.reset(seed=3)
    other = {k: v.copy() for k, v in obs.items()}
    other["goals"][0] = [COLOR_TO_CODE["purple"] if obs["goals"][0][0] != COLOR_TO_CODE["purple"]
                         else COLOR_TO_CODE["red"],
                         TYPE_TO_CODE["key"] if obs["goals"][0][1] != TYPE_TO_CODE["key"] else TYPE_TO_CODE["box"]]
    return obs, other


def test_the_goals_change_the_grid_features_where_flat_features_keep_them():
    env = make_babyai_goto(env_id="BabyAI-GoToLocal-v0")
    obs, other = two_goals(env)
    th.manual_seed(0)
    film = BabyAIFiLMExtractor(env.observation_space)
    flat = KeySelectExtractor(env.observation_space, keys=["obs", "goals"])
    grid_size = film.features_dim - 4  # the direction's one-hot closes the features
    with th.no_grad():
        a, b = film(batch(env.observation_space, [obs, other]))
        fa, fb = flat(batch(env.observation_space, [obs, other]))
    assert not th.allclose(a[:grid_size], b[:grid_size])  # the goal acts on the grid's maps
    assert th.equal(a[grid_size:], b[grid_size:])
    # the flat features are the goal's two codes (CombinedExtractor sorts its keys) and the 148 grid entries unchanged
    assert th.equal(fa[2:], fb[2:]) and not th.equal(fa[:2], fb[:2])
    assert film.features_dim == 32 * 7 * 7 + 4


def test_dqn_with_a_window_and_the_film_encoder_trains_saves_and_reloads(tmp_path):
    inner = make_babyai_goto(env_id="BabyAI-GoToLocal-v0")
    env = HistoryWrapper(inner, length=4)
    model = DQN("MultiInputPolicy", env, learning_starts=32, batch_size=16, buffer_size=500, train_freq=4,
                replay_buffer_class=HindsightInstructionReplayBuffer,
                replay_buffer_kwargs=dict(hindsight_goals="some", goal_spec=inner.goal_spec, seed=0),
                policy_kwargs=dict(features_extractor_class=HistoryExtractor,
                                   features_extractor_kwargs=dict(keys=["obs", "goals"],
                                                                  current_extractor_class=BabyAIFiLMExtractor,
                                                                  current_extractor_kwargs=dict(channels=8))),
                seed=0, device="cpu")
    assert isinstance(model.q_net.features_extractor.current, BabyAIFiLMExtractor)
    before = [p.detach().clone() for p in model.q_net.features_extractor.current.parameters()]
    model.learn(160)
    after = list(model.q_net.features_extractor.current.parameters())
    assert any(not th.equal(x, y) for x, y in zip(before, after, strict=True))  # gradients reach the encoder
    model.save(tmp_path / "film.zip")
    loaded = DQN.load(tmp_path / "film.zip", device="cpu")
    obs, _ = env.reset(seed=5)
    assert loaded.predict(obs, deterministic=True)[0] == model.predict(obs, deterministic=True)[0]
    q = model.q_net(batch(env.observation_space, [obs]))
    np.testing.assert_allclose(loaded.q_net(batch(env.observation_space, [obs])).detach(), q.detach(), rtol=1e-6)


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(keys=["goals"]), "keys must include 'obs'"),
    (dict(keys=["obs", "instruction"]), "keys must include 'obs' and name keys"),
    (dict(keys=["obs"]), "keys must include a goal key"),
    (dict(channels=0), "channels must be an int >= 1, got 0"),
    (dict(blocks=1.5), "blocks must be an int >= 1, got 1.5"),
])
def test_bad_settings_are_refused_by_name(kwargs, message):
    env = make_babyai_goto(env_id="BabyAI-GoToLocal-v0")
    with pytest.raises(ValueError, match=message):
        BabyAIFiLMExtractor(env.observation_space, **kwargs)


def test_an_obs_that_is_not_a_flattened_grid_is_refused():
    space = spaces.Dict({"obs": spaces.Box(0, 255, (10,), np.uint8), "goals": spaces.Box(-4, 7, (1, 2), np.int32)})
    with pytest.raises(ValueError, match="'obs' must be a flattened view x view x 3 image"):
        BabyAIFiLMExtractor(space)
