"""``--algo-kwarg KEY=VALUE``: a keyword of the algorithm's constructor, checked before anything is built.

SB3 reads most of these keywords late: ``batch_size=0`` fails in the first gradient step, ``gamma=1.5`` and
``exploration_fraction=2`` train without a word, ``target_update_interval=0`` divides by zero thousands of steps
in. So every value the algorithm or SB3 gives a range is checked here, against :data:`ALGO_KWARG_RANGES`, the one
table of those ranges, for every run whether or not it relabels (the replay buffer checks its own copy of gamma
only when the run builds it).
"""

from __future__ import annotations

import argparse
import inspect
from dataclasses import dataclass
from typing import Any

from sb3_hir._validate import check_int, check_number
from sb3_hir.cli.common import ALGOS, UsageError, algo_class, parse_kwargs, usage


@dataclass(frozen=True)
class Range:
    """The values a keyword takes: a number (an ``int`` when ``integer``) between ``low`` and ``high``, or one of
    ``special``, values SB3 gives their own meaning (``gradient_steps=-1``, ``target_kl=None``); ``hint`` says what
    the keyword is, for the message."""

    low: float | None = None
    high: float | None = None
    integer: bool = False
    open_low: bool = False
    special: tuple[Any, ...] = ()
    hint: str = ""

    def check(self, value: Any, name: str) -> None:
        """``value`` is in range, or a ``ValueError`` names ``name``, what it got and what is accepted."""
        if any(value is special or (type(value) is type(special) and value == special) for special in self.special):
            return
        if self.integer:
            low = None if self.low is None else int(self.low)
            high = None if self.high is None else int(self.high)
            check_int(value, name, low + 1 if low is not None and self.open_low else low, high, hint=self.hint)
        else:
            check_number(value, name, self.low, self.high, open_low=self.open_low, hint=self.hint)


#: Keyword -> its range, wherever SB3 (``common/off_policy_algorithm.py``, ``dqn/dqn.py``, ``sac/sac.py``,
#: ``ppo/ppo.py``) or sb3-contrib (QRDQN, TQC, RecurrentPPO) reads or documents one. A keyword applies to the
#: algorithms whose constructor takes it; ``--learning-rate`` is read against this table too.
ALGO_KWARG_RANGES: dict[str, Range] = {
    "learning_rate": Range(0.0, open_low=True, hint="the optimizer's step size"),
    "batch_size": Range(1, integer=True, hint="transitions per gradient step"),
    "gamma": Range(0.0, 1.0, hint="the discount factor"),
    "tau": Range(0.0, 1.0, hint="the soft update coefficient, 1 for a hard update"),
    "buffer_size": Range(1, integer=True, hint="transitions the replay buffer holds"),
    "learning_starts": Range(0, integer=True, hint="steps collected before learning starts"),
    # SB3 asserts "Should at least collect one step or episode" at the first rollout; (N, "episode") is read as N
    "train_freq": Range(1, integer=True, hint="steps between updates, or (N, 'step' | 'episode')"),
    "gradient_steps": Range(1, integer=True, special=(-1,), hint="gradient steps per update, -1: as many as the "
                                                               "steps collected"),
    "target_update_interval": Range(1, integer=True, hint="steps between target network updates"),
    "exploration_fraction": Range(0.0, 1.0, hint="the share of training over which epsilon falls"),
    "exploration_initial_eps": Range(0.0, 1.0, hint="epsilon, a probability"),
    "exploration_final_eps": Range(0.0, 1.0, hint="epsilon, a probability"),
    "max_grad_norm": Range(0.0, open_low=True, hint="the gradient clipping norm"),
    "n_steps": Range(1, integer=True, hint="steps per env of a rollout"),
    "n_epochs": Range(1, integer=True, hint="passes over each rollout"),
    "gae_lambda": Range(0.0, 1.0, hint="GAE's bias-variance trade-off"),
    "clip_range": Range(0.0, open_low=True, hint="PPO's clipping"),
    "clip_range_vf": Range(0.0, open_low=True, special=(None,), hint="the value function's clipping, None for none"),
    "target_kl": Range(0.0, open_low=True, special=(None,), hint="the KL divergence that ends an epoch early, None "
                                                                 "for no limit"),
    "ent_coef": Range(0.0, hint="the entropy bonus"),  # SAC / TQC also take 'auto' and 'auto_0.1' (a str)
    "vf_coef": Range(0.0, hint="the value loss weight"),
    "sde_sample_freq": Range(-1, integer=True, hint="steps between gSDE noise samples, -1: once per rollout"),
    "stats_window_size": Range(1, integer=True, hint="episodes averaged in the logs"),
    "top_quantiles_to_drop_per_net": Range(0, integer=True, hint="TQC's truncated quantiles"),
}

#: Constructor keywords ``--algo-kwarg`` may not set: train sets them from its own options (named), or owns them.
OWNED_ALGO_KWARGS = {
    "policy": "--q-head", "env": "--env", "seed": "--seed", "learning_rate": "--learning-rate",
    "policy_kwargs": "--hidden, --history, --history-encoder and --q-head", "replay_buffer_class": "--relabel",
    "replay_buffer_kwargs": "--relabel, --relabel-ratio, --n-steps and --demo-ratio",
    "buffer_size": "--timesteps (the buffer holds every step)", "verbose": "train itself", "device": "train itself",
    "tensorboard_log": "--out", "_init_setup_model": "train itself", "n_steps": "--n-steps (the replay buffer's)",
}


def check_range(key: str, value: Any, option: str) -> None:
    """``value`` of keyword ``key`` is in :data:`ALGO_KWARG_RANGES`'s range (or ``key`` has none), else a
    :class:`UsageError` naming ``option``."""
    spec = ALGO_KWARG_RANGES.get(key)
    if spec is None:
        return
    if key == "train_freq" and isinstance(value, tuple) and value:  # (N, "episode"): SB3 checks the unit itself
        value = value[0]
    with usage():
        spec.check(value, option)


def algo_kwargs(args: argparse.Namespace, algo_name: str) -> dict[str, Any]:
    """``--algo-kwarg``'s keywords, each one the algorithm's constructor takes and train does not set itself, with
    a value of the default's type and in the keyword's range."""
    kwargs = parse_kwargs(args.algo_kwarg, option="--algo-kwarg")
    if not kwargs:
        return kwargs
    cls = algo_class(algo_name)
    owned = dict(OWNED_ALGO_KWARGS)
    if not ALGOS[algo_name].off_policy:
        del owned["n_steps"]  # the rollout length of an on-policy algorithm, not a replay buffer's returns
    parameters = inspect.signature(cls.__init__).parameters
    accepted = [name for name in parameters if name not in ("self", *owned)]
    for key, value in kwargs.items():
        if key in owned:
            raise UsageError(f"--algo-kwarg {key}: train sets it from {owned[key]}")
        if key not in accepted:
            raise UsageError(f"--algo-kwarg {key}: not a keyword of {cls.__name__} (--algo {algo_name}); accepted: "
                             f"{', '.join(accepted)}")
        default = parameters[key].default
        # a number where the algorithm's default is one (SB3 may read it only thousands of steps in)
        if isinstance(default, bool) and not isinstance(value, bool):
            raise UsageError(f"--algo-kwarg {key} must be True or False; got {value!r}")
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if (isinstance(default, (int, float)) and not isinstance(default, bool) and not number
                and not (isinstance(default, int) and isinstance(value, tuple))):  # train_freq=(1, "episode")
            raise UsageError(f"--algo-kwarg {key} must be a number, as {cls.__name__}'s default {default!r}; "
                             f"got {value!r}")
        if number or value is None or isinstance(value, tuple):  # a str ('auto') is the algorithm's to read
            check_range(key, value, f"--algo-kwarg {key}")
    return kwargs
