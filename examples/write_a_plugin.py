"""Write an sb3-hir plugin: a beta schedule and a relabeler, registered in-process and used by name.

A plugin is a module (or any object) with ``@hookimpl`` functions named after the hook specs in
``sb3_hir.hookspecs``; each receives ``register(name, factory)``. This script registers one with
``plugins.register``, so it works without installing anything. To ship it, put the module in a package and
declare it in that package's ``pyproject.toml`` (``plugins/sb3-hir-example`` is a complete template)::

    [project.entry-points.sb3_hir]
    my_plugin = "my_package.my_module"

after which ``sb3-hir plugins`` lists it and every process finds its components by name, the CLI included
(``sb3-hir dagger --beta-schedule warmup``).

    python examples/write_a_plugin.py                 # ~30 s on a CPU
    python examples/write_a_plugin.py --timesteps 600 # smoke test
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from imitation.algorithms import bc
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env

from sb3_hir import hookimpl, plugins
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.dagger import SimpleDAggerTrainer
from sb3_hir.episodes import Episode
from sb3_hir.extractors import KeySelectExtractor
from sb3_hir.relabel import InstructionRelabeler


# ----------------------------------------------------------------------------------------------- the components
class WarmupBetaSchedule:
    """The expert drives alone for ``warmup_rounds`` rounds, then beta falls linearly to 0 over ``rampdown_rounds``.

    :param warmup_rounds: rounds with beta = 1.
    :param rampdown_rounds: rounds from 1 to 0 after the warm-up.
    """

    def __init__(self, warmup_rounds: int = 2, rampdown_rounds: int = 4) -> None:
        if warmup_rounds < 0 or rampdown_rounds < 1:
            raise ValueError(f"need warmup_rounds >= 0 and rampdown_rounds >= 1; got {warmup_rounds}, "
                             f"{rampdown_rounds}")
        self.warmup_rounds = warmup_rounds
        self.rampdown_rounds = rampdown_rounds

    def __call__(self, round_num: int) -> float:
        return float(np.clip(1.0 - (round_num - self.warmup_rounds) / self.rampdown_rounds, 0.0, 1.0))


class EvenlySpacedRelabeler(InstructionRelabeler):
    """Keep the goals the agent reached; the others become cells it stood on at evenly spaced later steps.

    Deterministic (``rng`` is unused): every failed episode turns into a success tour of where the agent went.
    Subclassing :class:`~sb3_hir.relabel.InstructionRelabeler` supplies ``reach_steps``, ``replay`` and
    ``relabel``; only the choice of goals is written here.
    """

    def relabel_goals(self, episode: Episode, rng: np.random.Generator) -> np.ndarray | None:
        spec = self.goal_spec
        goals = episode.observations[spec.goals_key][0].copy()
        achieved = spec.achieved_values(episode.observations[spec.achieved_key], goals.shape[1:])
        steps = self.reach_steps(achieved, goals)
        n = int((steps > 0).sum())
        last = int(steps[n - 1]) if n else 0
        free = self.num_goals - n
        if free == 0 or last + free > len(episode):
            return None  # a success already, or too few steps left to place the new goals
        # free distinct steps in (last, T], the final step included, in time order.
        picked = np.linspace(len(episode), last, num=free, endpoint=False)[::-1].round().astype(int)
        goals[n:] = achieved[picked]
        return goals


# ------------------------------------------------------------------------------------------------ the plugin
class MyPlugin:
    """Hook implementations; a module with these functions at top level works the same way."""

    @hookimpl
    def register_beta_schedules(self, register):
        register("warmup", WarmupBetaSchedule)

    @hookimpl
    def register_relabelers(self, register):
        register("evenly-spaced", EvenlySpacedRelabeler)


# ---------------------------------------------------------------------------------------------------- using it
def main() -> None:
    # Small networks: one torch thread per process is as fast, and much faster on a busy or shared CPU.
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=6_000, help="steps for each of the two demos")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/example-plugin")
    args = parser.parse_args()

    plugins.register(MyPlugin(), name="my-plugin")
    print("registered:", ", ".join(f"{kind} {name!r}" for kind in ("beta_schedule", "relabeler")
                                   for name, info in plugins.available(kind).items() if info.plugin == "my-plugin"))

    env_kwargs = dict(maze_dim=7, num_goals=2, time_limit=40)
    venv = make_vec_env("sb3_hir/MazeRunner-v0", n_envs=4, seed=args.seed, env_kwargs=env_kwargs)

    # 1. The relabeler, by name, inside the HIR replay buffer of an SB3 algorithm.
    relabeler = plugins.create("relabeler", "evenly-spaced", num_goals=2)
    model = DQN(
        "MultiInputPolicy",
        venv,
        buffer_size=max(args.timesteps, 1_000),
        learning_starts=200,
        replay_buffer_class=HindsightInstructionReplayBuffer,
        replay_buffer_kwargs=dict(relabeler=relabeler, seed=args.seed),
        policy_kwargs=dict(features_extractor_class=KeySelectExtractor,
                           features_extractor_kwargs=dict(keys=["obs", "goals"])),
        seed=args.seed,
    )
    model.learn(args.timesteps)
    share = model.replay_buffer.served_relabeled_share
    print(f"DQN with the 'evenly-spaced' relabeler: {share:.0%} of the transitions it trained on were served under "
          "a hindsight instruction")

    # 2. The beta schedule, by name, in DAgger; the trainer's checkpoint stores the name and its arguments.
    rng = np.random.default_rng(args.seed)
    trainer = SimpleDAggerTrainer(
        venv=venv,
        scratch_dir=f"{args.out}/dagger",
        expert_policy="shortest-path",
        beta_schedule="warmup",
        beta_schedule_kwargs=dict(warmup_rounds=1, rampdown_rounds=2),
        bc_trainer=bc.BC(observation_space=venv.observation_space, action_space=venv.action_space, rng=rng,
                         batch_size=128, device="cpu"),
        rng=rng,
        relabeler="evenly-spaced",  # goal-conditioned BC on relabeled demos, by name as well
    )
    trainer.train(args.timesteps, rollout_round_min_timesteps=max(args.timesteps // 4, 128),
                  bc_train_kwargs=dict(n_epochs=2, progress_bar=False, log_rollouts_venv=None))
    betas = [round(trainer.beta_for_round(r), 2) for r in range(trainer.round_num)]
    print(f"DAgger with the 'warmup' beta schedule: {trainer.round_num} rounds, beta per round {betas}")


if __name__ == "__main__":
    main()
