"""The ``kafkalog`` data source and the maintenance jobs on a real Spark standalone cluster: a
master and two workers started by pyspark's ``spark-class`` (tests/kit/spark_cluster.py), one
executor JVM per worker, each with its own Python workers. Nothing the driver holds (its
process, its working directory, its imported modules) reaches the tasks, so these tests catch
what local[2] hides: a path resolved against the wrong directory, state only the driver has.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import kafkalog
from kafkalog import Record
from kafkalog.spark import compact
from kafkalog.spark.partitioner import partition_for_key
from kit.remote_spark import COMPACT_CONFIG, T0, check_clean_equals_compact_now, local_rows
from kit.spark_cluster import StandaloneCluster, task_process

pytestmark = pytest.mark.spark

def executor_jvms(rows: list[tuple[int, str, int, str]]) -> set[int]:
    """The executor JVMs that ran ``rows``' tasks, after checking each is an executor (not the
    driver) and its Python worker ran this interpreter (the venv with kafkalog)."""
    for pid, python, _jvm, cmdline in rows:
        assert pid != os.getpid()
        assert python == sys.executable
        assert "CoarseGrainedExecutorBackend" in cmdline, cmdline
    return {jvm for _, _, jvm, _ in rows}


def write_topic(root: Path, topic: str, partitions: int, seed: int) -> None:
    codecs = ["none", "lz4", "zstd", "gzip"]
    for p in range(partitions):
        with kafkalog.UnifiedLog.open(root / f"{topic}-{p}", {"internal.segment.bytes": "8192"}) as log:
            for b in range(20):
                records = [
                    Record(b"k%d" % ((seed + b * 7 + i) % 37), b"v-%d-%d-%d" % (p, b, i) * (1 + i % 3),
                           (("h", b"%d" % i),) if i % 2 else (), timestamp=T0 + b)
                    for i in range(1 + (b + p) % 5)
                ]
                log.append(records, compression=codecs[(p + b) % len(codecs)])


def test_tasks_run_in_executor_jvms_on_both_workers(cluster_spark: SparkSession, spark_cluster: StandaloneCluster) -> None:
    """Two executors, one per worker, each a JVM other than the driver's, running the venv's
    Python (PYSPARK_PYTHON reaches them from the driver)."""
    apps = spark_cluster.status()["activeapps"]
    assert [a["name"] for a in apps] == ["kafkalog-cluster-tests"]
    rows = cluster_spark.sparkContext.parallelize(range(8), 8).map(lambda _: task_process()).collect()
    jvms = executor_jvms(rows)
    assert len(jvms) == 2  # eight tasks over two single-core executors: both ran some
    driver_jvm = cluster_spark.sparkContext._jvm.ProcessHandle.current().pid()  # type: ignore[union-attr]
    assert driver_jvm not in jvms


def test_batch_read_equals_the_local_read(cluster_spark: SparkSession, tmp_path: Path) -> None:
    write_topic(tmp_path, "orders", 3, seed=1)
    task = F.udf(lambda: json.dumps(task_process()), "string")  # pipelined into the scan's tasks
    df = (
        cluster_spark.read.format("kafkalog").option("path", str(tmp_path)).option("subscribe", "orders")
        .option("includeHeaders", "true").load().withColumn("task", task())
    )
    got = df.collect()
    assert sorted(
        (r["topic"], r["partition"], r["offset"], bytes(r["key"]), bytes(r["value"]), r["timestamp"]) for r in got
    ) == [(t, p, o, k, v, ts.replace(tzinfo=None)) for t, p, o, k, v, ts in local_rows(tmp_path, "orders", 3, timestamps=True)]
    assert len(executor_jvms([tuple(json.loads(r["task"])) for r in got])) == 2  # three tasks, two executors
    with_headers = [r for r in got if r["headers"]]
    assert with_headers and all(r["headers"][0]["key"] == "h" for r in with_headers)


def test_write_lands_in_the_partitions_the_key_picks(cluster_spark: SparkSession, tmp_path: Path) -> None:
    rows = [(f"key-{i % 150}".encode(), f"value-{i}".encode()) for i in range(3000)]
    df = cluster_spark.createDataFrame(rows, "key binary, value binary").repartition(4)
    (df.write.format("kafkalog").mode("append").option("path", str(tmp_path)).option("topic", "copy")
       .option("partitions", "4").option("compression.type", "lz4").save())
    written = []
    for p in range(4):
        with kafkalog.UnifiedLog.open(tmp_path / f"copy-{p}", read_only=True) as log:
            for r in log.to_arrow().to_pylist():
                assert partition_for_key(r["key"], 4) == p
                written.append((r["key"], r["value"]))
    assert sorted(written) == sorted(rows)
    # Nothing went anywhere else: the topic's four partition dirs are all there is.
    assert sorted(d.name for d in tmp_path.iterdir()) == [f"copy-{p}" for p in range(4)]


def test_relative_paths_are_the_driver_s_not_each_executor_s(cluster_spark: SparkSession, tmp_path: Path) -> None:
    """A relative ``path`` means the driver's working directory, as for Spark's file sources;
    executors run in their own work dirs, so a path passed on as given would write into them
    (and read from them)."""
    cwd = cluster_spark.sparkContext._jvm.System.getProperty("user.dir")  # type: ignore[union-attr]
    relative = os.path.relpath(tmp_path, cwd)
    assert not os.path.isabs(relative)
    df = cluster_spark.createDataFrame([(b"k%d" % i, b"v%d" % i) for i in range(100)], "key binary, value binary")
    (df.write.format("kafkalog").mode("append").option("path", relative).option("topic", "rel")
       .option("partitions", "2").save())
    assert len(local_rows(tmp_path, "rel", 2)) == 100
    read = cluster_spark.read.format("kafkalog").option("path", relative).option("subscribe", "rel").load()
    assert sorted(bytes(r["value"]) for r in read.collect()) == sorted(b"v%d" % i for i in range(100))


def test_stream_restarts_from_its_checkpoint(cluster_spark: SparkSession, tmp_path: Path) -> None:
    """Trigger.AvailableNow runs: the second resumes where the first stopped (neither skipping
    nor repeating), the third finds nothing new; the sink is the kafkalog topic ``out``."""
    logs, ckpt = tmp_path / "logs", tmp_path / "ckpt"

    def append(topic_partition: str, values: range) -> None:
        with kafkalog.UnifiedLog.open(logs / topic_partition) as log:
            log.append([(b"k%d" % v, b"%d" % v) for v in values], batch_size=64)

    def run() -> list[int]:
        seen: list[int] = []

        def batch(df, _id) -> None:
            rows = df.select("key", "value").collect()
            seen.extend(int(r["value"]) for r in rows)
            if rows:
                (df.select("key", "value").write.format("kafkalog").mode("append").option("path", str(logs))
                   .option("topic", "out").option("partitions", "1").save())

        query = (
            cluster_spark.readStream.format("kafkalog").option("path", str(logs)).option("subscribe", "in")
            .option("startingOffsets", "earliest").load()
            .writeStream.foreachBatch(batch).option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start()
        )
        assert query.awaitTermination(300)
        assert query.exception() is None
        return sorted(seen)

    append("in-0", range(0, 40))
    append("in-1", range(1000, 1010))
    assert run() == list(range(40)) + list(range(1000, 1010))
    append("in-0", range(40, 55))
    assert run() == list(range(40, 55))
    assert run() == []
    out = sorted(int(v) for *_, v, _ in local_rows(logs, "out", 1, timestamps=True))
    assert out == list(range(55)) + list(range(1000, 1010))


def test_distributed_compact_equals_compact_now(cluster_spark: SparkSession, tmp_path: Path) -> None:
    def job(data: Path, now: int) -> dict[int, Any]:
        rows = compact(cluster_spark, str(data), config=COMPACT_CONFIG, time_ms=now).collect()
        return {r["partition"]: r for r in rows}

    check_clean_equals_compact_now(tmp_path, ["none", "lz4", "zstd", "gzip"], job)


def test_compact_log_column_function_on_executors(cluster_spark: SparkSession, tmp_path: Path) -> None:
    """kafkalog.spark.functions.compact_log over a column of partition dirs: each row's clean
    equals compact_now on a copy; a second run finds nothing dirty (the log dir's
    cleaner-offset-checkpoint the first wrote), and said so in ``skipped``."""
    from kafkalog.spark.functions import compact_log

    def column_function(data: Path, now: int) -> dict[int, Any]:
        dirs = cluster_spark.createDataFrame([(str(data / f"users-{p}"),) for p in range(2)], "path string")
        rows = dirs.repartition(2).select(compact_log("path", COMPACT_CONFIG, time_ms=now).alias("r")).select("r.*")
        return {r["partition"]: r.asDict() for r in rows.collect()}

    check_clean_equals_compact_now(tmp_path, ["lz4", "zstd"], column_function, seed=5)
    second = column_function(tmp_path / "data", T0 + 100_000)
    assert all(second[p]["skipped"].startswith("nothing dirty") for p in range(2)), second
