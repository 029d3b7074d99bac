"""HistoryWrapper and HistoryExtractor: window contents across resets and VecEnvs, goal-freedom, unchanged learners."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from buffer_fill import filled_by_random_actions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sb3_contrib import QRDQN, TQC
from stable_baselines3 import DQN, SAC
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.extractors import HistoryExtractor
from sb3_hir.history import HistoryWrapper
from sb3_hir.testing import check_instruction_env
from sb3_hir.vec_env import VecHideKeys

EXTRACTOR = dict(features_extractor_class=HistoryExtractor,
                 features_extractor_kwargs=dict(keys=["obs", "goals"], hidden_size=16), net_arch=[32])


def maze_with_history(length: int = 4, time_limit: int = 7, **kwargs) -> HistoryWrapper:
    return HistoryWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=time_limit, **kwargs), length=length)


def expected_window(rows: list[np.ndarray], length: int, width: int) -> np.ndarray:
    """The window built by hand from the episode's rows so far (oldest first, zero-padded in front)."""
    window = np.zeros((length, width), dtype=np.float32)
    recent = rows[-length:]
    if recent:
        window[length - len(recent):] = np.stack(recent)
    return window


def row(obs: np.ndarray, action: int | None) -> np.ndarray:
    one_hot = np.zeros(5, dtype=np.float32)
    if action is not None:
        one_hot[action] = 1.0
    return np.concatenate([obs.astype(np.float32), one_hot, [1.0]]).astype(np.float32)


def test_window_holds_the_last_observations_and_previous_actions_and_restarts_at_reset():
    env = maze_with_history(length=3, time_limit=5)
    assert env.layout == {"obs": slice(0, 7), "action": slice(7, 12), "valid": slice(12, 13)}
    assert env.observation_space["history"].shape == (3, 13)
    rng = np.random.default_rng(0)
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        rows = [row(obs["obs"], None)]
        np.testing.assert_array_equal(obs["history"], expected_window(rows, 3, 13))
        assert obs["history"][:2].sum() == 0.0  # padding: zeros, valid = 0
        done = False
        while not done:
            action = int(rng.integers(5))
            obs, _, terminated, truncated, _ = env.step(action)
            rows.append(row(obs["obs"], action))
            np.testing.assert_array_equal(obs["history"], expected_window(rows, 3, 13))
            assert obs in env.observation_space
            done = terminated or truncated


@pytest.mark.parametrize("vec_env_cls", [DummyVecEnv, SubprocVecEnv])
def test_window_at_episode_boundaries_in_every_sub_env(vec_env_cls):
    """Auto-reset: terminal_observation keeps the ended episode's window, the next observation starts a new one."""
    n_envs, length, time_limit = 3, 4, 6
    venv = make_vec_env(lambda: maze_with_history(length=length, time_limit=time_limit), n_envs=n_envs, seed=3,
                        vec_env_cls=vec_env_cls)
    obs = venv.reset()
    rows: list[list[np.ndarray]] = [[row(obs["obs"][i], None)] for i in range(n_envs)]
    rng = np.random.default_rng(1)
    boundaries = 0
    for _ in range(3 * time_limit + 2):
        actions = rng.integers(5, size=n_envs)
        obs, _, dones, infos = venv.step(actions)
        for i in range(n_envs):
            if dones[i]:
                terminal = infos[i]["terminal_observation"]
                rows[i].append(row(terminal["obs"], int(actions[i])))
                np.testing.assert_array_equal(terminal["history"], expected_window(rows[i], length, 13))
                rows[i] = [row(obs["obs"][i], None)]
                np.testing.assert_array_equal(obs["history"][i], expected_window(rows[i], length, 13))
                assert (obs["history"][i][:-1] == 0).all()
                boundaries += 1
            else:
                rows[i].append(row(obs["obs"][i], int(actions[i])))
                np.testing.assert_array_equal(obs["history"][i], expected_window(rows[i], length, 13))
    venv.close()
    assert boundaries >= 2 * n_envs


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), actions=st.lists(st.integers(0, 4), min_size=1, max_size=30),
       length=st.integers(1, 6))
def test_window_does_not_depend_on_the_instruction(seed, actions, length):
    """The same seed and actions under two instructions give the same windows while both episodes run."""
    env = maze_with_history(length=length, time_limit=30)
    first, _ = env.reset(seed=seed)
    goals = env.unwrapped.goal_positions.copy()
    windows_a = [first["history"]]
    for a in actions:
        obs, _, terminated, truncated, _ = env.step(a)
        windows_a.append(obs["history"])
        if terminated or truncated:
            break
    other = goals[::-1].copy()  # the same cells, other order: a different instruction in the same maze
    obs, _ = env.reset(seed=seed, options={"goals": other})
    windows_b = [obs["history"]]
    for a in actions[: len(windows_a) - 1]:
        obs, _, terminated, truncated, _ = env.step(a)
        windows_b.append(obs["history"])
        if terminated or truncated:
            break
    for a, b in zip(windows_a, windows_b, strict=False):  # the other instruction may end sooner
        np.testing.assert_array_equal(a, b)


def test_relabeled_rows_keep_the_recorded_window():
    """The buffer rewrites the instruction of a sampled row, never its window."""
    buffer = filled_by_random_actions(lambda: maze_with_history(length=5, time_limit=12), steps=200)
    samples = buffer.sample(256)
    info = buffer.last_sample_info
    relabeled = info.relabeled
    assert relabeled.any()
    for key in ("history", "obs"):
        stored = buffer.observations[key][info.rows, info.env_indices]
        stored_next = buffer.next_observations[key][info.rows, info.env_indices]
        np.testing.assert_array_equal(samples.observations[key].numpy(), stored)
        np.testing.assert_array_equal(samples.next_observations[key].numpy(), stored_next)
    assert not np.array_equal(samples.observations["goals"].numpy()[relabeled],
                              buffer.observations["goals"][info.rows, info.env_indices][relabeled])


def test_check_instruction_env_passes_with_history_and_catches_a_goal_dependent_window():
    check_instruction_env(maze_with_history(length=6, time_limit=25), n_episodes=3)

    class CopyGoals(gym.ObservationWrapper):
        """Smuggles the instruction into another key, which the history wrapper cannot tell apart."""

        def __init__(self, env: gym.Env) -> None:
            super().__init__(env)
            self.observation_space = gym.spaces.Dict({**env.observation_space.spaces,
                                                      "copy": env.observation_space["goals"]})

        def observation(self, obs):
            return {**obs, "copy": obs["goals"].copy()}

    leaky = HistoryWrapper(CopyGoals(MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=25)), length=3,
                           keys=("obs", "copy"))
    leaky = gym.wrappers.FilterObservation(leaky, ["achieved", "goals", "obs", "history"])  # only the window leaks
    with pytest.raises(AssertionError, match=r"'history'.*must not depend on the instruction"):
        check_instruction_env(leaky, n_episodes=3)


@pytest.mark.parametrize("algo_cls,continuous,encoder", [
    (DQN, False, "gru"), (DQN, False, "conv"), (QRDQN, False, "gru"), (SAC, True, "gru"), (TQC, True, "conv"),
])
def test_extractor_in_unchanged_off_policy_algorithms_with_relabeling(algo_cls, continuous, encoder):
    venv = make_vec_env(lambda: maze_with_history(length=4, time_limit=15, continuous=continuous), n_envs=2, seed=0)
    kwargs = dict(EXTRACTOR, features_extractor_kwargs=dict(keys=["obs", "goals"], hidden_size=16, encoder=encoder))
    model = algo_cls("MultiInputPolicy", venv, buffer_size=2_000, learning_starts=100, batch_size=32,
                     replay_buffer_class=HindsightInstructionReplayBuffer,
                     replay_buffer_kwargs=dict(hindsight_goals="some"), policy_kwargs=kwargs, seed=0)
    extractor = (model.policy.actor if continuous else model.policy.quantile_net if algo_cls is QRDQN
                 else model.policy.q_net).features_extractor
    assert isinstance(extractor, HistoryExtractor) and extractor.encoder == encoder
    encoder_params = [p for name, p in extractor.named_parameters() if not name.startswith("current")]
    before = [p.detach().clone() for p in encoder_params]
    model.learn(300)
    trained = [not th.equal(b, p) for b, p in zip(before, encoder_params, strict=True)]
    assert any(trained), "the window encoder never trained"
    action, _ = model.predict(venv.reset(), deterministic=True)
    assert action.shape[0] == 2


def test_extractor_sees_the_window():
    """Two observations that differ only in their window give different features (and equal ones otherwise)."""
    space = maze_with_history(length=4).observation_space
    for encoder in ("gru", "conv"):
        extractor = HistoryExtractor(space, keys=["obs", "goals"], encoder=encoder, hidden_size=8)
        obs = {key: th.as_tensor(np.stack([sub.sample(), sub.sample()]).astype(np.float32))
               for key, sub in space.spaces.items()}
        obs["history"][:, :, -1] = 1.0
        same = {key: value.clone() for key, value in obs.items()}
        same["history"][1] = same["history"][0]
        for key in ("obs", "goals", "achieved"):
            same[key][1] = same[key][0]
        features = extractor(same)
        assert features.shape == (2, extractor.features_dim) == (2, 7 + 4 + 8)
        assert th.allclose(features[0], features[1])
        same["history"][1, -1, 0] += 0.5
        features = extractor(same)
        assert not th.allclose(features[0, -8:], features[1, -8:])
        assert th.allclose(features[0, :-8], features[1, :-8])


def test_with_vec_hide_keys_and_vec_normalize():
    venv = make_vec_env(lambda: maze_with_history(length=4, time_limit=10), n_envs=2, seed=0)
    hidden = VecHideKeys(venv, keys=("achieved",))
    assert set(hidden.observation_space.spaces) == {"goals", "obs", "history"}
    normalized = VecNormalize(hidden, norm_obs_keys=["obs", "history"], norm_reward=False)
    obs = normalized.reset()
    for _ in range(12):
        obs, _, _, infos = normalized.step(np.array([0, 2]))
    assert obs["history"].shape == (2, 4, 13) and np.isfinite(obs["history"]).all()
    raw = normalized.get_original_obs()
    window = raw["history"]
    assert ((window[:, :, -1] == 0) | (window[:, :, -1] == 1)).all()
    assert "achieved" in infos[0][VecHideKeys.INFO_KEY]


@pytest.mark.parametrize("kwargs,match", [
    (dict(length=0), "length must be an int >= 1"),
    (dict(length=2.5), "length must be an int >= 1"),
    (dict(keys=("goals",)), "must not include the instruction key"),
    (dict(keys=("nope",)), r"keys \['nope'\] are not in the observation space"),
    (dict(keys=()), "keys must be one or more"),
    (dict(key="obs"), "key must be a str not already in the observation space"),
])
def test_wrapper_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HistoryWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2), **kwargs)
    with pytest.raises(ValueError, match="Dict observation space"):
        HistoryWrapper(gym.make("CartPole-v1"))


def test_extractor_encodes_the_current_keys_with_the_given_extractor_and_keeps_the_default_s_parameters():
    """``current_extractor_class`` builds the current step's encoder over ``keys`` (with its kwargs); the default
    stays the flat ``KeySelectExtractor`` with the parameter names saved models hold."""
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    from sb3_hir.extractors import KeySelectExtractor

    class Doubled(BaseFeaturesExtractor):
        def __init__(self, observation_space, keys, scale=1.0):
            super().__init__(observation_space, features_dim=2)
            self.keys, self.scale = list(keys), scale

        def forward(self, observations):
            return th.stack([observations[k].float().sum(dim=tuple(range(1, observations[k].dim())))
                             for k in self.keys], dim=1) * self.scale

    space = maze_with_history(length=4).observation_space
    default = HistoryExtractor(space, keys=["obs", "goals"], hidden_size=8)
    assert type(default.current) is KeySelectExtractor
    assert set(default.state_dict()) == {"conv.0.weight", "conv.0.bias", "conv.2.weight", "conv.2.bias"}
    custom = HistoryExtractor(space, keys=["obs", "goals"], hidden_size=8, current_extractor_class=Doubled,
                              current_extractor_kwargs=dict(scale=3.0))
    assert isinstance(custom.current, Doubled) and custom.current.keys == ["obs", "goals"]
    assert custom.features_dim == 2 + 8
    obs = {key: th.as_tensor(np.stack([sub.sample()]).astype(np.float32)) for key, sub in space.spaces.items()}
    features = custom(obs)
    expected = 3.0 * th.stack([obs["obs"].sum(), obs["goals"].sum()])
    assert th.allclose(features[0, :2], expected)


def test_extractor_bad_input():
    space = maze_with_history().observation_space
    with pytest.raises(ValueError, match="history_key 'window' must name a"):
        HistoryExtractor(space, history_key="window")
    with pytest.raises(ValueError, match="encoder must be one of"):
        HistoryExtractor(space, encoder="lstm")
    with pytest.raises(ValueError, match="keys must not include the history key"):
        HistoryExtractor(space, keys=["obs", "history"])
    with pytest.raises(ValueError, match="hidden_size must be an int >= 1"):
        HistoryExtractor(space, hidden_size=0)


# ------------------------------------------------------------------------------- imitation's BC and DAgger
def _history_bc(venv, seed: int = 0):
    from imitation.algorithms import bc
    from stable_baselines3.common.policies import ActorCriticPolicy

    th.manual_seed(seed)
    policy = ActorCriticPolicy(venv.observation_space, venv.action_space, lr_schedule=lambda _: 1e-3, net_arch=[32],
                               features_extractor_class=HistoryExtractor,
                               features_extractor_kwargs=dict(keys=["obs", "goals"], hidden_size=16))
    return bc.BC(observation_space=venv.observation_space, action_space=venv.action_space, policy=policy,
                 rng=np.random.default_rng(seed), batch_size=32, device="cpu")


@pytest.mark.dagger
def test_short_dagger_round_with_the_history_learner_trains_its_encoder(tmp_path):
    from sb3_hir.dagger import SimpleDAggerTrainer, load_round_dir
    from sb3_hir.envs import ShortestPathExpert

    venv = make_vec_env(lambda: maze_with_history(length=4, time_limit=30), n_envs=2, seed=0, vec_env_cls=DummyVecEnv)
    bc_trainer = _history_bc(venv)
    extractor = bc_trainer.policy.features_extractor
    assert isinstance(extractor, HistoryExtractor) and extractor.encoder == "conv"  # the default
    encoder_params = [p for name, p in extractor.named_parameters() if not name.startswith("current")]
    encoder_before = [p.detach().clone() for p in encoder_params]
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=ShortestPathExpert(venv),
                                  rng=np.random.default_rng(0), bc_trainer=bc_trainer)
    trainer.train(200, rollout_round_min_episodes=2, rollout_round_min_timesteps=100,
                  bc_train_kwargs=dict(n_epochs=2, progress_bar=False, log_rollouts_n_episodes=0))
    assert trainer.round_num >= 1
    trajs = load_round_dir(tmp_path / "demos" / "round-000")
    assert trajs and all(t.obs.get("history").shape == (len(t) + 1, 4, 13) for t in trajs)
    for t in trajs:  # the stored windows are the ones the env produced: valid rows grow by one per step
        valid = t.obs.get("history")[:, :, -1].sum(axis=1)
        np.testing.assert_array_equal(valid, np.minimum(np.arange(1, len(t) + 2), 4))
    assert any(not th.equal(b, p) for b, p in zip(encoder_before, encoder_params, strict=True))
    action, _ = trainer.policy.predict(venv.reset(), deterministic=True)
    assert action.shape == (2,)


@pytest.mark.dagger
def test_bc_with_the_history_extractor_fits_expert_labels():
    """imitation's BC, unchanged, lowers the loss of a history policy on expert MazeRunner episodes."""
    from imitation.data import rollout

    from sb3_hir.envs import ShortestPathExpert

    venv = make_vec_env(lambda: maze_with_history(length=6, time_limit=40), n_envs=2, seed=1, vec_env_cls=DummyVecEnv)
    expert = ShortestPathExpert(venv)
    trajs = rollout.generate_trajectories(expert, venv, rollout.make_min_episodes(6), rng=np.random.default_rng(1))
    transitions = rollout.flatten_trajectories(trajs)
    bc_trainer = _history_bc(venv, seed=1)
    bc_trainer.set_demonstrations(transitions)
    obs = {k: th.as_tensor(v) for k, v in transitions.obs.items()}
    acts = th.as_tensor(np.array(transitions.acts))
    with th.no_grad():
        before = -bc_trainer.policy.evaluate_actions(obs, acts)[1].mean()
    bc_trainer.train(n_epochs=60, progress_bar=False, log_rollouts_n_episodes=0)
    with th.no_grad():
        after = -bc_trainer.policy.evaluate_actions(obs, acts)[1].mean()
    assert after < before - 0.2


class CodedObs(gym.ObservationWrapper):
    """MazeRunner's observation as small integer codes in uint8, as BabyAI's grid of object codes is."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = gym.spaces.Dict(
            {**env.observation_space.spaces, "obs": gym.spaces.Box(0, 10, (7,), np.uint8)})

    def observation(self, obs):
        return {**obs, "obs": np.rint(np.asarray(obs["obs"]) * 10).astype(np.uint8)}


def coded_maze(**kwargs) -> gym.Env:
    return CodedObs(MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=7, **kwargs))


def test_a_window_of_small_integers_is_uint8_with_the_float_window_s_values_and_a_quarter_of_the_replay_memory():
    from stable_baselines3.common.buffers import DictReplayBuffer

    small, wide = HistoryWrapper(coded_maze(), length=4), HistoryWrapper(coded_maze(), length=4, dtype="float32")
    assert small.observation_space["history"].dtype == np.uint8 and small.dtype == np.uint8
    assert wide.observation_space["history"].dtype == np.float32
    a, _ = small.reset(seed=3)
    b, _ = wide.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(30):  # across several episodes (time limit 7): padding rows and resets included
        assert a["history"].dtype == np.uint8 and small.observation_space.contains(a)
        np.testing.assert_array_equal(a["history"].astype(np.float32), b["history"])
        action = int(rng.integers(5))
        a, _, terminated, truncated, _ = small.step(action)
        b, *_ = wide.step(action)
        if terminated or truncated:
            a, _ = small.reset()
            b, _ = wide.reset()
    buffers = [DictReplayBuffer(64, env.observation_space, env.action_space) for env in (small, wide)]
    assert buffers[0].observations["history"].nbytes * 4 == buffers[1].observations["history"].nbytes
    # the policy sees the same floats: SB3's preprocessing casts the uint8 window, and equal seeds give equal weights
    qs = []
    for env, obs in ((small, a), (wide, b)):
        model = DQN("MultiInputPolicy", env, policy_kwargs=EXTRACTOR, buffer_size=64, seed=0, device="cpu")
        tensor, _ = model.policy.obs_to_tensor({k: v[None] for k, v in obs.items()})
        qs.append(model.policy.q_net(tensor).detach().numpy())
    np.testing.assert_allclose(qs[0], qs[1], rtol=0, atol=0)


def test_a_window_that_needs_floats_stays_float32_and_uint8_is_refused_where_it_would_round():
    assert HistoryWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2)).dtype == np.float32  # obs in [0, 1], floats
    assert HistoryWrapper(coded_maze(continuous=True)).dtype == np.float32  # Box actions are stored as they are
    assert HistoryWrapper(coded_maze(continuous=True), include_action=False).dtype == np.uint8
    with pytest.raises(ValueError, match="dtype uint8 holds integers in \\[0, 255\\] only"):
        HistoryWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2), dtype="uint8")
    for bad in ("int64", np.float64, "small", None):
        with pytest.raises(ValueError, match="dtype must be 'auto', 'uint8' or 'float32'"):
            HistoryWrapper(coded_maze(), dtype=bad)


def test_train_s_memory_bound_counts_the_window_in_its_own_dtype():
    from sb3_hir.cli.memory import _space_bytes, observation_bytes

    for env in (coded_maze(), MazeRunnerEnv(maze_dim=7, num_goals=2)):
        assert observation_bytes(env, 16) == _space_bytes(HistoryWrapper(env, length=16).observation_space)
