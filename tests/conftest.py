"""Shared fixtures: every test starts from a fresh process-wide plugin manager."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sb3_hir import plugins


@pytest.fixture(autouse=True)
def _fresh_plugin_manager() -> Iterator[None]:
    plugins.reset()
    yield
    plugins.reset()
