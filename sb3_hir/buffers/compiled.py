"""The numba side of the draw: how kernels are compiled and called, and the relabeler's batched draw as a kernel.

At ``sample(256)`` the numpy draw is some forty array calls of a few microseconds each on a few hundred rows, so
their fixed cost, not the arithmetic, is what a batch costs. A draw strategy's kernel (beside its numpy code in
``sb3_hir.buffers.draws``) does a whole draw in one call: it consumes the buffer's ``np.random.Generator`` element by
element, in the order the numpy code draws its arrays (numba's Generator methods produce NumPy's streams), so both
serve identical rows for one seed (``tests/buffers/test_served_rows.py``). Without numba, or with ``SB3_HIR_JIT=0``, the
buffer runs the numpy code.

Kernels take their settings as a named configuration (:func:`config`): a one-element structured array that a kernel
reads by field name (``cfg[0].n_envs``), so no kernel depends on the order of its settings, and numba unboxes it as
one argument (twenty scalars cost about twice the call overhead). :func:`draw_goal_steps` reproduces
``HindsightInstructionRelabeler.draw_goal_steps`` (``sb3_hir/relabel.py``), which two strategies call.

Kernels are cached on disk (numba's ``cache=True``), each stamped with a digest of every kernel file of the package
besides its own (:func:`kernel_sources_stamp`): numba's own stamp misses a change in a kernel it compiles in.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

__all__ = [
    "AVAILABLE", "DRAW_MODES", "SELECTIONS", "SOME_AT_LEAST_ONE", "below", "box_generator", "call", "config",
    "deferred_interrupt", "draw_goal_steps", "draw_goal_steps_boxed", "draw_mode", "enabled", "jitable", "kernel",
    "kernel_sources_stamp", "kernels_of",
]

#: numba is a dependency; the numpy code stays the reference, and the fallback where numba has no wheel. numba is
#: imported on the first kernel call, not with the package: ``import sb3_hir`` and CLI commands that never sample
#: do not pay for it.
AVAILABLE = importlib.util.find_spec("numba") is not None

#: A relabeler's ``strategy`` as kernels take it: which relabeled transitions take drawn goals.
DRAW_MODES = {"none": 0, "some": 1, "all": 2}
#: ``draw_goal_steps``'s mode for ``"some"`` with ``at_least_one`` (the probe of event goals: h uniform in 1..free).
SOME_AT_LEAST_ONE = 3
#: ``goal_selection`` as kernels take it.
SELECTIONS = {"future": 0, "episode": 1, "final": 2}


def draw_mode(relabeler: Any) -> int:
    """The relabeler's ``strategy`` as kernels take it (:data:`DRAW_MODES`; ``"all"`` for relabelers without one)."""
    return DRAW_MODES.get(getattr(relabeler, "strategy", "all"), DRAW_MODES["all"])


def enabled() -> bool:
    """Whether buffers built now use the compiled draw (numba importable and ``SB3_HIR_JIT`` not ``0``)."""
    return AVAILABLE and os.environ.get("SB3_HIR_JIT", "1") != "0"


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold Ctrl-C until the block ends, then deliver it.

    numba compiles a kernel on its first call with new types; a ``KeyboardInterrupt`` raised while llvmlite runs
    one of its ctypes callbacks is printed and dropped ("Exception ignored on calling ctypes callback"), so a
    Ctrl-C during a first ``sample()`` would be lost and training would go on. Only the main thread receives
    signals; elsewhere the block runs as is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            if callable(previous):
                previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt
            elif previous != signal.SIG_IGN:
                raise KeyboardInterrupt


def call(warm: set[str], kernel: Callable[..., Any], *args: Any) -> Any:
    """``kernel(*args)``; its first call per buffer (``warm``: the kernels it has run), which may compile, holds
    Ctrl-C until it returns (``deferred_interrupt``). A buffer's argument types never change, so later calls do not
    compile."""
    name = kernel.__name__
    if name in warm:
        return kernel(*args)
    with deferred_interrupt():
        result = kernel(*args)
    warm.add(name)
    return result


def config(**settings: int) -> np.ndarray:
    """A kernel's named configuration: ``settings`` as a one-element structured array (read as ``cfg[0].name``)."""
    dtype = np.dtype([(name, np.int64) for name in settings])
    return np.array([tuple(int(value) for value in settings.values())], dtype=dtype)


_PENDING: list[_Lazy] = []
_JITABLE: list[Callable[..., Any]] = []


class _Lazy:
    """A kernel compiled on its first call: then every pending kernel is handed to numba at once, and replaces its
    stand-in in the modules that define kernels, so that kernels calling each other (across modules too) see numba
    dispatchers when they compile."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.dispatcher: Callable[..., Any] | None = None
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any) -> Any:
        _materialize()
        assert self.dispatcher is not None
        return self.dispatcher(*args)


def below(rng: np.random.Generator, upper: int) -> int:
    """``rng.integers(0, upper)`` as kernels draw it: this in plain Python, ``rng_box.below`` once kernels compile
    (the same draw, without numba's per-call array)."""
    return int(rng.integers(0, upper))


def _materialize() -> None:
    if not _PENDING:
        return
    import numba
    from numba.extending import register_jitable

    from sb3_hir.buffers import rng_box

    globals()["below"] = rng_box.below  # kernels read it as ``compiled.below``, resolved as they compile

    for fn in _JITABLE:
        register_jitable(fn)
    _JITABLE.clear()
    stamp = kernel_sources_stamp()
    for lazy in _PENDING:
        lazy.dispatcher = numba.njit(cache=True, nogil=True)(lazy.fn)
        _stamp_cache(lazy.dispatcher, stamp)
    namespaces = {id(lazy.fn.__globals__): lazy.fn.__globals__ for lazy in _PENDING}
    _PENDING.clear()
    for namespace in namespaces.values():
        for name, value in list(namespace.items()):
            if isinstance(value, _Lazy) and value.dispatcher is not None:
                namespace[name] = value.dispatcher


#: what marks a file of the package whose functions kernels compile in.
_KERNEL_MARKERS = ("@compiled.kernel", "@compiled.jitable", "@kernel\n", "@jitable\n", "@numba.njit")


@cache
def kernel_sources_stamp() -> str:
    """A digest of every file of the package that defines kernels or what they compile in (found by their
    decorators, so every process gets the same digest, whichever kernels it has loaded)."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if any(marker.encode() in text for marker in _KERNEL_MARKERS):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + text)
    return digest.hexdigest()


def _stamp_cache(dispatcher: Any, stamp: str) -> None:
    """Make ``dispatcher``'s on-disk cache stale when any kernel file of the package changes, not only its own.

    numba stamps a cached kernel with its own file's content alone, while the kernels it calls are compiled into it:
    a kernel whose file did not change would load the old code of a changed callee (``draw_rounds`` in
    ``draws/base.py``, ``below`` in ``rng_box.py``) from the cache, on an upgrade of the package as in a checkout.
    A kernel of a plugin's module gets the package's stamp the same way. Where numba keeps its cache otherwise
    (another version's internals), it stays as numba made it."""
    try:
        cache_file = dispatcher._cache._cache_file
        own = cache_file._source_stamp
    except AttributeError:  # no disk cache, or another numba's internals
        return
    cache_file._source_stamp = (own, stamp)


def box_generator(rng: np.random.Generator) -> Any:
    """``rng`` as the entry kernels take it: boxed once (``rng_box``), since numba unboxes a bare Generator on every
    call (~7 us). Imports numba."""
    from sb3_hir.buffers import rng_box  # numba comes with it: only once a kernel runs

    return rng_box.box(rng)


def kernels_of(module_name: str) -> ModuleType:
    """The module ``module_name`` (a caller's ``__name__``), through which its kernels pass one of its kernels to
    another (``draw_rounds(..., here._round, ...)``): numba folds a module's attribute to a constant, where a plain
    global is lowered to the object's address, which keeps numba from caching the calling kernel."""
    return sys.modules[module_name]


def kernel(fn: Any) -> Any:
    """Mark ``fn`` as a kernel: compiled with numba on the first call of any kernel (numba imported then), the plain
    function where numba is not installed."""
    if not AVAILABLE:
        return fn
    lazy = _Lazy(fn)
    _PENDING.append(lazy)
    return lazy


def jitable(fn: Any) -> Any:
    """Mark ``fn`` as shared by the numpy code and the kernels: it stays a plain function (no call overhead from
    Python), and kernels that call it compile it in."""
    if AVAILABLE:
        _JITABLE.append(fn)
    return fn


@kernel
def draw_goal_steps(rng, own, length, t, strategy, future):  # type: ignore[no-untyped-def]
    """``HindsightInstructionRelabeler.draw_goal_steps`` (``strategy`` 1 "some", 2 "all", 3 "some" with
    ``at_least_one``; ``future`` as ``goal_selection == "future"``): the same draws from ``rng`` in the same order, one
    call per batch."""
    batch, k = own.shape
    out = np.full((batch, k), -1, np.int64)
    if strategy == 0 or batch == 0:
        return out
    big = np.iinfo(np.int64).max // 4
    excluded = np.full((batch, 2 * k), big, np.int64)
    h = _free_slots(own, excluded)
    _goal_counts(rng, h, strategy)
    draw = np.empty(batch, np.int64)
    active = np.empty(batch, np.bool_)
    clash = np.empty(batch, np.int64)
    for i in range(k):
        from_t = i == 0 and future
        count = _first_draws(rng, excluded, h, length, t, i, from_t, draw, active, clash)
        _redraw_clashes(rng, excluded, k + i, length, t, from_t, draw, clash, count)
        for b in range(batch):
            if i == 0 and not active[b]:
                h[b] = 0  # no admissible first alternative: keep the own instruction
            if active[b]:
                excluded[b, k + i] = draw[b]
    _sorted_steps(excluded, h, big, out)
    return out


@kernel
def draw_goal_steps_boxed(box, own, length, t, strategy, future):  # type: ignore[no-untyped-def]
    """:func:`draw_goal_steps` with the generator boxed (``box_generator``), as the buffer calls it."""
    return draw_goal_steps(box.rng, own, length, t, strategy, future)


@kernel
def _free_slots(own: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """Each row's goal slots a drawn goal may fill (``own``: step > 0 of an own goal already achieved, -2 a padding
    slot); the own goals' steps go to ``excluded``, so that no drawn goal repeats them."""
    batch, k = own.shape
    h = np.empty(batch, np.int64)
    for b in range(batch):
        free = k
        for j in range(k):
            if own[b, j] > 0:
                free -= 1
                excluded[b, j] = own[b, j]
            elif own[b, j] < -1:  # a padding slot (-2) is no goal to add
                free -= 1
        h[b] = free
    return h


@kernel
def _goal_counts(rng: np.random.Generator, h: np.ndarray, strategy: int) -> None:
    """Turn each row's free slots ``h`` into its count of drawn goals, in place: all of them for "all", one draw per
    row for the two "some" modes (the relabeler's order)."""
    if strategy == 1:  # "some": h uniform in 0..free
        for b in range(len(h)):
            h[b] = np.int64(rng.random() * (h[b] + 1))
    elif strategy == 3:  # "some", at least one: h uniform in 1..free
        for b in range(len(h)):
            h[b] = min(1 + np.int64(rng.random() * h[b]), h[b])


@kernel
def _first_draws(rng: np.random.Generator, excluded: np.ndarray, h: np.ndarray, length: np.ndarray, t: np.ndarray,
                 i: int, from_t: bool, draw: np.ndarray, active: np.ndarray, clash: np.ndarray) -> int:
    """Alternative ``i``'s first draw for every row, in one pass: whether the row draws it (into ``active``: it still
    wants a goal and has a step in its range, after ``t`` where ``from_t``, that none of the first ``k + i`` excluded
    steps holds), the draw itself (every row draws, as the numpy code draws a whole batch), and the active rows whose
    draw an excluded step holds, listed in ``clash`` in row order; returns how many. One pass, not three: each row's
    test, draw and clash read only that row, and the generator is drawn in row order all the same."""
    width = excluded.shape[1] // 2 + i
    count = 0
    for b in range(len(h)):
        lo = t[b] + 1 if from_t else 1
        span = length[b] - lo + 1
        inside = 0
        for j in range(width):
            inside += (excluded[b, j] >= lo) & (excluded[b, j] <= length[b])
        wanted = (i < h[b]) & (span - inside > 0)
        active[b] = wanted
        draw[b] = lo + np.int64(rng.random() * max(span, 1))
        clash[count] = b
        count += wanted & _clashes(excluded, b, width, draw[b])
    return count


@kernel
def _redraw_clashes(rng: np.random.Generator, excluded: np.ndarray, width: int, length: np.ndarray, t: np.ndarray,
                    from_t: bool, draw: np.ndarray, clash: np.ndarray, count: int) -> None:
    """Uniform over the free steps by rejection: redraw the ``count`` rows listed in ``clash`` (active rows whose
    ``draw`` one of the first ``width`` excluded steps holds), in row order, round by round (the numpy code's order
    of draws)."""
    while count:
        for c in range(count):
            b = clash[c]
            lo = t[b] + 1 if from_t else 1
            draw[b] = lo + np.int64(rng.random() * (length[b] - lo + 1))
        still = 0
        for c in range(count):
            b = clash[c]
            if _clashes(excluded, b, width, draw[b]):
                clash[still] = b
                still += 1
        count = still


@kernel
def _sorted_steps(excluded: np.ndarray, h: np.ndarray, big: int, out: np.ndarray) -> None:
    """Each drawing row's goal steps (own and drawn) in ascending order into ``out``; ``big`` (no step) becomes -1.
    Rows with ``h == 0`` keep their own instruction (``out`` stays -1)."""
    k = out.shape[1]
    row = np.empty(2 * k, np.int64)
    for b in range(len(h)):
        if h[b] == 0:
            continue
        for j in range(2 * k):  # insertion sort: 2k values, cheaper than a library sort call per row
            value = excluded[b, j]
            at = j
            while at > 0 and row[at - 1] > value:
                row[at] = row[at - 1]
                at -= 1
            row[at] = value
        for j in range(k):
            out[b, j] = row[j] if row[j] < big else -1


@kernel
def _clashes(excluded, b, width, value):  # type: ignore[no-untyped-def]
    for j in range(width):  # noqa: SIM110 - a plain loop compiles to a loop; any(generator) does not
        if excluded[b, j] == value:
            return True
    return False
