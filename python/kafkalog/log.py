"""`kafkalog.UnifiedLog`: one partition's log, opened from its directory (e.g. ``orders-0``).

Mirrors Kafka's UnifiedLog. The handle is thread-safe: appends serialise inside the engine,
reads run concurrently with them. Every call that touches the disk releases the GIL.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from . import _arguments as arg
from . import _native
from ._native import Progress
from .cleaner import CleanableSections, CompactResult, DirtyCompactResult, SegmentTombstones
from .exceptions import IllegalStateError, InvalidArgumentTypeError
from .records import (
    AbortedTransaction,
    ActiveProducer,
    AppendInfo,
    ConsumerRecord,
    EpochEntry,
    OffsetAndEpoch,
    OngoingTransaction,
    ReadResult,
    Record,
    RetentionPlan,
    RetentionResult,
    SegmentInfo,
    TimestampAndOffset,
)

if TYPE_CHECKING:  # pyarrow is imported on first use: importing it starts threads (numpy's OpenBLAS)
    import pyarrow as pa

    from .arrow_write import ArrowData

__all__ = ["UnifiedLog", "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP"]

#: offset_for_timestamp: the log start offset.
EARLIEST_TIMESTAMP = -2
#: offset_for_timestamp: the log end offset.
LATEST_TIMESTAMP = -1
#: offset_for_timestamp: the record with the largest timestamp.
MAX_TIMESTAMP = -3

_ARROW_CHUNK_BYTES = 64 << 20
_Headers = tuple[tuple[str, bytes | None], ...]
_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
_ISOLATIONS = ("read_uncommitted", "log_end", "read_committed")
_RECORD_TIMESTAMPS = f"must be a timestamp in [0, {arg.I64_MAX}] (ms since the epoch), or None for now"


def _config_pairs(config: Mapping[str, Any] | None, name: str = "config") -> list[tuple[str, str]]:
    if config is None:
        return []
    pairs = []
    for key, value in arg.mapping(name, config).items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        pairs.append((str(key), str(value)))
    return pairs


def _as_bytes(value: Any, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    raise InvalidArgumentTypeError(f"{what} must be bytes, str or None, not {type(value).__name__}")


def _header_key(key: Any, what: str) -> bytes:
    # Kafka header keys are strings; str() of anything else (b"h" -> "b'h'") would corrupt them.
    if isinstance(key, str):
        return key.encode()
    raise InvalidArgumentTypeError(f"{what} must be a str (Kafka header keys are strings), not {type(key).__name__}")


def _native_record(
    i: int, r: Record | tuple[Any, ...]
) -> tuple[bytes | None, bytes | None, list[tuple[bytes, bytes | None]], int | None]:
    """Record ``i`` of an append as the engine takes it; a bad field is named ``records[i].<field>``."""
    if isinstance(r, Record):
        key, value, headers, ts = r.key, r.value, r.headers, r.timestamp
    elif isinstance(r, tuple) and len(r) == 2:
        (key, value), headers, ts = r, (), None
    else:
        raise InvalidArgumentTypeError(f"records[{i}] must be a kafkalog.Record or a (key, value) tuple, not {r!r:.80}")
    at = f"records[{i}]"
    ts = arg.optional_integer(f"{at}.timestamp", ts, 0, arg.I64_MAX, _RECORD_TIMESTAMPS)
    return _as_bytes(key, f"{at}.key"), _as_bytes(value, f"{at}.value"), _native_headers(at, headers), ts


def _native_headers(at: str, headers: Any) -> list[tuple[bytes, bytes | None]]:
    if isinstance(headers, (str, bytes)) or not isinstance(headers, Iterable):
        raise InvalidArgumentTypeError(f"{at}.headers must be (str key, bytes value) pairs, not {headers!r:.80}")
    out = []
    for j, pair in enumerate(headers):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidArgumentTypeError(f"{at}.headers[{j}] must be a (str key, bytes value) pair, not {pair!r:.80}")
        out.append((_header_key(pair[0], f"{at}.headers[{j}] key"), _as_bytes(pair[1], f"{at}.headers[{j}] value")))
    return out


def _leader_epoch(value: Any, log: _native.UnifiedLog) -> int:
    """``leader_epoch`` checked; None is the log's latest epoch (0 when it has none)."""
    if value is None:
        latest = log.latest_epoch
        return 0 if latest is None else latest
    return arg.integer(
        "leader_epoch", value, -1, arg.I32_MAX, f"must be in [-1, {arg.I32_MAX}] (-1: no leader epoch), or None"
    )


class UnifiedLog:
    """One partition's log. Open it with :meth:`open`; use it as a context manager."""

    __slots__ = ("_log",)

    def __init__(self, native: _native.UnifiedLog) -> None:
        """Wraps a native handle; open a log with :meth:`UnifiedLog.open` instead."""
        if not isinstance(native, _native.UnifiedLog):
            raise InvalidArgumentTypeError(
                f"UnifiedLog() takes a native handle, not {type(native).__name__} ({native!r:.80}): "
                "open a log with kafkalog.UnifiedLog.open(path)"
            )
        self._log = native

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        config: Mapping[str, Any] | None = None,
        *,
        read_only: bool = False,
        create: bool = True,
        producer_id_expiration_ms: int = 86_400_000,
        transaction_max_timeout_ms: int = 900_000,
    ) -> UnifiedLog:
        """Opens the partition directory ``path`` (named ``<topic>-<partition>``), creating it
        when missing unless ``read_only`` or ``create=False``. ``config`` holds Kafka topic
        configs (``segment.bytes``, ``cleanup.policy``, ...); invalid values raise
        InvalidConfigError naming the key.

        ``producer_id_expiration_ms`` and ``transaction_max_timeout_ms`` are the broker's
        ``producer.id.expiration.ms`` and ``transaction.max.timeout.ms`` (Kafka's defaults; at
        least 1). A LogManager takes them from its broker config and expires idle producers
        on its scheduler; a log opened alone forgets the producers already expired when it
        loads, and later ones when ``remove_expired_producers`` is called.

        ``create=False`` is for a directory expected to exist (found earlier, and perhaps
        deleted since): a missing one raises KafkaLogIOError (errno ENOENT, ``filename`` the
        path) and nothing is created. A read-only open never creates.

        A read-only open takes no lock, writes nothing, runs no recovery, and sees the log up
        to its last complete batch, even while another process appends to it."""
        return cls(
            _native.UnifiedLog.open(
                arg.path("path", path),
                _config_pairs(config),
                arg.flag("read_only", read_only),
                arg.flag("create", create),
                arg.integer("producer_id_expiration_ms", producer_id_expiration_ms, 1, arg.I32_MAX),
                arg.integer("transaction_max_timeout_ms", transaction_max_timeout_ms, 1, arg.I32_MAX),
            )
        )

    def __enter__(self) -> UnifiedLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"UnifiedLog({self.topic}-{self.partition}, log_start_offset={self.log_start_offset}, "
            f"log_end_offset={self.log_end_offset}, high_watermark={self.high_watermark})"
        )

    # -- writes -----------------------------------------------------------------------------

    def append(
        self,
        records: Iterable[Record | tuple[Any, Any]],
        *,
        compression: str = "none",
        leader_epoch: int | None = None,
        batch_size: int = 16384,
    ) -> AppendInfo:
        """Appends records as the leader. They are grouped into v2 batches of at most
        ``batch_size`` bytes (as a producer's ``batch.size``), compressed with ``compression``
        (none, gzip, snappy, lz4, zstd), validated, and given offsets from the log end. They are
        stamped with ``leader_epoch`` (by default the log's ``latest_epoch``, or 0 in a log that has
        none), which starts a new entry in ``epoch_entries`` when newer than ``latest_epoch``; an
        older one raises FencedLeaderEpochError (a stale leader's)."""
        compression = arg.string("compression", compression, _CODECS)
        leader_epoch = _leader_epoch(leader_epoch, self._log)
        batch_size = arg.integer("batch_size", batch_size, 0, arg.I32_MAX)
        native = [_native_record(i, r) for i, r in enumerate(records)]
        return self._log.append_records(native, compression, leader_epoch, batch_size, int(time.time() * 1000))

    def append_arrow(
        self,
        data: ArrowData,
        *,
        compression: str = "none",
        leader_epoch: int | None = None,
        batch_size: int = 16384,
        timestamp: int | None = None,
    ) -> AppendInfo:
        """Appends the rows of a pyarrow ``Table``, ``RecordBatch`` or ``RecordBatchReader`` as
        the leader, with the columns of Spark's Kafka sink (:mod:`kafkalog.arrow_write`):
        ``value`` required; ``key``, ``headers``, ``timestamp`` (any unit, converted to ms),
        ``partition`` and ``topic`` optional. The engine reads the Arrow buffers in place, with
        no Python object per record and the GIL released, and groups the rows into batches
        exactly as :meth:`append` groups the same records (same bytes).

        A row without a timestamp (a null, or no ``timestamp`` column) gets ``timestamp`` (ms),
        by default now. This single log does not route: a row whose ``partition`` or ``topic``
        is not null and names another partition or topic is refused, as are a null key on a
        compacted topic, a null header or header key, a negative timestamp and a row that
        cannot fit alone in a batch (``max.message.bytes``, or the segment size when smaller).
        Every row is checked before anything is written; errors name the row (counted from 0
        across the whole input) and the column. A reader is read to its end first."""
        compression = arg.string("compression", compression, _CODECS)
        leader_epoch = _leader_epoch(leader_epoch, self._log)
        batch_size = arg.integer("batch_size", batch_size, 0, arg.I32_MAX)
        now = arg.optional_integer("timestamp", timestamp, 0, arg.I64_MAX, _RECORD_TIMESTAMPS)
        from .arrow_write import record_batch_capsules

        capsules = record_batch_capsules(data)
        return self._log.append_arrow(
            capsules, compression, leader_epoch, batch_size, int(time.time() * 1000) if now is None else now
        )

    def append_batch(self, raw: bytes, *, leader_epoch: int | None = None) -> AppendInfo:
        """Appends bytes holding one or more v2 batches as a producer sends them, stamped with
        ``leader_epoch`` as :meth:`append` does."""
        return self._log.append_batch(arg.data("raw", raw), _leader_epoch(leader_epoch, self._log))

    def append_as_follower(self, raw: bytes) -> AppendInfo:
        """Appends batches whose offsets are already assigned; they must follow the log end."""
        return self._log.append_as_follower(arg.data("raw", raw))

    def flush(self) -> None:
        """Fsyncs the log up to its end and advances the recovery point."""
        self._log.flush()

    def roll(self) -> int:
        """Starts a new active segment at the log end; returns its base offset."""
        return self._log.roll()

    def truncate_to(self, offset: int) -> bool:
        """Removes every record at or above ``offset``; returns whether anything went. A
        negative offset raises InvalidArgumentError and changes nothing."""
        return self._log.truncate_to(arg.offset("offset", offset))

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Deletes every segment and restarts the log, empty, at ``offset``. A negative offset
        raises InvalidArgumentError and changes nothing."""
        self._log.truncate_fully_and_start_at(arg.offset("offset", offset))

    def delete_records(self, offset: int) -> int:
        """Raises the log start offset to ``offset`` (an offset at or below it changes nothing).
        A negative offset, or one past the high watermark, raises OffsetOutOfRangeError, as
        Kafka's DeleteRecords does."""
        return self._log.delete_records(arg.offset("offset", offset))

    def set_high_watermark(self, offset: int) -> int:
        """Sets the high watermark (clamped to [log start, log end]) for a caller that
        replicates; by default it follows the log end offset. A negative offset raises
        InvalidArgumentError."""
        return self._log.set_high_watermark(arg.offset("offset", offset))

    def assign_topic_id(self, topic_id: str) -> None:
        """Records the topic id (Kafka's 22-character form) in partition.metadata; a malformed
        one raises InvalidArgumentError."""
        self._log.assign_topic_id(arg.string("topic_id", topic_id))

    def close(self) -> None:
        """Flushes and closes the log; later calls raise LogClosedError. On a log that a
        LogManager owns (see :attr:`managed`) this does nothing: the manager closes it."""
        self._log.close()

    def delete_old_segments(self, *, cap_future_timestamps: bool = False) -> RetentionResult:
        """Runs retention now (Kafka's deleteOldSegments): segments wholly below the log start
        offset, then, with ``delete`` in cleanup.policy, the oldest segments past
        ``retention.bytes`` and those older than ``retention.ms``. Deleted segments are renamed
        ``.deleted`` and unlinked after ``file.delete.delay.ms``. Every segment whose
        timestamps lie in the future gets a warning; ``cap_future_timestamps=True`` (opt-in,
        not Kafka's behaviour) judges such a segment by its file's modification time."""
        return self._log.delete_old_segments(arg.flag("cap_future_timestamps", cap_future_timestamps))

    def delete_due_files(self) -> None:
        """Unlinks ``.deleted`` files whose ``file.delete.delay.ms`` has passed."""
        self._log.delete_due_files()

    def compact_now(
        self,
        *,
        dedupe_buffer_size: int = 128 * 1024 * 1024,
        load_factor: float = 0.9,
        io_buffer_size: int = 512 * 1024,
        max_io_bytes_per_second: float | None = None,
        first_dirty_offset: int | None = None,
        time_ms: int | None = None,
        ignore_cleanup_policy: bool = False,
        on_progress: Callable[[Progress], None] | None = None,
        sliced_decisions: bool = False,
    ) -> CompactResult:
        """Compacts the log now (Kafka's cleaner, on demand): keeps the latest record of every
        key below the first uncleanable offset, in as many passes as the offset map needs.

        Only a log whose ``cleanup.policy`` contains ``compact`` is compacted: on any other the
        call raises InvalidConfigError (as LogManager.compact_now does), since a clean keeps one
        record per key and drops every record without a key, which a ``delete`` topic keeps.
        ``ignore_cleanup_policy=True`` compacts such a log anyway (its records are lost as
        described; the log's config is not changed).

        The cleanable range runs from ``first_dirty_offset`` (default: the log start; a
        LogManager keeps it in ``cleaner-offset-checkpoint``; it must lie in [0, log end], and
        one below the log start means the log start) to the least of the last stable offset
        (an open transaction's first offset, else the high watermark), the active segment's
        base and ``min.compaction.lag.ms``, rounded down to a segment base; roll first to make
        the active segment cleanable. Aborted transactions' records go (as the log's
        ``.txnindex`` lists them), and each producer in ``active_producers`` keeps its last
        batch, empty if need be, so its sequence survives (``remove_expired_producers`` first
        to let idle producers go, as a broker's expiry check does). Tombstones and transaction
        markers follow Kafka's two-pass rule: the first clean stamps ``time_ms +
        delete.retention.ms`` into their batch, a clean after that removes them. The sizes take the broker keys ``log.cleaner.dedupe.buffer.size``,
        ``log.cleaner.io.buffer.load.factor``, ``log.cleaner.io.buffer.size`` and
        ``log.cleaner.io.max.bytes.per.second``. A truncation or close of the log meanwhile
        stops the clean with ``LogCleaningAbortedError`` and leaves the log unchanged. An I/O
        error while the cleaned segments are swapped in closes the log (the swap may be half
        done; reopening finishes or rolls it back), as Kafka takes the log dir offline.

        The offset map (``dedupe_buffer_size`` bytes) stays allocated after the call for the
        next on-demand clean in this process, as a cleaner thread keeps its map: at most two
        idle maps are kept; a call asking for another size allocates its own.

        ``on_progress``, if given, is called on this thread with a :class:`kafkalog.Progress`
        per phase of each round (``indexing``, then ``cleaning``, in bytes), as
        ``LogManager.compact_now`` describes; an exception it raises stops the clean at its
        next chunk (segments already swapped in stay cleaned, the rest untouched) and
        propagates once the clean has stopped.

        ``sliced_decisions=True`` (kafkalog's ``log.cleaner.kafkalog.sliced.decisions``): when
        the range holds more keys than the map, decide every key in hash-sliced read passes
        and rewrite the log once, instead of Kafka's one rewrite per pass. The records kept,
        the markers and the end offset are those of Kafka's passes run to the end; only which
        batches carry a delete-horizon stamp may differ (one pass is reported)."""
        return self._log.compact_now(
            *self._on_demand_sizes(dedupe_buffer_size, load_factor, io_buffer_size, max_io_bytes_per_second),
            None if first_dirty_offset is None else arg.offset("first_dirty_offset", first_dirty_offset),
            arg.optional_integer("time_ms", time_ms, 0, arg.I64_MAX),
            arg.flag("ignore_cleanup_policy", ignore_cleanup_policy),
            arg.progress_callback("on_progress", on_progress),
            arg.flag("sliced_decisions", sliced_decisions),
        )

    def compact_dirty(
        self,
        *,
        dedupe_buffer_size: int = 128 * 1024 * 1024,
        load_factor: float = 0.9,
        io_buffer_size: int = 512 * 1024,
        max_io_bytes_per_second: float | None = None,
        time_ms: int | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> DirtyCompactResult:
        """Cleans only the dirty section, as Kafka's cleaner does, keeping its start in the log
        dir's ``cleaner-offset-checkpoint`` (the file a LogManager's cleaner and a Kafka broker
        keep): the partition's entry is read (none: the log start; one below the log start or
        above the log end: the log start, with Kafka's warning), the clean runs from there as
        :meth:`compact_now` would, and the first offset not cleaned is written back. A LogManager
        or broker opened on the log dir later continues from it.

        Skipped, with the reason in ``skipped`` (nothing changed), as Kafka's cleaner skips:
        ``delete policy`` (``cleanup.policy`` lacks ``compact``; the file is not read),
        ``nothing dirty`` (no cleanable segment; roll first to make the active segment
        cleanable), ``below min.cleanable.dirty.ratio`` (the dirty ratio is not above the
        topic's ``min.cleanable.dirty.ratio`` and no dirty segment is past
        ``max.compaction.lag.ms``; open the log with ``min.cleanable.dirty.ratio=0`` to clean
        whatever is dirty). An entry outside the log is rewritten even then, as Kafka does.

        The entry is written under the log dir's locks: its ``flock`` (several cleans of
        partitions of one log dir, in any process, take turns for the read-modify-write, so no
        entry is lost) and ``.lock`` (while a LogManager or Kafka broker holds it, the file is
        theirs: the entry is not written and ``checkpoint_error`` says why; the clean stands).
        Written tmp + fsync + rename + directory fsync. Sizes, ``time_ms`` and ``on_progress``
        (a skipped clean reports nothing) as for :meth:`compact_now`."""
        return self._log.compact_dirty(
            *self._on_demand_sizes(dedupe_buffer_size, load_factor, io_buffer_size, max_io_bytes_per_second),
            arg.optional_integer("time_ms", time_ms, 0, arg.I64_MAX),
            arg.progress_callback("on_progress", on_progress),
        )

    def _on_demand_sizes(
        self, dedupe_buffer_size: int, load_factor: float, io_buffer_size: int, max_io_bytes_per_second: float | None
    ) -> tuple[int, float, int, float | None]:
        """An on-demand clean's checked sizes; refuses a log a LogManager owns (its cleaner keeps
        the cleaner-offset-checkpoint)."""
        if self._log.managed:
            raise IllegalStateError(
                f"{self} belongs to a LogManager, whose cleaner keeps its cleaner-offset-checkpoint: "
                "use LogManager.compact_now(topic, partition)"
            )
        return (
            arg.integer("dedupe_buffer_size", dedupe_buffer_size, 1, arg.I64_MAX),
            arg.number("load_factor", load_factor),
            arg.integer("io_buffer_size", io_buffer_size, 2, arg.I32_MAX),
            None if max_io_bytes_per_second is None else arg.number("max_io_bytes_per_second", max_io_bytes_per_second),
        )

    @property
    def managed(self) -> bool:
        """Whether a LogManager owns this log."""
        return self._log.managed

    # -- reads ------------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int = 1 << 20,
        isolation: str = "read_uncommitted",
        *,
        min_one_message: bool = True,
    ) -> ReadResult:
        """Kafka's fetch: whole batches from the one holding ``offset``, at most ``max_bytes``
        (but at least one batch when ``min_one_message``), up to the high watermark
        (``read_uncommitted``), the last stable offset (``read_committed``) or the log end
        (``log_end``). Raises OffsetOutOfRangeError outside [log start, log end].

        With ``read_committed`` the result also carries ``aborted_transactions``, those that
        overlap the batches returned (as a Kafka fetch does), and its ``records`` leave out the
        records of aborted transactions as a ``read_committed`` Kafka consumer does;
        ``records_bytes`` stay the raw batches. Control records are never in ``records``."""
        return self._log.read(
            arg.offset("offset", offset),
            arg.integer("max_bytes", max_bytes, 0, arg.I64_MAX),
            arg.string("isolation", isolation, _ISOLATIONS),
            arg.flag("min_one_message", min_one_message),
        )

    def records(
        self, start: int | None = None, end: int | None = None, isolation: str = "read_uncommitted"
    ) -> Iterator[ConsumerRecord]:
        """Iterates over the records in [start, end) (defaults: log start, the end of
        ``isolation``: see ``end_offset``); the range is cut to what the log holds.
        ``read_committed`` leaves out aborted and control records, as a Kafka consumer with
        ``isolation.level=read_committed`` does: their offsets are gaps. Bad arguments (a
        negative offset, an unknown isolation) raise here, before iterating."""
        start, end = arg.range_bound("start", start), arg.range_bound("end", end)
        _native.UnifiedLog.check_isolation(arg.string("isolation", isolation, _ISOLATIONS))
        return self._records(start, end, isolation)

    def _records(self, start: int | None, end: int | None, isolation: str) -> Iterator[ConsumerRecord]:
        offset = self.log_start_offset if start is None else max(start, self.log_start_offset)
        stop = self.log_end_offset if end is None else end
        while offset < stop:
            result = self.read(offset, 1 << 20, isolation)
            if not result.records_bytes:
                return
            for r in result.records:
                if r.offset >= stop:
                    return
                yield r
            offset = result.next_offset

    def iter_arrow(
        self,
        start: int | None = None,
        end: int | None = None,
        isolation: str = "read_uncommitted",
        *,
        max_chunk_bytes: int = _ARROW_CHUNK_BYTES,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Yields pyarrow RecordBatches of Spark's Kafka-source columns for [start, end) (cut to
        what the log holds and to the end of ``isolation``). ``read_committed`` leaves out the
        records of aborted transactions; control records are never included. Bad arguments
        raise here, before iterating.

        ``on_progress``, if given, is called with a :class:`kafkalog.Progress` (phase
        ``reading``, counted in ``offsets`` of the range) after each chunk of at most
        ``max_chunk_bytes``, on the iterating thread, the last with ``done == total``; the range
        then ends where the isolation's end offset was when the iteration started. An exception
        it raises propagates from the iteration."""
        start, end = arg.range_bound("start", start), arg.range_bound("end", end)
        _native.UnifiedLog.check_isolation(arg.string("isolation", isolation, _ISOLATIONS))
        max_chunk_bytes = arg.integer("max_chunk_bytes", max_chunk_bytes, 1, arg.I64_MAX)
        progress = arg.progress_callback("on_progress", on_progress)
        return self._iter_arrow(start, end, isolation, max_chunk_bytes, progress)

    def _iter_arrow(
        self,
        start: int | None,
        end: int | None,
        isolation: str,
        max_chunk_bytes: int,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        from .arrow import columns_to_record_batch

        offset = self.log_start_offset if start is None else start
        stop = arg.I64_MAX if end is None else end
        first = offset
        if on_progress is not None:
            stop = min(stop, self.end_offset(isolation))
            total = max(0, stop - first)
            on_progress(Progress("reading", 0, total, "offsets"))
        while True:
            cols = self._log.read_columns(offset, stop, isolation, max_chunk_bytes)
            if cols.rows:
                yield columns_to_record_batch(cols)
            done = cols.next_offset <= offset or cols.next_offset >= stop
            if on_progress is not None and (cols.next_offset > offset or done):
                reached = total if done else min(total, max(0, cols.next_offset - first))
                on_progress(Progress("reading", reached, total, "offsets"))
            if cols.next_offset <= offset:
                return
            offset = cols.next_offset

    def to_arrow(
        self,
        start: int | None = None,
        end: int | None = None,
        isolation: str = "read_uncommitted",
        *,
        use_threads: bool = True,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> pa.Table:
        """Reads [start, end) into a pyarrow Table with Spark's Kafka-source columns: key,
        value, topic, partition, offset, timestamp, timestampType, headers. ``on_progress``
        as at :meth:`iter_arrow`.

        With ``use_threads`` (as in pyarrow's readers), a range of more than 32 MiB of log is
        cut into pieces of about equal bytes, decoded at once on up to ``pyarrow.cpu_count()``
        threads (see ``kafkalog.arrow_read``): the same rows in the same order as one thread
        reads. The range then ends where the isolation's end offset was when the call
        started."""
        import pyarrow as pa

        from . import arrow_read
        from .arrow import KAFKA_SCHEMA

        start, end = arg.range_bound("start", start), arg.range_bound("end", end)
        _native.UnifiedLog.check_isolation(arg.string("isolation", isolation, _ISOLATIONS))
        use_threads = arg.flag("use_threads", use_threads)
        progress = arg.progress_callback("on_progress", on_progress)
        first = max(self.log_start_offset if start is None else start, self.log_start_offset)
        bound = self.end_offset(isolation)
        stop = bound if end is None else min(end, bound)
        ranges = [(first, stop)]
        if use_threads and pa.cpu_count() > 1 and first < stop:
            ranges = arrow_read.split_range(self.segments, first, stop, self.log_end_offset, pa.cpu_count())
        if len(ranges) == 1:
            batches = list(self._iter_arrow(first, arg.I64_MAX if end is None else end, isolation, _ARROW_CHUNK_BYTES, progress))
            return pa.Table.from_batches(batches, schema=KAFKA_SCHEMA)

        def read(a: int, b: int, report: Callable[[Progress], None] | None) -> list[pa.RecordBatch]:
            return list(self._iter_arrow(a, b, isolation, _ARROW_CHUNK_BYTES, report))

        batches = arrow_read.read_pieces(read, ranges, stop - first, progress)
        return pa.Table.from_batches(batches, schema=KAFKA_SCHEMA)

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """The first record with timestamp >= ``timestamp``; EARLIEST_TIMESTAMP (-2) gives the
        log start, LATEST_TIMESTAMP (-1) the log end, MAX_TIMESTAMP (-3) the record with the
        largest timestamp. None when nothing qualifies. Other negative timestamps raise
        InvalidArgumentError."""
        return self._log.offset_for_timestamp(
            arg.integer("timestamp", timestamp, 0, arg.I64_MAX, arg.TIMESTAMP_QUERIES, native=(arg.I64_MIN, arg.I64_MAX))
        )

    # -- leader epochs ----------------------------------------------------------------------

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        """The leader epoch cache (Kafka's LeaderEpochFileCache, kept in the partition's
        ``leader-epoch-checkpoint``): each leader epoch with the first offset written in it, in
        order. Appends add the epochs stamped on their batches; truncations, ``delete_records``
        and retention trim it."""
        return self._log.epoch_entries()

    @property
    def latest_epoch(self) -> int | None:
        """The latest leader epoch of the log (Kafka's latestEpoch), None when none is known."""
        return self._log.latest_epoch

    def end_offset_for(self, leader_epoch: int) -> OffsetAndEpoch | None:
        """Kafka's endOffsetForEpoch: the largest known epoch at or below ``leader_epoch`` and
        the offset where it ends (the start of the next epoch, or the log end offset for the
        latest). None when undefined: no epoch known, ``leader_epoch`` -1, or above the latest."""
        return self._log.end_offset_for(arg.integer("leader_epoch", leader_epoch, -1, arg.I32_MAX))

    # -- transactions -----------------------------------------------------------------------

    def aborted_transactions(self, start: int | None = None, end: int | None = None) -> list[AbortedTransaction]:
        """The aborted transactions, read from the segments' .txnindex files, that overlap
        [start, end) (defaults: log start, log end): those whose ABORT marker is at or after
        ``start`` and whose first offset is before ``end``; what a read_committed fetch at
        ``start`` ending at ``end`` returns with its records (Kafka's AbortedTxn entries). A
        negative offset raises InvalidArgumentError; an empty range has none."""
        start, end = arg.range_bound("start", start), arg.range_bound("end", end)
        return self._log.aborted_transactions(
            self.log_start_offset if start is None else start, self.log_end_offset if end is None else end
        )

    # -- producers ---------------------------------------------------------------------------

    @property
    def active_producers(self) -> list[ActiveProducer]:
        """The idempotent and transactional producers the log knows (Kafka's
        ProducerStateManager), by producer id: epoch, last sequence and offset, coordinator
        epoch, the first offset of the open transaction (None when none is open) and the last
        write's timestamp. A producer idle for ``producer.id.expiration.ms`` with no open
        transaction is forgotten by the LogManager's expiry."""
        return self._log.active_producers()

    def remove_expired_producers(self, time_ms: int | None = None) -> None:
        """Forgets the producers idle for ``producer.id.expiration.ms`` at ``time_ms`` (default:
        now) that have no open transaction: Kafka's removeExpiredProducers, which a broker (and
        a LogManager) runs every ``producer.id.expiration.check.interval.ms``. The cleaner keeps
        each remaining producer's last batch. In memory: the next snapshot leaves them out."""
        now = int(time.time() * 1000) if time_ms is None else arg.integer("time_ms", time_ms, 0, arg.I64_MAX)
        self._log.remove_expired_producers(now)

    @property
    def ongoing_transactions(self) -> list[OngoingTransaction]:
        """The open transactions (producer id, first offset), by first offset."""
        return self._log.ongoing_transactions()

    @property
    def last_stable_offset(self) -> int:
        """The last stable offset (Kafka's lastStableOffset): the first offset of the earliest
        transaction not yet complete and replicated, capped at the high watermark; the high
        watermark when there is none. A read_committed consumer reads below it."""
        return self._log.last_stable_offset

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset not yet stable (Kafka's firstUnstableOffset): the first offset of
        the earliest open transaction, or of a completed one whose marker the high watermark has
        not passed; None when every offset is stable."""
        return self._log.first_unstable_offset

    def append_txn_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int = 0
    ) -> AppendInfo:
        """Writes a transaction coordinator's COMMIT (``commit=True``) or ABORT marker for the
        producer at the log end, in the log's latest leader epoch (Kafka's appendAsLeader with
        origin COORDINATOR). It closes the producer's open transaction; an ABORT is indexed in
        the .txnindex. An older producer epoch raises InvalidProducerEpochError, an older
        coordinator epoch TransactionCoordinatorFencedError; nothing is written then."""
        return self._log.append_txn_marker(
            arg.integer("producer_id", producer_id, 0, arg.I64_MAX),
            arg.integer("producer_epoch", producer_epoch, 0, 32767),
            arg.flag("commit", commit),
            arg.integer("coordinator_epoch", coordinator_epoch, 0, arg.I32_MAX),
            None,
        )

    # -- state ------------------------------------------------------------------------------

    @property
    def topic(self) -> str:
        return self._log.topic

    @property
    def partition(self) -> int:
        return self._log.partition

    @property
    def path(self) -> str:
        return os.fspath(self._log.path)

    @property
    def read_only(self) -> bool:
        return self._log.read_only

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    def end_offset(self, isolation: str = "read_uncommitted") -> int:
        """The offset reads of ``isolation`` stop at, as a Kafka consumer's ``endOffsets`` gives
        it for that isolation level: the high watermark (``read_uncommitted``), the last stable
        offset (``read_committed``) or the log end offset (``log_end``)."""
        return self._log.end_offset(arg.string("isolation", isolation, _ISOLATIONS))

    @property
    def high_watermark(self) -> int:
        return self._log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._log.recovery_point

    @property
    def size_in_bytes(self) -> int:
        return self._log.size_in_bytes

    @property
    def topic_id(self) -> str | None:
        return self._log.topic_id()

    @property
    def config(self) -> dict[str, str]:
        """The log's topic configuration, every key with its value as Kafka prints it."""
        return self._log.config()

    @property
    def segments(self) -> list[SegmentInfo]:
        """Base offset, size, record count, first-batch and max timestamps of each segment."""
        return self._log.segments()

    # -- inspection (read-only: works on a read-only open of a live log) -------------------

    def cleaner_sections(self, *, time_ms: int | None = None) -> CleanableSections:
        """The log as Kafka's cleaner sees it at ``time_ms`` (default: now): the dirty section
        from the partition's entry in its log dir's ``cleaner-offset-checkpoint`` (read, never
        written; an entry outside the log is shown healed to the log start, as the cleaner
        heals it), where the cleanable range ends and why (the active segment, the last stable
        offset, ``min.compaction.lag.ms``), the clean / cleanable / uncleanable bytes, the dirty
        ratio, and in ``skipped`` why the cleaner would not clean it now (None when it would),
        by the rule :meth:`compact_dirty` applies."""
        return _native.cleaner_sections(self._log, _now_or("time_ms", time_ms))

    def tombstones(self, *, time_ms: int | None = None) -> list[SegmentTombstones]:
        """Each segment's tombstones (records with a null value) and the delete horizons a
        clean stamped on their batches (``delete.retention.ms`` after that clean), judged at
        ``time_ms`` (default: now): those past their horizon go at the next clean. Reads and
        decodes every batch of the log."""
        return _native.tombstones(self._log, _now_or("time_ms", time_ms))

    def retention_plan(
        self, *, time_ms: int | None = None, log_start_offset: int | None = None, cap_future_timestamps: bool = False
    ) -> RetentionPlan:
        """What :meth:`delete_old_segments` would delete at ``time_ms`` (default: now), without
        deleting: each segment with the check that takes it (``log_start_offset``,
        ``retention_bytes``, ``retention_ms``; each check on what the earlier ones leave), the
        future-timestamp warnings, the log start after the run, and the next segment
        ``retention.ms`` will delete and from when. ``log_start_offset`` raises the log start
        the first check uses (a stopped broker's ``log-start-offset-checkpoint`` entry, which
        a standalone open does not read)."""
        start = self.log_start_offset if log_start_offset is None else arg.offset("log_start_offset", log_start_offset)
        return _native.retention_plan(
            self._log, _now_or("time_ms", time_ms), start, arg.flag("cap_future_timestamps", cap_future_timestamps)
        )


def _now_or(name: str, time_ms: int | None) -> int:
    return int(time.time() * 1000) if time_ms is None else arg.integer(name, time_ms, 0, arg.I64_MAX)
