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
PPO's budget. The harness (:mod:`sb3_hir.experiment`) runs the (seed, arm) pairs, evaluates at the budgets and
renders the table; ``--records FILE`` keeps every run's numbers as JSON.

Usage: ``python benchmarks/bench_warm_start.py [--seeds 0 1 2] [--budgets 25000 50000 100000] [--labels 8000]
[--ray] [--records FILE]``
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np
import torch as th
from imitation.algorithms import bc
from imitation.data import rollout
from imitation.util import logger as imit_logger
from research.maze import add_maze
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
from sb3_hir.experiment import (
    BenchmarkSpec,
    BudgetCallback,
    TableLayout,
    arguments,
    eval_seed,
    instruction_evaluator,
    mean_and_std,
    render_table,
    run_benchmark,
    timed_run,
)
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


def evaluator(args: argparse.Namespace, seed: int) -> Any:
    """The run's held-out evaluation: 10 envs on its evaluation seed, the same for both arms."""
    return instruction_evaluator(lambda: make_venv(args, eval_seed(seed), 10), args.eval_episodes, eval_seed(seed))


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


def train(config: dict[str, Any]) -> dict[int, dict[str, float]]:
    """One PPO run of arm ``config["side"]``: its metrics at each budget (and at 0, the BC policy, when warm)."""
    args = argparse.Namespace(**config["options"])
    seed, arm = config["seed"], config["side"]
    th.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning, module="imitation")
    venv = make_venv(args, seed, args.n_envs)
    model = PPO("MultiInputPolicy", venv, learning_rate=args.learning_rate, n_steps=args.n_steps, batch_size=256,
                gamma=args.gamma, ent_coef=args.ent_coef, policy_kwargs=policy_kwargs(args), seed=seed, verbose=0,
                device="cpu")
    curve: dict[int, dict[str, float]] = {}
    callbacks: list[BaseCallback] = []
    evaluate = evaluator(args, seed)
    if arm == "warm":
        model.policy.load_state_dict(bc_policy(args, seed, venv).state_dict())
        curve[0] = dict(evaluate(model.policy))
        callbacks.append(CriticWarmup(args.critic_warmup))
    evaluations = BudgetCallback(config["budgets"], evaluate)
    model.learn(config["budgets"][-1], callback=[*callbacks, evaluations])
    curve.update(evaluations.results)
    venv.close()
    return curve


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """One run (a plain function of a plain dict, alike in this process or as a Ray Tune trial), timed."""
    return timed_run(train, config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_seeds(parser, [0, 1, 2])
    arguments.add_budgets(parser, [25_000, 50_000, 100_000])
    add_maze(parser, maze_dim=9, goals=2, time_limit=100)
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
    arguments.add_records(parser)
    args = parser.parse_args()
    args.budgets = sorted(args.budgets)
    th.set_num_threads(1)
    options = {k: v for k, v in vars(args).items() if k not in arguments.RAY_OPTIONS}
    spec = BenchmarkSpec(
        name="bench_warm_start", algorithm="PPO", sides=ARMS, seeds=args.seeds, budgets=args.budgets,
        env=f"MazeRunner({args.maze_dim}x{args.maze_dim}, k={args.goals}, time_limit={args.time_limit})",
        layout=TableLayout(row="start", seconds_column="seconds"))
    start = time.perf_counter()
    records = run_benchmark(spec, run_trial, options, use_ray=args.ray, address=args.ray_address)
    if args.records:
        records.save(args.records)
    print(f"PPO on {spec.env} with "
          f"HistoryWrapper({args.history}) + HistoryExtractor({args.encoder}); warm = BC on {args.labels} expert "
          f"labels ({args.bc_batches} batches), critic-only for the first {args.critic_warmup} steps; "
          f"{args.eval_episodes} deterministic eval episodes; mean ± std over seeds {args.seeds}")
    print(render_table(records))
    last = args.budgets[-1]
    (warm, warm_std), (scratch, scratch_std) = (mean_and_std(records.values(arm, last, "success_rate"))
                                                for arm in ("warm", "scratch"))
    diff, spread = warm - scratch, warm_std + scratch_std
    print(f"{'PASS' if diff > spread else 'MISS'}  warm start beats scratch on success at {last} steps: "
          f"{diff:+.3f} (spread {spread:.3f}); total {(time.perf_counter() - start) / 60:.1f} min")

if __name__ == "__main__":
    main()
