"""Helpers for tests: make kafkalog's file I/O fail on purpose.

For tests only. The rules are process-global: every open, write, fsync, rename, delete (and
``.log`` read) that kafkalog performs on a path under ``path`` fails with ``errno`` until the
rule is cleared or has fired ``times`` times. The failure surfaces exactly as a real one would:
a :class:`kafkalog.exceptions.KafkaLogIOError` with that errno, naming the file and operation.

Paths are compared component by component, as given (not resolved): inject on the same path
spelling the log was opened with. Ops: ``open``, ``write``, ``fsync``, ``rename``, ``delete``,
``read``, ``truncate``, ``mmap``.

    >>> import errno
    >>> with fault(tmp_path, "write", errno.ENOSPC):  # doctest: +SKIP
    ...     log.append_records([(b"k", b"v")])        # raises KafkaLogIOError (ENOSPC)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from ._native import _clear_faults, _inject_fault

__all__ = ["inject_fault", "clear_faults", "fault"]


def inject_fault(path: str | os.PathLike[str], op: str, errno: int, times: int | None = None) -> None:
    """Makes ``op`` on every file under ``path`` fail with ``errno``, ``times`` times (``None``:
    until cleared). An unknown ``op`` raises ValueError naming the allowed ones."""
    _inject_fault(path, op, errno, times)


def clear_faults(path: str | os.PathLike[str] | None = None) -> None:
    """Removes the rules injected under ``path``, or every rule when ``path`` is None."""
    _clear_faults(path)


@contextmanager
def fault(path: str | os.PathLike[str], op: str, errno: int, times: int | None = None) -> Iterator[None]:
    """Injects a fault for the duration of the ``with`` block, then clears every rule under
    ``path``."""
    inject_fault(path, op, errno, times)
    try:
        yield
    finally:
        clear_faults(path)
