"""``sb3-hir dagger``: DAgger rounds against an expert, driven by the library's :class:`SimpleDAggerTrainer`.

The trainer runs the rounds (collection, BC, checkpoints); this command chooses the components from its options,
reports each round through the trainer's ``on_round_end`` hook and writes the per-round table. imitation is an
optional extra, so it is imported when the command runs, after :func:`~sb3_hir.extras.require` named the extra.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from tqdm import tqdm

from sb3_hir import resolvers
from sb3_hir.callbacks import EvalHistory, evaluate_instruction_policy
from sb3_hir.cli.common import (
    LOCK_FILE,
    STRATEGIES,
    UsageError,
    actor_critic_policy,
    add_history,
    check_expert,
    check_goal_spec,
    check_head,
    check_history,
    check_instruction_env_space,
    check_seed,
    checked_int,
    env_factory,
    env_kwargs,
    extractor_kwargs,
    features_key,
    format_table,
    goal_spec,
    installed,
    lock,
    log_formats,
    make_env,
    memory_label,
    parse_kwargs,
    prepare_out,
    require_extra,
    save_episode_pictures,
    seed_everything,
    set_threads,
    usage,
    write_csv,
    write_text,
)
from sb3_hir.cli.memory import check_memory, env_memory, network_memory, observation_bytes
from sb3_hir.cli.options import (
    add_command,
    add_expert_option,
    add_history_options,
    add_relabel_option,
    add_run_env_options,
    names,
)
from sb3_hir.env_experts import env_state_factory, with_expert_labels
from sb3_hir.plots import plot_learning_curves

#: The options of a ``sb3-hir dagger`` run, stored in its directory so that ``--resume`` continues it unchanged.
DAGGER_OPTIONS_FILE = "dagger-options.json"
#: Options that ``--resume`` takes from the command line instead of the stored run.
RESUME_OWN = ("rounds", "no_progress", "resume", "out", "overwrite", "func", "command", "verbose")
#: The learner's hidden layers.
NET_ARCH = [256, 256]
#: Columns of rounds.md.
ROUND_COLUMNS = ["round", "beta", "episodes", "timesteps", "learner steps", "demos (steps)", "success rate",
                 "goals reached"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rounds", type=int, metavar="N", default=None,
                   help="DAgger rounds (default 6; with --resume, the run's own, or more to extend it)")
    p.add_argument("--resume", metavar="DIR",
                   help="continue the interrupted (or finished) dagger run in DIR with its stored options: rounds "
                        "already done are kept and the table covers all rounds")
    p.add_argument("--beta-schedule", default="exponential", metavar="NAME",
                   help="beta_schedule plugin name (default exponential: beta = 0.5 ** round); installed: "
                        f"{names('beta_schedule')}")
    p.add_argument("--beta-kwarg", action="append", default=[], metavar="KEY=VALUE",
                   help="beta schedule argument (repeatable), e.g. rampdown_rounds=4 for linear")
    add_expert_option(p, "expert plugin name")
    add_relabel_option(p, "relabel demos for goal-conditioned BC (default none)", default="none")
    p.add_argument("--steps-per-round", type=int, metavar="N", default=4_000,
                   help="labelled steps per round (default 4000)")
    p.add_argument("--bc-epochs", type=int, metavar="N", default=4,
                   help="BC epochs over all demos after each round (default 4)")
    p.add_argument("--batch-size", type=int, metavar="N", default=256, help="BC batch size (default 256)")
    add_history_options(p, 0, "--policy-head", "the learner's action head (its logits)")
    p.add_argument("--n-envs", type=int, metavar="N", default=8, help="parallel envs (default 8)")
    p.add_argument("--seed", type=int, metavar="N", default=0, help="seed (default 0)")
    p.add_argument("--eval-episodes", type=int, metavar="N", default=50,
                   help="evaluation episodes after each round (default 50)")
    add_run_env_options(p, "dagger", "no progress bars",
                        "Box(-1, 1, (2,)) MazeRunner actions (the learner's and the expert's)")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    return add_command(
        sub, "dagger", add_arguments, run,
        help="DAgger against an expert (default: MazeRunner's shortest-path expert), BC after each round",
        description="Each round collects steps executing the expert's action with probability beta and the "
                    "learner's otherwise (every step labelled by the expert), then trains the learner by behaviour "
                    "cloning on all rounds so far and evaluates it. Writes demos, checkpoints, logs, the per-round "
                    "table (rounds.md, rounds.csv) and a learning curve to --out.")


# ---------------------------------------------------------------------------------------------------- options
def defaults() -> dict[str, Any]:
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return vars(parser.parse_args([]))


def resume_options(args: argparse.Namespace) -> Path:
    """``--resume DIR``: the run's stored options replace the command line's (``--rounds`` may extend it)."""
    if args.out is not None or args.overwrite:
        raise UsageError("--resume DIR is the run directory; drop --out / --overwrite")
    out = Path(args.resume)
    stored_path = out / DAGGER_OPTIONS_FILE
    try:
        stored = json.loads(stored_path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--resume {str(out)!r} holds no sb3-hir dagger run ({stored_path.name} unreadable: "
                         f"{exc.strerror if isinstance(exc, OSError) else exc})") from exc
    default = defaults()
    given = [key for key, value in vars(args).items() if key not in RESUME_OWN and key in stored
             and value != default.get(key) and value != stored[key]]
    if given:
        flags = ", ".join(f"--{key.replace('_', '-')} (the run has {stored[key]!r})" for key in given)
        raise UsageError(f"--resume continues {str(out)!r} with its stored options; drop {flags}, or start a new run "
                         "with --out")
    for key, value in stored.items():
        if key not in RESUME_OWN:
            setattr(args, key, value)
    if "action_effects" in stored and "action_features" not in stored:  # a run stored before --action-features
        args.action_features = "effects" if stored["action_effects"] else "none"
    if args.rounds is None:
        args.rounds = stored.get("rounds", 6)
    return out


def check_args(args: argparse.Namespace, resume_dir: Path | None) -> tuple[Any, dict[str, Any]]:
    """The checks that need no env; returns the beta schedule (built and so checked by its plugin) and its
    arguments."""
    if resume_dir is None and args.out is not None and not args.overwrite and Path(args.out).is_dir() and any(
        path.name != LOCK_FILE for path in Path(args.out).iterdir()
    ):
        raise UsageError(f"--out {args.out!r} is not empty; continue the run in it with --resume {args.out}, "
                         "replace it with --overwrite, or choose another directory")
    for option in ("rounds", "steps_per_round", "n_envs", "eval_episodes", "bc_epochs", "batch_size"):
        checked_int(getattr(args, option), "--" + option.replace("_", "-"), 1)
    check_history(args)
    check_head("--policy-head", args.policy_head, args.action_features)
    check_seed(args.seed)
    if args.batch_size > args.steps_per_round:
        raise UsageError(f"--batch-size {args.batch_size} is larger than the labelled steps of a round "
                         f"(--steps-per-round {args.steps_per_round}); BC could not fill one batch after round 0")
    installed("beta_schedule", args.beta_schedule)
    installed("expert", args.expert)
    labels = env_state_factory(args.expert)
    if labels is not None and labels.check is not None:
        try:  # an expert that reads the env, but not this install's (e.g. BabyAI's bot on minigrid 2.3): one line
            labels.check()
        except (ImportError, ValueError) as exc:
            raise UsageError(str(exc)) from None
    installed("relabeler", args.relabel, also=STRATEGIES)
    beta_kwargs = parse_kwargs(args.beta_kwarg, option="--beta-kwarg")
    try:
        schedule = resolvers.resolve_beta_schedule(args.beta_schedule, argument="--beta-schedule",
                                                         **beta_kwargs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"beta schedule {args.beta_schedule!r} rejected {beta_kwargs}: {exc}") from exc
    return schedule, beta_kwargs


def check_dagger_memory(args: argparse.Namespace, probe: Any) -> None:
    """Every round's demos stay in memory for BC (episodes and their flattened transitions)."""
    obs = observation_bytes(probe, args.history, args.action_features, args.env)
    steps = args.rounds * args.steps_per_round
    check_memory([
        (f"--rounds {args.rounds}, --steps-per-round {args.steps_per_round} and --history {args.history} "
         f"({steps} demo steps)", 3.0 * steps * obs),
        (f"--batch-size {args.batch_size}", 4.0 * args.batch_size * obs),
        (f"--n-envs {args.n_envs} and --history {args.history}",
         env_memory(args.n_envs + min(args.eval_episodes, 10), obs)),
        ("the learner", network_memory(max(NET_ARCH), obs // 4)),
    ], obs)


def probe_env(args: argparse.Namespace, kwargs: dict[str, Any]) -> tuple[int, Any, str]:
    probe = make_env(args.env, kwargs)
    check_dagger_memory(args, probe)
    probe = add_history(probe, args.env, args.history, args.action_features)
    num_goals = check_instruction_env_space(probe, args.env)
    spec, spec_label = goal_spec(args, probe, args.env)
    if args.relabel != "none":
        check_goal_spec(probe, args.env, spec, num_goals, spec_label)
    probe.close()
    check_expert(args.expert, args.env, kwargs)
    return num_goals, spec, spec_label


def relabel_kwargs(relabel: str, spec: Any, spec_label: str) -> dict[str, Any]:
    if relabel == "none":
        return {}
    if relabel not in STRATEGIES:
        return dict(relabeler=relabel, relabeler_kwargs=None)
    strategy_kwargs: dict[str, Any] = dict(strategy=relabel)
    if spec_label != "exact":  # the relabeler's default is exact; name it only when it differs
        strategy_kwargs["goal_spec"] = spec
    return dict(relabeler="hindsight-instruction", relabeler_kwargs=strategy_kwargs)


def parse_round_record(row: dict[str, str]) -> dict[str, Any]:
    """A row of ``rounds.csv`` with its numbers back."""
    ints = ("round", "episodes", "timesteps", "demo_timesteps")
    return {k: int(v) if k in ints else float(v) for k, v in row.items()}


# ---------------------------------------------------------------------------------------------------- rounds
class RoundReport:
    """The trainer's ``on_round_end``: evaluate the learner, extend the table and the logs, print the round.

    The table is written before the trainer's checkpoint (the hook runs first), so a resume keeps the rows of
    the rounds its checkpoint has.
    """

    def __init__(self, trainer: Any, args: argparse.Namespace, out: Path, eval_env: Any, log: Any,
                 records: list[dict[str, Any]], bar: Any) -> None:
        self.trainer = trainer
        self.args = args
        self.out = out
        self.eval_env = eval_env
        self.log = log
        self.records = records
        self.bar = bar
        self.history = EvalHistory()
        for r in records:
            self.history.append(r["round"], r["success_rate"], r["goals_reached"], r.get("mean_reward", 0.0))
        self.demo_steps = records[-1]["demo_timesteps"] if records else 0

    def __call__(self, round_num: int, stats: dict[str, Any]) -> bool:
        trajs = self.trainer.load_demos([round_num])  # the whole round: a resumed one holds the killed run's too
        steps = sum(len(t) for t in trajs)
        learner_steps = sum(int(np.sum(t.learner_mask)) for t in trajs if t.learner_mask is not None)
        self.demo_steps += steps
        score = evaluate_instruction_policy(self.trainer.policy, self.eval_env, self.args.eval_episodes,
                                            seed=self.args.seed + 10_000)
        self.history.append(round_num, score.success_rate, score.goals_reached, score.mean_reward)
        record = dict(round=round_num, beta=stats["beta"], episodes=len(trajs), timesteps=steps,
                      learner_share=learner_steps / max(steps, 1), demo_timesteps=self.demo_steps,
                      success_rate=score.success_rate, goals_reached=score.goals_reached,
                      mean_reward=score.mean_reward)
        self.records.append(record)
        write_csv(self.out / "rounds.csv", self.records)
        for key, value in record.items():
            self.log.record(f"dagger/{key}", value)
        self.log.dump(round_num)
        self.bar.update(1)
        self.bar.write(f"round {round_num}: beta {stats['beta']:.2f}, {len(trajs)} episodes / {steps} steps "
                       f"({record['learner_share']:.0%} learner), success {score.success_rate:.2f}, "
                       f"goals reached {score.goals_reached:.2f}", file=sys.stdout)
        return round_num + 1 < self.args.rounds


# ---------------------------------------------------------------------------------------------------- the command
def run(args: argparse.Namespace) -> int:
    """``sb3-hir dagger``."""
    require_extra("imitation", "sb3-hir dagger")
    resume_dir = resume_options(args) if args.resume is not None else None
    if args.rounds is None:
        args.rounds = 6
    schedule, beta_kwargs = check_args(args, resume_dir)
    kwargs = env_kwargs(args)
    num_goals, spec, spec_label = probe_env(args, kwargs)

    set_threads()
    seed_everything(args.seed)
    if resume_dir is None:
        out, _lock_handle = prepare_out("dagger", args.out, args.overwrite)
        options = {k: v for k, v in vars(args).items() if k not in ("func", "resume", "out", "overwrite")}
        write_text(out / DAGGER_OPTIONS_FILE, json.dumps(options, indent=1) + "\n")
    else:
        out, _lock_handle = resume_dir, lock(resume_dir)
    eval_seed = args.seed + 10_000
    env_fn = env_factory(args.env, kwargs, args.history, args.action_features)
    # an expert that reads the env (sb3_hir.env_experts) labels from a wrapper of each env; others leave env_fn as is
    labelled_fn = with_expert_labels(env_fn, args.expert)
    venv = make_vec_env(labelled_fn, n_envs=args.n_envs, seed=args.seed)
    eval_env = make_vec_env(env_fn, n_envs=min(args.eval_episodes, 10), seed=eval_seed)
    expert_env = eval_env if labelled_fn is env_fn else make_vec_env(labelled_fn, n_envs=eval_env.num_envs,
                                                                     seed=eval_seed)
    trainer, log, records = build_trainer(args, out, resume_dir, venv, schedule, spec, spec_label)
    expert_score = evaluate_instruction_policy(resolvers.resolve_expert(args.expert, venv=expert_env),
                                               expert_env, args.eval_episodes, seed=eval_seed)
    if expert_env is not eval_env:
        expert_env.close()
    if resume_dir is not None:
        print(f"sb3-hir dagger: resuming {out} at round {trainer.round_num} with its stored options")
    print(f"sb3-hir dagger: {args.rounds} rounds of >= {args.steps_per_round} steps on {args.env} {kwargs}, "
          f"beta schedule {args.beta_schedule} {beta_kwargs or ''}, expert {args.expert} (success "
          f"{expert_score.success_rate:.2f}), {memory_label(args)}, seed {args.seed} -> {out}", flush=True)

    with tqdm(total=args.rounds, initial=trainer.round_num, desc="DAgger rounds", unit="round",
              disable=args.no_progress, leave=False) as bar:
        report = RoundReport(trainer, args, out, eval_env, log, records, bar)
        if trainer.round_num < args.rounds:
            # total_timesteps never binds: the report stops the trainer after --rounds rounds.
            trainer.train(sys.maxsize, rollout_round_min_episodes=0, rollout_round_min_timesteps=args.steps_per_round,
                          bc_train_kwargs=dict(n_epochs=args.bc_epochs, progress_bar=False, log_rollouts_venv=None,
                                               on_batch_end=lambda: bar.set_postfix_str(f"round {trainer.round_num}"
                                                                                        " BC", refresh=False)),
                          on_round_end=report)

    write_summary(args, out, trainer, report, expert_score, num_goals, kwargs)
    venv.close()
    eval_env.close()
    return 0


def build_trainer(args: argparse.Namespace, out: Path, resume_dir: Path | None, venv: Any, schedule: Any,
                  spec: Any, spec_label: str) -> tuple[Any, Any, list[dict[str, Any]]]:
    """The learner, its BC trainer and the DAgger trainer (a resumed run's from its checkpoint), the logger, and
    the table rows of the rounds already done."""
    from imitation.algorithms import bc  # the optional extra, present once run() checked it
    from imitation.util import logger as imit_logger

    from sb3_hir.dagger import SimpleDAggerTrainer, reconstruct_trainer

    rng = np.random.default_rng(args.seed)
    head = dict(action_key=features_key(args.action_features)) if args.policy_head == "per-action" else {}
    policy = actor_critic_policy(args.policy_head)(
        venv.observation_space, venv.action_space, lr_schedule=lambda _: 0.0, net_arch=NET_ARCH, **head,
        **extractor_kwargs(args.history, args.history_encoder, args.action_features, args.policy_head))
    # a resumed run logs beside the killed one's logs (SB3's CSV writer would truncate them)
    log_dir = out / "logs" if resume_dir is None else out / "logs" / f"resumed-{datetime.now():%Y%m%d-%H%M%S}"
    log = imit_logger.configure(log_dir, log_formats())
    bc_trainer = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space, rng=rng,
                       policy=policy, batch_size=args.batch_size, device="cpu", custom_logger=log)
    components = dict(expert_policy=args.expert, beta_schedule=schedule, bc_trainer=bc_trainer,
                      **relabel_kwargs(args.relabel, spec, spec_label))
    with usage():
        if resume_dir is not None and (out / "checkpoint-latest.json").is_file():
            # the options rebuild every component, so nothing but data is read from the run directory
            trainer = reconstruct_trainer(out, venv, custom_logger=log, **components)
        else:  # a fresh run, or one killed before its first checkpoint: its round files are kept
            trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=out, rng=rng, custom_logger=log,
                                          resume=resume_dir is not None, **components)
    records: list[dict[str, Any]] = []
    if resume_dir is not None:
        if (out / "rounds.csv").is_file():
            with open(out / "rounds.csv", newline="") as f:
                records = [parse_round_record(row) for row in csv.DictReader(f)][: trainer.round_num]
        venv.seed(args.seed + 1_000 * (trainer.round_num + 1))  # new episodes, not the killed run's again
    return trainer, log, records


def write_summary(args: argparse.Namespace, out: Path, trainer: Any, report: RoundReport, expert_score: Any,
                  num_goals: int, kwargs: dict[str, Any]) -> None:
    """The learning curve against the expert's level, an episode picture and the table of every round."""
    eval_seed = args.seed + 10_000
    expert_history = EvalHistory()
    for r in (0, args.rounds - 1):
        expert_history.append(r, expert_score.success_rate, expert_score.goals_reached, expert_score.mean_reward)
    plot_learning_curves({"DAgger learner (BC)": report.history, f"expert ({args.expert})": expert_history},
                         out / "learning_curve.png", num_goals=num_goals, xlabel="round",
                         title=f"DAgger on {args.env}, beta schedule {args.beta_schedule}")
    save_episode_pictures(trainer.policy, args.env, kwargs, out, seed=eval_seed, best_of=10, history=args.history,
                          features=args.action_features)
    records = report.records
    rows = [[r["round"], f"{r['beta']:.2f}", r["episodes"], r["timesteps"], f"{r['learner_share']:.0%}",
             r["demo_timesteps"], f"{r['success_rate']:.2f}", f"{r['goals_reached']:.2f} / {num_goals}"]
            for r in records]
    table = format_table(ROUND_COLUMNS, rows)
    expert_line = (f"expert ({args.expert}): success rate {expert_score.success_rate:.2f}, goals reached "
                   f"{expert_score.goals_reached:.2f} / {num_goals}")
    write_text(out / "rounds.md", f"{table}\n\n{expert_line}\n")
    write_csv(out / "rounds.csv", records)
    print(f"\nDAgger learner after each round ({args.eval_episodes} evaluation episodes, seed {eval_seed}); demos "
          f"and checkpoints in {out}\n{table}\n{expert_line}")
