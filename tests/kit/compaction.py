"""The compaction tests' kit (test_compaction_model, test_cleaner_crash and the crash child): an independent look at a log directory's ``.log`` files (batch headers parsed
here, records and CRCs through kafka-python's codec, which nobody in this project wrote), and a
read of a whole log through ``UnifiedLog.read``.

Nothing here imports kafkalog at module level, so the crash child can import the constants
cheaply.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Attribute bits of a v2 batch header.
CODEC_MASK = 0x07
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODECS = list(CODEC_IDS)

#: A record as the tests compare them: (offset, timestamp, key, value).
Row = tuple[int, int, "bytes | None", "bytes | None"]


@dataclass
class RawBatch:
    """One v2 batch as found in a ``.log`` file."""

    file_base: int
    position: int
    base_offset: int
    last_offset: int
    attributes: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    records_count: int
    rows: list[Row] = field(default_factory=list)

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def horizon(self) -> int | None:
        """The delete horizon stamped into baseTimestamp (KIP-534), if the flag is set."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None


def _be(data: bytes, pos: int, n: int) -> int:
    return int.from_bytes(data[pos : pos + n], "big", signed=True)


def parse_log_file(path: Path, file_base: int, next_base: int | None) -> list[RawBatch]:
    """Every batch of one ``.log`` file. Asserts the file is whole v2 batches, each with a valid
    CRC (checked by kafka-python), offsets inside [file_base, next_base), records decoding with
    kafka-python at offsets inside their batch."""
    from kafka.record.default_records import DefaultRecordBatch

    data = path.read_bytes()
    out: list[RawBatch] = []
    pos = 0
    while pos < len(data):
        assert pos + 61 <= len(data), f"{path}: {len(data) - pos} trailing bytes at {pos}"
        length = _be(data, pos + 8, 4)
        size = 12 + length
        assert length >= 49 and pos + size <= len(data), f"{path}: bad batch length {length} at {pos}"
        magic = data[pos + 16]
        assert magic == 2, f"{path}: magic {magic} at {pos}"
        raw = data[pos : pos + size]
        base = _be(raw, 0, 8)
        last_delta = _be(raw, 23, 4)
        batch = RawBatch(
            file_base=file_base,
            position=pos,
            base_offset=base,
            last_offset=base + last_delta,
            attributes=_be(raw, 21, 2) & 0xFFFF,
            base_timestamp=_be(raw, 27, 8),
            max_timestamp=_be(raw, 35, 8),
            producer_id=_be(raw, 43, 8),
            records_count=_be(raw, 57, 4),
        )
        kb = DefaultRecordBatch(bytes(raw))
        assert kb.validate_crc(), f"{path}: CRC mismatch in the batch at {pos} (base offset {base})"
        assert kb.base_offset == base and kb.last_offset_delta == last_delta
        assert base >= file_base, f"{path}: batch base {base} below the segment base {file_base}"
        if next_base is not None:
            assert batch.last_offset < next_base, f"{path}: batch [{base}, {batch.last_offset}] reaches {next_base}"
        assert last_delta >= 0 and batch.records_count >= 0
        for r in kb:
            assert base <= r.offset <= batch.last_offset, f"{path}: record {r.offset} outside [{base}, {batch.last_offset}]"
            batch.rows.append((r.offset, r.timestamp, r.key, r.value))
        assert len(batch.rows) == batch.records_count, f"{path}: count {batch.records_count} != {len(batch.rows)} records"
        offsets = [row[0] for row in batch.rows]
        assert offsets == sorted(set(offsets)), f"{path}: record offsets not increasing in batch at {pos}: {offsets}"
        out.append(batch)
        pos += size
    return out


def segment_bases(log_dir: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in Path(log_dir).glob("*.log") if len(p.name) == 24)


def scan_dir(log_dir: str | os.PathLike[str]) -> list[RawBatch]:
    """Every batch of every live ``.log`` file of ``log_dir``, in offset order. Batch offsets
    must increase strictly across the whole directory."""
    log_dir = Path(log_dir)
    bases = segment_bases(log_dir)
    out: list[RawBatch] = []
    for i, base in enumerate(bases):
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        out.extend(parse_log_file(log_dir / f"{base:020d}.log", base, nxt))
    for a, b in zip(out, out[1:]):
        assert a.last_offset < b.base_offset, f"batches overlap or go back: {a.base_offset}..{a.last_offset} then {b.base_offset}"
    return out


def data_rows(batches: list[RawBatch]) -> list[Row]:
    """The records of the data (non-control) batches."""
    return [row for b in batches if not b.is_control for row in b.rows]


def read_all(log: Any, start: int | None = None) -> list[Row]:
    """Every data record from ``start`` (default the log start) to the log end, through
    ``UnifiedLog.read`` one fetch at a time (isolation log_end). Checks that offsets strictly
    increase and that every fetch makes progress."""
    offset = log.log_start_offset if start is None else start
    end = log.log_end_offset
    out: list[Row] = []
    while offset < end:
        result = log.read(offset, 1 << 16, "log_end")
        if not result.records_bytes:
            # Only allowed when nothing at or after `offset` is left in the files: a truncation
            # into a range the cleaner emptied leaves the log end past the last batch.
            later = [b.base_offset for b in scan_dir(log.path) if b.last_offset >= offset]
            assert not later, f"read({offset}) returned nothing below the log end {end}; batches at {later}"
            break
        for r in result.records:
            if out:
                assert r.offset > out[-1][0], f"offset {r.offset} after {out[-1][0]}"
            out.append((r.offset, r.timestamp, r.key, r.value))
        assert result.next_offset > offset, f"read({offset}) made no progress"
        offset = result.next_offset
    return out


def cleaner_temp_files(log_dir: str | os.PathLike[str]) -> list[str]:
    """Names of the ``.cleaned`` and ``.swap`` files in one partition directory (a clean that
    did not finish its swap leaves them)."""
    return sorted(p.name for p in Path(log_dir).iterdir() if p.name.endswith((".cleaned", ".swap")))
