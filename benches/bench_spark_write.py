"""Spark write throughput: the same cached DataFrame written three ways in one run, on
``local[2]``:

- **kafkalog** (the Arrow sink): ``df.write.format("kafkalog")``; each task routes Spark's
  Arrow batches with Kafka's partitioner in Rust and appends them with
  ``UnifiedLog.append_arrow`` (no Python object per record);
- **kafkalog-rows** (the baseline, the sink before the Arrow path):
  ``df.write.format("kafkalog-rows")`` (:mod:`kafkalog.spark.row_writer`), the same options,
  one Python tuple per record;
- **parquet**: ``df.write.parquet`` (Spark's default codec, snappy);
- **arrow-floor** (not a goal, a measure): a Python ``DataSourceArrowWriter`` that reads every
  Arrow batch Spark sends it and drops it: what any Python data source pays before it writes
  a byte (Spark turning the rows into Arrow, the socket to the Python worker, the commit).

The DataFrame has ``--records`` rows (2 M by default) of a 15-byte key (``customer-NNNNNN``,
repeating every 50,000, as in a change stream) and a ``--value-size``-byte value (100); it is
cached in memory and counted before any clock starts, so no path pays for generating it.
kafkalog writes it into a topic of ``--partitions`` partitions (4), uncompressed by default
(``--codec``). Before the timed runs, each path writes a small DataFrame once, untimed (Spark
starts and reuses its Python workers, the JVM compiles the plans). The timed runs go round
robin over the paths, each into a fresh directory, so a load change hits all of them, and
start after an untimed ``os.sync()``, so no path pays for the last one's writeback (kafkalog
fsyncs each partition when a task releases it, as any close does; Parquet does not); figures
are medians of ``--runs`` runs; MB are the key + value bytes. The 1-minute load average before
and after is printed (the benches run on shared machines).

Goals (issue 15): kafkalog's time <= 1.5 x Parquet's; kafkalog >= 5 x kafkalog-rows.

Run: ``.venv/bin/python benches/bench_spark_write.py [--records N] [--runs R] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

from bench_common import Column, machine, print_table, work_dir  # noqa: E402
from pyspark import StorageLevel  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, DataSourceWriter, WriterCommitMessage  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

import kafkalog.spark  # noqa: E402
from kafkalog.spark.row_writer import KafkaLogRowDataSource  # noqa: E402

PATHS = ("kafkalog", "kafkalog-rows", "parquet", "arrow-floor")


class _Drop(DataSourceArrowWriter):
    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()


class ArrowFloor(DataSource):
    """Format ``arrow-floor``: reads every Arrow batch and drops it."""

    @classmethod
    def name(cls) -> str:
        return "arrow-floor"

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return _Drop()


def frame(spark: SparkSession, records: int, value_size: int) -> DataFrame:
    """``records`` rows of (key string, value string): the value is ``value_size`` ASCII bytes
    ending in the row number."""
    pad = max(value_size - 7, 0)
    return spark.range(records, numPartitions=2).selectExpr(
        "concat('customer-', lpad(cast(id % 50000 as string), 6, '0')) as key",
        f"substr(concat(repeat('x', {pad}), '-', lpad(cast(id % 1000000 as string), 6, '0')), 1, {value_size}) as value",
    )


def writer(kind: str, partitions: int, codec: str) -> Callable[[DataFrame, Path], None]:
    def write(df: DataFrame, out: Path) -> None:
        if kind == "parquet":
            df.write.parquet(str(out))
            return
        if kind == "arrow-floor":
            df.write.format(kind).mode("append").save()
            return
        w = df.write.format(kind).mode("append").option("path", str(out)).option("topic", "bench")
        w.option("partitions", str(partitions)).option("compression.type", codec).save()

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4, help="partitions of the kafkalog topic")
    parser.add_argument("--codec", default="none", help="kafkalog's compression.type")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 K records, one run")
    parser.add_argument("--scratch", help="directory for the output (default: the temp dir)")
    args = parser.parse_args()
    if args.quick:
        args.records, args.runs = 200_000, 1

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-spark-write")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.memory", "2g")
        # As the demo's session: Arrow batches to Python bounded by rows only (the byte bound makes
        # Spark size the batch after every row; README, "Writing from Spark"). Parquet does not use it.
        .config("spark.sql.execution.arrow.maxBytesPerBatch", str(2**31 - 1))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafkalog.spark.register(spark)
    spark.dataSource.register(KafkaLogRowDataSource)
    spark.dataSource.register(ArrowFloor)
    df = frame(spark, args.records, args.value_size).persist(StorageLevel.MEMORY_ONLY)
    assert df.count() == args.records
    payload = args.records * (15 + args.value_size)
    writers = {kind: writer(kind, args.partitions, args.codec) for kind in PATHS}
    times: dict[str, list[float]] = {kind: [] for kind in PATHS}
    load_before = machine()
    with work_dir("bench-spark-write-", args.scratch, keep=False) as work:
        warm = frame(spark, 20_000, args.value_size)
        for kind in PATHS:
            writers[kind](warm, work / f"warm-{kind}")
        for run in range(args.runs):
            for kind in PATHS:
                os.sync()  # the last path's dirty pages go to disk outside anyone's clock
                t0 = time.perf_counter()
                writers[kind](df, work / f"{kind}-{run}")
                times[kind].append(time.perf_counter() - t0)
        check = spark.read.format("kafkalog").option("path", str(work / "kafkalog-0")).option("subscribe", "bench").load()
        assert check.count() == args.records
    load_after = machine()
    spark.stop()

    median = {kind: statistics.median(t) for kind, t in times.items()}
    print(
        f"Spark write, local[2]: {args.records:,} records, 15-byte keys, {args.value_size}-byte values, "
        f"kafkalog {args.partitions} partitions codec {args.codec}, parquet snappy; median of {args.runs}"
    )
    print(f"before: {load_before}; after: {load_after}")
    columns = [Column("path", 14, left=True), Column("time", 9), Column("records/s", 12), Column("MB/s", 8), Column("runs", 30, left=True)]
    print_table(
        columns,
        [
            (kind, f"{s:.2f} s", f"{args.records / s:,.0f}", f"{payload / s / 1e6:.1f}", " ".join(f"{t:.2f}" for t in times[kind]))
            for kind, s in median.items()
        ],
    )
    vs_parquet = median["kafkalog"] / median["parquet"]
    vs_rows = median["kafkalog-rows"] / median["kafkalog"]
    print(f"kafkalog time / parquet time: {vs_parquet:.2f} (goal <= 1.5: {'met' if vs_parquet <= 1.5 else 'NOT met'})")
    print(f"kafkalog speed-up over kafkalog-rows: {vs_rows:.1f}x (goal >= 5: {'met' if vs_rows >= 5 else 'NOT met'})")
    floor = median["arrow-floor"]
    own, own_rows = median["kafkalog"] - floor, median["kafkalog-rows"] - floor
    print(
        f"above the arrow floor ({floor:.2f} s, Spark's cost of any Python sink): kafkalog {own:.2f} s, "
        f"kafkalog-rows {own_rows:.2f} s ({own_rows / own if own > 0 else float('inf'):.1f}x)"
    )


if __name__ == "__main__":
    main()
