"""JSON records of a benchmark: one per (side, seed, budget), the raw material every table is rendered from.

Why: the published tables used to be the only output, and comparing or re-rendering them meant parsing markdown
back; a :class:`Records` file keeps every run's numbers with the command that made them, and
:func:`~sb3_hir.experiment.table.render_table` turns it into the table (``python -m sb3_hir.experiment render``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sb3_hir.atomic import atomic_write

__all__ = ["Record", "Records", "TableLayout"]

#: Version of the JSON layout, written into every file.
FORMAT = 1


@dataclass(frozen=True)
class Record:
    """The metrics of one run (``side``, ``seed``) at one ``budget``; ``seconds`` is the whole run's time."""

    side: str
    seed: int
    budget: int
    metrics: dict[str, float]
    seconds: float | None = None


@dataclass(frozen=True)
class TableLayout:
    """How a table shows records: the row header, the metrics (name -> short label), each budget's column title
    (``column`` with ``{budget}``: ``"{budget} steps"``, ``"round {budget}"``), and the label of each side where a
    published table names it more fully than the script (``"some, n_steps=3"``)."""

    row: str = "variant"
    metrics: dict[str, str] = field(default_factory=lambda: {"goals_reached": "goals", "success_rate": "success"})
    column: str = "{budget} steps"
    labels: dict[str, str] = field(default_factory=dict)
    #: header of a last column with each side's run seconds (mean ± std), e.g. ``"train s"``; empty: no column.
    seconds_column: str = ""
    #: decimals of mean and std.
    digits: int = 2
    #: ``[ours, theirs, difference title]`` for a two-sided claim (:func:`~.table.render_comparison`, on the first
    #: metric); empty: the per-side table.
    comparison: list[str] = field(default_factory=list)


@dataclass
class Records:
    """A benchmark's records with what is needed to read them: its name, command, options and table layout."""

    benchmark: str
    layout: TableLayout = field(default_factory=TableLayout)
    command: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)

    def add_run(self, side: str, seed: int, curve: Mapping[int | str, Mapping[str, float]],
                seconds: float | None = None) -> None:
        """Record one run's ``curve`` (budget -> metrics), as :class:`~.budgets.BudgetCallback` produces it."""
        for budget, metrics in sorted(curve.items(), key=lambda item: int(item[0])):
            self.records.append(Record(side, int(seed), int(budget), {k: float(v) for k, v in metrics.items()},
                                       seconds))

    def values(self, side: str, budget: int, metric: str) -> list[float]:
        """``metric`` of every run of ``side`` at ``budget``, in seed order: what a verdict compares."""
        runs = sorted((r for r in self.records if r.side == side and r.budget == budget), key=lambda r: r.seed)
        return [r.metrics.get(metric, math.nan) for r in runs]

    def seconds(self, side: str) -> list[float]:
        """The run time of every run of ``side`` that recorded one, in seed order."""
        runs = {r.seed: r.seconds for r in self.records if r.side == side and r.seconds is not None}
        return [runs[seed] for seed in sorted(runs)]

    def to_json(self) -> str:
        data = {"format": FORMAT, "benchmark": self.benchmark, "command": self.command,
                "layout": asdict(self.layout), "options": self.options,
                "records": [asdict(r) for r in self.records]}
        return json.dumps(data, indent=1, default=_plain) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Records:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise ValueError(f"not a records file of format {FORMAT}: format {data.get('format')!r}")
        return cls(benchmark=data["benchmark"], layout=TableLayout(**data["layout"]), command=data.get("command", ""),
                   options=data.get("options", {}), records=[Record(**r) for r in data["records"]])

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the records as JSON (atomically: an interrupted write leaves the previous file)."""
        text = self.to_json().encode()
        atomic_write(path, lambda f: f.write(text))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Records:
        return cls.from_json(Path(path).read_text())


def _plain(value: Any) -> Any:
    """JSON for what ``vars(args)`` may hold besides plain values (paths, NumPy scalars)."""
    if hasattr(value, "item"):
        item = value.item()
        return None if isinstance(item, float) and math.isnan(item) else item
    return str(value)
