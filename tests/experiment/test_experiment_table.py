"""The table renderer: one spelling of mean ± std, and the published tables regenerated from their records."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sb3_hir.experiment import (
    Records,
    TableLayout,
    format_mean_std,
    markdown_table,
    mean_std,
    render,
    render_comparison,
    render_table,
)
from sb3_hir.experiment.__main__ import main
from sb3_hir.experiment.table import run_line

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def test_mean_std_is_the_population_std_with_two_decimals():
    assert mean_std([0.60, 0.60, 0.56]) == "0.59 ± 0.02"
    assert mean_std([1.0, 2.0], 3) == "1.500 ± 0.500"
    assert format_mean_std(0.4567, 0.01, 1) == "0.5 ± 0.0"
    assert mean_std([]) == "nan ± nan"


def test_a_markdown_table_writes_the_pipes_and_the_separator():
    assert markdown_table(["side", "steps/s", "note"], [["a", 10, "fast"], ["b", 2.5, ""]], "lrl").splitlines() == [
        "| side | steps/s | note |", "|---|---:|---|", "| a | 10 | fast |", "| b | 2.5 |  |"]
    # default: the first column left, the others right; one letter: every column's
    assert markdown_table(["a", "b", "c"], []) == "| a | b | c |\n|---|---:|---:|"
    assert markdown_table(["a", "b"], [], "r").splitlines()[1] == "|---:|---:|"
    assert markdown_table(["a", "b"], [], ["l", "r"]).splitlines()[1] == "|---|---:|"


@pytest.mark.parametrize("header, rows, align", [(["a", "b"], [["x"]], "lr"), (["a", "b"], [], "lrr"),
                                                 (["a", "b"], [], "lc")])
def test_a_markdown_table_refuses_a_width_or_alignment_it_cannot_write(header, rows, align):
    with pytest.raises(ValueError):
        markdown_table(header, rows, align)


def records() -> Records:
    result = Records("demo", layout=TableLayout(labels={"b": "b (shipped)"}, seconds_column="s"))
    result.add_run("a", 0, {10: {"goals_reached": 1.0, "success_rate": 0.0}, 20: {"goals_reached": 2.0,
                                                                                "success_rate": 0.5}}, 3.0)
    result.add_run("a", 1, {"10": {"goals_reached": 0.0, "success_rate": 0.0}}, 5.0)
    result.add_run("b", 0, {10: {"goals_reached": 2.0, "success_rate": 1.0}}, 4.0)
    return result


def test_the_table_has_a_row_per_side_and_a_column_per_budget():
    assert render_table(records()) == "\n".join([
        "| variant | 10 steps: goals / success | 20 steps: goals / success | s |",
        "|---|---:|---:|---:|",
        "| a | 0.50 ± 0.50 / 0.00 ± 0.00 | 2.00 ± 0.00 / 0.50 ± 0.00 | 4 ± 1 |",
        "| b (shipped) | 2.00 ± 0.00 / 1.00 ± 0.00 | - | 4 ± 0 |",
    ])
    shown = render_table(records(), metrics=["success_rate"], labels=False).splitlines()
    assert shown[0] == "| variant | 10 steps: success | 20 steps: success | s |"
    assert shown[3] == "| b | 1.00 ± 0.00 | - | 4 ± 0 |"


def test_a_run_line_lists_its_budgets_in_order():
    line = "  seed 0 a        goals/success at budgets 10:1.00/0.00 20:2.00/0.50  (3 s)"
    assert run_line(records(), "a", 0, 3.4) == line


def test_records_survive_a_json_round_trip(tmp_path):
    original = records()
    original.options = {"seeds": [0, 1], "path": tmp_path}  # a path is stored as its text
    original.save(tmp_path / "r.json")
    loaded = Records.load(tmp_path / "r.json")
    assert loaded.records == original.records
    assert loaded.layout == original.layout
    assert loaded.options == {"seeds": [0, 1], "path": str(tmp_path)}
    assert render_table(loaded) == render_table(original)
    assert loaded.values("a", 10, "goals_reached") == [1.0, 0.0]
    assert math.isnan(loaded.values("b", 10, "missing")[0])
    (tmp_path / "bad.json").write_text('{"format": 0}')
    with pytest.raises(ValueError, match="format"):
        Records.load(tmp_path / "bad.json")


PUBLISHED = sorted(RESULTS.glob("*.json"))


def _records_files() -> list[Path]:
    return [p for p in PUBLISHED if p.with_suffix(".txt").is_file() and '"records"' in p.read_text()]


@pytest.mark.parametrize("path", _records_files(), ids=lambda p: p.stem)
def test_a_published_records_file_renders_the_table_its_run_printed(path):
    """The JSON records converted from a run's output reproduce that output's table, character for character."""
    printed = [line for line in path.with_suffix(".txt").read_text().splitlines() if line.startswith("|")]
    assert render(Records.load(path), labels=False).splitlines() == printed


#: The records files whose tables docs/results.md quotes as rendered (the bench_goalenv_her ones feed a table that
#: compiles several runs, which the page keeps as written).
QUOTED = ["bench_hir_learning_step0", "bench_hir_learning_step-1", "bench_hir_learning_relaxed_k3",
          "bench_hir_learning_relaxed_k1"]


def test_the_results_page_quotes_the_rendered_tables():
    """docs/results.md shows each quoted records file's table as ``render`` prints it (the sides named as
    published)."""
    page = (ROOT / "docs" / "results.md").read_text()
    assert len(_records_files()) >= 8
    for path in (RESULTS / f"{name}.json" for name in QUOTED):
        records = Records.load(path)
        one_goal = records.options.get("goals") == 1  # goals reached = success: the page shows success only
        table = render_table(records, metrics=["success_rate"] if one_goal else None)
        assert table in page, f"docs/results.md does not quote the table of {path.name}"


def test_a_comparison_has_a_row_per_budget_and_a_verdict():
    result = Records("demo", layout=TableLayout(metrics={"success_rate": "success"}, digits=1,
                                                comparison=["ours", "HER", "ours - HER"]))
    for seed, (mine, theirs) in enumerate([(0.5, 0.4), (0.7, 0.6)]):
        result.add_run("ours", seed, {10: {"success_rate": mine}, 20: {"success_rate": 0.0}})
        result.add_run("HER", seed, {10: {"success_rate": theirs}, 20: {"success_rate": 1.0}})
    table, every = render_comparison(result, "ours", "HER", digits=1, difference="ours - HER")
    assert table.splitlines() == [
        "| budget | ours | HER | ours - HER | spread | target |",
        "|---:|---:|---:|---:|---:|---:|",
        "| 10 | 0.6 ± 0.1 | 0.5 ± 0.1 | +0.1 | 0.1 | met |",
        "| 20 | 0.0 ± 0.0 | 1.0 ± 0.0 | -1.0 | 0.0 | MISSED |",
    ]
    assert not every
    assert render(result) == table


def test_the_render_command_prints_the_table(tmp_path, capsys):
    records().save(tmp_path / "r.json")
    assert main(["render", str(tmp_path / "r.json"), "--metrics", "success_rate", "--raw-labels"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "| variant | 10 steps: success | 20 steps: success | s |"
    with pytest.raises(SystemExit):
        main(["render", str(tmp_path / "missing.json")])
