"""Plain record types passed to and from a log.

:class:`Record` is what an append takes. The results (:class:`ConsumerRecord`,
:class:`AppendInfo`, ...) are the engine's own frozen classes, declared once in Rust
(``rust/python/records.rs``): they compare by value, pickle, and the ones that were named
tuples still unpack and index like one."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._native import (
    AbortedTransaction,
    ActiveProducer,
    AppendInfo,
    ConsumerRecord,
    DecodedRecord,
    DeletedSegment,
    EpochEntry,
    OffsetAndEpoch,
    OngoingTransaction,
    ReadResult,
    RetentionPlan,
    RetentionResult,
    SegmentInfo,
    TimestampAndOffset,
)

__all__ = [
    "Record",
    "ConsumerRecord",
    "AppendInfo",
    "SegmentInfo",
    "ReadResult",
    "TimestampAndOffset",
    "DeletedSegment",
    "RetentionResult",
    "RetentionPlan",
    "DecodedRecord",
    "EpochEntry",
    "OffsetAndEpoch",
    "AbortedTransaction",
    "ActiveProducer",
    "OngoingTransaction",
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
