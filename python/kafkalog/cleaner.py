"""What a clean did: Kafka's CleanerStats, one pass of a clean, and the result of cleaning a
log's whole cleanable range (``UnifiedLog.compact_now`` / ``LogManager.compact_now``), and of
cleaning its dirty section from the log dir's ``cleaner-offset-checkpoint``
(``UnifiedLog.compact_dirty``); and the read-only look at a log through the cleaner's rules
(``UnifiedLog.cleaner_sections``, ``UnifiedLog.tombstones``); the last clean of each
partition, which every clean but ``UnifiedLog.compact_now`` keeps in its log dir's
``kafkalog-last-clean`` (``last_cleans``).

The engine's own frozen classes, declared once in Rust (``CleanerStats``' fields are the
engine's list, ``CleanerStats.FIELDS``); they pickle, so Spark ships them back to the driver."""

from __future__ import annotations

import os

from ._native import (
    CleanableSections,
    CleanerStats,
    CleanPass,
    CompactResult,
    DirtyCompactResult,
    LastClean,
    SegmentTombstones,
    last_cleans,
)

__all__ = [
    "CleanerStats",
    "CleanPass",
    "CompactResult",
    "DirtyCompactResult",
    "CleanableSections",
    "SegmentTombstones",
    "LastClean",
    "read_last_cleans",
]


def read_last_cleans(log_dir: str | os.PathLike[str]) -> dict[tuple[str, int], LastClean]:
    """The last clean of each partition that ``log_dir``'s ``kafkalog-last-clean`` records, by
    ``(topic, partition)``: when it finished, its dirty range, who ran it (``"log-cleaner"``, a
    LogManager's cleaner; ``"on-demand"``, ``compact_dirty`` as ``kafkalog compact`` and the
    Spark compact job run it) and its ``CleanerStats``. Empty when the dir records none. Reads
    only: safe on a live broker's or LogManager's dir.

    Raises ``OSError`` when the file cannot be read and ``KafkaLogError`` naming the file and
    line when it is malformed."""
    return {(c.topic, c.partition): c for c in last_cleans(log_dir)}
