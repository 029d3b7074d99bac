"""Argument checks shared by every object that takes numbers or names: one wording, one place.

Each check returns the value converted (``int``, ``float``) so a caller validates and normalises in one line, and
raises :class:`ArgumentError` (a ``ValueError``) naming the argument, what it got and what is accepted. ``bool`` is
refused where a number is asked for: ``True`` is an ``int`` to Python but never a meant count.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np
from gymnasium import spaces

T = TypeVar("T")

__all__ = ["ArgumentError", "check_choice", "check_int", "check_keys", "check_number", "check_space_values",
           "describe"]


class ArgumentError(ValueError):
    """A ``ValueError`` about one argument, which it names in :attr:`argument`: a caller that spells the argument
    otherwise (the CLI's ``--relabel-ratio`` for ``relabel_ratio``) says it in its own words from :attr:`detail`,
    without reading the message.

    :param argument: the argument's name, as the object that checked it calls it.
    :param detail: what was wrong, after the name (``"must be an int >= 1; got 0"``).
    """

    def __init__(self, argument: str, detail: str) -> None:
        super().__init__(f"{argument} {detail}")
        self.argument = argument
        self.detail = detail


def check_int(value: Any, name: str, minimum: int | None = None, maximum: int | None = None, hint: str = "") -> int:
    """``value`` as an ``int`` in ``[minimum, maximum]`` (either bound optional)."""
    if type(value) is int and (minimum is None or value >= minimum) and (maximum is None or value <= maximum):
        return value  # the usual case, without the Integral ABC check (sample() checks its batch size per call)
    if (
        not is_int(value)
        or (minimum is not None and int(value) < minimum)
        or (maximum is not None and int(value) > maximum)
    ):
        raise ArgumentError(name, f"must be an int{_bounds(minimum, maximum)}; got {value!r}{_hint(hint)}")
    return int(value)


def is_int(value: object) -> bool:
    """Whether ``value`` is an integer (a Python or numpy one), not a bool. Typed ``object`` so that a caller's
    ``int`` annotation does not tell the type checker the answer (``int`` is registered with ``Integral``, not derived
    from it, so ``isinstance(x: int, Integral)`` would read as always false)."""
    return not isinstance(value, bool) and isinstance(value, Integral)


def check_number(
    value: Any,
    name: str,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
    hint: str = "",
) -> float:
    """``value`` as a finite ``float`` in the interval (closed unless ``open_low`` / ``open_high``)."""
    ok = not isinstance(value, bool) and isinstance(value, Real) and math.isfinite(float(value))
    if ok:
        number = float(value)
        ok = (minimum is None or (number > minimum if open_low else number >= minimum)) and (
            maximum is None or (number < maximum if open_high else number <= maximum)
        )
    if not ok:
        low = "" if minimum is None else f"{'(' if open_low else '['}{minimum:g}"
        high = "" if maximum is None else f"{maximum:g}{')' if open_high else ']'}"
        if minimum is not None and maximum is not None:
            where = f" in {low}, {high}"  # a bounded interval says finite by itself
        elif minimum is not None:
            where = f" finite number {'>' if open_low else '>='} {minimum:g}"
        elif maximum is not None:
            where = f" finite number {'<' if open_high else '<='} {maximum:g}"
        else:
            where = " finite number"
        kind = "a number" if minimum is not None and maximum is not None else "a"
        raise ArgumentError(name, f"must be {kind}{where}; got {value!r}{_hint(hint)}")
    return float(value)


def check_choice(value: T, name: str, choices: Iterable[Any], hint: str = "") -> T:
    """``value`` if it is one of ``choices``; the message lists them all, so a misspelt name is fixed from it alone."""
    accepted = list(choices)
    if isinstance(value, bool) or value not in accepted:
        raise ArgumentError(name, f"must be one of {', '.join(repr(c) for c in accepted)}; got {value!r}{_hint(hint)}")
    return value


def check_keys(keys: str | Iterable[str], available: Iterable[str], name: str = "keys") -> list[str]:
    """``keys`` (one key or several) as a list of distinct str keys, each among ``available`` observation keys."""
    present = list(available)
    selected = [keys] if isinstance(keys, str) else list(keys)
    if not selected or not all(isinstance(key, str) for key in selected):
        raise ValueError(f"{name} must be one or more str observation keys; got {keys!r}")
    if len(set(selected)) != len(selected):
        raise ValueError(f"{name} must not repeat a key; got {selected}")
    unknown = [key for key in selected if key not in present]
    if unknown:
        raise ValueError(f"{name} {unknown} are not in the observation space; available keys: {present}")
    return selected


def check_space_values(values: Any, space: spaces.Space, name: str, *, bounds: bool = True) -> np.ndarray:
    """``values`` (a batch: one leading axis) as an array, unless a value is one ``space`` would never hold.

    Shapes are the caller's business; this checks values, where a cast would hide the error: a fraction stored in an
    integer key becomes 0, a NaN trains a critic on NaN, an action outside the space is one SB3 never stores.

    :param bounds: also hold Box values to the space's bounds (actions); else only finite, and integral for integer
        dtypes (observations, whose declared bounds are often loose).
    """
    array = np.asarray(values)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise ValueError(f"{name} must hold numbers of {describe(space)}; got an array of dtype {array.dtype}")
    if array.size == 0:
        return array
    flat = array.reshape(len(array), -1) if array.ndim else array.reshape(1, 1)
    if np.issubdtype(array.dtype, np.inexact) and not np.isfinite(flat).all():
        _refuse(name, space, ~np.isfinite(flat), flat, "finite values")
    dtype = getattr(space, "dtype", None)
    integral = dtype is not None and (np.issubdtype(dtype, np.integer) or dtype == np.bool_)
    if integral and np.issubdtype(array.dtype, np.inexact) and not (flat == np.round(flat)).all():
        _refuse(name, space, flat != np.round(flat), flat, f"integers (the space stores {np.dtype(dtype)})")
    low, high = _limits(space, bounds)
    if low is not None and high is not None:
        low, high = np.broadcast_to(low, flat.shape[1:]), np.broadcast_to(high, flat.shape[1:])
        outside = (flat < low) | (flat > high)
        if outside.any():
            _refuse(name, space, outside, flat, f"values in [{_short(low)}, {_short(high)}]")
    return array


def describe(space: spaces.Space) -> str:
    """``repr(space)`` without touching ``space``: gymnasium 1.x caches a Box's bound strings on it at the first
    ``repr``, and a rejected call must leave the objects it was given byte for byte as they were."""
    return repr(copy.copy(space))


def _limits(space: spaces.Space, bounds: bool) -> tuple[Any, Any]:
    """The inclusive value range ``space`` holds, flattened per item (None where any value goes)."""
    if isinstance(space, spaces.Discrete):
        return int(space.start), int(space.start) + int(space.n) - 1
    if isinstance(space, spaces.MultiDiscrete):
        start = getattr(space, "start", np.zeros_like(space.nvec))
        return np.ravel(start), np.ravel(start + space.nvec - 1)
    if isinstance(space, spaces.MultiBinary):
        return 0, 1
    if isinstance(space, spaces.Box):
        if np.issubdtype(space.dtype, np.integer) or space.dtype == np.bool_:
            info = np.iinfo(space.dtype) if space.dtype != np.bool_ else None
            low = np.ravel(space.low) if bounds or info is None else info.min
            high = np.ravel(space.high) if bounds or info is None else info.max
            return low, high
        if bounds:
            return np.ravel(space.low), np.ravel(space.high)
    return None, None


def _refuse(name: str, space: spaces.Space, bad: np.ndarray, flat: np.ndarray, accepted: str) -> None:
    row, column = (int(i) for i in np.argwhere(bad)[0])
    raise ValueError(
        f"{name} must hold {accepted} of {describe(space)}; got {flat[row, column].item()!r} at [{row}] "
        f"({int(bad.any(axis=1).sum())} of {len(flat)} entries are outside it)"
    )


def _short(bound: np.ndarray) -> str:
    values = np.unique(np.asarray(bound))
    return f"{values[0]:g}" if len(values) == 1 else np.array2string(np.asarray(bound), precision=3)


def _bounds(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f" in [{minimum}, {maximum}]"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


def _hint(hint: str) -> str:
    return f" ({hint})" if hint else ""
