"""Periodic evaluation of instruction-following agents: success rate and goals reached, through SB3's logger.

SB3's :class:`~stable_baselines3.common.callbacks.EvalCallback` logs the success rate but not how far along the
instruction the agent got, and it dumps the logger before a subclass could add a value. With ``k`` goals, the
mean number of goals reached moves long before full successes do, so it is the more informative curve early in
training. :class:`InstructionEvalCallback` records both (``eval/success_rate``, ``eval/goals_reached``) and keeps
them in an :class:`EvalHistory` for plotting (:func:`sb3_hir.plots.plot_learning_curves`)::

    from sb3_hir.callbacks import InstructionEvalCallback

    eval_callback = InstructionEvalCallback(eval_env, eval_freq=5_000, n_eval_episodes=20, seed=123)
    model.learn(50_000, callback=eval_callback)
    print(eval_callback.history.success_rate[-1])
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from sb3_hir._validate import check_int

__all__ = ["EvalHistory", "EvalResult", "InstructionEvalCallback", "evaluate_instruction_policy"]


@dataclass
class EvalHistory:
    """One row per evaluation: when it happened and how the agent did."""

    timesteps: list[int] = field(default_factory=list)
    success_rate: list[float] = field(default_factory=list)
    goals_reached: list[float] = field(default_factory=list)
    mean_reward: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.timesteps)

    def append(self, timesteps: int, success_rate: float, goals_reached: float, mean_reward: float) -> None:
        self.timesteps.append(int(timesteps))
        self.success_rate.append(float(success_rate))
        self.goals_reached.append(float(goals_reached))
        self.mean_reward.append(float(mean_reward))

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str]) -> EvalHistory:
        """Read the ``eval/*`` columns of an SB3 ``progress.csv`` (rows without an evaluation are skipped)."""
        history = cls()
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                success = row.get("eval/success_rate", "")
                if not success:
                    continue
                history.append(
                    int(float(row.get("time/total_timesteps") or 0)),
                    float(success),
                    float(row.get("eval/goals_reached") or math.nan),
                    float(row.get("eval/mean_reward") or math.nan),
                )
        return history


@dataclass(frozen=True)
class EvalResult:
    """Outcome of :func:`evaluate_instruction_policy`."""

    success_rate: float
    goals_reached: float
    mean_reward: float
    mean_length: float


def evaluate_instruction_policy(
    model: Any,
    env: VecEnv,
    n_eval_episodes: int = 20,
    *,
    deterministic: bool = True,
    seed: int | None = None,
) -> EvalResult:
    """Success rate and mean goals reached of ``model`` (an SB3 algorithm or policy) over ``n_eval_episodes``.

    The score the CLI and the benchmarks report, so your own runs measure success as their tables do.

    Both are read from the ``info`` of each episode's last step (``is_success``, ``goals_reached``); an env
    without ``goals_reached`` gives NaN for it. ``seed`` reseeds ``env`` first, so repeated calls score the same
    episodes.
    """
    if seed is not None:
        env.seed(seed)
    successes: list[float] = []
    goals: list[float] = []

    def collect(locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        if locals_["done"]:
            info = locals_["info"]
            successes.append(float(bool(info.get("is_success", False))))
            goals.append(float(info.get("goals_reached", math.nan)))

    rewards, lengths = evaluate_policy(
        model,
        env,
        n_eval_episodes=n_eval_episodes,
        deterministic=deterministic,
        return_episode_rewards=True,
        warn=False,
        callback=collect,
    )
    return EvalResult(
        success_rate=float(np.mean(successes)) if successes else math.nan,
        goals_reached=float(np.mean(goals)) if goals else math.nan,
        mean_reward=float(np.mean(rewards)),
        mean_length=float(np.mean(lengths)),
    )


class InstructionEvalCallback(BaseCallback):
    """Evaluate every ``eval_freq`` timesteps, and once before and after training.

    Beside the success rate it logs the goals reached, which shows partial progress on a k-goal instruction long before
    full successes do.

    The values go to the model's logger (CSV, TensorBoard, stdout, whatever it was configured with) under
    ``eval/success_rate``, ``eval/goals_reached``, ``eval/mean_reward`` and ``eval/mean_ep_length``, and into
    :attr:`history`.

    :param eval_env: env (a VecEnv, or a gymnasium env that gets wrapped) whose ``info`` carries ``is_success`` and
        ``goals_reached`` at the end of an episode. Several sub-envs evaluate in parallel.
    :param eval_freq: evaluate each time this many more *timesteps* (summed over training envs) have passed, so the
        schedule does not depend on ``n_envs``.
    :param n_eval_episodes: episodes per evaluation.
    :param deterministic: act greedily while evaluating.
    :param seed: reseed ``eval_env`` with this before every evaluation, so each one scores the same episodes and the
        curve shows learning rather than which mazes were drawn; None keeps the env's own stream.
    :param eval_at_start: also evaluate before the first step (the curve then starts at the untrained policy).
    :param verbose: 1 prints one line per evaluation.
    """

    def __init__(
        self,
        eval_env: VecEnv | gym.Env,
        eval_freq: int = 10_000,
        n_eval_episodes: int = 20,
        deterministic: bool = True,
        seed: int | None = None,
        eval_at_start: bool = True,
        verbose: int = 0,
    ) -> None:
        super().__init__(verbose=verbose)
        check_int(eval_freq, "eval_freq", 1)
        check_int(n_eval_episodes, "n_eval_episodes", 1)
        if not isinstance(eval_env, VecEnv):
            if not isinstance(eval_env, gym.Env):
                raise ValueError(f"eval_env must be a VecEnv or a gymnasium.Env; got {type(eval_env).__name__}")
            env = eval_env
            eval_env = DummyVecEnv([lambda: Monitor(env)])
        self.eval_env = eval_env
        self.eval_freq = int(eval_freq)
        self.n_eval_episodes = int(n_eval_episodes)
        self.deterministic = deterministic
        self.seed = seed
        self.eval_at_start = eval_at_start
        self.history = EvalHistory()
        self._next_eval = 0

    def _on_training_start(self) -> None:
        self._next_eval = self.num_timesteps + self.eval_freq
        if self.eval_at_start and (not self.history.timesteps or self.history.timesteps[-1] != self.num_timesteps):
            self.evaluate()

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next_eval:
            # Skip thresholds a large vectorised step jumped over: one evaluation per call at most.
            while self._next_eval <= self.num_timesteps:
                self._next_eval += self.eval_freq
            self.evaluate()
        return True

    def _on_training_end(self) -> None:
        self.num_timesteps = self.model.num_timesteps
        if not self.history.timesteps or self.history.timesteps[-1] != self.num_timesteps:
            self.evaluate()

    def evaluate(self) -> EvalResult:
        """Run one evaluation now, log it and dump the logger."""
        result = evaluate_instruction_policy(
            self.model, self.eval_env, self.n_eval_episodes, deterministic=self.deterministic, seed=self.seed
        )
        success_rate, goals_reached, mean_reward = result.success_rate, result.goals_reached, result.mean_reward
        self.history.append(self.num_timesteps, success_rate, goals_reached, mean_reward)
        self.logger.record("eval/success_rate", success_rate)
        self.logger.record("eval/goals_reached", goals_reached)
        self.logger.record("eval/mean_reward", mean_reward)
        self.logger.record("eval/mean_ep_length", result.mean_length)
        self.logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        self.logger.dump(self.num_timesteps)
        if self.verbose >= 1:
            print(
                f"eval @ {self.num_timesteps} steps: success {success_rate:.0%}, goals reached {goals_reached:.2f}, "
                f"reward {mean_reward:.2f}"
            )
        return result
