"""Records as the suites compare them: one row shape for what kafkalog reads back, what a test
wrote and what Kafka's consumer returns, so that ``==`` between them is the whole check.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: (offset, timestamp, timestamp_type, key, value, headers): what kafkalog and Kafka's consumer
#: must agree on for every record.
RecordRow = tuple[int, int, int, "bytes | None", "bytes | None", tuple[tuple[str, "bytes | None"], ...]]


def record_row(r: Any) -> RecordRow:
    """A ``kafkalog.ConsumerRecord`` as a :data:`RecordRow`."""
    return (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple((k, v) for k, v in r.headers))


def expected_rows(records: Iterable[Any], first_offset: int = 0) -> list[RecordRow]:
    """The rows a reader must return for ``records`` (``kafkalog.Record``) appended from
    ``first_offset`` with their own timestamps (CreateTime, type 0)."""
    return [(first_offset + i, r.timestamp, 0, r.key, r.value, tuple(r.headers)) for i, r in enumerate(records)]
