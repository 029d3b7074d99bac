"""The one table renderer of the benchmarks: mean ± std over seeds, per side and budget, as a markdown table.

Why: the scripts hand-formatted their tables, in two spellings of mean ± std, and ``docs/results.md`` quoted
them; a table rendered from :class:`~sb3_hir.experiment.records.Records` can be regenerated from the JSON file
alone. :func:`mean_std` is the one spelling (``0.45 ± 0.02``, population std as NumPy computes it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sb3_hir.experiment.records import Records

__all__ = [
    "format_mean_std",
    "markdown_table",
    "mean_and_std",
    "mean_std",
    "render",
    "render_comparison",
    "render_table",
    "run_line",
]


def mean_and_std(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and (population) standard deviation of ``values``; NaN, NaN for none."""
    if len(values) == 0:
        return math.nan, math.nan
    array = np.asarray(values, dtype=float)
    return float(array.mean()), float(array.std())


def mean_std(values: Sequence[float] | np.ndarray, digits: int = 2) -> str:
    """``"mean ± std"`` of ``values`` with ``digits`` decimals: the one spelling of every table."""
    return format_mean_std(*mean_and_std(values), digits)


def format_mean_std(mean: float, std: float, digits: int = 2) -> str:
    """:func:`mean_std`'s spelling for a mean and std computed elsewhere (a summary file's)."""
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def markdown_table(header: Sequence[object], rows: Sequence[Sequence[object]],
                   align: str | Sequence[str] = "") -> str:
    """The markdown table of ``header`` and ``rows``: the one place that writes the pipes and the separator.

    Every line is ``| a | b |`` (cells with ``str``, as given: format numbers before); the separator has ``---`` for
    a left-aligned column and ``---:`` for a right-aligned one.

    :param align: one letter per column, ``"l"`` or ``"r"`` (a string ``"lrr"`` or a sequence); a single letter is
        every column's; empty (the default): the first column left, the others right.
    :raises ValueError: on a row or an ``align`` of another width than the header, or an unknown letter.
    """
    width = len(header)
    letters = list(align) if len(align) != 1 else list(align) * width
    if not letters:
        letters = ["l"] + ["r"] * (width - 1)
    if len(letters) != width:
        raise ValueError(f"align has {len(letters)} columns, the header {width}")
    marks = {"l": "---", "r": "---:"}
    if not set(letters) <= set(marks):
        raise ValueError(f"align letters are 'l' or 'r', not {sorted(set(letters) - set(marks))}")

    def line(cells: Sequence[object]) -> str:
        return "| " + " | ".join(str(cell) for cell in cells) + " |"

    for row in rows:
        if len(row) != width:
            raise ValueError(f"a row has {len(row)} cells, the header {width}: {list(row)}")
    separator = "|" + "".join(marks[letter] + "|" for letter in letters)
    return "\n".join([line(header), separator, *(line(row) for row in rows)])


def render_table(records: Records, digits: int = 2, *, metrics: Sequence[str] | None = None,
                 labels: bool = True) -> str:
    """The markdown table of ``records``: one row per side (in the order first recorded), one column per budget,
    each cell the metrics as mean ± std over seeds, joined by `` / `` (``-`` where a side has no run at a budget).

    :param metrics: the metrics to show (default: the layout's), e.g. only ``success_rate`` where goals reached
        equals it (one goal).
    :param labels: name the sides by the layout's labels (as published); False names them as the script does.
    """
    layout = records.layout
    shown = {m: layout.metrics.get(m, m) for m in (metrics if metrics is not None else layout.metrics)}
    budgets = sorted({r.budget for r in records.records})
    sides = list(dict.fromkeys(r.side for r in records.records))
    header = " / ".join(shown.values())
    extra = [layout.seconds_column] if layout.seconds_column else []
    columns = [f"{layout.column.format(budget=b)}: {header}" for b in budgets] + extra
    rows = []
    for side in sides:
        cells = []
        for budget in budgets:
            runs = [r for r in records.records if r.side == side and r.budget == budget]
            cells.append(" / ".join(mean_std([r.metrics.get(m, math.nan) for r in runs], digits)
                                    for m in shown) if runs else "-")
        if extra:
            cells.append(mean_std(records.seconds(side), 0))
        label = layout.labels.get(side, side) if labels else side
        rows.append([label, *cells])
    return markdown_table([layout.row, *columns], rows, "l" + "r" * len(columns))


def render_comparison(records: Records, ours: str, theirs: str, metric: str = "success_rate", digits: int = 3, *,
                      difference: str = "difference", spread: Callable[[float, float], float] = max,
                      budgets: Sequence[int] | None = None, theirs_first: bool = False) -> tuple[str, bool]:
    """The table of a two-sided claim, one row per budget: each side's mean ± std of ``metric``, the difference of
    means, the spread and whether the target holds there (``ours`` not below ``theirs`` by more than the spread).

    :param difference: the difference column's title (``"ours - HER"``).
    :param spread: the allowance from both sides' standard deviations (``max``: the larger).
    :param budgets: the rows (default: every recorded budget).
    :param theirs_first: put the reference's column before ours.
    :returns: the table and whether the target holds at every budget shown.
    """
    shown = sorted({r.budget for r in records.records}) if budgets is None else list(budgets)
    columns = [theirs, ours] if theirs_first else [ours, theirs]
    rows = []
    every = True
    for budget in shown:
        stats = {side: mean_and_std(records.values(side, budget, metric)) for side in (ours, theirs)}
        (mine, my_std), (other, other_std) = stats[ours], stats[theirs]
        allowance = spread(my_std, other_std)
        met = bool(mine >= other - allowance)
        every &= met
        rows.append([budget, *(format_mean_std(*stats[side], digits) for side in columns),
                     f"{mine - other:+.{digits}f}", f"{allowance:.{digits}f}", "met" if met else "MISSED"])
    return markdown_table(["budget", *columns, difference, "spread", "target"], rows, "r"), every


def render(records: Records, *, metrics: Sequence[str] | None = None, labels: bool = True) -> str:
    """The table a records file was printed with: :func:`render_comparison` if its layout names a comparison,
    else :func:`render_table`, with the layout's digits."""
    layout = records.layout
    if layout.comparison:
        ours, theirs, difference = layout.comparison
        metric = (list(metrics) if metrics else list(layout.metrics))[0]
        return render_comparison(records, ours, theirs, metric, layout.digits, difference=difference)[0]
    return render_table(records, layout.digits, metrics=metrics, labels=labels)


def run_line(records: Records, side: str, seed: int, seconds: float | None = None, width: int = 8) -> str:
    """One run's progress line: ``  seed 0 some     goals/success at budgets 10000:1.20/0.16 ...  (40 s)``."""
    layout = records.layout
    runs = sorted((r for r in records.records if r.side == side and r.seed == seed), key=lambda r: r.budget)
    values = " ".join(f"{r.budget}:" + "/".join(f"{r.metrics.get(m, math.nan):.2f}" for m in layout.metrics)
                      for r in runs)
    tail = f"  ({seconds:.0f} s)" if seconds is not None else ""
    return f"  seed {seed} {side:<{width}} {'/'.join(layout.metrics.values())} at budgets {values}{tail}"
