"""Shared helpers for the LogManager suites (test_log_manager.py, test_log_dir_failure.py).

Every manager a test opens runs on a manual clock started at the wall clock (records get
wall-clock timestamps unless given one, and Kafka rejects timestamps more than an hour ahead of
the log's clock), with no scheduler thread, so nothing happens unless the test moves time.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kafkalog import LogManager, Record, UnifiedLog
from kafkalog.checkpoints import read_offset_checkpoint

#: Small segments: ``segment.bytes`` has a 1 MiB minimum, this internal key does not.
SMALL_SEGMENTS: dict[str, Any] = {"internal.segment.bytes": 1024}
#: A value that fills about a sixth of a SMALL_SEGMENTS segment with its batch.
VALUE = b"v" * 100

RECOVERY_POINTS = "recovery-point-offset-checkpoint"
LOG_STARTS = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
LOCK = ".lock"
META = "meta.properties"


def now_ms() -> int:
    return int(time.time() * 1000)


def open_manager(
    dirs: Sequence[Path] | Path,
    config: Mapping[str, Any] | None = None,
    *,
    time_ms: int | None = None,
    **kwargs: Any,
) -> LogManager:
    """A LogManager on a manual clock (``time_ms``, default now) with no scheduler thread."""
    targets = [dirs] if isinstance(dirs, Path) else list(dirs)
    return LogManager(
        targets, config, scheduler=False, time_ms=now_ms() if time_ms is None else time_ms, **kwargs
    )


def fill(log: UnifiedLog, count: int, *, timestamp: int | None = None, start: int | None = None) -> None:
    """Appends ``count`` records one batch each; record ``i`` (counting from the log end, or
    ``start``) has key ``k<i>`` and a value ending in ``<i>``, so offsets can be checked."""
    first = log.log_end_offset if start is None else start
    for i in range(first, first + count):
        log.append([Record(b"k%d" % i, VALUE + b"%d" % i, timestamp=timestamp)])


def expected_value(offset: int) -> bytes:
    return VALUE + b"%d" % offset


def check_contents(log: UnifiedLog, end: int | None = None) -> None:
    """Every offset from the log start to the log end (or ``end``) is there exactly once, in
    order, holding what :func:`fill` wrote."""
    stop = log.log_end_offset if end is None else end
    records = list(log.records(end=stop))
    offsets = [r.offset for r in records]
    assert offsets == list(range(log.log_start_offset, stop)), f"offsets of {log.path} not contiguous"
    for r in records:
        assert r.value == expected_value(r.offset), f"{log.path} offset {r.offset} holds {r.value!r}"


def drop(manager: LogManager, *logs: UnifiedLog | None) -> None:
    """Simulates a crash in-process: the manager (and any log handles the caller passes, which
    the caller must also stop using) are released without close(), so nothing is flushed,
    checkpointed or marked clean."""
    del manager, logs
    gc.collect()


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    return read_offset_checkpoint(path)


def names(path: Path) -> list[str]:
    return sorted(os.listdir(path))


def log_dir_of(log: UnifiedLog) -> Path:
    return Path(log.path).parent


def partition_dirs(path: Path) -> list[str]:
    """Names of the sub-directories of a log dir."""
    return sorted(p.name for p in path.iterdir() if p.is_dir())


def leftover_temp_files(root: Path) -> list[str]:
    """Files an interrupted replace or checkpoint would leave: .swap, .cleaned, .tmp."""
    return sorted(
        str(p) for p in root.rglob("*") if p.is_file() and p.name.endswith((".swap", ".cleaned", ".tmp"))
    )


def native_thread_names() -> list[str]:
    """Names of every OS thread of this process (Linux truncates them to 15 characters)."""
    out = []
    for task in Path("/proc/self/task").iterdir():
        try:
            out.append((task / "comm").read_text().strip())
        except FileNotFoundError:  # the thread ended while we looked
            continue
    return out


def wait_for(predicate: Callable[[], object], timeout_s: float = 10.0, what: str = "condition") -> None:
    """Polls ``predicate`` until it is true or ``timeout_s`` passes (then fails)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.01)
