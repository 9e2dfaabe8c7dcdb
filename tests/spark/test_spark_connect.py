"""The ``kafkalog`` data source and ``kafkalog.spark.compact`` through Spark Connect: a server
started by pyspark's ``sbin/start-connect-server.sh`` (local[2], tests/kit/spark_cluster.py)
and a client session (``SparkSession.builder.remote("sc://...")``). The client has no JVM: the
data source is registered, planned and run on the server's side, in its Python workers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import kafkalog
from kafkalog import Record
from kafkalog.spark import compact
from kafkalog.spark.partitioner import partition_for_key

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
COMPACT_CONFIG = {
    "internal.segment.bytes": "4096",
    "delete.retention.ms": "1000",
    "min.compaction.lag.ms": "0",
    "min.cleanable.dirty.ratio": "0",
}


def local_rows(root: Path, topic: str, partitions: int) -> list[tuple]:
    rows = []
    for p in range(partitions):
        with kafkalog.UnifiedLog.open(root / f"{topic}-{p}", read_only=True) as log:
            rows += [(r["topic"], r["partition"], r["offset"], r["key"], r["value"]) for r in log.to_arrow().to_pylist()]
    return sorted(rows)


def test_the_session_is_a_connect_client(connect_spark: SparkSession) -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(connect_spark, ConnectSession)


def test_batch_read_equals_the_local_read(connect_spark: SparkSession, tmp_path: Path) -> None:
    for p in range(2):
        with kafkalog.UnifiedLog.open(tmp_path / f"orders-{p}") as log:
            log.append([(b"k%d" % (i % 7), b"v%d-%d" % (p, i)) for i in range(300)], compression="zstd", batch_size=50)
    df = (connect_spark.read.format("kafkalog").option("path", str(tmp_path)).option("subscribe", "orders")
          .option("startingOffsets", '{"orders": {"0": 100, "1": -2}}').load())
    got = sorted((r["topic"], r["partition"], r["offset"], bytes(r["key"]), bytes(r["value"])) for r in df.collect())
    want = [r for r in local_rows(tmp_path, "orders", 2) if r[1] == 1 or r[2] >= 100]
    assert got == want and len(got) == 500


def test_write_lands_in_the_partitions_the_key_picks(connect_spark: SparkSession, tmp_path: Path) -> None:
    rows = [(f"key-{i % 90}".encode(), f"value-{i}".encode()) for i in range(1000)]
    df = connect_spark.createDataFrame(rows, "key binary, value binary")
    (df.write.format("kafkalog").mode("append").option("path", str(tmp_path)).option("topic", "copy")
       .option("partitions", "3").option("compression.type", "lz4").save())
    written = local_rows(tmp_path, "copy", 3)
    assert all(partition_for_key(k, 3) == p for _, p, _, k, _ in written)
    assert sorted((k, v) for *_, k, v in written) == sorted(rows)


def test_distributed_compact_equals_compact_now(connect_spark: SparkSession, tmp_path: Path) -> None:
    data, expected = tmp_path / "data", tmp_path / "expected"
    for p in range(2):
        with kafkalog.UnifiedLog.open(data / f"users-{p}", {**COMPACT_CONFIG, "cleanup.policy": "compact"}) as log:
            for b in range(40):
                log.append([Record(b"key-%02d" % ((b * 5 + i + p) % 15), b"val-%d-%d" % (b, i), timestamp=T0 + b)
                            for i in range(3)], compression="lz4")
    shutil.copytree(data, expected)
    now = T0 + 100_000
    want = {}
    for p in range(2):
        with kafkalog.UnifiedLog.open(expected / f"users-{p}", {**COMPACT_CONFIG, "cleanup.policy": "compact"}) as log:
            want[p] = log.compact_now(time_ms=now)
    rows = {r["partition"]: r for r in compact(connect_spark, str(data), config=COMPACT_CONFIG, time_ms=now).collect()}
    assert sorted(rows) == [0, 1]
    for p in range(2):
        assert rows[p]["error"] is None
        assert rows[p]["cleaned_to_offset"] == want[p].end_offset
        assert rows[p]["records_after"] < rows[p]["records_before"]
    assert local_rows(data, "users", 2) == local_rows(expected, "users", 2)
    for seg in sorted(expected.glob("users-*/*.log")):
        assert (data / seg.parent.name / seg.name).read_bytes() == seg.read_bytes()
