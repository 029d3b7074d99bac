"""DAgger vs BC at equal expert labels on MazeRunner 9x9 with k = 2 goals (Dict observations).

Both arms are the same :class:`sb3_hir.dagger.DAggerTrainer` (imitation's ``bc.BC`` with a ``MultiInputPolicy``,
the same rounds, labels per round and gradient steps per round); they differ only in who acts while labels are
collected. DAgger follows a beta schedule (round 0 is the expert alone), the BC arm keeps beta = 1 in every round,
i.e. BC on expert-only data of the same size. Every step is labelled by the shortest-path expert. After each
round both policies are evaluated (deterministic actions) on the same held-out episodes.

The last block says why DAgger may not win here: how many episodes (each a new random maze) the labels came
from, and each final policy's per-step disagreement with the expert on held-out mazes, on the expert's states and
on its own. MazeRunner's observation (own cell, four wall distances, goals, time) does not show the maze, so the
right move in the dead ends where a feed-forward learner loops depends on walls out of view; labels collected
there need not transfer to new mazes (then the error on the policy's own states does not fall below BC's), while
the learner's longer episodes spend the same label budget on fewer mazes.

With ``--history 0 16`` (the default) every arm runs twice: with the memoryless learner (the observation as it is)
and with a history learner (:class:`~sb3_hir.history.HistoryWrapper` of 16 steps and
:class:`~sb3_hir.extractors.HistoryExtractor`, the same BC otherwise). The verdicts: DAgger with memory against BC
with the same learner at equal labels (beyond the spread: the sum of both standard deviations over seeds), and
DAgger with memory against 0.95x the expert's success.

    python benchmarks/bench_dagger_mazerunner.py [--rounds 6] [--steps-per-round 250] [--seeds 0 1 2]
        [--history 0 16] [--encoder gru] [--ray]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from typing import Any

import numpy as np
import torch as th
from imitation.algorithms import bc
from imitation.data import types
from imitation.util import logger as imit_logger
from stable_baselines3.common.policies import BasePolicy, MultiInputActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from sb3_hir.callbacks import evaluate_instruction_policy
from sb3_hir.dagger import DAggerCollector, DAggerTrainer, PolicyRunner
from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
from sb3_hir.experiment import arguments, markdown_table, mean_std
from sb3_hir.experiment.runner import run_all
from sb3_hir.extractors import HistoryExtractor
from sb3_hir.history import HistoryWrapper

MAZE_DIM, NUM_GOALS, TIME_LIMIT, N_ENVS = 9, 2, 100, 8


def make_venv(seed: int, history: int = 0) -> VecEnv:
    def env_fn():
        env = MazeRunnerEnv(maze_dim=MAZE_DIM, num_goals=NUM_GOALS, time_limit=TIME_LIMIT)
        return HistoryWrapper(env, length=history) if history else env

    venv = DummyVecEnv([env_fn] * N_ENVS)
    venv.seed(seed)
    return venv


def success_rate(policy, n_episodes: int, seed: int, history: int = 0) -> float:
    """Share of ``n_episodes`` held-out episodes (fixed seed) in which ``policy`` reaches both goals in order, by
    the library's evaluator (the same number of episodes from each sub-env).

    ``policy`` is a policy, or a function building one for the evaluation venv (the expert needs the venv).
    """
    venv = make_venv(seed, history)
    if not isinstance(policy, BasePolicy):
        policy = policy(venv)
    result = evaluate_instruction_policy(policy, venv, n_episodes, deterministic=True, seed=seed)
    venv.close()
    return result.success_rate


def per_step_error(policy, seed: int, own_states: bool, history: int = 0, steps: int = 300) -> float:
    """How often ``policy`` disagrees with the expert on held-out states: the expert's or its own (beta = 0)."""
    venv = make_venv(seed, history)
    collector = DAggerCollector(venv, policy, 0.0 if own_states else 1.0, None, np.random.default_rng(seed))
    expert = PolicyRunner(ShortestPathExpert(venv), N_ENVS)
    obs = collector.reset()
    for _ in range(steps):
        obs, _, dones, _ = collector.step(expert(obs))
        expert.observe_dones(dones)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trajs: list[Any] = collector.finish_round(policy="report")  # DAggerTrajectory objects
    labels = np.concatenate([t.acts for t in trajs])
    if own_states:
        return float(np.mean(np.concatenate([t.executed_acts for t in trajs]) != labels))
    states = types.DictObs.concatenate([t.obs[:-1] for t in trajs]).unwrap()
    return float(np.mean(policy.predict(states, deterministic=True)[0] != labels))


def make_trainer(venv: VecEnv, scratch: str, beta_schedule, seed: int, history: int = 0,
                 encoder: str = "gru") -> DAggerTrainer:
    th.manual_seed(seed)
    extractor: dict[str, Any] = {}
    if history:
        extractor = dict(features_extractor_class=HistoryExtractor,
                         features_extractor_kwargs=dict(keys=["obs", "goals"], encoder=encoder))
    space: Any = venv.observation_space  # the MazeRunner's Dict space
    policy = MultiInputActorCriticPolicy(space, venv.action_space, lambda _: 1e-3,
                                         net_arch=[128, 128], **extractor)
    learner = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space,
                    rng=np.random.default_rng(seed), policy=policy, batch_size=64,
                    custom_logger=imit_logger.configure(format_strs=[]))
    # The learner acts deterministically while collecting, the conditions the README's table was measured in.
    return DAggerTrainer(venv=venv, scratch_dir=scratch, rng=np.random.default_rng(seed), bc_trainer=learner,
                         beta_schedule=beta_schedule, custom_logger=learner.logger, deterministic_learner=True)


def run_round(trainer: DAggerTrainer, expert: PolicyRunner, steps: int, n_batches: int) -> tuple[int, int, int]:
    """Collect exactly ``steps`` vector steps of labels (running episodes kept as partial), then BC.

    Returns the labels collected, the steps the learner acted in, and how many of those it disagreed with the
    expert: the learner's error on its own state distribution, the thing DAgger's extra labels correct.
    """
    collector = trainer.create_trajectory_collector()
    obs = collector.reset()
    expert.reset()
    for _ in range(steps):
        obs, _, dones, _ = collector.step(expert(obs))
        expert.observe_dones(dones)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # partial episodes: labels kept, by design
        trajs: list[Any] = collector.finish_round(policy="report")  # DAggerTrajectory objects
    trainer.extend_and_update({"n_batches": n_batches, "progress_bar": False, "log_rollouts_n_episodes": 0})
    acted = np.concatenate([t.learner_mask for t in trajs])
    wrong = np.concatenate([t.executed_acts != t.acts for t in trajs]) & acted
    return len(acted), int(acted.sum()), int(wrong.sum())


ARMS = ("DAgger", "BC")


def schedule_of(arm: str):
    return (lambda r: max(0.0, 1.0 - r / 4)) if arm == "DAgger" else (lambda r: 1.0)


def run_trial(config: dict) -> dict:
    """One (seed, memory, arm) run: success after each round, labels, the learner's share and errors.

    A plain function of a plain dict, so that it runs alike in this process or as a Ray Tune trial."""
    args = argparse.Namespace(**config["options"])
    seed, history, arm = config["seed"], config["history"], config["arm"]
    th.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning, module="imitation")
    eval_seed = 10_000 + seed
    venv = make_venv(seed, history)
    expert = PolicyRunner(ShortestPathExpert(venv), N_ENVS)
    success, labels, acted, wrong = [], [], [], []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        trainer = make_trainer(venv, scratch, schedule_of(arm), seed, history, args.encoder)
        for _ in range(args.rounds):
            n, n_acted, n_wrong = run_round(trainer, expert, args.steps_per_round, args.batches_per_round)
            labels.append(n)
            acted.append(n_acted)
            wrong.append(n_wrong)
            success.append(success_rate(trainer.policy, args.eval_episodes, eval_seed, history))
        final = [len(trainer.load_demos()), per_step_error(trainer.policy, eval_seed, False, history),
                 per_step_error(trainer.policy, eval_seed, True, history)]
    return dict(success=success, labels=labels, acted=acted, wrong=wrong, final=final,
                seconds=time.perf_counter() - t0)


def expert_trial(config: dict) -> dict:
    args = argparse.Namespace(**config["options"])
    return dict(success=success_rate(ShortestPathExpert, args.eval_episodes, 10_000 + config["seed"], 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps-per-round", type=int, default=250, help="vector steps (x 8 envs = labels)")
    parser.add_argument("--batches-per-round", type=int, default=1000)
    arguments.add_eval_episodes(parser, 200)
    arguments.add_seeds(parser, [0, 1, 2])
    arguments.add_history(parser, [0, 16], help="window lengths to compare (0: the memoryless learner)")
    parser.add_argument("--encoder", default="gru", choices=["gru", "conv"], help="HistoryExtractor encoder")
    arguments.add_ray(parser, "(seed, memory, arm) runs", cpus_per_trial=False)
    args = parser.parse_args()
    th.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning, module="imitation")  # its DictObs/BC chatter
    start = time.perf_counter()
    options = {k: v for k, v in vars(args).items() if k not in arguments.RAY_OPTIONS}
    runs = [(seed, h, arm) for seed in args.seeds for h in args.history for arm in ARMS]
    configs = [dict(seed=seed, history=h, arm=arm, options=options) for seed, h, arm in runs]
    outs = list(run_all(run_trial, configs, use_ray=args.ray, address=args.ray_address, name="bench_dagger_mazerunner"))
    experts = list(run_all(expert_trial, [dict(seed=seed, options=options) for seed in args.seeds], use_ray=False))
    by = {(h, arm): [out for (_, h2, arm2), out in zip(runs, outs, strict=True) if (h2, arm2) == (h, arm)]
          for h in args.history for arm in ARMS}
    expert = np.array([e["success"] for e in experts])
    print(f"MazeRunner {MAZE_DIM}x{MAZE_DIM}, k={NUM_GOALS}, time_limit={TIME_LIMIT}, {N_ENVS} envs; "
          f"{args.steps_per_round * N_ENVS} labels and {args.batches_per_round} BC batches (64) per round; "
          f"success over {args.eval_episodes} held-out episodes; mean ± std over seeds {args.seeds}; "
          f"history encoder {args.encoder}")
    print(f"shortest-path expert success: {mean_std(expert, 3)}")

    def name(h: int) -> str:
        return f"history {h}" if h else "memoryless"

    header = ["round", "beta", "labels", *(f"{arm} ({name(h)})" for h in args.history for arm in ARMS)]
    rows = []
    for r in range(args.rounds):
        n_labels = int(np.sum(by[(args.history[0], "DAgger")][0]["labels"][: r + 1]))
        cells = []
        for h in args.history:
            for arm in ARMS:
                assert int(np.sum(by[(h, arm)][0]["labels"][: r + 1])) == n_labels  # equal labels, every arm
                rates = np.array([out["success"][r] for out in by[(h, arm)]])
                cells.append(f"{mean_std(rates, 3)}")
        rows.append([r, f"{schedule_of('DAgger')(r):.2f}", n_labels, *cells])
    print()
    print(markdown_table(header, rows, "l"))
    print("\nper memory, DAgger's labels collected where the learner acted / of those, disagreed with the expert:")
    for h in args.history:
        outs_h = by[(h, "DAgger")]
        acted = np.sum([o["acted"] for o in outs_h], axis=0)
        wrong = np.sum([o["wrong"] for o in outs_h], axis=0)
        labels = np.sum([o["labels"] for o in outs_h], axis=0)
        text = "  ".join(f"r{r}: {acted[r] / labels[r]:.2f}/{(wrong[r] / acted[r]) if acted[r] else 0:.3f}"
                         for r in range(args.rounds))
        print(f"  {name(h):<12} {text}")
    print("final policies, mean over seeds: episodes behind the labels / held-out per-step error on expert states / "
          "on its own states; training seconds")
    for h in args.history:
        for arm in ARMS:
            final = np.mean([o["final"] for o in by[(h, arm)]], axis=0)
            sec = np.mean([o["seconds"] for o in by[(h, arm)]])
            print(f"  {arm} ({name(h)}):{'':<4}{final[0]:.0f} / {final[1]:.3f} / {final[2]:.3f}; {sec:.0f} s")
    last = args.rounds - 1
    for h in args.history:
        if not h:
            continue
        dagger = np.array([o["success"][last] for o in by[(h, "DAgger")]])
        bc_ = np.array([o["success"][last] for o in by[(h, "BC")]])
        diff, spread = dagger.mean() - bc_.mean(), dagger.std() + bc_.std()
        print(f"{'PASS' if diff > spread else 'MISS'}  DAgger ({name(h)}) beats BC ({name(h)}) at equal labels "
              f"(round {last}): {diff:+.3f} (spread {spread:.3f})")
        ratio = dagger.mean() / max(expert.mean(), 1e-9)
        print(f"{'PASS' if ratio >= 0.95 else 'MISS'}  DAgger ({name(h)}) >= 0.95x the expert's success: "
              f"{ratio:.3f}x ({dagger.mean():.3f} vs {expert.mean():.3f})")
    print(f"total time {time.perf_counter() - start:.0f}s")


if __name__ == "__main__":
    main()
