"""A benchmark's declaration, and the loop that runs it: sides x seeds, each run evaluated at every budget.

Why: each script wrote its own loop over seeds and variants, its own result dict, progress lines and table. A
script now declares a :class:`BenchmarkSpec` (env, algorithm, buffer settings, sides, seeds, budgets) and a
module-level ``train(config) -> {"curve": {budget: metrics}, "seconds": s}``; :func:`run_benchmark` runs every
(seed, side) here or as Ray trials (:mod:`.runner`), prints one line per run, and returns the
:class:`~.records.Records` that the table is rendered from.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sb3_hir.experiment.records import Records, TableLayout
from sb3_hir.experiment.runner import run_all
from sb3_hir.experiment.table import run_line

__all__ = ["BenchmarkSpec", "run_benchmark", "timed_run"]


@dataclass(frozen=True)
class BenchmarkSpec:
    """What a benchmark compares, declared once.

    :param name: the benchmark's name (the script's stem), for records and Ray's experiment name.
    :param env: what it trains on, as a reader should see it (``"MazeRunner(maze_dim=7, num_goals=3)"``).
    :param algorithm: the learner (``"DQN"``).
    :param buffer: the buffer settings every side shares (``{"relabel_ratio": 0.8}``).
    :param sides: what is compared (variants); every side runs with every seed.
    :param seeds: one run per seed and side.
    :param budgets: env steps at which each run is evaluated; the last is its training length.
    :param layout: how the table shows the records.
    """

    name: str
    env: str
    algorithm: str
    sides: Sequence[str]
    seeds: Sequence[int]
    budgets: Sequence[int]
    buffer: dict[str, Any] = field(default_factory=dict)
    layout: TableLayout = field(default_factory=TableLayout)

    def configs(self, options: dict[str, Any]) -> list[dict[str, Any]]:
        """One plain dict per run, seed-major (every side of seed 0 first): ``side``, ``seed``, ``budgets`` and the
        script's ``options``. Plain, so that a run is the same in this process or in a Ray worker."""
        budgets = sorted(int(b) for b in self.budgets)
        return [dict(side=side, seed=int(seed), budgets=budgets, buffer=dict(self.buffer), options=dict(options))
                for seed in self.seeds for side in self.sides]


def timed_run(train: Callable[[dict[str, Any]], dict[Any, dict[str, float]]],
              config: dict[str, Any]) -> dict[str, Any]:
    """``train(config)``'s curve (budget -> metrics), with budgets as strings (JSON keys) and the run's seconds."""
    start = time.perf_counter()
    curve = train(config)
    return {"curve": {str(b): dict(m) for b, m in curve.items()}, "seconds": time.perf_counter() - start}


def run_benchmark(spec: BenchmarkSpec, run: Callable[[dict[str, Any]], dict[str, Any]], options: dict[str, Any],
                  *, use_ray: bool = False, cpus_per_trial: float = 1, address: str | None = None,
                  command: str | None = None, print_runs: bool = True) -> Records:
    """Run every (seed, side) of ``spec`` with ``run`` (a module-level function of a config, see
    :meth:`BenchmarkSpec.configs`, returning :func:`timed_run`'s dict) and collect the records.

    Sequentially each run's line is printed as it ends; with ``use_ray`` (one trial per run) once all have.
    """
    configs = spec.configs(options)
    records = Records(spec.name, layout=spec.layout, options=options,
                      command=command if command is not None else " ".join(["python", *sys.argv]))
    outs = run_all(run, configs, use_ray=use_ray, cpus_per_trial=cpus_per_trial, address=address, name=spec.name)
    for config, out in zip(configs, outs, strict=True):
        records.add_run(config["side"], config["seed"], out["curve"], out.get("seconds"))
        if print_runs:
            print(run_line(records, config["side"], config["seed"], out.get("seconds")), flush=True)
    return records
