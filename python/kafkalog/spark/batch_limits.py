"""How big the batches of a Spark write may be: what one segment, and one message, can take.

The engine refuses a batch of a producer's append that is bigger than ``max.message.bytes``
(``LogValidator`` in Kafka, ``log_validator::analyze`` here) or bigger than the segment size
(``UnifiedLog.append`` in Kafka checks ``validRecords.sizeInBytes > config.segmentSize``;
kafkalog accepts a run of batches in one append and checks each). Both compare a batch's whole
size, its 61-byte header included (12 + the batch length field), with ``>``; the segment size
is ``internal.segment.bytes`` when set, else ``segment.bytes`` (``LogConfig.segmentSize``). So
every batch the writer builds must be at most ``min(max.message.bytes, segment size)`` bytes,
compressed, as the engine sees it.

The native encoder (``encode_batches`` behind ``UnifiedLog.append_records``) groups records
into batches by their uncompressed size: it closes a batch when the estimate with the next
record (that record at zero offset and timestamp deltas, plus 5 bytes for its length varint)
would pass ``batch_size``. :func:`grouping_size` picks a ``batch_size`` for which every batch
of two or more records fits the limit however the codec does: the real record is at most
:data:`ENCODER_SLACK` bytes larger than the estimate, and the codec's output at most
:func:`compressed_bound` of its input. A batch of one record is exactly that record, so a
record that cannot fit alone is found before the append (:func:`row_bounds` picks the rows
that might not fit; the writer builds each of those alone and measures it).

Pure functions over numbers and pyarrow arrays; no pyspark import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "RECORD_BATCH_OVERHEAD",
    "ENCODER_SLACK",
    "BatchLimit",
    "batch_limit",
    "compressed_bound",
    "grouping_size",
    "max_single_record",
    "row_bounds",
]

#: The v2 batch header (Kafka's ``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``).
RECORD_BATCH_OVERHEAD = 61
#: How much bigger a record can be than the encoder's estimate of it: its offset delta varint
#: takes up to 5 bytes (estimated 1), its timestamp delta varlong up to 10 (estimated 1).
ENCODER_SLACK = 4 + 9
#: A record's encoded size is at most its key, value and header bytes plus this (length 5,
#: attributes 1, offset delta 5, timestamp delta 10, key and value lengths 5 + 5, header count
#: 5) ...
RECORD_OVERHEAD_BOUND = 36
#: ... plus this per header (key and value lengths).
HEADER_OVERHEAD_BOUND = 10

_DEFAULT_MAX_MESSAGE_BYTES = 1048588
_DEFAULT_SEGMENT_BYTES = 1 << 30


@dataclass(frozen=True)
class BatchLimit:
    """The largest batch the engine accepts for a log config, and why."""

    max_message_bytes: int
    segment_size: int
    #: The key the segment size comes from: ``internal.segment.bytes`` or ``segment.bytes``.
    segment_key: str

    @property
    def bytes(self) -> int:
        return min(self.max_message_bytes, self.segment_size)

    def describe(self) -> str:
        return (
            f"{self.bytes} bytes a batch may have (the smaller of max.message.bytes={self.max_message_bytes} "
            f"and the segment size {self.segment_size} from {self.segment_key})"
        )


def batch_limit(config: Mapping[str, str]) -> BatchLimit:
    """The limit for a log's resolved config (``UnifiedLog.config``, Kafka's key names)."""
    max_message = int(config.get("max.message.bytes", _DEFAULT_MAX_MESSAGE_BYTES))
    internal = config.get("internal.segment.bytes")
    if internal is not None:
        return BatchLimit(max_message, int(internal), "internal.segment.bytes")
    return BatchLimit(max_message, int(config.get("segment.bytes", _DEFAULT_SEGMENT_BYTES)), "segment.bytes")


def _blocks(n: int, size: int) -> int:
    return -(-n // size)


def compressed_bound(codec: str, n: int) -> int:
    """At most how many bytes kafkalog's ``codec`` writes for ``n`` input bytes (the batch
    payload after the 61-byte header); see ``rust/record/compression.rs``."""
    if codec == "none":
        return n
    if codec == "lz4":
        # Kafka's frame: 7-byte header, 64 KiB blocks each behind a 4-byte size and stored raw
        # when they do not shrink, a 4-byte end mark.
        return 7 + n + 4 * _blocks(n, 64 * 1024) + 4
    if codec == "snappy":
        # xerial framing: 16-byte header, 32 KiB blocks each behind a 4-byte size; a raw snappy
        # block is at most 32 + b + b / 6 bytes (snap's max_compress_len).
        return 16 + n + n // 6 + (4 + 32) * _blocks(n, 32 * 1024)
    if codec == "zstd":
        # ZSTD_compressBound, plus the block a flush may end early and the final empty block.
        small = ((128 << 10) - n) >> 11 if n < (128 << 10) else 0
        return n + (n >> 8) + small + 2 * 3
    if codec == "gzip":
        # 10-byte header and 8-byte trailer around deflate, whose output zlib bounds by
        # deflateBound's conservative form (any settings; static Huffman's 9-bit literals).
        return 18 + n + ((n + 7) >> 3) + ((n + 63) >> 6) + 5
    raise ValueError(f"unknown codec {codec!r}")


def max_single_record(limit: int, codec: str) -> int:
    """The largest encoded record (uncompressed bytes) that surely fits ``limit`` alone in a
    batch with ``codec``: 61 + compressed_bound(it) <= limit; -1 when none surely does."""
    lo, hi = -1, max(limit - RECORD_BATCH_OVERHEAD, -1)
    while lo < hi:  # the bound grows with n, so binary search for the last n that fits
        mid = (lo + hi + 1) // 2
        if RECORD_BATCH_OVERHEAD + compressed_bound(codec, mid) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def grouping_size(limit: int, codec: str, preferred: int) -> int:
    """The ``batch_size`` to give the native encoder: ``preferred`` (the writer's usual batch
    size), lowered until every batch of two or more records it builds fits ``limit``."""
    payload = max_single_record(limit, codec)
    return max(0, min(preferred, RECORD_BATCH_OVERHEAD + payload - ENCODER_SLACK))


def row_bounds(keys: pa.Array, values: pa.Array, headers: pa.Array | None) -> pa.Array:
    """An upper bound of each row's encoded record size (int64), from its key, value and header
    lengths: compare it with :func:`max_single_record` to find the rows worth measuring."""
    size = pc.add(
        pc.fill_null(pc.binary_length(keys).cast(pa.int64()), 0),
        pc.fill_null(pc.binary_length(values).cast(pa.int64()), 0),
    )
    size = pc.add(size, RECORD_OVERHEAD_BOUND)
    if headers is not None and len(headers) > 0:
        entries = headers.flatten()
        entry = pc.add(
            pc.fill_null(pc.binary_length(entries.field("key")).cast(pa.int64()), 0),
            pc.fill_null(pc.binary_length(entries.field("value")).cast(pa.int64()), 0),
        )
        entry = pc.add(entry, HEADER_OVERHEAD_BOUND)
        # Per-row sums through the running total: row i owns entries [ends[i] - lengths[i], ends[i]).
        lengths = pc.fill_null(pc.list_value_length(headers).cast(pa.int64()), 0)
        ends = pc.cumulative_sum(lengths)
        totals = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(entry)])
        per_row = pc.subtract(pc.take(totals, ends), pc.take(totals, pc.subtract(ends, lengths)))
        size = pc.add(size, per_row)
    return size
