"""The main job (`make demo`): a change-data-capture pipeline on Spark, end to end.

1. Spark generates a stream of change events for a customers table (JSON row states after
   each change, a share of deletes as tombstones, Debezium-style headers __op, __table and
   schema.version, increasing event times; :mod:`kafkalog.demo_events`, the same events for
   the same seed on every run) and keeps them in memory.
2. kafkalog writes them through the ``kafkalog`` data source into the compacted topic
   ``customers``, each partition from one task in event order.
3. ``kafkalog.spark.compact`` cleans every partition (one Spark task each).
4. kafkalog reads the topic back through the data source, and Spark checks it: the latest
   value of every key must equal the latest event the generator made for it (deleted keys must
   have no value; their tombstones may stay until delete.retention.ms passes), and below each
   partition's cleaned offset a key may appear at most once. A difference exits non-zero.
5. A summary table (Spark's steps and kafkalog's, each with its throughput), a line putting the
   clean beside Apache Kafka's own cleaner on a copy of the same topic (:mod:`kafkalog.demo_kafka`;
   skipped with a note when Java, Maven or Kafka's jars are missing), and a picture of each
   partition's clean / dirty / uncleanable sections, before and after, follow.

The data lives in DATA_DIR: ``logs/customers-N`` (the topic) and ``demo-state.json`` (every
round's numbers, from which the generator remakes its events). A run starts fresh (it removes
those two); ``--append`` adds a round of events to the topic there and then compacts and
verifies the topic against every round written so far. Spark runs in local mode (local[2],
UI off).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

_STARTED = time.perf_counter()  # before pyspark's imports: `total` is the whole run

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from .spark.environment import require_java, require_pyspark  # noqa: E402

if __name__ == "__main__":  # before pyspark's imports: a missing pyspark or Java names its fix
    require_pyspark()
    require_java()

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from ._native import log_dir_partitions
from .demo_events import EPOCH_MS, MAX_KEYS, STEP_MS, generate, latest_per_key
from .demo_kafka import KafkaCleaner, copy_partitions, find_kafka_cleaner
from .demo_report import (DemoSummary, KafkaComparison, Step, Verification, format_summary, read_layout, save_picture,
                          sections)
from .spark.class_data import driver_java_options

__all__ = ["run", "verify", "main", "DemoSummary", "Step", "Verification", "DemoError", "VerificationError"]

TOPIC = "customers"
#: The headers of every record: (key, value); the value None is the event's op.
HEADERS = (("__op", None), ("__table", "public.customers"), ("schema.version", "2"))


class DemoError(RuntimeError):
    """The demo could not run as asked (bad arguments, a partition the clean failed on)."""


class VerificationError(DemoError):
    """The topic read back disagrees with the input."""


class _Paths:
    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.root = Path(data_dir)
        self.logs, self.state = self.root / "logs", self.root / "demo-state.json"
        self.kafka_copy = self.root / "kafka-cleaner"

    def partition_dirs(self) -> list[Path]:
        """The topic's partition directories (the engine's rule), by partition."""
        if not self.logs.is_dir():
            return []
        return [Path(d.path) for d in log_dir_partitions(self.logs) if d.topic == TOPIC]


def _topic_config(state: dict[str, Any]) -> dict[str, str]:
    size = state["segment_bytes"]
    if size >= 1 << 20:
        return {"cleanup.policy": "compact", "segment.bytes": str(size)}
    # Kafka's segment.bytes starts at 1 MiB; smaller segments (tests) take internal.segment.bytes,
    # and batches must stay below the segment size, as in Kafka.
    return {"cleanup.policy": "compact", "internal.segment.bytes": str(size), "max.message.bytes": str(size // 4)}


# -- 1, 2. generate and write ---------------------------------------------------------------


def _header_bytes() -> int:
    return sum(len(k) + len(v or "") for k, v in HEADERS)


def _write_round(spark: SparkSession, paths: _Paths, state: dict[str, Any], rnd: dict[str, Any]) -> list[Step]:
    """Generates the round's events into Spark's block manager (one job: a local checkpoint,
    which keeps Spark's rows as they are, where a cache would first encode them into columns,
    taking about twice as long), then writes them (another job); returns the two steps. The generate step's bytes are the
    events' keys, values and headers."""
    t0 = time.perf_counter()
    # One job: the counts are observed while the checkpoint is written. Its blocks go when the
    # DataFrame does (Spark's ContextCleaner).
    counts = Observation("generated")
    events = (generate(spark, rnd, state["partitions"])
              .observe(counts, F.count(F.lit(1)).alias("n"),
                       F.sum(F.octet_length("key") + F.coalesce(F.octet_length("value"), F.lit(0))).alias("bytes"))
              .localCheckpoint())
    n, payload = counts.get["n"], counts.get["bytes"] or 0
    generated = Step("Spark: generate", time.perf_counter() - t0, n, payload + n * _header_bytes())

    def header(name: str, value: Column) -> Column:
        return F.struct(F.lit(name).alias("key"), value.cast("binary").alias("value"))

    headers = F.array(*(header(k, F.col("op") if v is None else F.lit(v)) for k, v in HEADERS))
    size_before = sum(read_layout(p).size for p in paths.partition_dirs())
    t0 = time.perf_counter()
    # Each Kafka partition is in one task, in sequence order (generate's partitioning), and the
    # partition column is Kafka's partitioner on the key: every partition gets its records in
    # one order, from one writer.
    (events.select("key", "value", headers.alias("headers"), "partition")
        .write.format("kafkalog").mode("append")
        .option("path", str(paths.logs)).option("topic", TOPIC).option("partitions", str(state["partitions"]))
        .option("compression.type", state["compression"]).options(**_topic_config(state)).save())
    seconds = time.perf_counter() - t0
    written = sum(read_layout(p).size for p in paths.partition_dirs()) - size_before
    return [generated, Step("kafkalog: write", seconds, n, written)]


# -- 4. read and verify ---------------------------------------------------------------------


def _read_topic(spark: SparkSession, paths: _Paths) -> DataFrame:
    return spark.read.format("kafkalog").option("path", str(paths.logs)).option("subscribe", TOPIC).load()


def verify(spark: SparkSession, data_dir: str | os.PathLike[str], log: DataFrame | None = None) -> Verification:
    """Checks the topic (``log``: its rows as the data source reads them, read here when not
    given) against the latest event the generator made for each key over every round in
    DATA_DIR/demo-state.json; raises VerificationError on any difference. The latest event of
    a key is the one with the highest offset in the log and with the highest seq in the input:
    the write keeps a key's events in one task, in seq order, so both orders agree."""
    from . import spark as kafkalog_spark

    kafkalog_spark.register(spark)
    paths = _Paths(data_dir)
    state = json.loads(paths.state.read_text())
    expected = spark.createDataFrame(latest_per_key(state["rounds"])).select(
        "key", F.col("value").alias("expected"), F.lit(True).alias("in_input"))
    cleaned = [c for p, o in state.get("cleaned_to", {}).items() for c in (F.lit(int(p)), F.lit(o).cast("long"))]
    cleaned_to = F.coalesce(F.create_map(*cleaned)[F.col("partition")], F.lit(-1)) if cleaned else F.lit(-1)
    log = _read_topic(spark, paths) if log is None else log
    actual = log.groupBy("key").agg(
        F.max(F.struct("offset", "value")).alias("last"),
        F.count("*").alias("n"),
        F.count(F.when(F.col("value").isNull(), 1)).alias("tombstones"),
        F.count(F.when(F.col("offset") < cleaned_to, 1)).alias("in_clean"),
    ).select("key", F.col("last.value").alias("actual"), "n", "tombstones", "in_clean")
    joined = expected.join(actual, "key", "full_outer")
    wrong = F.col("in_input").isNull() | ~F.col("expected").eqNullSafe(F.col("actual"))
    row = joined.agg(
        F.sum("n").alias("records"), F.count("in_input").alias("keys"),
        F.count(F.when(F.col("expected").isNotNull(), 1)).alias("live"),
        F.count(F.when(F.col("in_input") & F.col("expected").isNull(), 1)).alias("deleted"),
        F.sum("tombstones").alias("tombstones"), F.count(F.when(wrong, 1)).alias("wrong"),
        F.count(F.when(F.col("in_clean") > 1, 1)).alias("dups"),
    ).first()
    assert row is not None
    result = Verification(row["records"] or 0, row["keys"], row["live"], row["deleted"], row["tombstones"] or 0,
                          row["wrong"], row["dups"])
    if result.mismatches or result.duplicates_in_clean:
        shown = [f"{r['key'].decode()}: expected {_short(r['expected'])}, log has {_short(r['actual'])}"
                 for r in joined.where(wrong).limit(3).collect()]
        raise VerificationError(
            f"{result.mismatches:,} of {result.keys:,} keys differ from the latest input event; "
            f"{result.duplicates_in_clean:,} keys repeat below the cleaned offset. " + "; ".join(shown))
    return result


def _short(value: bytes | None) -> str:
    if value is None:
        return "no value"
    return repr(value[:60].decode(errors="replace") + ("..." if len(value) > 60 else ""))


# -- the pipeline ---------------------------------------------------------------------------


def run(
    spark: SparkSession,
    data_dir: str | os.PathLike[str] = "demo-data",
    *,
    events: int = 1_000_000,
    keys: int = 100_000,
    partitions: int = 4,
    delete_ratio: float = 0.05,
    picture: str | os.PathLike[str] | None = None,
    append: bool = False,
    segment_bytes: int = 2 << 20,
    compression: str = "lz4",
    seed: int = 7,
    kafka_cleaner: KafkaCleaner | str | None = None,
) -> DemoSummary:
    """Generates a round of events, writes, compacts, reads, verifies, saves the picture
    (default DATA_DIR/compaction.png) and returns the numbers. ``append`` keeps the topic (its
    partitions, segment size and codec) and the earlier rounds. ``kafka_cleaner``: Kafka's
    cleaner to run on a copy of the topic (a fresh run's only), or the note saying why not
    (:func:`kafkalog.demo_kafka.find_kafka_cleaner`); None leaves the comparison out. Raises
    VerificationError when the topic disagrees with the input, DemoError when a partition fails
    to compact."""
    from . import spark as kafkalog_spark

    if events <= 0 or not 0 < keys <= MAX_KEYS or partitions <= 0 or not 0 <= delete_ratio < 1:
        raise DemoError(f"events and partitions must be positive, keys in [1, {MAX_KEYS:,}], delete_ratio in [0, 1)")
    kafkalog_spark.register(spark)
    paths = _Paths(data_dir)
    state = _start(paths, append, partitions, segment_bytes, compression)
    last = state["rounds"][-1] if state["rounds"] else None
    rnd: dict[str, Any] = {
        "round": len(state["rounds"]) + 1, "seed": seed + len(state["rounds"]), "events": events, "keys": keys,
        "delete_ratio": delete_ratio, "first_seq": last["first_seq"] + last["events"] if last else 0,
        "start_ms": last["start_ms"] + last["events"] * STEP_MS if last else EPOCH_MS,
    }
    steps = _write_round(spark, paths, state, rnd)
    state["rounds"].append(rnd)
    paths.state.write_text(json.dumps(state, indent=1))
    layouts = {lay.partition: lay for lay in map(read_layout, paths.partition_dirs())}
    if isinstance(kafka_cleaner, KafkaCleaner) and rnd["round"] > 1:
        kafka_cleaner = "compared on a fresh run only (this round adds to a topic cleaned before)"
    copies = copy_partitions(paths.partition_dirs(), paths.kafka_copy) if isinstance(kafka_cleaner, KafkaCleaner) else []

    t0 = time.perf_counter()
    results = kafkalog_spark.compact(spark, str(paths.logs), topics=[TOPIC], config=_topic_config(state)).collect()
    skipped = [f"{r['topic']}-{r['partition']}: {r['skipped']}" for r in results if r["skipped"]]
    if skipped:
        raise DemoError("compaction skipped partitions: " + "; ".join(skipped))
    compacted = Step("kafkalog: compact", time.perf_counter() - t0, sum(r["records_before"] for r in results),
                     sum(r["bytes_before"] for r in results))
    failed = [f"{r['topic']}-{r['partition']}: {r['error']}" for r in results if r["error"]]
    if failed:
        raise DemoError("compaction failed: " + "; ".join(failed))
    state["cleaned_to"] = {str(r["partition"]): r["cleaned_to_offset"] for r in results}
    paths.state.write_text(json.dumps(state, indent=1))
    # The sections: before, from the layout the clean started from and the offsets it found;
    # after, clean up to where it stopped.
    before = tuple((r["partition"], sections(layouts[r["partition"]], r["first_dirty_offset"],
                                             r["first_uncleanable_offset"])) for r in results)
    after = tuple((r["partition"], sections(read_layout(r["path"]), r["cleaned_to_offset"],
                                            r["first_uncleanable_offset"])) for r in results)
    bytes_after = sum(r["bytes_after"] for r in results)

    t0 = time.perf_counter()
    # As the generate step: one job reads the topic into Spark's block manager (a local
    # checkpoint keeps the rows as they are; a cache would first encode them into compressed
    # columns, about 1 s more here) and counts it; the verification then reads those blocks.
    counted = Observation("read")
    log = _read_topic(spark, paths).observe(counted, F.count(F.lit(1)).alias("n")).localCheckpoint()
    steps += [compacted, Step("kafkalog: read", time.perf_counter() - t0, counted.get["n"], bytes_after)]
    t0 = time.perf_counter()
    checked = verify(spark, paths.root, log)
    steps.append(Step("Spark: verify", time.perf_counter() - t0, checked.records_read, bytes_after))
    del log  # its blocks go with it (Spark's ContextCleaner)

    comparison = _compare_with_kafka(kafka_cleaner, paths, copies, state, results)
    total = sum(r["events"] for r in state["rounds"])
    picture_path = str(picture if picture is not None else paths.root / "compaction.png")
    Path(picture_path).parent.mkdir(parents=True, exist_ok=True)
    save_picture(picture_path, TOPIC, before, after, f"{TOPIC}: clean / dirty / uncleanable bytes per partition, "
                 f"before and after compaction (round {rnd['round']}, {total:,} events)")
    return DemoSummary(str(paths.root), TOPIC, rnd["round"], events, total, state["partitions"], compacted.records,
                       sum(r["records_after"] for r in results), compacted.bytes, bytes_after, tuple(steps), checked,
                       before, after, picture_path, comparison)


def _compare_with_kafka(kafka_cleaner: KafkaCleaner | str | None, paths: _Paths, copies: list[Path],
                        state: dict[str, Any], results: list[Any]) -> KafkaComparison | None:
    """Kafka's cleaner on the copies, beside the compact job's own cleans (see
    :mod:`kafkalog.demo_kafka`); the copies are removed afterwards."""
    if kafka_cleaner is None:
        return None
    if isinstance(kafka_cleaner, str):
        return KafkaComparison(None, kafka_cleaner, 0.0, 0, 0)
    mine = (sum(r["duration_ms"] for r in results) / 1000, sum(r["messages_written"] for r in results),
            sum(r["bytes_before"] for r in results))
    try:
        return KafkaComparison(kafka_cleaner.clean(copies, _topic_config(state)), None, *mine)
    except Exception as e:  # noqa: BLE001 (the harness's HarnessError: reported on the line, the demo goes on)
        return KafkaComparison(None, f"Kafka's cleaner failed: {str(e).strip().splitlines()[0]}", *mine)
    finally:
        shutil.rmtree(paths.kafka_copy, ignore_errors=True)


def _start(paths: _Paths, append: bool, partitions: int, segment_bytes: int, compression: str) -> dict[str, Any]:
    """The demo's state: the saved one with ``append``, else a fresh one (the demo's topic,
    state and leftovers removed; ``append`` on an empty DATA_DIR starts fresh too)."""
    if append and paths.state.exists():
        state: dict[str, Any] = json.loads(paths.state.read_text())
        if state["partitions"] != partitions:
            raise DemoError(f"--append: the topic has {state['partitions']} partitions, not {partitions}; "
                            "more partitions would move keys, and their order would be lost")
        return state
    if append and paths.partition_dirs():
        raise DemoError(f"--append: {paths.state} is missing, so the rounds in {paths.logs} are unknown")
    for p in (paths.logs, paths.root / "input", paths.kafka_copy):  # input/: older demos' copies of the events
        shutil.rmtree(p, ignore_errors=True)
    paths.state.unlink(missing_ok=True)
    paths.root.mkdir(parents=True, exist_ok=True)
    return {"partitions": partitions, "segment_bytes": segment_bytes, "compression": compression, "rounds": []}


# Errors only. PySpark starts its driver as a shell and prints 'Setting default log level to "WARN"'
# unless the gateway's own logger names the root's level.
_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


#: ``spark.sql.execution.arrow.maxBytesPerBatch`` off (Int.MaxValue): below it, Spark sizes the Arrow
#: batch it sends a Python worker again after every row, which took about a fifth of the write's
#: JVM time here (its nested headers column most); ``maxRecordsPerBatch`` (10,000) still bounds each batch.
_NO_BYTE_LIMIT = 2**31 - 1


def build_session(data_dir: str | os.PathLike[str], cores: int = 2, master: str | None = None,
                  java_options: str | None = None) -> SparkSession:
    """A local[cores] session (or one on ``master``) for the demo: UI off, only errors logged
    (log4j2 config in DATA_DIR), no progress bars, workers running this interpreter (its venv has
    kafkalog; on a cluster, the same path on every node), Arrow batches to the workers bounded
    by rows only (:data:`_NO_BYTE_LIMIT`). The driver JVM runs the parallel collector (on two
    cores G1's concurrent threads take time from the tasks) and only the client compiler (C1:
    a job this short spends more CPU in C2's compiles than C2's code saves, about 1.5 s of the
    demo's 20 on two cores), and maps the class-data archive when ``make demo`` has built one
    (:func:`kafkalog.spark.class_data.driver_java_options`); ``java_options`` replaces the
    archive's options."""
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if master is None or master.startswith("local"):  # a cluster's executors must reach the driver
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # local mode: no "hostname resolves to loopback"
    log4j = Path(data_dir) / "log4j2.properties"
    log4j.parent.mkdir(parents=True, exist_ok=True)
    log4j.write_text(_LOG4J)
    spark = (SparkSession.builder.master(master or f"local[{cores}]").appName("kafkalog-demo")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(2 * cores)).config("spark.default.parallelism", str(cores))
             .config("spark.sql.session.timeZone", "UTC").config("spark.python.worker.reuse", "true")
             .config("spark.driver.memory", "2g")
             .config("spark.sql.execution.arrow.maxBytesPerBatch", str(_NO_BYTE_LIMIT))
             .config("spark.driver.extraJavaOptions", _driver_java_options(log4j, java_options)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _driver_java_options(log4j: Path, java_options: str | None) -> str:
    """:func:`build_session`'s driver JVM options: its log4j2 config, the parallel collector, C1
    only, and ``java_options`` (None: the class-data archive's, if one was built)."""
    archive = driver_java_options() if java_options is None else java_options
    return " ".join(filter(None, (f"-Dlog4j2.configurationFile={log4j.resolve()}", "-XX:+UseParallelGC",
                                  "-XX:TieredStopAtLevel=1", archive)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kafkalog.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--data-dir", default="demo-data", help="the topic, its state and the picture (default demo-data)")
    add("--events", type=int, default=1_000_000, help="change events in this round (default 1,000,000)")
    add("--keys", type=int, default=100_000, help="customer keys the events pick from (default 100,000)")
    add("--partitions", type=int, default=4, help="partitions of the topic (default 4; --append keeps them)")
    add("--delete-ratio", type=float, default=0.05, help="share of deletes, written as tombstones (default 0.05)")
    add("--segment-bytes", type=int, default=2 << 20,
        help="segment.bytes of a new topic (default 2 MiB; below Kafka's 1 MiB floor as internal.segment.bytes)")
    add("--compression", default="lz4", choices=["none", "gzip", "snappy", "lz4", "zstd"],
        help="the producer's codec for a new topic (default lz4)")
    add("--picture", metavar="PATH", help="where to save the PNG (default DATA_DIR/compaction.png)")
    add("--append", action="store_true",
        help="add a round of events to the existing topic (same partitions, segment size and codec), compact, and "
        "verify against every round so far; without it a run starts fresh: it removes the demo's topic and state "
        "in DATA_DIR first")
    add("--no-kafka-cleaner", action="store_true",
        help="leave out the line comparing the clean with Apache Kafka's own cleaner on a copy of the topic (it "
        "needs java, javac, mvn and the Kafka jars that `make test-interop` fetches; without them it is skipped "
        "with a note)")
    add("--master", help="Spark master URL, e.g. spark://host:7077 for a standalone cluster whose executors share "
        "DATA_DIR's file system (default local[2])")
    args = parser.parse_args(argv)

    print(f"kafkalog demo ({'appending a round' if args.append else 'fresh'}): {args.events:,} change events over "
          f"{args.keys:,} customer keys, {args.delete_ratio:.0%} deletes -> topic {TOPIC} in {args.data_dir}/logs",
          flush=True)
    kafka_cleaner = None if args.no_kafka_cleaner else find_kafka_cleaner()
    t0 = time.perf_counter()
    spark = build_session(args.data_dir, master=args.master)
    print(f"Spark {spark.version} {spark.sparkContext.master} started in {time.perf_counter() - t0:.1f} s", flush=True)
    try:
        summary = run(spark, args.data_dir, events=args.events, keys=args.keys, partitions=args.partitions,
                      delete_ratio=args.delete_ratio, picture=args.picture, append=args.append,
                      segment_bytes=args.segment_bytes, compression=args.compression, kafka_cleaner=kafka_cleaner)
    except DemoError as e:
        print(f"\nFAILED: {e}", file=sys.stderr)
        sys.exit(1)
    finally:
        spark.stop()
    print(f"round {summary.round}: {summary.total_events:,} events written to the topic so far "
          f"({summary.partitions} partitions)\n")
    print(format_summary(summary))
    print(f"total {time.perf_counter() - _STARTED:.1f} s (Python start, imports and Spark's start included)")


if __name__ == "__main__":
    main()
