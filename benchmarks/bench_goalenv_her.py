"""Single-goal GoalEnvs (k = 1): our HindsightInstructionReplayBuffer against SB3's HerReplayBuffer, same algorithm.

Same GoalEnv, algorithm, hyperparameters, network sizes, seeds and budget; only the buffer differs. Ours is, with
``--ours native`` (the default), ``sb3_hir.HerReplayBuffer`` on the raw GoalEnv with HER's own
``replay_buffer_kwargs``: only the class is swapped, the policy sees the same keys, rewards are the env's
``compute_reward``, and the buffer's default ``terminate_on_success=None`` (with SAC's continuous actions: HER's
recorded dones; ``--terminate-on-success true`` serves relabeled successes as terminal where the env terminates
on success, which needs a success radius to find first reaches: PointMaze's 0.45 is hard-coded, so there the
recorded dones are served either way). With ``--ours instruction``, the earlier adapter:

* HIR (instruction): the env's own desired goal as a one-goal instruction (``InstructionWrapper`` +
  ``DesiredGoalSampler``, the env's own success test), :class:`HindsightInstructionReplayBuffer` with strategy
  ``"all"`` (with one goal this is HER's ``future`` rule: one fresh goal per sampled transition from the steps at or
  after it), ``relabel_ratio=0.8`` (HER's ``n_sampled_goal=4``), the ``distance-threshold`` goal spec for continuous
  goals and ``exact`` for bits; the policy sees ``"obs"`` and ``"goals"``.
* HER: the raw GoalEnv, ``HerReplayBuffer(goal_selection_strategy="future", n_sampled_goal=4)``; the policy sees
  ``observation``, ``achieved_goal`` and ``desired_goal`` (SB3's usual HER setup, its own reward scale).

Envs (``--env``):

* ``planar`` (SAC): ``PlanarReach-v0``, a cheap continuous GoalEnv (``sb3_hir.testing.PointReachEnv``: a point moved
  by velocity commands in the unit square, success within 0.1 of the goal, sparse 0/1 reward, episode ends on
  success).
* ``bitflip`` (DQN): SB3's own ``BitFlippingEnv`` (``--n-bits``, discrete actions, MultiBinary goals), its
  canonical HER example; episodes of ``n_bits`` steps, terminated on success.
* any gymnasium-robotics GoalEnv id (SAC), e.g. ``PointMaze_UMaze-v3`` (made with ``continuing_task=False`` on both
  sides, so that both end the episode at the goal).

Each run is evaluated at every budget of ``--budgets`` inside the same training run (a callback), with
``--eval-episodes`` deterministic episodes on fixed seeds; success = the env's own test held at some step. Prints
mean ± std over seeds per budget, and the target check: ours not below HER by more than the spread at every budget.
The harness (:mod:`sb3_hir.experiment`) runs the (seed, buffer) pairs and renders the table; ``--records FILE``
keeps every run's numbers as JSON.

With ``--ray`` the (seed, buffer) runs are Ray Tune trials (:mod:`sb3_hir.experiment.runner`: one torch thread each,
``--cpus-per-trial`` CPUs reserved, a local Ray instance or ``--ray-address``), in parallel; each run is seeded as
in the sequential loop, so the printed lines and table are the same, printed once all trials are done.

Usage: ``python benchmarks/bench_goalenv_her.py [--env planar|bitflip|<GoalEnv id>] [--budgets 2000 4000 8000]
[--seeds 0 1 2] [--max-episode-steps 50] [--eval-episodes 50] [--ray [--ray-address auto] [--cpus-per-trial 1]]
[--records FILE]``
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3 import DQN, SAC, HerReplayBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import buffers as hir
from sb3_hir import plugins
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.experiment import (
    BenchmarkSpec,
    BudgetCallback,
    TableLayout,
    arguments,
    episode_evaluator,
    mean_std,
    run_benchmark,
    timed_run,
)
from sb3_hir.experiment.table import render_comparison
from sb3_hir.extractors import KeySelectExtractor
from sb3_hir.instruction import DesiredGoalSampler, InstructionWrapper

PLANAR_ID = "PlanarReach-v0"


#: A point in ``[-1, 1]^2`` moved by ``0.1 * action``, success within 0.1 of a goal drawn more than 0.2 away, sparse
#: 0/1 reward (as PointMaze's), the episode ending on success. Until issue 46 this was a class of its own here;
#: tests/testing/test_envs.py checks that these settings reproduce it byte for byte, so earlier results still stand.
PLANAR_KWARGS: dict[str, Any] = dict(step_size=0.1, distance_threshold=0.1, reward="0/1", dtype=np.float64,
                                     min_goal_distance=0.2)

if PLANAR_ID not in gym.registry:
    gym.register(PLANAR_ID, entry_point="sb3_hir.testing:PointReachEnv", kwargs=PLANAR_KWARGS)


BITFLIP = "bitflip"
PLANAR = "planar"


def env_id(args: argparse.Namespace) -> str:
    return PLANAR_ID if args.env == PLANAR else args.env


def raw_env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(max_episode_steps=args.max_episode_steps)
    if args.env.startswith(("PointMaze", "AntMaze")):
        kwargs["continuing_task"] = False
    return kwargs


def make_raw(args: argparse.Namespace) -> gym.Env:
    """The GoalEnv as HER sees it."""
    if args.env == BITFLIP:
        return BitFlippingEnv(n_bits=args.n_bits, continuous=False, max_steps=args.n_bits)
    return gym.make(env_id(args), **raw_env_kwargs(args))


def make_instruction(args: argparse.Namespace) -> gym.Env:
    """The same GoalEnv as a one-goal instruction env (its own goal, its own success test)."""
    if args.env == BITFLIP:
        return InstructionWrapper(make_raw(args), DesiredGoalSampler(), num_goals=1)
    return plugins.create("env", "goalenv", env_id=env_id(args), **raw_env_kwargs(args))


def build(agent: str, args: argparse.Namespace, seed: int) -> OffPolicyAlgorithm:
    common: dict[str, Any] = dict(
        learning_rate=args.learning_rate, buffer_size=max(args.budgets[-1], 1000),
        learning_starts=args.learning_starts, batch_size=args.batch_size, gamma=args.gamma, train_freq=1,
        gradient_steps=args.gradient_steps, seed=seed, device="cpu",
    )
    net: dict[str, Any] = dict(net_arch=[args.hidden, args.hidden])
    if agent == "HIR" and args.ours == "native":
        venv = make_vec_env(lambda: make_raw(args), n_envs=args.n_envs, seed=seed)
        common.update(
            replay_buffer_class=hir.HerReplayBuffer,
            replay_buffer_kwargs=dict(goal_selection_strategy="future", n_sampled_goal=4,
                                      terminate_on_success={"auto": None, "false": False, "true": True}[
                                          args.terminate_on_success]),
        )
    elif agent == "HIR":
        venv = make_vec_env(lambda: make_instruction(args), n_envs=args.n_envs, seed=seed)
        if args.env == BITFLIP:
            spec: Any = "exact"
        else:
            spec = plugins.create("goal_spec", "distance-threshold", env=cast(DummyVecEnv, venv).envs[0])
        common.update(
            replay_buffer_class=HindsightInstructionReplayBuffer,
            replay_buffer_kwargs=dict(goal_spec=spec, hindsight_goals=args.strategy, relabel_ratio=args.relabel_ratio,
                                      goal_step=args.goal_selection, seed=seed),
        )
        net.update(features_extractor_class=KeySelectExtractor, features_extractor_kwargs=dict(keys=["obs", "goals"]))
    else:
        venv = make_vec_env(lambda: make_raw(args), n_envs=args.n_envs, seed=seed)
        common.update(
            replay_buffer_class=HerReplayBuffer,
            replay_buffer_kwargs=dict(goal_selection_strategy="future", n_sampled_goal=4),
        )
    if args.env == BITFLIP:
        return DQN("MultiInputPolicy", venv, exploration_fraction=args.exploration_fraction,
                   target_update_interval=args.target_update_interval, policy_kwargs=net, **common)
    return SAC("MultiInputPolicy", venv, tau=0.05, ent_coef=args.ent_coef, policy_kwargs=net, **common)


def evaluator(agent: str, args: argparse.Namespace, seed: int) -> Any:
    """Fraction of episodes in which the env's own success test held at some step (same seeds for both agents)."""
    instruction = agent == "HIR" and args.ours == "instruction"

    def succeeded(info: Mapping[str, Any]) -> float:
        own = info.get("env_is_success", info.get("is_success", info.get("success", False)))
        return float(bool(own) or (instruction and bool(info["is_success"])))

    return episode_evaluator(lambda: make_instruction(args) if instruction else make_raw(args), args.eval_episodes,
                             seed, seed_base=100_000, metrics={"success_rate": succeeded}, any_step=True)


#: The buffer named in a side's label -> the agent ``build`` makes.
AGENTS = {"HIR buffer": "HIR", "HerReplayBuffer": "HER"}


def train(config: dict[str, Any]) -> dict[int, dict[str, float]]:
    """One training run of side ``config["side"]`` (``"<algorithm> + HIR buffer"`` or ``"... + HerReplayBuffer"``):
    its success rate at each budget."""
    args = argparse.Namespace(**config["options"])
    agent, seed = AGENTS[config["side"].split(" + ")[1]], config["seed"]
    model = build(agent, args, seed)
    callback = BudgetCallback(config["budgets"], evaluator(agent, args, seed))
    model.learn(total_timesteps=config["budgets"][-1], callback=callback)
    return callback.results


def run_seed(config: dict[str, Any]) -> dict[str, Any]:
    """One run (a plain function of a plain dict, alike in this process or as a Ray Tune trial), timed."""
    return timed_run(train, config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default=PLANAR, help="planar, bitflip, or a GoalEnv id such as PointMaze_UMaze-v3")
    arguments.add_budgets(parser, [2000, 4000, 8000], help=arguments.BUDGETS_HELP)
    arguments.add_seeds(parser, [0, 1, 2])
    parser.add_argument("--max-episode-steps", type=int, default=50)
    parser.add_argument("--n-bits", type=int, default=15, help="bitflip: number of bits (and episode length)")
    arguments.add_n_envs(parser, 1)
    arguments.add_learner(parser, helps={"gradient_steps": "gradient steps per vector step"}, gradient_steps=1,
                           learning_starts=500, learning_rate=1e-3, gamma=0.95, batch_size=128)
    parser.add_argument("--hidden", type=int, default=64)
    arguments.add_learner(parser, helps={"exploration_fraction": "DQN only"}, exploration_fraction=0.1)
    parser.add_argument("--target-update-interval", type=int, default=500, help="DQN only")
    parser.add_argument("--ent-coef", default="auto", help="SAC only: its ent_coef (same for both buffers)")
    arguments.add_eval_episodes(parser, 50)
    parser.add_argument("--ours", choices=["native", "instruction"], default="native",
                        help="native: sb3_hir.HerReplayBuffer on the raw GoalEnv, only the class swapped; instruction: "
                        "the InstructionWrapper adapter (the options below apply to it)")
    parser.add_argument("--terminate-on-success", choices=["auto", "false", "true"], default="auto",
                        help="native: the buffer's terminate_on_success (auto = its default, None; false = HER's "
                        "recorded dones; true = the env's terminations), to isolate what terminations do")
    parser.add_argument("--strategy", choices=["all", "some", "none"], default="all",
                        help="HIR strategy; with one goal 'all' is HER's future rule, 'some' keeps half the draws")
    parser.add_argument("--goal-selection", choices=["future", "episode"], default="future")
    parser.add_argument("--relabel-ratio", type=float, default=0.8, help="HIR relabel_ratio (HER: n_sampled_goal=4)")
    arguments.add_threads(parser)
    arguments.add_ray(parser, "(seed, buffer) pairs")
    arguments.add_records(parser)
    args = parser.parse_args()
    if args.ray and args.threads != 1:
        parser.error("--threads: Ray trials use one torch thread each; use --cpus-per-trial to reserve cores")
    args.budgets = sorted(args.budgets)
    th.set_num_threads(args.threads)

    algo = "DQN" if args.env == BITFLIP else "SAC"
    ours, hers = f"{algo} + HIR buffer", f"{algo} + HerReplayBuffer"
    options = {k: v for k, v in vars(args).items() if k not in arguments.RAY_OPTIONS}
    label = f"bitflip n_bits={args.n_bits}" if args.env == BITFLIP else f"{env_id(args)} max_episode_steps=" \
        f"{args.max_episode_steps}"
    layout = TableLayout(row="buffer", metrics={"success_rate": "success"}, digits=3,
                         comparison=[ours, hers, "ours - HER"])
    spec = BenchmarkSpec(name="bench_goalenv_her", env=label, algorithm=algo, sides=[ours, hers], seeds=args.seeds,
                         budgets=args.budgets, layout=layout)
    records = run_benchmark(spec, run_seed, options, use_ray=args.ray, cpus_per_trial=args.cpus_per_trial,
                            address=args.ray_address)
    if args.records:
        records.save(args.records)
    print()
    print(f"{label} (k=1); {len(args.seeds)} seeds, {args.eval_episodes} deterministic eval episodes per seed "
          "and budget")
    table, all_met = render_comparison(records, ours, hers, difference="ours - HER")
    print(table)  # as `python -m sb3_hir.experiment render` prints it from --records
    print("train seconds: " + ", ".join(f"{side} {mean_std(records.seconds(side), 0)}" for side in (ours, hers)))
    print(f"target 'ours not below HER beyond the spread at every budget': {'met' if all_met else 'MISSED'}")

if __name__ == "__main__":
    main()
