"""Features extractors: one that lets the policy see only some keys of a Dict observation, one that adds memory.

Hindsight instruction relabeling needs the "achieved" value in every stored observation, but a policy
that also reads it is conditioned on a quantity that only exists for relabeling (for MazeRunner it
duplicates the agent's cell). :class:`KeySelectExtractor` builds SB3's
:class:`~stable_baselines3.common.torch_layers.CombinedExtractor` over the selected keys only and ignores
the others, so the replay buffer keeps "achieved" while the networks see the observation and the
instruction. The recommended setup for every off-policy algorithm::

    from stable_baselines3 import DQN
    from sb3_hir.buffers import HindsightInstructionReplayBuffer
    from sb3_hir.extractors import KeySelectExtractor

    model = DQN(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HindsightInstructionReplayBuffer,
        replay_buffer_kwargs=dict(hindsight_goals="some"),
        policy_kwargs=dict(
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
        ),
    )

SAC, TD3, DDPG and TQC build their critics with the same extractor class and kwargs, so the same
``policy_kwargs`` work there.

:class:`HistoryExtractor` does the same and also encodes the window a :class:`~sb3_hir.history.HistoryWrapper`
adds, which gives DQN, SAC, TQC and imitation's BC a recurrent learner without changing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch as th
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor
from torch import nn

from sb3_hir._validate import check_choice, check_int, check_keys

__all__ = ["HistoryExtractor", "KeySelectExtractor"]

#: ``encoder=`` names of :class:`HistoryExtractor`.
HISTORY_ENCODERS = ("conv", "gru")


class KeySelectExtractor(CombinedExtractor):
    """SB3's ``CombinedExtractor`` restricted to ``keys`` of a Dict observation space.

    The other keys are still stored and passed around by SB3 (the replay buffer needs them for relabeling) but
    never reach the network. Use it through ``policy_kwargs``::

        policy_kwargs=dict(
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
        )

    :param observation_space: the full Dict observation space of the environment.
    :param keys: the keys the policy sees (a single key may be given as a str).
    :param cnn_output_dim: features per image key, as in ``CombinedExtractor``.
    :param normalized_image: as in ``CombinedExtractor``.
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        keys: Sequence[str] = ("obs", "goals"),
        cnn_output_dim: int = 256,
        normalized_image: bool = False,
    ) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise ValueError(
                f"observation_space must be a gymnasium.spaces.Dict; got {type(observation_space).__name__}"
            )
        selected = check_keys(keys, observation_space.spaces)
        self.keys: tuple[str, ...] = tuple(selected)
        sub_space = spaces.Dict({key: observation_space.spaces[key] for key in self.keys})
        super().__init__(sub_space, cnn_output_dim=cnn_output_dim, normalized_image=normalized_image)


class HistoryExtractor(BaseFeaturesExtractor):
    """Encode a :class:`~sb3_hir.history.HistoryWrapper` window and concatenate it with the selected current keys.

    The current keys go through :class:`KeySelectExtractor` (flattened, as SB3's ``CombinedExtractor`` does), so
    the policy conditions on the instruction directly and on the past through the encoding. Use it through
    ``policy_kwargs`` in DQN, QR-DQN, SAC, TD3, TQC or an ``ActorCriticPolicy`` (imitation's BC, PPO)::

        policy_kwargs=dict(
            features_extractor_class=HistoryExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"], history_key="history"),
        )

    ``"conv"`` (the default) is a two-layer 1-D convolution over time (kernel 3) with max-pooling over the valid
    steps; ``"gru"`` runs a GRU over the window, oldest row first, and keeps its last hidden state (padding rows
    before a reset are zeros with a valid flag of 0, so they leave the same state in every episode). On MazeRunner
    9x9, k = 3, both doubled DQN + HIR's goals reached at 60k steps, equal within the spread, and the convolution
    trained at 0.8x the GRU's cost (``benchmarks/bench_history.py``, ``bench_history_cost.py``).

    :param observation_space: the full Dict observation space, with the window under ``history_key``.
    :param keys: current keys the policy sees besides the window (e.g. ``["obs", "goals"]``).
    :param history_key: the window's key.
    :param encoder: ``"conv"`` or ``"gru"``.
    :param hidden_size: size of the window's encoding.
    :param current_extractor_class: the extractor of the current ``keys``, built as
        ``current_extractor_class(observation_space, keys=keys, **current_extractor_kwargs)``; by default
        :class:`KeySelectExtractor` (flattened). Why: an env whose current observation has structure (BabyAI's
        grid and instruction: ``sb3_hir_minigrid.BabyAIFiLMExtractor``) keeps that encoder under a window.
    :param current_extractor_kwargs: its further arguments.
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        keys: Sequence[str] = ("obs", "goals"),
        history_key: str = "history",
        encoder: str = "conv",
        hidden_size: int = 64,
        current_extractor_class: type[BaseFeaturesExtractor] = KeySelectExtractor,
        current_extractor_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise ValueError(
                f"observation_space must be a gymnasium.spaces.Dict; got {type(observation_space).__name__}"
            )
        window = observation_space.spaces.get(history_key)
        if not isinstance(window, spaces.Box) or len(window.shape) != 2:
            raise ValueError(
                f"history_key {history_key!r} must name a (length, width) Box in the observation space, as "
                f"HistoryWrapper adds; keys present: {list(observation_space.spaces)}"
            )
        selected = [keys] if isinstance(keys, str) else list(keys)
        if history_key in selected:
            raise ValueError(f"keys must not include the history key {history_key!r}; it is encoded separately")
        check_choice(encoder, "encoder", HISTORY_ENCODERS)
        check_int(hidden_size, "hidden_size", 1)
        current = current_extractor_class(observation_space, keys=selected,  # type: ignore[call-arg]
                                          **(current_extractor_kwargs or {}))
        super().__init__(observation_space, features_dim=current.features_dim + hidden_size)
        self.current = current
        self.history_key = history_key
        self.encoder = encoder
        width = int(window.shape[1])
        if encoder == "gru":
            self.gru = nn.GRU(width, hidden_size, batch_first=True)
        else:
            self.conv = nn.Sequential(
                nn.Conv1d(width, hidden_size, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.Conv1d(hidden_size, hidden_size, kernel_size=3, padding=1),
                nn.ReLU(),
            )

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        try:
            window = observations[self.history_key].float()
        except KeyError:
            raise ValueError(
                f"the observation has no {self.history_key!r} key: this policy was trained with a history window, so "
                "wrap the env in sb3_hir.history.HistoryWrapper (with the training length) to act with it"
            ) from None
        if self.encoder == "gru":
            _, last = self.gru(window)
            encoded = last[-1]
        else:
            hidden = self.conv(window.transpose(1, 2))  # (batch, hidden, length)
            valid = window[:, :, -1:].transpose(1, 2) > 0.5
            encoded = hidden.masked_fill(~valid, 0.0).amax(dim=2)  # ReLU outputs are >= 0, so 0 is neutral
        return th.cat([self.current(observations), encoded], dim=1)
