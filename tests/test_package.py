"""The package surface: every public name resolves and is documented, and the library never imports the CLI."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import sb3_hir
from sb3_hir.extras import MissingExtraError, has, install_hint

ROOT = Path(__file__).resolve().parents[1]


def test_every_public_name_resolves_and_is_documented():
    """Every public name has an entry in the API reference (``docs/api/*.rst``, autodoc), not only a mention."""
    api = "\n".join(path.read_text() for path in (ROOT / "docs" / "api").glob("*.rst"))
    entries = set(re.findall(r"^\.\. (?:py:)?auto\w+:: ([\w.]+)|^\.\. py:\w+:: ([\w.]+)", api, flags=re.M))
    documented = {name.rsplit(".", 1)[-1] for pair in entries for name in pair if name}
    for name in sb3_hir.__all__:
        if name.startswith("__") or name == "envs":
            continue
        assert name in documented, f"sb3_hir.{name} is public but has no API entry under docs/api/"
        if sb3_hir._LAZY.get(name) == "sb3_hir.dagger" and not has("imitation"):
            with pytest.raises(MissingExtraError, match=r"pip install 'sb3-hir\[dagger\]'"):
                getattr(sb3_hir, name)
            continue
        assert getattr(sb3_hir, name) is not None


def _python(code: str, *, block_imitation: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter; ``block_imitation`` makes ``import imitation`` fail as if absent."""
    if block_imitation:
        code = (
            "import importlib.abc, sys\n"
            "class _Absent(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'imitation' or name.startswith('imitation.'):\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, _Absent())\n"
            "import importlib.util\n"
            "importlib.util.find_spec = (lambda f: lambda name, *a: None if name.split('.')[0] == 'imitation' "
            "else f(name, *a))(importlib.util.find_spec)\n" + code
        )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_import_sb3_hir_never_imports_imitation():
    proc = _python("import sys, sb3_hir, sb3_hir.buffers, sb3_hir.testing, sb3_hir.instruction, sb3_hir.episodes, "
                   "sb3_hir.vec_env, sb3_hir.callbacks\n"
                   "from sb3_hir import plugins\n"
                   "plugins.available('relabeler'); plugins.available('beta_schedule')\n"
                   "print(sorted(m for m in sys.modules if m.split('.')[0] == 'imitation'))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_without_the_dagger_extra_dagger_is_one_clear_line():
    """Simulates an install without imitation: the library works, DAgger says which extra to install."""
    proc = _python("import sb3_hir, sb3_hir.buffers\n"
                   "from sb3_hir import plugins\n"
                   "print(sorted(plugins.available('beta_schedule')))\n"
                   "import sb3_hir.dagger\n", block_imitation=True)
    assert proc.returncode == 1
    assert "linear" not in proc.stdout  # imitation's schedules come with DAgger
    hint = install_hint("imitation")  # the one for this profile's gymnasium (see the test below)
    last = proc.stderr.strip().splitlines()[-1]
    assert last == ("sb3_hir.extras.MissingExtraError: sb3_hir.dagger needs imitation, which is not installed: "
                    f"{hint}"), proc.stderr
    proc = _python("import sys\nfrom sb3_hir.cli import main\nsys.exit(main(['dagger', '--rounds', '1']))",
                   block_imitation=True)
    assert proc.returncode == 2  # (gymnasium-robotics 1.2 prints a notice about Adroit envs when imported)
    assert proc.stderr.strip().splitlines()[-1] == (
        f"sb3-hir dagger: error: sb3-hir dagger needs imitation, which is not installed: {hint}"
    ), proc.stderr


@pytest.mark.parametrize(("version", "expected"), [
    ("0.29.1", "pip install 'sb3-hir[dagger]'"),
    ("1.0.0", "pip install 'sb3-hir[dagger-gymnasium1]' && pip install --no-deps imitation==1.0.0"),
    ("1.4.0", "pip install 'sb3-hir[dagger-gymnasium1]' && pip install --no-deps imitation==1.0.0"),
])
def test_the_imitation_hint_never_downgrades_gymnasium(version, expected):
    """On gymnasium 1.x the 'dagger' extra would pull gymnasium 0.29 in; the hint installs imitation beside 1.x."""
    assert install_hint("imitation", gymnasium_version=version) == expected
    assert install_hint("ray", gymnasium_version=version) == "pip install 'sb3-hir[sweep]'"
    assert install_hint("somepackage") == "pip install somepackage"


def test_library_modules_never_import_the_cli():
    for path in (ROOT / "sb3_hir").rglob("*.py"):
        if "cli" in path.relative_to(ROOT / "sb3_hir").parts[:1]:  # the sb3_hir.cli package is the command
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
