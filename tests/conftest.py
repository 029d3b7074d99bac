"""Shared fixtures: every test starts from a fresh process-wide plugin manager, torch on one thread."""

from __future__ import annotations

import os
from collections.abc import Iterator

# Small networks on shared 2-core machines: several torch threads fight over the cores and run many times
# slower (a 6 s SAC test took 170 s), so the suite pins one thread, subprocesses included.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch

from sb3_hir import plugins

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _fresh_plugin_manager() -> Iterator[None]:
    plugins.reset()
    yield
    plugins.reset()
