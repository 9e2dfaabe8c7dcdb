"""The Python API of kafkalog.UnifiedLog end to end: appends, Kafka's read semantics, Arrow
output with Spark's Kafka-source schema, segments, roll / flush / truncation / deleteRecords,
timestamp lookup, closing, read-only opens (also while another process writes), reopening, and
configuration errors."""

from __future__ import annotations

import datetime as dt
import gc
import os
import select
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

import kafkalog
from kafkalog import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AppendInfo,
    ConsumerRecord,
    Record,
    UnifiedLog,
)
from kafkalog.exceptions import (
    InvalidConfigError,
    KafkaLogError,
    LogClosedError,
    OffsetOutOfRangeError,
    ReadOnlyLogError,
)
from kit.manager import HANG_GUARD_S

BASE_TS = 1_700_000_000_000

SPARK_KAFKA_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
    ]
)


def sample_records(n: int, start_ts: int = BASE_TS, tag: str = "") -> list[Record]:
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else f"key-{i}{tag}".encode()
        value = None if i % 7 == 3 else (b"" if i % 7 == 4 else f"value-{i}{tag}".encode() * (1 + i % 3))
        headers: tuple = ()
        if i % 4 == 1:
            headers = (("h1", b"x"), ("nul", None), ("ключ-✓", b"\x00"))
        out.append(Record(key, value, headers, start_ts + i))
    return out


def rows(recs) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in recs]


def expected(recs: list[Record], first: int = 0) -> list[tuple]:
    return [(first + i, r.timestamp, r.key, r.value, tuple(r.headers)) for i, r in enumerate(recs)]


def batch_sizes(raw: bytes) -> list[tuple[int, int, int]]:
    """(base offset, last offset, size) of each v2 batch in ``raw``."""
    out, pos = [], 0
    while pos < len(raw):
        base = int.from_bytes(raw[pos : pos + 8], "big", signed=True)
        size = 12 + int.from_bytes(raw[pos + 8 : pos + 12], "big")
        delta = int.from_bytes(raw[pos + 23 : pos + 27], "big")
        out.append((base, base + delta, size))
        pos += size
    assert pos == len(raw)
    return out


@pytest.fixture
def log(tmp_path):
    with UnifiedLog.open(tmp_path / "orders-0") as lg:
        yield lg


# -- opening -------------------------------------------------------------------------------------


def test_open_as_context_manager_closes(tmp_path):
    with UnifiedLog.open(tmp_path / "orders-0") as lg:
        assert isinstance(lg, UnifiedLog)
        lg.append([(b"k", b"v")])
        assert (lg.topic, lg.partition) == ("orders", 0)
        assert lg.path == os.fspath(tmp_path / "orders-0")
        assert not lg.read_only
    with pytest.raises(LogClosedError):
        lg.read(0)
    lg.close()  # closing twice is harmless


def test_topic_and_partition_from_directory_name(tmp_path):
    with UnifiedLog.open(tmp_path / "my-dashed.topic_name-12") as lg:
        assert (lg.topic, lg.partition) == ("my-dashed.topic_name", 12)
        assert "my-dashed.topic_name-12" in repr(lg)
        lg.append([(b"k", b"v")])
        (r,) = lg.records()
        assert (r.topic, r.partition) == ("my-dashed.topic_name", 12)


@pytest.mark.parametrize("name", ["nodash", "topic-x", "topic-"])
def test_directory_name_must_be_topic_partition(tmp_path, name):
    with pytest.raises(KafkaLogError) as exc:
        UnifiedLog.open(tmp_path / name)
    assert name in str(exc.value)
    assert not (tmp_path / name).exists()


# -- appends -------------------------------------------------------------------------------------


def test_append_tuples_and_records(log):
    info = log.append(
        [
            (b"k0", b"v0"),
            Record(b"k1", b"v1", (("h", b"1"),), BASE_TS),
            ("text-key", "text-value"),  # str is UTF-8 encoded
            (bytearray(b"ba"), memoryview(b"mv")),
            (None, None),
        ]
    )
    assert isinstance(info, AppendInfo)
    recs = list(log.records())
    assert all(isinstance(r, ConsumerRecord) for r in recs)
    assert [(r.key, r.value) for r in recs] == [
        (b"k0", b"v0"),
        (b"k1", b"v1"),
        (b"text-key", b"text-value"),
        (b"ba", b"mv"),
        (None, None),
    ]
    assert recs[1].headers == (("h", b"1"),) and recs[1].timestamp == BASE_TS
    assert all(r.timestamp_type == 0 for r in recs)


def test_append_without_timestamp_uses_now(log):
    before = int(time.time() * 1000)
    log.append([(b"k", b"v")])
    after = int(time.time() * 1000)
    (r,) = log.records()
    assert before <= r.timestamp <= after


@pytest.mark.parametrize(
    "bad, exc",
    [
        ((b"k",), TypeError),
        ((b"k", b"v", b"extra"), TypeError),
        ((1, b"v"), TypeError),
        ((b"k", 2.5), TypeError),
        (Record(b"k", b"v", timestamp=-5), ValueError),
        (Record(b"k", b"v", headers=(("h", 3),)), TypeError),  # type: ignore[arg-type]
        # Header keys are strings in Kafka; bytes must not be stored as their repr "b'h'".
        (Record(b"k", b"v", headers=((b"h", b"x"),)), TypeError),  # type: ignore[arg-type]
        (Record(b"k", b"v", headers=((None, b"x"),)), TypeError),  # type: ignore[arg-type]
    ],
)
def test_append_rejects_bad_record_types(log, bad, exc):
    with pytest.raises(exc):
        log.append([bad])
    assert log.log_end_offset == 0


def test_append_rejects_unknown_compression(log):
    with pytest.raises(ValueError, match="brotli"):
        log.append([(b"k", b"v")], compression="brotli")
    assert log.log_end_offset == 0


def test_append_info_fields(log):
    first = log.append(sample_records(3))
    assert first == AppendInfo(
        first_offset=0,
        last_offset=2,
        max_timestamp=BASE_TS + 2,
        offset_of_max_timestamp=2,
        log_append_time=-1,
        log_start_offset=0,
        record_count=3,
        batch_count=1,
        valid_bytes=first.valid_bytes,
    )
    assert first.valid_bytes == len(log.read(0).records_bytes)

    # Several batches (batch_size splits them); the max timestamp sits in the first one.
    recs = [Record(b"k%d" % i, b"x" * 200, (), BASE_TS + (1000 if i == 1 else i)) for i in range(12)]
    info = log.append(recs, batch_size=600, leader_epoch=2)
    assert (info.first_offset, info.last_offset, info.record_count) == (3, 14, 12)
    assert info.max_timestamp == BASE_TS + 1000
    raw = log.read(3).records_bytes
    batches = batch_sizes(raw)
    assert info.batch_count == len(batches) > 1
    assert info.valid_bytes == sum(size for *_, size in batches)
    holder = next(b for b in batches if b[0] <= 4 <= b[1])
    assert holder[0] <= info.offset_of_max_timestamp <= holder[1]
    assert info.log_start_offset == 0


def test_append_info_log_append_time(tmp_path):
    with UnifiedLog.open(tmp_path / "lat-0", {"message.timestamp.type": "LogAppendTime"}) as lg:
        before = int(time.time() * 1000)
        info = lg.append(sample_records(4))
        after = int(time.time() * 1000)
        assert before <= info.log_append_time <= after
        assert info.max_timestamp == info.log_append_time
        recs = list(lg.records())
        assert {(r.timestamp, r.timestamp_type) for r in recs} == {(info.log_append_time, 1)}


# -- read ----------------------------------------------------------------------------------------


@pytest.fixture
def three_batches(log):
    """Three single-batch appends: offsets [0, 4), [4, 8), [8, 12)."""
    for b in range(3):
        log.append(sample_records(4, start_ts=BASE_TS + 100 * b, tag=f"b{b}"))
    return log


def test_read_returns_whole_batches_from_the_one_holding_the_offset(three_batches):
    lg = three_batches
    full = lg.read(0).records_bytes
    sizes = batch_sizes(full)
    assert [(b, l) for b, l, _ in sizes] == [(0, 3), (4, 7), (8, 11)]

    result = lg.read(5)
    assert result.records_bytes == full[sizes[0][2] :]
    assert [r.offset for r in result.records] == list(range(5, 12))
    assert (result.high_watermark, result.log_start_offset, result.log_end_offset) == (12, 0, 12)
    assert kafkalog.decode_batches(result.records_bytes)[0][0] == 4


def test_read_max_bytes_and_min_one_message(three_batches):
    lg = three_batches
    sizes = batch_sizes(lg.read(0).records_bytes)
    one, two = sizes[0][2], sizes[0][2] + sizes[1][2]

    # Never a partial batch: as many whole batches as fit.
    assert [r.offset for r in lg.read(0, max_bytes=two).records] == list(range(8))
    assert [r.offset for r in lg.read(0, max_bytes=two + 10).records] == list(range(8))
    assert [r.offset for r in lg.read(0, max_bytes=two - 1).records] == list(range(4))
    assert len(lg.read(0, max_bytes=one).records_bytes) == one
    # A first batch larger than max_bytes: returned whole with min_one_message, else nothing.
    assert [r.offset for r in lg.read(1, max_bytes=1).records] == [1, 2, 3]
    assert len(lg.read(1, max_bytes=1).records_bytes) == one
    empty = lg.read(1, max_bytes=1, min_one_message=False)
    assert empty.records_bytes == b"" and empty.records == []


def test_read_bounds(three_batches):
    lg = three_batches
    at_end = lg.read(12)
    assert at_end.records_bytes == b"" and at_end.records == []
    with pytest.raises(OffsetOutOfRangeError, match="13"):
        lg.read(13)
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(-1)
    lg.delete_records(6)
    with pytest.raises(OffsetOutOfRangeError, match="5"):
        lg.read(5)
    assert [r.offset for r in lg.read(6).records] == list(range(6, 12))


def test_read_isolation_high_watermark_vs_log_end(three_batches):
    lg = three_batches
    assert lg.high_watermark == 12  # follows the log end by default
    assert lg.set_high_watermark(4) == 4
    assert [r.offset for r in lg.read(0).records] == [0, 1, 2, 3]
    assert [r.offset for r in lg.read(0, isolation="read_uncommitted").records] == [0, 1, 2, 3]
    assert lg.read(4).records == []  # nothing committed at or after the high watermark
    assert [r.offset for r in lg.read(4, isolation="log_end").records] == list(range(4, 12))
    assert [r.offset for r in lg.read(0, isolation="log_end").records] == list(range(12))
    assert [r.offset for r in lg.records()] == [0, 1, 2, 3]
    assert [r.offset for r in lg.records(isolation="log_end")] == list(range(12))
    assert lg.to_arrow().num_rows == 4
    assert lg.to_arrow(isolation="log_end").num_rows == 12

    # The high watermark no longer follows appends once set, and is clamped to the log.
    lg.append([(b"k", b"v")])
    assert lg.high_watermark == 4
    assert lg.set_high_watermark(100) == 13
    lg.delete_records(2)
    assert lg.set_high_watermark(1) == 2
    assert lg.high_watermark == 2
    # No offset is negative: refused (issue 12), where it used to be clamped too.
    with pytest.raises(kafkalog.InvalidArgumentError, match=r"\[0, 9223372036854775807\]"):
        lg.set_high_watermark(-5)
    assert lg.high_watermark == 2


def test_read_committed_without_transactions_reads_as_read_uncommitted(three_batches):
    """A log with no transactional data: read_committed serves what read_uncommitted serves
    (it used to be refused), and an unknown isolation is still a clear ValueError."""
    lg = three_batches
    committed, uncommitted = lg.read(0, isolation="read_committed"), lg.read(0)
    assert committed.records == uncommitted.records and committed.records_bytes == uncommitted.records_bytes
    assert committed.aborted_transactions == [] and uncommitted.aborted_transactions is None
    assert list(lg.records(isolation="read_committed")) == list(lg.records())
    assert lg.to_arrow(isolation="read_committed").equals(lg.to_arrow())
    with pytest.raises(ValueError, match="bogus"):
        lg.read(0, isolation="bogus")


def test_records_start_end(three_batches):
    lg = three_batches
    assert [r.offset for r in lg.records()] == list(range(12))
    assert [r.offset for r in lg.records(5)] == list(range(5, 12))
    assert [r.offset for r in lg.records(5, 9)] == [5, 6, 7, 8]
    assert [r.offset for r in lg.records(end=1)] == [0]
    assert list(lg.records(7, 7)) == []
    assert list(lg.records(12)) == []
    lg.delete_records(3)
    assert [r.offset for r in lg.records(0, 5)] == [3, 4]


def test_records_spanning_many_reads(tmp_path):
    # More than one 1 MiB read, across segments.
    with UnifiedLog.open(tmp_path / "big-0", {"internal.segment.bytes": 300_000}) as lg:
        payload = os.urandom(1000)
        for i in range(30):
            lg.append([(b"%d" % (i * 100 + j), payload) for j in range(100)])
        got = [(r.offset, r.key) for r in lg.records()]
        assert got == [(i, b"%d" % i) for i in range(3000)]
        assert len(lg.segments) > 5


# -- arrow ---------------------------------------------------------------------------------------


def test_to_arrow_schema_is_sparks_kafka_source(log):
    log.append(sample_records(3))
    table = log.to_arrow()
    assert table.schema == SPARK_KAFKA_SCHEMA
    assert kafkalog.KAFKA_SCHEMA == SPARK_KAFKA_SCHEMA
    empty = UnifiedLog.to_arrow(log, start=3)
    assert empty.num_rows == 0 and empty.schema == SPARK_KAFKA_SCHEMA


def test_to_arrow_on_empty_log(log):
    table = log.to_arrow()
    assert table.num_rows == 0
    assert table.schema == SPARK_KAFKA_SCHEMA


def arrow_rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()


def records_as_arrow_rows(recs) -> list[dict]:
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
        for r in recs
    ]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_to_arrow_contents_equal_records(tmp_path, codec):
    with UnifiedLog.open(tmp_path / "arrow-7", {"internal.segment.bytes": 2000}) as lg:
        for b in range(8):
            lg.append(sample_records(11, start_ts=BASE_TS + 1000 * b, tag=f"/{b}"), compression=codec, batch_size=400)
        recs = list(lg.records())
        table = lg.to_arrow()
        assert table.num_rows == len(recs) == 88
        assert len(lg.segments) > 1
        got = arrow_rows(table)
        want = records_as_arrow_rows(recs)
        assert got == want
        # Timestamps keep their milliseconds, as microseconds.
        assert table.column("timestamp").cast(pa.int64()).to_pylist() == [r.timestamp * 1000 for r in recs]
        assert table.column("key").null_count == sum(r.key is None for r in recs) > 0
        assert table.column("value").null_count == sum(r.value is None for r in recs) > 0
        assert set(table.column("topic").to_pylist()) == {"arrow"}
        assert set(table.column("partition").to_pylist()) == {7}
        # A range: [start, end), starting mid-batch.
        sub = lg.to_arrow(13, 40)
        assert sub.column("offset").to_pylist() == list(range(13, 40))
        assert arrow_rows(sub) == want[13:40]


def test_to_arrow_log_append_time(tmp_path):
    with UnifiedLog.open(tmp_path / "lat-0", {"message.timestamp.type": "LogAppendTime"}) as lg:
        info = lg.append(sample_records(3))
        table = lg.to_arrow()
        assert table.column("timestampType").to_pylist() == [1, 1, 1]
        assert table.column("timestamp").cast(pa.int64()).to_pylist() == [info.log_append_time * 1000] * 3


def test_iter_arrow_tiny_chunks_give_same_rows(tmp_path):
    with UnifiedLog.open(tmp_path / "chunks-0", {"internal.segment.bytes": 1500}) as lg:
        for b in range(10):
            lg.append(sample_records(6, tag=str(b)), compression="lz4" if b % 2 else "none")
        whole = lg.to_arrow()
        chunks = list(lg.iter_arrow(max_chunk_bytes=1))
        assert len(chunks) > 5
        assert all(isinstance(c, pa.RecordBatch) and c.schema == SPARK_KAFKA_SCHEMA for c in chunks)
        assert all(c.num_rows > 0 for c in chunks)
        assert pa.Table.from_batches(chunks).equals(whole)
        # Mid-batch start and end with tiny chunks.
        part = pa.Table.from_batches(list(lg.iter_arrow(8, 47, max_chunk_bytes=1)), schema=SPARK_KAFKA_SCHEMA)
        assert part.column("offset").to_pylist() == list(range(8, 47))
        assert part.equals(whole.slice(8, 39))


def test_arrow_never_returns_records_below_log_start(three_batches):
    lg = three_batches
    lg.delete_records(6)
    assert lg.to_arrow().column("offset").to_pylist() == list(range(6, 12))
    # An explicit start below the log start is clamped, as records() does.
    assert [r.offset for r in lg.records(0)] == list(range(6, 12))
    assert lg.to_arrow(0).column("offset").to_pylist() == list(range(6, 12))
    assert lg.to_arrow(2, 8).column("offset").to_pylist() == [6, 7]
    chunks = list(lg.iter_arrow(0, max_chunk_bytes=1))
    assert [o for c in chunks for o in c.column(4).to_pylist()] == list(range(6, 12))


# -- segments, roll, flush ----------------------------------------------------------------------


def test_segments_property(tmp_path):
    with UnifiedLog.open(tmp_path / "segs-0", {"internal.segment.bytes": 600}) as lg:
        total = 0
        for b in range(12):
            recs = sample_records(3 + b % 4, start_ts=BASE_TS + 10_000 * b, tag=str(b))
            lg.append(recs)
            total += len(recs)
        segs = lg.segments
        assert len(segs) > 3
        assert sum(s.record_count for s in segs) == total
        bases = [s.base_offset for s in segs]
        assert bases == sorted(set(bases)) and bases[0] == 0
        assert sum(s.size for s in segs) == lg.size_in_bytes
        for s, nxt in zip(segs, bases[1:] + [lg.log_end_offset]):
            assert Path(s.path).name == f"{s.base_offset:020d}.log"
            assert Path(s.path).stat().st_size == s.size
            assert s.record_count == nxt - s.base_offset  # no gaps: nothing compacted
            seg_recs = list(lg.records(s.base_offset, nxt))
            assert s.max_timestamp == max(r.timestamp for r in seg_recs)
            first_batch = batch_sizes(lg.read(s.base_offset, max_bytes=1).records_bytes)[0]
            assert s.first_batch_timestamp == max(
                r.timestamp for r in seg_recs if r.offset <= first_batch[1]
            )


def test_roll(log):
    log.append(sample_records(5))
    assert log.roll() == 5
    segs = log.segments
    assert [(s.base_offset, s.record_count) for s in segs] == [(0, 5), (5, 0)]
    assert segs[1].first_batch_timestamp == -1 and segs[1].max_timestamp == -1
    # Rolling an empty active segment at the same offset keeps one segment there.
    assert log.roll() == 5
    assert [s.base_offset for s in log.segments] == [0, 5]
    log.append(sample_records(2))
    assert [(s.base_offset, s.record_count) for s in log.segments] == [(0, 5), (5, 2)]
    assert [r.offset for r in log.records()] == list(range(7))


def test_flush_advances_recovery_point(log):
    assert log.recovery_point == 0
    log.append(sample_records(5))
    assert log.recovery_point == 0  # flush.messages is unbounded by default
    log.flush()
    assert log.recovery_point == 5
    log.append(sample_records(2))
    assert log.recovery_point == 5
    log.flush()
    assert log.recovery_point == 7


def test_flush_messages_config_flushes_on_append(tmp_path):
    with UnifiedLog.open(tmp_path / "fm-0", {"flush.messages": 3}) as lg:
        lg.append(sample_records(2))
        assert lg.recovery_point == 0
        lg.append(sample_records(2))
        assert lg.recovery_point == 4


# -- truncation and deleteRecords ------------------------------------------------------------------


def test_truncate_to(tmp_path):
    with UnifiedLog.open(tmp_path / "trunc-0", {"internal.segment.bytes": 600}) as lg:
        for b in range(10):
            lg.append(sample_records(4, tag=str(b)))
        assert lg.log_end_offset == 40
        assert lg.truncate_to(40) is False
        assert lg.truncate_to(99) is False
        assert lg.truncate_to(12) is True
        assert (lg.log_end_offset, lg.high_watermark) == (12, 12)
        assert [r.offset for r in lg.records()] == list(range(12))
        segs = lg.segments
        assert segs[-1].base_offset <= 12
        assert sum(s.record_count for s in segs) == 12
        # Segments above the target are gone (Kafka renames them *.deleted before removing them).
        remaining = sorted(p.name for p in (tmp_path / "trunc-0").glob("*.log"))
        assert remaining == [Path(s.path).name for s in segs]
        info = lg.append(sample_records(2, tag="new"))
        assert info.first_offset == 12
        assert [r.key for r in lg.records(12)] == [None, b"key-1new"]
        with pytest.raises(KafkaLogError):
            lg.truncate_to(-1)


def test_truncate_lowers_high_watermark_and_recovery_point(log):
    log.append(sample_records(10))
    log.flush()
    log.set_high_watermark(8)
    assert log.recovery_point == 10
    log.truncate_to(0)
    assert (log.log_end_offset, log.high_watermark, log.recovery_point) == (0, 0, 0)
    assert list(log.records()) == []


def test_delete_records(three_batches):
    lg = three_batches
    assert lg.delete_records(5) == 5
    assert lg.log_start_offset == 5
    assert [r.offset for r in lg.records()] == list(range(5, 12))
    assert lg.delete_records(2) == 5  # never moves backwards
    assert lg.delete_records(12) == 12  # up to the high watermark is allowed
    assert list(lg.records()) == []
    assert lg.read(12).records == []
    info = lg.append([(b"k", b"v")])
    assert info.first_offset == 12 and info.log_start_offset == 12


def test_delete_records_past_high_watermark_raises(three_batches):
    lg = three_batches
    with pytest.raises(OffsetOutOfRangeError, match="13"):
        lg.delete_records(13)
    lg.set_high_watermark(4)
    with pytest.raises(OffsetOutOfRangeError):
        lg.delete_records(5)
    assert lg.log_start_offset == 0
    assert lg.delete_records(4) == 4


# -- timestamps ----------------------------------------------------------------------------------


def test_offset_for_timestamp(tmp_path):
    # Non-monotonic timestamps across batches and segments.
    stamps = [BASE_TS + (i * 37) % 100 for i in range(60)]
    with UnifiedLog.open(tmp_path / "ts-0", {"internal.segment.bytes": 800, "index.interval.bytes": 64}) as lg:
        for b in range(0, 60, 5):
            lg.append([Record(b"k%d" % i, b"v" * 20, (), stamps[i]) for i in range(b, b + 5)], leader_epoch=7)
        assert len(lg.segments) > 2

        earliest = lg.offset_for_timestamp(EARLIEST_TIMESTAMP)
        assert earliest.offset == 0
        latest = lg.offset_for_timestamp(LATEST_TIMESTAMP)
        assert latest.offset == 60
        top = max(stamps)
        mx = lg.offset_for_timestamp(MAX_TIMESTAMP)
        assert (mx.timestamp, mx.offset) == (top, stamps.index(top))

        for target in [BASE_TS - 5, BASE_TS, BASE_TS + 1, BASE_TS + 50, BASE_TS + 98, top]:
            found = lg.offset_for_timestamp(target)
            first = next(i for i, t in enumerate(stamps) if t >= target)
            assert (found.timestamp, found.offset) == (stamps[first], first), target
            assert found.leader_epoch == 7
        assert lg.offset_for_timestamp(top + 1) is None

        lg.delete_records(30)
        assert lg.offset_for_timestamp(EARLIEST_TIMESTAMP).offset == 30
        found = lg.offset_for_timestamp(BASE_TS)
        first = next(i for i, t in enumerate(stamps) if i >= 30 and t >= BASE_TS)
        assert found.offset == first


def test_offset_for_timestamp_empty_log(log):
    assert log.offset_for_timestamp(BASE_TS) is None
    assert log.offset_for_timestamp(MAX_TIMESTAMP) is None
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP).offset == 0
    assert log.offset_for_timestamp(LATEST_TIMESTAMP).offset == 0


# -- close ---------------------------------------------------------------------------------------


CALLS_AFTER_CLOSE = {
    "append": lambda lg: lg.append([(b"k", b"v")]),
    "append_batch": lambda lg: lg.append_batch(b""),
    "append_as_follower": lambda lg: lg.append_as_follower(b""),
    "read": lambda lg: lg.read(0),
    "records": lambda lg: list(lg.records(0, 1)),
    "to_arrow": lambda lg: lg.to_arrow(),
    "iter_arrow": lambda lg: list(lg.iter_arrow()),
    "roll": lambda lg: lg.roll(),
    "flush": lambda lg: lg.flush(),
    "truncate_to": lambda lg: lg.truncate_to(0),
    "truncate_fully_and_start_at": lambda lg: lg.truncate_fully_and_start_at(0),
    "delete_records": lambda lg: lg.delete_records(0),
    "set_high_watermark": lambda lg: lg.set_high_watermark(0),
    "offset_for_timestamp": lambda lg: lg.offset_for_timestamp(0),
    "segments": lambda lg: lg.segments,
    "assign_topic_id": lambda lg: lg.assign_topic_id("AAAAAAAAAAAAAAAAAAAAAQ"),
}


@pytest.mark.parametrize("call", list(CALLS_AFTER_CLOSE), ids=list(CALLS_AFTER_CLOSE))
def test_every_call_after_close_raises_log_closed(tmp_path, call):
    lg = UnifiedLog.open(tmp_path / "closed-0")
    lg.append(sample_records(3))
    lg.close()
    with pytest.raises(LogClosedError, match="closed"):
        CALLS_AFTER_CLOSE[call](lg)
    assert lg.log_end_offset == 3 and lg.high_watermark == 3


# -- read-only -----------------------------------------------------------------------------------


def test_read_only_open(tmp_path, snapshot_dir):
    path = tmp_path / "ro-0"
    with UnifiedLog.open(path, {"internal.segment.bytes": 700}) as lg:
        for b in range(6):
            lg.append(sample_records(5, tag=str(b)), compression="gzip" if b % 2 else "none")
        written = rows(lg.records())
    before = snapshot_dir(path)

    with UnifiedLog.open(path, read_only=True) as ro:
        assert ro.read_only
        assert rows(ro.records()) == written
        assert ro.log_end_offset == ro.high_watermark == 30
        assert ro.to_arrow().num_rows == 30
        assert len(ro.segments) > 1
        assert ro.offset_for_timestamp(MAX_TIMESTAMP) is not None
        for write in (
            lambda: ro.append([(b"k", b"v")]),
            lambda: ro.append_batch(ro.read(0).records_bytes),
            lambda: ro.roll(),
            lambda: ro.flush(),
            lambda: ro.truncate_to(3),
            lambda: ro.truncate_fully_and_start_at(100),
            lambda: ro.delete_records(3),
            lambda: ro.assign_topic_id("AAAAAAAAAAAAAAAAAAAAAQ"),
        ):
            with pytest.raises(ReadOnlyLogError):
                write()
        assert rows(ro.records()) == written
    assert snapshot_dir(path) == before


WRITER = textwrap.dedent(
    """
    import sys, kafkalog
    path, batches, stops = sys.argv[1], int(sys.argv[2]), {int(n) for n in sys.argv[3].split(",")}
    config = {"internal.segment.bytes": 4096, "index.interval.bytes": 128}
    with kafkalog.UnifiedLog.open(path, config) as log:
        for i in range(batches):
            recs = [(b"k%d" % (3 * i + j), b"v%d|" % (3 * i + j) * 8) for j in range(3)]
            log.append(recs, compression=["none", "lz4", "zstd"][i % 3])
            if i + 1 in stops:
                # Paused: the reader sees exactly i + 1 batches, then says go on.
                print("at", i + 1, flush=True)
                sys.stdin.readline()
    """
)


RACING_READS = 50
"""Reads per phase that race the writer's appends (the stops, not their count, prove growth)."""


def test_read_only_reader_sees_consistent_prefix_while_another_process_appends(tmp_path):
    """Read-only opens while another process appends see whole batches, a contiguous prefix,
    never less than before. Between the writer's stops the reads race its appends; at each stop
    (a pipe handshake) the writer waits, so the reader sees the log grow on any machine."""
    path = tmp_path / "live-0"
    stops = [1, 800, 1600]
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), "2500", ",".join(map(str, stops))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
    )
    assert writer.stdin is not None and writer.stdout is not None

    def observe() -> int:
        with UnifiedLog.open(path, read_only=True) as ro:
            recs = list(ro.records())
            leo = ro.log_end_offset
            arrow_offsets = ro.to_arrow(0, leo).column("offset").to_pylist()
        n = len(recs)
        assert n % 3 == 0, "a reader must see whole batches only"
        assert leo == n, "records() must reach the log end the reader opened with"
        assert [r.offset for r in recs] == list(range(n))
        assert all(r.key == b"k%d" % r.offset and r.value == b"v%d|" % r.offset * 8 for r in recs)
        assert arrow_offsets[:n] == list(range(n))
        seen.append(n)
        return n

    seen: list[int] = []
    paused_at = []
    try:
        # The first stop is the writer's "ready": the log exists from then on.
        ready, _, _ = select.select([writer.stdout], [], [], HANG_GUARD_S)
        assert ready, "the writer did not start"
        while True:
            # Race the writer's appends with a bounded number of reads, then wait for its stop.
            for _ in range(RACING_READS):
                if select.select([writer.stdout], [], [], 0)[0]:
                    break
                observe()  # while the writer appends
            ready, _, _ = select.select([writer.stdout], [], [], HANG_GUARD_S)
            assert ready, f"the writer neither stopped nor finished within {HANG_GUARD_S}s"
            line = writer.stdout.readline()
            if not line:
                break  # the writer is done
            batches = int(line.split()[1])
            assert observe() == 3 * batches, f"paused after {batches} batches"
            paused_at.append(batches)
            writer.stdin.write(b"go\n")
            writer.stdin.flush()
        assert writer.wait(timeout=HANG_GUARD_S) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        writer.stdin.close()
        writer.stdout.close()
    assert paused_at == stops
    assert seen == sorted(seen), seen
    assert len(set(seen)) >= len(stops), "the reader should have seen the log grow"
    with UnifiedLog.open(path, read_only=True) as ro:
        assert ro.log_end_offset == 7500
        assert [r.offset for r in ro.records()] == list(range(7500))


# -- replication and threads ---------------------------------------------------------------------


def test_append_as_follower_copies_the_leader_byte_for_byte(tmp_path):
    config = {"internal.segment.bytes": 2000}
    with UnifiedLog.open(tmp_path / "lead-0", config) as leader, UnifiedLog.open(tmp_path / "follow-0", config) as follower:
        for b in range(20):
            leader.append(sample_records(3, tag=str(b)), compression=["none", "gzip", "zstd"][b % 3], leader_epoch=5)
        while follower.log_end_offset < leader.log_end_offset:
            chunk = leader.read(follower.log_end_offset, max_bytes=500, isolation="log_end").records_bytes
            info = follower.append_as_follower(chunk)
            assert info.first_offset == follower.log_end_offset - info.record_count
        assert rows(follower.records()) == rows(leader.records())
        # Offsets below the follower's log end are refused, and nothing changes.
        with pytest.raises(kafkalog.exceptions.InvalidOffsetError):
            follower.append_as_follower(leader.read(0, max_bytes=1).records_bytes)
        assert follower.log_end_offset == leader.log_end_offset
        assert len(leader.segments) > 1
    leader_logs = sorted((tmp_path / "lead-0").glob("*.log"))
    assert [p.name for p in leader_logs] == sorted(p.name for p in (tmp_path / "follow-0").glob("*.log"))
    for p in leader_logs:
        assert (tmp_path / "follow-0" / p.name).read_bytes() == p.read_bytes(), p.name


def test_concurrent_appends_and_reads(tmp_path):
    """The handle is thread-safe: appends serialise, reads see whole appends only."""
    writers, appends_each = 4, 60
    errors: list[BaseException] = []
    done = threading.Event()
    with UnifiedLog.open(tmp_path / "threads-0", {"internal.segment.bytes": 4000}) as lg:

        def write(w: int) -> None:
            try:
                for n in range(appends_each):
                    info = lg.append([(b"w%d" % w, b"%d-%d" % (n, j)) for j in range(3)], compression="lz4")
                    assert info.last_offset - info.first_offset == 2
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        def read() -> None:
            try:
                while not done.is_set():
                    recs = list(lg.records())
                    assert [r.offset for r in recs] == list(range(len(recs)))
                    assert len(recs) % 3 == 0
                    table = lg.to_arrow(0, len(recs))
                    assert table.column("offset").to_pylist() == list(range(len(recs)))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        readers = [threading.Thread(target=read) for _ in range(2)]
        for t in threads + readers:
            t.start()
        for t in threads:
            t.join()
        done.set()
        for t in readers:
            t.join()
        assert not errors, errors
        recs = list(lg.records())
    assert len(recs) == writers * appends_each * 3
    for w in range(writers):
        mine = [r.value for r in recs if r.key == b"w%d" % w]
        # Each writer's appends land whole and in its own order.
        assert mine == [b"%d-%d" % (n, j) for n in range(appends_each) for j in range(3)]


# -- reopen --------------------------------------------------------------------------------------


def test_reopen_keeps_everything(tmp_path):
    path = tmp_path / "reopen-0"
    config = {"internal.segment.bytes": 900, "index.interval.bytes": 100}
    with UnifiedLog.open(path, config) as lg:
        for b in range(9):
            lg.append(sample_records(4, start_ts=BASE_TS + 1000 * b, tag=str(b)), compression="snappy")
        lg.assign_topic_id("AQIDBAUGBwgJCgsMDQ4PEA")
        written = rows(lg.records())
        segs = [(s.base_offset, s.size, s.record_count, s.first_batch_timestamp, s.max_timestamp) for s in lg.segments]
        mx = lg.offset_for_timestamp(MAX_TIMESTAMP)
        at = lg.offset_for_timestamp(BASE_TS + 3000)
        table = lg.to_arrow()
    with UnifiedLog.open(path, config) as lg:
        assert rows(lg.records()) == written
        assert (lg.log_start_offset, lg.high_watermark, lg.log_end_offset) == (0, 36, 36)
        # The close recorded itself (kafkalog-clean-close): the reopen recovered nothing and
        # everything is on disk, as after Kafka's clean shutdown.
        assert lg.recovery_point == 36
        assert not (path / "kafkalog-clean-close").exists(), "taken by the writable open"
        assert [(s.base_offset, s.size, s.record_count, s.first_batch_timestamp, s.max_timestamp) for s in lg.segments] == segs
        assert lg.topic_id == "AQIDBAUGBwgJCgsMDQ4PEA"
        assert lg.offset_for_timestamp(MAX_TIMESTAMP) == mx
        assert lg.offset_for_timestamp(BASE_TS + 3000) == at
        assert lg.to_arrow().equals(table)
        assert lg.append([(b"after", b"reopen")]).first_offset == 36


def test_reopen_after_a_crash_recovers_the_active_segment(tmp_path):
    """Without a clean close (the handle dropped, as a crash leaves it) the reopen recovers the
    active segment: the recovery point restarts at its base (Kafka's LogLoader) and the next
    flush moves it on."""
    path = tmp_path / "crash-0"
    config = {"internal.segment.bytes": 900, "index.interval.bytes": 100}
    lg = UnifiedLog.open(path, config)
    for b in range(9):
        lg.append(sample_records(4, start_ts=BASE_TS + 1000 * b, tag=str(b)))
    written = rows(lg.records())
    del lg
    gc.collect()
    assert not (path / "kafkalog-clean-close").exists()
    with UnifiedLog.open(path, config) as lg:
        assert rows(lg.records()) == written
        assert lg.recovery_point == lg.segments[-1].base_offset < 36
        lg.flush()
        assert lg.recovery_point == 36


def test_standalone_log_start_offset_restarts_at_first_segment_after_reopen(tmp_path):
    """A standalone log keeps no log-start-offset-checkpoint (Kafka's LogManager writes that file
    for the logs it manages): after a reopen the log starts at its first segment's base offset,
    so records deleted inside a segment with delete_records are readable again. Segments wholly
    below the log start offset are gone for good once retention removes them."""
    path = tmp_path / "deleted-0"
    with UnifiedLog.open(path) as lg:
        lg.append(sample_records(10))
        assert lg.delete_records(6) == 6
        assert [r.offset for r in lg.records()] == [6, 7, 8, 9]
    with UnifiedLog.open(path) as lg:
        assert lg.log_start_offset == 0
        assert [r.offset for r in lg.records()] == list(range(10))


# -- config --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, value, rule",
    [
        ("segment.bytes", 10, "1048576"),
        ("segment.bytes", "lots", None),
        ("cleanup.policy", "bogus", "compact"),
        ("unknown.key", "x", "known keys: cleanup.policy"),
        ("min.cleanable.dirty.ratio", 2, "1.0"),
        ("index.interval.bytes", -1, "0"),
        ("message.timestamp.type", "WallClock", "LogAppendTime"),
        ("compression.type", "brotli", "zstd"),
        ("preallocate", "maybe", None),
        ("message.format.version", "3.0", "removed"),
    ],
)
def test_invalid_config_names_key_value_and_rule(tmp_path, key, value, rule):
    path = tmp_path / "cfg-0"
    with pytest.raises(InvalidConfigError) as exc:
        UnifiedLog.open(path, {key: value})
    assert isinstance(exc.value, ValueError)
    message = str(exc.value)
    assert key in message
    assert str(value) in message
    if rule is not None:
        assert rule in message
    assert not path.exists(), "a rejected config must not create the directory"


def test_config_property_round_trips(tmp_path):
    given = {
        "segment.bytes": 2 << 20,
        "internal.segment.bytes": 5000,
        "cleanup.policy": ["compact", "delete"],
        "preallocate": True,
        "retention.ms": -1,
        "min.cleanable.dirty.ratio": 0.25,
        "message.timestamp.type": "LogAppendTime",
        "compression.type": "zstd",
    }
    with UnifiedLog.open(tmp_path / "cfg-0", given) as lg:
        config = lg.config
    assert config["segment.bytes"] == str(2 << 20)
    assert config["internal.segment.bytes"] == "5000"
    assert config["cleanup.policy"] == "compact,delete"
    assert config["preallocate"] == "true"
    assert config["retention.ms"] == "-1"
    assert config["min.cleanable.dirty.ratio"] == "0.25"
    assert config["message.timestamp.type"] == "LogAppendTime"
    assert config["compression.type"] == "zstd"
    # Kafka 4.x defaults for keys not given.
    assert config["retention.bytes"] == "-1"
    assert config["max.message.bytes"] == "1048588"
    assert config["segment.ms"] == "604800000"
    assert config["index.interval.bytes"] == "4096"
    with UnifiedLog.open(tmp_path / "cfg-1", config) as lg:
        assert lg.config == config
    with UnifiedLog.open(tmp_path / "cfg-2") as lg:
        defaults = lg.config
    assert "internal.segment.bytes" not in defaults
    assert defaults["cleanup.policy"] == "delete"
    assert defaults["segment.bytes"] == "1073741824"
    assert set(defaults) | {"internal.segment.bytes"} == set(config)


def test_config_is_applied(tmp_path):
    with UnifiedLog.open(tmp_path / "small-0", {"max.message.bytes": 2000}) as lg:
        with pytest.raises(kafkalog.RecordBatchTooLargeError, match="2000"):
            lg.append([(b"k", os.urandom(5000))])
        assert lg.log_end_offset == 0
    with UnifiedLog.open(tmp_path / "compact-0", {"cleanup.policy": "compact"}) as lg:
        with pytest.raises(kafkalog.exceptions.InvalidRecordError):
            lg.append([(None, b"no key on a compacted topic")])
        assert lg.log_end_offset == 0


def test_truncate_fully_and_start_at(log):
    log.append(sample_records(5))
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    assert [s.base_offset for s in log.segments] == [100]
    assert log.append([(b"k", b"v")]).first_offset == 100
    assert [r.offset for r in log.records()] == [100]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0)



def test_arrow_columns_outlive_the_log_and_are_read_only(tmp_path):
    """to_arrow hands the engine's buffers to Arrow without copying: the table must stay valid
    after the log is closed and collected, and nobody may write through the buffers."""
    import gc

    records = sample_records(50)
    with UnifiedLog.open(tmp_path / "zero-0") as lg:
        lg.append(records)
        table = lg.to_arrow()
    del lg
    gc.collect()
    assert table.column("key").to_pylist() == [r.key for r in records]
    assert table.column("value").to_pylist() == [r.value for r in records]
    buf = table.column("value").chunk(0).buffers()[2]
    with pytest.raises(TypeError):
        memoryview(buf)[0] = 1


def test_second_writer_in_another_process_gets_log_dir_locked(tmp_path):
    """A writable open locks the partition directory: another process cannot open it for
    writing (LogDirLockedError), but may read it; the lock goes with close."""
    path = tmp_path / "locked-0"
    script = textwrap.dedent(
        f"""
        import kafkalog
        from kafkalog.exceptions import LogDirLockedError
        try:
            kafkalog.UnifiedLog.open({str(path)!r})
        except LogDirLockedError as e:
            assert "locked" in str(e)
            print("locked")
        with kafkalog.UnifiedLog.open({str(path)!r}, read_only=True) as ro:
            print(ro.log_end_offset)
        """
    )
    with UnifiedLog.open(path) as lg:
        lg.append(sample_records(3))
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
        assert out.split() == ["locked", "3"]
    with UnifiedLog.open(path) as lg:
        assert lg.log_end_offset == 3
