"""Command line options that the benchmark scripts share.

Why: the training benchmarks repeat the same ``argparse`` blocks (seeds, budgets, the MazeRunner size, learner
hyperparameters, Ray Tune trials); one definition keeps their names, types and help texts from drifting apart.
Each function adds one option or one group, with the per-script defaults passed in, in the order of the call, so
that a script's ``vars(args)`` (printed or saved by some of them) keeps its order. It lives in the library, not in
``benchmarks/``, so that no benchmark imports another.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

#: Where the runs execute and where their records go, not what they compute (left out of the runs' configs).
RAY_OPTIONS = ("ray", "ray_address", "cpus_per_trial", "records")

#: Type of each learner option of :func:`add_learner`, by its ``argparse`` dest.
LEARNER_TYPES: dict[str, type] = {
    "learning_rate": float,
    "learning_starts": int,
    "batch_size": int,
    "gamma": float,
    "gradient_steps": int,
    "exploration_fraction": float,
}

#: Help of ``--budgets`` where the script trains once and evaluates along the way.
BUDGETS_HELP = "env steps at which to evaluate; the last one is the training length"


def _flag(dest: str) -> str:
    """``learning_rate`` -> ``--learning-rate``."""
    return "--" + dest.replace("_", "-")


def add_seeds(parser: argparse.ArgumentParser, default: Sequence[int]) -> None:
    """``--seeds``: one run per seed (a fresh list, so that parses do not share the default)."""
    parser.add_argument("--seeds", type=int, nargs="+", default=list(default))


def add_budgets(parser: argparse.ArgumentParser, default: Sequence[int] | None, help: str | None = None) -> None:
    """``--budgets``: env steps at which runs are evaluated (``None``: the script picks them after parsing)."""
    parser.add_argument("--budgets", type=int, nargs="+", default=None if default is None else list(default),
                        help=help)


def add_eval_episodes(parser: argparse.ArgumentParser, default: int) -> None:
    """``--eval-episodes``: episodes per evaluation."""
    parser.add_argument("--eval-episodes", type=int, default=default)


def add_n_envs(parser: argparse.ArgumentParser, default: int) -> None:
    """``--n-envs``: environments of the vectorized training env."""
    parser.add_argument("--n-envs", type=int, default=default)


def add_history(parser: argparse.ArgumentParser, default: int | Sequence[int], help: str | None = None) -> None:
    """``--history``: the HistoryWrapper window; a sequence default makes it a list of windows to compare."""
    if isinstance(default, int):
        parser.add_argument("--history", type=int, default=default, help=help)
    else:
        parser.add_argument("--history", type=int, nargs="+", default=list(default), help=help)


def add_learner(parser: argparse.ArgumentParser, helps: dict[str, str] | None = None, **defaults: float) -> None:
    """The learner hyperparameters passed, each with its default, in the order passed.

    Keys are the dests of :data:`LEARNER_TYPES` (``learning_rate=5e-4`` adds ``--learning-rate``); ``helps`` maps
    some of them to a help text. Only the options passed are added, since the scripts tune different subsets.
    """
    helps = helps or {}
    unknown = (set(defaults) - set(LEARNER_TYPES)) | (set(helps) - set(defaults))
    if unknown:
        raise ValueError(f"add_learner: unknown or missing options {sorted(unknown)}")
    for dest, default in defaults.items():
        parser.add_argument(_flag(dest), type=LEARNER_TYPES[dest], default=default, help=helps.get(dest))


def add_threads(parser: argparse.ArgumentParser,
                help: str = "torch threads (1 avoids oversubscribing shared cores)") -> None:
    """``--threads``: torch threads of a run (default 1)."""
    parser.add_argument("--threads", type=int, default=1, help=help)


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def add_ray(parser: argparse.ArgumentParser, what: str = "runs", cpus_per_trial: bool = True) -> None:
    """``--ray``, ``--ray-address`` and (unless ``cpus_per_trial=False``) ``--cpus-per-trial``: see :mod:`.runner`.

    ``what`` names the runs in the help of ``--ray``, such as ``"(seed, variant) pairs"``.
    """
    parser.add_argument("--ray", action="store_true",
                        help=f"run the {what} as Ray Tune trials (one torch thread each), same table")
    parser.add_argument("--ray-address", default=None,
                        help="with --ray: a Ray cluster to join ('auto', 'ray://host:10001'); default a local one")
    if cpus_per_trial:
        parser.add_argument("--cpus-per-trial", type=_positive_float, default=1.0,
                            help="with --ray: CPUs reserved per trial; a fraction (0.5) runs more trials than cores "
                                 "at once, each on a share of a core")


def add_records(parser: argparse.ArgumentParser) -> None:
    """``--records FILE``: write the runs' JSON records (:class:`~sb3_hir.experiment.records.Records`) there."""
    parser.add_argument("--records", metavar="FILE", default=None,
                        help="write every run's numbers as JSON records to FILE (the table renders from them: "
                             "python -m sb3_hir.experiment render FILE)")
