"""DAgger against BC at equal expert labels on BabyAI's go-to levels, with BabyAI's own bot as the expert.

Why: DAgger collection had been shown on MazeRunner (``bench_dagger_mazerunner.py``), an env we wrote; BabyAI is the
benchmark the field uses for instruction following, and it ships its teacher, ``minigrid.utils.baby_ai_bot``
(minigrid >= 3.0, the current profile). The bot plans from the env's state, not from the observation, so it labels
through :mod:`sb3_hir.env_experts` (the ``sb3-hir-minigrid`` plugin's ``"babyai-bot"`` expert: each env wrapped in
``EnvStateLabels``, the bot replanning after every action it did not choose).

Both arms are the same :class:`sb3_hir.dagger.DAggerTrainer` (imitation's ``bc.BC`` over an SB3
``MultiInputActorCriticPolicy`` reading the plugin's instruction observation through
:class:`~sb3_hir.extractors.KeySelectExtractor`, or with ``--history N`` a :class:`~sb3_hir.history.HistoryWrapper`
window and :class:`~sb3_hir.extractors.HistoryExtractor`; ``--extractor film`` reads the current step through the
plugin's goal-conditioned ``BabyAIFiLMExtractor`` instead), with the same rounds, labels per round and BC batches per
round; they differ only in who acts while the labels are collected. ``dagger`` follows a linear beta schedule (round
0 is the bot alone, beta reaches 0 after ``--beta-rampdown`` rounds); ``bc`` keeps beta = 1 in every round, i.e. BC
on bot demonstrations of the same label count, no learner in the loop. Each round collects exactly
``--labels-per-round`` labelled steps (episodes still running when the round ends are kept as partial ones: their
labels count), then BC trains ``--batches-per-round`` batches on every round so far, and the greedy policy plays
``--eval-episodes`` held-out missions (seed :func:`~sb3_hir.experiment.seeds.eval_seed`, the same for both arms; the
training envs are seeded with the run's seed). Recorded per round: expert labels so far, expert episodes so far
(episodes with labelled steps, partial ones included), success rate, and the run's CPU seconds (collection, BC and
evaluation apart). The bot itself plays the same held-out missions once per seed, for reference.

Round 0 is the same in both arms (beta = 1, the same seeds), so the verdict compares the rounds after it: DAgger
above BC at equal labels by more than the spread (the sum of both standard deviations over seeds) at each of them.

Output in ``--out``: ``<arm>-seed<s>/curve.json`` after every round (a stopped run keeps what it reached),
``bot-seed<s>.json``, and ``summary.json`` / ``summary.md`` / ``summary.png`` (success against expert labels and
against expert episodes, mean ± std bands over seeds).

The defaults (10 rounds of 5,000 labels: 50k labels, about 10k bot episodes' worth, BabyAI's bot averaging about 5
steps per GoToLocal episode; 4,000 BC batches per round; a window of 8 steps) were sized from a one-seed smoke run
at about 1.2 ms of CPU per label collected, 7.4 ms per BC batch of 64 with the window (4 ms without) and 19 ms per
evaluation episode: about 7 CPU-minutes per (arm, seed) run on GoToLocal. In those smoke runs the memoryless
learner stayed between 0.40 and 0.62 success in both arms up to 8,000 labels, the window's reached 0.64-0.79 by
6,000.

Usage: ``python benchmarks/babyai_dagger.py [--level BabyAI-GoToLocal-v0] [--k-max 1] [--rounds 10]
[--labels-per-round 5000] [--batches-per-round 4000] [--eval-episodes 200] [--history 8] [--arms dagger bc]
[--seeds 0 1 2] [--ray] [--out runs/babyai-dagger]`` (GoTo: ``--level BabyAI-GoTo-v0``; GoToSeqS5R2:
``--level BabyAI-GoToSeqS5R2-v0 --k-max 4``); ``--collect`` rebuilds the summary from the run directories;
``--tiny`` is a smoke-test budget.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
from imitation.algorithms import bc
from imitation.util import logger as imit_logger
from sb3_hir_minigrid import make_babyai_goto
from sb3_hir_minigrid.bot import BotUnavailableError, check_bot_available
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.policies import MultiInputActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from sb3_hir import resolvers
from sb3_hir.atomic import atomic_path
from sb3_hir.dagger import DAggerTrainer, PolicyRunner
from sb3_hir.env_experts import with_expert_labels
from sb3_hir.experiment import arguments, format_mean_std, instruction_evaluator, markdown_table, seed_process
from sb3_hir.experiment.runner import run_all
from sb3_hir.experiment.seeds import eval_seed
from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
from sb3_hir.history import HistoryWrapper

ARMS = ("dagger", "bc")
EXPERT = "babyai-bot"
#: Sub-envs of the evaluation venv at most (the episodes are spread over them, the same for every arm).
EVAL_ENVS = 10


def eval_envs(options: dict[str, Any]) -> int:
    return min(EVAL_ENVS, options["eval_episodes"])
#: What ``--tiny`` sets: seconds in all, for the test that every benchmark still runs.
TINY = dict(rounds=2, labels_per_round=64, batches_per_round=10, batch_size=32, eval_episodes=4, n_envs=4, seeds=[0])


# ---------------------------------------------------------------------------------------------------- envs
class DropMinigridChatter(io.TextIOBase):
    """``sys.stdout`` without the line BabyAI's levels print for every rejected mission sample ("Sampling rejected:
    ..."; about one per reset on GoToLocal), which would bury the run's own lines."""

    PREFIXES = ("Sampling rejected:",)

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self._line = ""

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return int(self.stream.fileno())

    def isatty(self) -> bool:
        return bool(self.stream.isatty())

    def write(self, text: str) -> int:
        self._line += text
        *lines, self._line = self._line.split("\n")
        kept = [line for line in lines if not line.startswith(self.PREFIXES)]
        if kept:
            self.stream.write("\n".join(kept) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._line and not self._line.startswith(self.PREFIXES):
            self.stream.write(self._line)
            self._line = ""
        self.stream.flush()


def quiet_stdout() -> None:
    """Install :class:`DropMinigridChatter` on ``sys.stdout`` (once per process: the script, or a Ray worker)."""
    if not isinstance(sys.stdout, DropMinigridChatter):
        sys.stdout = DropMinigridChatter(sys.stdout)


def env_fn(options: dict[str, Any]) -> Callable[[], Any]:
    """One instruction env of the level (the plugin's :func:`~sb3_hir_minigrid.make_babyai_goto`), with the history
    window when ``--history`` asks for one."""
    def make() -> Any:
        env = make_babyai_goto(options["level"], k_max=options["k_max"])
        return HistoryWrapper(env, length=options["history"]) if options["history"] else env

    return make


def make_venv(options: dict[str, Any], seed: int, n_envs: int, labelled: bool) -> DummyVecEnv:
    """``n_envs`` envs seeded with ``seed``; ``labelled``: each carries the bot's ``EnvStateLabels`` (outermost)."""
    make = with_expert_labels(env_fn(options), EXPERT) if labelled else env_fn(options)
    return cast(DummyVecEnv, make_vec_env(make, n_envs=n_envs, seed=seed, vec_env_cls=DummyVecEnv))


def keys(options: dict[str, Any]) -> list[str]:
    """The flat keys the learner reads: ``goal_steps`` too where a mission has several goals."""
    return ["obs", "goals", "goal_steps"] if options["k_max"] > 1 else ["obs", "goals"]


# ---------------------------------------------------------------------------------------------------- learner
def make_trainer(options: dict[str, Any], venv: VecEnv, scratch: str, arm: str, seed: int) -> Any:
    """The arm's DAgger trainer: imitation's BC over an actor-critic policy, the learner acting greedily."""
    current: type = KeySelectExtractor
    if options.get("extractor", "flat") == "film":
        from sb3_hir_minigrid import BabyAIFiLMExtractor

        current = BabyAIFiLMExtractor
    if options["history"]:
        extractor: dict[str, Any] = dict(features_extractor_class=HistoryExtractor,
                                         features_extractor_kwargs=dict(keys=keys(options),
                                                                        encoder=options["encoder"],
                                                                        current_extractor_class=current))
    else:
        extractor = dict(features_extractor_class=current, features_extractor_kwargs=dict(keys=keys(options)))
    space: Any = venv.observation_space  # the plugin's Dict space
    policy = MultiInputActorCriticPolicy(space, venv.action_space, lambda _: 0.0, net_arch=list(options["net_arch"]),
                                         **extractor)
    learner = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space,
                    rng=np.random.default_rng(seed), policy=policy, batch_size=options["batch_size"], device="cpu",
                    custom_logger=imit_logger.configure(format_strs=[]))
    return DAggerTrainer(venv=venv, scratch_dir=scratch, rng=np.random.default_rng(seed), bc_trainer=learner,
                         beta_schedule=beta_schedule(options, arm), custom_logger=learner.logger,
                         deterministic_learner=True)


def beta_schedule(options: dict[str, Any], arm: str) -> Callable[[int], float]:
    """``dagger``: 1 at round 0, falling linearly to 0 at round ``--beta-rampdown``; ``bc``: 1 in every round."""
    if arm == "bc":
        return lambda r: 1.0
    rampdown = options["beta_rampdown"]
    return lambda r: max(0.0, 1.0 - r / rampdown)


def collect_round(trainer: Any, expert: Any, vector_steps: int) -> dict[str, int]:
    """``vector_steps`` steps of the round's collector, every one labelled by the bot; running episodes are kept as
    partial ones. Returns the round's labels, episodes, the steps the learner acted in and how many of those the
    bot disagreed with (the learner's error on its own states: what DAgger's extra labels correct)."""
    collector = trainer.create_trajectory_collector()
    obs = collector.reset()
    expert.reset()
    for _ in range(vector_steps):
        obs, _, dones, _ = collector.step(expert(obs))
        expert.observe_dones(dones)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # partial episodes: labels kept, by design
        trajs: list[Any] = collector.finish_round(policy="report")  # DAggerTrajectory objects
    acted = np.concatenate([t.learner_mask for t in trajs])
    wrong = np.concatenate([t.executed_acts != t.acts for t in trajs]) & acted
    return dict(labels=len(acted), episodes=len(trajs), learner_steps=int(acted.sum()), learner_errors=int(wrong.sum()))


# ---------------------------------------------------------------------------------------------------- one run
def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(data, indent=2) + "\n")


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """One (arm, seed) run; its curve is written after every round and returned.

    A plain function of a plain dict, so that it runs alike in this process or as a Ray Tune trial. CPU seconds are
    this process's, counted from the run's start (one torch thread)."""
    quiet_stdout()
    options, arm, seed = config["options"], config["arm"], config["seed"]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    seed_process(seed)
    warnings.filterwarnings("ignore", category=UserWarning, module="imitation")  # its DictObs / BC chatter
    venv = make_venv(options, seed, options["n_envs"], labelled=True)
    expert = PolicyRunner(resolvers.resolve_expert(EXPERT, venv=venv), venv.num_envs)
    evaluate = instruction_evaluator(lambda: make_venv(options, eval_seed(seed), eval_envs(options), labelled=False),
                                     options["eval_episodes"], eval_seed(seed))
    vector_steps = math.ceil(options["labels_per_round"] / venv.num_envs)
    out = Path(config["out"]) / f"{arm}-seed{seed}" / "curve.json"
    curve: list[dict[str, Any]] = []
    totals = dict(labels=0, episodes=0, collect=0.0, bc=0.0, eval=0.0)
    with tempfile.TemporaryDirectory(prefix="babyai-dagger-") as scratch:
        trainer = make_trainer(options, venv, scratch, arm, seed)
        for r in range(options["rounds"]):
            beta = trainer.beta_for_round()
            t = time.process_time()
            got = collect_round(trainer, expert, vector_steps)
            t_collect = time.process_time()
            trainer.extend_and_update({"n_batches": options["batches_per_round"], "progress_bar": False,
                                       "log_rollouts_n_episodes": 0})
            t_bc = time.process_time()
            score = evaluate(trainer.policy)
            t_eval = time.process_time()
            totals["labels"] += got["labels"]
            totals["episodes"] += got["episodes"]
            totals["collect"] += t_collect - t
            totals["bc"] += t_bc - t_collect
            totals["eval"] += t_eval - t_bc
            curve.append(dict(round=r, beta=beta, labels=totals["labels"], episodes=totals["episodes"],
                              round_labels=got["labels"], round_episodes=got["episodes"],
                              learner_steps=got["learner_steps"], learner_errors=got["learner_errors"],
                              success_rate=score["success_rate"], goals_reached=score["goals_reached"],
                              cpu_seconds=t_eval - cpu0, collect_cpu_seconds=totals["collect"],
                              bc_cpu_seconds=totals["bc"], eval_cpu_seconds=totals["eval"],
                              wall_seconds=time.perf_counter() - wall0))
            bots = venv.get_attr("expert")
            bot = {name: sum(int(getattr(b, name)) for b in bots) for name in ("replans", "box_repairs", "restarts")}
            write_json(out, dict(arm=arm, seed=seed, options=options, bot=bot, curve=curve))
            print(f"{arm} seed {seed} round {r}: beta {beta:.2f}, {totals['labels']} labels / {totals['episodes']} "
                  f"episodes, success {score['success_rate']:.3f}, {t_eval - cpu0:.0f} CPU-s", flush=True)
    venv.close()
    return dict(arm=arm, seed=seed, curve=curve)


def bot_level(options: dict[str, Any], seed: int, out: Path) -> dict[str, float]:
    """The bot alone on seed ``seed``'s held-out missions (written to ``bot-seed<s>.json``)."""
    venv = make_venv(options, eval_seed(seed), eval_envs(options), labelled=True)
    evaluate = instruction_evaluator(lambda: venv, options["eval_episodes"], eval_seed(seed))
    result = dict(evaluate(resolvers.resolve_expert(EXPERT, venv=venv)))  # the evaluator closes the venv
    write_json(out / f"bot-seed{seed}.json", dict(seed=seed, options=options, **result))
    return result


# ---------------------------------------------------------------------------------------------------- summary
SUMMARY_KEYS = ("labels", "episodes", "success_rate", "goals_reached", "cpu_seconds", "collect_cpu_seconds",
                "bc_cpu_seconds", "eval_cpu_seconds")


def collect(out: Path) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Per arm, per seed, the curve its run directory holds (runs stopped early included)."""
    curves: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for arm in ARMS:
        for path in sorted(out.glob(f"{arm}-seed*/curve.json")):
            data = json.loads(path.read_text())
            curves.setdefault(arm, {})[int(data["seed"])] = data["curve"]
    return curves


def summarize(curves: dict[str, dict[int, list[dict[str, Any]]]]) -> dict[str, list[dict[str, Any]]]:
    """Per arm, mean ± std over the seeds that reached each round (``seeds``: how many)."""
    summary: dict[str, list[dict[str, Any]]] = {}
    for arm, runs in curves.items():
        rows = []
        for r in range(max(len(c) for c in runs.values())):
            reached = [c[r] for c in runs.values() if len(c) > r]
            row: dict[str, Any] = {"round": r, "beta": reached[0]["beta"], "seeds": len(reached)}
            for key in SUMMARY_KEYS:
                values = np.array([point[key] for point in reached], dtype=float)
                row[f"{key}_mean"], row[f"{key}_std"] = float(values.mean()), float(values.std())
            # the bot's disagreement with the greedy learner on the steps the learner acted in (what DAgger's labels
            # are there to correct): None in rounds where the bot acted alone
            shares = [p["learner_errors"] / p["learner_steps"] for p in reached if p.get("learner_steps")]
            row["learner_error_share_mean"] = float(np.mean(shares)) if shares else None
            row["learner_error_share_std"] = float(np.std(shares)) if shares else None
            rows.append(row)
        summary[arm] = rows
    return summary


def verdict(summary: dict[str, list[dict[str, Any]]]) -> tuple[bool | None, list[str]]:
    """DAgger above BC at equal labels by more than the spread at each round after the first (both arms with the
    same seeds there), or None where there is no verdict (one seed, no spread; no round after the first); the lines
    saying so per round."""
    dagger, bc_ = summary.get("dagger", []), summary.get("bc", [])
    lines, passed = [], True
    rounds = range(1, min(len(dagger), len(bc_)))
    for r in rounds:
        d, b = dagger[r], bc_[r]
        if d["labels_mean"] != b["labels_mean"] or d["seeds"] != b["seeds"]:
            lines.append(f"  round {r}: not comparable ({d['labels_mean']:.0f} vs {b['labels_mean']:.0f} labels, "
                         f"{d['seeds']:.0f} vs {b['seeds']:.0f} seeds)")
            passed = False
            continue
        diff = d["success_rate_mean"] - b["success_rate_mean"]
        spread = d["success_rate_std"] + b["success_rate_std"]
        passed &= diff > spread
        lines.append(f"  round {r}, {d['labels_mean']:.0f} labels: {diff:+.3f} (spread {spread:.3f}) "
                     f"{'above' if diff > spread else 'not above'}")
    if not rounds:
        lines.append("  no round after the first in both arms")
        return None, lines
    if dagger[0]["seeds"] < 2:
        lines.append("  one seed: no spread to beat (run --seeds 0 1 2)")
        return None, lines
    return passed, lines


def report(out: Path) -> None:
    """``summary.json``, ``summary.md`` and ``summary.png`` from the run directories in ``out``; prints the table
    and the verdict."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = collect(out)
    if not curves:
        raise SystemExit(f"no runs in {out} (expected <arm>-seed<s>/curve.json)")
    summary = summarize(curves)
    options = json.loads(next(out.glob("*-seed*/curve.json")).read_text())["options"]
    bots = [json.loads(p.read_text())["success_rate"] for p in sorted(out.glob("bot-seed*.json"))]
    passed, lines = verdict(summary)
    write_json(out / "summary.json", dict(level=options["level"], k_max=options["k_max"], options=options,
                                          seeds={arm: sorted(runs) for arm, runs in curves.items()},
                                          summary=summary, bot_success=bots, dagger_above_bc=passed))
    header = ["arm", "round", "beta", "expert labels", "expert episodes", "success rate", "goals reached",
              "bot disagrees on learner steps", "CPU seconds", "seeds"]
    rows = [[arm, int(r["round"]), f"{r['beta']:.2f}", f"{r['labels_mean']:.0f}",
             format_mean_std(r["episodes_mean"], r["episodes_std"], 0),
             format_mean_std(r["success_rate_mean"], r["success_rate_std"]),
             format_mean_std(r["goals_reached_mean"], r["goals_reached_std"]),
             "-" if r.get("learner_error_share_mean") is None
             else format_mean_std(r["learner_error_share_mean"], r["learner_error_share_std"]),
             format_mean_std(r["cpu_seconds_mean"], r["cpu_seconds_std"], 0), int(r["seeds"])]
            for arm, table in summary.items() for r in table]
    if bots:
        rows.append(["bot (expert)", "-", "-", "-", "-", format_mean_std(float(np.mean(bots)), float(np.std(bots))),
                     "-", "-", "-", len(bots)])
    text = markdown_table(header, rows)
    with atomic_path(out / "summary.md") as tmp:
        Path(tmp).write_text(text + "\n")
    print(text)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, key, label in ((axes[0], "labels", "expert labels (labelled steps)"),
                           (axes[1], "episodes", "expert episodes (episodes with labelled steps)")):
        for arm, table in summary.items():
            x = np.array([r[f"{key}_mean"] for r in table])
            mean = np.array([r["success_rate_mean"] for r in table])
            std = np.array([r["success_rate_std"] for r in table])
            seeds = int(table[0]["seeds"])
            name = "DAgger" if arm == "dagger" else "BC (bot demonstrations)"
            (line,) = ax.plot(x, mean, "o-", label=f"{name} ({seeds} seeds)")
            ax.fill_between(x, mean - std, mean + std, alpha=0.2, color=line.get_color())
        if bots:
            ax.axhline(float(np.mean(bots)), color="grey", ls="--", lw=1, label="bot")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("success rate (held-out missions)")
    axes[0].set_ylim(0, 1.02)
    axes[0].legend(loc="lower right", fontsize=8)
    memory = f"history {options['history']} ({options['encoder']})" if options["history"] else "memoryless"
    memory += ", FiLM encoder" if options.get("extractor") == "film" else ""
    fig.suptitle(f"DAgger vs BC with BabyAI's bot on {options['level']} (k_max {options['k_max']}), {memory} "
                 "learner: mean ± std over seeds", fontsize=9)
    fig.tight_layout()
    with atomic_path(out / "summary.png") as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)
    status = "NO VERDICT" if passed is None else "PASS" if passed else "MISS"
    print(f"\n{status}  DAgger above BC at equal labels by more than the spread (sum of the stds over seeds) at "
          "each round after the first:")
    print("\n".join(lines))


# ---------------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--level", default="BabyAI-GoToLocal-v0", help="a BabyAI go-to level's gymnasium id")
    parser.add_argument("--k-max", type=int, default=1, help="goal slots (4 for the GoToSeq levels)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--labels-per-round", type=int, default=5_000,
                        help="expert labels (labelled steps) per round, rounded up to a multiple of --n-envs")
    parser.add_argument("--batches-per-round", type=int, default=4_000, help="BC batches after each round")
    parser.add_argument("--batch-size", type=int, default=64, help="BC batch size")
    parser.add_argument("--beta-rampdown", type=int, default=4, help="DAgger's beta reaches 0 at this round")
    parser.add_argument("--net-arch", type=int, nargs="+", default=[128, 128], help="the policy's hidden layers")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS),
                        help="the arms to run (both by default; one arm alone, e.g. to vary the learner)")
    arguments.add_eval_episodes(parser, 200)
    arguments.add_history(parser, 8, help="HistoryWrapper window of the learner (0: the memoryless learner)")
    parser.add_argument("--encoder", default="conv", choices=["conv", "gru"], help="HistoryExtractor's encoder")
    parser.add_argument("--extractor", default="flat", choices=["flat", "film"],
                        help="the current step's encoder: flat (the codes as features, KeySelectExtractor) or film "
                             "(sb3_hir_minigrid.BabyAIFiLMExtractor: the grid's codes embedded, under FiLM blocks "
                             "conditioned on the goals)")
    arguments.add_n_envs(parser, 8)
    arguments.add_seeds(parser, [0, 1, 2])
    arguments.add_ray(parser, "(arm, seed) runs")
    parser.add_argument("--collect", action="store_true", help="rebuild --out's summary from its runs and exit")
    parser.add_argument("--tiny", action="store_true",
                        help=f"a smoke-test budget (seconds): {', '.join(f'{k}={v}' for k, v in TINY.items())}")
    parser.add_argument("--out", default="babyai_dagger")
    args = parser.parse_args(argv)
    quiet_stdout()
    out = Path(args.out).resolve()
    if args.collect:
        report(out)
        return 0
    if args.tiny:
        for key, value in TINY.items():
            setattr(args, key, value)
    try:
        check_bot_available()
    except BotUnavailableError as exc:
        parser.error(str(exc))
    for option in ("rounds", "labels_per_round", "batches_per_round", "batch_size", "beta_rampdown", "eval_episodes",
                   "n_envs"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be >= 1")
    if args.batch_size > args.labels_per_round:
        parser.error(f"--batch-size {args.batch_size} is larger than a round's labels ({args.labels_per_round})")
    options = {k: v for k, v in vars(args).items()
               if k not in (*arguments.RAY_OPTIONS, "seeds", "arms", "collect", "tiny", "out")}
    print(f"DAgger vs BC with BabyAI's bot on {args.level} (k_max {args.k_max}): {args.rounds} rounds of "
          f"{args.labels_per_round} labels and {args.batches_per_round} BC batches of {args.batch_size}, "
          f"{args.n_envs} envs, history {args.history}, {args.eval_episodes} held-out episodes, seeds {args.seeds} "
          f"-> {out}", flush=True)
    for seed in args.seeds:
        print(f"bot, seed {seed}: {bot_level(options, seed, out)}", flush=True)
    configs = [dict(options=options, arm=arm, seed=seed, out=str(out)) for seed in args.seeds for arm in args.arms]
    for result in run_all(run_trial, configs, use_ray=args.ray, cpus_per_trial=args.cpus_per_trial,
                          address=args.ray_address, name="babyai_dagger"):
        last = result["curve"][-1]
        print(f"done: {result['arm']} seed {result['seed']}, success {last['success_rate']:.3f} after "
              f"{last['labels']} labels, {last['cpu_seconds']:.0f} CPU-s", flush=True)
    report(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
