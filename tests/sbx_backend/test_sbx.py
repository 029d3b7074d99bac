"""SBX (SB3 in JAX, ``sbx-rl``): its SAC, TQC, CrossQ and TD3 train with SB3's ``HerReplayBuffer`` and with ours,
swapped by the import alone, and save and load model and replay buffer.

The current profile installs SBX (the ``sbx`` extra) and ``make test`` checks that it imports there; the
gymnasium 0.29 profile does not, and these tests skip there with the reason shown.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from stable_baselines3 import HerReplayBuffer as SB3HerReplayBuffer
from stable_baselines3.common.envs import BitFlippingEnv

from sb3_hir import HerReplayBuffer
from sb3_hir.episodes import Episode

sbx = pytest.importorskip("sbx", reason="SBX test: needs sbx-rl (the 'sbx' extra, installed in the current profile)")

ALGOS = ["SAC", "TQC", "CrossQ", "TD3"]


@pytest.fixture(scope="module", autouse=True)
def _compile_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    """JAX's persistent compilation cache, in a directory of this run: XLA's compile is most of an SBX test's CPU
    time (CrossQ: about 60 s of 68 on a busy 2-core machine), and each algorithm's two buffers, its demonstration
    test and its reload compile the same programs. The programs run are unchanged; only their compiling is shared."""
    import jax

    jax.config.update("jax_compilation_cache_dir", str(tmp_path_factory.mktemp("jax-cache")))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
BUFFERS = {"sb3-her": SB3HerReplayBuffer, "sb3-hir": HerReplayBuffer}


def make_env() -> BitFlippingEnv:
    return BitFlippingEnv(n_bits=4, continuous=True, max_steps=4)


def make_model(algo: str, buffer: type, **buffer_kwargs):
    return getattr(sbx, algo)(
        "MultiInputPolicy", make_env(), replay_buffer_class=buffer,
        replay_buffer_kwargs=dict(n_sampled_goal=4, goal_selection_strategy="future", **buffer_kwargs),
        learning_starts=40, batch_size=32, buffer_size=2_000, policy_kwargs=dict(net_arch=[32, 32]), seed=0,
    )


@pytest.mark.parametrize("buffer_name", list(BUFFERS))
@pytest.mark.parametrize("algo", ALGOS)
def test_sbx_trains_with_either_buffer_and_saves_and_loads_it(algo: str, buffer_name: str, tmp_path) -> None:
    buffer_class = BUFFERS[buffer_name]
    model = make_model(algo, buffer_class)
    assert type(model.replay_buffer) is buffer_class
    model.learn(120)
    if buffer_class is HerReplayBuffer:
        # SBX samples through the buffer's own sample(): four of five rows relabeled, as n_sampled_goal=4 says.
        assert model.replay_buffer.num_served >= 32 * 70
        assert abs(model.replay_buffer.served_relabeled_share - 0.8) < 0.03
    stored = model.replay_buffer.pos
    model.save(tmp_path / "model.zip")
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    loaded = getattr(sbx, algo).load(tmp_path / "model.zip", env=make_env())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # HER's "the last trajectory will be truncated"
        loaded.load_replay_buffer(tmp_path / "buffer.pkl")
    assert type(loaded.replay_buffer) is buffer_class and loaded.replay_buffer.pos == stored
    obs = make_env().reset(seed=0)[0]
    np.testing.assert_allclose(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0],
                               rtol=1e-5, atol=1e-6)
    loaded.learn(40, reset_num_timesteps=False)
    assert loaded.replay_buffer.pos == stored + 40


def test_sbx_reads_our_n_step_discounts() -> None:
    """SBX's SAC reads ``discounts`` from the samples, so our n-step returns reach it with a Dict observation
    (SB3's own n-step buffer refuses those)."""
    model = make_model("SAC", HerReplayBuffer, n_steps=3, gamma=0.95)
    model.learn(100)
    sample = model.replay_buffer.sample(64)
    assert sample.discounts is not None
    window = model.replay_buffer.last_sample_info.window
    np.testing.assert_allclose(sample.discounts.numpy()[:, 0], 0.95 ** window, rtol=1e-6)
    assert (window > 1).any()


def test_sbx_reaches_the_compact_layout_through_memory_layout() -> None:
    """SBX's algorithms pass ``optimize_memory_usage=False`` themselves and take no such argument, so the name in
    ``replay_buffer_kwargs`` collides; ``memory_layout="compact"`` reaches the layout, and serves what the full
    layout serves."""
    with pytest.raises(TypeError, match="multiple values for keyword argument 'optimize_memory_usage'"):
        make_model("SAC", HerReplayBuffer, optimize_memory_usage=True)
    models = {layout: make_model("SAC", HerReplayBuffer, memory_layout=layout) for layout in ("compact", "full")}
    for model in models.values():
        model.learn(120)
    compact, full = models["compact"].replay_buffer, models["full"].replay_buffer
    assert compact.optimize_memory_usage and not full.optimize_memory_usage
    assert set(compact.observations) == {"observation", "desired_goal"} and set(compact.next_observations) == {
        "achieved_goal"}
    for key in full.observations:  # the same stream, so the same rows when served
        np.testing.assert_array_equal(compact._storage.obs_rows(key, np.arange(120)),
                                      full.observations[key][:120, 0])
    with pytest.raises(ValueError, match="memory_layout must be one of 'full', 'compact'; got 'small'"):
        make_model("SAC", HerReplayBuffer, memory_layout="small")


@pytest.mark.parametrize("algo", ALGOS)
def test_sbx_trains_on_demonstrations_served_as_demo_ratio(algo: str) -> None:
    """Demonstrations reach SBX as they reach SB3: stored scaled as SBX stores its own actions, served as
    ``demo_ratio`` of each batch."""
    model = make_model(algo, HerReplayBuffer, demo_ratio=0.25)
    env = make_env()
    expert = [Episode.record(env, lambda obs: np.where(obs["achieved_goal"] != obs["desired_goal"], 1.0, -1.0)
                             .astype(np.float32), seed=seed, max_steps=env.max_steps) for seed in range(5)]
    assert model.replay_buffer.add_demonstrations(expert) == 5
    model.learn(120)
    assert abs(model.replay_buffer.served_demo_share - 0.25) < 0.02
    assert model.replay_buffer.demonstrations.source.storage.actions[:4, 0].max() <= 1.0
