"""Spark read throughput: the ``kafkalog`` data source beside two baselines, in one run, on the
same records.

- **kafkalog**: ``kafkalog.spark.register(spark)``, then
  ``spark.read.format("kafkalog").option("path", ...).option("subscribe", topic)`` (Spark's
  Kafka-source columns, executors reading the logs read-only into Arrow batches);
- **(a) Python rows**: a plain Python data source (defined below) that reads the same ``.log``
  files and decodes them with kafka-python's pure-Python codec (``MemoryRecords`` /
  ``DefaultRecordBatch``, CRC checked as kafkalog checks it), yielding one tuple per record, as
  a user would write it;
- **(a') Python Arrow** (``--arrow-baseline``, not a goal): the same decode yielding Arrow
  batches built from Python lists, to show how much of (a) is the codec and how much Spark's
  row conversion (on 2 M records: about the same time as (a), so the codec dominates);
- **(b) Parquet**: Spark reading the same records (same seven columns) from snappy Parquet
  files, written once from the logs outside the clock.

Every source gives the seven default columns of Spark's Kafka source (key, value, topic,
partition, offset, timestamp, timestampType; no headers), one Spark partition per log
partition (Parquet: one file per partition). Each timed run forces full materialisation with a
noop write (``df.write.format("noop")``: every row and column produced, nothing stored); the
warm-up run checks that every source returns the same record count, payload and offsets, then
runs the timed noop write once untimed (the JVM compiles that plan's code before the clock
starts: the first noop write of a session took twice as long). The timed runs go round robin
over the sources, so a load change on the machine hits all of them; the 1-minute load average
before and after is printed. Figures are medians of ``--runs`` runs after the warm-up;
throughput is per core of the ``local[N]`` session, MB are the records' uncompressed key +
value bytes.

Goals (issue 6): kafkalog >= 10x (a), and within 2x of (b) (kafkalog's time <= 2 x Parquet's).

Run with ``make bench`` (full: 2 M records in 4 partitions, codecs none and lz4, about five
minutes on two idle cores, most of it in the pure-Python baseline) or ``--quick`` (100 K records, lz4, under a minute). Without the data source
(``kafkalog.spark.register``) the baselines still run and the goals are reported unmeasured.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

import bench_common  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from bench_common import Column, kafka_python_batches, print_table, timed_runs, work_dir  # noqa: E402
from pyspark import cloudpickle  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402

import kafkalog  # noqa: E402

# The Python workers that run the baseline's reader cannot import bench_common (benches/ is not
# on their path): pickle its functions by value, as this script's own are.
cloudpickle.register_pickle_by_value(bench_common)

TOPIC = "bench"
COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
SCHEMA = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
GOAL_VS_PYTHON = 10.0
GOAL_VS_PARQUET = 2.0


# -- (a) and (a'): a plain Python data source on kafka-python's codec --------------------------


def _segment_files(partition_dir: str) -> list[str]:
    names = sorted(n for n in os.listdir(partition_dir) if len(n) == 24 and n.endswith(".log"))
    return [os.path.join(partition_dir, n) for n in names]


def _kafka_python_records(partition_dir: str) -> Iterator[tuple[Any, ...]]:
    """(key, value, offset, timestamp ms, timestamp type) of every data record of the
    partition, decoded by kafka-python (CRC checked)."""
    for path in _segment_files(partition_dir):
        for batch in kafka_python_batches(path):
            if batch.is_control_batch:
                continue
            tstype = batch.timestamp_type
            for r in batch:
                yield r.key, r.value, r.offset, r.timestamp, tstype


class _KafkaPythonReader(DataSourceReader):
    def __init__(self, path: str, arrow: bool) -> None:
        self.path = path
        self.arrow = arrow

    def partitions(self) -> list[InputPartition]:
        dirs = sorted(d for d in os.listdir(self.path) if d.startswith(TOPIC + "-"))
        return [InputPartition(os.path.join(self.path, d)) for d in dirs]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import datetime

        part_dir = partition.value
        number = int(part_dir.rsplit("-", 1)[1])
        if not self.arrow:
            utc = datetime.timezone.utc
            epoch = datetime.datetime(1970, 1, 1, tzinfo=utc)
            for key, value, offset, ts, tstype in _kafka_python_records(part_dir):
                yield key, value, TOPIC, number, offset, epoch + datetime.timedelta(milliseconds=ts), tstype
            return
        schema = pa.schema(
            [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
             ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())]
        )
        cols: list[list[Any]] = [[], [], [], [], []]
        for rec in _kafka_python_records(part_dir):
            for col, v in zip(cols, rec):
                col.append(v)
            if len(cols[0]) == 65536:
                yield _arrow_batch(cols, number, schema)
                cols = [[], [], [], [], []]
        if cols[0]:
            yield _arrow_batch(cols, number, schema)


def _arrow_batch(cols: list[list[Any]], number: int, schema: pa.Schema) -> pa.RecordBatch:
    n = len(cols[0])
    keys, values, offsets, timestamps, types = cols
    return pa.RecordBatch.from_arrays(
        [pa.array(keys, pa.binary()), pa.array(values, pa.binary()), pa.array([TOPIC] * n, pa.string()),
         pa.array([number] * n, pa.int32()), pa.array(offsets, pa.int64()),
         pc.multiply(pa.array(timestamps, pa.int64()), 1000).cast(pa.timestamp("us", tz="UTC")), pa.array(types, pa.int32())],
        schema=schema,
    )


class KafkaPythonSource(DataSource):
    """Option ``path``: a folder of partition dirs; ``arrow``: "true" for Arrow batches."""

    @classmethod
    def name(cls) -> str:
        return "kafka_python_bench"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return _KafkaPythonReader(self.options["path"], self.options.get("arrow", "false") == "true")


# -- input ------------------------------------------------------------------------------------


def make_values(count: int, value_size: int, seed: int) -> list[bytes]:
    """Change-event-like JSON values of ``value_size`` bytes: varying fields and a slice of
    random base64 text, so codecs and Parquet compress them about as much as real payloads
    (roughly 2x), not 10x as a repeated value would."""
    rng = random.Random(seed)
    pool = base64.b64encode(rng.randbytes(1 << 20))
    statuses = [b"created", b"paid", b"shipped", b"delivered", b"returned"]
    out = []
    for i in range(count):
        head = b'{"id":%d,"status":"%s","amount":%d.%02d,"note":"' % (
            i, rng.choice(statuses), rng.randrange(10_000), rng.randrange(100))
        fill = max(value_size - len(head) - 2, 0)
        start = rng.randrange(len(pool) - fill)
        out.append((head + pool[start : start + fill] + b'"}')[:value_size])
    return out


def write_logs(root: str, partitions: int, per_partition: int, value_size: int, codec: str) -> tuple[int, int]:
    """``partitions`` logs of ``per_partition`` keyed records (100,000 customer keys); returns
    (records, key + value bytes)."""
    payload = 0
    for p in range(partitions):
        values = make_values(per_partition, value_size, seed=p)
        with kafkalog.UnifiedLog.open(os.path.join(root, f"{TOPIC}-{p}"), {"retention.ms": -1}) as log:
            for start in range(0, per_partition, 10_000):
                chunk = [
                    (f"customer-{(p * per_partition + i) * 7919 % 100_000:06d}".encode(), values[i])
                    for i in range(start, min(start + 10_000, per_partition))
                ]
                payload += sum(len(k) + len(v) for k, v in chunk)
                log.append(chunk, compression=codec)
    return partitions * per_partition, payload


def write_parquet(logs: str, out: str) -> None:
    """One snappy Parquet file per partition, the seven columns, from kafkalog's Arrow read."""
    os.makedirs(out)
    for d in sorted(os.listdir(logs)):
        with kafkalog.UnifiedLog.open(os.path.join(logs, d), read_only=True) as log:
            table = log.to_arrow().select(COLUMNS)
        pq.write_table(table, os.path.join(out, f"{d}.parquet"), compression="snappy")


# -- timing -----------------------------------------------------------------------------------


def session(cores: int) -> Any:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("kafkalog-bench-spark-read")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def sources(spark: Any, logs: str, parquet: str, arrow_baseline: bool) -> dict[str, Callable[[], Any] | str]:
    """Label -> DataFrame factory, or the reason the source cannot run."""
    spark.dataSource.register(KafkaPythonSource)
    out: dict[str, Callable[[], Any] | str] = {}
    try:
        from kafkalog.spark import register

        register(spark)
        out["kafkalog data source"] = lambda: (
            spark.read.format("kafkalog").option("path", logs).option("subscribe", TOPIC).load()
        )
    except ImportError as e:
        out["kafkalog data source"] = f"not available ({e}): the data source (issue 6 part A) is not in this build"
    out["(a) Python source, kafka-python, rows"] = lambda: (
        spark.read.format(KafkaPythonSource.name()).option("path", logs).load()
    )
    if arrow_baseline:
        out["(a') same decode, Arrow batches"] = lambda: (
            spark.read.format(KafkaPythonSource.name()).option("path", logs).option("arrow", "true").load()
        )
    out["(b) Parquet (snappy), Spark's reader"] = lambda: spark.read.parquet(parquet)
    return out


def check(df: Any) -> tuple[int, int, int]:
    """(records, key + value bytes, sum of offsets): what every source must agree on."""
    assert df.columns == COLUMNS, df.columns
    row = df.selectExpr(
        "count(*)", "coalesce(sum(length(key)), 0) + coalesce(sum(length(value)), 0)", "sum(offset)"
    ).collect()[0]
    return int(row[0]), int(row[1]), int(row[2])


def noop_write_runs(make: Callable[[], Any], runs: int) -> list[float]:
    """Seconds of each of ``runs`` full materialisations (a noop write) of ``make()``."""
    return timed_runs(lambda: make().write.format("noop").mode("overwrite").save(), runs)


def bench_codec(spark: Any, args: argparse.Namespace, codec: str, scratch: str) -> None:
    with work_dir(f"spark-read-{codec}-", scratch, args.keep) as work_path:
        work = str(work_path)
        logs, parquet = os.path.join(work, "logs"), os.path.join(work, "parquet")
        t0 = time.perf_counter()
        records, payload = write_logs(logs, args.partitions, args.records // args.partitions, args.value_size, codec)
        write_parquet(logs, parquet)
        log_bytes = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(logs) for f in fs if f.endswith(".log"))
        pq_bytes = sum(os.path.getsize(os.path.join(parquet, f)) for f in os.listdir(parquet))
        print(f"\ninput ({time.perf_counter() - t0:.0f} s to write): {records:,} records in {args.partitions} partitions, "
              f"{args.value_size}-byte values, codec {codec}: {payload / 1e6:.0f} MB key + value, "
              f"{log_bytes / 1e6:.0f} MB of .log files, {pq_bytes / 1e6:.0f} MB of Parquet", flush=True)
        expected = (records, payload, args.partitions * sum(range(args.records // args.partitions)))

        results: dict[str, list[float] | str] = {}
        runnable: dict[str, Callable[[], Any]] = {}
        for label, make in sources(spark, logs, parquet, args.arrow_baseline).items():
            if isinstance(make, str):
                results[label] = make
                continue
            results[label] = []  # table order: the sources' order
            for _ in range(args.warmup):
                got = check(make())
                if got != expected:
                    raise SystemExit(f"{label} returned (records, bytes, offset sum) {got}, expected {expected}")
                noop_write_runs(make, 1)  # the timed plan (noop write) once, so its code is JIT-compiled too
            runnable[label] = make
        times: dict[str, list[float]] = {label: [] for label in runnable}
        load_before = os.getloadavg()
        for _ in range(args.runs):  # round robin: a change in the machine's load hits every source alike
            for label, make in runnable.items():
                times[label] += noop_write_runs(make, 1)
        load_after = os.getloadavg()
        for label in runnable:
            results[label] = times[label]
            print(f"  {label}: {', '.join(f'{s:.2f}' for s in results[label])} s", flush=True)
        print(f"  load average (1 min) {load_before[0]:.2f} before the timed runs, {load_after[0]:.2f} after "
              f"({os.cpu_count()} CPUs)", flush=True)
        report(results, records, payload, args.cores)


def report(results: dict[str, list[float] | str], records: int, payload: int, cores: int) -> None:
    medians = {k: statistics.median(v) for k, v in results.items() if not isinstance(v, str)}
    mine = medians.get("kafkalog data source")
    print()
    columns = [Column("source", 40, left=True), Column("median s", 9), Column("K rec/s/core", 13),
               Column("MB/s/core", 10), Column("time / kafkalog", 16)]  # fmt: skip
    rows = []
    for label, secs in medians.items():
        ratio = "" if mine is None else f"{secs / mine:.2f}x"
        rows.append([label, f"{secs:.2f}", f"{records / secs / cores / 1e3:,.0f}", f"{payload / secs / cores / 1e6:.1f}",
                     ratio])  # fmt: skip
    print_table(columns, rows)
    for label, value in results.items():
        if isinstance(value, str):
            print(f"{label}: {value}")
    if mine is None:
        print(f"goal kafkalog >= {GOAL_VS_PYTHON:.0f}x (a): not measured (no data source)")
        print(f"goal kafkalog within {GOAL_VS_PARQUET:.0f}x of (b): not measured (no data source)")
        return
    vs_python = medians["(a) Python source, kafka-python, rows"] / mine
    vs_parquet = mine / medians["(b) Parquet (snappy), Spark's reader"]
    print(f"goal kafkalog >= {GOAL_VS_PYTHON:.0f}x (a): {vs_python:.1f}x, "
          f"{'met' if vs_python >= GOAL_VS_PYTHON else 'NOT met'}")
    print(f"goal kafkalog within {GOAL_VS_PARQUET:.0f}x of (b): kafkalog takes {vs_parquet:.2f}x Parquet's time, "
          f"{'met' if vs_parquet <= GOAL_VS_PARQUET else 'NOT met'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100K records, lz4, 2 runs (smoke runs, under a minute)")
    ap.add_argument("--records", type=int, default=2_000_000, help="records in all (default 2,000,000)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--codec", action="append", choices=["none", "gzip", "snappy", "lz4", "zstd"],
                    help="codec of the logs (repeatable; default none and lz4)")
    ap.add_argument("--cores", type=int, default=2, help="local[N] (default 2)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs, which also check the results (default 1)")
    ap.add_argument("--scratch", default=None, help="where to write the input (default: the temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the input")
    ap.add_argument("--arrow-baseline", action="store_true",
                    help="also time (a'): the kafka-python decode yielding Arrow batches instead of rows")
    args = ap.parse_args()
    if args.quick:
        args.records, args.runs = 100_000, 2
        args.codec = args.codec or ["lz4"]
    args.codec = args.codec or ["none", "lz4"]
    args.warmup = max(args.warmup, 1)
    if args.records % args.partitions:
        ap.error("--records must be a multiple of --partitions")

    started = time.monotonic()
    spark = session(args.cores)
    print(f"Spark {spark.version}, local[{args.cores}]; median of {args.runs} noop-write runs after {args.warmup} "
          f"warm-up(s); per core = / {args.cores}")
    if args.quick:
        print("--quick: a smoke run; Spark's fixed per-job costs dominate 100 K records, so its ratios do not "
              "measure the goals")
    try:
        for codec in args.codec:
            bench_codec(spark, args, codec, args.scratch or tempfile.gettempdir())
    finally:
        spark.stop()
    print(f"\n(total {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
