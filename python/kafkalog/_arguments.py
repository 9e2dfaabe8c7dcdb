"""Checks of the numbers and names callers pass to the Python API, before they cross into the
native engine, where a value that does not fit its native type would leak out as a bare
OverflowError or TypeError.

One rule per kind of argument: an int must be an int within its range, a name a str. The range
is the argument's real rule where the engine does not check it; for offsets and timestamps the
engine checks (with Kafka's errors, e.g. OffsetOutOfRangeError for a read), only what cannot
reach it is refused here, and the message states the engine's rule. Refusals raise
InvalidArgumentError (a ValueError) or InvalidArgumentTypeError (a TypeError), naming the
argument, the value and what is accepted.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Mapping
from typing import Any

from .exceptions import InvalidArgumentError, InvalidArgumentTypeError

I32_MAX = 2**31 - 1
I64_MIN = -(2**63)
I64_MAX = 2**63 - 1

#: What an offset may be (the engine refuses negative ones, naming the call's rule).
OFFSETS = f"must be an offset in [0, {I64_MAX}]"
#: What offset_for_timestamp takes.
TIMESTAMP_QUERIES = (
    f"must be a timestamp in [0, {I64_MAX}] (ms), or -2 (earliest), -1 (latest) or -3 (max timestamp)"
)


def integer(name: str, value: Any, lo: int, hi: int, allowed: str | None = None, *, native: tuple[int, int] | None = None) -> int:
    """``value`` as an int in [lo, hi]. With ``native``, only values outside that native range
    are refused here (the engine checks the rest); ``allowed`` replaces the message's
    "must be an int in [lo, hi]"."""
    if isinstance(value, bool):
        raise InvalidArgumentTypeError(f"{name} must be an int, not bool ({value!r})")
    try:
        number = operator.index(value)
    except TypeError:
        raise InvalidArgumentTypeError(f"{name} must be an int, not {type(value).__name__} ({value!r:.80})") from None
    low, high = native if native is not None else (lo, hi)
    if not low <= number <= high:
        raise InvalidArgumentError(f"invalid value {number} for {name}: {allowed or f'must be an int in [{lo}, {hi}]'}")
    return number


def optional_integer(name: str, value: Any, lo: int, hi: int, allowed: str | None = None) -> int | None:
    """None, or ``value`` as an int in [lo, hi]."""
    return None if value is None else integer(name, value, lo, hi, allowed)


def offset(name: str, value: Any) -> int:
    """An offset for a call whose engine checks it: refused here only outside int64."""
    return integer(name, value, 0, I64_MAX, OFFSETS, native=(I64_MIN, I64_MAX))


def range_bound(name: str, value: Any) -> int | None:
    """The ``start`` or ``end`` of a range read: None, or an offset >= 0."""
    return None if value is None else integer(name, value, 0, I64_MAX, OFFSETS)


def partition(value: Any, name: str = "partition") -> int:
    """A partition number: an int in [0, 2**31 - 1]."""
    return integer(name, value, 0, I32_MAX, f"a partition number is never negative and fits in 32 bits: [0, {I32_MAX}]")


def number(name: str, value: Any) -> float:
    """A float (or an int that converts to one), for the engine to range-check."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentTypeError(f"{name} must be a number, not {type(value).__name__} ({value!r:.80})")
    try:
        return float(value)
    except OverflowError:
        raise InvalidArgumentError(f"invalid value {value} for {name}: too large for a float") from None


def string(name: str, value: Any, choices: Iterable[str] | None = None) -> str:
    """A str; the engine checks the value (``choices`` only names them in a type error)."""
    if not isinstance(value, str):
        accepted = f"one of {', '.join(repr(c) for c in choices)}" if choices else "a str"
        raise InvalidArgumentTypeError(f"{name} must be {accepted}, not {type(value).__name__} ({value!r:.80})")
    return value


def path(name: str, value: Any) -> str:
    """A file-system path: a str, bytes or os.PathLike, as a str."""
    try:
        return os.fsdecode(os.fspath(value))
    except TypeError:
        raise InvalidArgumentTypeError(
            f"{name} must be a path (str or os.PathLike), not {type(value).__name__} ({value!r:.80})"
        ) from None


def flag(name: str, value: Any) -> bool:
    """True or False (not 0, 1 or "yes")."""
    if not isinstance(value, bool):
        raise InvalidArgumentTypeError(f"{name} must be True or False, not {type(value).__name__} ({value!r:.80})")
    return value


def data(name: str, value: Any) -> bytes:
    """Bytes from a bytes-like object (bytes, bytearray, memoryview)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidArgumentTypeError(f"{name} must be bytes, not {type(value).__name__} ({value!r:.80})")


def mapping(name: str, value: Any) -> Mapping[Any, Any]:
    """A mapping (a dict of config keys to values)."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentTypeError(f"{name} must be a mapping of keys to values, not {type(value).__name__} ({value!r:.80})")
    return value


def progress_callback(name: str, value: Any) -> Any:
    """A progress callback: None or a callable (called with one ``kafkalog.Progress``)."""
    if value is not None and not callable(value):
        raise InvalidArgumentTypeError(f"{name} must be a callable or None, not {type(value).__name__}")
    return value
