"""``python -m sb3_hir.experiment render RECORDS.json [...]``: print the table of each records file.

Why: the tables in ``docs/results.md`` are regenerated from the JSON records, not retyped.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sb3_hir.experiment.records import Records
from sb3_hir.experiment.table import render


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sb3_hir.experiment", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    command = sub.add_parser("render", help="print the markdown table of records files")
    command.add_argument("records", nargs="+", help="JSON records written by a benchmark")
    command.add_argument("--metrics", nargs="+", metavar="NAME", help="metrics to show (default: the file's layout)")
    command.add_argument("--raw-labels", action="store_true",
                         help="name the sides as the script does, not as published")
    args = parser.parse_args(argv)
    tables = []
    for path in args.records:
        try:
            records = Records.load(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"{path}: {exc}")
        tables.append(render(records, metrics=args.metrics, labels=not args.raw_labels))
    print("\n\n".join(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
