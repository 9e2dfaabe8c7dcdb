"""The LogManager suites' kit (test_log_manager.py, test_log_dir_failure.py, test_log_cleaner.py,
test_logging.py), and the hang guard every suite's waits share.

Every manager a test opens runs on a manual clock started at the wall clock (records get
wall-clock timestamps unless given one, and Kafka rejects timestamps more than an hour ahead of
the log's clock), with no scheduler thread, so nothing happens unless the test moves time.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
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

#: How long a test waits for something another thread or process does before it fails. Only a
#: hang guard: every wait polls for the state it needs, so a slow but healthy run (a loaded
#: machine, a step ten times slower than usual) never reaches it.
HANG_GUARD_S = 300.0


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
    """Paths of the files under ``root`` (all its log dirs and partitions) that an interrupted
    replace or checkpoint would leave: .swap, .cleaned, .tmp."""
    return sorted(
        str(p) for p in root.rglob("*") if p.is_file() and p.name.endswith((".swap", ".cleaned", ".tmp"))
    )


def native_threads() -> dict[int, str]:
    """Thread id -> name of every OS thread of this process (Linux truncates names to 15
    characters).

    A thread another thread has just joined can still be listed for a moment: the kernel wakes
    the joiner before it removes the task from /proc. Count threads with
    :func:`wait_for_new_threads` or :func:`wait_for`, never with one look right after a join.
    """
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            out[int(task.name)] = (task / "comm").read_text().strip()
        except FileNotFoundError:  # the thread ended while we looked
            continue
    return out


def native_thread_names() -> list[str]:
    """Names of every OS thread of this process (see :func:`native_threads`)."""
    return list(native_threads().values())


def wait_for(predicate: Callable[[], object], timeout_s: float = HANG_GUARD_S, what: str = "condition") -> None:
    """Polls ``predicate`` until it is true; fails after ``timeout_s`` (a hang guard, see
    :data:`HANG_GUARD_S`)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.01)


def wait_for_new_threads(before: Collection[int], expected: Sequence[str], what: str) -> None:
    """Waits until the threads of this process that are not in ``before`` (thread ids from
    :func:`native_threads`) are exactly ``expected`` (names, in any order).

    Threads that were started and joined meanwhile leave /proc a moment after the join, and a
    new thread shows its parent's name until it names itself, so this polls (up to the hang
    guard) instead of counting once; a thread that stays (a leak) fails the test."""
    want = sorted(expected)
    seen: list[str] = []

    def settled() -> bool:
        nonlocal seen
        seen = sorted(name for tid, name in native_threads().items() if tid not in before)
        return seen == want

    try:
        wait_for(settled, what=what)
    except AssertionError as e:
        raise AssertionError(f"{e}: new threads {seen}, expected {want}") from None


def read_line(proc: subprocess.Popen[bytes], what: str, timeout_s: float = HANG_GUARD_S) -> bytes:
    """The next line ``proc`` prints, without its newline. ``proc`` must have been started with
    ``stdout=PIPE, bufsize=0``: its unbuffered stdout reads one line and leaves the next in the
    pipe. Fails if the child exits first or prints nothing for ``timeout_s`` (a hang guard)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    if not ready:
        raise AssertionError(f"the child printed nothing for {timeout_s}s while the test waited for {what}")
    line = proc.stdout.readline()
    if not line.endswith(b"\n"):
        proc.wait()
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise AssertionError(f"the child exited with {proc.returncode} before {what}: {err}")
    return line.rstrip(b"\n")


def run_until_crash_seam(child: Path, args: Sequence[object], stderr_path: Path) -> None:
    """Runs the Python script ``child`` with ``args`` until the crash seam it arms
    (``kafkalog.testing.crash_after``) SIGKILLs it; fails the test if it exits any other way,
    with the child's stderr. The wait is for the child's own end: HANG_GUARD_S only turns a
    hang into a failure."""
    import pytest  # the kit is imported by benches too, which do not need pytest

    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(child), *map(str, args)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    try:
        code = proc.wait(HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"child never reached its crash point in {HANG_GUARD_S} s: {stderr_path.read_text()}")
    if code != -signal.SIGKILL:
        pytest.fail(f"child exited with {code}, not by its crash seam: {stderr_path.read_text()}")
