"""Direction A: a real Kafka broker writes, kafkalog reads.

kafka-python produces to a single-node KRaft broker (every codec, headers including null
values, null keys, tombstones, explicit out-of-order timestamps, acks=all, several batches and
several segments); a kafka-python consumer reads everything back; the broker is stopped
cleanly; then kafkalog opens the broker's partition directory read-only and read-write and must
return exactly what the consumer returned: offsets, timestamps and their type, keys, values,
headers.
"""

from __future__ import annotations

import hashlib
import random
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kafkalog
from kafkalog import checkpoints
from kit.kafka_harness import KafkaBroker, consume_all, create_topic, dump_log_segments, index_mismatches, produce
from kit.records import record_row

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TOPIC_CONFIG = {
    # 1 MiB is the 4.x minimum of segment.bytes; internal.segment.bytes (Kafka's testing-only
    # override, accepted by CreateTopics in 4.x) makes segments small enough that a few hundred
    # KB of records span many of them.
    "segment.bytes": str(1 << 20),
    "internal.segment.bytes": "65536",
    "index.interval.bytes": "1024",
}
# kafkalog does not take Kafka's internal.* keys; it only reads here, so segment sizes are moot.
KAFKALOG_CONFIG = {"index.interval.bytes": "1024"}

DAY_MS = 86_400_000


def producer_sends(n: int, seed: int) -> list[dict]:
    """Records of every shape kafka-python can produce: null keys, null values (tombstones),
    empty keys/values/header keys/header values, repeated header keys, binary and text
    payloads, out-of-order CreateTime timestamps an hour to a day in the past."""
    rng = random.Random(seed)
    base_ts = int(time.time() * 1000) - DAY_MS
    out = []
    for i in range(n):
        key: bytes | None = None if i % 7 == 3 else f"key-{i % 97}".encode()
        if i % 29 == 5:
            key = b""
        if i % 11 == 4:
            value: bytes | None = None
            if key is None:  # kafka-python refuses a record with neither key nor value
                key = b"tombstone"
        elif i % 17 == 0:
            value = b""
        elif i % 2:
            value = rng.randbytes(rng.randrange(1, 1500))
        else:
            value = (f"value {i} " * rng.randrange(1, 60)).encode()
        if i % 3 == 0:
            headers: list[tuple[str, bytes | None]] = []
        elif i % 3 == 1:
            headers = [("h", str(i).encode())]
        else:
            # (kafka-python's producer takes no null header values: every value is bytes.)
            headers = [("trace-id", rng.randbytes(16)), ("empty", b""), ("", b"empty key"), ("h", b"1"), ("h", b"2")]
        ts = base_ts + i * 5
        if i % 13 == 0:
            ts -= 3_600_000  # older than its neighbours: maxTimestamp is not the last record's
        out.append({"key": key, "value": value, "headers": headers, "timestamp_ms": ts})
    return out


def arrow_rows(table: pa.Table) -> list[tuple]:
    ms = pc.divide(table.column("timestamp").cast(pa.int64()), 1000).to_pylist()
    rows = []
    for i, row in enumerate(table.to_pylist()):
        headers = tuple((h["key"], h["value"]) for h in row["headers"] or [])
        rows.append((row["offset"], ms[i], row["timestampType"], row["key"], row["value"], headers))
    return rows


def log_file_digests(partition_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(partition_dir.glob("*.log"))}


def assert_kafkalog_reads(partition_dir: Path, expected: list[tuple], *, topic: str) -> None:
    """kafkalog, read-only then read-write, returns ``expected`` (what Kafka's consumer got)."""
    end = expected[-1][0] + 1 if expected else 0
    segment_files = sorted(int(p.name.split(".")[0]) for p in partition_dir.glob("*.log"))
    assert len(segment_files) > 1, "test set-up: the broker should have rolled several segments"

    with kafkalog.UnifiedLog.open(partition_dir, KAFKALOG_CONFIG, read_only=True) as log:
        assert (log.topic, log.partition) == (topic, 0)
        assert log.log_start_offset == 0
        assert log.log_end_offset == end
        assert [s.base_offset for s in log.segments] == segment_files
        got = [record_row(r) for r in log.records()]
        assert got == expected, "read-only records() differ from the Kafka consumer's"
        assert arrow_rows(log.to_arrow()) == expected, "read-only to_arrow() differs from the Kafka consumer's"

    before = log_file_digests(partition_dir)
    with kafkalog.UnifiedLog.open(partition_dir, KAFKALOG_CONFIG) as log:
        assert log.log_start_offset == 0
        assert log.log_end_offset == end
        assert [s.base_offset for s in log.segments] == segment_files
        got = [record_row(r) for r in log.records()]
        assert got == expected, "read-write records() differ from the Kafka consumer's"
        assert arrow_rows(log.to_arrow()) == expected, "read-write to_arrow() differs from the Kafka consumer's"
    assert log_file_digests(partition_dir) == before, "a read-write open and close changed Kafka's .log files"


def assert_broker_dir_layout(broker: KafkaBroker, topic: str) -> None:
    """The files a cleanly stopped 4.x broker leaves, and that kafkalog opens the partition."""
    d = broker.log_dir
    for name in (
        "meta.properties",
        ".kafka_cleanshutdown",
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    ):
        assert (d / name).is_file(), f"{name} missing from the broker's log dir"
    part = broker.partition_dir(topic)
    for name in ("partition.metadata", "leader-epoch-checkpoint"):
        assert (part / name).is_file(), f"{name} missing from {part}"
    # kafkalog parses every one of them in Kafka's formats.
    meta = checkpoints.read_meta_properties(d / "meta.properties")
    assert meta["cluster.id"] == broker.cluster_id
    assert meta["node.id"] == "1"
    assert meta["version"] == "1", "a KRaft broker writes meta.properties version 1"
    assert isinstance(checkpoints.read_clean_shutdown(d / ".kafka_cleanshutdown"), int)
    recovery = checkpoints.read_offset_checkpoint(d / "recovery-point-offset-checkpoint")
    replication = checkpoints.read_offset_checkpoint(d / "replication-offset-checkpoint")
    checkpoints.read_offset_checkpoint(d / "log-start-offset-checkpoint")
    checkpoints.read_offset_checkpoint(d / "cleaner-offset-checkpoint")
    epochs = checkpoints.read_leader_epoch_checkpoint(part / "leader-epoch-checkpoint")
    assert epochs and epochs[0][1] == 0, f"leader epochs {epochs}: the first starts at offset 0"
    with kafkalog.UnifiedLog.open(part, KAFKALOG_CONFIG, read_only=True) as log:
        topic_id = (part / "partition.metadata").read_text().split("topic_id:")[1].strip()
        assert log.topic_id == topic_id, "kafkalog's topic_id differs from partition.metadata"
        # A clean shutdown flushed everything: recovery point and high watermark = log end.
        assert recovery[(topic, 0)] == log.log_end_offset
        assert replication[(topic, 0)] == log.log_end_offset


def run_round_trip(kafka_broker, codec: str, topic_config: dict[str, str], seed: int, n: int = 1200, **producer_config):
    broker: KafkaBroker = kafka_broker()
    topic = f"interop-{codec}"
    create_topic(broker, topic, topic_config)
    records = producer_sends(n, seed)
    produce(broker, topic, records, codec, **producer_config)
    consumed = consume_all(broker, topic)
    assert broker.stop() in (0, 143), broker.log_tail()
    return broker, topic, records, consumed


@pytest.mark.parametrize("codec", CODECS)
def test_kafkalog_reads_what_kafka_wrote(kafka_broker, codec):
    broker, topic, records, consumed = run_round_trip(kafka_broker, codec, TOPIC_CONFIG, seed=CODECS.index(codec))

    # The consumer saw what was produced (guards the harness itself).
    assert [c[0] for c in consumed] == list(range(len(records)))
    sent = [(r["timestamp_ms"], 0, r["key"], r["value"], tuple(r["headers"])) for r in records]
    assert [c[1:] for c in consumed] == sent

    assert_broker_dir_layout(broker, topic)
    # The index model the kafkalog-writes tests hold kafkalog to, checked on Kafka's own files.
    interval = int(TOPIC_CONFIG["index.interval.bytes"])
    assert index_mismatches(broker.jars, broker.partition_dir(topic), interval) == []
    assert_kafkalog_reads(broker.partition_dir(topic), consumed, topic=topic)


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_kafkalog_reads_log_append_time_topic(kafka_broker, codec):
    """message.timestamp.type=LogAppendTime: the broker stamps each batch; a consumer sees the
    batch's timestamp with type 1 for every record, compressed or not."""
    config = {**TOPIC_CONFIG, "message.timestamp.type": "LogAppendTime"}
    broker, topic, records, consumed = run_round_trip(kafka_broker, codec, config, seed=100 + len(codec), n=600)
    assert {c[2] for c in consumed} == {1}
    assert all(c[1] > records[-1]["timestamp_ms"] for c in consumed)
    assert_kafkalog_reads(broker.partition_dir(topic), consumed, topic=topic)


def test_kafkalog_reads_idempotent_producer(kafka_broker):
    """enable_idempotence=True: batches carry a producer id, epoch and sequences, and the broker
    writes a producer-state snapshot (.snapshot) when it rolls segments and shuts down."""
    broker, topic, records, consumed = run_round_trip(
        kafka_broker, "lz4", TOPIC_CONFIG, seed=200, enable_idempotence=True, max_in_flight_requests_per_connection=5
    )
    assert [c[0] for c in consumed] == list(range(len(records)))
    part = broker.partition_dir(topic)
    assert list(part.glob("*.snapshot")), "an idempotent producer should leave producer-state snapshots"
    assert_kafkalog_reads(part, consumed, topic=topic)


def test_kafka_restarts_on_dir_kafkalog_opened_read_write(kafka_broker, kafka_jars):
    """After kafkalog opened and closed Kafka's partition read-write, Kafka's DumpLogSegments
    still verifies every index and a restarted broker serves the same records."""
    broker, topic, records, consumed = run_round_trip(kafka_broker, "snappy", TOPIC_CONFIG, seed=300, n=800)
    part = broker.partition_dir(topic)
    with kafkalog.UnifiedLog.open(part, KAFKALOG_CONFIG) as log:
        assert log.log_end_offset == len(records)

    indexes = sorted(part.glob("*.index")) + sorted(part.glob("*.timeindex"))
    for options in (["--index-sanity-check"], ["--verify-index-only"]):
        res = dump_log_segments(kafka_jars, indexes, *options)
        assert res.problems() == [], f"DumpLogSegments {options} after kafkalog's read-write open:\n{res.stderr}"

    broker.start()
    try:
        assert consume_all(broker, topic) == consumed
    finally:
        broker.stop()


def test_kafkalog_reads_dir_of_killed_broker(kafka_broker, kafka_jars):
    """SIGKILL, no shutdown: no .kafka_cleanshutdown, the active segment's indexes left
    preallocated (segment.index.bytes of zeros past the entries). kafkalog read-only and
    read-write must still return every acknowledged record; after kafkalog's read-write open
    (its recovery) Kafka's tools verify the indexes and a restarted broker serves the same
    records."""
    broker: KafkaBroker = kafka_broker()
    topic = "interop-killed"
    create_topic(broker, topic, TOPIC_CONFIG)
    records = producer_sends(900, seed=400)
    produce(broker, topic, records, "gzip")
    consumed = consume_all(broker, topic)
    broker.kill()

    part = broker.partition_dir(topic)
    assert not (broker.log_dir / ".kafka_cleanshutdown").exists()
    active = max(part.glob("*.index"), key=lambda p: int(p.name.split(".")[0]))
    assert active.stat().st_size == 10 * 1024 * 1024, "test set-up: Kafka preallocates the active index"

    assert_kafkalog_reads(part, consumed, topic=topic)

    indexes = sorted(part.glob("*.index")) + sorted(part.glob("*.timeindex"))
    for options in (["--index-sanity-check"], ["--verify-index-only"]):
        res = dump_log_segments(kafka_jars, indexes, *options)
        assert res.problems() == [], f"DumpLogSegments {options} after kafkalog recovered the dir:\n{res.stderr}"

    broker.start()
    try:
        assert consume_all(broker, topic) == consumed
    finally:
        broker.stop()


def test_kafkalog_reads_transactional_topic(kafka_broker):
    """A transactional producer commits and aborts transactions: the log holds transactional
    batches, COMMIT/ABORT control batches and a .txnindex. A read_uncommitted consumer sees every
    data record (aborted ones too) and no control record; kafkalog must see the same."""
    from kafka import KafkaProducer

    broker: KafkaBroker = kafka_broker()
    topic = "interop-txn"
    create_topic(broker, topic, TOPIC_CONFIG)
    records = producer_sends(600, seed=500)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, transactional_id="interop-txn", compression_type="zstd", linger_ms=5
    )
    try:
        producer.init_transactions()
        for n, start in enumerate(range(0, len(records), 100)):
            producer.begin_transaction()
            for r in records[start : start + 100]:
                producer.send(topic, partition=0, **r)
            producer.flush()
            if n % 3 == 1:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
    finally:
        producer.close()
    consumed = consume_all(broker, topic, isolation_level="read_uncommitted")
    broker.stop()

    part = broker.partition_dir(topic)
    assert [c[3:] for c in consumed] == [(r["key"], r["value"], tuple(r["headers"])) for r in records]
    assert any(f.stat().st_size > 0 for f in part.glob("*.txnindex")), "an aborted transaction should be indexed"
    with kafkalog.UnifiedLog.open(part, KAFKALOG_CONFIG, read_only=True) as log:
        assert [record_row(r) for r in log.records()] == consumed
    with kafkalog.UnifiedLog.open(part, KAFKALOG_CONFIG) as log:
        assert [record_row(r) for r in log.records()] == consumed
        assert arrow_rows(log.to_arrow()) == consumed
