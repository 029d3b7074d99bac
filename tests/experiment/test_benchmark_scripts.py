"""The benchmark scripts stand alone: none imports another; what they share lives in sb3_hir.experiment."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

#: Sibling imports still allowed, as (script, imported module, why). Each must still happen: a stale entry fails
#: the test, so the list only shrinks.
ALLOWED: list[tuple[str, str, str]] = []


def sibling_imports(source: str, siblings: set[str]) -> set[str]:
    """The modules of ``siblings`` that ``source`` imports (``import x``, ``from x import y``, at any depth)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found & siblings


def test_sibling_imports_are_found_in_every_form():
    siblings = {"bench_args", "ray_trials", "evaluation"}
    source = ("import numpy\nimport bench_args\n\ndef f():\n    from ray_trials import run_all\n"
              "from evaluation.x import y\n")
    assert sibling_imports(source, siblings) == siblings
    assert sibling_imports("from sb3_hir.experiment import arguments\n", siblings) == set()


def test_no_benchmark_imports_another():
    scripts = {path.stem: path for path in BENCHMARKS.glob("*.py")}
    assert len(scripts) > 20
    allowed = {(script, module) for script, module, _ in ALLOWED}
    found = {(stem, module) for stem, path in scripts.items()
             for module in sibling_imports(path.read_text(), set(scripts) - {stem})}
    assert not found - allowed, f"benchmarks importing other benchmarks: {sorted(found - allowed)}"
    assert not allowed - found, f"ALLOWED excuses imports that no longer happen: {sorted(allowed - found)}"


def test_a_benchmark_prints_the_table_its_records_render(tmp_path):
    """bench_hir_learning at a tiny budget: one line per run, and the printed table is the one its --records render
    (so a published table can be regenerated from the JSON alone)."""
    import os
    import subprocess
    import sys

    from sb3_hir.experiment import Records, render

    records = tmp_path / "records.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "bench_hir_learning.py", "--budgets", "100", "200", "--seeds", "0", "1",
                           "--variants", "none", "some", "--eval-episodes", "10", "--learning-starts", "50",
                           "--records", str(records)],
                          cwd=BENCHMARKS, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert sum(line.startswith("  seed ") for line in lines) == 4
    table = [line for line in lines if line.startswith("|")]
    loaded = Records.load(records)
    assert render(loaded).splitlines() == table
    assert len(loaded.records) == 2 * 2 * 2
    assert loaded.options["budgets"] == [100, 200] and "records" not in loaded.options
