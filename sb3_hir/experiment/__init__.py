"""The benchmark harness: specs, seeds, the budget callback, the runner, JSON records and the table renderer.

Why: the benchmark scripts each carried a copy of this machinery; here it is written once, one concept per
module, and ``sb3-hir sweep`` runs its trials through the same :mod:`~sb3_hir.experiment.runner`:

* :mod:`~sb3_hir.experiment.spec`: :class:`BenchmarkSpec` and :func:`run_benchmark`;
* :mod:`~sb3_hir.experiment.seeds`: training and evaluation seeds;
* :mod:`~sb3_hir.experiment.budgets`: :class:`BudgetCallback`, evaluating at several budgets in one run (and
  :class:`WallClockCallback` for wall-time budgets), with the library's evaluator;
* :mod:`~sb3_hir.experiment.runner`: local or Ray Tune execution (the ``sweep`` extra);
* :mod:`~sb3_hir.experiment.records`: :class:`Records`, the JSON the tables come from;
* :mod:`~sb3_hir.experiment.table`: :func:`render_table`, :func:`markdown_table` (every table's pipes) and
  :func:`mean_std`, the one spelling of mean ± std;
* :mod:`~sb3_hir.experiment.arguments`: the command line options the scripts share;
* :mod:`~sb3_hir.experiment.timing`: the alternating-chunk env timer of the speed benchmarks.

Research code that only the scripts run (the moonshot's learner, the relaxed draw, the MazeRunner options) is not
part of the library: it lives in ``benchmarks/research/``, out of the wheel; the scripted PointMaze and FetchPush
experts are expert plugins of ``sb3-hir-robotics``.

``python -m sb3_hir.experiment render RECORDS.json`` prints the table of a records file.
"""

from __future__ import annotations

from sb3_hir.experiment.budgets import (
    BudgetCallback,
    TrainingEpisodes,
    WallClockCallback,
    episode_evaluator,
    instruction_evaluator,
)
from sb3_hir.experiment.records import Record, Records, TableLayout
from sb3_hir.experiment.seeds import eval_seed, seed_process
from sb3_hir.experiment.spec import BenchmarkSpec, run_benchmark, timed_run
from sb3_hir.experiment.table import (
    format_mean_std,
    markdown_table,
    mean_and_std,
    mean_std,
    render,
    render_comparison,
    render_table,
)

__all__ = [
    "BenchmarkSpec",
    "BudgetCallback",
    "Record",
    "Records",
    "TableLayout",
    "TrainingEpisodes",
    "WallClockCallback",
    "episode_evaluator",
    "eval_seed",
    "format_mean_std",
    "instruction_evaluator",
    "markdown_table",
    "mean_and_std",
    "mean_std",
    "render",
    "render_comparison",
    "render_table",
    "run_benchmark",
    "seed_process",
    "timed_run",
]
