"""kafkalog's leader-epoch-checkpoint read by Kafka: a log written with several leader epochs
(leader and follower appends, then a log-start move and a truncation) has its checkpoint read by
Kafka 4.3.1's LeaderEpochCheckpointFile (java/LeaderEpochCheckpointReader.java) into the same
entries, and Kafka's LeaderEpochFileCache built from it answers endOffsetFor as kafkalog's
end_offset_for does."""

from __future__ import annotations

import kafkalog
from kafkalog import EpochEntry, Record, batches

TS = 1_700_000_000_000
UNDEFINED = (-1, -1)


def records(n: int, tag: str) -> list[Record]:
    return [Record(key=f"k{i}".encode(), value=f"{tag}-{i}".encode(), timestamp=TS + i) for i in range(n)]


def kafka_view(kafka_jars, path, log_end_offset: int, epochs: list[int]) -> tuple[list[EpochEntry], dict]:
    proc = kafka_jars.java("LeaderEpochCheckpointReader", str(path), str(log_end_offset), *map(str, epochs))
    assert proc.returncode == 0, proc.stderr
    entries, answers = [], {}
    for line in proc.stdout.splitlines():
        kind, *fields = line.split()
        if kind == "E":
            entries.append(EpochEntry(int(fields[0]), int(fields[1])))
        elif kind == "O":
            answers[int(fields[0])] = (int(fields[1]), int(fields[2]))
    return entries, answers


def test_kafka_reads_kafkalogs_leader_epoch_checkpoint(tmp_path, kafka_jars):
    path = tmp_path / "epochs-0"
    asked = [-1, 0, 1, 2, 3, 4, 5, 6, 7, 9]
    with kafkalog.UnifiedLog.open(path, {"internal.segment.bytes": "1024"}) as log:
        log.append(records(20, "a"), leader_epoch=0)
        log.append(records(15, "b"), leader_epoch=2)
        log.append_as_follower(batches.build(35, records(10, "c"), partition_leader_epoch=5))
        log.append(records(12, "d"), leader_epoch=7)
        log.append(records(5, "e"), leader_epoch=9)
        log.delete_records(25)
        log.truncate_to(57)  # epoch 9's records go, and its entry
        entries, leo = log.epoch_entries, log.log_end_offset
        assert len(log.segments) > 1
        ours = {e: log.end_offset_for(e) for e in asked}
    assert entries == [EpochEntry(2, 25), EpochEntry(5, 35), EpochEntry(7, 45)]

    theirs_entries, theirs = kafka_view(kafka_jars, path, leo, asked)
    assert theirs_entries == entries
    assert {e: (None if theirs[e] == UNDEFINED else (theirs[e][1], theirs[e][0])) for e in asked} == {
        e: (None if r is None else (r.offset, r.leader_epoch)) for e, r in ours.items()
    }
