"""BabyAI's bot as a DAgger expert: (a) its own success per go-to level, (b) the cost of labelling with it.

(a) The bot alone (``"babyai-bot"`` through :class:`~sb3_hir.env_experts.EnvStateLabels`, the executed action
always its label) plays ``--episodes`` episodes of each level (seeds 0..N-1); success rate, mean episode length and
wall time per step are printed.

(b) DAgger collection, both sides in one process on the same level: the same ``DAggerCollector`` (defaults:
per-episode round files in a temporary directory), the same ``DummyVecEnv`` of ``--n-envs`` envs with the same
seeds, and the same learner acting with probability 1 - beta. Only the expert differs:

- bot: the env-state expert, each env wrapped in ``EnvStateLabels`` (the bot replans in the env's step, the
  collector reads the labels with ``get_attr``);
- observation-only: an SB3 ``MultiInputPolicy`` of the CLI learner's size (``net_arch=[256, 256]``, what a cloned
  expert would be), asked for every sub-env's action from the observation, as an observation expert is.

With ``--beta 0`` (the default) the learner executes every action, so both sides visit exactly the same states
(the learner is a seeded uniform-random callable, one generator per side): the difference is the labelling
alone, and the bot replans after every action it did not suggest, its costliest case. The sides advance in
alternating chunks of ``--chunk`` vector steps, so load from other processes on a shared machine hits both alike.
The ratio printed is the bot side's time over the observation side's, for the same transitions; the target is
<= 2x.

    python benchmarks/bench_babyai_bot.py [--levels GoToLocal GoTo GoToSeqS5R2 GoToSeq] [--episodes 100]
        [--steps 8000] [--n-envs 8] [--beta 0.0] [--tiny]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from sb3_hir_minigrid.wrapper import BABYAI_MAX_GOALS, make_babyai_goto
from stable_baselines3.common.policies import MultiInputActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from sb3_hir import resolvers
from sb3_hir.dagger import DAggerCollector, PolicyRunner
from sb3_hir.env_experts import EnvStateLabels, with_expert_labels
from sb3_hir.experiment import markdown_table

LEVELS = ["GoToLocal", "GoTo", "GoToSeqS5R2", "GoToSeq"]
TARGET = 2.0


def level_env_fn(level: str) -> Callable[[], gym.Env]:
    k_max = BABYAI_MAX_GOALS if level.startswith("GoToSeq") else 1

    def make() -> gym.Env:
        return make_babyai_goto(f"BabyAI-{level}-v0", k_max=k_max)

    return make


# ----------------------------------------------------------------------------------------------- (a) success
def bot_success(level: str, episodes: int) -> tuple[float, float, float]:
    """(success rate, mean episode length, ms per step) of the bot alone over seeds 0..episodes-1."""
    env = with_expert_labels(level_env_fn(level), "babyai-bot")()
    assert isinstance(env, EnvStateLabels)
    successes = 0
    lengths: list[int] = []
    start = time.perf_counter()
    for seed in range(episodes):
        env.reset(seed=seed)
        steps = 0
        while True:
            _, _, terminated, truncated, info = env.step(env.label)
            steps += 1
            if terminated or truncated:
                break
        successes += bool(info["is_success"])
        lengths.append(steps)
    seconds = time.perf_counter() - start
    return successes / episodes, float(np.mean(lengths)), 1e3 * seconds / max(sum(lengths), 1)


# ----------------------------------------------------------------------------------------------- (b) speed
class RandomLearner:
    """A ``callable(obs) -> actions`` drawing uniform actions from its own generator."""

    def __init__(self, n_actions: int, seed: int) -> None:
        self.n_actions = n_actions
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return self.rng.integers(0, self.n_actions, len(obs["obs"]))


class Side:
    """One side of the speed comparison: a collector over its own venv and expert, timed a chunk at a time."""

    def __init__(self, name: str, venv: VecEnv, expert: Any, beta: float, seed: int, save_dir: pathlib.Path) -> None:
        self.name = name
        self.venv = venv
        n_actions = int(getattr(venv.action_space, "n", 7))
        self.collector = DAggerCollector(venv, RandomLearner(n_actions, seed), beta, save_dir, rng=seed)
        self.expert = PolicyRunner(expert, venv.num_envs)
        self.obs: Any = self.collector.reset()
        self.seconds = 0.0
        self.transitions = 0

    def run(self, vector_steps: int) -> None:
        collector, expert, clock = self.collector, self.expert, time.perf_counter
        obs = self.obs
        start = clock()
        for _ in range(vector_steps):
            obs, _, dones, _ = collector.step(expert(obs))
            expert.observe_dones(dones)
        self.seconds += clock() - start
        self.obs = obs
        self.transitions += vector_steps * self.venv.num_envs

    def close(self) -> int:
        with warnings.catch_warnings():  # the running episodes are kept as partial ones: expected here
            warnings.simplefilter("ignore", RuntimeWarning)
            episodes = len(self.collector.finish_round(policy="report"))
        self.collector.close()
        return episodes


def observation_expert(venv: VecEnv, seed: int) -> MultiInputActorCriticPolicy:
    th.manual_seed(seed)
    return MultiInputActorCriticPolicy(cast(spaces.Dict, venv.observation_space), venv.action_space,
                                       lr_schedule=lambda _: 0.0, net_arch=[256, 256])


class SpeedRow(NamedTuple):
    bot_rate: float
    observation_rate: float
    bot_episodes: int
    observation_episodes: int
    replans: int
    box_repairs: int
    restarts: int


def labelling_speed(level: str, steps: int, n_envs: int, beta: float, chunk: int, seed: int) -> SpeedRow:
    """Both sides' transitions/s and episodes, and what the bots on the bot side repaired."""
    env_fn = level_env_fn(level)
    bot_venv = DummyVecEnv([with_expert_labels(env_fn, "babyai-bot")] * n_envs)
    obs_venv = DummyVecEnv([env_fn] * n_envs)
    for venv in (bot_venv, obs_venv):
        venv.seed(seed)
    with tempfile.TemporaryDirectory(prefix="bench-babyai-bot-") as tmp:
        sides = [
            Side("bot", bot_venv, resolvers.resolve_expert("babyai-bot", venv=bot_venv), beta, seed,
                 pathlib.Path(tmp) / "bot"),
            Side("observation", obs_venv, observation_expert(obs_venv, seed), beta, seed,
                 pathlib.Path(tmp) / "observation"),
        ]
        done = 0
        while done < steps:
            n = min(chunk, (steps - done + n_envs - 1) // n_envs)
            for side in sides:
                side.run(n)
            done += n * n_envs
        bots = bot_venv.get_attr("expert")
        episodes = [side.close() for side in sides]
    rates = [side.transitions / side.seconds for side in sides]
    return SpeedRow(rates[0], rates[1], episodes[0], episodes[1], sum(int(b.replans) for b in bots),
                    sum(int(b.box_repairs) for b in bots), sum(int(b.restarts) for b in bots))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--levels", nargs="+", default=LEVELS, metavar="LEVEL",
                        help=f"BabyAI go-to levels, without BabyAI- and -v0 (default {' '.join(LEVELS)})")
    parser.add_argument("--episodes", type=int, default=100, help="bot episodes per level for (a) (default 100)")
    parser.add_argument("--steps", type=int, default=8_000,
                        help="transitions per side and level for (b) (default 8000)")
    parser.add_argument("--n-envs", type=int, default=8, help="sub-envs of each side's DummyVecEnv (default 8)")
    parser.add_argument("--beta", type=float, default=0.0,
                        help="probability that the expert's action is executed in (b) (default 0: the learner's)")
    parser.add_argument("--chunk", type=int, default=64, help="vector steps per side between switches (default 64)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tiny", action="store_true",
                        help="a smoke-test budget: GoToLocal unless --levels, 3 episodes, 256 transitions")
    args = parser.parse_args(argv)
    if args.tiny:
        if args.levels == LEVELS:
            args.levels = ["GoToLocal"]
        args.episodes, args.steps, args.n_envs, args.chunk = 3, 256, 4, 16
    th.set_num_threads(1)

    print(f"BabyAI's bot as a DAgger expert: levels {' '.join(args.levels)}; (a) {args.episodes} episodes per level "
          f"(seeds 0..{args.episodes - 1}); (b) {args.steps} transitions per side, {args.n_envs} envs, beta "
          f"{args.beta}, seed {args.seed}, chunks of {args.chunk} vector steps", flush=True)
    success_rows: list[list[object]] = []
    for level in args.levels:
        rate, length, ms = bot_success(level, args.episodes)
        print(f"  (a) {level}: success {rate:.2f}", flush=True)
        success_rows.append([level, f"{rate:.2f}", f"{length:.1f}", f"{ms:.2f}"])
    speed_rows: list[list[object]] = []
    worst = 0.0
    for level in args.levels:
        row = labelling_speed(level, args.steps, args.n_envs, args.beta, args.chunk, args.seed)
        ratio = row.observation_rate / row.bot_rate
        worst = max(worst, ratio)
        print(f"  (b) {level}: {ratio:.2f}x", flush=True)
        speed_rows.append([level, f"{row.bot_rate:,.0f}", f"{row.observation_rate:,.0f}", f"{ratio:.2f}x",
                           f"{row.bot_episodes} / {row.observation_episodes}", row.replans, row.box_repairs,
                           row.restarts])
    print("\n(a) the bot's own success\n")
    print(markdown_table(["level", "success", "mean episode length", "ms per step (env + bot)"], success_rows))
    print(f"\n(b) collection speed, transitions/s (the same states on both sides at beta 0); target ratio <= "
          f"{TARGET:.0f}x\n")
    print(markdown_table(["level", "bot labels", "observation-only expert", "ratio (bot time / observation time)",
                          "episodes (bot / observation)", "bot replans", "boxes toggled away", "bot restarts"],
                         speed_rows))
    verdict = "met" if worst <= TARGET else "missed"
    print(f"\ntarget: labelling with the bot costs <= {TARGET:.0f}x collection with an observation-only expert: "
          f"{verdict} (worst level {worst:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
