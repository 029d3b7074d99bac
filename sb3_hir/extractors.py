"""A features extractor that lets the policy see only some keys of a Dict observation.

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
        replay_buffer_kwargs=dict(strategy="some"),
        policy_kwargs=dict(
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
        ),
    )

SAC, TD3, DDPG and TQC build their critics with the same extractor class and kwargs, so the same
``policy_kwargs`` work there.
"""

from __future__ import annotations

from collections.abc import Sequence

from gymnasium import spaces
from stable_baselines3.common.torch_layers import CombinedExtractor

__all__ = ["KeySelectExtractor"]


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
        selected = [keys] if isinstance(keys, str) else list(keys)
        available = list(observation_space.spaces)
        if not selected:
            raise ValueError(f"keys must name at least one observation key; available keys: {available}")
        bad_type = [key for key in selected if not isinstance(key, str)]
        if bad_type:
            raise ValueError(f"keys must be str observation keys; got {bad_type!r}")
        if len(set(selected)) != len(selected):
            raise ValueError(f"keys must not repeat a key; got {selected}")
        unknown = [key for key in selected if key not in observation_space.spaces]
        if unknown:
            raise ValueError(f"keys {unknown} are not in the observation space; available keys: {available}")
        self.keys: tuple[str, ...] = tuple(selected)
        sub_space = spaces.Dict({key: observation_space.spaces[key] for key in self.keys})
        super().__init__(sub_space, cnn_output_dim=cnn_output_dim, normalized_image=normalized_image)
