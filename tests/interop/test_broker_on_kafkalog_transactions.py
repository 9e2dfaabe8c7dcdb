"""A broker started on a transactional partition kafkalog wrote (issue 14: "A broker started on a
kafkalog-written transactional partition serves the same read_committed view, and uses
kafkalog's snapshot instead of rebuilding (its log says so)").

kafkalog writes, as the leader, the segments of a topic a broker created: a committed
transaction, an aborted one, idempotent batches, then an open transaction with committed and
plain records after its start, and closes the log (which writes a ``.snapshot`` at the log end).
The broker restarts after its clean shutdown, so Kafka does not scan the segments: without a
snapshot it would start with an empty producer table (UnifiedLog.rebuildProducerState's upgrade
path) and forget the open transaction. It must load kafkalog's snapshot (its log names the file),
and a ``read_committed`` kafka-python consumer must get exactly kafkalog's ``read_committed``
view, ending at kafkalog's last stable offset (the open transaction's first offset)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import kafkalog
from kafkalog import batches
from kafkalog.records import Record
from kit.kafka_harness import KafkaBroker, consume_all, create_topic

CONFIG = {"segment.bytes": str(1 << 20), "internal.segment.bytes": "2048"}
COMMITTED, ABORTED, IDEMPOTENT, OPEN = 5001, 5002, 5003, 5004


def _rows(log: kafkalog.UnifiedLog, isolation: str) -> list[tuple[object, ...]]:
    return [
        (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple(r.headers))
        for r in log.records(isolation=isolation)
    ]


def _write(part: Path) -> tuple[list[tuple[object, ...]], int, int]:
    """Writes the partition; returns kafkalog's read_committed rows, its LSO and log end."""
    now = int(time.time() * 1000)
    seqs: dict[int, int] = {}

    def batch(log: kafkalog.UnifiedLog, pid: int, n: int, transactional: bool, codec: str = "none") -> None:
        seq = seqs.get(pid, 0)
        records = [Record(b"p%d" % pid, b"p%d-%d" % (pid, seq + i), timestamp=now + seq + i) for i in range(n)]
        raw = batches.build(
            0, records, compression=codec, producer_id=pid, producer_epoch=0, base_sequence=seq, transactional=transactional
        )
        log.append_batch(raw)
        seqs[pid] = seq + n

    with kafkalog.UnifiedLog.open(part, CONFIG) as log:
        batch(log, COMMITTED, 3, True)
        batch(log, ABORTED, 4, True, "lz4")
        batch(log, IDEMPOTENT, 2, False)
        batch(log, COMMITTED, 2, True, "gzip")
        log.append_txn_marker(ABORTED, 0, commit=False, coordinator_epoch=1)
        log.append_txn_marker(COMMITTED, 0, commit=True, coordinator_epoch=1)
        log.roll()
        batch(log, OPEN, 3, True, "zstd")
        batch(log, COMMITTED, 2, True)
        log.append_txn_marker(COMMITTED, 0, commit=True, coordinator_epoch=1)
        batch(log, IDEMPOTENT, 2, False)
        log.append([Record(b"plain", b"after the open transaction", timestamp=now)])
        assert [t.producer_id for t in log.ongoing_transactions] == [OPEN]
        assert [t.producer_id for t in log.aborted_transactions()] == [ABORTED]
        lso, end = log.last_stable_offset, log.log_end_offset
        assert lso == log.ongoing_transactions[0].first_offset < end
        committed = _rows(log, "read_committed")
        assert 0 < len(committed) < len(_rows(log, "read_uncommitted"))
    return committed, lso, end


def test_broker_serves_kafkalog_transactions_from_its_snapshot(kafka_broker: Callable[..., KafkaBroker]) -> None:
    topic = "kafkalog-txn"
    broker = kafka_broker()
    create_topic(broker, topic, CONFIG)
    broker.stop()
    assert (broker.log_dir / ".kafka_cleanshutdown").exists()
    part = broker.partition_dir(topic)
    for f in part.iterdir():
        if f.name != "partition.metadata":
            f.unlink()

    committed, lso, end = _write(part)
    snapshot = part / f"{end:020d}.snapshot"
    assert snapshot.is_file(), sorted(p.name for p in part.iterdir())

    broker.start()
    try:
        consumed = consume_all(broker, topic, isolation_level="read_committed")
    finally:
        broker.stop()
    log_text = broker.server_log.read_text(errors="replace")
    # Kafka read kafkalog's snapshot at the log end and replayed no segment.
    assert f"Loading producer state from snapshot file 'SnapshotFile(offset={end}, file={snapshot})'" in log_text, (
        broker.log_tail()
    )
    assert f"[LogLoader partition={topic}-0, dir={broker.log_dir}] Producer state recovery took" in log_text
    # The consumer stopped at the broker's LSO, kafkalog's (the open transaction's first
    # offset): the records after it are there but not yet visible.
    assert consumed == committed, "a read_committed Kafka consumer read another view than kafkalog's"
    assert consumed[-1][0] < lso
