"""What a clean did: Kafka's CleanerStats, one pass of a clean, and the result of cleaning a
log's whole cleanable range (``UnifiedLog.compact_now`` / ``LogManager.compact_now``), and of
cleaning its dirty section from the log dir's ``cleaner-offset-checkpoint``
(``UnifiedLog.compact_dirty``); and the read-only look at a log through the cleaner's rules
(``UnifiedLog.cleaner_sections``, ``UnifiedLog.tombstones``).

The engine's own frozen classes, declared once in Rust (``CleanerStats``' fields are the
engine's list, ``CleanerStats.FIELDS``); they pickle, so Spark ships them back to the driver."""

from __future__ import annotations

from ._native import CleanableSections, CleanerStats, CleanPass, CompactResult, DirtyCompactResult, SegmentTombstones

__all__ = ["CleanerStats", "CleanPass", "CompactResult", "DirtyCompactResult", "CleanableSections", "SegmentTombstones"]
