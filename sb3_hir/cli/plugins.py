"""``sb3-hir plugins``: what is installed, broken plugins with their errors, name conflicts, and what loading warned
about (a misspelt hook, an allow- or block-list entry naming no plugin), which the listing repeats because the CLI
loads plugins with their warnings silenced while it builds its ``--help``."""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any

from sb3_hir import plugins as plugin_registry


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("plugins", help="list installed plugins, their components and broken plugins")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """``sb3-hir plugins``."""
    with warnings.catch_warnings():
        # The listing reports broken plugins itself, with their errors.
        warnings.simplefilter("ignore", plugin_registry.PluginWarning)
        infos = plugin_registry.plugins()
        conflicts = plugin_registry.conflicts()
        notices = plugin_registry.notices()
    if args.json:
        payload = {
            "plugins": [info.as_dict() for info in infos if not info.broken],
            "broken": [info.as_dict() for info in infos if info.broken],
            "conflicts": [
                {"kind": kind, "name": name,
                 "providers": [{"plugin": c.plugin, "distribution": c.distribution} for c in providers]}
                for (kind, name), providers in conflicts.items()
            ],
            "warnings": notices,
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
    for (kind, name), providers in conflicts.items():
        who = ", ".join(f"{c.plugin} ({c.distribution})" if c.distribution else c.plugin for c in providers)
        print(f"CONFLICT {kind} {name!r}: registered by {who}; look-ups of it fail until all but one are blocked "
              "(SB3_HIR_BLOCK_PLUGINS)")
    for notice in notices:
        print(f"WARNING {notice}")
    return 0
