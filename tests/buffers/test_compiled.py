"""The compiled sampling kernels as a user meets them: Ctrl-C during their first compile, the numpy switch, and a
relabeler's own draw served alike by both backends."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from served_rows import filled_buffer, served

from sb3_hir.buffers import compiled
from sb3_hir.relabel import HindsightInstructionRelabeler

# One profile runs these (tests/conftest.py): the buffer runs on numpy, numba, torch and SB3, the same
# releases in both; gymnasium reaches it through spaces. The drop-in tests against SB3's run in both.
pytestmark = pytest.mark.once("current")

TESTS = Path(__file__).resolve().parents[1]  # the shared helpers (served_rows)

needs_numba = pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not importable here")


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(TESTS), **env}, timeout=300)


@needs_numba
def test_ctrl_c_during_the_first_compile_interrupts_sample(tmp_path) -> None:
    """llvmlite drops a KeyboardInterrupt raised in its ctypes callbacks; the buffer must still deliver it."""
    done = _python(
        """
        import os, signal, threading, time
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, also from a background job
        from served_rows import filled_buffer
        buffer = filled_buffer("maze_k3_some_future")
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        start = time.perf_counter()
        try:
            buffer.sample(64)  # compiles draw_exact: several seconds with an empty cache
            time.sleep(5)
            print("interrupt lost")
        except KeyboardInterrupt:
            print(f"interrupted after {time.perf_counter() - start:.1f} s")
        """,
        NUMBA_CACHE_DIR=str(tmp_path / "empty-cache"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "interrupted after" in done.stdout, done.stdout + done.stderr[-2000:]
    assert "Exception ignored" not in done.stderr


def test_sb3_hir_jit_0_selects_the_numpy_code() -> None:
    done = _python(
        """
        from served_rows import filled_buffer
        buffer = filled_buffer("maze_k1_some_future")
        buffer.sample(32)
        print(buffer.jit, sorted(buffer._draws.warm))
        """,
        SB3_HIR_JIT="0",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "False []"


def test_deferred_interrupt_holds_ctrl_c_until_the_block_ends() -> None:
    import signal

    outer = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, also from a background job
    reached_end_of_block = False
    with pytest.raises(KeyboardInterrupt), compiled.deferred_interrupt():
        os.kill(os.getpid(), signal.SIGINT)  # delivered to this (main) thread at once, as a C callback sees it
        reached_end_of_block = True
    try:
        assert reached_end_of_block
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is restored
    finally:
        signal.signal(signal.SIGINT, outer)


def test_only_the_first_call_of_a_kernel_is_deferred(monkeypatch) -> None:
    entered: list[str] = []

    class Recording:
        def __enter__(self) -> None:
            entered.append("deferred")

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(compiled, "deferred_interrupt", Recording)
    warm: set[str] = set()

    def kernel(x: int) -> int:
        return x + 1

    assert [compiled.call(warm, kernel, 1), compiled.call(warm, kernel, 2)] == [2, 3]
    assert entered == ["deferred"] and warm == {"kernel"}


class _OwnDraw(HindsightInstructionRelabeler):
    """The built-in draw under another class: the buffer then calls it as a plugin's own ``draw_goal_steps``."""

    def draw_goal_steps(self, *args: Any, **kwargs: Any) -> Any:
        return super().draw_goal_steps(*args, **kwargs)


@needs_numba
@pytest.mark.parametrize("goal_spec", ["exact", "tolerance"])
def test_a_relabelers_own_draw_is_served_alike_by_both_backends(goal_spec: str) -> None:
    """Beyond the golden cases: a relabeler with its own ``draw_goal_steps`` (exact index: reach steps compiled inside
    the numpy rounds; window: the numpy draw throughout)."""
    batches = []
    for jit in (True, False):
        relabeler = _OwnDraw(3, strategy="all", goal_spec=goal_spec)
        buffer = filled_buffer("maze_k3_some_future", relabeler=relabeler)
        assert type(buffer._draws).__name__ == ("ExactIndexDraw" if goal_spec == "exact" else "WindowDraw")
        buffer.jit = jit
        batches.append(served(buffer))
    for key, value in batches[1].items():
        np.testing.assert_array_equal(batches[0][key], value, err_msg=key)
