"""The per-action Q heads: permutation-equivariant, trained by unchanged DQN and QR-DQN, saved and loaded."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib import QRDQN
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env

from sb3_hir import ActionFeaturesWrapper, MazeRunnerEnv, PerActionDQNPolicy, PerActionQRDQNPolicy
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
from sb3_hir.history import HistoryWrapper

SPACE = spaces.Dict({
    "obs": spaces.Box(-1.0, 1.0, (4,), np.float32),
    "action_features": spaces.Box(0.0, 1.0, (5, 3), np.float32),
})
ACTIONS = spaces.Discrete(5)


def batch(space: spaces.Dict, n: int, seed: int = 0) -> dict[str, th.Tensor]:
    space.seed(seed)
    samples = [space.sample() for _ in range(n)]
    return {k: th.as_tensor(np.stack([s[k] for s in samples])) for k in space.spaces}


@pytest.mark.parametrize("policy_class", [PerActionDQNPolicy, PerActionQRDQNPolicy])
def test_permuting_the_rows_permutes_the_q_values(policy_class):
    th.manual_seed(0)
    kwargs = dict(n_quantiles=7) if policy_class is PerActionQRDQNPolicy else {}
    policy = policy_class(SPACE, ACTIONS, lambda _: 1e-3, net_arch=[16], **kwargs)
    net = policy.q_net if policy_class is PerActionDQNPolicy else policy.quantile_net
    obs = batch(SPACE, 8)
    permutation = th.as_tensor(np.random.default_rng(0).permutation(5))
    permuted = {**obs, "action_features": obs["action_features"][:, permutation]}
    with th.no_grad():
        values, values_permuted = net(obs), net(permuted)
    if policy_class is PerActionQRDQNPolicy:
        assert values.shape == (8, 7, 5)
        th.testing.assert_close(values_permuted, values[:, :, permutation])
    else:
        assert values.shape == (8, 5)
        th.testing.assert_close(values_permuted, values[:, permutation])
    # equal rows give equal values: the index itself carries nothing
    same = {**obs, "action_features": obs["action_features"][:, :1].expand(-1, 5, -1)}
    with th.no_grad():
        q = net(same)
    th.testing.assert_close(q, q[..., :1].expand_as(q))


def test_the_extractor_sees_every_key_but_the_action_rows():
    policy = PerActionDQNPolicy(SPACE, ACTIONS, lambda _: 1e-3)
    extractor = policy.q_net.features_extractor
    assert isinstance(extractor, KeySelectExtractor) and extractor.keys == ("obs",)
    obs = batch(SPACE, 4)
    changed = {**obs, "action_features": obs["action_features"] + 1.0}
    with th.no_grad():
        th.testing.assert_close(extractor(obs), extractor(changed))
        assert not th.equal(policy.q_net(obs), policy.q_net(changed))  # the head reads them


def maze_venv(n_envs: int = 2):
    def env_fn():
        env = MazeRunnerEnv(maze_dim=7, num_goals=1, time_limit=20, randomized_actions=True)
        return HistoryWrapper(ActionFeaturesWrapper(env, "env"), length=4)

    return make_vec_env(env_fn, n_envs=n_envs, seed=0)


@pytest.mark.parametrize(("algo", "policy_class"), [(DQN, PerActionDQNPolicy), (QRDQN, PerActionQRDQNPolicy)])
def test_unchanged_dqn_and_qrdqn_train_save_and_load_the_head(tmp_path, algo, policy_class):
    venv = maze_venv()
    extra = dict(policy_kwargs=dict(n_quantiles=5)) if algo is QRDQN else dict(policy_kwargs={})
    extra["policy_kwargs"].update(net_arch=[32], features_extractor_class=HistoryExtractor,
                                  features_extractor_kwargs=dict(keys=["obs", "goals"], hidden_size=16))
    model = algo(policy_class, venv, buffer_size=2_000, learning_starts=100, batch_size=32,
                 replay_buffer_class=HindsightInstructionReplayBuffer,
                 replay_buffer_kwargs=dict(hindsight_goals="some"), seed=0, **extra)
    net = model.policy.q_net if algo is DQN else model.policy.quantile_net
    before = [p.detach().clone() for p in net.parameters()]
    model.learn(400)
    assert any(not th.equal(a, b) for a, b in zip(before, net.parameters(), strict=True))  # gradients reached it
    model.save(tmp_path / "model.zip")
    loaded = algo.load(tmp_path / "model.zip", device="cpu")
    assert isinstance(loaded.policy, policy_class) and loaded.policy.action_key == "action_features"
    obs = venv.reset()
    tensors, _ = model.policy.obs_to_tensor(obs)
    loaded_net = loaded.policy.q_net if algo is DQN else loaded.policy.quantile_net
    with th.no_grad():
        th.testing.assert_close(loaded_net(tensors), net(tensors))
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match=r"action_key must name a Box of shape \(5, d\).*'rows'"):
        PerActionDQNPolicy(SPACE, ACTIONS, lambda _: 1e-3, action_key="rows")
    wrong = spaces.Dict({**SPACE.spaces, "action_features": spaces.Box(0.0, 1.0, (4, 3), np.float32)})
    with pytest.raises(ValueError, match=r"action_key must name a Box of shape \(5, d\)"):
        PerActionQRDQNPolicy(wrong, ACTIONS, lambda _: 1e-3)
    with pytest.raises(ValueError, match="a per-action Q head needs Discrete actions"):
        PerActionDQNPolicy(SPACE, spaces.Box(-1.0, 1.0, (2,)), lambda _: 1e-3)
    with pytest.raises(ValueError, match="reads action_key 'action_features' from a Dict observation space"):
        PerActionDQNPolicy(spaces.Box(-1.0, 1.0, (4,)), ACTIONS, lambda _: 1e-3)
    with pytest.raises(ValueError, match="keys must not include action_key 'action_features'"):
        PerActionDQNPolicy(SPACE, ACTIONS, lambda _: 1e-3, features_extractor_class=KeySelectExtractor,
                           features_extractor_kwargs=dict(keys=["obs", "action_features"]))
    policy = PerActionDQNPolicy(SPACE, ACTIONS, lambda _: 1e-3)
    with pytest.raises(ValueError, match="the observation has no 'action_features' key"):
        policy.q_net({"obs": th.zeros(1, 4)})


def test_the_head_is_one_mlp_over_the_state_features_and_each_row():
    """Q(s, a) = MLP([features(s), x_a]), with the MLP's own layers (the split first layer is the same function)."""
    th.manual_seed(0)
    policy = PerActionDQNPolicy(SPACE, ACTIONS, lambda _: 1e-3, net_arch=[16, 8])
    net = policy.q_net
    obs = batch(SPACE, 4)
    with th.no_grad():
        features = net.extract_features(obs, net.features_extractor)
        expected = th.stack([net.q_net.mlp(th.cat([features, obs["action_features"][:, a]], dim=1))[:, 0]
                             for a in range(5)], dim=1)
        th.testing.assert_close(net(obs), expected)


@pytest.mark.dagger
def test_the_actor_critic_head_is_permutation_equivariant_and_trains_with_bc(tmp_path):
    from imitation.algorithms import bc
    from imitation.data import rollout

    from sb3_hir import PerActionActorCriticPolicy

    th.manual_seed(0)
    policy = PerActionActorCriticPolicy(SPACE, ACTIONS, lambda _: 1e-3, net_arch=[16], head_arch=[8])
    obs = batch(SPACE, 6)
    permutation = th.as_tensor(np.random.default_rng(1).permutation(5))
    permuted = {**obs, "action_features": obs["action_features"][:, permutation]}
    with th.no_grad():
        probs = policy.get_distribution(obs).distribution.probs
        probs_permuted = policy.get_distribution(permuted).distribution.probs
        values, _, _ = policy.evaluate_actions(obs, th.zeros(6, dtype=th.long))
        values_permuted, _, _ = policy.evaluate_actions(permuted, th.zeros(6, dtype=th.long))
    th.testing.assert_close(probs_permuted, probs[:, permutation])
    th.testing.assert_close(values_permuted, values)  # the critic never reads the rows

    venv = maze_venv()
    learner = PerActionActorCriticPolicy(venv.observation_space, venv.action_space, lambda _: 1e-3,
                                         features_extractor_class=HistoryExtractor,
                                         features_extractor_kwargs=dict(keys=["obs", "goals"], hidden_size=16))
    rng = np.random.default_rng(0)
    expert_rollouts = rollout.rollout(None, venv, rollout.make_min_episodes(4), rng=rng, unwrap=False)
    trainer = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space, rng=rng,
                    demonstrations=rollout.flatten_trajectories(expert_rollouts), policy=learner, batch_size=16)
    head = [p.detach().clone() for p in learner.action_net.parameters()]
    trainer.train(n_batches=4)
    assert any(not th.equal(a, b) for a, b in zip(head, learner.action_net.parameters(), strict=True))
    learner.save(tmp_path / "policy.pt")
    loaded = PerActionActorCriticPolicy.load(tmp_path / "policy.pt")
    o = venv.reset()
    np.testing.assert_array_equal(loaded.predict(o, deterministic=True)[0], learner.predict(o, deterministic=True)[0])
    with pytest.raises(ValueError, match="head_arch must be one or more hidden layer sizes"):
        PerActionActorCriticPolicy(SPACE, ACTIONS, lambda _: 1e-3, head_arch=[])
