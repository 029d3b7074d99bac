"""rl-zoo3 hyperparameters: DQN on MazeRunner with the HIR replay buffer, for rl-zoo3 2.3 unchanged.

rl-zoo3 ``exec``s a ``-conf`` file ending in ``.py`` and reads its ``hyperparams`` dict, keyed by env id. In YAML
the buffer class would be a string that rl-zoo3 ``eval``s where sb3-hir is not imported; a Python file holds the
class itself. ``--gym-packages sb3_hir`` imports sb3-hir, which registers ``sb3_hir/MazeRunner-v0``::

    python -m rl_zoo3.train --algo dqn --env sb3_hir/MazeRunner-v0 --gym-packages sb3_hir \
        -conf examples/rl_zoo3/mazerunner_hir.py --env-kwargs maze_dim:9 num_goals:3 time_limit:100 \
        --eval-freq 5000 --eval-episodes 20 -n 60000

For the baseline set ``hindsight_goals="none"`` (or drop the two replay buffer lines). ``--algo qrdqn`` takes the same
entry; for ``sac``/``tqc`` add ``continuous:True`` to ``--env-kwargs`` and drop the ``exploration_*`` keys and
``target_update_interval`` (SAC's means something else).
"""

from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.extractors import KeySelectExtractor

hyperparams = {
    "sb3_hir/MazeRunner-v0": dict(
        n_timesteps=60_000,
        policy="MultiInputPolicy",
        n_envs=8,
        learning_rate=5e-4,
        batch_size=128,
        gamma=0.97,
        buffer_size=100_000,
        learning_starts=100,
        train_freq=1,
        gradient_steps=4,
        exploration_fraction=0.3,
        exploration_final_eps=0.05,
        target_update_interval=2_000,
        replay_buffer_class=HindsightInstructionReplayBuffer,
        replay_buffer_kwargs=dict(hindsight_goals="some", relabel_ratio=0.8),
        # The networks see the observation and the instruction; "achieved" is kept for relabeling only.
        policy_kwargs=dict(
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
            net_arch=[256, 256],
        ),
    )
}
