"""Run every ```python block of the documentation's Markdown pages and README.md, each in a fresh interpreter.

A page's Python snippets are promises: this script keeps them true. Each block runs on its own (no state carries
over from the block before it) in a process of its own, forked from a server that has imported torch, gymnasium and
SB3 once (``tests/forked.py``; everything the snippet imports itself, sb3_hir included, is imported fresh), in a
temporary working directory, with this checkout first on ``PYTHONPATH``, a non-interactive matplotlib backend and
one torch thread. Snippets keep their own budgets small
(``total_timesteps=200`` and the like); a block that is not meant to run (shell, output, a TOML fragment) is
tagged ``bash``, ``text`` or ``toml``, never ``python``.

    python docs/run_snippets.py               # all pages, two at a time
    python docs/run_snippets.py guide/dagger  # pages whose path (from the repo root) contains "guide/dagger"

Exit code 1 when any snippet fails (its page, line and output are printed).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path.insert(0, str(REPO / "tests"))
import forked  # noqa: E402  (the tests' process server, beside them)

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,})python\s*$")
TIMEOUT_S = 180


@dataclass
class Snippet:
    page: Path
    line: int
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def snippets(page: Path) -> list[Snippet]:
    found = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        indent, fence, start = len(match["indent"]), match["fence"], i + 1
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][indent:])
            i += 1
        found.append(Snippet(page, start, "\n".join(body) + "\n"))
        i += 1
    return found


def run(snippet: Snippet) -> tuple[Snippet, bool, float, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sb3-hir-snippet-") as cwd:
        try:
            proc = forked.run([sys.executable, "-c", snippet.code], cwd=cwd, env=env, timeout=TIMEOUT_S)
            ok, output = proc.returncode == 0, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            ok, output = False, f"timed out after {TIMEOUT_S} s\n{exc.stdout or ''}{exc.stderr or ''}"
    return snippet, ok, time.perf_counter() - start, output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("only", nargs="*", help="run only pages whose path contains one of these")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    pages = [*sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts), REPO / "README.md"]
    if args.only:
        pages = [p for p in pages if any(o in str(p.relative_to(REPO)) for o in args.only)]
    todo = [s for p in pages for s in snippets(p)]
    start = time.perf_counter()
    failed = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for snippet, ok, seconds, output in pool.map(run, todo):
            print(f"{'ok  ' if ok else 'FAIL'} {snippet.where} ({seconds:.1f} s)", flush=True)
            if not ok:
                failed.append((snippet, output))
    for snippet, output in failed:
        print(f"\n==== {snippet.where} failed:\n{snippet.code}\n---- output:\n{output[-4000:]}", file=sys.stderr)
    print(f"snippets: {len(todo)} run, {len(todo) - len(failed)} passed, {len(failed)} failed "
          f"({time.perf_counter() - start:.0f} s)")
    return 1 if failed or not todo else 0


if __name__ == "__main__":
    sys.exit(main())
