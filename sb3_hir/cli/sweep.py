"""``sb3-hir sweep``: ``train`` over a grid of options and seeds, or an Optuna search, as Ray Tune trials.

Every claim in this project compares seeds and configurations; one process runs them one after another. A sweep
hands them to Ray Tune instead: on this machine by default (``ray.init()``), or on an existing Ray cluster
(``--address auto`` / ``ray://host:10001``). Each trial is one ``train`` run (one relabel value, one seed) that
writes the run directory ``train`` writes, ``--out``/runs/seed<N>-<digest of its options>, and reports every
evaluation to Tune. On a cluster, ``--out`` must be on storage every node shares (as Tune's own storage must).
When the trials end, the sweep writes ``results.md`` / ``results.json`` (mean ± std over seeds per configuration)
and ``learning_curve.png`` (mean and spread bands) in ``--out``; an interrupted sweep resumes with ``--resume``
(Tune's restore), without rerunning finished trials. Ray and Optuna are the optional ``sweep`` extra: they are
imported where the sweep runs, after :func:`~sb3_hir.extras.require` named the extra. Ray is started, and trials'
errors read, by :mod:`sb3_hir.experiment.runner`, the runner the benchmarks use too.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import torch

from sb3_hir.cli import common
from sb3_hir.cli import train as train_command
from sb3_hir.cli.common import (
    TRAIN_TIMESTEPS,
    UsageError,
    check_seed,
    checked_int,
    format_table,
    literal,
    lock,
    parse_kwargs,
    prepare_out,
    require_extra,
    write_text,
)
from sb3_hir.experiment.runner import ray_session, trial_error, tune_run_config
from sb3_hir.experiment.table import mean_and_std, mean_std
from sb3_hir.plots import plot_sweep_curves

#: train options a trial sets itself (or that do not apply to a sweep).
TRIAL_OWNED = {"out", "overwrite", "seed", "no_progress", "help"}

#: ``--search optuna``: the documented search space (train options and their ranges).
OPTUNA_SPACE: dict[str, tuple[str, Any]] = {
    "learning_rate": ("loguniform", (1e-4, 3e-3)),
    "relabel_ratio": ("uniform", (0.5, 0.95)),
    "relabel": ("choice", ["some", "all"]),
    "n_steps": ("choice", [1, 3]),
    "hidden": ("choice", [64, 128, 256]),
    "history": ("choice", [0, 8, 16, 32]),
    # searched jointly: the per-action head needs a per-action table to read
    "action_features+q_head": ("choice", ["none+standard", "effects+standard", "env+standard", "effects+per-action",
                                          "env+per-action"]),
}

METRIC = "goals_reached"

#: ``--space``'s distributions: how many values each takes after its name.
SPACE_KINDS = ("loguniform", "uniform", "choice")
#: ``--space NAME`` prefix of an algorithm keyword, searched through train's ``--algo-kwarg``.
ALGO_PREFIX = "algo."

#: Written in a trial's run directory when its run has finished: the evaluations it reported.
EVALUATIONS = "sweep-evaluations.json"


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``sweep`` sub-command: every ``train`` option, each accepting several values."""
    train = train_command.standalone_parser()
    p = sub.add_parser(
        "sweep", help="train over a grid of options x seeds (or an Optuna search) as Ray Tune trials",
        description="Runs one train run per combination of the given option values and --seeds as a Ray Tune "
                    "trial, locally or on a Ray cluster, then writes results.md/json (mean +- std over seeds) and "
                    "a learning curve with spread bands to --out. Needs the 'sweep' extra.")
    for action in train._actions:
        if action.dest in TRIAL_OWNED or not action.option_strings:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            p.add_argument(*action.option_strings, dest=action.dest, action="store_true", help=action.help)
        elif isinstance(action, argparse._AppendAction):
            p.add_argument(*action.option_strings, dest=action.dest, action="append", default=[],
                           metavar=action.metavar, help=action.help)
        else:
            p.add_argument(*action.option_strings, dest=action.dest, nargs="+", type=action.type,
                           metavar=action.metavar, help=f"{action.help}; several values are swept over")
    g = p.add_argument_group("sweep")
    g.add_argument("--seeds", type=int, nargs="+", default=[0], metavar="N", help="seeds of every configuration")
    g.add_argument("--out", metavar="DIR", help="sweep directory (default runs/sweep-<time>-<pid>-<random>)")
    g.add_argument("--overwrite", action="store_true", help="clear a non-empty --out made by an earlier sb3-hir run")
    g.add_argument("--resume", action="store_true", help="resume the interrupted sweep in --out (Tune's restore)")
    g.add_argument("--address", metavar="ADDR",
                   help="join a Ray cluster (auto, or ray://host:10001); default: start Ray on this machine")
    g.add_argument("--cpus-per-trial", type=int, default=1, metavar="N", help="CPUs per trial (default 1)")
    g.add_argument("--max-concurrent", type=int, metavar="N", help="trials at once (default: as the CPUs allow)")
    g.add_argument("--search", choices=["grid", "optuna"], default="grid",
                   help="grid (default) or optuna: search " + ", ".join(OPTUNA_SPACE) + " with ASHA early stopping")
    g.add_argument("--trials", type=int, default=8, metavar="N", help="--search optuna: number of trials")
    g.add_argument("--space", action="append", default=[], metavar="NAME=KIND:ARGS",
                   help="--search optuna: search NAME, a train option (learning-rate, n-steps, ...) or algo.KEY (an "
                        "--algo-kwarg, e.g. algo.target_update_interval), over loguniform:LOW:HIGH, uniform:LOW:HIGH "
                        "or choice:V1,V2,...; repeatable; given, it replaces the default space")
    p.set_defaults(func=run)
    return p


# ---------------------------------------------------------------------------------------------------- the grid
def sweep_values(args: argparse.Namespace, train: argparse.ArgumentParser) -> tuple[dict[str, list[Any]], list[str]]:
    """The swept options (dest -> values, in train's order) and the fixed argv (flags and KEY=VALUE options)."""
    values: dict[str, list[Any]] = {}
    fixed: list[str] = []
    for action in train._actions:
        if action.dest in TRIAL_OWNED or not action.option_strings:
            continue
        value = getattr(args, action.dest, None)
        flag = action.option_strings[-1]
        if isinstance(action, argparse._StoreTrueAction):
            fixed += [flag] if value else []
        elif isinstance(action, argparse._AppendAction):
            for item in value or []:
                fixed += [flag, item]
        elif value is not None:
            values[action.dest] = list(dict.fromkeys(value))  # repeated values are one configuration
    return values, fixed


def expand_grid(values: dict[str, list[Any]], seeds: Sequence[int]) -> list[dict[str, Any]]:
    """Every combination of the option values, times every seed: one dict of train options per trial."""
    keys = list(values)
    return [{**dict(zip(keys, combo, strict=True)), "seed": seed}
            for combo in itertools.product(*(values[key] for key in keys)) for seed in dict.fromkeys(seeds)]


def train_argv(options: dict[str, Any], fixed: Sequence[str], train: argparse.ArgumentParser) -> list[str]:
    """The ``sb3-hir train`` arguments of one trial's options."""
    actions = {action.dest: action for action in train._actions if action.option_strings}
    argv: list[str] = []
    for dest, value in options.items():
        if dest.startswith(ALGO_PREFIX):
            argv += ["--algo-kwarg", f"{dest[len(ALGO_PREFIX):]}={_format(value)}"]
            continue
        # a jointly searched pair ("action_features+q_head": "env+per-action") is two options
        for part, part_value in zip(dest.split("+"), str(value).split("+") if "+" in dest else [value], strict=True):
            argv += [actions[part].option_strings[-1], _format(part_value)]
    return [*argv, *fixed]


def _format(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def configuration(options: dict[str, Any], swept: Sequence[str]) -> str:
    """A configuration's label: its swept options (the seed is what varies inside one)."""
    shown = [f"{key.replace('_', '-')}={_format(options[key])}" for key in swept if key in options]
    return " ".join(shown) or "default"


def parse_space(pairs: Sequence[str], train: argparse.ArgumentParser) -> dict[str, tuple[str, Any]]:
    """``--space NAME=KIND:ARGS`` as :data:`OPTUNA_SPACE` writes a space (the default when none is given)."""
    if not pairs:
        return dict(OPTUNA_SPACE)
    searchable = {action.dest: action for action in train._actions if action.option_strings
                  and action.dest not in TRIAL_OWNED and action.nargs in (None, "+")
                  and not isinstance(action, (argparse._StoreTrueAction, argparse._AppendAction))}
    space: dict[str, tuple[str, Any]] = {}
    for pair in pairs:
        name, sep, rest = pair.partition("=")
        kind, _, raw = rest.partition(":")
        shape = "NAME=loguniform:LOW:HIGH, NAME=uniform:LOW:HIGH or NAME=choice:V1,V2,..."
        if not sep or kind not in SPACE_KINDS or not raw:
            raise UsageError(f"--space takes {shape}; got {pair!r}")
        dest = name if name.startswith(ALGO_PREFIX) else name.lstrip("-").replace("-", "_")
        if dest.startswith(ALGO_PREFIX):
            if not dest[len(ALGO_PREFIX):].isidentifier():
                raise UsageError(f"--space {pair!r}: algo.KEY needs KEY a keyword of the algorithm")
        elif dest not in searchable:
            raise UsageError(f"--space {pair!r}: {name!r} is not a train option a trial can take; choose from "
                             f"{', '.join(d.replace('_', '-') for d in searchable)} or algo.KEY")
        if dest in space:
            raise UsageError(f"--space names {name!r} twice")
        if kind == "choice":
            values = [literal(v) for v in raw.split(",")]
            if any(v == "" for v in values):
                raise UsageError(f"--space {pair!r}: choice takes values separated by commas, none empty")
            space[dest] = (kind, list(dict.fromkeys(values)))
            continue
        try:
            low, high = (float(v) for v in raw.split(":"))
        except ValueError:
            raise UsageError(f"--space {pair!r}: {kind} takes two numbers, LOW:HIGH") from None
        if not (math.isfinite(low) and math.isfinite(high) and low < high and (kind == "uniform" or low > 0)):
            raise UsageError(f"--space {pair!r}: {kind} needs finite LOW < HIGH"
                             + (", LOW > 0" if kind == "loguniform" else ""))
        space[dest] = (kind, (low, high))
    return space


def space_samples(space: dict[str, tuple[str, Any]]) -> list[dict[str, Any]]:
    """Configurations at the edges of ``space`` (each choice, each bound), to check before any trial starts."""
    edges = {key: list(bounds) for key, (_, bounds) in space.items()}
    width = max(len(values) for values in edges.values())
    return [{key: values[i % len(values)] for key, values in edges.items()} for i in range(width)]


def space_edges(space: dict[str, tuple[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(label, options) for every edge of ``space`` on its own (each choice, each bound, the other searched options
    at train's defaults), then the edges together (:func:`space_samples`): a bad edge is named alone, and edges
    that only fail together are caught too."""
    alone = [(f"{key if key.startswith(ALGO_PREFIX) else key.replace('_', '-')}={_format(value)}", {key: value})
             for key, (_, bounds) in space.items() for value in bounds]
    together = [(configuration(sample, list(space)), sample) for sample in space_samples(space)]
    return alone + together


# ---------------------------------------------------------------------------------------------------- a trial
def _trial(config: dict[str, Any]) -> None:
    """One Tune trial: a ``train`` run writing its run directory inside the trial's directory."""
    import ray
    from ray import tune

    torch.set_num_threads(1)
    run = config["run"]
    options = dict(run["options"])
    # Our own directory per (options, seed), not Tune's trial directory: a reused worker process may still see
    # the previous trial's context, and the name must survive a resume.
    out = Path(run["out"]) / "runs" / run_name(options)
    parser = train_command.standalone_parser()
    args = parser.parse_args([*train_argv(options, run["fixed"], parser), "--out", str(out), "--overwrite",
                              "--no-progress"])
    node = ray.get_runtime_context().get_node_id()
    done = out / EVALUATIONS
    if done.is_file():  # the run finished before an interrupt, but Tune had not recorded it: report, don't rerun
        for metrics in json.loads(done.read_text()):
            tune.report({**metrics, "node": node})
        return
    reported: list[dict[str, Any]] = []

    def report(metrics: dict[str, Any]) -> None:
        reported.append(metrics)
        tune.report({**metrics, "node": node})

    try:
        train_command.run(args, report=report)
    except UsageError as exc:  # bad values of this trial's options: one line in the sweep's results
        raise ValueError(str(exc)) from None
    write_text(done, json.dumps(reported) + "\n")


def run_name(options: dict[str, Any]) -> str:
    """A trial's run directory name: its seed and a digest of its options (stable across a resume)."""
    digest = hashlib.sha1(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"seed{options.get('seed', 0)}-{digest}"


def _train_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["train"]


# ---------------------------------------------------------------------------------------------------- the sweep
def run(args: argparse.Namespace) -> int:
    """``sb3-hir sweep``."""
    require_extra("ray.tune", "sb3-hir sweep")
    if args.search == "optuna":
        require_extra("optuna", "sb3-hir sweep --search optuna")
    train = train_command.standalone_parser()
    values, fixed = sweep_values(args, train)
    _check_sweep_options(args)
    space = parse_space(args.space, train)
    if args.search == "optuna":
        _check_optuna_space(args, values, fixed, train, space)
    if args.resume and not args.out:
        raise UsageError("--resume needs --out DIR, the sweep to resume")
    trials = _grid_trials(values, args.seeds, fixed, train) if args.search == "grid" else []
    out, handle = _sweep_out(args)
    try:
        return _run_tune(args, out, trials, values, fixed, train, space)
    finally:
        handle.close()


def _check_sweep_options(args: argparse.Namespace) -> None:
    """The sweep's own counts and seeds, and ``--space`` only with ``--search optuna``."""
    for option, value in (("--cpus-per-trial", args.cpus_per_trial), ("--max-concurrent", args.max_concurrent),
                          ("--trials", args.trials)):
        if value is not None:
            checked_int(value, option, 1)
    for seed in args.seeds:
        check_seed(seed, "--seeds")
    if args.space and args.search != "optuna":
        raise UsageError("--space is the search space of --search optuna; add --search optuna or drop --space")


def _check_optuna_space(args: argparse.Namespace, values: dict[str, list[Any]], fixed: list[str],
                        train: argparse.ArgumentParser, space: dict[str, tuple[str, Any]]) -> None:
    """``--search optuna``'s options before any trial starts: the space alone varies (one value of every other
    option, none fixed by ``--algo-kwarg``, one seed), and every edge of the space passes train's checks."""
    searched = {part for key in space for part in key.split("+")}
    conflicting = [key for key, given in values.items() if len(given) > 1 or key in searched]
    if conflicting:
        raise UsageError(f"--search optuna searches {', '.join(space)} itself and takes one value of "
                          f"each other option; drop --{', --'.join(k.replace('_', '-') for k in conflicting)}")
    fixed_algo = set(parse_kwargs(args.algo_kwarg, option="--algo-kwarg"))
    shadowed = sorted(key for key in space if key.startswith(ALGO_PREFIX) and key[len(ALGO_PREFIX):] in fixed_algo)
    if shadowed:
        raise UsageError(f"--algo-kwarg fixes {', '.join(k[len(ALGO_PREFIX):] for k in shadowed)}, which --space "
                         "searches; drop one of them")
    if len(args.seeds) != 1:
        raise UsageError("--search optuna runs one seed per trial; give one --seeds value")
    # every edge of the space passes train's checks that need no env, the ranges of its values included (an
    # algo.KEY typo or n-steps=choice:0,3 fails here, not in a trial)
    for label, sample in space_edges(space):
        options = {**{key: given[0] for key, given in values.items()}, **sample}
        try:
            train_command.check_args(train.parse_args(train_argv(options, fixed, train)))
        except UsageError as exc:
            raise UsageError(f"--space {label}: {exc}") from None


def _grid_trials(values: dict[str, list[Any]], seeds: Sequence[int], fixed: list[str],
                 train: argparse.ArgumentParser) -> list[dict[str, Any]]:
    """The grid's trials (:func:`expand_grid`), after every configuration passed train's checks that need no env
    (a typo fails here, not in trial 7); what only a run can find (an env rejecting its options) fails that trial
    alone."""
    trials = expand_grid(values, seeds)
    for options in {json.dumps({k: v for k, v in t.items() if k != "seed"}, sort_keys=True): t
                    for t in trials}.values():
        try:
            train_command.check_args(train.parse_args(train_argv(options, fixed, train)))
        except UsageError as exc:
            swept = [key for key, given in values.items() if len(given) > 1]
            raise UsageError(f"{configuration(options, swept)}: {exc}") from None
    return trials


def _sweep_out(args: argparse.Namespace) -> tuple[Path, IO[str]]:
    """The sweep's directory (resolved) and its lock: the one to resume (``--resume``: it must hold ``tune/``), or a
    new one (:func:`prepare_out`)."""
    if args.resume:
        out = Path(args.out)
        if not (out / "tune").is_dir():
            raise UsageError(f"--resume: {str(out)!r} holds no sweep to resume (no tune/ directory)")
        handle = lock(out)
    else:
        out, handle = prepare_out("sweep", args.out, args.overwrite)
    return out.resolve(), handle


def _run_tune(args: argparse.Namespace, out: Path, trials: list[dict[str, Any]], values: dict[str, list[Any]],
              fixed: list[str], train: argparse.ArgumentParser, space: dict[str, tuple[str, Any]]) -> int:
    from ray import tune

    # The runner's Ray session: a fresh local instance unless --address names a cluster.
    with ray_session(args.address, feature="sb3-hir sweep", log_to_driver=False) as ray:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        concurrent = args.max_concurrent or max(1, cpus // args.cpus_per_trial)
        trainable = tune.with_resources(_trial, {"cpu": args.cpus_per_trial})
        swept = [key for key, given in values.items() if len(given) > 1]
        if args.search == "optuna":
            swept = list(space)
        if args.resume:
            tuner = tune.Tuner.restore(str(out / "tune"), trainable=trainable, resume_errored=False,
                                       restart_errored=False)
            swept = json.loads((out / "sweep.json").read_text())["swept"]
        else:
            # What a resume needs besides Tune's own state: which options were swept, for the labels.
            write_text(out / "sweep.json", json.dumps(dict(swept=swept, search=args.search), indent=2) + "\n")
            if args.search == "grid":
                tuner = tune.Tuner(
                    trainable,
                    param_space={"run": tune.grid_search([{"options": t, "fixed": fixed, "out": str(out)}
                                                          for t in trials])},
                    tune_config=tune.TuneConfig(max_concurrent_trials=concurrent, reuse_actors=True,
                                                trial_dirname_creator=_trial_dirname),
                    run_config=tune_run_config(out, "tune"),
                )
            else:
                tuner = _optuna_tuner(args, trainable, values, fixed, concurrent, out, space)
        print(f"sb3-hir sweep: {len(trials) or args.trials} trials, {concurrent} at once on {cpus} CPUs "
              f"({'cluster ' + args.address if args.address else 'this machine'}) -> {out}", flush=True)
        with quiet_trial_errors():
            grid = tuner.fit()
    rows, curves, failed = _collect(grid, swept)
    _write_results(out, rows, curves, failed, swept)
    table = (out / "results.md").read_text()
    print(f"\n{table}")
    if args.search == "optuna" and rows:
        best = grid.get_best_result(metric=METRIC, mode="max", scope="last", filter_nan_and_inf=True)
        assert best.config is not None and best.metrics is not None, "a Tune result carries its config and metrics"
        options = dict(best.config["run"]["options"])
        command = "sb3-hir train " + " ".join(train_argv(options, best.config["run"]["fixed"], train))
        write_text(out / "best.txt", command + "\n")
        print(f"best configuration ({METRIC} {best.metrics.get(METRIC, math.nan):.2f}): {command}")
    # A failed trial leaves a hole in the table a script reading the exit code would not see: name each one.
    for line in failed:
        print(f"sb3-hir sweep: error: trial {line}", file=sys.stderr)
    if failed:
        print(f"sb3-hir sweep: {len(failed)} of {len(grid)} trials failed; their tracebacks are in "
              f"{out / 'tune'}/*/error.txt", file=sys.stderr)
    return 1 if failed else 0


@contextlib.contextmanager
def quiet_trial_errors() -> Iterator[None]:
    """Keep Tune's log of a failed trial (its traceback, as it happens) off stderr unless ``--verbose``: the sweep
    names each failed trial in one line when the trials end, and Tune keeps the traceback in the trial's
    ``error.txt``."""
    logger = logging.getLogger("ray.tune")
    level = logger.level
    if not common.VERBOSE:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _trial_dirname(trial: Any) -> str:
    """``trial-<id>-seed<N>`` (Tune's default name strings every option together)."""
    return f"trial-{trial.trial_id}-seed{trial.config['run']['options'].get('seed', 0)}"


def _optuna_tuner(args: argparse.Namespace, trainable: Any, values: dict[str, list[Any]], fixed: list[str],
                  concurrent: int, out: Path, space_spec: dict[str, tuple[str, Any]]) -> Any:
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.optuna import OptunaSearch

    kinds: dict[str, Callable[..., Any]] = {"loguniform": tune.loguniform, "uniform": tune.uniform,
                                            "choice": tune.choice}
    space = {key: kinds[kind](*bounds) if kind != "choice" else tune.choice(bounds)
             for key, (kind, bounds) in space_spec.items()}
    options = {key: given[0] for key, given in values.items()}
    timesteps = int(options.get("timesteps", TRAIN_TIMESTEPS))
    scheduler = ASHAScheduler(time_attr="timesteps", max_t=timesteps, grace_period=max(1, timesteps // 4),
                              reduction_factor=2)
    return tune.Tuner(
        trainable,
        param_space={"run": {"options": {**options, **space, "seed": args.seeds[0]}, "fixed": fixed, "out": str(out)}},
        tune_config=tune.TuneConfig(search_alg=OptunaSearch(seed=args.seeds[0]), scheduler=scheduler,
                                    num_samples=args.trials, metric=METRIC, mode="max",
                                    max_concurrent_trials=concurrent, trial_dirname_creator=_trial_dirname,
                                    reuse_actors=True),
        run_config=tune_run_config(out, "tune"),
    )


def _collect(grid: Any, swept: Sequence[str]) -> tuple[list[dict[str, Any]], dict[str, list[Any]], list[str]]:
    """Per configuration: the final evaluation of each seed, and each seed's curve; and the failed trials."""
    finals: dict[str, list[dict[str, Any]]] = {}
    curves: dict[str, list[Any]] = {}
    failed: list[str] = []
    for result in grid:
        options = result.config["run"]["options"]
        label = configuration(options, swept)
        if result.error is not None:
            first = trial_error(result.error)[:300]  # the trial's own exception
            failed.append(f"{label} seed {options['seed']}: {first}")
            continue
        frame = result.metrics_dataframe
        if frame is None or frame.empty or "timesteps" not in frame:
            failed.append(f"{label} seed {options['seed']}: no evaluation reported")
            continue
        last = frame.iloc[-1]
        finals.setdefault(label, []).append(dict(seed=options["seed"], success_rate=float(last["success_rate"]),
                                                 goals_reached=float(last["goals_reached"]),
                                                 timesteps=int(last["timesteps"]), node=str(last.get("node", ""))))
        curves.setdefault(label, []).append(frame[["timesteps", "success_rate", "goals_reached"]].to_numpy())
    rows = []
    for label, runs in finals.items():
        rows.append(dict(configuration=label, seeds=sorted(r["seed"] for r in runs), runs=runs,
                         success_rate=mean_and_std([r["success_rate"] for r in runs]),
                         goals_reached=mean_and_std([r["goals_reached"] for r in runs])))
    return rows, curves, failed


def _write_results(out: Path, rows: list[dict[str, Any]], curves: dict[str, list[Any]], failed: list[str],
                   swept: Sequence[str]) -> None:
    table = format_table(
        ["configuration", "seeds", "success rate", "goals reached"],
        [[r["configuration"], " ".join(map(str, r["seeds"])),
          mean_std([run["success_rate"] for run in r["runs"]]),
          mean_std([run["goals_reached"] for run in r["runs"]])] for r in rows])
    lines = [table, ""] + ([f"failed trials ({len(failed)}):", *[f"- {line}" for line in failed], ""] if failed
                           else [])
    write_text(out / "results.md", "\n".join(lines))
    write_text(out / "results.json", json.dumps(dict(swept=list(swept), configurations=rows, failed=failed),
                                                     indent=2) + "\n")
    if curves:
        plot_sweep_curves(curves, out / "learning_curve.png", title=f"sb3-hir sweep: mean and spread over seeds "
                                                                     f"({os.path.basename(out)})")
