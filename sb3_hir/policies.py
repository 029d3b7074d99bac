"""Per-action heads for unchanged DQN, QR-DQN and actor-critic policies: one network scores every action from its row.

SB3's ``QNetwork`` has one output per action index, so output ``i`` must mean the same move in every episode. When
the controls change per episode (MazeRunner's ``randomized_actions=True``) or an action's meaning comes from
features rather than its index, that head has to relearn the mapping from context in every state, and it learns
slowly even when the mapping is given to it (``benchmarks/results/controls_ablation.txt``). The heads here compute

    Q(s, a) = MLP([features(s), x_a])

with ``x_a`` row ``a`` of an observation key of shape ``(n_actions, d)`` (for example the table of
:class:`~sb3_hir.action_features.ActionFeaturesWrapper`), one MLP shared by all actions. Permuting the rows of that
key permutes the Q values the same way, so an action is judged by what it is known to do, not by its number::

    from stable_baselines3 import DQN
    from sb3_hir.policies import PerActionDQNPolicy

    model = DQN(PerActionDQNPolicy, env, policy_kwargs=dict(action_key="action_features"))

The features extractor sees every other key (``KeySelectExtractor`` over all keys but ``action_key`` by default;
any extractor with ``keys`` works, e.g. :class:`~sb3_hir.extractors.HistoryExtractor`), never ``action_key``
itself, which would break the equivariance. :class:`PerActionQRDQNPolicy` does the same for sb3-contrib's QR-DQN,
each action's row giving its ``n_quantiles`` quantiles, and :class:`PerActionActorCriticPolicy` scores the logits
of an ``ActorCriticPolicy`` (imitation's BC, DAgger, PPO) the same way. All save and load with the model like SB3's
own policies.
"""

from __future__ import annotations

from functools import partial
from typing import Any, cast

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.qrdqn.policies import QRDQNPolicy, QuantileNetwork
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.preprocessing import preprocess_obs
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, create_mlp
from stable_baselines3.common.type_aliases import PyTorchObs
from stable_baselines3.dqn.policies import DQNPolicy, QNetwork
from torch import nn

from sb3_hir.extractors import KeySelectExtractor

__all__ = [
    "ACTION_KEY",
    "PerActionActorCriticPolicy",
    "PerActionDQNPolicy",
    "PerActionQNetwork",
    "PerActionQRDQNPolicy",
    "PerActionQuantileNetwork",
]

#: The observation key the heads read each action's row from, unless ``action_key=`` says otherwise.
ACTION_KEY = "action_features"


def check_action_key(observation_space: spaces.Space, action_space: spaces.Space, action_key: str) -> int:
    """Width ``d`` of ``action_key``'s rows, after checking that it is an ``(n_actions, d)`` Box of a Dict space."""
    if not isinstance(action_space, spaces.Discrete):
        raise ValueError(f"a per-action Q head needs Discrete actions; got action_space {action_space!r}")
    if not isinstance(observation_space, spaces.Dict):
        raise ValueError(f"a per-action Q head reads action_key {action_key!r} from a Dict observation space; got "
                         f"{type(observation_space).__name__}")
    sub = observation_space.spaces.get(action_key) if isinstance(action_key, str) else None
    n = int(action_space.n)
    if not isinstance(sub, spaces.Box) or len(sub.shape) != 2 or sub.shape[0] != n:
        raise ValueError(
            f"action_key must name a Box of shape ({n}, d) in the observation space (one row per action, as "
            f"ActionFeaturesWrapper adds); got {action_key!r}, which is {sub!r}; keys present: "
            f"{list(observation_space.spaces)}"
        )
    return int(sub.shape[1])


class _SavesActionKey:
    """``action_key`` among the constructor parameters SB3 saves, so a loaded model reads the same key."""

    action_key: str

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "action_key": self.action_key}  # type: ignore[misc]


class _ReadsActionKey(_SavesActionKey):
    """What both per-action policies add to their SB3 policy: ``action_key``, checked and kept, and an extractor
    that never reads it. Every other argument is passed to the SB3 policy as given."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Any, *,
                 action_key: str = ACTION_KEY, features_extractor_class: type[BaseFeaturesExtractor] | None = None,
                 features_extractor_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        check_action_key(observation_space, action_space, action_key)
        self.action_key = action_key  # before the policy's __init__, which builds the networks
        extractor, extractor_kwargs = _extractor_kwargs(observation_space, action_key,  # type: ignore[arg-type]
                                                        features_extractor_class, features_extractor_kwargs)
        super().__init__(observation_space, action_space, lr_schedule,  # type: ignore[call-arg]
                         features_extractor_class=extractor, features_extractor_kwargs=extractor_kwargs, **kwargs)


def _extractor_kwargs(observation_space: spaces.Dict, action_key: str,
                      features_extractor_class: type[BaseFeaturesExtractor] | None,
                      features_extractor_kwargs: dict[str, Any] | None) -> tuple[type[BaseFeaturesExtractor],
                                                                                  dict[str, Any]]:
    """The extractor sees every key but ``action_key`` by default, and is refused if told to read it."""
    kwargs = dict(features_extractor_kwargs or {})
    if features_extractor_class is None:
        features_extractor_class = KeySelectExtractor
        kwargs.setdefault("keys", [k for k in observation_space.spaces if k != action_key])
    keys = kwargs.get("keys")
    if keys is not None and action_key in ([keys] if isinstance(keys, str) else list(keys)):
        raise ValueError(f"features_extractor_kwargs keys must not include action_key {action_key!r}: the head "
                         "reads each action's row itself, and a state encoding of the whole table would break the "
                         "permutation equivariance")
    return features_extractor_class, kwargs


class _PerActionHead(nn.Module):
    """One MLP over ``[state features, x_a]`` for every action ``a``: ``(batch, n_actions, n_outputs)``.

    The first layer is applied as its two halves, the state's once per state and the rows' once per action, which is
    the same function at a fraction of the cost of concatenating the state to every row.
    """

    def __init__(self, features_dim: int, action_dim: int, n_outputs: int, net_arch: list[int],
                 activation_fn: type[nn.Module]) -> None:
        super().__init__()
        self.features_dim = features_dim
        self.mlp = nn.Sequential(*create_mlp(features_dim + action_dim, n_outputs, net_arch, activation_fn))

    def forward(self, features: th.Tensor, rows: th.Tensor) -> th.Tensor:
        first, rest = self.mlp[0], self.mlp[1:]
        assert isinstance(first, nn.Linear)  # create_mlp's first layer (net_arch or not)
        weight = first.weight
        state = nn.functional.linear(features, weight[:, : self.features_dim], first.bias)
        hidden = state.unsqueeze(1) + nn.functional.linear(rows, weight[:, self.features_dim :])
        return rest(hidden)


def _rows(policy: BasePolicy, obs: PyTorchObs, action_key: str) -> th.Tensor:
    try:
        rows = obs[action_key]  # type: ignore[index]
    except KeyError:
        raise ValueError(f"the observation has no {action_key!r} key: this policy scores actions from that key's "
                         "rows, so wrap the env as it was wrapped for training") from None
    space = cast(spaces.Dict, policy.observation_space)[action_key]
    return cast(th.Tensor, preprocess_obs(rows, space, policy.normalize_images)).float()  # a Box key: one tensor


class PerActionQNetwork(_SavesActionKey, QNetwork):
    """SB3's ``QNetwork`` with the per-action head: ``Q(s, a) = MLP([features(s), obs[action_key][a]])``.

    :param action_key: the ``(n_actions, d)`` observation key holding each action's row.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Discrete,
                 features_extractor: BaseFeaturesExtractor, features_dim: int, net_arch: list[int] | None = None,
                 activation_fn: type[nn.Module] = nn.ReLU, normalize_images: bool = True,
                 action_key: str = ACTION_KEY) -> None:
        width = check_action_key(observation_space, action_space, action_key)
        super().__init__(observation_space, action_space, features_extractor, features_dim, net_arch, activation_fn,
                         normalize_images)
        self.action_key = action_key
        self.q_net = _PerActionHead(features_dim, width, 1, self.net_arch, activation_fn)  # type: ignore[assignment]

    def forward(self, obs: PyTorchObs) -> th.Tensor:
        features = self.extract_features(obs, self.features_extractor)
        return self.q_net(features, _rows(self, obs, self.action_key)).squeeze(2)


class PerActionQuantileNetwork(_SavesActionKey, QuantileNetwork):
    """sb3-contrib's ``QuantileNetwork`` with the per-action head: each action's row gives its quantiles.

    :param action_key: the ``(n_actions, d)`` observation key holding each action's row.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Discrete,
                 features_extractor: BaseFeaturesExtractor, features_dim: int, n_quantiles: int = 200,
                 net_arch: list[int] | None = None, activation_fn: type[nn.Module] = nn.ReLU,
                 normalize_images: bool = True, action_key: str = ACTION_KEY) -> None:
        width = check_action_key(observation_space, action_space, action_key)
        super().__init__(observation_space, action_space, features_extractor, features_dim, n_quantiles, net_arch,
                         activation_fn, normalize_images)
        self.action_key = action_key
        self.quantile_net = _PerActionHead(features_dim, width, n_quantiles, self.net_arch,  # type: ignore[assignment]
                                           activation_fn)

    def forward(self, obs: PyTorchObs) -> th.Tensor:
        features = self.extract_features(obs, self.features_extractor)
        return self.quantile_net(features, _rows(self, obs, self.action_key)).transpose(1, 2)


class PerActionDQNPolicy(_ReadsActionKey, DQNPolicy):
    """DQN's policy with :class:`PerActionQNetwork` as its Q and target networks.

    :param action_key: (keyword) the ``(n_actions, d)`` observation key holding each action's row.
    :param features_extractor_class: (keyword) encodes the other keys; ``KeySelectExtractor`` over all keys but
        ``action_key`` when None.

    The other parameters are ``DQNPolicy``'s, by keyword.
    """

    def make_q_net(self) -> PerActionQNetwork:
        net_args = self._update_features_extractor(self.net_args, features_extractor=None)
        return PerActionQNetwork(**net_args, action_key=self.action_key).to(self.device)


class PerActionQRDQNPolicy(_ReadsActionKey, QRDQNPolicy):
    """QR-DQN's policy with :class:`PerActionQuantileNetwork` as its quantile and target networks: the parameters of
    :class:`PerActionDQNPolicy`, with ``QRDQNPolicy``'s (``n_quantiles`` among them) by keyword."""

    def make_quantile_net(self) -> PerActionQuantileNetwork:
        net_args = self._update_features_extractor(self.net_args, features_extractor=None)
        return PerActionQuantileNetwork(**net_args, action_key=self.action_key).to(self.device)


class PerActionActorCriticPolicy(_ReadsActionKey, ActorCriticPolicy):
    """SB3's ``ActorCriticPolicy`` with a per-action actor head: ``logit(s, a) = MLP([latent_pi(s), x_a])``.

    The same idea for policies trained by imitation's ``bc.BC`` (and so by DAgger) or PPO with ``Discrete`` actions:
    one network scores every action from its row, so permuting the rows permutes the action probabilities. The
    critic is SB3's. ``head_arch`` is the hidden layers of the per-action MLP (at least one: a linear head would add
    each row's score to the state's, with no interaction between them).

    :param head_arch: (keyword) hidden layer sizes of the per-action MLP.
    :param action_key: (keyword) the ``(n_actions, d)`` observation key holding each action's row.

    The other parameters are ``ActorCriticPolicy``'s, by keyword.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Any, *,
                 head_arch: list[int] | tuple[int, ...] = (64,), **kwargs: Any) -> None:
        self.head_arch = [int(n) for n in head_arch]
        if not self.head_arch or min(self.head_arch) < 1:
            raise ValueError(f"head_arch must be one or more hidden layer sizes >= 1; got {head_arch!r}")
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        width = int(self.observation_space[self.action_key].shape[1])  # type: ignore[index]
        head = _PerActionHead(self.mlp_extractor.latent_dim_pi, width, 1, self.head_arch, self.activation_fn)
        if self.ortho_init:  # as SB3 initializes its own: sqrt(2) inside, 0.01 on the output layer
            head.apply(partial(self.init_weights, gain=np.sqrt(2)))
            self.init_weights(head.mlp[-1], gain=0.01)
        self.action_net = head
        optimizer_class: Any = self.optimizer_class  # any torch optimizer; SB3 types it as the base class
        self.optimizer = optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _latents(self, obs: PyTorchObs) -> tuple[th.Tensor, th.Tensor]:
        features = self.extract_features(obs)
        if self.share_features_extractor:
            return self.mlp_extractor(features)
        pi_features, vf_features = features
        return self.mlp_extractor.forward_actor(pi_features), self.mlp_extractor.forward_critic(vf_features)

    def _distribution(self, latent_pi: th.Tensor, obs: PyTorchObs) -> Distribution:
        logits = self.action_net(latent_pi, _rows(self, obs, self.action_key)).squeeze(2)
        return self.action_dist.proba_distribution(action_logits=logits)

    def forward(self, obs: th.Tensor, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        latent_pi, latent_vf = self._latents(obs)
        distribution = self._distribution(latent_pi, obs)
        actions = distribution.get_actions(deterministic=deterministic)
        log_prob = distribution.log_prob(actions)
        return actions.reshape((-1, *(self.action_space.shape or ()))), self.value_net(latent_vf), log_prob

    def evaluate_actions(self, obs: PyTorchObs, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        latent_pi, latent_vf = self._latents(obs)
        distribution = self._distribution(latent_pi, obs)
        return self.value_net(latent_vf), distribution.log_prob(actions), distribution.entropy()

    def get_distribution(self, obs: PyTorchObs) -> Distribution:
        features = BasePolicy.extract_features(self, obs, self.pi_features_extractor)
        return self._distribution(self.mlp_extractor.forward_actor(features), obs)

    def _get_action_dist_from_latent(self, latent_pi: th.Tensor) -> Distribution:
        raise TypeError("PerActionActorCriticPolicy scores actions from the observation's rows: call forward, "
                        "evaluate_actions or get_distribution with the observation")

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "head_arch": self.head_arch}
