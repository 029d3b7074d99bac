"""``sb3-hir train``: one algorithm, once per ``--relabel`` value (same seed and budget), evaluated as it learns.

Equal seeds give equal ``results.json`` on one machine except ``minutes`` (wall clock): the envs are seeded by
``make_vec_env``, the model (torch, numpy, its action space) by SB3's ``seed``, the replay buffer by its own
Generator, the evaluations by their own seed; torch runs on one thread (one summation order) and the global numpy
and torch state is reset before each run, so what a caller ran before does not leak in. Another machine (another
torch or BLAS build, another CPU's vector units) may round floats differently and so diverge after many updates.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure as configure_logger
from tqdm import TqdmExperimentalWarning

from sb3_hir import resolvers
from sb3_hir._validate import ArgumentError, check_number
from sb3_hir.atomic import atomic_path
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.buffers.demonstrations import as_episodes, expert_episodes
from sb3_hir.buffers.options import resolve_options
from sb3_hir.callbacks import InstructionEvalCallback
from sb3_hir.cli.algo_kwargs import algo_kwargs, check_range
from sb3_hir.cli.common import (
    ALGOS,
    STRATEGIES,
    TRAIN_HISTORY,
    TRAIN_TIMESTEPS,
    UsageError,
    add_history,
    algo_class,
    check_algo_env,
    check_expert,
    check_goal_spec,
    check_history,
    check_instruction_env_space,
    check_q_head,
    check_seed,
    checked_int,
    env_factory,
    env_kwargs,
    format_table,
    goal_spec,
    installed,
    log_formats,
    make_env,
    memory_label,
    one_of,
    policy_class,
    policy_kwargs,
    prepare_out,
    require_extra,
    save_episode_pictures,
    seed_everything,
    set_threads,
    usage,
    write_text,
)
from sb3_hir.cli.memory import check_memory, env_memory, network_memory, observation_bytes
from sb3_hir.cli.options import (
    ArgumentParser,
    add_command,
    add_demo_options,
    add_history_options,
    add_relabel_option,
    add_run_env_options,
)
from sb3_hir.env_experts import with_expert_labels
from sb3_hir.episodes import Episode
from sb3_hir.plots import plot_learning_curves

Report = Callable[[dict[str, Any]], None]

#: Columns of results.md, one row per run.
RESULT_COLUMNS = ["run", "success rate", "goals reached", "best success rate", "timesteps", "minutes"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``train``'s options (the sweep takes each of them with several values)."""
    p.add_argument("--algo", default="dqn", metavar="ALGO", help=f"one of {', '.join(ALGOS)} (default dqn)")
    add_relabel_option(p, "runs to compare (default: some none; none for recurrent-ppo)", nargs="+")
    p.add_argument("--relabel-ratio", type=float, metavar="X", default=0.8,
                   help="share of relabeled samples (default 0.8)")
    p.add_argument("--n-steps", type=int, metavar="N", default=1,
                   help="n-step returns of the replay buffer (off-policy; default 1)")
    p.add_argument("--learning-rate", type=float, metavar="X", help="learning rate (default: the algorithm's, below)")
    p.add_argument("--hidden", type=int, metavar="N", help="width of the two hidden layers (default 256)")
    p.add_argument("--algo-kwarg", action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword of the algorithm's constructor over train's defaults (repeatable), as rl-zoo3's "
                        "hyperparameters, e.g. target_update_interval=8000 or exploration_fraction=0.1")
    add_history_options(p, TRAIN_HISTORY, "--q-head", "dqn / qrdqn output head")
    p.add_argument("--timesteps", type=int, metavar="N", default=TRAIN_TIMESTEPS,
                   help=f"env steps per run (default {TRAIN_TIMESTEPS})")
    p.add_argument("--n-envs", type=int, metavar="N", default=8, help="parallel training envs (default 8)")
    p.add_argument("--seed", type=int, metavar="N", default=0, help="seed of envs, networks and relabeling (default 0)")
    p.add_argument("--eval-freq", type=int, metavar="N", help="evaluate every N timesteps (default timesteps/12)")
    p.add_argument("--eval-episodes", type=int, metavar="N", default=50, help="episodes per evaluation (default 50)")
    add_demo_options(p)
    add_run_env_options(p, "train", "no progress bar",
                        "Box(-1, 1, (2,)) MazeRunner actions, for sac / tqc / recurrent-ppo")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    return add_command(
        sub, "train", add_arguments, run, help="train with and without hindsight instruction relabeling and compare",
        description="Train one algorithm once per --relabel value (same seed and budget) with periodic evaluation; "
                    "writes TensorBoard/CSV logs, models, learning curves and episode pictures to --out.")


# ---------------------------------------------------------------------------------------------------- checks
def resolve_relabels(algo_name: str, relabels: list[str] | None) -> list[str]:
    if relabels is None:
        return ["some", "none"] if ALGOS[algo_name].off_policy else ["none"]
    for name in relabels:
        installed("relabeler", name, also=STRATEGIES)
    if len(set(relabels)) != len(relabels):
        raise UsageError(f"--relabel repeats a name: {' '.join(relabels)}")
    if not ALGOS[algo_name].off_policy and set(relabels) != {"none"}:
        raise UsageError(f"--algo {algo_name} is on-policy and has no replay buffer to relabel; use --relabel none "
                         "or an off-policy algorithm (dqn, qrdqn, sac, tqc)")
    return list(relabels)


def check_args(args: argparse.Namespace) -> tuple[str, dict[str, Any], list[str]]:
    """``train``'s checks that need no env: (algorithm, env kwargs, relabel runs), or a UsageError.

    Every value is checked here, before a run starts, whether or not a run builds the object that reads it: the
    replay buffer checks ``--relabel-ratio`` and ``--n-steps`` again when a run builds it, but a run without
    relabeling may build none, and a sweep checks its trials' options with this function alone.
    """
    algo_name = one_of("algorithm", args.algo, list(ALGOS))
    for option in ("timesteps", "n_envs", "eval_freq", "eval_episodes", "hidden", "n_steps"):
        if getattr(args, option) is not None:
            checked_int(getattr(args, option), "--" + option.replace("_", "-"), 1)
    with usage():
        check_number(args.relabel_ratio, "--relabel-ratio", 0.0, 1.0)  # as the buffer words it
    check_history(args)
    check_q_head(args, [algo_name])
    if args.learning_rate is not None:
        check_range("learning_rate", args.learning_rate, "--learning-rate")
    algo_kwargs(args, algo_name)
    if args.n_steps != 1 and not ALGOS[algo_name].off_policy:
        raise UsageError(f"--n-steps applies to off-policy algorithms; --algo {algo_name} is on-policy")
    check_seed(args.seed)
    checked_int(args.demos, "--demos", 0)
    check_demo_ratio(args)
    if uses_demos(args):
        if not ALGOS[algo_name].off_policy:
            raise UsageError(f"--demos and --demos-from fill a replay buffer; --algo {algo_name} is on-policy and has "
                             "none (use an off-policy algorithm: dqn, qrdqn, sac, tqc)")
        # imitation collects --demos and reads --demos-from's round files: one line naming the flag, as dagger's
        require_extra("imitation", "--demos" if args.demos else "--demos-from")
        if args.demos:
            installed("expert", args.expert)
    return algo_name, env_kwargs(args), resolve_relabels(algo_name, args.relabel)


#: ``--demo-ratio`` with demonstrations and no ratio given: symmetric sampling (RLPD).
DEFAULT_DEMO_RATIO = 0.5


def check_demo_ratio(args: argparse.Namespace) -> None:
    """``--demo-ratio`` in [0, 1] and only with demonstrations to serve; resolved in ``args`` (0 without any)."""
    if args.demo_ratio is not None:
        with usage():
            check_number(args.demo_ratio, "--demo-ratio", 0.0, 1.0, hint="the share of each batch from demonstrations")
        if not uses_demos(args):
            raise UsageError(f"--demo-ratio {args.demo_ratio:g} is the share of each batch served from demonstrations, "
                             "and none are given: add --demos N or --demos-from PATH, or drop --demo-ratio")
    else:
        args.demo_ratio = DEFAULT_DEMO_RATIO if uses_demos(args) else 0.0


def uses_demos(args: argparse.Namespace) -> bool:
    return bool(args.demos or args.demos_from)


def buffer_size(args: argparse.Namespace) -> int:
    return min(max(args.timesteps, 1_000), 1_000_000)


def check_train_memory(args: argparse.Namespace, algo_name: str, probe: Any) -> None:
    """The replay (or rollout) buffer, the envs and the networks must fit in memory, before any is built."""
    algo = ALGOS[algo_name]
    obs = observation_bytes(probe, args.history, args.action_features, args.env)
    hidden = args.hidden or max(algo.defaults["policy_kwargs"]["net_arch"])
    if algo.off_policy:  # observations and next observations of every row, and one batch of both in tensors
        rows = buffer_size(args)
        memory = (f"--history {args.history} and --timesteps {args.timesteps} (a replay buffer of {rows} rows)",
                  2.0 * rows * obs + 4.0 * algo.defaults["batch_size"] * obs)
    else:
        rows = algo.defaults["n_steps"] * args.n_envs
        memory = (f"--history {args.history} and --n-envs {args.n_envs} (a rollout buffer of {rows} rows)",
                  2.0 * rows * obs)
    eval_envs = min(args.eval_episodes, 10)
    check_memory([memory,
                  (f"--n-envs {args.n_envs} and --history {args.history}", env_memory(args.n_envs + eval_envs, obs)),
                  (f"--hidden {hidden}", network_memory(hidden, obs // 4))], obs)


def probe_env(args: argparse.Namespace, algo_name: str, kwargs: dict[str, Any],
              relabels: list[str]) -> tuple[int, Any, str]:
    """Build the env once and check it: (k, goal spec, its label)."""
    probe = make_env(args.env, kwargs)
    check_train_memory(args, algo_name, probe)  # from the spaces, before the window is allocated
    probe = add_history(probe, args.env, args.history, args.action_features)
    num_goals = check_instruction_env_space(probe, args.env)
    check_algo_env(algo_name, probe, args.env)
    spec, spec_label = goal_spec(args, probe, args.env)
    if any(relabel != "none" for relabel in relabels):
        check_goal_spec(probe, args.env, spec, num_goals, spec_label)
    probe.close()
    if args.demos:
        check_expert(args.expert, args.env, kwargs)
    return num_goals, spec, spec_label


def demo_episodes(args: argparse.Namespace, env_fn: Callable[[], Any]) -> list[Episode]:
    """``--demos`` episodes of the expert in the training env (seeded apart from training and evaluation), then
    ``--demos-from``'s; every run of the command gets the same ones."""
    episodes: list[Episode] = []
    if args.demos:
        # an expert that reads the env (e.g. babyai-bot) labels from a wrapper of the env: with_expert_labels adds it
        venv = make_vec_env(with_expert_labels(env_fn, args.expert), n_envs=1, seed=args.seed + 20_000)
        try:
            expert = resolvers.resolve_expert(args.expert, venv=venv)
            episodes += expert_episodes(expert, venv, args.demos, seed=args.seed)
        finally:
            venv.close()
    if args.demos_from:
        try:
            episodes += as_episodes(args.demos_from)
        except ValueError as exc:
            raise UsageError(f"--demos-from: {' '.join(str(exc).split())}") from exc
    return episodes


# ---------------------------------------------------------------------------------------------------- one run
class ReportEvaluations(BaseCallback):
    """Passes each new evaluation of ``evaluator`` to ``report`` (a sweep's Tune reporter)."""

    def __init__(self, evaluator: InstructionEvalCallback, report: Report, run: str) -> None:
        super().__init__()
        self.evaluator = evaluator
        self.report = report
        self.run = run
        self.reported = 0

    def _flush(self) -> None:
        history = self.evaluator.history
        while len(history.timesteps) > self.reported:
            i = self.reported
            self.report(dict(run=self.run, timesteps=int(history.timesteps[i]),
                             success_rate=float(history.success_rate[i]),
                             goals_reached=float(history.goals_reached[i])))
            self.reported += 1

    def _on_step(self) -> bool:
        self._flush()
        return True

    def _on_training_end(self) -> None:  # the evaluator's final evaluation comes after the last step
        self._flush()


def model_kwargs(args: argparse.Namespace, algo_name: str, relabel: str, spec: Any) -> dict[str, Any]:
    """The algorithm's keyword arguments for one run (its replay buffer checks the relabel options)."""
    algo = ALGOS[algo_name]
    kwargs = {k: v for k, v in algo.defaults.items() if k != "policy_kwargs"}
    if args.learning_rate is not None:
        kwargs["learning_rate"] = args.learning_rate
    if not algo.off_policy:
        return {**kwargs, **algo_kwargs(args, algo_name)}
    kwargs.update(buffer_size=buffer_size(args), learning_starts=min(1_000, args.timesteps // 10), train_freq=1,
                  gradient_steps=max(1, args.n_envs // 2))
    kwargs.update(algo_kwargs(args, algo_name))  # after train's own choices, before the buffer reads gamma
    if relabel != "none" or args.n_steps != 1 or uses_demos(args):
        # With relabel none and n-step returns or demonstrations: the same buffer serving recorded rows only (SB3's
        # own n-step buffer refuses Dict observations, and it has no demonstrations).
        buffer_kwargs: dict[str, Any] = (
            dict(relabeler="hindsight-instruction", hindsight_goals=relabel, goal_spec=spec) if relabel in STRATEGIES
            else dict(relabeler=relabel))
        ratio = args.relabel_ratio if relabel != "none" else 0.0
        kwargs.update(replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(
            relabel_ratio=ratio, seed=args.seed, n_steps=args.n_steps, gamma=kwargs["gamma"],
            demo_ratio=args.demo_ratio, **buffer_kwargs))
    return kwargs


#: Library argument names as the CLI's options, for the errors a library object raises about them.
OPTION_NAMES = {"relabel_ratio": "--relabel-ratio", "n_steps": "--n-steps", "learning_rate": "--learning-rate",
                "demo_ratio": "--demo-ratio"}


def usage_error(exc: ValueError | TypeError, label: str) -> UsageError:
    """A library object's ``ValueError`` (or ``TypeError``) as the CLI's one line, naming the option where the error
    is an :class:`~sb3_hir._validate.ArgumentError` about an argument the CLI sets (read from the error, not from its
    message)."""
    if isinstance(exc, ArgumentError) and exc.argument in OPTION_NAMES:
        return UsageError(f"{OPTION_NAMES[exc.argument]} {' '.join(exc.detail.split())}")
    return UsageError(f"cannot build {label}: {' '.join(str(exc).split())}")


def instruction_keys(spec: Any) -> list[str]:
    """Observation keys of the instruction beyond the goals that the policy must see: the groups of a goal spec that
    declares them (goals of one group may be reached in either order)."""
    if spec is None or isinstance(spec, str):  # a name: the buffer resolves it; such a spec declares no groups here
        return []
    key = spec.groups_key
    return [key] if key else []


def build_model(args: argparse.Namespace, algo_name: str, relabel: str, spec: Any, venv: Any,
                demos: list[Episode]) -> Any:
    """The run's model, its replay buffer holding ``demos``."""
    algo = ALGOS[algo_name]
    try:
        model = algo_class(algo_name)(policy_class(algo_name, args.q_head), venv, seed=args.seed, verbose=0,
                                      **model_kwargs(args, algo_name, relabel, spec),
                                      policy_kwargs=policy_kwargs(algo, args.hidden, args.history,
                                                                  args.history_encoder, args.action_features,
                                                                  args.q_head, instruction_keys(spec)))
    except (ValueError, TypeError) as exc:  # TypeError: an --algo-kwarg value of the wrong type
        raise usage_error(exc, f"{algo_name}-{relabel}") from exc
    if demos:
        try:
            model.replay_buffer.add_demonstrations(demos)
        except ValueError as exc:
            source = "--demos-from" if args.demos_from else "--demos"
            raise UsageError(f"{source}: {' '.join(str(exc).split())}") from exc
    return model


def check_buffers(args: argparse.Namespace, algo_name: str, relabels: list[str], spec: Any, venv: Any) -> None:
    """Every run's replay buffer options, checked before the first run starts, by the resolver the buffer runs
    (``resolve_options``; the demonstrations' share as the region checks it), without allocating a buffer.

    Without it ``--relabel none some --relabel-ratio 2`` would train the ``none`` run (which builds no relabeling
    buffer) before the ``some`` run's buffer refuses the ratio.
    """
    for relabel in relabels:
        kwargs = model_kwargs(args, algo_name, relabel, spec)
        if "replay_buffer_class" not in kwargs:
            continue
        options = dict(kwargs["replay_buffer_kwargs"])
        demo_ratio, _seed = options.pop("demo_ratio", 0.0), options.pop("seed", None)
        try:
            check_number(demo_ratio, "demo_ratio", 0.0, 1.0, hint="the share of each batch from demonstrations")
            resolve_options(venv.observation_space, None, kwargs["replay_buffer_class"].__name__,
                            buffer_size=2 * venv.num_envs, n_envs=venv.num_envs, **options)
        except ValueError as exc:
            raise usage_error(exc, f"{algo_name}-{relabel}") from exc


def learn(model: Any, args: argparse.Namespace, callbacks: list[Any]) -> bool:
    """Train for ``--timesteps``; True when Ctrl-C stopped it (the run keeps what it has)."""
    try:
        with warnings.catch_warnings():
            # SB3's progress bar is tqdm.rich, which warns on every run that it is experimental.
            warnings.simplefilter("ignore", TqdmExperimentalWarning)
            model.learn(args.timesteps, callback=callbacks, progress_bar=not args.no_progress)
    except KeyboardInterrupt:
        return True
    return False


def run_one(args: argparse.Namespace, algo_name: str, relabel: str, spec: Any, spec_label: str, num_goals: int,
            out: Path, model: Any, venv: Any, kwargs: dict[str, Any], report: Report | None) -> dict[str, Any]:
    """One relabel value's run, written to ``out/<algo>-<relabel>``; returns its results row and curve."""
    label = f"{algo_name}-{relabel}"
    run_dir = out / label
    run_dir.mkdir(parents=True, exist_ok=True)
    eval_seed = args.seed + 10_000
    eval_env = make_vec_env(env_factory(args.env, kwargs, args.history, args.action_features),
                            n_envs=min(args.eval_episodes, 10),
                            seed=eval_seed)
    model.set_logger(configure_logger(str(run_dir), log_formats()))
    callback = InstructionEvalCallback(eval_env, eval_freq=args.eval_freq or max(args.timesteps // 12, 1),
                                       n_eval_episodes=args.eval_episodes, seed=eval_seed, verbose=1)
    callbacks: list[Any] = [callback] + ([ReportEvaluations(callback, report, label)] if report else [])
    print(f"== {label}: relabel {relabel!r}, logs in {run_dir}")
    start = time.perf_counter()
    interrupted = learn(model, args, callbacks)
    minutes = (time.perf_counter() - start) / 60
    with atomic_path(run_dir / "model.zip") as tmp:
        model.save(tmp)
    write_text(run_dir / "run.json", json.dumps(dict(
        algo=algo_name, env=args.env, env_kwargs=kwargs, relabel=relabel, goal_spec=spec_label,
        relabel_ratio=args.relabel_ratio, n_steps=args.n_steps, learning_rate=args.learning_rate,
        algo_kwargs=algo_kwargs(args, algo_name),
        hidden=args.hidden, history=args.history, history_encoder=args.history_encoder,
        action_features=args.action_features, q_head=args.q_head, demos=args.demos,
        expert=args.expert if args.demos else None, demos_from=args.demos_from,
        demo_ratio=args.demo_ratio, seed=args.seed, timesteps=args.timesteps,
        timesteps_done=int(model.num_timesteps), n_envs=args.n_envs,
        interrupted=interrupted), indent=2) + "\n")
    history = callback.history
    try:
        if interrupted and not history.timesteps:
            return dict(interrupted=True, history=None)
        plot_run_curve(history, run_dir, num_goals, f"{algo_name} on {args.env}, relabel {relabel}", relabel)
        if not interrupted:
            save_episode_pictures(model, args.env, kwargs, run_dir, seed=eval_seed, best_of=10, history=args.history,
                                  features=args.action_features)
    finally:
        venv.close()
        eval_env.close()
    return dict(run=label + (" (interrupted)" if interrupted else ""), relabel=relabel,
                success_rate=history.success_rate[-1], goals_reached=history.goals_reached[-1],
                best_success_rate=max(history.success_rate), timesteps=history.timesteps[-1],
                minutes=round(minutes, 2), interrupted=interrupted, history=history)


def demo_label(args: argparse.Namespace, demos: list[Episode]) -> str:
    if not demos:
        return ""
    return f"{len(demos)} demonstrations ({sum(map(len, demos))} steps, {args.demo_ratio:g} of each batch), "


def plot_run_curve(history: Any, run_dir: Path, num_goals: int, title: str, relabel: str) -> None:
    plot_learning_curves({f"relabel {relabel}": history}, run_dir / "learning_curve.png", num_goals=num_goals,
                         title=title)


# ---------------------------------------------------------------------------------------------------- the command
def run(args: argparse.Namespace, report: Report | None = None) -> int:
    """``sb3-hir train``; ``report`` (a sweep's reporter) receives every evaluation as a dict."""
    algo_name, kwargs, relabels = check_args(args)
    num_goals, spec, spec_label = probe_env(args, algo_name, kwargs, relabels)
    set_threads()
    env_fn = env_factory(args.env, kwargs, args.history, args.action_features)
    demos = demo_episodes(args, env_fn)
    out: Path | None = None
    curves: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    for relabel in relabels:
        seed_everything(args.seed)
        venv = make_vec_env(env_fn, n_envs=args.n_envs, seed=args.seed)
        if out is None:
            check_buffers(args, algo_name, relabels, spec, venv)
        model = build_model(args, algo_name, relabel, spec, venv, demos)  # bad options fail before the run directory
        if out is None:
            out, _lock_handle = prepare_out("train", args.out, args.overwrite)
            print(f"sb3-hir train: {algo_name} on {args.env} {kwargs}, {args.timesteps} timesteps x {len(relabels)} "
                  f"runs ({', '.join(relabels)}), goal spec {spec_label}, {memory_label(args)}, "
                  f"{demo_label(args, demos)}seed {args.seed} -> {out}")
        row = run_one(args, algo_name, relabel, spec, spec_label, num_goals, out, model, venv, kwargs, report)
        history = row.pop("history")
        if history is None:
            break
        curves[f"relabel {relabel}"] = history
        results.append(row)
        if row["interrupted"]:
            break
    assert out is not None
    return write_results(args, algo_name, out, curves, results, relabels, num_goals)


def write_results(args: argparse.Namespace, algo_name: str, out: Path, curves: dict[str, Any],
                  results: list[dict[str, Any]], relabels: list[str], num_goals: int) -> int:
    if curves:
        plot_learning_curves(curves, out / "learning_curve.png", num_goals=num_goals,
                             title=f"{algo_name} on {args.env}: success and goals reached during training")
    rows = [[r["run"], f"{r['success_rate']:.2f}", f"{r['goals_reached']:.2f} / {num_goals}",
             f"{r['best_success_rate']:.2f}", r["timesteps"], f"{r['minutes']:.1f}"] for r in results]
    table = format_table(RESULT_COLUMNS, rows)
    write_text(out / "results.md", table + "\n")
    write_text(out / "results.json", json.dumps(results, indent=2) + "\n")
    interrupted = bool(results and results[-1]["interrupted"]) or len(results) < len(relabels)
    which = "Last evaluation before Ctrl-C" if interrupted else "Final evaluation"
    print(f"\n{which} ({args.eval_episodes} episodes, seed {args.seed + 10_000}); run directory {out}\n{table}")
    if interrupted:
        raise KeyboardInterrupt
    return 0


def standalone_parser() -> argparse.ArgumentParser:
    """``train``'s options alone, for a sweep trial (no sub-command); a value the options refuse (``n-steps=1.5``
    from a ``--space``) raises a :class:`UsageError`, which the sweep names its edge or trial in."""
    p = ArgumentParser(prog="sb3-hir train")
    p.raises = True
    add_arguments(p)
    return p

