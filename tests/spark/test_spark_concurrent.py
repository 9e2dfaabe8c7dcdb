"""Reading a log another process is appending to: each Spark read is a consistent prefix of
what was appended (offsets 0..n-1, each record exactly as written), however the executors'
opens interleave with the appends and segment rolls. The child says when it has appended
enough (a line on its stdout, read blocking), so nothing here polls or depends on its pace."""

from __future__ import annotations

import select
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafkalog import UnifiedLog

pytestmark = pytest.mark.spark

CHILD = Path(__file__).with_name("appender_child.py")


def log_end(path: Path) -> int:
    with UnifiedLog.open(path, read_only=True) as log:
        return log.log_end_offset


def wait_until_ready(child: subprocess.Popen[str]) -> int:
    """Blocks until the child prints ``ready <n>`` (it has appended n >= 3000 records); the
    timeout only bounds a hang."""
    assert child.stdout is not None
    readable, _, _ = select.select([child.stdout], [], [], 300)
    assert readable, "the appending child printed nothing for 300 s"
    line = child.stdout.readline()
    assert line.startswith("ready "), f"the appending child died before it was ready (exit {child.wait()})"
    return int(line.split()[1])


def test_read_while_another_process_appends_is_a_consistent_prefix(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "live-0"
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(path), "3000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert wait_until_ready(child) >= 3000
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
        assert child.poll() is None  # the writer is alive throughout: appending, or done and waiting
    finally:
        child.kill()
        child.wait()
        assert child.stdin is not None
        child.stdin.close()
    with UnifiedLog.open(path, read_only=True) as log:
        assert len(log.segments) >= 3
