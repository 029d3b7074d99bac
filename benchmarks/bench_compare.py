"""Run one benchmark script from two checkouts, alternately, and print after / before per table cell.

For a restructure that must not slow anything down: each run is a fresh process of ``SCRIPT`` from one checkout
(``PYTHONPATH`` and working directory set to it), the two checkouts alternate (before, after, after, before, ...) so a
drift of the machine's speed hits both, and each pair of runs gives one ratio per cell. Printed per row and column:
the median of each side over ``--pairs`` runs and the median and range of the paired ratios.

The script's output must hold markdown tables (``| a | b |`` lines under a header line); rows are matched by the
cells of the ``--keys`` columns, and the ``--columns`` are compared.

Usage: ``python benchmarks/bench_compare.py --before /tmp/old --after . --pairs 4 --columns "sample us" -- \
bench_buffer.py --sizes 100000``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from sb3_hir.experiment import markdown_table

Table = dict[tuple[str, ...], dict[str, float]]


def run(checkout: Path, script: str, args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, script, *args], cwd=checkout / "benchmarks", env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{script} in {checkout} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def parse(output: str, keys: list[str], columns: list[str]) -> Table:
    """``(key cells) -> {column: value}`` of every markdown table row in ``output``."""
    table: Table = {}
    header: list[str] | None = None
    for line in output.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set("".join(cells)) <= set("-:"):
            row = dict(zip(header, cells, strict=False))
            key = tuple(row[name] for name in keys if name in row)
            values = {}
            for name in columns:
                try:
                    values[name] = float(row.get(name, "").rstrip("x*"))
                except ValueError:
                    continue
            if values:
                table[key] = values
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout of the baseline")
    parser.add_argument("--after", type=Path, required=True, help="checkout of the change")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--keys", nargs="+", default=["size", "T", "buffer", "case"])
    parser.add_argument("--columns", nargs="+", required=True)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    sides: dict[str, list[Table]] = {"before": [], "after": []}
    for pair in range(args.pairs):
        order = ("before", "after") if pair % 2 == 0 else ("after", "before")
        for side in order:
            output = run(getattr(args, side).resolve(), args.script, args.args)
            sides[side].append(parse(output, args.keys, args.columns))
        print(f"pair {pair + 1}/{args.pairs} done", file=sys.stderr, flush=True)
    print(f"{args.script} {' '.join(args.args)}: {args.pairs} pairs of runs, alternating; median (before, after), "
          "median after / before over the pairs [min, max]")
    rows = []
    for key in sides["before"][0]:
        for column in args.columns:
            try:
                before = [table[key][column] for table in sides["before"]]
                after = [table[key][column] for table in sides["after"]]
            except KeyError:
                continue
            ratios = np.array(after) / np.array(before)
            rows.append([" ".join(key), column, f"{np.median(before):.3f}", f"{np.median(after):.3f}",
                         f"{np.median(ratios):.3f}", f"[{ratios.min():.3f}, {ratios.max():.3f}]"])
    print(markdown_table(["row", "column", "before", "after", "after / before", "range"], rows, "llrrrl"))


if __name__ == "__main__":
    main()
