"""A kernel cached on disk is compiled again when a kernel it calls changes in another file of the package.

numba stamps a cached kernel with its own file only; without ``compiled._stamp_cache`` a kernel whose file did not
change loads its callees' old code. Here a copy of the package runs ``_finished_rows`` (``draws/base.py``), which
compiles in ``below`` (``rng_box.py``); then ``below`` changes in the copy, and the next process must run the new one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sb3_hir
from sb3_hir.buffers import compiled

pytestmark = [pytest.mark.once("dagger"),
              pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not importable here")]

_RUN = """
import numpy as np
import sb3_hir
assert sb3_hir.__file__.startswith(__import__("os").getcwd()), sb3_hir.__file__
from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws import base
cfg = compiled.config(size=50, n_envs=1, f_t=0, f_len=1, f_id=2)
out = base._finished_rows(np.random.default_rng(0), np.zeros((50, 3), np.int32), 10, 1.0, 50, cfg)
draws, flat = out[0], out[2]
print(sorted(set(flat[:draws].tolist())))
"""

_CHANGED_BELOW = """

@numba.njit(cache=True, nogil=True)
def below(rng, upper):  # type: ignore[no-untyped-def]
    return np.int64(upper - 1)
"""


def _rows(root: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(root), "SB3_HIR_JIT": "1"}
    for name in ("NUMBA_DISABLE_JIT", "NUMBA_CACHE_DIR"):  # compiled, and cached beside the copy's files
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", _RUN], env=env, cwd=root, capture_output=True, text=True,
                          timeout=300, check=False)  # cwd: ``-c`` puts it first on the path
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_changed_callee_in_another_file_recompiles_the_cached_kernel(tmp_path: Path) -> None:
    package = Path(sb3_hir.__file__).resolve().parent
    shutil.copytree(package, tmp_path / "sb3_hir", ignore=shutil.ignore_patterns("__pycache__"))
    first = _rows(tmp_path)
    assert first != "[49]", "the copy must draw rows at random before the change"
    assert any((tmp_path / "sb3_hir" / "buffers" / "draws" / "__pycache__").glob("base._finished_rows*.nbi")), \
        "the first run must have cached the kernel on disk, or the test shows nothing"
    with open(tmp_path / "sb3_hir" / "buffers" / "rng_box.py", "a") as f:
        f.write(_CHANGED_BELOW)
    assert _rows(tmp_path) == "[49]"


def test_the_stamp_covers_every_kernel_file() -> None:
    """The digest reads the files that define kernels, the generator's draws included, and no others' changes."""
    root = Path(sb3_hir.__file__).resolve().parent
    marked = {path.relative_to(root).as_posix() for path in root.rglob("*.py")
              if any(m.encode() in path.read_bytes() for m in compiled._KERNEL_MARKERS)}
    assert {"buffers/compiled.py", "buffers/rng_box.py", "buffers/draws/base.py", "buffers/serving.py",
            "buffers/draws/first_reach.py", "buffers/draws/exact_index.py"} <= marked
    assert "buffers/hindsight.py" not in marked
    assert len(compiled.kernel_sources_stamp()) == 64
