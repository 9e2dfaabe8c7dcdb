"""Transactional and idempotent data written through a real Kafka 4.3.1 broker by Kafka's own
producers (tests/kit/jvm/java/TransactionalWorkload.java): what kafkalog reads from the broker's
partition directories against what Kafka's consumers read.

Round t of the workload, on each partition: the transaction's records ``t{t}-{i}``, then an
idempotent producer's ``i{t}`` and a plain producer's ``p{t}``, then the COMMIT marker, or an
ABORT when ``t % 3 == 2``. The last round's transaction stays open.

:func:`committed_view` is that layout's read_committed view. The test holds it equal to a
``read_committed`` Kafka consumer's, record for record, so the model is Kafka's behaviour and
not a guess. kafkalog's ``read_uncommitted`` view must equal a ``read_uncommitted`` consumer's.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kafkalog
from kit.kafka_harness import KafkaBroker, consume_all, create_topic, write_transactional_workload
from kit.records import record_row

TOPIC = "eos"
PARTITIONS = 3
ROUNDS = 10
PER_TXN = 40


def committed_view(partition: int, rounds: int = ROUNDS, per_txn: int = PER_TXN) -> list[bytes]:
    """The keys a read_committed consumer returns from one partition, in offset order. Records
    of aborted transactions are left out. So is everything from the open transaction's first
    offset on, its last stable offset, which includes the last round's idempotent and plain
    records."""
    keys: list[bytes] = []
    for t in range(rounds - 1):
        if t % 3 != 2:
            keys += [b"t%d-%d" % (t, i) for i in range(per_txn)]
        keys += [b"i%d" % t, b"p%d" % t]
    return keys


@pytest.fixture(scope="module")
def eos_broker(kafka_jars, tmp_path_factory: pytest.TempPathFactory):
    """One broker with the workload written, read by both consumers, then stopped cleanly. Yields
    the broker and each partition's (read_uncommitted rows, read_committed rows)."""
    broker = KafkaBroker(kafka_jars, tmp_path_factory.mktemp("eos-broker"), name="test_transactions_interop eos")
    try:
        broker.start()
        create_topic(broker, TOPIC, {"segment.bytes": str(1 << 20), "internal.segment.bytes": "2048"}, PARTITIONS)
        write_transactional_workload(broker, TOPIC, PARTITIONS, ROUNDS, PER_TXN, leave_open=True)
        views = {
            p: (
                consume_all(broker, TOPIC, p),
                consume_all(broker, TOPIC, p, isolation_level="read_committed"),
            )
            for p in range(PARTITIONS)
        }
        broker.stop()  # SIGTERM: a clean shutdown
        yield broker, views
    finally:
        broker.release()


def test_kafka_read_committed_consumer_matches_the_workload_model(eos_broker) -> None:
    """The model later tests hold kafkalog's read_committed view to is what Kafka's consumer
    returns, and the data really holds aborted and open transactions."""
    _, views = eos_broker
    for p, (uncommitted, committed) in views.items():
        assert [row[3] for row in committed] == committed_view(p), f"partition {p}"
        assert all(row[4] == row[3] + b"@%d" % p for row in uncommitted)
        aborted = {b"t%d-%d" % (t, i) for t in range(2, ROUNDS - 1, 3) for i in range(PER_TXN)}
        assert aborted <= {row[3] for row in uncommitted}, "the aborted records are in the log"
        assert len(uncommitted) == ROUNDS * (PER_TXN + 2)


def test_kafkalog_read_uncommitted_equals_kafka_consumer_on_transactional_data(eos_broker) -> None:
    """Every partition, opened read-only from the stopped broker's dir: kafkalog's records are
    the read_uncommitted consumer's, offset for offset. Control records are not returned,
    aborted and open transactions' records are."""
    broker, views = eos_broker
    for p, (uncommitted, _) in views.items():
        with kafkalog.UnifiedLog.open(broker.partition_dir(TOPIC, p), read_only=True) as log:
            rows = [record_row(r) for r in log.records(0, log.log_end_offset)]
            assert len(log.segments) > 1, "the workload spans several segments"
        assert rows == uncommitted, f"partition {p}"


def arrow_rows(table: pa.Table) -> list[tuple]:
    """A to_arrow / iter_arrow table as record rows (offset, ms, type, key, value, headers)."""
    ms = pc.divide(table.column("timestamp").cast(pa.int64()), 1000).to_pylist()
    return [
        (row["offset"], ms[i], row["timestampType"], row["key"], row["value"], tuple((h["key"], h["value"]) for h in row["headers"] or []))
        for i, row in enumerate(table.to_pylist())
    ]


def test_kafkalog_read_committed_equals_kafka_consumer_on_transactional_data(eos_broker) -> None:
    """kafkalog's read_committed view of every partition, read up to Kafka's last stable offset
    (the first offset of the open transaction, ``t{ROUNDS-1}-0``), is the read_committed Kafka
    consumer's, row for row, through records(), to_arrow() and iter_arrow() (in small chunks):
    the records of aborted transactions and the control records are left out, by the broker's
    .txnindex files. Left to itself (no end given) each read stops at the log's own last stable
    offset, which equals the consumer's end offset: producer state rebuilt from the broker's
    snapshots and segments finds the open transaction."""
    broker, views = eos_broker
    for p, (uncommitted, committed) in views.items():
        lso = next(row[0] for row in uncommitted if row[3] == b"t%d-0" % (ROUNDS - 1))
        with kafkalog.UnifiedLog.open(broker.partition_dir(TOPIC, p), read_only=True) as log:
            assert log.aborted_transactions(0, lso), "the broker indexed the aborted transactions"
            rows = [record_row(r) for r in log.records(0, lso, isolation="read_committed")]
            table = log.to_arrow(0, lso, isolation="read_committed")
            chunks = list(log.iter_arrow(0, lso, isolation="read_committed", max_chunk_bytes=256))
            assert log.last_stable_offset == lso, f"partition {p}"
            assert [o.first_offset for o in log.ongoing_transactions] == [lso]
            unbounded = [record_row(r) for r in log.records(isolation="read_committed")]
            assert arrow_rows(log.to_arrow(isolation="read_committed")) == committed
        assert unbounded == committed, f"partition {p}: records() up to the log's own LSO"
        assert rows == committed, f"partition {p}: records()"
        assert arrow_rows(table) == committed, f"partition {p}: to_arrow()"
        assert len(chunks) > 1 and arrow_rows(pa.Table.from_batches(chunks)) == committed, f"partition {p}: iter_arrow()"
