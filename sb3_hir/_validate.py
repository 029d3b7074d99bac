"""Argument checks shared by every object that takes numbers or names: one wording, one place.

Each check returns the value converted (``int``, ``float``) so a caller validates and normalises in one line, and
raises ``ValueError`` naming the argument, what it got and what is accepted. ``bool`` is refused where a number is
asked for: ``True`` is an ``int`` to Python but never a meant count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["check_choice", "check_int", "check_keys", "check_number"]


def check_int(value: Any, name: str, minimum: int | None = None, maximum: int | None = None, hint: str = "") -> int:
    """``value`` as an ``int`` in ``[minimum, maximum]`` (either bound optional)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, Integral)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        raise ValueError(f"{name} must be an int{_bounds(minimum, maximum)}; got {value!r}{_hint(hint)}")
    return int(value)


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
        raise ValueError(f"{name} must be {kind}{where}; got {value!r}{_hint(hint)}")
    return float(value)


def check_choice(value: T, name: str, choices: Iterable[Any], hint: str = "") -> T:
    """``value`` if it is one of ``choices``; the message lists them all, so a misspelt name is fixed from it alone."""
    accepted = list(choices)
    if isinstance(value, bool) or value not in accepted:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in accepted)}; got {value!r}{_hint(hint)}")
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
