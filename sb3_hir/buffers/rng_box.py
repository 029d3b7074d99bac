"""The buffer's ``np.random.Generator`` boxed once for the kernels (imported with numba, on the first compiled draw).

numba unboxes a Generator argument on every call (three ``ctypes.cast`` of its bit generator's function pointers:
~7 us, as much as a tenth of a whole ``sample(256)``). A structref that holds it is unboxed in ~0.6 us, and draws
from the very same stream: the kernels and the numpy code share one generator, as they must to serve identical rows.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

__all__ = ["GeneratorBox", "box"]


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
