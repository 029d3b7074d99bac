"""pytest plugin for regression-testing sb3-hir components: registered through the ``pytest11`` entry point."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sb3-hir")
    group.addoption(
        "--sb3-hir-plugins",
        action="store",
        default=None,
        metavar="NAMES",
        help="sb3-hir: restrict plugin-parametrized tests to these comma-separated plugin names "
        "(entry-point or distribution names; the built-in plugin is always loaded).",
    )
