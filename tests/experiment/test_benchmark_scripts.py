"""The benchmark scripts stand alone: none imports another; what they share lives in sb3_hir.experiment, and no
script writes a markdown table by hand (:func:`~sb3_hir.experiment.markdown_table` writes every one)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

#: Sibling imports still allowed, as (script, imported module, why). Each must still happen: a stale entry fails
#: the test, so the list only shrinks.
ALLOWED: list[tuple[str, str, str]] = [
    ("bench_babyai_speed", "babyai_goto", "it times babyai_goto's own learners, built by its build_model, so the "
                                          "speed measured is the benchmark's configuration, not a copy of it"),
]


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


def hand_written_table_lines(source: str) -> list[int]:
    """The lines of ``source`` with a string literal or f-string that writes a markdown table line by hand: its text
    (an f-string's leading literal part) starts with ``|``, or a line inside it does (``"...\\n|---|"``). A lone
    ``"|"`` is not a table line (a parser splits on it)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            first = node.values[0] if node.values else None
            text = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text, parts = node.value, [node.value]
        else:
            continue
        if (text.startswith("|") and text != "|") or any("\n|" in part for part in parts):
            found.add(node.lineno)
    return sorted(found)


def test_a_hand_written_table_line_is_found_in_every_form():
    planted = ('print("| a | b |")\n'  # 1: a header
               'print("|---|---:|")\n'  # 2: a separator
               'print("|---:|" + "---:|" * n)\n'  # 3: a separator built by repetition
               'print(f"| {x} | {y:.2f} |")\n'  # 4: a row
               'print("| " + " | ".join(cells) + " |")\n'  # 5: a row joined
               'print("| head | ms |\\n|---|---:|")\n'  # 6: header and separator in one
               'print(f"\\n| round | {header} |")\n'  # 7: a header after a blank line
               'emit(f"| {budget} | {a} | "\n     f"{b} |")\n')  # 8: a row across two lines
    assert hand_written_table_lines(planted) == [1, 2, 3, 4, 5, 6, 7, 8]
    clean = ('"""Prints ``| a | b |`` lines."""\n'
             'print(markdown_table(["a", "b"], rows, "lr"))\n'
             'if line.startswith("|"):\n    cells = line.strip("|").split("|")\n'
             'print(" | ".join(names), f"{x} |")\n')
    assert hand_written_table_lines(clean) == []


def test_no_benchmark_writes_a_markdown_table_by_hand():
    scripts = sorted(BENCHMARKS.glob("*.py"))
    assert len(scripts) > 20
    found = {path.name: lines for path in scripts if (lines := hand_written_table_lines(path.read_text()))}
    assert not found, f"markdown table lines written by hand (use sb3_hir.experiment.markdown_table): {found}"


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
