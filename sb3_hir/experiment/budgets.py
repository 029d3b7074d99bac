"""Evaluate one training run at several budgets: the learning curve of a benchmark without retraining per budget.

Why: a table with columns at 10k, 20k and 30k steps would otherwise cost three runs per seed; a wall-time budget
(the moonshot: what one hour on two cores reaches) is the same question with minutes for steps
(:class:`WallClockCallback`). :class:`BudgetCallback`
evaluates inside the one run, as it passes each budget, with the library's own evaluator
(:func:`sb3_hir.callbacks.evaluate_instruction_policy`, the score the CLI reports) unless a script brings its own
metric (:func:`instruction_evaluator` builds the usual one, :func:`episode_evaluator` the single-env,
seed-per-episode one of the GoalEnv benchmarks).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_hir._validate import check_int
from sb3_hir.callbacks import evaluate_instruction_policy
from sb3_hir.experiment.seeds import EVAL_SEED_OFFSET

__all__ = [
    "BudgetCallback",
    "Evaluator",
    "TrainingEpisodes",
    "WallClockCallback",
    "episode_evaluator",
    "instruction_evaluator",
    "is_success",
]

#: Scores a model: metric name -> value (``{"goals_reached": 1.4, "success_rate": 0.3}``).
Evaluator = Callable[[Any], Mapping[str, float]]


def instruction_evaluator(make_env: Callable[[], VecEnv], n_episodes: int, seed: int | None,
                          *, deterministic: bool = True) -> Evaluator:
    """An :data:`Evaluator` scoring ``goals_reached`` and ``success_rate`` over ``n_episodes`` of a fresh
    ``make_env()``, reseeded with ``seed`` each time, so every budget (and every side) scores the same episodes."""
    check_int(n_episodes, "n_episodes", 1)

    def evaluate(model: Any) -> dict[str, float]:
        env = make_env()
        try:
            result = evaluate_instruction_policy(model, env, n_episodes, deterministic=deterministic, seed=seed)
        finally:
            env.close()
        return {"goals_reached": result.goals_reached, "success_rate": result.success_rate}

    return evaluate


def is_success(info: Mapping[str, Any]) -> float:
    """The env's ``is_success`` as 0.0 / 1.0 (missing: 0.0)."""
    return float(bool(info.get("is_success", False)))


def episode_evaluator(make_env: Callable[[], gym.Env], n_episodes: int, seed: int, *,
                      seed_base: int = EVAL_SEED_OFFSET, normalize: VecNormalize | None = None,
                      metrics: Mapping[str, Callable[[Mapping[str, Any]], float]] | None = None,
                      any_step: bool = False) -> Evaluator:
    """An :data:`Evaluator` over ``n_episodes`` of one (non-vectorised) env, each reset with its own seed
    ``seed_base + 1000 * seed + episode``, the greedy policy acting.

    Why not :func:`instruction_evaluator`: the GoalEnv benchmarks' published tables (the drop-in against HER,
    FetchReach on SBX, the GoalEnv and PointMaze comparisons) were measured this way, with a reset seed per episode,
    the training ``VecNormalize``'s statistics, or success "at some step"; a VecEnv evaluation reproduces none of
    these.

    :param seed_base: where the run's episode seeds start (the scripts used 10_000 or 100_000).
    :param normalize: the training env's ``VecNormalize``, whose current statistics normalise what the policy sees.
    :param metrics: name -> function of a step's ``info`` (default ``{"success_rate": is_success}``); each is
        averaged over episodes.
    :param any_step: score an episode by the best value any of its steps gave (the env's success test "held at
        some step"); by default by its last step's.
    """
    check_int(n_episodes, "n_episodes", 1)
    readers = dict(metrics) if metrics is not None else {"success_rate": is_success}

    def evaluate(model: Any) -> dict[str, float]:
        env = make_env()
        scores: dict[str, list[float]] = {name: [] for name in readers}
        try:
            for episode in range(n_episodes):
                obs, _ = env.reset(seed=seed_base + 1000 * seed + episode)
                done, best = False, dict.fromkeys(readers, -np.inf)
                while not done:
                    policy_obs = normalize.normalize_obs(obs) if normalize is not None else obs
                    action, _ = model.predict(policy_obs, deterministic=True)
                    obs, _, terminated, truncated, info = env.step(action)
                    done = terminated or truncated
                    if any_step:
                        best = {name: max(best[name], float(read(info))) for name, read in readers.items()}
                for name, read in readers.items():
                    scores[name].append(best[name] if any_step else float(read(info)))
        finally:
            env.close()
        return {name: float(np.mean(values)) for name, values in scores.items()}

    return evaluate


class BudgetCallback(BaseCallback):
    """Call ``evaluate(model)`` once as training passes each of ``budgets`` (env steps, summed over envs).

    A budget a vectorised step jumps over is evaluated at that step; budgets still pending when training ends
    (``learn`` stopped early, or a budget beyond its length) are evaluated then if reached, and left out if not,
    so :attr:`results` never holds a score for steps the run did not take. The clock of
    :attr:`training_seconds` stops while evaluating, so it measures what training cost.

    :param budgets: env steps at which to evaluate, in any order.
    :param evaluate: the :data:`Evaluator`.
    :param stop: stop training after an evaluation whose metrics it returns True for (a level reached).
    """

    def __init__(self, budgets: Sequence[int], evaluate: Evaluator,
                 stop: Callable[[Mapping[str, float]], bool] | None = None) -> None:
        super().__init__()
        for budget in budgets:
            check_int(budget, "budget", 0)
        self.budgets = sorted(set(int(b) for b in budgets))
        self.evaluate = evaluate
        self.stop = stop
        #: budget -> the metrics at it, in budget order.
        self.results: dict[int, dict[str, float]] = {}
        #: budget -> wall seconds of training (evaluations left out) until it was reached.
        self.training_seconds: dict[int, float] = {}
        self._pending = list(self.budgets)
        self._trained = 0.0
        self._resumed = time.perf_counter()
        self._stopped = False

    def _on_training_start(self) -> None:
        self._resumed = time.perf_counter()

    def _evaluate_reached(self) -> None:
        while self._pending and self.num_timesteps >= self._pending[0]:
            budget = self._pending.pop(0)
            self._trained += time.perf_counter() - self._resumed
            self.training_seconds[budget] = self._trained
            self.results[budget] = dict(self.evaluate(self.model))
            self._resumed = time.perf_counter()
            if self.stop is not None and self.stop(self.results[budget]):
                self._stopped = True
                self._pending.clear()

    def _on_step(self) -> bool:
        self._evaluate_reached()
        return not self._stopped

    def _on_training_end(self) -> None:
        self.num_timesteps = self.model.num_timesteps
        self._evaluate_reached()


class TrainingEpisodes:
    """The training episodes a run has finished, and the first count at which the success rate of the last
    ``window`` of them reached ``target``: BabyAI's sample-efficiency measure (``scripts/rl_dataeff.py`` counts the
    episodes until a 100-episode smoothed success rate reaches 99 %), read from the episodes the learner trained on
    (its exploration included), as BabyAI reads its PPO's.

    :param window: episodes in the smoothed success rate.
    :param target: success rate to reach.
    """

    def __init__(self, window: int = 100, target: float = 0.99) -> None:
        check_int(window, "window", 1)
        if not 0.0 < float(target) <= 1.0:
            raise ValueError(f"target must be in (0, 1], got {target!r}")
        self.window, self.target = window, float(target)
        self.episodes = 0
        self.recent: deque[bool] = deque(maxlen=window)
        #: the episode count at which the smoothed success rate first reached ``target`` (None: not yet).
        self.reached_at: int | None = None

    def update(self, dones: np.ndarray, infos: Sequence[Mapping[str, Any]]) -> None:
        """Count the sub-envs' finished episodes of one vector step, with their ``info["is_success"]``."""
        for i in np.flatnonzero(np.asarray(dones, dtype=bool)):
            self.episodes += 1
            self.recent.append(bool(infos[int(i)].get("is_success", False)))
            if (self.reached_at is None and len(self.recent) == self.window
                    and float(np.mean(self.recent)) >= self.target):
                self.reached_at = self.episodes

    def metrics(self) -> dict[str, float]:
        """``episodes`` so far, the smoothed ``train_success`` (NaN before ``window`` episodes) and, once reached,
        ``episodes_to_target``."""
        smoothed = float(np.mean(self.recent)) if len(self.recent) == self.window else float("nan")
        found = {} if self.reached_at is None else {"episodes_to_target": float(self.reached_at)}
        return dict(episodes=float(self.episodes), train_success=smoothed, **found)


class WallClockCallback(BaseCallback):
    """Evaluate every ``eval_seconds`` of wall time and stop training after ``limit_seconds``, evaluations included.

    Each evaluation appends a point to :attr:`curve`: ``minutes`` since the callback was built (so set-up done
    after it, such as collecting demonstrations, is on the clock), ``timesteps``, the evaluator's metrics and the
    machine's ``load_average`` (runs that shared the cores are told apart by it). ``on_evaluation(curve)`` is called
    after each, to print or save it as it grows. With ``training_episodes`` (a :class:`TrainingEpisodes`), every
    step's finished training episodes are counted, and each point also carries its metrics.

    :param eval_seconds: wall time between evaluations.
    :param limit_seconds: wall time after which ``learn`` stops.
    :param evaluate: the :data:`Evaluator`.
    :param on_evaluation: called with :attr:`curve` after each evaluation.
    :param clock: ``"wall"`` (``time.perf_counter``) or ``"cpu"`` (``time.process_time``, this process's CPU
        seconds): a CPU-time budget ("one CPU-hour per seed") stays the same budget when runs share cores with
        other work, where a wall-time one shrinks. Points then also carry ``wall_minutes``.
    :param training_episodes: counts the training episodes (None: not counted).
    """

    def __init__(self, eval_seconds: float, limit_seconds: float, evaluate: Evaluator,
                 on_evaluation: Callable[[list[dict[str, float]]], None] | None = None, clock: str = "wall",
                 training_episodes: TrainingEpisodes | None = None) -> None:
        super().__init__()
        if not eval_seconds > 0 or not limit_seconds > 0:
            raise ValueError(f"eval_seconds and limit_seconds must be > 0; got {eval_seconds}, {limit_seconds}")
        if clock not in ("wall", "cpu"):
            raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
        self.every, self.limit = float(eval_seconds), float(limit_seconds)
        self.evaluate = evaluate
        self.on_evaluation = on_evaluation
        self.clock = clock
        self.training_episodes = training_episodes
        self._now = time.perf_counter if clock == "wall" else time.process_time
        self.wall_start = time.perf_counter()
        self.start = self._now()
        self.next_eval = self.every
        #: one point per evaluation, in order.
        self.curve: list[dict[str, float]] = []

    def record(self) -> dict[str, float]:
        """Evaluate now and append the point (also called after ``learn`` for the final policy)."""
        metrics = dict(self.evaluate(self.model))
        point = dict(minutes=round((self._now() - self.start) / 60, 2), timesteps=int(self.num_timesteps),
                     **metrics, load_average=round(os.getloadavg()[0], 2))
        if self.clock == "cpu":
            point["wall_minutes"] = round((time.perf_counter() - self.wall_start) / 60, 2)
        if self.training_episodes is not None:
            point.update(self.training_episodes.metrics())
        self.curve.append(point)
        if self.on_evaluation is not None:
            self.on_evaluation(self.curve)
        return point

    def _on_step(self) -> bool:
        if self.training_episodes is not None:
            self.training_episodes.update(self.locals["dones"], self.locals["infos"])
        if self._now() - self.start >= self.next_eval:
            self.record()
            self.next_eval += self.every
        return self._now() - self.start < self.limit
