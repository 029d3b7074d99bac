"""Every function in ``sb3_hir/`` is 60 lines or fewer: a longer one is split into phases named after what they do.

A function's length is ``end_lineno - lineno + 1`` of its ``def`` node: the signature and the docstring count,
decorators do not. Methods and nested functions are functions too (a nested one also counts in its parent).

Functions that another branch is restructuring are listed in :data:`EXCUSED`; an entry that is stale (the function
is 60 lines or fewer now, or gone) fails, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The longest a function may be, in lines.
MAX_LINES = 60

#: (file, function name) of functions still over the limit, each being split elsewhere. Each must still be over
#: it: a stale entry fails the test.
EXCUSED: set[tuple[str, str]] = set()


def function_lengths(source: str) -> Iterator[tuple[str, int, int]]:
    """``(name, first line, line count)`` of every function in ``source``: module functions, methods, nested ones."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def long_functions(sources: Mapping[str, str], limit: int = MAX_LINES) -> list[tuple[str, str, int, int]]:
    """``(file, name, first line, line count)`` of the functions longer than ``limit`` lines, by file and line."""
    return sorted(((path, name, line, count) for path, source in sources.items()
                   for name, line, count in function_lengths(source) if count > limit),
                  key=lambda found: (found[0], found[2]))


def violations(sources: Mapping[str, str], excused: set[tuple[str, str]]) -> tuple[list[str], set[tuple[str, str]]]:
    """The long functions not in ``excused``, one line each, and the ``excused`` entries that are no longer long."""
    long = long_functions(sources)
    found = [f"{path}:{line}: {name} is {count} lines" for path, name, line, count in long
             if (path, name) not in excused]
    stale = excused - {(path, name) for path, name, _, _ in long}
    return found, stale


def _sources() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text() for p in (ROOT / "sb3_hir").rglob("*.py")}


def test_every_function_in_sb3_hir_is_60_lines_or_fewer():
    sources = _sources()
    assert len(sources) > 100
    found, stale = violations(sources, EXCUSED)
    assert not found, (f"functions over {MAX_LINES} lines (split them into phases named after what they do):\n"
                       + "\n".join(found))
    assert not stale, (f"EXCUSED lists functions that are no longer over {MAX_LINES} lines, or no longer exist; "
                       f"remove them: {sorted(stale)}")


def _function(name: str, lines: int, indent: str = "") -> str:
    """A function of exactly ``lines`` lines: its ``def``, a two-line docstring, then statements."""
    body = [f'{indent}    """Doc.', f'{indent}    """', *[f"{indent}    x = 1"] * (lines - 3)]
    return "\n".join([f"{indent}def {name}():", *body]) + "\n"


def test_the_check_counts_signature_and_docstring_and_finds_methods_and_nested_functions():
    planted = {
        "sb3_hir/a.py": _function("at_limit", MAX_LINES) + "\n\n@decorated\n" + _function("over", MAX_LINES + 1),
        "sb3_hir/b.py": "class C:\n" + _function("method", MAX_LINES + 2, "    "),
        "sb3_hir/c.py": "def outer():\n" + _function("inner", MAX_LINES + 1, "    "),
        "sb3_hir/d.py": _function("fixed_elsewhere", MAX_LINES + 5) + "\n\n" + _function("was_long", 10),
    }
    found, stale = violations(planted, {("sb3_hir/d.py", "fixed_elsewhere"), ("sb3_hir/d.py", "was_long"),
                                        ("sb3_hir/gone.py", "f")})
    assert found == [
        f"sb3_hir/a.py:{MAX_LINES + 4}: over is {MAX_LINES + 1} lines",
        f"sb3_hir/b.py:2: method is {MAX_LINES + 2} lines",
        f"sb3_hir/c.py:1: outer is {MAX_LINES + 2} lines",
        f"sb3_hir/c.py:2: inner is {MAX_LINES + 1} lines",
    ]
    assert stale == {("sb3_hir/d.py", "was_long"), ("sb3_hir/gone.py", "f")}
