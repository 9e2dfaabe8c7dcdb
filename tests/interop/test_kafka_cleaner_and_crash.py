"""Direction A, the broker's background machinery: Kafka's own log cleaner compacts a topic
(dropping superseded records, keeping tombstones with a delete horizon stamped into their
batches), and a broker SIGKILLed in the middle of acks=all produce. kafkalog must read what
Kafka serves (the cleaner's output) and, after recovering a crashed broker's active segment,
keep every record the broker acknowledged.
"""

from __future__ import annotations

import random
import re
import threading
import time

import kafkalog
from kit.kafka_harness import HANG_GUARD_S, KafkaBroker, _kafka, consume_all, create_topic, dump_log_segments
from kit.records import record_row

DAY_MS = 86_400_000
DELETE_HORIZON_FLAG = 0x40  # DefaultRecordBatch.DELETE_HORIZON_FLAG_MASK, attributes bit 6


def raw_batches(log: kafkalog.UnifiedLog) -> list[tuple[int, int, int]]:
    """(base offset, attributes, base timestamp) of every batch kafkalog's read() returns, parsed
    from the raw records_bytes (v2 header: baseOffset@0, length@8, attributes@21..23,
    baseTimestamp@27)."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        data = result.records_bytes
        if not data:
            break
        pos = 0
        while pos + 12 <= len(data):
            size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
            if pos + size > len(data):
                break
            assert data[pos + 16] == 2, f"magic {data[pos + 16]} at batch position {pos}"
            out.append(
                (
                    int.from_bytes(data[pos : pos + 8], "big", signed=True),
                    int.from_bytes(data[pos + 21 : pos + 23], "big"),
                    int.from_bytes(data[pos + 27 : pos + 35], "big", signed=True),
                )
            )
            pos += size
        assert result.next_offset > offset
        offset = result.next_offset
    return out


def cleaner_checkpoint(broker: KafkaBroker, topic: str) -> int | None:
    """The partition's entry in the log dir's cleaner-offset-checkpoint (version, count, then
    "topic partition offset" lines), or None."""
    f = broker.log_dir / "cleaner-offset-checkpoint"
    try:
        lines = f.read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1] == "0":
            return int(parts[2])
    return None


def kafka_offsets_for_times(broker: KafkaBroker, topic: str, timestamps: list[int]) -> list[tuple[int, int] | None]:
    """The broker's ListOffsets answer (offset, timestamp) for each timestamp, or None."""
    k = _kafka()
    tp = k.TopicPartition(topic, 0)
    consumer = k.KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, request_timeout_ms=30000)
    try:
        out = []
        for ts in timestamps:
            found = consumer.offsets_for_times({tp: ts})[tp]
            out.append(None if found is None else (found.offset, found.timestamp))
        return out
    finally:
        consumer.close()


# -- 1. Kafka's cleaner -----------------------------------------------------------------------------

COMPACT_TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": str(1 << 20),
    "internal.segment.bytes": "16384",
    "segment.ms": "60000",
    "index.interval.bytes": "1024",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
    # Large, so the first clean keeps the tombstones and stamps a delete horizon on their batches.
    "delete.retention.ms": str(DAY_MS),
}
COMPACT_KAFKALOG_CONFIG = {
    "cleanup.policy": "compact",
    "index.interval.bytes": "1024",
    "delete.retention.ms": str(DAY_MS),
    "min.cleanable.dirty.ratio": "0.01",
}


def compacted_records(seed: int) -> tuple[list[dict], set[bytes]]:
    """3600 records over 300 keys (≈10 versions each): text and incompressible values, empty
    values, headers on some, out-of-order CreateTime timestamps, and early tombstones that a
    later value supersedes (the cleaner drops them). Then a tail over keys 12..299 into which
    a final tombstone for each of keys 0..11 is spread (every 40th record, so several batches
    hold tombstones), ending with enough writes to push the last tombstone out of the active
    segment."""
    rng = random.Random(seed)
    base_ts = int(time.time() * 1000) - DAY_MS
    n_keys, n_tombstoned = 300, 12
    tombstoned = {f"k{i:03d}".encode() for i in range(n_tombstoned)}
    out = []

    def rec(key: bytes, value: bytes | None) -> dict:
        i = len(out)
        headers = [] if i % 3 else [("seq", str(i).encode()), ("", b""), ("dup", b"a"), ("dup", b"b")]
        ts = base_ts + i * 7 - (3_600_000 if i % 13 == 0 else 0)
        return {"key": key, "value": value, "headers": headers, "timestamp_ms": ts}

    def value(key: bytes) -> bytes:
        i = len(out)
        if i % 19 == 0:
            return b""
        if i % 2:
            return f"{key.decode()} v{i} ".encode() + rng.randbytes(rng.randrange(50, 250))
        return (f"{key.decode()} v{i} " * rng.randrange(1, 12)).encode()

    for n in range(3000):
        key = f"k{rng.randrange(n_keys):03d}".encode()
        out.append(rec(key, None if n % 23 == 11 else value(key)))
    pending = sorted(tombstoned)
    while pending:
        if len(out) % 40 == 0:
            out.append(rec(pending.pop(0), None))
        else:
            key = f"k{rng.randrange(n_tombstoned, n_keys):03d}".encode()
            out.append(rec(key, value(key)))
    for _ in range(150):
        key = f"k{rng.randrange(n_tombstoned, n_keys):03d}".encode()
        out.append(rec(key, f"{key.decode()} tail ".encode() + rng.randbytes(rng.randrange(200, 400))))
    return out, tombstoned


def test_kafkalog_reads_topic_compacted_by_kafka_cleaner(kafka_broker, kafka_jars):
    broker: KafkaBroker = kafka_broker({"log.cleaner.backoff.ms": "100"})
    topic = "interop-compacted"
    create_topic(broker, topic, COMPACT_TOPIC_CONFIG)
    records, tombstoned = compacted_records(seed=700)

    producer = _kafka().KafkaProducer(
        bootstrap_servers=broker.bootstrap, acks="all", compression_type="lz4", linger_ms=5, batch_size=4096,
        max_in_flight_requests_per_connection=1, enable_idempotence=False, retries=5,
    )
    try:
        futures = []
        for n, r in enumerate(records):
            futures.append(producer.send(topic, partition=0, **r))
            if n % 50 == 49:
                producer.flush()
        producer.flush()
        acked = [f.get(timeout=30).offset for f in futures]
    finally:
        producer.close()
    assert acked == list(range(len(records)))

    part = broker.partition_dir(topic)
    bases = sorted(int(p.name.split(".")[0]) for p in part.glob("*.log"))
    assert len(bases) > 3, f"test set-up: expected several segments, got {bases}"
    active_base = bases[-1]
    tombstone_offsets = [o for o, r in enumerate(records) if r["value"] is None]
    assert max(tombstone_offsets) < active_base, "test set-up: the tombstones should sit in cleanable segments"

    # Kafka's cleaner cleans everything below the active segment: its checkpoint reaches the
    # active segment's base offset.
    cp = broker.await_state(
        lambda: (c := cleaner_checkpoint(broker, topic)) is not None and c >= active_base and c,
        "Kafka's cleaner to checkpoint the cleaned section",
    )
    assert cp == active_base

    consumed = consume_all(broker, topic)
    # ListOffsets by timestamp over the cleaned batches (whose baseTimestamp holds the delete
    # horizon, not the first record's timestamp).
    probe_ts = sorted({c[1] for c in consumed[::5]} | {c[1] + 1 for c in consumed[::7]})
    probe_ts += [min(c[1] for c in consumed) - 1, max(c[1] for c in consumed) + 1]
    kafka_lookups = kafka_offsets_for_times(broker, topic, probe_ts)
    assert broker.stop() in (0, 143), broker.log_tail()
    assert cleaner_checkpoint(broker, topic) == cp, "test set-up: Kafka cleaned again after the consumer read"

    # Guard the set-up: Kafka really compacted (gaps, one record per key below the dirty part)
    # and kept every tombstone, stamping a delete horizon on each tombstone's batch.
    offsets = [c[0] for c in consumed]
    assert len(consumed) < len(records) // 2 and offsets[-1] == len(records) - 1
    cleaned = [c for c in consumed if c[0] < cp]
    assert len({c[3] for c in cleaned}) == len(cleaned), "a key appears twice in the cleaned part"
    last_write = {r["key"]: r["value"] for r in records}
    deleted = {k for k, v in last_write.items() if v is None}
    assert tombstoned <= deleted
    assert sorted(c[3] for c in consumed if c[4] is None) == sorted(deleted), "Kafka should keep each last tombstone"
    for c in consumed:
        r = records[c[0]]
        assert c[1:] == (r["timestamp_ms"], 0, r["key"], r["value"], tuple(r["headers"]))
    logs = sorted(part.glob("*.log"))
    dump = dump_log_segments(kafka_jars, logs)
    kafka_horizons = sorted(
        int(m.group(1)) for m in re.finditer(r"baseOffset: (-?\d+) .*deleteHorizonMs: OptionalLong\[", dump.stdout)
    )
    assert kafka_horizons, f"test set-up: no batch with deleteHorizonMs in Kafka's cleaned files\n{dump.stdout[:3000]}"

    seg_bases = sorted(int(p.name.split(".")[0]) for p in part.glob("*.log"))
    before = {p.name: p.read_bytes() for p in part.glob("*.log")}
    expected_end = len(records)
    for read_only in (True, False):
        mode = "read-only" if read_only else "read-write"
        with kafkalog.UnifiedLog.open(part, COMPACT_KAFKALOG_CONFIG, read_only=read_only) as log:
            assert (log.topic, log.partition) == (topic, 0)
            assert log.log_start_offset == 0, mode
            assert log.log_end_offset == expected_end, mode
            assert [s.base_offset for s in log.segments] == seg_bases, mode
            got = [record_row(r) for r in log.records()]
            assert got == consumed, f"{mode} records() differ from what Kafka served after cleaning"
            lookups = []
            for ts in probe_ts:
                found = log.offset_for_timestamp(ts)
                lookups.append(None if found is None else (found.offset, found.timestamp))
            diff = [(ts, k, g) for ts, k, g in zip(probe_ts, kafka_lookups, lookups) if k != g]
            assert not diff, f"{mode}: offset_for_timestamp differs from Kafka's ListOffsets (ts, kafka, kafkalog): {diff[:5]}"
            batches = raw_batches(log)
            horizons = sorted(b for b, attrs, _ in batches if attrs & DELETE_HORIZON_FLAG)
            assert horizons, f"{mode}: no batch kafkalog read has the delete-horizon flag"
            assert horizons == kafka_horizons, f"{mode}: delete-horizon batches {horizons} != Kafka's {kafka_horizons}"
            # The horizon (stored in baseTimestamp) is the clean time + delete.retention.ms.
            now = int(time.time() * 1000)
            for base, attrs, base_ts in batches:
                if attrs & DELETE_HORIZON_FLAG:
                    assert now < base_ts <= now + DAY_MS, (mode, base, base_ts)
    assert {p.name: p.read_bytes() for p in part.glob("*.log")} == before, "kafkalog changed Kafka's .log files"
    print(
        f"\n{len(records)} produced, {len(consumed)} after cleaning (checkpoint {cp}), "
        f"{len(seg_bases)} segments, {len(batches)} batches, delete horizons on {horizons}"
    )


# -- 2. SIGKILL mid-produce -------------------------------------------------------------------------

CRASH_TOPIC_CONFIG = {
    "segment.bytes": str(1 << 20),
    "internal.segment.bytes": "32768",
    "index.interval.bytes": "1024",
    "flush.messages": "1",  # every append fsynced before it is acknowledged
}
CRASH_KAFKALOG_CONFIG = {"index.interval.bytes": "1024", "flush.messages": "1"}


def crash_record(i: int, rng: random.Random, base_ts: int) -> dict:
    value = f"value-{i:07d}|".encode() + rng.randbytes(rng.randrange(0, 400))
    headers = [("i", str(i).encode())] if i % 4 == 0 else []
    return {"key": f"key-{i % 50}".encode(), "value": value, "headers": headers, "timestamp_ms": base_ts + i}


def test_kafkalog_keeps_acknowledged_records_after_sigkill_mid_produce(kafka_broker):
    # A short broker session: the restart at the end waits for the killed incarnation's
    # session to expire before it can register (DUPLICATE_BROKER_REGISTRATION until then).
    broker: KafkaBroker = kafka_broker({"broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "500"})
    topic = "interop-sigkill"
    create_topic(broker, topic, CRASH_TOPIC_CONFIG)

    rng = random.Random(800)
    base_ts = int(time.time() * 1000) - DAY_MS
    sent: list[dict] = []
    acked: dict[int, tuple[int, bytes, bytes]] = {}  # offset -> (send index, key, value)
    errors: list[BaseException] = []
    # Every change to sent / acked / errors is made under `progress` and notifies it: the test
    # and the producer thread wait on it for the state they need, never for a time.
    progress = threading.Condition()
    stop = threading.Event()

    producer = _kafka().KafkaProducer(
        bootstrap_servers=broker.bootstrap, acks="all", compression_type="gzip", linger_ms=2, batch_size=2048,
        max_in_flight_requests_per_connection=1, enable_idempotence=False, retries=0,
        # Long enough that no request times out before the kill on a loaded machine (with
        # retries=0 a timed-out record the broker did write would shift the offsets), short
        # enough that the records sent to the dead broker fail soon after it.
        request_timeout_ms=10000, delivery_timeout_ms=12000, max_block_ms=3000, reconnect_backoff_max_ms=200,
    )

    def on_ack(i: int, key: bytes, value: bytes):
        def cb(md) -> None:
            with progress:
                acked[md.offset] = (i, key, value)
                progress.notify_all()
        return cb

    def on_error(exc: BaseException) -> None:
        with progress:
            errors.append(exc)
            progress.notify_all()

    def outstanding() -> int:
        return len(sent) - len(acked) - len(errors)

    def produce_loop() -> None:
        i = 0
        while not stop.is_set():
            r = crash_record(i, rng, base_ts)
            with progress:
                sent.append(r)
                progress.notify_all()
            try:
                fut = producer.send(topic, partition=0, **r)
            except Exception as exc:  # the broker is gone: the send buffer times out
                on_error(exc)
                return
            fut.add_callback(on_ack(i, r["key"], r["value"])).add_errback(on_error)
            i += 1
            # At most ~300 records outstanding: the producer stays busy without buffering
            # tens of thousands of records that then take long to expire.
            with progress:
                progress.wait_for(lambda: outstanding() <= 300 or stop.is_set())

    def wait(predicate, what: str) -> None:
        """Waits (under `progress`) until `predicate`; HANG_GUARD_S only turns a hang into a failure."""
        if not progress.wait_for(lambda: predicate() or not thread.is_alive(), timeout=HANG_GUARD_S) or not predicate():
            raise AssertionError(f"{what}: {len(acked)} acks, {len(sent)} sent, {len(errors)} errors\n{broker.log_tail()}")

    thread = threading.Thread(target=produce_loop, daemon=True)
    t0 = time.monotonic()
    thread.start()
    try:
        with progress:
            # Kill once 2000 records are acknowledged and some sent ones are not, under the
            # condition's lock, so no acknowledgement lands in between.
            wait(lambda: len(acked) >= 2000 and len(sent) - len(acked) > len(errors), "2000 acks with records outstanding")
            unacked_at_kill = len(sent) - len(acked)
            broker.kill()  # mid-produce: the producer is still sending
            sent_after_kill = len(sent)
            # A record sent to the dead broker can never be acknowledged: its failure (the
            # connection is gone, or delivery_timeout_ms passes) guarantees the errors below.
            wait(lambda: len(sent) > sent_after_kill or bool(errors), "the producer stopped sending at the kill")
    finally:
        stop.set()
        with progress:
            progress.notify_all()
        thread.join(HANG_GUARD_S)
        producer.close(timeout=HANG_GUARD_S)  # waits for the pending batches to fail
    assert unacked_at_kill > 0 and errors, "test set-up: the producer should still be sending at the kill"

    with progress:
        acked_now = dict(acked)
    # The acknowledged offsets are exactly the send order (one partition, no retries).
    for offset, (i, _, _) in acked_now.items():
        assert offset == i, f"test set-up: record {i} acknowledged at offset {offset}"
    last_ack = max(acked_now)

    part = broker.partition_dir(topic)
    assert not (broker.log_dir / ".kafka_cleanshutdown").exists()
    assert len(list(part.glob("*.log"))) > 1, "test set-up: the broker should have rolled segments"

    def check(log: kafkalog.UnifiedLog, mode: str) -> None:
        rows = [record_row(r) for r in log.records(end=log.log_end_offset, isolation="log_end")]
        assert log.log_start_offset == 0, mode
        assert log.log_end_offset >= last_ack + 1, f"{mode}: log end {log.log_end_offset} < last ack {last_ack} + 1"
        assert [r[0] for r in rows] == list(range(log.log_end_offset)), f"{mode}: offsets are not 0..LEO-1"
        by_offset = {r[0]: r for r in rows}
        missing = [o for o in sorted(acked_now) if o not in by_offset]
        assert not missing, f"{mode}: {len(missing)} acknowledged records missing, first {missing[:5]}"
        for o, (_, key, value) in acked_now.items():
            assert by_offset[o][3:5] == (key, value), f"{mode}: offset {o} differs from the acknowledged record"
        # Everything in the log, acknowledged or not, is what was sent, in send order.
        for r in rows:
            s = sent[r[0]]
            assert r[1:] == (s["timestamp_ms"], 0, s["key"], s["value"], tuple(s["headers"])), f"{mode}: offset {r[0]}"

    with kafkalog.UnifiedLog.open(part, CRASH_KAFKALOG_CONFIG, read_only=True) as log:
        check(log, "read-only")
        read_only_end = log.log_end_offset
    with kafkalog.UnifiedLog.open(part, CRASH_KAFKALOG_CONFIG) as log:
        check(log, "read-write (recovered)")
        assert log.log_end_offset == read_only_end, "recovery changed the log end of a log with only complete batches"
        recovered_end = log.log_end_offset
        recovered = [record_row(r) for r in log.records(end=recovered_end, isolation="log_end")]

    # Kafka, restarted on the dir kafkalog recovered, serves the same records.
    broker.start()
    try:
        assert consume_all(broker, topic) == recovered
    finally:
        broker.stop()
    print(f"\n{time.monotonic() - t0:.1f}s: acked {len(acked_now)} (last {last_ack}), sent {len(sent)}, log end {recovered_end}, errors {len(errors)}")
