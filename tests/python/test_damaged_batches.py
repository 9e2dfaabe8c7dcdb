"""A torn or damaged batch in an older segment is handled the same way on every read path:
``read``, ``records``, ``iter_arrow`` / ``to_arrow`` and the cleaner (``compact_now``). The
Spark reader, which runs the same native scan, is checked in tests/spark/test_spark_damage.py.

An older segment lies below the recovery point, so nothing repairs it when the log is opened.

- **Torn tail** (bytes after the segment's last complete batch, e.g. the file cut inside a
  batch): not records. Every path skips them and goes on with the next segment, as Kafka's
  ``LocalLog.read`` does; the cleaner maps and copies only the complete batches (a cleaned
  segment leaves the torn bytes out). A warning names the file once.
- **Damaged batch** (complete, but its CRC does not match): every path that serves its records
  raises ``CorruptRecordError`` naming the segment file; the cleaner refuses to rebuild it
  (which would give the damaged bytes a valid CRC) and leaves the log as it was.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalog import Record, UnifiedLog
from kafkalog.exceptions import CorruptRecordError

T0 = 1_700_000_000_000
#: Three segments of three batches of ten records: [0, 30), [30, 60), and the active [60, 90).
SEGMENTS, BATCHES, PER_BATCH = 3, 3, 10
KEYS = 15
CONFIG = {"cleanup.policy": "compact", "file.delete.delay.ms": 0}


def key(offset: int) -> bytes:
    return b"k%d" % (offset % KEYS)


def value_at(offset: int) -> bytes:
    return b"v%d" % offset


def write_segments(path: Path, config: dict[str, object] = CONFIG) -> Path:
    with UnifiedLog.open(path, config) as log:
        for s in range(SEGMENTS):
            for b in range(BATCHES):
                first = (s * BATCHES + b) * PER_BATCH
                log.append([Record(key(o), value_at(o), timestamp=T0 + o) for o in range(first, first + PER_BATCH)])
            if s < SEGMENTS - 1:
                log.roll()
    return path


def batch_spans(log_file: Path) -> list[tuple[int, int, int]]:
    """(position, size, base offset) of each batch of a .log file."""
    data, out, pos = log_file.read_bytes(), [], 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        out.append((pos, 12 + length, base))
        pos += 12 + length
    return out


def middle_segment(path: Path) -> Path:
    return path / f"{BATCHES * PER_BATCH:020d}.log"


def cut_inside(path: Path, batch: int) -> set[int]:
    """Cuts the middle segment inside its ``batch``-th batch; returns the offsets lost with it."""
    f = middle_segment(path)
    pos, size, base = batch_spans(f)[batch]
    with f.open("r+b") as fh:
        fh.truncate(pos + size // 2)
    return set(range(base, 60))


def cut_inside_first_batch(path: Path) -> set[int]:
    return cut_inside(path, 0)


def cut_inside_second_batch(path: Path) -> set[int]:
    return cut_inside(path, 1)


def flip_a_value_byte_of_the_second_batch(path: Path) -> set[int]:
    """Changes one value byte of the middle segment's second batch (offsets 40-49): it still
    decodes, but its CRC no longer matches."""
    f = middle_segment(path)
    pos, size, _ = batch_spans(f)[1]
    data = bytearray(f.read_bytes())
    # A record ends with its value and a zero header count: -2 is the last value's last byte.
    at = pos + size - 2
    assert data[at] == ord("9"), "the last record's value is v49"
    data[at] ^= 0x01
    f.write_bytes(bytes(data))
    return set(range(40, 50))


def offsets_served(log: UnifiedLog) -> dict[str, list[int]]:
    """What each read path serves, whole log."""
    return {
        "records": [r.offset for r in log.records()],
        "to_arrow": log.to_arrow().column("offset").to_pylist(),
        "iter_arrow": [o for b in log.iter_arrow(max_chunk_bytes=64) for o in b.column("offset").to_pylist()],
    }


ALL = list(range(SEGMENTS * BATCHES * PER_BATCH))


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("cut", [cut_inside_first_batch, cut_inside_second_batch])
def test_a_torn_tail_is_skipped_by_every_read_path(
    tmp_path: Path, cut: Callable[[Path], set[int]], read_only: bool, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_segments(tmp_path / "t-0")
    lost = cut(path)
    size = middle_segment(path).stat().st_size
    intact = [o for o in ALL if o not in lost]
    caplog.set_level(logging.WARNING, logger="kafkalog")
    with UnifiedLog.open(path, CONFIG, read_only=read_only) as log:
        assert (log.log_start_offset, log.log_end_offset) == (0, len(ALL))
        for path_name, got in offsets_served(log).items():
            assert got == intact, path_name
        for o in ALL:
            records = log.read(o, 1).records
            if o in lost:
                # Kafka's LocalLog.read: nothing in this segment at o, so the next one serves.
                assert records[0].offset == 60, f"read({o})"
            else:
                assert (records[0].offset, records[0].value) == (o, value_at(o)), f"read({o})"
    assert middle_segment(path).stat().st_size == size, "reads (and the open) left the damage in place"
    warnings = [r.getMessage() for r in caplog.records if "do not form a complete record batch" in r.getMessage()]
    torn_at = batch_spans(middle_segment(path))[0 if cut is cut_inside_first_batch else 1][0]
    assert len(warnings) == 1, "warned once per file"
    assert str(middle_segment(path)) in warnings[0] and f"{size - torn_at} bytes at position {torn_at}" in warnings[0]


@pytest.mark.parametrize("cut", [cut_inside_first_batch, cut_inside_second_batch])
def test_the_cleaner_keeps_the_complete_batches_of_a_torn_segment(
    tmp_path: Path, cut: Callable[[Path], set[int]], caplog: pytest.LogCaptureFixture
) -> None:
    path = write_segments(tmp_path / "t-0")
    lost = cut(path)
    intact = [o for o in ALL if o not in lost]
    # The clean range ends at the active segment (60); what a clean of the intact records keeps.
    latest = {key(o): o for o in intact if o < 60}
    expected = sorted(set(latest.values()) | {o for o in intact if o >= 60})
    caplog.set_level(logging.WARNING, logger="kafkalog")
    with UnifiedLog.open(path, CONFIG) as log:
        result = log.compact_now(time_ms=T0 + 1_000)
        assert result.end_offset == 60
        left_out = [r.getMessage() for r in caplog.records if "leaves out the" in r.getMessage()]
        assert len(left_out) == 1 and str(middle_segment(path)) in left_out[0], left_out
        for path_name, got in offsets_served(log).items():
            assert got == expected, path_name
        assert all(r.value == value_at(r.offset) for r in log.records())
    with UnifiedLog.open(path, CONFIG) as log:
        assert log.to_arrow().column("offset").to_pylist() == expected


def test_a_damaged_batch_is_reported_by_every_read_path(tmp_path: Path) -> None:
    path = write_segments(tmp_path / "t-0")
    damaged = flip_a_value_byte_of_the_second_batch(path)
    name = middle_segment(path).name
    with UnifiedLog.open(path, CONFIG) as log:
        for o in ALL:
            if o in damaged:
                with pytest.raises(CorruptRecordError, match=name):
                    log.read(o, 1)
            else:
                assert log.read(o, 1).records[0].offset == o, f"read({o})"
        reads: dict[str, Callable[[], object]] = {
            "records": lambda: list(log.records()),
            "to_arrow": log.to_arrow,
            "iter_arrow": lambda: list(log.iter_arrow(max_chunk_bytes=64)),
        }
        for path_name, read in reads.items():
            with pytest.raises(CorruptRecordError, match=name):
                read()
        # Reads that do not reach the damaged batch serve what was written. (A read that
        # stops right before it still checks it when the same fetch or scan chunk holds it, as
        # a consumer fetching from offset 30 would.)
        assert [r.offset for r in log.records(0, 30)] == list(range(30))
        assert log.to_arrow(0, 30).column("offset").to_pylist() == list(range(30))
        assert [r.offset for r in log.records(50)] == list(range(50, len(ALL)))
        assert log.to_arrow(50).column("offset").to_pylist() == list(range(50, len(ALL)))


def test_the_cleaner_refuses_to_rebuild_a_damaged_batch(tmp_path: Path, snapshot_dir: Callable[[Path], dict[str, tuple[int, int, str]]]) -> None:
    """Offsets 40-44 (keys k10-k14) are superseded by 55-59, so the clean must rebuild the
    damaged batch: it refuses, naming the file, and changes nothing."""
    path = write_segments(tmp_path / "t-0")
    flip_a_value_byte_of_the_second_batch(path)
    name = middle_segment(path).name
    with UnifiedLog.open(path, CONFIG) as log:
        log.flush()
        before = snapshot_dir(path)
        with pytest.raises(CorruptRecordError, match=name):
            log.compact_now(time_ms=T0 + 1_000)
        assert snapshot_dir(path) == before
        assert [r.offset for r in log.records(0, 30)] == list(range(30))


@pytest.mark.parametrize("indexed", [True, False])
def test_a_batch_length_running_past_the_end_with_data_after_it_is_damage(
    tmp_path: Path, snapshot_dir: Callable[[Path], dict[str, tuple[int, int, str]]], indexed: bool
) -> None:
    """A length field that runs past the end of the file looks like a torn tail, but the data
    goes on after it: the offset index points at batches after it (``indexed``), or the batch's
    CRC (which does not cover the length) matches a shorter length that ends where the next
    batch starts. The batch is damaged, and every path that has to pass it reports it instead
    of skipping the rest of the segment (Kafka's cleaner fails here too; its reads skip)."""
    # An index entry for every batch but a segment's first, or none at all.
    config = {**CONFIG, "index.interval.bytes": 1 if indexed else 1 << 20}
    path = write_segments(tmp_path / "t-0", config)
    f = middle_segment(path)
    pos, _, _ = batch_spans(f)[0]
    data = bytearray(f.read_bytes())
    data[pos + 9] ^= 0x01  # length + 65536
    f.write_bytes(bytes(data))
    name = f.name
    with UnifiedLog.open(path, config) as log:
        log.flush()
        before = snapshot_dir(path)
        for o in ALL:
            # An index entry names the last offset of the batch at its position, and the
            # segment's first batch has none: 30-48 are looked up from the start of the segment,
            # through the damaged batch; 49 on from the entries after it.
            if 30 <= o < (49 if indexed else 60):
                with pytest.raises(CorruptRecordError, match=name):
                    log.read(o, 1)
            else:
                assert log.read(o, 1).records[0].offset == o, f"read({o})"
        for read in (lambda: list(log.records()), log.to_arrow, lambda: log.compact_now(time_ms=T0 + 1_000)):
            with pytest.raises(CorruptRecordError, match=name):
                read()
        assert snapshot_dir(path) == before


@pytest.mark.parametrize("read_only", [True, False])
def test_an_index_entry_pointing_past_its_offset_does_not_skip_records(
    tmp_path: Path, read_only: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The first .index entry of a segment names the last offset of the batch at its position
    (23 here); set to 0, a lookup of offsets 0-22 would start at that batch and pass over
    them (Kafka trusts its index here too). The batch found there starts after the
    offset the entry promised, so the lookup scans the segment from its start instead."""
    path = tmp_path / "t-0"
    config = {**CONFIG, "index.interval.bytes": 100}
    with UnifiedLog.open(path, config) as log:
        for first in range(0, 120, 12):
            log.append([Record(key(o), value_at(o), timestamp=T0 + o) for o in range(first, first + 12)])
        log.roll()  # an older segment: a writable open does not rebuild its index
        log.append([Record(b"k", b"after", timestamp=T0)])
    index = path / f"{0:020d}.index"
    data = bytearray(index.read_bytes())
    relative, position = struct.unpack_from(">ii", data, 0)
    assert relative == 23 and position > 0
    struct.pack_into(">i", data, 0, 0)
    index.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING, logger="kafkalog")
    with UnifiedLog.open(path, config, read_only=read_only) as log:
        everything = list(range(121))
        for path_name, got in offsets_served(log).items():
            assert got == everything, path_name
        for o in range(120):
            assert (log.read(o, 1).records[0].value) == value_at(o), f"read({o})"
    warnings = [r.getMessage() for r in caplog.records if "Found a corrupted index file" in r.getMessage()]
    assert len(warnings) == 1 and str(index) in warnings[0], warnings
    assert f"the entry for offset {int(index.name[:20])} at position {position}" in warnings[0], warnings
    assert "the record batch there starts at offset" in warnings[0], warnings
