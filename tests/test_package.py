"""The package surface: every public name resolves and is documented, and the library never imports the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import sb3_hir

ROOT = Path(__file__).resolve().parents[1]


def test_every_public_name_resolves_and_is_documented():
    readme = (ROOT / "README.md").read_text()
    for name in sb3_hir.__all__:
        if name.startswith("__") or name == "envs":
            continue
        assert getattr(sb3_hir, name) is not None
        assert f"`{name}`" in readme, f"sb3_hir.{name} is public but README.md does not mention it"


def test_library_modules_never_import_the_cli():
    for path in (ROOT / "sb3_hir").rglob("*.py"):
        if path.name == "cli.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            assert not any(name == "sb3_hir.cli" for name in names), f"{path} imports sb3_hir.cli"
