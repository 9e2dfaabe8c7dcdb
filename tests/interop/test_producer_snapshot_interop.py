"""Kafka's DumpLogSegments reads the producer state snapshots (``.snapshot``) kafkalog writes
(issue 14: "Kafka's DumpLogSegments reads kafkalog's .snapshot and .txnindex files"): leader
appends of idempotent and transactional batches and a coordinator's markers build the producer
table; a roll and a close each write a snapshot; Kafka's ProducerStateManager.readSnapshot,
through DumpLogSegments, prints the same producers as ``UnifiedLog.active_producers`` did when
each was written."""

from __future__ import annotations

import re
from pathlib import Path

import kafkalog
from kafkalog import ActiveProducer, batches
from kafkalog.records import Record
from kit.kafka_harness import KafkaJars, dump_log_segments

ENTRY = re.compile(
    r"^producerId: (-?\d+) producerEpoch: (-?\d+) coordinatorEpoch: (-?\d+) "
    r"currentTxnFirstOffset: OptionalLong(?:\.empty|\[(-?\d+)\]) lastTimestamp: (-?\d+) "
    r"firstSequence: (-?\d+) lastSequence: (-?\d+) lastOffset: (-?\d+) offsetDelta: (-?\d+) timestamp: (-?\d+)$"
)

T0 = 1_700_000_000_000


def _batch(pid: int, epoch: int, seq: int, count: int, transactional: bool) -> bytes:
    records = [Record(b"k%d" % pid, b"v%d" % (seq + i), timestamp=T0 + seq + i) for i in range(count)]
    return batches.build(
        0, records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional
    )


def _dumped(jars: KafkaJars, snapshot: Path) -> list[ActiveProducer]:
    res = dump_log_segments(jars, [snapshot])
    assert res.returncode == 0, res.stderr
    assert f"Dumping {snapshot}" in res.stdout, res.stdout
    producers = []
    for line in res.stdout.splitlines()[1:]:
        m = ENTRY.match(line.strip())
        assert m, f"unexpected DumpLogSegments line: {line!r}\n{res.stdout}"
        pid, epoch, coord, txn, last_ts, _first_seq, last_seq, last_offset, _delta, _ts = m.groups()
        producers.append(
            ActiveProducer(
                int(pid),
                int(epoch),
                int(last_seq),
                int(last_offset),
                int(coord),
                None if txn is None else int(txn),
                int(last_ts),
            )
        )
    return sorted(producers, key=lambda p: p.producer_id)


def test_dump_log_segments_reads_kafkalog_producer_snapshots(kafka_jars: KafkaJars, tmp_path: Path) -> None:
    log_dir = tmp_path / "txn-0"
    with kafkalog.UnifiedLog.open(log_dir) as log:
        # Idempotent producer 5 (several batches, then an epoch bump), transactional producers
        # 7 (open across the roll), 8 (aborted, coordinator epoch 4) and 9 (committed).
        log.append_batch(_batch(5, 2, 0, 3, False))
        log.append_batch(_batch(7, 0, 0, 2, True))
        log.append_batch(_batch(8, 1, 0, 1, True))
        log.append_batch(_batch(5, 2, 3, 2, False))
        log.append_batch(_batch(9, 3, 0, 4, True))
        log.append_txn_marker(8, 1, commit=False, coordinator_epoch=4)
        log.append_txn_marker(9, 3, commit=True, coordinator_epoch=2)
        log.append_batch(_batch(7, 0, 2, 2, True))
        at_roll = log.active_producers
        rolled_at = log.roll()
        # After the roll: 7 commits, 5 bumps its epoch, 9 opens a new transaction.
        log.append_txn_marker(7, 0, commit=True, coordinator_epoch=1)
        log.append_batch(_batch(5, 3, 0, 1, False))
        log.append_batch(_batch(9, 3, 4, 2, True))
        at_close = log.active_producers
        closed_at = log.log_end_offset
    assert any(p.current_txn_first_offset is not None for p in at_roll)
    assert [p.producer_id for p in at_close] == [5, 7, 8, 9]

    roll_snapshot = log_dir / f"{rolled_at:020d}.snapshot"
    close_snapshot = log_dir / f"{closed_at:020d}.snapshot"
    assert roll_snapshot.is_file() and close_snapshot.is_file(), sorted(p.name for p in log_dir.iterdir())
    assert _dumped(kafka_jars, roll_snapshot) == at_roll
    assert _dumped(kafka_jars, close_snapshot) == at_close
