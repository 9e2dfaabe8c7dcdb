"""``to_arrow`` / ``iter_arrow`` (the native ``read_columns`` bulk path) against ``records()``
(the fetch path, decoded record by record): the same rows, values and nulls, on logs that mix
uncompressed and compressed batches, transactional batches committed and aborted, control
batches, null keys and values, headers (some with null values), several segments, ranges starting
and ending mid-batch, and chunks small and large.

The columns of a large read live in memory maps that are reused once Python releases them:
the tests also read while earlier tables are still alive, after they were released, and with
nulls first appearing past a megabyte of column data.

``to_arrow`` with threads cuts its range into pieces read at once (``kafkalog.arrow_read``);
the ``pieces`` fixture makes it cut these small logs into five, so every case also runs with
cuts inside batches, transactions and segments."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import kafkalog
from kafkalog import arrow_read, batches
from kafkalog.arrow import KAFKA_SCHEMA
from kafkalog.exceptions import CorruptRecordError
from kafkalog.records import Record

T0 = 1_700_000_000_000
ISOLATIONS = ["read_uncommitted", "read_committed"]


@dataclass
class Mixed:
    log: kafkalog.UnifiedLog
    batch_bases: list[int] = field(default_factory=list)
    control_offsets: list[int] = field(default_factory=list)


def random_records(rng: random.Random, base: int, n: int, nulls: bool) -> list[Record]:
    out = []
    for i in range(n):
        key = None if nulls and rng.random() < 0.1 else b"k%d" % rng.randrange(1000)
        value = None if nulls and rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 400))
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if rng.random() < 0.3:
            count = rng.randrange(1, 4)
            headers = tuple((f"h{j}", None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 20))) for j in range(count))
        out.append(Record(key, value, headers=headers, timestamp=T0 + base + i))
    return out


def build_mixed(path: Path, seed: int, batch_count: int = 160) -> Mixed:
    """Plain and transactional producers (ids 1-3) interleaved, uncompressed batches mostly and
    lz4 / gzip / zstd ones among them, each transaction committed or aborted, every one decided
    at the end; about 3 MB over segments of 512 KiB."""
    rng = random.Random(seed)
    log = kafkalog.UnifiedLog.open(path, {"internal.segment.bytes": str(512 << 10)})
    mixed = Mixed(log)
    sequence = {1: 0, 2: 0, 3: 0}
    open_txn: set[int] = set()
    for b in range(batch_count):
        base = log.log_end_offset
        producer = rng.choice([-1, 1, 2, 3])
        n = rng.randrange(1, 150)
        compression = "none" if rng.random() < 0.7 else rng.choice(["lz4", "gzip", "zstd"])
        records = random_records(rng, base, n, nulls=b > 20)
        if producer < 0:
            raw = batches.build(base, records, compression=compression)
        else:
            raw = batches.build(
                base,
                records,
                compression=compression,
                producer_id=producer,
                producer_epoch=0,
                base_sequence=sequence[producer],
                transactional=True,
            )
            sequence[producer] += n
            open_txn.add(producer)
        log.append_as_follower(raw)
        mixed.batch_bases.append(base)
        if open_txn and rng.random() < 0.15:
            mixed.control_offsets.append(end_txn(log, rng.choice(sorted(open_txn)), rng.random() < 0.6, open_txn))
    for producer in sorted(open_txn):
        mixed.control_offsets.append(end_txn(log, producer, producer != 2, open_txn))
    return mixed


def end_txn(log: kafkalog.UnifiedLog, producer: int, commit: bool, open_txn: set[int]) -> int:
    offset: int = log.log_end_offset
    log.append_as_follower(batches.end_txn_marker(offset, T0 + offset, producer_id=producer, producer_epoch=0, commit=commit))
    open_txn.discard(producer)
    return offset


def expected_rows(log: kafkalog.UnifiedLog, start: int | None, end: int | None, isolation: str) -> list[dict[str, Any]]:
    return [
        {
            "key": r.key,
            "value": r.value,
            "topic": r.topic,
            "partition": r.partition,
            "offset": r.offset,
            "timestamp": dt.datetime.fromtimestamp(r.timestamp / 1000, tz=dt.timezone.utc),
            "timestampType": r.timestamp_type,
            "headers": [{"key": k, "value": v} for k, v in r.headers],
        }
        for r in log.records(start, end, isolation)
    ]


def check_table(table: pa.Table, want: list[dict[str, Any]]) -> None:
    assert table.schema == KAFKA_SCHEMA
    table.validate(full=True)
    assert table.to_pylist() == want
    for name in ("key", "value"):
        assert table.column(name).null_count == sum(row[name] is None for row in want)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    m = build_mixed(tmp_path_factory.mktemp("mixed") / "mixed-3", seed=17)
    yield m
    m.log.close()


@pytest.fixture(params=["one thread", "five pieces"])
def pieces(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[int, int]]]:
    """Runs a test with ``to_arrow`` on one thread, then with its range cut into five pieces
    (pieces of 64 KiB at least, five threads); gives the ranges each threaded read used."""
    used: list[list[tuple[int, int]]] = []
    if request.param == "five pieces":
        read_pieces = arrow_read.read_pieces
        monkeypatch.setattr(arrow_read, "MIN_PIECE_BYTES", 64 << 10)
        monkeypatch.setattr(pa, "cpu_count", lambda: 5)

        def spy(read: Any, ranges: list[tuple[int, int]], total: int, on_progress: Any) -> Any:
            used.append(ranges)
            return read_pieces(read, ranges, total, on_progress)

        monkeypatch.setattr(arrow_read, "read_pieces", spy)
    else:
        monkeypatch.setattr(pa, "cpu_count", lambda: 1)
    return used


def test_mixed_log_has_what_the_cases_need(mixed: Mixed) -> None:
    log = mixed.log
    assert len(log.segments) > 3
    assert len(mixed.control_offsets) > 5
    assert log.aborted_transactions()
    whole = log.to_arrow()
    assert whole.column("value").chunks[0].buffers()[2].size > 1 << 20  # a mapped column
    assert whole.column("key").null_count and whole.column("value").null_count
    assert any(h for h in whole.column("headers").to_pylist())


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_whole_log_equals_records(mixed: Mixed, isolation: str, pieces: list[list[tuple[int, int]]]) -> None:
    check_table(mixed.log.to_arrow(isolation=isolation), expected_rows(mixed.log, None, None, isolation))
    if pieces:
        (ranges,) = pieces
        assert len(ranges) == 5 and ranges[0][0] == 0
        assert ranges[-1][1] == mixed.log.end_offset(isolation)
        assert all(a < b == c for (a, b), (c, _) in zip(ranges, ranges[1:]))
        # Cuts fall inside batches, not only at their bases.
        assert {b for _, b in ranges[:-1]} - set(mixed.batch_bases)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_ranges_starting_and_ending_mid_batch_equal_records(
    mixed: Mixed, isolation: str, pieces: list[list[tuple[int, int]]]
) -> None:
    log, rng = mixed.log, random.Random(5)
    end = log.log_end_offset
    cases = [(mixed.batch_bases[3] + 1, mixed.batch_bases[90] + 2), (mixed.control_offsets[2], end)]
    cases += [tuple(sorted(rng.sample(range(end + 1), 2))) for _ in range(6)]
    for start, stop in cases:
        check_table(log.to_arrow(start, stop, isolation), expected_rows(log, start, stop, isolation))
    if pieces:
        assert max(len(r) for r in pieces) == 5


@pytest.mark.parametrize("chunk", [1, 5_000, 300_000])
def test_chunked_reads_equal_records(mixed: Mixed, chunk: int) -> None:
    log = mixed.log
    start = mixed.batch_bases[1] + 1
    for isolation in ISOLATIONS:
        parts = list(log.iter_arrow(start, None, isolation, max_chunk_bytes=chunk))
        check_table(pa.Table.from_batches(parts, schema=KAFKA_SCHEMA), expected_rows(log, start, None, isolation))


def test_tables_stay_intact_while_later_reads_reuse_released_memory(mixed: Mixed, pieces: list[Any]) -> None:
    log = mixed.log
    first = log.to_arrow()
    want = first.to_pylist()
    for _ in range(3):
        released = log.to_arrow(isolation="read_committed")
        del released
        # The memory of the released table goes to this read, not over `first`.
        mid = mixed.batch_bases[40] + 3
        check_table(log.to_arrow(mid), expected_rows(log, mid, None, "read_uncommitted"))
    assert first.to_pylist() == want
    first.validate(full=True)


def test_nulls_first_seen_past_a_megabyte_of_values(tmp_path: Path) -> None:
    with kafkalog.UnifiedLog.open(tmp_path / "late-0") as log:
        value = bytes(range(200))
        for b in range(60):
            log.append([(b"k%d" % i, value) for i in range(100)])
        log.append([(None, value), (b"k", None), (b"k", value), (None, None)])
        table = log.to_arrow()
        check_table(table, expected_rows(log, None, None, "read_uncommitted"))
        assert table.column("key").null_count == 2 and table.column("value").null_count == 2
        # A table with no nulls has no validity bitmap.
        clean = log.to_arrow(0, 6000)
        assert clean.column("key").chunks[0].buffers()[0] is None
        assert clean.column("value").null_count == 0


def test_plain_batches_then_other_records_equal_records(tmp_path: Path) -> None:
    """Uncompressed batches whose records all have a key and a value and no header take the
    plain path (each column written through a cursor, committed once a batch). Here: keys and
    values of every length up to 300 bytes (short ones copied in line); then a batch whose 51st
    record has a null key, so the 50 rows the plain path already wrote are undone and the batch
    is read record by record, as the rest of the read is; a batch with headers; plain batches
    again; a gzip batch. Whole reads, reads cut mid-batch and reads starting past the null
    (where the plain path runs again) all equal ``records()``."""
    rng = random.Random(5)
    big = 1 << 20
    with kafkalog.UnifiedLog.open(tmp_path / "plain-0") as log:
        for _ in range(12):
            log.append([(rng.randbytes(rng.randrange(0, 41)), rng.randbytes(rng.randrange(0, 301))) for _ in range(100)], batch_size=big)
        late_null: list[Any] = [(b"k%d" % i, b"v%d" % i) for i in range(100)]
        late_null[50] = (None, b"v")
        null_batch = log.log_end_offset
        log.append(late_null, batch_size=big)
        log.append([Record(b"h%d" % i, b"v", headers=(("a", b"b"),) if i == 7 else ()) for i in range(20)], batch_size=big)
        for _ in range(3):
            log.append([(b"key", rng.randbytes(rng.randrange(100, 200))) for _ in range(50)], batch_size=big)
        log.append([(b"z", b"gz")] * 30, compression="gzip", batch_size=big)
        end = log.log_end_offset
        cuts = [(None, None), (0, 1200), (1150, 1250), (37, end - 10), (null_batch + 51, None), (null_batch + 100, None)]
        for start, stop in cuts:
            check_table(log.to_arrow(start, stop, use_threads=False), expected_rows(log, start, stop, "read_uncommitted"))
        assert log.to_arrow(null_batch + 100).column("key").null_count == 0


def test_a_batch_the_fast_walk_gives_up_on_fails_as_the_general_decoder_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An uncompressed batch declaring one record fewer than it holds (its CRC matching): the
    fast walk gives up, its rows are undone, and the general decoder's error is raised, the
    same as ``records()`` raises; the batches before and after it still read."""
    from kafka.record.util import calc_crc32c

    path = tmp_path / "damaged-0"
    with kafkalog.UnifiedLog.open(path) as log:
        for b in range(3):
            log.append([(b"k%d" % i, b"v" * 50) for i in range(10)])
    log_file = next(path.glob("*.log"))
    raw = bytearray(log_file.read_bytes())
    second = 12 + int.from_bytes(raw[8:12], "big")  # the second batch's position
    raw[second + 57 : second + 61] = (9).to_bytes(4, "big")
    end = second + 12 + int.from_bytes(raw[second + 8 : second + 12], "big")
    raw[second + 17 : second + 21] = calc_crc32c(bytes(raw[second + 21 : end])).to_bytes(4, "big")
    log_file.write_bytes(bytes(raw))
    with kafkalog.UnifiedLog.open(path, read_only=True) as log:
        with pytest.raises(CorruptRecordError) as general:
            list(log.records())
        with pytest.raises(type(general.value)) as arrow:
            log.to_arrow()
        assert str(arrow.value) == str(general.value)
        assert "remain after the 9 records" in str(arrow.value)
        # Cut in three (one piece a batch), the damaged piece's error is raised all the same.
        monkeypatch.setattr(arrow_read, "MIN_PIECE_BYTES", 1)
        monkeypatch.setattr(pa, "cpu_count", lambda: 3)
        with pytest.raises(type(general.value)) as threaded:
            log.to_arrow()
        assert str(threaded.value) == str(general.value)
        assert len(log.to_arrow(0, 10)) == 10 and len(log.to_arrow(20)) == 10
        monkeypatch.undo()
        # records() fails on these ranges too: its fetches decode the damaged batch.
        before = log.to_arrow(0, 10)
        assert before.column("offset").to_pylist() == list(range(10))
        assert before.column("key").to_pylist() == [b"k%d" % i for i in range(10)]
        after = log.to_arrow(20)
        assert after.column("offset").to_pylist() == list(range(20, 30))
        assert after.column("value").to_pylist() == [b"v" * 50] * 10


def segment(base: int, size: int) -> Any:
    return kafkalog.SegmentInfo(base, size, 0, -1, -1, f"/l/{base:020d}.log")


MIB = 1 << 20


def test_split_range_balances_bytes_across_segments() -> None:
    segments = [segment(0, 100 * MIB), segment(1000, 100 * MIB), segment(2000, 40 * MIB)]
    # 240 MiB in 4: 60 MiB each, placed by interpolating offsets within each segment.
    assert arrow_read.split_range(segments, 0, 3000, 3000, 4) == [(0, 600), (600, 1200), (1200, 1800), (1800, 3000)]
    # The range's own share of each segment (50 + 100 + 10 MiB: the last ends at the log end).
    assert arrow_read.split_range(segments, 500, 2500, 4000, 2) == [(500, 1300), (1300, 2500)]
    # No piece below MIN_PIECE_BYTES: 40 MiB gives two pieces, not eight; 10 MiB only one.
    assert len(arrow_read.split_range(segments, 0, 400, 3000, 8)) == 2
    assert arrow_read.split_range(segments, 0, 100, 3000, 8) == [(0, 100)]
    # An empty range, or a range past the segments, is one range.
    assert arrow_read.split_range(segments, 3000, 3000, 3000, 4) == [(3000, 3000)]
    assert arrow_read.split_range([], 0, 10, 10, 4) == [(0, 10)]


def test_split_range_never_cuts_twice_at_one_offset() -> None:
    # 64 MiB over 3 offsets: at most one piece per offset, however many threads.
    cuts = arrow_read.split_range([segment(7, 64 * MIB)], 7, 10, 10, 8)
    assert cuts == [(7, 8), (8, 9), (9, 10)]
    rng = random.Random(3)
    for _ in range(200):
        bases = sorted(rng.sample(range(1, 10_000), rng.randrange(0, 6)))
        segments = [segment(b, rng.randrange(0, 300 * MIB)) for b in [0, *bases]]
        end = rng.randrange(bases[-1] if bases else 0, 12_000) + 1
        first = rng.randrange(end)
        stop = rng.randrange(first, end + 1)
        ranges = arrow_read.split_range(segments, first, stop, end, rng.randrange(1, 9))
        assert ranges[0][0] == first and ranges[-1][1] == stop
        assert all(a < b == c for (a, b), (c, _) in zip(ranges, ranges[1:]))
