"""The ``kafkalog`` data source and ``kafkalog.spark.compact`` through Spark Connect: a server
started by pyspark's ``sbin/start-connect-server.sh`` (local[2], tests/kit/spark_cluster.py)
and a client session (``SparkSession.builder.remote("sc://...")``). The client has no JVM: the
data source is registered, planned and run on the server's side, in its Python workers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import kafkalog
from kafkalog.spark import compact
from kafkalog.spark.partitioner import partition_for_key
from kit.remote_spark import COMPACT_CONFIG, check_clean_equals_compact_now, local_rows

pytestmark = pytest.mark.spark

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
    def job(data: Path, now: int) -> dict[int, Any]:
        rows = compact(connect_spark, str(data), config=COMPACT_CONFIG, time_ms=now).collect()
        return {r["partition"]: r for r in rows}

    check_clean_equals_compact_now(tmp_path, ["lz4", "zstd"], job)
