"""Helpers for tests: make kafkalog's file I/O fail on purpose, and hold kafkalog's Spark
tasks at known points (:class:`Seam`).

For tests only. Fault rules are process-global: every open, write, fsync, rename, delete (and
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

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from ._native import _clear_faults, _crash_after, _inject_fault, _trace_file_ops

__all__ = ["inject_fault", "clear_faults", "fault", "crash_after", "trace_file_ops", "Seam", "seam_point", "maintenance_seam", "SEAM_TIMEOUT_S"]


def inject_fault(path: str | os.PathLike[str], op: str, errno: int, times: int | None = None) -> None:
    """Makes ``op`` on every file under ``path`` fail with ``errno``, ``times`` times (``None``:
    until cleared). An unknown ``op`` raises ValueError naming the allowed ones."""
    _inject_fault(path, op, errno, times)


def crash_after(path: str | os.PathLike[str], skip: int) -> None:
    """For crash tests, in a child process: kills this process with SIGKILL just before the
    file operation under ``path`` that would change something (create, write, fsync, truncate,
    map, rename, delete) once ``skip`` of them have gone through. The crash lands at a chosen,
    repeatable point of the work instead of after a wall-clock delay; what was written before
    it survives, as after any SIGKILL (the page cache outlives the process)."""
    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
        raise ValueError(f"crash_after: skip must be an int >= 0, not {skip!r}")
    _crash_after(path, skip)


def trace_file_ops(path: str | os.PathLike[str], trace_file: str | os.PathLike[str]) -> None:
    """For crash tests: appends ``<op> <path>`` to ``trace_file`` for every file operation under
    ``path`` that goes through (``open``, ``write``, ``fsync``, ``rename``, ``delete``, ``read``,
    ``truncate``, ``mmap``), in order, one ``write`` per line, just before its system call, until
    :func:`clear_faults` clears ``path``. After a SIGKILL the trace tells which writes an fsync
    followed before a checkpoint was renamed into place."""
    _trace_file_ops(path, trace_file)


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


# -- a seam that reaches other processes ------------------------------------------------------

#: How long either side of a :class:`Seam` waits before giving up. A bound against a hang (a
#: test that never releases, a task that never comes), not a timing assumption: every wait
#: ends on the event it waits for.
SEAM_TIMEOUT_S = 300.0


class Seam:
    """A test seam that reaches code running in other processes (Spark's Python workers), where
    an in-memory hook of the test process never arrives: events and pauses through files in a
    directory the test owns.

    kafkalog code passes *points* (``compact.opened.users-0``: operation, stage, partition) with
    :func:`seam_point` when given a seam's :attr:`spec`. Each point appends one line (the point
    and who reached it) to ``<dir>/events``, in the order they happen; a point named in
    ``pause`` then waits until ``<dir>/<point>.release`` exists. The test waits for events
    (:meth:`wait_for`), acts, and lets a paused point go (:meth:`release`), so it can assert
    the order of what happened instead of durations.

    For tests only. A seam reaches the maintenance jobs (:func:`kafkalog.spark.compact`,
    :func:`kafkalog.spark.run_retention`) started in this process while it is entered
    (``with Seam(...)``), and writes given the ``testSeam`` option set to :attr:`spec`.
    Leaving the ``with`` block releases every pause, so a failing test leaves no task waiting.

    Points passed today: ``<op>.open.<topic>-<partition>`` (a maintenance task, just before
    its first attempt to open the partition), ``<op>.locked.<tp>`` (it found the partition
    locked and waits, once),
    ``<op>.opened.<tp>`` (it holds the partition's lock, before the clean or retention),
    ``<op>.done.<tp>`` (its work is done, before it closes the log and so releases the lock),
    with ``<op>`` ``compact`` or ``retention``; ``write.locked.<tp>`` (a write task found the
    partition locked by another writer and waits, once per wait).

    Thread-safety: the test side may be used from several threads; every process appends to
    ``events`` with one ``O_APPEND`` write per line.
    """

    def __init__(self, directory: str | os.PathLike[str], pause: Iterable[str] = ()) -> None:
        self.directory = os.path.abspath(os.fspath(directory))
        os.makedirs(self.directory, exist_ok=True)
        self.pause = frozenset(pause)
        #: What kafkalog code takes to use this seam (a JSON string: it is pickled to executors).
        self.spec = json.dumps({"dir": self.directory, "pause": sorted(self.pause)})

    def __enter__(self) -> Seam:
        global _maintenance_seam
        if _maintenance_seam is not None:
            raise RuntimeError("a Seam is already entered for the maintenance jobs")
        _maintenance_seam = self.spec
        return self

    def __exit__(self, *exc: object) -> None:
        global _maintenance_seam
        _maintenance_seam = None
        _touch(os.path.join(self.directory, _RELEASE_ALL))

    def events(self) -> list[tuple[str, str]]:
        """Every event so far, in order, as (point, who)."""
        try:
            with open(os.path.join(self.directory, _EVENTS), encoding="utf-8") as f:
                pairs = [json.loads(line) for line in f if line.endswith("\n")]
        except FileNotFoundError:
            return []
        return [(str(point), str(who)) for point, who in pairs]

    def wait_for(
        self,
        point: str,
        count: int = 1,
        timeout: float = SEAM_TIMEOUT_S,
        alive: Callable[[], bool] | None = None,
    ) -> list[tuple[str, str]]:
        """Waits until ``point`` has been reached ``count`` times; returns the events so far.
        ``alive`` (e.g. the ``is_alive`` of the thread running the job): stop waiting with an
        error as soon as it says False, as the point will never come."""
        found: list[tuple[str, str]] = []

        def reached() -> bool:
            nonlocal found
            found = self.events()
            if sum(1 for p, _ in found if p == point) >= count:
                return True
            if alive is not None and not alive():
                raise RuntimeError(f"seam point {point!r} never came: the job ended; events: {found}")
            return False

        _wait(reached, timeout, lambda: f"seam point {point!r} reached {count} time(s); events so far: {found}")
        return found

    def release(self, point: str) -> None:
        """Lets every task paused (or yet to pause) at ``point`` go on; recorded as the event
        ``released <point>`` by ``test``."""
        self.note(f"released {point}")
        _touch(os.path.join(self.directory, point + _RELEASE))

    def note(self, what: str) -> None:
        """Records an event of the test's own (who = ``test``) among the tasks' events."""
        _append_event(self.directory, what, "test")


_EVENTS = "events"
_RELEASE = ".release"
_RELEASE_ALL = "all.release"
_maintenance_seam: str | None = None


def maintenance_seam() -> str | None:
    """The spec of the :class:`Seam` entered in this process, for the maintenance jobs started
    meanwhile; None outside tests."""
    return _maintenance_seam


def seam_point(spec: str | None, point: str, who: str) -> None:
    """kafkalog's side of a :class:`Seam`: records ``point`` reached by ``who`` and, when the
    seam pauses there, waits for the test to release it. Does nothing when ``spec`` is None."""
    if spec is None:
        return
    seam = json.loads(spec)
    directory = seam["dir"]
    _append_event(directory, point, who)
    if point in seam["pause"]:
        release = os.path.join(directory, point + _RELEASE)
        release_all = os.path.join(directory, _RELEASE_ALL)
        _wait(
            lambda: os.path.exists(release) or os.path.exists(release_all),
            SEAM_TIMEOUT_S,
            lambda: f"the test's release of seam point {point!r} ({release})",
        )


def _append_event(directory: str, point: str, who: str) -> None:
    line = (json.dumps([point, who]) + "\n").encode()
    fd = os.open(os.path.join(directory, _EVENTS), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _touch(path: str) -> None:
    with open(path, "a", encoding="utf-8"):
        pass


def _wait(done: Callable[[], bool], timeout: float, what: Callable[[], str]) -> None:
    """Polls ``done`` (every 1 ms at first, backing off to 20 ms) until it holds; TimeoutError
    naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    pause = 0.001
    while not done():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"gave up after {timeout} s waiting for {what()}")
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
