"""Kafka's cleaner continues from the cleaner-offset-checkpoint the Spark compaction job wrote.

Two partitions of one log dir are compacted by ``kafkalog.spark.compact`` (local[1]; the two
tasks each write their entry into the log dir's one ``cleaner-offset-checkpoint``), records are
appended and the segments rolled, then Kafka 4.3.1's own cleaner (KafkaCleanerDriver with
``--first-dirty-from-checkpoint``: the file read by Kafka's ``OffsetCheckpointFile``, as a
broker's ``LogCleanerManager`` reads it at start-up, and ``cleanableOffsets`` applied) cleans
each partition. Kafka must read each partition's entry as the job wrote it, start its clean
there, and map exactly the appended records; the log it leaves reads back as the latest value
of every key.

Runtime: a local Spark session (about 7 s) and two short JVM runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import kafkalog
from kafkalog import Record
from kafkalog.checkpoints import read_offset_checkpoint
from kit.kafka_harness import KafkaJars, run_kafka_cleaner

T0 = 1_700_000_000_000
NOW = T0 + 3_600_000
CONFIG = {"cleanup.policy": "compact", "internal.segment.bytes": "4096", "min.compaction.lag.ms": "0",
          "delete.retention.ms": "86400000"}


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]").appName("kafkalog-interop")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g").getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def append(path: Path, first: int, count: int, keys: int) -> None:
    with kafkalog.UnifiedLog.open(path, CONFIG) as log:
        for i in range(first, first + count):
            log.append([Record(b"key-%d" % (i % keys), b"value-%d-" % i + b"x" * 60, timestamp=T0 + i)],
                       compression="lz4" if i % 2 else "none")
        log.roll()


def test_kafkas_cleaner_starts_at_the_entry_the_spark_job_wrote(kafka_jars: KafkaJars, spark, tmp_path):
    from kafkalog.spark import compact

    data = tmp_path / "logs"
    for p in range(2):
        append(data / f"users-{p}", 0, 400, 50)
    rows = {r["partition"]: r for r in compact(spark, data, config=CONFIG, time_ms=NOW).collect()}
    assert all(r["error"] is None and r["skipped"] is None and r["cleaned_to_offset"] == 400 for r in rows.values())
    assert read_offset_checkpoint(data / "cleaner-offset-checkpoint") == {("users", 0): 400, ("users", 1): 400}

    new = 37
    latest: dict[int, dict[bytes, bytes]] = {}
    for p in range(2):
        append(data / f"users-{p}", 400, new, 50)
        with kafkalog.UnifiedLog.open(data / f"users-{p}", read_only=True) as log:
            latest[p] = {r.key: r.value for r in log.records()}

    run = run_kafka_cleaner(
        kafka_jars, "--dir", ",".join(str(data / f"users-{p}") for p in range(2)), "--now-ms", str(NOW),
        "--map-bytes", str(1 << 20), "--first-dirty-from-checkpoint", "true", config=CONFIG,
    )
    assert len(run.runs) == 2
    for p, kafka in enumerate(run.runs):
        assert kafka["checkpoint"] == 400 and kafka["first_dirty_offset"] == 400, kafka
        assert kafka["end_offset"] == 400 + new
        assert sum(x["map_messages_read"] for x in kafka["passes"]) == new
        with kafkalog.UnifiedLog.open(data / f"users-{p}", read_only=True) as log:
            records = list(log.records())
        assert {r.key: r.value for r in records} == latest[p]
        assert len({r.key for r in records}) == len(records) == 50
