"""rl-zoo3 hyperparameters: the zoo's own tuned SAC entry for FetchReach (``hyperparams/sac.yml``), class swapped.

Everything is the zoo's entry as it stands, with sb3-hir's ``HerReplayBuffer`` for SB3's; it takes HER's
``replay_buffer_kwargs`` unchanged. A Python ``-conf`` file holds the class itself (in YAML it would be a string the
zoo ``eval``s without sb3-hir imported)::

    python -m rl_zoo3.train --algo sac --env FetchReach-v2 --gym-packages gymnasium_robotics \
        -conf examples/rl_zoo3/fetchreach_her_dropin.py
"""

from sb3_hir import HerReplayBuffer  # was: from stable_baselines3 import HerReplayBuffer

_FETCH_REACH = dict(
    n_timesteps=20_000,
    policy="MultiInputPolicy",
    buffer_size=1_000_000,
    ent_coef="auto",
    batch_size=256,
    gamma=0.95,
    learning_rate=0.001,
    learning_starts=1000,
    normalize=True,
    replay_buffer_class=HerReplayBuffer,
    replay_buffer_kwargs=dict(goal_selection_strategy="future", n_sampled_goal=4),
    policy_kwargs=dict(net_arch=[64, 64]),
)

# gymnasium-robotics 1.2 (gymnasium 0.29) registers FetchReach-v2, 1.4 (gymnasium 1.x) FetchReach-v4.
hyperparams = {"FetchReach-v2": _FETCH_REACH, "FetchReach-v4": _FETCH_REACH}
