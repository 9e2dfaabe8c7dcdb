"""``kafkalog verify`` on a log dir Kafka 4.3.1 wrote: a broker's own segments, indexes, time
indexes, transaction indexes, producer snapshots, leader epoch checkpoints, partition.metadata
and checkpoints (an exactly-once workload with aborted transactions, small segments so there
are rolled ones) verify clean while the broker runs (read-only: nothing changes on disk) and
after it stops; ``--fix`` refuses the running broker's dir, naming the Java process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kit.files import dir_snapshot
from kit.kafka_harness import create_topic, produce_records, write_transactional_workload

from kafkalog import Record

SCRIPT = Path(sys.executable).with_name("kafkalog")
#: Kafka refuses segment.bytes below 1 MiB; its internal key (tests only) does not.
SMALL_SEGMENTS = {"segment.bytes": str(1 << 20), "internal.segment.bytes": "16384"}


def verify(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), "verify", *map(str, args)], capture_output=True, text=True, timeout=300)


def test_a_kafka_written_log_dir_verifies_clean(kafka_broker) -> None:
    broker = kafka_broker({"log.index.interval.bytes": "512"})
    create_topic(broker, "plain", SMALL_SEGMENTS, partitions=2)
    for codec in ("none", "gzip", "lz4", "zstd", "snappy"):
        records = [Record(f"k{i}".encode(), f"{codec}-{i}".encode() * 8) for i in range(300)]
        produce_records(broker, "plain", records, codec)
    create_topic(broker, "txn", SMALL_SEGMENTS, partitions=2)
    write_transactional_workload(broker, "txn", partitions=2, rounds=12, per_txn=20, leave_open=False)
    plain = broker.partition_dir("plain", 0)
    assert len(list(plain.glob("*.log"))) > 2, "the workload should roll segments"

    live = verify(broker.log_dir)
    assert live.returncode == 0, live.stdout + live.stderr
    refused = verify(broker.log_dir, "--fix")
    assert refused.returncode == 1 and "locked" in refused.stderr and "java" in refused.stderr, refused.stderr

    assert broker.stop() in (0, 143), broker.log_tail()  # 143: the JVM exits on SIGTERM
    before = dir_snapshot(broker.log_dir)
    done = verify(broker.log_dir)
    assert done.returncode == 0, done.stdout
    assert "note" not in done.stdout, done.stdout
    assert dir_snapshot(broker.log_dir) == before
