"""The ``sb3-hir`` command. The library never imports this module."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Sequence

from sb3_hir import plugins as plugin_registry

Command = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, Command] = {}


def _plugins(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        # The listing reports broken plugins itself, with their errors.
        warnings.simplefilter("ignore", plugin_registry.PluginWarning)
        infos = plugin_registry.plugins()
    if args.json:
        payload = {
            "plugins": [info.as_dict() for info in infos if not info.broken],
            "broken": [info.as_dict() for info in infos if info.broken],
        }
        print(json.dumps(payload, indent=2))
        return 0
    for info in infos:
        origin = f"{info.distribution} {info.version}" if info.distribution else "in-process"
        if info.broken:
            print(f"{info.name} ({origin}) BROKEN\n    {info.error}")
            continue
        print(f"{info.name} ({origin})")
        for kind, names in info.components.items():
            print(f"    {kind}: {', '.join(names)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sb3-hir",
        description="Hindsight instruction relabeling and DAgger collection for Stable-Baselines3.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("plugins", help="list installed plugins, their components and broken plugins")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=_plugins)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
