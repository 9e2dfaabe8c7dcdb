"""The appending side of one Spark write task: routes rows to partitions and appends them.

Locking: a writable :class:`kafkalog.UnifiedLog` holds an exclusive ``flock`` on its partition
directory (``DirLock`` in ``rust/util/file.rs``), so two tasks (or a task and any other kafkalog
writer) never interleave appends in one partition. Once :data:`FLUSH_BYTES` are buffered, a
task appends to each partition it can lock without waiting, starting at its own turn of the
partitions (its task index, so two tasks seldom try the same one first); a partition another
task holds stays buffered. After such an append the task releases the partition (closes the
log), so the other tasks of the job can append to it before this task ends, when that is worth
a close (:meth:`TaskSink.release_is_cheap`; a close records itself, so the next open of the log
recovers nothing); otherwise it keeps the log open until the task ends. When
the buffer grows past twice that, and at the end of the task, the task closes every log it
holds and takes the remaining partitions one at a time, waiting for each lock: a task never
waits while holding a lock, so tasks cannot deadlock. Records of one partition are appended in
input order. No pyspark import.

:class:`TaskSink` buffers Arrow record batches (columns ``key``, ``value``, ``headers``) and
appends them with :meth:`kafkalog.UnifiedLog.append_arrow`: no Python object per record.
:class:`RowTaskSink` buffers (key, value, headers, timestamp) tuples and appends them with the
native row append; it is the row-based sink kept as the baseline of
``benches/bench_spark_write.py``.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..exceptions import InvalidRecordError, LogDirLockedError
from ..log import UnifiedLog
from .batch_limits import grouping_size
from .._native import log_dir_partitions
from .write_options import WriteOptions

__all__ = ["PartitionAppend", "TaskSink", "RowTaskSink"]

#: Records of v2 batches are grouped up to this many bytes, or less where a batch must be
#: smaller to fit max.message.bytes and the segment size (see :mod:`.batch_limits`).
BATCH_BYTES = 1 << 20
#: Buffered bytes after which a task tries to append; past twice that it waits for locks.
FLUSH_BYTES = 64 << 20
#: A partition is released after an append of at least this many bytes (a release is a close,
#: which flushes the log: smaller appends keep it open). The next open is cheap whatever the
#: size of the active segment: a standalone log's close records itself (``kafkalog-clean-close``)
#: and the open then recovers nothing.
RELEASE_MIN_BYTES = 1 << 20

_TP = tuple[str, int]
#: What the native append takes: (key, value, [(header key, header value)], timestamp or None).
NativeRecord = tuple[bytes | None, bytes | None, list[tuple[bytes, bytes | None]], int | None]


@dataclass(frozen=True)
class PartitionAppend:
    """What one task appended to one partition."""

    topic: str
    partition: int
    first_offset: int
    last_offset: int
    records: int


def open_writable(path: str, opts: WriteOptions, *, wait: bool) -> UnifiedLog | None:
    """A writable open of ``path`` with the write's topic configs. Without ``wait`` a lock held
    by another writer gives None; with it the call polls until ``lockTimeoutMs``."""
    deadline = time.monotonic() + opts.lock_timeout_ms / 1000
    pause = 0.005
    waiting = False
    while True:
        try:
            return UnifiedLog.open(path, opts.topic_config)
        except LogDirLockedError:
            if not wait:
                return None
            if not waiting and opts.test_seam is not None:
                from ..testing import seam_point

                seam_point(opts.test_seam, f"write.locked.{os.path.basename(path)}", f"{os.getpid()}-{uuid.uuid4().hex[:8]}")
            waiting = True
            if time.monotonic() >= deadline:
                raise LogDirLockedError(
                    f"{path} stayed locked by another writer for lockTimeoutMs={opts.lock_timeout_ms}"
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


def existing_partitions(opts: WriteOptions, topic: str) -> dict[int, str]:
    """Partition number -> directory of ``topic`` under the write's ``path`` folders."""
    found: dict[int, str] = {}
    for parent in opts.parents:
        if os.path.isdir(parent):
            for d in log_dir_partitions(parent):
                if d.topic == topic:
                    found[d.partition] = d.path
    return found


def ensure_topic(opts: WriteOptions, topic: str) -> dict[int, str]:
    """The partition directories of ``topic``, creating the missing ones of
    [0, max(existing count, ``partitions`` or 1)) with the write's topic configs."""
    found = existing_partitions(opts, topic)
    count = max(max(found, default=-1) + 1, opts.partitions or 1)
    for p in range(count):
        if p not in found:
            path = opts.dir_for(topic, p)
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            log = open_writable(path, opts, wait=True)
            assert log is not None
            log.close()
            found[p] = path
    return found


class TaskSink:
    """Buffers one task's Arrow rows per partition and appends them with ``append_arrow`` (see
    the module doc). Not thread-safe; one per task."""

    #: Whether a try that does not wait may release a partition after appending to it (the row
    #: sink, the bench's baseline, keeps what it locked until the task ends).
    release_after_append = True

    def __init__(
        self, opts: WriteOptions, batch_bytes: int = BATCH_BYTES, flush_bytes: int = FLUSH_BYTES, turn: int = 0
    ) -> None:
        self.opts = opts
        self.batch_bytes = batch_bytes
        self.flush_bytes = flush_bytes
        #: Where in the sorted partitions a try that does not wait starts (the task index).
        self.turn = turn
        self.topics: dict[str, dict[int, str]] = {}
        self.pending: dict[_TP, list[Any]] = {}
        self.pending_rows: dict[_TP, int] = {}
        self.pending_sizes: dict[_TP, int] = {}
        self.pending_bytes = 0
        self.open_logs: dict[_TP, UnifiedLog] = {}
        self.appended: dict[_TP, list[int]] = {}

    def partitions_of(self, topic: str) -> dict[int, str]:
        dirs = self.topics.get(topic)
        if dirs is None:
            dirs = self.topics[topic] = ensure_topic(self.opts, topic)
        return dirs

    def check_partition(self, tp: _TP) -> None:
        """Raises InvalidRecordError when ``tp`` is not a partition of its topic."""
        if tp[1] not in self.partitions_of(tp[0]):
            count = len(self.partitions_of(tp[0]))
            raise InvalidRecordError(f"partition {tp[1]} of topic {tp[0]!r} does not exist (the topic has {count})")

    def add(self, tp: _TP, rows: Any, count: int, size: int) -> None:
        """Buffers ``rows`` (``count`` of them, at most ``size`` bytes encoded) for partition
        ``tp``: a pyarrow RecordBatch here, a list of native tuples in :class:`RowTaskSink`."""
        self.check_partition(tp)
        self.pending.setdefault(tp, []).append(rows)
        self.pending_rows[tp] = self.pending_rows.get(tp, 0) + count
        self.pending_sizes[tp] = self.pending_sizes.get(tp, 0) + size
        self.pending_bytes += size

    def maybe_flush(self) -> None:
        """Appends to the partitions it can lock now once enough is buffered; waits for the
        rest when the buffer keeps growing."""
        if self.pending_bytes >= self.flush_bytes:
            self._drain(wait=False)
        if self.pending_bytes >= 2 * self.flush_bytes:
            self._drain(wait=True)

    def finish(self) -> list[PartitionAppend]:
        """Appends everything left, waiting for locks, and closes the logs."""
        self._drain(wait=False)
        self._drain(wait=True)
        self.close()
        return [PartitionAppend(t, p, a[0], a[1], a[2]) for (t, p), a in sorted(self.appended.items())]

    def close(self) -> None:
        """Closes every log the task holds (releasing its locks); safe to call twice."""
        logs, self.open_logs = self.open_logs, {}
        for log in logs.values():
            log.close()

    def _batch_size(self) -> int:
        # Batches are sized to fit max.message.bytes and the segment size (the writer refused
        # every record that cannot fit alone before buffering it).
        return grouping_size(self.opts.batch_limit.bytes, self.opts.compression, self.batch_bytes)

    def _write(self, log: UnifiedLog, chunks: list[Any]) -> tuple[int, int]:
        """Appends the buffered ``chunks`` of one partition; returns the first and last offset.
        The leader epoch is the partition's latest (0 for a new one): an older epoch would be
        refused as a stale leader's (FencedLeaderEpochError), e.g. in a partition Kafka wrote."""
        table = pa.Table.from_batches(chunks)
        info = log.append_arrow(table, compression=self.opts.compression, batch_size=self._batch_size())
        return info.first_offset, info.last_offset

    def release_is_cheap(self, appended: int) -> bool:
        """Whether to release a log after a try appended ``appended`` bytes to it: see
        :data:`RELEASE_MIN_BYTES`."""
        return self.release_after_append and appended >= RELEASE_MIN_BYTES

    def _append(self, log: UnifiedLog, tp: _TP) -> int:
        """Appends what is buffered for ``tp``; returns its size (as buffered)."""
        chunks = self.pending.pop(tp)
        rows = self.pending_rows.pop(tp)
        size = self.pending_sizes.pop(tp)
        self.pending_bytes -= size
        first, last = self._write(log, chunks)
        seen = self.appended.get(tp)
        if seen is None:
            self.appended[tp] = [first, last, rows]
        else:
            seen[1] = last
            seen[2] += rows
        return size

    def _drain(self, *, wait: bool) -> None:
        if not wait:
            order = sorted(self.pending)
            at = self.turn % len(order) if order else 0
            for tp in order[at:] + order[:at]:
                log = self.open_logs.get(tp)
                if log is None:
                    log = open_writable(self.partitions_of(tp[0])[tp[1]], self.opts, wait=False)
                    if log is None:
                        continue
                    self.open_logs[tp] = log
                appended = self._append(log, tp)
                if self.release_is_cheap(appended):
                    del self.open_logs[tp]
                    log.close()
            return
        if not self.pending:
            return
        self.close()  # never wait for one lock while holding another
        for tp in sorted(self.pending):
            log = open_writable(self.partitions_of(tp[0])[tp[1]], self.opts, wait=True)
            assert log is not None
            try:
                self._append(log, tp)
            finally:
                log.close()


class RowTaskSink(TaskSink):
    """The row-based sink (the bench's baseline): buffers lists of :data:`NativeRecord` tuples
    and appends them with the native row append. It keeps every partition it locked until
    the task ends and tries to append every 16 MiB, as the sink did before the Arrow path. Not
    thread-safe; one per task."""

    release_after_append = False

    def __init__(self, opts: WriteOptions) -> None:
        super().__init__(opts, flush_bytes=16 << 20)

    def _write(self, log: UnifiedLog, chunks: list[Any]) -> tuple[int, int]:
        records: list[NativeRecord] = [r for chunk in chunks for r in chunk]
        epoch = log._log.latest_epoch
        info = log._log.append_records(
            records, self.opts.compression, 0 if epoch is None else epoch, self._batch_size(), int(time.time() * 1000)
        )
        return info.first_offset, info.last_offset
