"""Streaming writes through the ``kafkalog`` data source (``writeStream.format("kafkalog")``):
micro-batches from a file source appended to a log, a stop and a restart from the checkpoint
with nothing lost or repeated, and the documented at-least-once case: a batch whose commit
Spark never recorded runs again on restart and its rows are written twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafkalog import UnifiedLog
from kafkalog.spark.partitioner import partition_for_key

pytestmark = pytest.mark.spark

PARTITIONS = 3


def add_file(inbox: Path, name: str, values: range) -> None:
    """One JSON-lines file of rows key k<v % 7>, value <v> (written aside, then renamed in, so
    the file source never sees it half-written)."""
    tmp = inbox.parent / f".{name}"
    tmp.write_text("".join(json.dumps({"key": f"k{v % 7}", "value": str(v)}) + "\n" for v in values))
    tmp.rename(inbox / name)


def run(spark: SparkSession, inbox: Path, logs: Path, checkpoint: Path) -> None:
    """Writes every file not yet written (one micro-batch per file) and stops."""
    query = (
        spark.readStream.schema("key string, value string")
        .option("maxFilesPerTrigger", "1")
        .json(str(inbox))
        .writeStream.format("kafkalog")
        .option("path", str(logs))
        .option("topic", "events")
        .option("partitions", str(PARTITIONS))
        .option("compression.type", "lz4")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None


def log_contents(logs: Path) -> dict[int, list[tuple[bytes, int]]]:
    """Each partition's (key, value) records in offset order (offsets checked dense)."""
    out = {}
    for p in range(PARTITIONS):
        with UnifiedLog.open(logs / f"events-{p}", read_only=True) as log:
            records = list(log.records())
        assert [r.offset for r in records] == list(range(len(records)))
        out[p] = [(r.key, int(r.value)) for r in records]
    return out


def expected(values: list[int]) -> dict[int, list[tuple[bytes, int]]]:
    out: dict[int, list[tuple[bytes, int]]] = {p: [] for p in range(PARTITIONS)}
    for v in values:
        key = f"k{v % 7}".encode()
        out[partition_for_key(key, PARTITIONS)].append((key, v))
    return out


def test_stream_write_restarts_from_its_checkpoint(spark: SparkSession, tmp_path: Path) -> None:
    inbox, logs, checkpoint = tmp_path / "inbox", tmp_path / "logs", tmp_path / "checkpoint"
    inbox.mkdir()
    add_file(inbox, "a.json", range(0, 100))
    add_file(inbox, "b.json", range(100, 250))
    run(spark, inbox, logs, checkpoint)
    assert log_contents(logs) == expected(list(range(250)))
    # stopped; new input; restarted from the checkpoint: only the new file is written
    add_file(inbox, "c.json", range(250, 300))
    run(spark, inbox, logs, checkpoint)
    assert log_contents(logs) == expected(list(range(300)))
    run(spark, inbox, logs, checkpoint)  # nothing new: nothing written
    assert log_contents(logs) == expected(list(range(300)))


def test_a_batch_spark_did_not_commit_is_written_again(spark: SparkSession, tmp_path: Path) -> None:
    """At-least-once, as documented: the query stops after the sink wrote batch 1 and before
    Spark recorded its commit (the commit file removed, as a crash there leaves it); the
    restart runs batch 1 again from the same source offsets, and its rows are appended twice.
    Batch 0, committed, is not repeated, and nothing is lost."""
    inbox, logs, checkpoint = tmp_path / "inbox", tmp_path / "logs", tmp_path / "checkpoint"
    inbox.mkdir()
    add_file(inbox, "a.json", range(0, 100))
    add_file(inbox, "b.json", range(100, 160))
    run(spark, inbox, logs, checkpoint)
    assert sorted(p.name for p in (checkpoint / "commits").iterdir() if not p.name.startswith(".")) == ["0", "1"]
    for name in ("1", ".1.crc"):  # Hadoop's checksum file goes with it
        (checkpoint / "commits" / name).unlink()
    run(spark, inbox, logs, checkpoint)
    assert log_contents(logs) == expected(list(range(160)) + list(range(100, 160)))
