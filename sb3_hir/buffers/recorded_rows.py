"""The rows a batch serves as recorded, drawn as ``DictReplayBuffer`` draws them: :class:`RecordedRows`.

SB3's buffers draw from ``np.random`` (which SB3 seeds): ``randint(0, upper, size=n)`` rows, then ``randint(0,
n_envs, size=n)`` sub-envs. One sub-env draws nothing there (NumPy's ``randint(0, 1)`` returns zeros without touching
the stream), so that call is skipped (:func:`with_envs`). With the compiled kernels, the rows and sub-envs are the
same draws from ``np.random``'s bit generator in one kernel call (:func:`~sb3_hir.buffers.rng_box.legacy_rows`):
``randint`` takes about 4.8 µs a call, mostly argument checks, for a few dozen draws; the kernel's call 2.6 µs
(``benchmarks/results/bench_kernel_costs.txt``; inside ``sample()``, 0.90x of its ratio at 100k rows,
``bench_compare_legacy_rows.txt``). ``benchmarks/bench_buffer.py``'s same-gather anchor draws its
rows with this class too, so that what the buffer costs above it is the relabeling alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sb3_hir.buffers import compiled

__all__ = ["LEGACY_ROWS_MAX", "RecordedRows", "with_envs"]

#: the most rows (and sub-envs) whose ``randint`` draws ``rng_box.legacy_rows`` makes: NumPy's legacy draw is 64-bit
#: above 2**32, where NumPy draws them.
LEGACY_ROWS_MAX = 2**32


class RecordedRows:
    """``count`` flat rows (``row * n_envs + env``) drawn from ``np.random`` exactly as ``DictReplayBuffer`` draws
    them (module docstring): ``recorded_rows(upper, count, n_envs)``.

    :param jit: draw them in one kernel call where numba is importable (the buffer's ``jit`` switches it).
    """

    def __init__(self, jit: bool) -> None:
        self.use_compiled(jit)

    def use_compiled(self, on: bool) -> None:
        self.jit = bool(on) and compiled.AVAILABLE
        #: ``rng_box``'s ``(np_random_box, legacy_rows)``, imported at the first batch (numba comes with it), or
        #: False where numba lacks the raw draws; kernels called (``compiled.call``); ``np.random``'s bit generator
        #: boxed.
        self._kernels: Any = None
        self.warm: set[str] = set()
        self._np_random: tuple[Any, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"jit": self.jit}  # the rest is made again where it is loaded

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.use_compiled(state["jit"])

    def __call__(self, upper: int, count: int, n_envs: int) -> np.ndarray:
        if upper < 1 or count < 0 or n_envs < 1:
            raise ValueError(f"recorded rows: upper (the rows filled) and n_envs must be >= 1 and count >= 0; got "
                             f"upper={upper}, count={count}, n_envs={n_envs}")
        kernels = self._kernels
        if kernels is None and self.jit:
            from sb3_hir.buffers import rng_box

            kernels = self._kernels = (rng_box.np_random_box, rng_box.legacy_rows) if rng_box.RAW_DRAWS else False
        if kernels and upper <= LEGACY_ROWS_MAX and n_envs <= LEGACY_ROWS_MAX:
            box_of, legacy_rows = kernels
            self._np_random = held = compiled.call(self.warm, box_of, self._np_random)  # its first call compiles
            with held[0].lock:  # as np.random's own draws hold it
                return compiled.call(self.warm, legacy_rows, held[1], upper, count, n_envs)
        return with_envs(np.random.randint(0, upper, size=count), n_envs)


def with_envs(rows: np.ndarray, n_envs: int) -> np.ndarray:
    """Flat indices of ``rows`` with sub-envs drawn as ``DictReplayBuffer._get_samples`` draws them (``np.random``).

    One sub-env draws nothing: NumPy's ``randint(0, 1)`` returns zeros without touching the stream, so the rows
    themselves are the flat indices and the stream is the same, without the call (``bench_kernel_costs.py``)."""
    if n_envs == 1:
        return rows
    return rows * n_envs + np.random.randint(0, high=n_envs, size=(len(rows),))
