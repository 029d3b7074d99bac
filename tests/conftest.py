"""Shared fixtures: every test starts from a fresh process-wide plugin manager, torch on one thread."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

# Small networks on shared 2-core machines: several torch threads fight over the cores and run many times
# slower (a 6 s SAC test took 170 s), so the suite pins one thread, subprocesses included.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch

from sb3_hir import plugins
from sb3_hir.extras import has

torch.set_num_threads(1)

#: Why DAgger tests skip where imitation is not installed (both CI profiles install it; `make test` checks).
DAGGER_SKIP_REASON = (
    "DAgger test: needs imitation (the 'dagger' extra on gymnasium 0.29; on gymnasium 1.x the 'dagger-gymnasium1' "
    "extra plus pip install --no-deps imitation==1.0.0)"
)


PROFILES = ("dagger", "current")


def pytest_sessionstart(session: pytest.Session) -> None:
    """The command lines' fork server (tests/forked.py) starts first: SB3's SubprocVecEnv would otherwise start
    multiprocessing's one forkserver without the preload."""
    import forked

    forked.start()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--profile-run", choices=PROFILES, default=None,
                     help="run as this profile of `make test`'s two: a test marked once(p) (or ray, which is "
                          "once('dagger') unless marked otherwise) runs only where p is this profile")


def once_profile(item: pytest.Item) -> str | None:
    """The one profile of `make test` that runs ``item``, or None where both do."""
    marker = item.get_closest_marker("once")
    if marker is not None:
        if not marker.args or marker.args[0] not in PROFILES:
            raise pytest.UsageError(f"{item.nodeid}: once() takes one of {PROFILES}, got {marker.args}")
        return str(marker.args[0])
    return "dagger" if item.get_closest_marker("ray") is not None else None


def ray_order(item: pytest.Item) -> int:
    """Where ``item`` runs: Ray's tests last, so no other test forks a process beside the threads of the in-process
    Ray that ``shared_ray`` leaves running; among them, those that need Ray down first, so it starts once."""
    if item.get_closest_marker("ray") is None:
        return 0
    return 2 if "shared_ray" in getattr(item, "fixturenames", ()) else 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    profile = config.getoption("--profile-run")
    if profile is not None:
        config.hook.pytest_deselected(items=[item for item in items if once_profile(item) not in (None, profile)])
        items[:] = [item for item in items if once_profile(item) in (None, profile)]
    items.sort(key=ray_order)  # stable: each group keeps the order it was collected in
    if has("imitation"):
        return
    skip = pytest.mark.skip(reason=DAGGER_SKIP_REASON)
    for item in items:
        if item.get_closest_marker("dagger") is not None:
            item.add_marker(skip)


#: the benchmark scripts' directory: its ``research`` package is the research code they share, not in the wheel.
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def research() -> Callable[[str], ModuleType]:
    """``research("relaxed")``: the module ``benchmarks/research/relaxed.py``, imported as the scripts import it."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return lambda name: importlib.import_module(f"research.{name}")


@pytest.fixture
def shared_ray(request: pytest.FixtureRequest) -> Any:
    """A local Ray instance in this process, started by the first test that asks and kept for the next (the
    session's end shuts it down): ``sb3_hir.experiment.runner.ray_session`` runs a sweep or trials on a Ray that is
    running already, as it does for a user's, which saves each test Ray's start and stop (about 6 s)."""
    import ray

    if not ray.is_initialized():
        # as the sweeps start theirs: trials' output stays in their logs, off the test's captured output
        ray.init(address="local", include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
        request.config.add_cleanup(ray.shutdown)
    return ray


@pytest.fixture
def no_ray() -> None:
    """No Ray in this process: a test that starts its own (a cluster it connects to) stops the shared one."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture(autouse=True)
def _fresh_plugin_manager() -> Iterator[None]:
    plugins.reset()
    yield
    plugins.reset()
