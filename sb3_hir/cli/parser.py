"""The ``sb3-hir`` parser and entry point: each command module adds its sub-command; errors are one line."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from sb3_hir import __version__
from sb3_hir.cli import common, dagger, plugins, render, sweep, train
from sb3_hir.cli.common import (
    USAGE_EXIT,
    UsageError,
)
from sb3_hir.cli.options import (
    ArgumentParser,
)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="sb3-hir",
        description="Hindsight instruction relabeling and DAgger collection for Stable-Baselines3.",
    )
    parser.add_argument("--version", action="version", version=f"sb3-hir {__version__}")
    parser.add_argument("--verbose", action="store_true",
                        help="also show what third-party packages print when imported (e.g. gymnasium-robotics)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    plugins.add_parser(sub)
    train.add_parser(sub)
    dagger.add_parser(sub)
    render.add_parser(sub)
    sweep.add_parser(sub)
    return parser


def headless_gl() -> None:
    """Without a display, MuJoCo renders through EGL unless the user chose a backend (read at mujoco's import)."""
    if not os.environ.get("MUJOCO_GL") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["MUJOCO_GL"] = "egl"
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    headless_gl()
    common.VERBOSE = "--verbose" in argv
    with common.quiet_output():  # listing the plugins for --help may import them
        parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"sb3-hir {args.command}: error: {exc}", file=sys.stderr)
        return USAGE_EXIT
    except KeyboardInterrupt:
        print(f"sb3-hir {args.command}: interrupted", file=sys.stderr)
        return 130
