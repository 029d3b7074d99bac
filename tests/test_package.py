"""The package surface: every public name resolves and is documented, and the layers import downhill only."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import sb3_hir
from sb3_hir.extras import MissingExtraError, has, install_hint

ROOT = Path(__file__).resolve().parents[1]

#: The imports the layer rules below let through, as (importing module, imported module, why). Each must still
#: happen: a stale entry fails the test, so this list only shrinks by removing the import it excuses.
ALLOWED_IMPORTS: list[tuple[str, str, str]] = [
    ("sb3_hir.buffers.demonstrations", "sb3_hir.dagger.storage",
     "round files are DAgger's format and dagger.storage is their one reader; add_demonstrations takes a path to "
     "them, imported lazily (extras.require) only then, so sb3_hir.buffers still imports without imitation"),
]


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


# -- the layers: the library never imports the CLI, nothing imports benchmarks/examples/tests, buffers never DAgger --
#: Calls that import the module named by their first argument: importlib's, the builtin, and sb3_hir.extras'.
_IMPORT_CALLS = {"import_module", "__import__", "require"}


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _module_of(path: str) -> tuple[str, bool]:
    """The dotted name of the module at ``path`` (relative to the repository) and whether it is a package."""
    parts = Path(path).with_suffix("").parts
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def module_imports(module: str, is_package: bool, source: str) -> Iterator[tuple[int, str]]:
    """Every module ``source`` imports, absolute, with its line: module-level and function-local statements (relative
    ones resolved), and string literals given to ``importlib.import_module``, ``__import__`` and ``extras.require``.

    ``from x import y`` yields ``x`` and ``x.y``, since ``y`` may be a submodule (``from sb3_hir import cli``).
    """
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base
            for alias in node.names:
                if alias.name != "*":
                    yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            first = node.args[0]
            if name in _IMPORT_CALLS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield node.lineno, first.value


def _broken_rule(importer: str, imported: str) -> str | None:
    if not _under(importer, "sb3_hir.cli") and _under(imported, "sb3_hir.cli"):
        return "the library never imports the CLI"
    if any(_under(imported, top) for top in ("benchmarks", "examples", "tests")):
        return "sb3_hir never imports benchmarks, examples or tests"
    if _under(importer, "sb3_hir.buffers") and _under(imported, "sb3_hir.dagger"):
        return "the buffers never import DAgger"
    return None


def layer_violations(
    sources: Mapping[str, str], allowed: list[tuple[str, str, str]]
) -> tuple[list[str], set[tuple[str, str]]]:
    """The imports of ``sources`` (path relative to the repository -> text) that break a layer rule, one line each,
    and the ``allowed`` pairs that were used (so that stale exceptions can be found)."""
    excused = {(importer, imported) for importer, imported, _ in allowed}
    violations, used = [], set()
    for path, source in sorted(sources.items()):
        module, is_package = _module_of(path)
        reported: set[tuple[int, str]] = set()
        for line, imported in module_imports(module, is_package, source):
            rule = _broken_rule(module, imported)
            if rule is None:
                continue
            if (module, imported) in excused:
                used.add((module, imported))
            elif not any(at == line and _under(imported, name) for at, name in reported):  # one line per statement
                reported.add((line, imported))
                violations.append(f"{path}:{line}: {module} imports {imported} ({rule})")
    return violations, used


def test_the_layers_import_downhill_only():
    sources = {str(path.relative_to(ROOT)): path.read_text() for path in (ROOT / "sb3_hir").rglob("*.py")}
    assert len(sources) > 50
    violations, used = layer_violations(sources, ALLOWED_IMPORTS)
    assert not violations, "\n".join(violations)
    stale = {(importer, imported) for importer, imported, _ in ALLOWED_IMPORTS} - used
    assert not stale, f"ALLOWED_IMPORTS excuses imports that no longer happen: {sorted(stale)}"


def test_the_layer_check_reports_each_kind_of_violation():
    """Planted violations, one per way of importing: each must be reported at its line, the declared one must not."""
    planted = {
        "sb3_hir/goals.py": "from sb3_hir.cli.common import build_env\n",
        "sb3_hir/relabel.py": "import numpy\n\n\ndef f():\n    import sb3_hir.cli\n",
        "sb3_hir/plots.py": "import importlib\nimportlib.import_module('sb3_hir.cli.train')\n",
        "sb3_hir/buffers/serving.py": "from sb3_hir.extras import require\nrequire('sb3_hir.dagger.storage', 'x')\n",
        "sb3_hir/buffers/draws/her.py": "from ...dagger import collector\n",
        "sb3_hir/buffers/layout.py": "from .. import dagger\n",
        "sb3_hir/history.py": "import benchmarks.bench_args\n",
        "sb3_hir/vec_env.py": (
            "from sb3_hir import extras\n__import__('examples.train')\nextras.require('tests.conftest', 'y')\n"
        ),
        "sb3_hir/callbacks.py": "from sb3_hir import cli\n",
        # allowed: the CLI imports itself, the library's downhill imports, and a declared exception
        "sb3_hir/cli/train.py": "from sb3_hir.cli.common import build_env\nfrom ..buffers import HerReplayBuffer\n",
        "sb3_hir/dagger/collector.py": "from sb3_hir.buffers import HerReplayBuffer\nfrom .storage import save\n",
        "sb3_hir/buffers/__init__.py": "from .demonstrations import as_episodes\nfrom ..goals import GoalSpec\n",
        "sb3_hir/buffers/demonstrations.py": "def load():\n    require('sb3_hir.dagger.storage', 'demos')\n",
    }
    violations, used = layer_violations(planted, ALLOWED_IMPORTS)
    assert violations == [
        "sb3_hir/buffers/draws/her.py:1: sb3_hir.buffers.draws.her imports sb3_hir.dagger (the buffers never "
        "import DAgger)",
        "sb3_hir/buffers/layout.py:1: sb3_hir.buffers.layout imports sb3_hir.dagger (the buffers never import DAgger)",
        "sb3_hir/buffers/serving.py:2: sb3_hir.buffers.serving imports sb3_hir.dagger.storage (the buffers never "
        "import DAgger)",
        "sb3_hir/callbacks.py:1: sb3_hir.callbacks imports sb3_hir.cli (the library never imports the CLI)",
        "sb3_hir/goals.py:1: sb3_hir.goals imports sb3_hir.cli.common (the library never imports the CLI)",
        "sb3_hir/history.py:1: sb3_hir.history imports benchmarks.bench_args (sb3_hir never imports benchmarks, "
        "examples or tests)",
        "sb3_hir/plots.py:2: sb3_hir.plots imports sb3_hir.cli.train (the library never imports the CLI)",
        "sb3_hir/relabel.py:5: sb3_hir.relabel imports sb3_hir.cli (the library never imports the CLI)",
        "sb3_hir/vec_env.py:2: sb3_hir.vec_env imports examples.train (sb3_hir never imports benchmarks, examples or "
        "tests)",
        "sb3_hir/vec_env.py:3: sb3_hir.vec_env imports tests.conftest (sb3_hir never imports benchmarks, examples or "
        "tests)",
    ]
    assert used == {("sb3_hir.buffers.demonstrations", "sb3_hir.dagger.storage")}
    # without its declaration, the excused import is reported like any other
    demonstrations = "sb3_hir/buffers/demonstrations.py"
    violations, _ = layer_violations({demonstrations: planted[demonstrations]}, [])
    assert violations == ["sb3_hir/buffers/demonstrations.py:2: sb3_hir.buffers.demonstrations imports "
                          "sb3_hir.dagger.storage (the buffers never import DAgger)"]


#: research code that left the wheel (issue 56): where each lives now.
RESEARCH = {
    "sb3_hir/experiment/moonshot.py": "benchmarks/research/moonshot.py",
    "sb3_hir/experiment/relaxed.py": "benchmarks/research/relaxed.py",
    "sb3_hir/experiment/experts": "plugins/sb3-hir-robotics/sb3_hir_robotics/pointmaze_expert.py",
}


def test_the_wheel_holds_the_library_and_not_the_research_code():
    """The wheel packs ``sb3_hir*`` (pyproject's packages.find): none of it is the benchmarks' research code, no
    library module imports that code, and the maze options left the shared arguments."""
    for old, new in RESEARCH.items():
        assert not (ROOT / old).exists(), f"{old} is research code: it lives in {new}, out of the wheel"
        assert (ROOT / new).exists(), new
    for path in (ROOT / "sb3_hir").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module.split(".")[0] not in ("research", "benchmarks"), f"{path} imports {node.module}"
    from sb3_hir.experiment import arguments

    assert not hasattr(arguments, "add_maze")
