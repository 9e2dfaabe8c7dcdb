"""Reading a log another process is appending to: each Spark read is a consistent prefix of
what was appended (offsets 0..n-1, each record exactly as written), however the executors'
opens interleave with the appends and segment rolls."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafkalog import UnifiedLog

pytestmark = pytest.mark.spark

CHILD = Path(__file__).with_name("appender_child.py")


def log_end(path: Path) -> int:
    with UnifiedLog.open(path, read_only=True) as log:
        return log.log_end_offset


def test_read_while_another_process_appends_is_a_consistent_prefix(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "live-0"
    child = subprocess.Popen([sys.executable, str(CHILD), str(path)])
    try:
        deadline = time.monotonic() + 60
        while not (path.exists() and log_end(path) >= 3000):
            assert child.poll() is None, "the appending child died"
            assert time.monotonic() < deadline, "the child appended too slowly"
            time.sleep(0.1)
        previous = 0
        for min_partitions in ("1", "4", "3"):
            before = log_end(path)
            df = (
                spark.read.format("kafkalog")
                .option("path", str(path))
                .option("minPartitions", min_partitions)
                .load()
                .selectExpr("offset", "cast(key as string) as k", "cast(substring(value, 1, 10) as string) as v")
            )
            got = df.orderBy("offset").collect()
            n = len(got)
            assert n >= before and n >= previous
            assert [r["offset"] for r in got] == list(range(n))
            assert all(r["k"] == f"k{r['offset']}" and r["v"].rstrip(".") == str(r["offset"]) for r in got)
            previous = n
        assert child.poll() is None  # still appending: the reads really overlapped the writes
    finally:
        child.kill()
        child.wait()
    with UnifiedLog.open(path, read_only=True) as log:
        assert len(log.segments) >= 3
