"""Does a BC-trained history policy give PPO a head start on MazeRunner? Warm start against training from scratch.

The recipe (README, "Memory"): imitation's ``bc.BC`` trains an ``ActorCriticPolicy`` with
:class:`~sb3_hir.extractors.HistoryExtractor` on expert labels from a :class:`~sb3_hir.history.HistoryWrapper` env;
SB3's ``PPO`` is built with the same ``policy_kwargs`` on the same env, and the BC weights are loaded into
``model.policy`` (``load_state_dict``: same class, same shapes). PPO then learns from the env's sparse reward. The
value head is untrained at the start, so the first ``--critic-warmup`` steps train only the critic (the actor and the
shared extractor frozen), and PPO then runs unchanged.

Both arms use the same PPO hyperparameters, seeds and env streams and the same history policy; the scratch arm
starts from random weights. Each run is evaluated at every budget of ``--budgets`` inside one training run
(deterministic policy, fixed held-out seeds); the warm arm is also evaluated before PPO starts (budget 0), which
is the BC policy itself. The BC labels come from the shortest-path expert (``--labels`` of them), not counted in
PPO's budget.

Usage: ``python benchmarks/bench_warm_start.py [--seeds 0 1 2] [--budgets 25000 50000 100000] [--labels 8000]
[--ray]``
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np
import torch as th
from bench_hir_learning import BudgetEval
from evaluation import goals_and_success
from imitation.algorithms import bc
from imitation.data import rollout
from imitation.util import logger as imit_logger
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
from sb3_hir.experiment import arguments
from sb3_hir.experiment.runner import run_all
from sb3_hir.extractors import HistoryExtractor
from sb3_hir.history import HistoryWrapper

ARMS = ("scratch", "warm")


def make_venv(args: argparse.Namespace, seed: int, n_envs: int):
    def env_fn():
        env = MazeRunnerEnv(maze_dim=args.maze_dim, num_goals=args.goals, time_limit=args.time_limit)
        return HistoryWrapper(env, length=args.history)

    return make_vec_env(env_fn, n_envs=n_envs, seed=seed, vec_env_cls=DummyVecEnv)


def policy_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return dict(net_arch=[128, 128], features_extractor_class=HistoryExtractor,
                features_extractor_kwargs=dict(keys=["obs", "goals"], encoder=args.encoder))


def evaluate(policy: Any, args: argparse.Namespace, seed: int) -> tuple[float, float]:
    return goals_and_success(policy, make_venv(args, 10_000 + seed, 10), args.eval_episodes)


def bc_policy(args: argparse.Namespace, seed: int, venv: Any) -> Any:
    """imitation's BC on ``args.labels`` shortest-path expert steps, the same policy class PPO builds."""
    from stable_baselines3.common.policies import MultiInputActorCriticPolicy

    demo_venv = make_venv(args, 20_000 + seed, 8)
    trajs = rollout.generate_trajectories(ShortestPathExpert(demo_venv), demo_venv,
                                          rollout.make_min_timesteps(args.labels), rng=np.random.default_rng(seed))
    transitions = rollout.flatten_trajectories(trajs)
    th.manual_seed(seed)
    policy = MultiInputActorCriticPolicy(venv.observation_space, venv.action_space, lambda _: 1e-3,
                                         **policy_kwargs(args))
    trainer = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space, policy=policy,
                    demonstrations=transitions, rng=np.random.default_rng(seed), batch_size=64, device="cpu",
                    custom_logger=imit_logger.configure(format_strs=[]))
    trainer.train(n_batches=args.bc_batches, progress_bar=False, log_rollouts_n_episodes=0)
    return trainer.policy


class CriticWarmup(BaseCallback):
    """Train only the value head for the first ``steps`` env steps (the BC actor and extractor frozen)."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.frozen: list[th.nn.Parameter] = []

    def _on_training_start(self) -> None:
        if self.steps > 0:
            policy = self.model.policy
            self.frozen = [p for name, p in policy.named_parameters() if not name.startswith("value_net")
                           and not name.startswith("mlp_extractor.value_net")]
            for p in self.frozen:
                p.requires_grad_(False)

    def _on_rollout_end(self) -> None:
        if self.frozen and self.num_timesteps >= self.steps:
            for p in self.frozen:
                p.requires_grad_(True)
            self.frozen = []

    def _on_step(self) -> bool:
        return True


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    args = argparse.Namespace(**config["options"])
    seed, arm = config["seed"], config["arm"]
    th.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning, module="imitation")
    venv = make_venv(args, seed, args.n_envs)
    model = PPO("MultiInputPolicy", venv, learning_rate=args.learning_rate, n_steps=args.n_steps, batch_size=256,
                gamma=args.gamma, ent_coef=args.ent_coef, policy_kwargs=policy_kwargs(args), seed=seed, verbose=0,
                device="cpu")
    curve: dict[int, tuple[float, float]] = {}
    callbacks: list[BaseCallback] = []
    t0 = time.perf_counter()
    if arm == "warm":
        model.policy.load_state_dict(bc_policy(args, seed, venv).state_dict())
        curve[0] = evaluate(model.policy, args, seed)
        callbacks.append(CriticWarmup(args.critic_warmup))
    evaluations = BudgetEval(args.budgets, lambda m: evaluate(m.policy, args, seed))
    model.learn(args.budgets[-1], callback=[*callbacks, evaluations])
    curve.update(evaluations.results)
    venv.close()
    return {"curve": {str(b): list(v) for b, v in curve.items()}, "seconds": time.perf_counter() - t0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_seeds(parser, [0, 1, 2])
    arguments.add_budgets(parser, [25_000, 50_000, 100_000])
    arguments.add_maze(parser, maze_dim=9, goals=2, time_limit=100)
    arguments.add_history(parser, 16)
    parser.add_argument("--encoder", default="gru", choices=["gru", "conv"])
    parser.add_argument("--labels", type=int, default=8_000, help="expert steps BC trains on (warm arm)")
    parser.add_argument("--bc-batches", type=int, default=3_000)
    parser.add_argument("--critic-warmup", type=int, default=8_192, help="env steps training only the critic")
    arguments.add_n_envs(parser, 8)
    parser.add_argument("--n-steps", type=int, default=256)
    arguments.add_learner(parser, learning_rate=1e-4, gamma=0.97)
    parser.add_argument("--ent-coef", type=float, default=0.0)
    arguments.add_eval_episodes(parser, 50)
    arguments.add_ray(parser, "(seed, arm) runs", cpus_per_trial=False)
    args = parser.parse_args()
    args.budgets = sorted(args.budgets)
    th.set_num_threads(1)
    options = {k: v for k, v in vars(args).items() if k not in arguments.RAY_OPTIONS}
    runs = [(seed, arm) for seed in args.seeds for arm in ARMS]
    start = time.perf_counter()
    outs = list(run_all(run_trial, [dict(seed=s, arm=a, options=options) for s, a in runs], use_ray=args.ray,
                        address=args.ray_address, name="bench_warm_start"))
    print(f"PPO on MazeRunner({args.maze_dim}x{args.maze_dim}, k={args.goals}, time_limit={args.time_limit}) with "
          f"HistoryWrapper({args.history}) + HistoryExtractor({args.encoder}); warm = BC on {args.labels} expert "
          f"labels ({args.bc_batches} batches), critic-only for the first {args.critic_warmup} steps; "
          f"{args.eval_episodes} deterministic eval episodes; mean ± std over seeds {args.seeds}")
    budgets = [0, *args.budgets]
    print("| start | " + " | ".join(f"{b} steps: goals / success" for b in budgets) + " | seconds |")
    print("|---|" + "---:|" * (len(budgets) + 1))
    final = {}
    for arm in ARMS:
        per = [out for (_, a), out in zip(runs, outs, strict=True) if a == arm]
        cells = []
        for b in budgets:
            values = np.array([out["curve"][str(b)] for out in per if str(b) in out["curve"]])
            if not len(values):
                cells.append("-")
                continue
            (g, s_), (gs, ss) = values.mean(axis=0), values.std(axis=0)
            cells.append(f"{g:.2f} ± {gs:.2f} / {s_:.2f} ± {ss:.2f}")
        final[arm] = np.array([out["curve"][str(args.budgets[-1])][1] for out in per])
        print(f"| {arm} | " + " | ".join(cells) + f" | {np.mean([o['seconds'] for o in per]):.0f} |")
    diff = final["warm"].mean() - final["scratch"].mean()
    spread = final["warm"].std() + final["scratch"].std()
    print(f"{'PASS' if diff > spread else 'MISS'}  warm start beats scratch on success at {args.budgets[-1]} steps: "
          f"{diff:+.3f} (spread {spread:.3f}); total {(time.perf_counter() - start) / 60:.1f} min")


if __name__ == "__main__":
    main()
