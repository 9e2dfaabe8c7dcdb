"""What a clean did: Kafka's CleanerStats, one pass of a clean, and the result of cleaning a
log's whole cleanable range (``UnifiedLog.compact_now`` / ``LogManager.compact_now``).

Plain frozen dataclasses, so they pickle (Spark ships them back to the driver)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CleanerStats", "CleanPass", "CompactResult"]

_MB = 1024.0 * 1024.0


@dataclass(frozen=True)
class CleanerStats:
    """Counters and times of one clean (Kafka's CleanerStats), plus tombstone and copy counts
    Kafka does not report."""

    bytes_read: int = 0
    """Bytes of segments recopied (pass 2): Kafka's "Start size"."""
    bytes_written: int = 0
    """Bytes written to the cleaned segments: Kafka's "End size"."""
    map_bytes_read: int = 0
    """Bytes of the dirty section read to build the offset map (pass 1)."""
    map_messages_read: int = 0
    messages_read: int = 0
    invalid_messages_read: int = 0
    """Records without a key found while recopying; they are dropped."""
    messages_written: int = 0
    buffer_utilization: float = 0.0
    """Share of the offset map's slots in use at the end (0..1)."""
    elapsed_secs: float = 0.0
    elapsed_index_secs: float = 0.0
    tombstones_retained: int = 0
    """Tombstones kept because their delete horizon has not passed (or was just stamped)."""
    tombstones_removed: int = 0
    """Tombstones removed because their delete horizon passed."""
    batches_copied_verbatim: int = 0
    segments_written: int = 0
    segments_kept: int = 0
    """Segments the clean left exactly as they were, kept without being rewritten."""
    throttled_ms: int = 0

    @property
    def size_reduction(self) -> float:
        """Share of bytes removed (Kafka's "% size reduction" / 100)."""
        return 1.0 - self.bytes_written / self.bytes_read if self.bytes_read else 0.0

    @property
    def read_mb_per_sec(self) -> float:
        return self.bytes_read / _MB / self.elapsed_secs if self.elapsed_secs > 0 else 0.0


@dataclass(frozen=True)
class CleanPass:
    """One pass: the map was built over ``[first_dirty_offset, end_offset)``."""

    first_dirty_offset: int
    end_offset: int
    stats: CleanerStats
    summary: str
    """Kafka's INFO block for this clean, as the broker logs it."""


@dataclass(frozen=True)
class CompactResult:
    """The result of cleaning a log's whole cleanable range."""

    passes: list[CleanPass] = field(default_factory=list)
    first_dirty_offset: int = 0
    first_uncleanable_offset: int = 0
    end_offset: int = 0
    """The new cleaner checkpoint: the first offset not cleaned."""
    stats: CleanerStats = field(default_factory=CleanerStats)
    """All passes together."""
