"""No private name crosses a package: a leading underscore says "only my own package relies on this".

Checked over the library, the plugins, the benchmarks and the examples (tests may reach into what they test):
- ``from m import _name`` is refused where ``m`` lives in another package (directory) than the importer;
- a private module (``sb3_hir._validate``) is refused outside its distribution (the core's own helpers);
- ``obj._name`` is refused on any receiver but the class's own (``self``, ``cls``, ``super()``; an override calling
  the hook it overrides is SB3's extension API), the module's own compiled kernels (``_here``), and the namedtuple
  methods (``_replace``, ``_asdict``, ``_fields``, ``_make``), which are public despite their underscore.

The uses that remain are listed with their reason in :data:`ALLOWED_PRIVATE`; a stale entry fails, so the list only
shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (file, private name, why). Each must still be used there: a stale entry fails the test.
ALLOWED_PRIVATE: list[tuple[str, str, str]] = [
    # third parties' private names, where they offer no public way
    ("sb3_hir/cli/sweep.py", "_actions", "argparse lists a parser's options only through _actions"),
    ("sb3_hir/cli/sweep.py", "_StoreTrueAction", "argparse: telling a flag from an option of train's parser"),
    ("sb3_hir/cli/sweep.py", "_AppendAction", "argparse: telling a repeated option of train's parser"),
    ("sb3_hir/cli/sweep.py", "_SubParsersAction", "argparse: finding train's parser among the subcommands"),
    ("sb3_hir/buffers/serving.py", "_normalize_obs",
     "SB3's ReplayBuffer helper that applies VecNormalize to sampled rows, as SB3's own sample() does"),
    ("sb3_hir/buffers/serving.py", "_normalize_reward", "the same helper for rewards"),
    ("sb3_hir/dagger/checkpoint.py", "_get_constructor_parameters",
     "SB3's BasePolicy.save() rebuilds a policy from it; a data-only checkpoint records the same parameters"),
    ("sb3_hir/episodes.py", "_max_episode_steps",
     "gymnasium's TimeLimit keeps its limit there (env.spec is None for an env built without gym.make)"),
    # issue 56's debt: parts that still reach into the buffer or a sibling package (to go with the restructuring)
    ("sb3_hir/buffers/legacy.py", "_online",
     "a 0.1 pickle held its demonstrations as a nested buffer, whose online rows become the region"),
    ("sb3_hir/testing/env.py", "_episode_goal_arrays", "the counterfactual check reads the relabeler's goal arrays"),
    ("sb3_hir/buffers/compiled.py", "_cache", "numba: a kernel's disk cache, to stamp it with its callees' files"),
    ("sb3_hir/buffers/compiled.py", "_cache_file", "numba: the same cache's index file"),
    ("sb3_hir/buffers/compiled.py", "_source_stamp",
     "numba stamps a cached kernel with its own file only; the stamp also names the files of what it compiles in"),
    ("benchmarks/bench_buffer.py", "_index", "the benchmark times the episode index apart from the buffer"),
    ("benchmarks/bench_buffer.py", "_online", "the benchmark times the episode index apart from the buffer"),
    ("benchmarks/bench_buffer.py", "_current_ep_start", "the benchmark times the episode index apart from the buffer"),
]

#: Underscored names that are public API (namedtuple's).
PUBLIC_UNDERSCORED = {"_replace", "_asdict", "_fields", "_make"}
#: Receivers that are the class or module itself.
OWN_RECEIVERS = {"self", "cls", "_here"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def module_name(path: str) -> tuple[str, str]:
    """The dotted module of a repository path, and its package (a plugin's files sit under ``plugins/<dist>/``)."""
    parts = Path(path).with_suffix("").parts
    if parts[0] == "plugins":
        parts = parts[2:]
    module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return module, ".".join(parts[:-1])


def _defining_package(module: str, name: str, modules: set[str]) -> str:
    """The package that defines ``name`` imported from ``module``: ``module`` if ``name`` is its submodule or
    ``module`` is a package, else ``module``'s package."""
    if f"{module}.{name}" in modules or any(m.startswith(module + ".") for m in modules):
        return module
    return module.rpartition(".")[0]


def private_uses(path: str, source: str, modules: set[str]) -> Iterator[tuple[int, str, str]]:
    """The uses of private names in ``source`` that cross a package: (line, name, what)."""
    module, package = module_name(path)
    distribution = module.split(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                anchor = package.split(".")
                base = ".".join([*anchor[: len(anchor) - (node.level - 1)], base])
            private_module = next((p for p in base.split(".") if _private(p)), None)
            if private_module and base.split(".")[0] != distribution:
                yield node.lineno, private_module, f"imports the private module {base} of another distribution"
            for alias in node.names:
                if _private(alias.name) and _defining_package(base, alias.name, modules) != package:
                    yield node.lineno, alias.name, f"imports {alias.name} from {base}, another package"
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in PUBLIC_UNDERSCORED:
            receiver = node.value
            own = (isinstance(receiver, ast.Name) and receiver.id in OWN_RECEIVERS) or (
                isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super")
            if not own:
                yield node.lineno, node.attr, f"reads {ast.unparse(receiver)}.{node.attr}"


def violations(sources: Mapping[str, str], allowed: list[tuple[str, str, str]]) -> tuple[list[str], set]:
    """The crossing uses not in ``allowed``, one line each, and the ``allowed`` entries that were used."""
    modules = {module_name(path)[0] for path in sources}
    excused = {(path, name) for path, name, _ in allowed}
    found, used = [], set()
    for path, source in sorted(sources.items()):
        for line, name, what in private_uses(path, source, modules):
            if (path, name) in excused:
                used.add((path, name))
            else:
                found.append(f"{path}:{line}: {what}")
    return found, used


def _sources() -> dict[str, str]:
    paths = [*(ROOT / "sb3_hir").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"),
             *(ROOT / "examples").rglob("*.py"),
             *(p for p in (ROOT / "plugins").rglob("*.py") if "tests" not in p.relative_to(ROOT).parts)]
    return {str(p.relative_to(ROOT)): p.read_text() for p in paths}


def test_no_private_name_crosses_a_package():
    sources = _sources()
    assert len(sources) > 100
    found, used = violations(sources, ALLOWED_PRIVATE)
    assert not found, "private names used across packages:\n" + "\n".join(found)
    stale = {(path, name) for path, name, _ in ALLOWED_PRIVATE} - used
    assert not stale, f"ALLOWED_PRIVATE excuses uses that no longer happen: {sorted(stale)}"


def test_the_check_reports_each_way_of_crossing_and_lets_the_own_ones_pass():
    planted = {
        "sb3_hir/goals.py": "def _pack(x):\n    return x\n",
        "sb3_hir/_validate.py": "def check(x):\n    return x\n",
        "sb3_hir/buffers/__init__.py": "",
        "sb3_hir/buffers/storage.py": "from sb3_hir.goals import _pack\nfrom sb3_hir._validate import check\n",
        "sb3_hir/buffers/hindsight.py": (
            "from .storage import _local\n\n\nclass B:\n    def f(self, other):\n"
            "        return self._x, super()._y(), other._z, other._replace(a=1)\n"),
        "plugins/sb3-hir-x/sb3_hir_x/__init__.py": "from sb3_hir._validate import check\n",
        "benchmarks/bench_x.py": "def f(buffer):\n    return buffer._index\n",
    }
    found, used = violations(planted, [("benchmarks/bench_x.py", "_index", "a declared exception")])
    assert found == [
        "plugins/sb3-hir-x/sb3_hir_x/__init__.py:1: imports the private module sb3_hir._validate of another "
        "distribution",
        "sb3_hir/buffers/hindsight.py:6: reads other._z",
        "sb3_hir/buffers/storage.py:1: imports _pack from sb3_hir.goals, another package",
    ]
    assert used == {("benchmarks/bench_x.py", "_index")}
