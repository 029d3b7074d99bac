"""DAgger collection speed at equal durability: sb3-hir's DAggerCollector vs imitation's collector and the ceiling.

Conditions (one process, every condition ``--repeats`` times, interleaved, best rate reported; the machine may be
shared): CartPole-v1 x 8 in a ``DummyVecEnv`` with ``--episode-steps`` (default 200) steps per episode, beta 0.5.
The expert is a scripted balancer that keeps the pole up; the learner is imitation's ``FeedForward32Policy``,
first cloned from that expert by BC (a few seconds) so that learner steps keep the pole up too and episodes run
to the time limit (the mean episode length is printed). Every side samples from the learner, as imitation does.

- ceiling: the bare VecEnv, the expert's action and the beta mix, with ``learner.predict`` on the observations of
  the sub-envs the learner acts in (what imitation's collector and, since issue 23, ours pass it), written as a
  competent loop (numpy mask); nothing recorded.
- imitation, per-episode save: ``InteractiveTrajectoryCollector`` as shipped: each finished episode is saved
  (one HuggingFace dataset per episode) before ``step`` returns.
- imitation, in memory: the same collector with the save replaced by appending to a list.
- sb3-hir, per-episode files: ``DAggerCollector`` with its defaults: each finished episode in its own round file
  before ``step`` returns (equal durability to imitation's save).
- sb3-hir, in memory: ``save_dir=None``.

Targets: sb3-hir per-episode >= 1.5x imitation per-episode (equal durability), and >= 0.8x the ceiling.

Where the files go matters as much as what is written: both savers create one file (imitation: a directory of
three) per episode, and creating a file costs what the file system makes it cost. ``--save-root`` picks the
directory the runs' temporary save directories are made in (default: the system's, as imitation's examples use).

    python benchmarks/bench_dagger_collector.py [--steps 40000] [--repeats 3] [--episode-steps 200] [--save-root DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import datasets
import gymnasium as gym
import numpy as np
import torch as th
from imitation.algorithms import bc
from imitation.algorithms.dagger import InteractiveTrajectoryCollector
from imitation.data import rollout
from imitation.policies.base import FeedForward32Policy
from imitation.util import logger as imit_logger
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

from sb3_hir.dagger import DAggerCollector
from sb3_hir.experiment import markdown_table

N_ENVS = 8
BETA = 0.5

CEILING = "ceiling: bare VecEnv + learner.predict"
IMITATION_SAVE = "imitation, per-episode save"
IMITATION_MEMORY = "imitation, in memory"
OURS_FILES = "sb3-hir, per-episode files"
OURS_MEMORY = "sb3-hir, in memory"
CONDITIONS = [CEILING, IMITATION_SAVE, IMITATION_MEMORY, OURS_FILES, OURS_MEMORY]


class BalancePolicy(BasePolicy):
    """Push the cart toward the side the pole is falling to: keeps CartPole up with no training."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(observation_space, action_space)

    def forward(self, obs: th.Tensor) -> th.Tensor:
        return self._predict(obs)

    def _predict(self, observation: th.Tensor, deterministic: bool = False) -> th.Tensor:  # type: ignore[override]
        return (observation[:, 2] + 0.5 * observation[:, 3] > 0).long()


class InMemoryCollector(InteractiveTrajectoryCollector):
    """imitation's collector keeping finished episodes in a list instead of saving each one."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.trajectories: list = []

    def step_wait(self) -> VecEnvStepReturn:
        next_obs: Any
        next_obs, rews, dones, infos = self.venv.step_wait()
        self._last_obs = next_obs
        accumulator, acts = self.traj_accum, self._last_user_actions
        assert accumulator is not None and acts is not None, "step_wait before reset and step_async"
        self.trajectories.extend(accumulator.add_steps_and_auto_finish(
            obs=next_obs, acts=acts, rews=rews, infos=infos, dones=dones))
        return next_obs, rews, dones, infos


def make_venv(seed: int, episode_steps: int) -> VecEnv:
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=episode_steps)] * N_ENVS)
    venv.seed(seed)
    return venv


def cloned_learner(seed: int, episode_steps: int) -> FeedForward32Policy:
    """A FeedForward32Policy cloned from the expert, so that learner steps keep the pole up as well."""
    venv = make_venv(seed + 1, episode_steps)
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    rng = np.random.default_rng(seed)
    trajs = rollout.generate_trajectories(expert, venv, rollout.make_min_timesteps(4000), rng=rng)
    th.manual_seed(seed)
    trainer = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space, rng=rng,
                    demonstrations=rollout.flatten_trajectories(trajs), batch_size=64, device="cpu",
                    custom_logger=imit_logger.configure(format_strs=[]))
    trainer.train(n_batches=1500, progress_bar=False, log_interval=10**9)
    venv.close()
    return trainer.policy  # type: ignore[return-value]


def ceiling_loop(venv: VecEnv, expert: BasePolicy, learner: BasePolicy, n_steps: int,
                 rng: np.random.Generator) -> None:
    obs: Any = venv.reset()  # CartPole's Box observations
    for _ in range(n_steps // N_ENVS):
        acts, _ = expert.predict(obs, deterministic=True)
        use_learner = rng.random(N_ENVS) >= BETA
        if use_learner.any():
            acts[use_learner] = learner.predict(obs[use_learner], deterministic=False)[0]
        obs, _, _, _ = venv.step(acts)


def drive(collector: VecEnv, expert: BasePolicy, n_steps: int) -> None:
    obs: Any = collector.reset()  # CartPole's Box observations
    for _ in range(n_steps // N_ENVS):
        acts, _ = expert.predict(obs, deterministic=True)
        obs, _, _, _ = collector.step(acts)


def run(condition: str, learner: BasePolicy, n_steps: int, seed: int, episode_steps: int,
        save_root: str | None = None) -> tuple[float, float]:
    """(env-steps per second, mean length of the episodes finished) of one condition."""
    venv = make_venv(seed, episode_steps)
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    rng = np.random.default_rng(seed)
    robot: Callable[[np.ndarray], np.ndarray] = lambda obs: learner.predict(obs)[0]  # noqa: E731 - imitation's
    lengths: list[int] = []
    with tempfile.TemporaryDirectory(dir=save_root) as save_dir:
        start = time.perf_counter()
        if condition == CEILING:
            ceiling_loop(venv, expert, learner, n_steps, rng)
        elif condition == IMITATION_SAVE:
            drive(InteractiveTrajectoryCollector(venv, robot, BETA, save_dir, rng), expert, n_steps)
        elif condition == IMITATION_MEMORY:
            collector = InMemoryCollector(venv, robot, BETA, save_dir, rng)
            drive(collector, expert, n_steps)
            lengths = [len(t) for t in collector.trajectories]
        else:
            ours = DAggerCollector(venv, learner, BETA, save_dir if condition == OURS_FILES else None, rng)
            drive(ours, expert, n_steps)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the running episodes, reported as partial
                finished: list[Any] = ours.finish_round(policy="report")  # DAggerTrajectory objects
                lengths = [len(t) for t in finished if t.complete]
        elapsed = time.perf_counter() - start
    venv.close()
    return (n_steps // N_ENVS) * N_ENVS / elapsed, float(np.mean(lengths)) if lengths else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40_000, help="env steps per run (default 40000)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs per condition (default 3)")
    parser.add_argument("--episode-steps", type=int, default=200, help="CartPole time limit (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-root", default=None,
                        help="directory for the runs' temporary save directories (default: the system's temp dir)")
    args = parser.parse_args()
    th.set_num_threads(1)
    datasets.disable_progress_bars()  # imitation saves one dataset per episode; no bar per save
    learner = cloned_learner(args.seed, args.episode_steps)
    for condition in CONDITIONS:  # warm-up: lazy imports, first dataset write
        run(condition, learner, 8 * N_ENVS, args.seed, args.episode_steps, args.save_root)
    rates: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    lengths: dict[str, float] = {}
    for _ in range(args.repeats):
        for condition in CONDITIONS:
            rate, length = run(condition, learner, args.steps, args.seed, args.episode_steps, args.save_root)
            rates[condition].append(rate)
            lengths.setdefault(condition, length)
    best = {c: max(r) for c, r in rates.items()}
    print(f"CartPole-v1 x {N_ENVS} (DummyVecEnv), time limit {args.episode_steps}, beta {BETA}, {args.steps} env "
          f"steps per run, best of {args.repeats} interleaved; mean finished episode length "
          f"{lengths[OURS_MEMORY]:.0f} steps (ours) / {lengths[IMITATION_MEMORY]:.0f} (imitation); files under "
          f"{args.save_root or tempfile.gettempdir()}")
    print(markdown_table(["condition", "env-steps/s"], [[c, f"{best[c]:.0f}"] for c in CONDITIONS], "ll"))
    targets = [
        ("sb3-hir / imitation, per-episode save (equal durability)", best[OURS_FILES] / best[IMITATION_SAVE], 1.5),
        ("sb3-hir per-episode files / ceiling", best[OURS_FILES] / best[CEILING], 0.8),
    ]
    for label, ratio, target in targets:
        print(f"{label}: {ratio:.2f}x (target >= {target}x) {'PASS' if ratio >= target else 'MISS'}")
    print(f"sb3-hir / imitation, both in memory: {best[OURS_MEMORY] / best[IMITATION_MEMORY]:.2f}x")
    print(f"sb3-hir in memory / ceiling: {best[OURS_MEMORY] / best[CEILING]:.2f}x")


if __name__ == "__main__":
    main()
