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

    python benchmarks/bench_dagger_mazerunner.py [--rounds 6] [--steps-per-round 250] [--seeds 0 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings

import numpy as np
import torch as th
from imitation.algorithms import bc
from imitation.data import types
from imitation.util import logger as imit_logger
from stable_baselines3.common.policies import BasePolicy, MultiInputActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from sb3_hir.dagger import DAggerCollector, DAggerTrainer, PolicyRunner
from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert

MAZE_DIM, NUM_GOALS, TIME_LIMIT, N_ENVS = 9, 2, 100, 8


def make_venv(seed: int) -> VecEnv:
    venv = DummyVecEnv([lambda: MazeRunnerEnv(maze_dim=MAZE_DIM, num_goals=NUM_GOALS, time_limit=TIME_LIMIT)] * N_ENVS)
    venv.seed(seed)
    return venv


def success_rate(policy, n_episodes: int, seed: int) -> float:
    """Share of ``n_episodes`` held-out episodes (fixed seed) in which ``policy`` reaches both goals in order.

    ``policy`` is a policy, or a function building one for the evaluation venv (the expert needs the venv).
    """
    venv = make_venv(seed)
    if not isinstance(policy, BasePolicy):
        policy = policy(venv)
    runner = PolicyRunner(policy, N_ENVS, deterministic=True)
    obs = venv.reset()
    successes: list[bool] = []
    while len(successes) < n_episodes:
        obs, _, dones, infos = venv.step(runner(obs))
        runner.observe_dones(dones)
        successes.extend(bool(infos[i]["is_success"]) for i in np.flatnonzero(dones))
    venv.close()
    return float(np.mean(successes[:n_episodes]))


def per_step_error(policy, seed: int, own_states: bool, steps: int = 300) -> float:
    """How often ``policy`` disagrees with the expert on held-out states: the expert's or its own (beta = 0)."""
    venv = make_venv(seed)
    collector = DAggerCollector(venv, policy, 0.0 if own_states else 1.0, None, np.random.default_rng(seed))
    expert = PolicyRunner(ShortestPathExpert(venv), N_ENVS)
    obs = collector.reset()
    for _ in range(steps):
        obs, _, dones, _ = collector.step(expert(obs))
        expert.observe_dones(dones)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trajs = collector.finish_round(policy="report")
    labels = np.concatenate([t.acts for t in trajs])
    if own_states:
        return float(np.mean(np.concatenate([t.executed_acts for t in trajs]) != labels))
    states = types.DictObs.concatenate([t.obs[:-1] for t in trajs]).unwrap()
    return float(np.mean(policy.predict(states, deterministic=True)[0] != labels))


def make_trainer(venv: VecEnv, scratch: str, beta_schedule, seed: int) -> DAggerTrainer:
    th.manual_seed(seed)
    policy = MultiInputActorCriticPolicy(venv.observation_space, venv.action_space, lambda _: 1e-3,
                                         net_arch=[128, 128])
    learner = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space,
                    rng=np.random.default_rng(seed), policy=policy, batch_size=64,
                    custom_logger=imit_logger.configure(format_strs=[]))
    return DAggerTrainer(venv=venv, scratch_dir=scratch, rng=np.random.default_rng(seed), bc_trainer=learner,
                         beta_schedule=beta_schedule, custom_logger=learner.logger)


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
        trajs = collector.finish_round(policy="report")
    trainer.extend_and_update({"n_batches": n_batches, "progress_bar": False, "log_rollouts_n_episodes": 0})
    acted = np.concatenate([t.learner_mask for t in trajs])
    wrong = np.concatenate([t.executed_acts != t.acts for t in trajs]) & acted
    return len(acted), int(acted.sum()), int(wrong.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps-per-round", type=int, default=250, help="vector steps (x 8 envs = labels)")
    parser.add_argument("--batches-per-round", type=int, default=1000)
    parser.add_argument("--eval-episodes", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    th.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning, module="imitation")  # its DictObs/BC chatter
    start = time.perf_counter()
    arms = {"DAgger": lambda r: max(0.0, 1.0 - r / 4), "BC (expert only)": lambda r: 1.0}
    table = {arm: np.zeros((len(args.seeds), args.rounds)) for arm in arms}
    labels = {arm: np.zeros(args.rounds, dtype=int) for arm in arms}
    acted, wrong = np.zeros(args.rounds, dtype=int), np.zeros(args.rounds, dtype=int)
    expert_rate = []
    final = {arm: np.zeros((len(args.seeds), 3)) for arm in arms}  # episodes, error on expert / own states
    for s, seed in enumerate(args.seeds):
        eval_seed = 10_000 + seed
        expert_rate.append(success_rate(ShortestPathExpert, args.eval_episodes, eval_seed))
        for arm, schedule in arms.items():
            venv = make_venv(seed)
            expert = PolicyRunner(ShortestPathExpert(venv), N_ENVS)
            with tempfile.TemporaryDirectory() as scratch:
                trainer = make_trainer(venv, scratch, schedule, seed)
                for r in range(args.rounds):
                    n, n_acted, n_wrong = run_round(trainer, expert, args.steps_per_round, args.batches_per_round)
                    labels[arm][r] += n
                    if arm == "DAgger":
                        acted[r] += n_acted
                        wrong[r] += n_wrong
                    table[arm][s, r] = success_rate(trainer.policy, args.eval_episodes, eval_seed)
                final[arm][s] = (len(trainer.load_demos()), per_step_error(trainer.policy, eval_seed, False),
                                 per_step_error(trainer.policy, eval_seed, True))
    print(f"MazeRunner {MAZE_DIM}x{MAZE_DIM}, k={NUM_GOALS}, time_limit={TIME_LIMIT}, {N_ENVS} envs; "
          f"{args.steps_per_round * N_ENVS} labels and {args.batches_per_round} BC batches (64) per round; "
          f"success over {args.eval_episodes} held-out episodes, mean over seeds {args.seeds}")
    print(f"shortest-path expert success: {np.mean(expert_rate):.3f}")
    schedule = arms["DAgger"]
    n_eval = args.eval_episodes * len(args.seeds)
    print(f"{'round':>5} {'beta':>5} {'labels':>7} {'DAgger':>14} {'BC':>14} {'learner acted':>14} "
          f"{'disagreed':>10}")
    for r in range(args.rounds):
        n_labels = labels["DAgger"][: r + 1].sum() // len(args.seeds)
        assert n_labels == labels["BC (expert only)"][: r + 1].sum() // len(args.seeds)
        cells = []
        for arm in arms:
            p = table[arm][:, r].mean()
            cells.append(f"{p:.3f} +- {np.sqrt(p * (1 - p) / n_eval):.3f}")
        share = acted[r] / labels["DAgger"][r]
        disagreed = f"{wrong[r] / acted[r]:.3f}" if acted[r] else "-"
        print(f"{r:>5} {schedule(r):>5.2f} {n_labels:>7} {cells[0]:>14} {cells[1]:>14} {share:>14.2f} "
              f"{disagreed:>10}")
    print("(+- is the binomial standard error over the pooled evaluation episodes; 'learner acted' is the share "
          "of DAgger's labels for that round collected where the learner's action was executed, 'disagreed' "
          "the share of those where it differed from the expert's)")
    print(f"final policies (round {args.rounds - 1}), mean over seeds:{'DAgger':>10}{'BC':>10}")
    rows = ["episodes behind the labels", "held-out per-step error on expert states",
            "held-out per-step error on its own states"]
    for i, row in enumerate(rows):
        fmt = ".0f" if i == 0 else ".3f"
        print(f"  {row:<44}{final['DAgger'][:, i].mean():>10{fmt}}{final['BC (expert only)'][:, i].mean():>10{fmt}}")
    print(f"total time {time.perf_counter() - start:.0f}s")


if __name__ == "__main__":
    main()
