"""The buffer's ``np.random.Generator`` as the kernels take it (imported with numba, on the first compiled draw).

numba unboxes a Generator argument on every call (three ``ctypes.cast`` of its bit generator's function pointers:
~7 us, as much as a tenth of a whole ``sample(256)``). A structref that holds it is unboxed in ~0.6 us, and draws
from the very same stream: the kernels and the numpy code share one generator, as they must to serve identical rows.

:func:`below` is ``rng.integers(0, upper)`` for kernels. numba's scalar ``integers`` allocates a one-element array
per call (~60 ns, against ~6 ns for the draw itself), and a round draws two integers per candidate row. ``below`` runs
NumPy's bounded draws on the generator directly (Lemire's rejection, on buffered 32-bit draws below 2**32), so it
consumes the generator exactly as NumPy's ``integers`` does (``tests/buffers/test_rng_box.py``); above 2**32 it also
corrects numba's, which leaves NumPy's stream there.

:func:`legacy_rows` is ``np.random.randint`` for the rows a batch serves as recorded, which ``DictReplayBuffer`` draws
from ``np.random`` (SB3 seeds it): NumPy's legacy masked draw on the bit generator behind ``np.random``
(:func:`np_random_box`), so the stream is the one ``randint`` consumes (``tests/buffers/test_rng_box.py``).
``randint`` takes ~4.8 µs a call, mostly argument checks, for a few dozen draws; this kernel's call 2.6 µs
(``benchmarks/results/bench_kernel_costs.txt``).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

try:  # the generator's raw draws and NumPy's 32-bit bounded draw, as numba's Generator.integers calls them
    from numba.np.random.generator_core import next_uint32, next_uint64
    from numba.np.random.random_methods import buffered_bounded_lemire_uint32

    RAW_DRAWS = True
except ImportError:  # pragma: no cover - a numba that moved them: integers() itself, the same stream below 2**32
    RAW_DRAWS = False

__all__ = ["RAW_DRAWS", "GeneratorBox", "below", "box", "legacy_rows", "np_random_box"]


@structref.register
class GeneratorBoxType(types.StructRef):
    """numba's type of :class:`GeneratorBox`."""

    def preprocess_fields(self, fields: Any) -> tuple[tuple[str, types.Type], ...]:
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class GeneratorBox(structref.StructRefProxy):
    """A ``np.random.Generator`` as kernels take it cheaply; ``box.rng`` in a kernel is the generator."""


structref.define_proxy(GeneratorBox, GeneratorBoxType, ["rng"])


@numba.njit(cache=True)
def _new(rng):  # type: ignore[no-untyped-def]
    return GeneratorBox(rng)


def box(rng: np.random.Generator) -> GeneratorBox:
    """``rng`` boxed (compiled once per machine, then loaded from numba's cache)."""
    return _new(rng)


if RAW_DRAWS:

    @numba.njit(cache=True, nogil=True)
    def _lemire64(bitgen, span):  # type: ignore[no-untyped-def]
        """NumPy's ``bounded_lemire_uint64``, in unsigned arithmetic throughout: numba's own mixes ``span`` (signed)
        with ``UINT64_MAX`` into a float threshold, so its ``integers`` leaves NumPy's stream above 2**32."""
        excl = np.uint64(span) + np.uint64(1)
        x = next_uint64(bitgen)
        if x * excl < excl:
            threshold = (np.uint64(0xFFFFFFFFFFFFFFFF) - np.uint64(span)) % excl
            while x * excl < threshold:
                x = next_uint64(bitgen)
        low = np.uint64(0xFFFFFFFF)
        x0, x1, e0, e1 = x & low, x >> np.uint64(32), excl & low, excl >> np.uint64(32)
        w0 = x0 * e0
        mid = x1 * e0 + (w0 >> np.uint64(32))
        w1 = (mid & low) + x0 * e1
        return x1 * e1 + (mid >> np.uint64(32)) + (w1 >> np.uint64(32))

    @numba.njit(cache=True, nogil=True)
    def below(rng, upper):  # type: ignore[no-untyped-def]
        """``rng.integers(0, upper)``, the same draw without numba's one-element array."""
        if upper < 1:
            raise ValueError("below: upper must be >= 1 (rng.integers(0, upper) draws from [0, upper))")
        span = upper - 1
        if span == 0:
            return np.int64(0)  # integers(0, 1) draws nothing
        if span < 0xFFFFFFFF:
            return np.int64(buffered_bounded_lemire_uint32(rng.bit_generator, span))
        if span == 0xFFFFFFFF:
            return np.int64(next_uint32(rng.bit_generator))
        return np.int64(_lemire64(rng.bit_generator, span))

    @numba.njit(cache=True, nogil=True)
    def _legacy_below(bitgen, span, mask):  # type: ignore[no-untyped-def]
        """One ``np.random.randint(0, span + 1)`` (NumPy's legacy bounded draw, below 2**32): a 32-bit draw masked
        to ``span``'s bit length (``mask``), redrawn while above ``span``; nothing drawn for ``span == 0``."""
        if span == 0:
            return np.int64(0)
        value = next_uint32(bitgen) & mask
        while value > span:
            value = next_uint32(bitgen) & mask
        return np.int64(value)

    @numba.njit(cache=True, nogil=True)
    def _mask(span):  # type: ignore[no-untyped-def]
        mask = np.uint32(span)
        for shift in (1, 2, 4, 8, 16):
            mask |= mask >> np.uint32(shift)
        return mask

    @numba.njit(cache=True, nogil=True)
    def legacy_rows(box, upper, count, n_envs):  # type: ignore[no-untyped-def]
        """``rows * n_envs + envs`` for ``rows = np.random.randint(0, upper, size=count)`` and then, with more than
        one sub-env, ``envs = np.random.randint(0, n_envs, size=count)``: the same draws from the same bit generator
        (``box.rng`` wraps ``np.random``'s: :func:`np_random_box`), for ``upper`` and ``n_envs`` up to 2**32."""
        if upper < 1 or upper > 2**32 or n_envs < 1 or n_envs > 2**32 or count < 0:
            raise ValueError("legacy_rows: upper and n_envs must be in [1, 2**32] (NumPy's legacy draw is 64-bit "
                             "above) and count >= 0")
        bitgen = box.rng.bit_generator
        rows = np.empty(count, np.int64)
        span = np.uint32(upper - 1)
        mask = _mask(span)
        for i in range(count):
            rows[i] = _legacy_below(bitgen, span, mask)
        if n_envs > 1:
            span = np.uint32(n_envs - 1)
            mask = _mask(span)
            for i in range(count):
                rows[i] = rows[i] * n_envs + _legacy_below(bitgen, span, mask)
        return rows

else:  # pragma: no cover

    @numba.njit(cache=True, nogil=True)
    def below(rng, upper):  # type: ignore[no-untyped-def]
        """``rng.integers(0, upper)``."""
        return rng.integers(0, upper)


def np_random_box(held: tuple[Any, GeneratorBox] | None) -> tuple[Any, GeneratorBox]:
    """``(bit_generator, box)`` of the bit generator behind ``np.random`` (the one SB3 seeds), as
    :func:`legacy_rows` takes it: ``held`` while it is still NumPy's (reseeding keeps it), a new box once
    ``np.random.set_bit_generator`` replaced it."""
    bit_generator = np.random.get_bit_generator()  # type: ignore[attr-defined]  # public since NumPy 1.25
    if held is not None and held[0] is bit_generator:
        return held
    return bit_generator, box(np.random.Generator(bit_generator))
