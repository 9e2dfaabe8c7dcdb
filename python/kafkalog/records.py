"""Plain record types passed to and from a log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "Record",
    "ConsumerRecord",
    "AppendInfo",
    "SegmentInfo",
    "ReadResult",
    "TimestampAndOffset",
    "DeletedSegment",
    "RetentionResult",
]

Header = tuple[str, "bytes | None"]


@dataclass(frozen=True, slots=True)
class Record:
    """A record to append: key and value bytes (None for null; a null value is a tombstone),
    headers as (str key, bytes-or-None value) pairs, and a CreateTime timestamp in ms (None =
    now)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = field(default=())
    timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """A record read back from a log, as a Kafka consumer sees it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    """0 = CreateTime, 1 = LogAppendTime, -1 = none (magic 0 records): Kafka's TimestampType ids."""
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


class AppendInfo(NamedTuple):
    """What an append wrote (Kafka's LogAppendInfo)."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    batch_count: int
    valid_bytes: int


class SegmentInfo(NamedTuple):
    """One segment of a log."""

    base_offset: int
    size: int
    record_count: int
    first_batch_timestamp: int
    """Max timestamp of the first batch (Kafka's getFirstBatchTimestamp), -1 if none."""
    max_timestamp: int
    path: str


class ReadResult(NamedTuple):
    """The result of UnifiedLog.read: raw whole batches and the records decoded from them
    (those at or after the requested offset; control records are left out), with the log's
    offsets as the read saw them."""

    records_bytes: bytes
    records: list[ConsumerRecord]
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    next_offset: int
    """The offset after the last batch returned (the offset to read next)."""


class TimestampAndOffset(NamedTuple):
    """A result of offset_for_timestamp."""

    timestamp: int
    offset: int
    leader_epoch: int


class DeletedSegment(NamedTuple):
    """A segment retention deleted."""

    base_offset: int
    next_offset: int
    """The offset after the segment (the next segment's base, or the log end)."""
    size: int
    largest_timestamp: int
    """Its largest record timestamp, or the file's mtime (ms) when it has none."""
    reason: str
    """Which check deleted it: "log_start_offset", "retention_bytes" or "retention_ms"."""


class RetentionResult(NamedTuple):
    """What one retention run did on one log (Kafka's deleteOldSegments)."""

    deleted: list[DeletedSegment]
    warnings: list[str]
    """One line per segment whose timestamps lie in the future (retention.ms cannot delete it)."""
    log_start_offset: int
