"""Kafka's DumpLogSegments reads a .txnindex kafkalog wrote (issue 14: "Kafka's DumpLogSegments
reads kafkalog's .snapshot and .txnindex files"): the cleaner keeps the ABORT markers of
producers still active and writes their transactions into the cleaned segment's index through
kafkalog's TransactionIndex; Kafka's TransactionIndex reads the same entries back."""

from __future__ import annotations

import re
from pathlib import Path

import kafkalog
from kafkalog import AbortedTransaction, batches
from kafkalog.records import Record
from kit.kafka_harness import KafkaJars, dump_log_segments

ENTRY = re.compile(
    r"^version: (-?\d+) producerId: (-?\d+) firstOffset: (-?\d+) lastOffset: (-?\d+) lastStableOffset: (-?\d+)$"
)


def test_dump_log_segments_reads_a_kafkalog_txnindex(kafka_jars: KafkaJars, tmp_path: Path) -> None:
    log_dir = tmp_path / "txn-0"
    with kafkalog.UnifiedLog.open(log_dir, {"cleanup.policy": "compact"}) as log:
        offset = 0
        # Three producers: 7 and 9 abort (9's transaction interleaved with 7's), 8 commits.
        for pid, keys in ((7, [b"a", b"b"]), (9, [b"c"]), (8, [b"d"]), (7, [b"e"])):
            records = [Record(k, k, timestamp=1000) for k in keys]
            log.append_as_follower(
                batches.build(offset, records, producer_id=pid, producer_epoch=0, base_sequence=offset, transactional=True)
            )
            offset += len(keys)
        for pid, commit in ((7, False), (8, True), (9, False)):
            log.append_as_follower(batches.end_txn_marker(offset, 1000, producer_id=pid, producer_epoch=0, commit=commit))
            offset += 1
        log.append_as_follower(batches.build(offset, [Record(b"z", b"z", timestamp=1000)]))
        log.roll()
        log.compact_now(time_ms=2000, dedupe_buffer_size=1 << 16)
        ours = log.aborted_transactions()
    assert [t.producer_id for t in ours] == [7, 9], ours
    index = log_dir / f"{0:020d}.txnindex"
    assert index.stat().st_size == 34 * len(ours)

    res = dump_log_segments(kafka_jars, [index])
    assert res.returncode == 0, res.stderr
    dumped = [tuple(int(g) for g in m.groups()) for line in res.stdout.splitlines() if (m := ENTRY.match(line.strip()))]
    assert dumped == [(0, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in ours], res.stdout
    assert [AbortedTransaction(*d[1:]) for d in dumped] == ours
