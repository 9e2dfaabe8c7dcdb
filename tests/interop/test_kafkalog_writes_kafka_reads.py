"""Direction B: kafkalog writes, real Kafka reads.

kafkalog writes partition directories (every codec, CreateTime and LogAppendTime, tombstones,
null and empty keys, headers, several batches and segments, a small index.interval.bytes so the
indexes have many entries). Then Kafka's own tools check them:

- DumpLogSegments (kafka-dump-log.sh) with --deep-iteration --index-sanity-check
  --print-data-log over every .log/.index/.timeindex, and --verify-index-only over every index:
  no problem line (see kafka_harness.DumpResult.problems) and the printed batches and records
  (offsets, timestamps and type, key/value sizes, header keys, keys and values through
  StringDecoder) equal what kafkalog wrote;
- java/SegmentRecords.java, Kafka's FileRecords with CRC checks: the exact bytes of every key,
  value and header equal what kafkalog wrote.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

import kafkalog
from kafkalog import Record
from kit.files import segment_files
from kit.kafka_harness import (
    KafkaJars,
    consume_all,
    create_topic,
    dump_log_segments,
    index_mismatches,
    parse_dump,
    read_segments_with_kafka,
)
from kit.records import record_row

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CONFIG = {
    "segment.bytes": str(1 << 20),
    # Kafka's testing-only segment size override (kafkalog honours it as Kafka does).
    "internal.segment.bytes": "16384",
    "index.interval.bytes": "512",
}
DAY_MS = 86_400_000

# Bytes that would break DumpLogSegments' one-record-per-line output.
_NO_NEWLINES = bytes(b for b in range(256) if b not in (0x0A, 0x0D))


def dump_safe_records(n: int, seed: int) -> list[Record]:
    """Text keys and values (ASCII, printed verbatim by DumpLogSegments' StringDecoder) mixed
    with binary values (compared by size there, by bytes through SegmentRecords), tombstones,
    null and empty keys, empty values, headers with null and empty values and repeated keys,
    out-of-order CreateTime timestamps."""
    rng = random.Random(seed)
    base_ts = int(time.time() * 1000) - DAY_MS
    out = []
    for i in range(n):
        key: bytes | None = None if i % 7 == 3 else f"key-{i % 89}".encode()
        if i % 31 == 6:
            key = b""
        if i % 11 == 4:
            value: bytes | None = None
        elif i % 19 == 0:
            value = b""
        elif i % 5 == 1:
            value = bytes(rng.choice(_NO_NEWLINES) for _ in range(rng.randrange(1, 600)))
        else:
            value = (f"value {i} " + "x" * rng.randrange(0, 900)).encode()
        if i % 4 == 0:
            headers: tuple = ()
        elif i % 4 == 1:
            headers = (("h", str(i).encode()),)
        elif i % 4 == 2:
            headers = (("trace-id", rng.randbytes(16)), ("null-value", None), ("empty", b""), ("h", b"1"), ("h", b"2"))
        else:
            headers = (("only-null", None),)
        ts = base_ts + i * 7
        if i % 13 == 0:
            ts -= 3_600_000
        out.append(Record(key, value, headers, ts))
    return out


def write_log(path: Path, records: list[Record], codec: str, config: dict[str, str]) -> list[tuple]:
    """Appends ``records`` in chunks of varying size and batch_size; returns kafkalog's own
    read-back as (offset, timestamp, timestamp_type, key, value, headers)."""
    rng = random.Random(len(records))
    with kafkalog.UnifiedLog.open(path, config) as log:
        i = 0
        while i < len(records):
            n = rng.randrange(1, 60)
            log.append(records[i : i + n], compression=codec, batch_size=rng.choice([1024, 4096, 16384]))
            i += n
        assert log.log_end_offset == len(records)
        assert len(log.segments) > 2, "test set-up: the log should have rolled several segments"
        rows = [record_row(r) for r in log.records()]
    return rows


def indexed_segment_files(path: Path) -> tuple[list[Path], list[Path]]:
    """kit.files.segment_files, checking that every segment has its two indexes."""
    logs, indexes = segment_files(path)
    assert len(indexes) == 2 * len(logs), f"each segment should have .index and .timeindex: {sorted(p.name for p in path.iterdir())}"
    return logs, indexes


def check_with_dump_log_segments(kafka_jars: KafkaJars, path: Path, written: list[tuple], codec: str) -> None:
    logs, indexes = indexed_segment_files(path)

    res = dump_log_segments(kafka_jars, logs + indexes, "--deep-iteration", "--index-sanity-check", "--print-data-log")
    assert res.problems() == [], "DumpLogSegments --deep-iteration --index-sanity-check:\n" + "\n".join(res.problems())
    for idx in indexes:
        # dumpIndex says "<file> is empty." (and skips the check) for an index with no entry,
        # as for a segment of one batch.
        verdicts = (f"{idx} passed sanity check.", f"{idx} is empty.")
        assert any(v in res.stdout.split("\n") for v in verdicts), f"no sanity-check verdict for {idx.name}"

    res_verify = dump_log_segments(kafka_jars, indexes, "--verify-index-only")
    assert res_verify.problems() == [], "DumpLogSegments --verify-index-only:\n" + "\n".join(res_verify.problems())

    dumped = parse_dump(res.stdout)
    assert sorted(dumped) == [str(p) for p in logs]
    by_offset = {row[0]: row for row in written}
    seen = []
    ts_type = {0: "CreateTime", 1: "LogAppendTime"}
    for log_file in logs:
        base = int(log_file.name.split(".")[0])
        batches = dumped[str(log_file)]
        assert batches, f"{log_file.name} has no batches"
        assert batches[0].base_offset == base, f"{log_file.name}: first batch at {batches[0].base_offset}"
        position = 0
        for b in batches:
            assert b.valid and b.magic == 2 and b.codec == codec, b
            assert b.position == position
            position += b.size
            assert not b.is_control and not b.is_transactional
            assert [r.offset for r in b.records] == list(range(b.base_offset, b.last_offset + 1))
            assert b.count == len(b.records)
            assert b.max_timestamp == max(by_offset[r.offset][1] for r in b.records)
            for r in b.records:
                offset, ts, tt, key, value, headers = by_offset[r.offset]
                assert (r.timestamp_type, r.timestamp) == (ts_type[tt], ts), f"offset {offset}"
                assert r.timestamp_type == b.timestamp_type
                assert r.key_size == (-1 if key is None else len(key)), f"offset {offset}"
                assert r.value_size == (-1 if value is None else len(value)), f"offset {offset}"
                assert r.header_keys == [k for k, _ in headers], f"offset {offset}"
                assert r.key == (None if key is None else key.decode()), f"offset {offset}"
                if value is not None and value.isascii():
                    assert r.payload == value.decode(), f"offset {offset}"
                elif value is None:
                    assert r.payload is None, f"offset {offset}"
                seen.append(r.offset)
        assert position == log_file.stat().st_size
    assert seen == list(range(len(written)))


def check_with_kafka_file_records(jars: KafkaJars, path: Path, written: list[tuple], codec: str) -> None:
    logs, _ = indexed_segment_files(path)
    batches, trailing = read_segments_with_kafka(jars, logs)
    rows = []
    for log_file in logs:
        assert trailing[str(log_file)] == 0, f"{log_file.name}: trailing bytes Kafka cannot parse"
        for b in batches[str(log_file)]:
            assert (b.magic, b.codec, b.producer_id, b.base_sequence) == (2, codec, -1, -1), b
            expected_type = "LogAppendTime" if written[0][2] == 1 else "CreateTime"
            assert b.timestamp_type == expected_type
            for offset, ts, key, value, headers in b.records:
                if b.timestamp_type == "LogAppendTime":
                    ts = b.max_timestamp  # Kafka's consumer view: the batch's append time
                rows.append((offset, ts, written[0][2], key, value, headers))
    assert rows == written


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_reads_what_kafkalog_wrote(tmp_path, kafka_jars, codec):
    records = dump_safe_records(1500, seed=CODECS.index(codec))
    path = tmp_path / f"kafkalog-{codec}-0"
    written = write_log(path, records, codec, CONFIG)
    expected = [
        (i, r.timestamp, 0, r.key, r.value, tuple(r.headers)) for i, r in enumerate(records)
    ]
    assert written == expected, "kafkalog's own read-back differs from what was appended"

    check_with_dump_log_segments(kafka_jars, path, written, codec)
    check_with_kafka_file_records(kafka_jars, path, written, codec)


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_kafkalog_indexes_equal_kafkas(tmp_path, kafka_jars, codec):
    """Byte for byte, the .index and .timeindex of each segment are what Kafka's LogSegment
    writes for the same batches (the model in kafka_harness.kafka_segment_indexes is checked
    against a real broker's segments in test_kafka_writes_kafkalog_reads)."""
    path = tmp_path / f"kafkalog-idx-{codec}-0"
    write_log(path, dump_safe_records(1500, seed=70), codec, CONFIG)
    assert index_mismatches(kafka_jars, path, int(CONFIG["index.interval.bytes"])) == []


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_kafka_reads_kafkalog_log_append_time(tmp_path, kafka_jars, codec):
    records = dump_safe_records(600, seed=50)
    path = tmp_path / f"kafkalog-lat-{codec}-0"
    before = int(time.time() * 1000)
    written = write_log(path, records, codec, {**CONFIG, "message.timestamp.type": "LogAppendTime"})
    assert {row[2] for row in written} == {1}
    assert all(row[1] >= before for row in written)

    check_with_dump_log_segments(kafka_jars, path, written, codec)
    check_with_kafka_file_records(kafka_jars, path, written, codec)


def test_kafka_reads_kafkalog_after_reopen_and_append(tmp_path, kafka_jars):
    """Reopen (recovery of the active segment) then append more, switching codecs: the
    segments still verify."""
    path = tmp_path / "kafkalog-reopen-0"
    first = dump_safe_records(400, seed=60)
    write_log(path, first, "gzip", CONFIG)
    second = dump_safe_records(400, seed=61)
    with kafkalog.UnifiedLog.open(path, CONFIG) as log:
        assert log.log_end_offset == len(first)
        for i in range(0, len(second), 25):
            log.append(second[i : i + 25], compression="zstd" if i % 50 else "none")
        written = [
            (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple(r.headers)) for r in log.records()
        ]
    all_records = first + second
    assert written == [(i, r.timestamp, 0, r.key, r.value, tuple(r.headers)) for i, r in enumerate(all_records)]

    logs, indexes = indexed_segment_files(path)
    res = dump_log_segments(kafka_jars, logs + indexes, "--deep-iteration", "--index-sanity-check", "--print-data-log")
    assert res.problems() == [], "\n".join(res.problems())
    res = dump_log_segments(kafka_jars, indexes, "--verify-index-only")
    assert res.problems() == [], "\n".join(res.problems())
    batches, trailing = read_segments_with_kafka(kafka_jars, logs)
    assert all(t == 0 for t in trailing.values())
    rows = [(o, ts, 0, k, v, h) for f in logs for b in batches[str(f)] for (o, ts, k, v, h) in b.records]
    assert rows == written


@pytest.mark.parametrize("shutdown", ["clean", "unclean"])
def test_broker_serves_partition_kafkalog_wrote(kafka_broker, kafka_jars, shutdown):
    """kafkalog writes the segments of a topic a broker created (same topic id); the broker
    restarts on that data dir and a kafka-python consumer must get exactly kafkalog's records.

    clean: .kafka_cleanshutdown kept, so Kafka loads kafkalog's segments and indexes as they
    are and serves fetches through kafkalog's offset index. unclean: the marker removed, so
    Kafka recovers every segment from its recovery point 0 (CRC-checks each batch, rebuilds
    each index) and would truncate at the first batch it rejects; the .log bytes must come
    through untouched and the rebuilt indexes must equal kafkalog's."""
    topic = f"from-kafkalog-{shutdown}"
    broker = kafka_broker()
    create_topic(broker, topic, CONFIG)
    broker.stop()
    part = broker.partition_dir(topic)
    topic_id = (part / "partition.metadata").read_text().split("topic_id:")[1].strip()
    for f in part.iterdir():
        if f.name != "partition.metadata":
            f.unlink()

    records = dump_safe_records(1200, seed=80)
    with kafkalog.UnifiedLog.open(part, CONFIG) as log:
        assert log.topic_id == topic_id
        for i, codec in zip(range(0, len(records), 100), [*CODECS, *CODECS, *CODECS]):
            log.append(records[i : i + 100], compression=codec)
        written = [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple(r.headers)) for r in log.records()]
        assert len(log.segments) > 2
    before = {f.name: f.read_bytes() for f in part.iterdir() if f.suffix in (".log", ".index", ".timeindex")}
    # The standalone close's own record (kafkalog-clean-close) is in the dir the broker loads.
    assert (part / "kafkalog-clean-close").exists()

    if shutdown == "unclean":
        (broker.log_dir / ".kafka_cleanshutdown").unlink()
    broker.start()
    try:
        consumed = consume_all(broker, topic)
    finally:
        broker.stop()
    assert consumed == written, "a Kafka consumer read something else than kafkalog wrote"

    after = {f.name: f.read_bytes() for f in part.iterdir() if f.suffix in (".log", ".index", ".timeindex")}
    assert {n: b for n, b in after.items() if n.endswith(".log")} == {
        n: b for n, b in before.items() if n.endswith(".log")
    }, "Kafka changed (truncated?) kafkalog's .log files on load"
    changed = sorted(n for n in before if after.get(n) != before[n])
    assert changed == [], f"Kafka rewrote kafkalog's index files on load: {changed}"


def test_harness_sees_corruption(tmp_path, kafka_jars):
    """The checks above can fail: a flipped byte inside a batch, a wrong offset-index entry and
    a wrong time-index entry each give DumpLogSegments problem lines."""
    path = tmp_path / "kafkalog-corrupt-0"
    write_log(path, dump_safe_records(400, seed=90), "none", CONFIG)
    logs, indexes = indexed_segment_files(path)
    index = next(p for p in indexes if p.suffix == ".index" and p.stat().st_size >= 8)
    timeindex = next(p for p in indexes if p.suffix == ".timeindex" and p.stat().st_size >= 12)

    data = bytearray(logs[0].read_bytes())
    data[100] ^= 0xFF  # inside the first batch's records: its CRC no longer matches
    logs[0].write_bytes(bytes(data))
    idx = bytearray(index.read_bytes())
    idx[3] ^= 0x01  # relative offset of the first entry, off by one
    index.write_bytes(bytes(idx))
    tidx = bytearray(timeindex.read_bytes())
    tidx[7] ^= 0x01  # timestamp of the first entry, off by one
    timeindex.write_bytes(bytes(tidx))

    res = dump_log_segments(kafka_jars, logs, "--deep-iteration", "--print-data-log")
    assert any("isvalid: false" in p for p in res.problems()), res.stdout[:2000]
    res = dump_log_segments(kafka_jars, [index, timeindex], "--verify-index-only")
    problems = "\n".join(res.problems())
    assert "Mismatches in :" in problems and "Found timestamp mismatch in :" in problems, problems


def test_kafka_reads_kafkalog_control_batches_and_delete_horizons(tmp_path, kafka_jars):
    """kafkalog-written transactional data, COMMIT and ABORT markers, and a batch carrying a
    KIP-534 delete horizon (the shape the cleaner writes) pass DumpLogSegments' deep iteration
    and index checks, and it prints the markers and horizon kafkalog wrote."""
    from kafkalog import batches

    now = int(time.time() * 1000)
    horizon = now + 86_400_000
    rec = lambda k, v, ts: Record(k, v, (("h", b"1"),), ts)  # noqa: E731
    run = [
        # a committed transaction of producer 7
        batches.build(0, [rec(b"a", b"1", now), rec(b"b", b"2", now)], producer_id=7, producer_epoch=0,
                      base_sequence=0, transactional=True, partition_leader_epoch=0),
        batches.end_txn_marker(2, now, producer_id=7, producer_epoch=0, commit=True, coordinator_epoch=3,
                               partition_leader_epoch=0),
        # an aborted transaction of producer 8
        batches.build(3, [rec(b"c", b"3", now)], compression="zstd", producer_id=8, producer_epoch=1,
                      base_sequence=0, transactional=True, partition_leader_epoch=0),
        batches.end_txn_marker(4, now, producer_id=8, producer_epoch=1, commit=False, coordinator_epoch=3,
                               partition_leader_epoch=0),
        # tombstones and a value with a delete horizon stamped, as a first clean leaves them
        batches.build(5, [rec(b"a", None, now - 5000), rec(b"d", b"4", now - 4000)], compression="lz4",
                      partition_leader_epoch=0, delete_horizon_ms=horizon),
    ]
    path = tmp_path / "txn-0"
    with kafkalog.UnifiedLog.open(path, {"index.interval.bytes": "1"}) as log:
        for raw in run:
            log.append_as_follower(raw)
        got = [(r.offset, r.key, r.value) for r in log.records()]
    assert got == [(0, b"a", b"1"), (1, b"b", b"2"), (3, b"c", b"3"), (5, b"a", None), (6, b"d", b"4")]

    logs, indexes = indexed_segment_files(path)
    res = dump_log_segments(kafka_jars, logs + indexes, "--deep-iteration", "--index-sanity-check", "--print-data-log")
    assert res.problems() == [], "\n".join(res.problems())
    res_verify = dump_log_segments(kafka_jars, indexes, "--verify-index-only")
    assert res_verify.problems() == [], "\n".join(res_verify.problems())
    out = res.stdout
    assert "endTxnMarker: COMMIT coordinatorEpoch: 3" in out, out
    assert "endTxnMarker: ABORT coordinatorEpoch: 3" in out, out
    assert f"deleteHorizonMs: OptionalLong[{horizon}]" in out, out
    assert out.count("isTransactional: true") == 4 and out.count("isControl: true") == 2, out
