"""``append_arrow``'s uncompressed path writes a chunk at a time (``UnifiedLog::
append_planned_as_leader``): every row is checked before anything is written, then the batches
are encoded and written about a MiB at a time, the log end offset advancing after each batch.
These tests cover what that changes at the edges: appends of many chunks and segments, log
settings that rewrite the batches, and an I/O error part way, against ``append`` of the same
rows (whose batches go through the client path of the log)."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kafkalog import Record, UnifiedLog
from kafkalog.exceptions import KafkaLogIOError
from kafkalog.testing import fault

NOW = 1_700_000_000_000
SMALL_SEGMENTS = {"internal.segment.bytes": 100_000, "index.interval.bytes": 512}


def rows(n: int) -> list[tuple[bytes, bytes, int]]:
    return [(f"key-{i % 700}".encode(), bytes([97 + i % 26]) * (40 + i * 7 % 300), NOW - i % 1000) for i in range(n)]


def records(data: list[tuple[bytes, bytes, int]]) -> list[Record]:
    return [Record(k, v, (), ts) for k, v, ts in data]


def table(data: list[tuple[bytes, bytes, int]]) -> pa.Table:
    return pa.table(
        {
            "key": pa.array([r[0] for r in data], pa.binary()),
            "value": pa.array([r[1] for r in data], pa.binary()),
            "timestamp": pa.array([r[2] for r in data], pa.timestamp("ms")),
        }
    )


def files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


@pytest.mark.parametrize(
    "config",
    [{}, SMALL_SEGMENTS, {**SMALL_SEGMENTS, "compression.type": "lz4"}, {"cleanup.policy": "compact"}],
    ids=["default", "small-segments", "topic-lz4", "compact"],
)
def test_many_chunks_and_segments_same_files_as_append(tmp_path: Path, config: dict[str, Any]) -> None:
    """About 4 MB (several chunks; with small segments, rolls inside a chunk), after an earlier
    append (offsets not from 0), leader epoch 4: the same files and AppendInfo as append."""
    data = rows(24_000)
    infos = []
    for name in ("records", "arrow"):
        with UnifiedLog.open(tmp_path / name / "t-0", config) as log:
            log.append([Record(b"first", b"x", (), NOW)], leader_epoch=4)
            if name == "records":
                infos.append(log.append(records(data), leader_epoch=4))
            else:
                infos.append(log.append_arrow(table(data), leader_epoch=4))
    assert infos[0] == infos[1]
    assert (infos[1].first_offset, infos[1].record_count) == (1, len(data))
    assert files(tmp_path / "records" / "t-0") == files(tmp_path / "arrow" / "t-0")


def test_an_io_error_part_way_keeps_the_batches_before_it(tmp_path: Path) -> None:
    """A roll that cannot create its segment fails the append part way, as it fails append's:
    the batches written before it stay, the log end offset is the new segment's base offset, and
    the log reopens there."""
    data = rows(6_000)
    reference = tmp_path / "reference" / "t-0"
    with UnifiedLog.open(reference, SMALL_SEGMENTS) as log:
        log.append(records(data))
    bases = sorted(int(p.stem) for p in reference.glob("*.log"))
    assert len(bases) > 4
    cut = bases[3]
    for name in ("records", "arrow"):
        path = tmp_path / name / "t-0"
        with UnifiedLog.open(path, SMALL_SEGMENTS) as log:
            with fault(path / f"{cut:020d}.log", "open", errno.EIO):
                with pytest.raises(KafkaLogIOError) as exc:
                    if name == "records":
                        log.append(records(data))
                    else:
                        log.append_arrow(table(data))
            assert exc.value.errno == errno.EIO, name
            assert log.log_end_offset == cut, name
            assert [r.value for r in log.records()] == [r[1] for r in data[:cut]], name
        with UnifiedLog.open(path, SMALL_SEGMENTS) as log:
            assert log.log_end_offset == cut, name
            assert log.append_arrow(table(data[cut:])).first_offset == cut, name
            assert [r.value for r in log.records()] == [r[1] for r in data], name
