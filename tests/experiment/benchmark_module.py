"""A script under ``benchmarks/`` loaded as a module, for tests of its functions (the scripts are not a package:
no benchmark imports another)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, executed once per call under the module name ``name``; its directory goes on
    ``sys.path`` first, as when the script runs, for the ``research`` package it may import."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no benchmark script {name}.py under {BENCHMARKS}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
