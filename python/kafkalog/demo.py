"""The main job (`make demo`): a change-data-capture pipeline on Spark, end to end.

1. Spark generates a stream of change events for a customers table (JSON row states after
   each change, a share of deletes as tombstones, Debezium-style headers __op, __table and
   schema.version, increasing event times) and writes it through the ``kafkalog`` data source
   into the compacted topic ``customers``.
2. ``kafkalog.spark.compact`` cleans every partition (one Spark task each).
3. The topic is read back through the data source, and the latest value of every key must
   equal a Spark groupBy over the input (deleted keys must have no value; their tombstones may
   stay until delete.retention.ms passes). Below each partition's cleaned offset a key may
   appear at most once. A difference exits non-zero.
4. A summary table and a picture of each partition's clean / dirty / uncleanable sections,
   before and after, follow.

The data lives in DATA_DIR: ``logs/customers-N`` (the topic), ``input/round-NNNN`` (Parquet: a
copy of every round's generated events, the verification's input) and ``demo-state.json``.
A run starts fresh (it removes those three); ``--append`` adds a round of events to the topic
there and then compacts and verifies the topic against every round written so far. Spark
runs in local mode (local[2], UI off).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window
from pyspark.storagelevel import StorageLevel

from ._native import log_dir_partitions
from .demo_report import DemoSummary, Step, Verification, format_summary, read_layout, save_picture, sections

__all__ = ["run", "verify", "main", "DemoSummary", "Step", "Verification", "DemoError", "VerificationError"]

TOPIC = "customers"
_FIRST = ("Maria", "James", "Aiko", "Lars", "Fatima", "Chen", "Olga", "Diego", "Amara", "Noah", "Priya", "Tomasz")
_LAST = ("Garcia", "Smith", "Tanaka", "Berg", "Haddad", "Wang", "Ivanova", "Silva", "Okafor", "Novak", "Patel",
         "Kowalski")
_DOMAINS = ("example.com", "mail.example.org", "corp.example.net")
_TIERS = ("bronze", "silver", "gold", "platinum")
_CITIES = (("Lisbon", "PT"), ("Berlin", "DE"), ("Osaka", "JP"), ("Oslo", "NO"), ("Lagos", "NG"), ("Austin", "US"),
           ("Krakow", "PL"), ("Pune", "IN"), ("Lyon", "FR"), ("Toronto", "CA"))
_STEP_MS = 40  # event time between two changes


class DemoError(RuntimeError):
    """The demo could not run as asked (bad arguments, a partition the clean failed on)."""


class VerificationError(DemoError):
    """The topic read back disagrees with the input."""


class _Paths:
    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.root = Path(data_dir)
        self.logs, self.input, self.state = self.root / "logs", self.root / "input", self.root / "demo-state.json"

    def partition_dirs(self) -> list[Path]:
        """The topic's partition directories (the engine's rule), by partition."""
        if not self.logs.is_dir():
            return []
        return [Path(d.path) for d in log_dir_partitions(self.logs) if d.topic == TOPIC]


def _round_dir(paths: _Paths, rnd: dict[str, Any]) -> str:
    return str(paths.input / f"round-{rnd['round']:04d}")


def _topic_config(state: dict[str, Any]) -> dict[str, str]:
    size = state["segment_bytes"]
    if size >= 1 << 20:
        return {"cleanup.policy": "compact", "segment.bytes": str(size)}
    # Kafka's segment.bytes starts at 1 MiB; smaller segments (tests) take internal.segment.bytes,
    # and batches must stay below the segment size, as in Kafka.
    return {"cleanup.policy": "compact", "internal.segment.bytes": str(size), "max.message.bytes": str(size // 4)}


# -- 1. generate and write ------------------------------------------------------------------


def generate(spark: SparkSession, rnd: dict[str, Any], slices: int) -> DataFrame:
    """One round of change events (columns seq, key, op, ts_ms, value), a pure function of the
    round's numbers: every random choice is a hash of (seed, seq) or (seed, customer id). The
    result is partitioned by key and sorted by seq within each partition."""
    seed, first = rnd["seed"], rnd["first_seq"]
    seq, c = F.col("seq"), F.col("cid")

    def unit(salt: str, of: Column = seq) -> Column:  # uniform in [0, 1)
        return F.pmod(F.xxhash64(of, F.lit(seed), F.lit(salt)), F.lit(1 << 30)) / float(1 << 30)

    def pick(options: tuple[str, ...], u: Column) -> Column:
        return F.element_at(F.array(*map(F.lit, options)), (F.floor(u * len(options)) + 1).cast("int"))

    # Hot and cold customers: the square of a uniform draw favours low ids, as real traffic does.
    events = spark.range(first, first + rnd["events"], numPartitions=slices).select(
        F.col("id").alias("seq"),
        F.floor(F.pow(unit("key", F.col("id")), 2) * rnd["keys"]).cast("long").alias("cid"),
        (unit("delete", F.col("id")) < rnd["delete_ratio"]).alias("is_delete"),
    )
    # Debezium's ops: c(reate) for a key's first change in the first round or after a delete,
    # u(pdate), d(elete). In later rounds a key's first change is an upsert "u".
    previous = F.lag("is_delete").over(Window.partitionBy("cid").orderBy("seq"))
    op = (F.when(F.col("is_delete"), "d").when(previous.isNull(), "c" if rnd["round"] == 1 else "u")
          .when(previous, "c").otherwise("u"))
    ts_ms = F.lit(rnd["start_ms"]) + (seq - first) * _STEP_MS
    first_name, last_name, city = pick(_FIRST, unit("first", c)), pick(_LAST, unit("last", c)), unit("city")
    row = F.struct(  # the row after the change: a name and email per customer, the rest changes
        c.alias("id"),
        F.concat_ws(" ", first_name, last_name).alias("name"),
        F.concat_ws(".", F.lower(first_name), F.lower(last_name), c.cast("string")).alias("email_user"),
        pick(_DOMAINS, unit("domain", c)).alias("email_domain"),
        pick(_TIERS, unit("tier")).alias("tier"),
        pick(tuple(name for name, _ in _CITIES), city).alias("city"),
        pick(tuple(cc for _, cc in _CITIES), city).alias("country"),
        F.pmod(F.xxhash64(seq, F.lit(seed), F.lit("balance")), F.lit(5_000_000)).alias("balance_cents"),
        (unit("opt_in") < 0.6).alias("marketing_opt_in"),
        ts_ms.alias("updated_at"),
        seq.alias("lsn"),
    )
    return events.select(
        "seq",
        F.format_string("customer-%07d", c).alias("key"),
        op.alias("op"),
        ts_ms.alias("ts_ms"),
        F.when(F.col("is_delete"), F.lit(None)).otherwise(F.to_json(row)).alias("value"),
    ).sortWithinPartitions("seq")


def _write_round(spark: SparkSession, paths: _Paths, state: dict[str, Any], rnd: dict[str, Any]) -> None:
    events = generate(spark, rnd, spark.sparkContext.defaultParallelism).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        events.write.mode("overwrite").option("compression", "zstd").parquet(_round_dir(paths, rnd))

        def header(name: str, value: Column) -> Column:
            return F.struct(F.lit(name).alias("key"), value.cast("binary").alias("value"))

        headers = F.array(header("__op", F.col("op")), header("__table", F.lit("public.customers")),
                          header("schema.version", F.lit("2")))
        # Every event of a key is in one task, in sequence order (generate's partitioning): the
        # log holds each key's changes in the order they happened, whatever the tasks' interleaving.
        (events.select("key", "value", headers.alias("headers"))
            .write.format("kafkalog").mode("append")
            .option("path", str(paths.logs)).option("topic", TOPIC).option("partitions", str(state["partitions"]))
            .option("compression.type", state["compression"]).options(**_topic_config(state)).save())
    finally:
        events.unpersist()


# -- 3. verify ------------------------------------------------------------------------------


def verify(spark: SparkSession, data_dir: str | os.PathLike[str]) -> Verification:
    """Reads the topic through the data source and checks it against every round's input
    (Parquet in DATA_DIR/input); raises VerificationError on any difference. The latest event of
    a key is the one with the highest offset in the log and with the highest seq in the input:
    the write keeps a key's events in one task, in seq order, so both orders agree."""
    from . import spark as kafkalog_spark

    kafkalog_spark.register(spark)
    paths = _Paths(data_dir)
    state = json.loads(paths.state.read_text())
    rounds = [_round_dir(paths, r) for r in state["rounds"]]
    expected = (spark.read.parquet(*rounds).groupBy("key").agg(F.max(F.struct("seq", "value")).alias("last"))
                .select(F.col("key").cast("binary").alias("key"), F.col("last.value").cast("binary").alias("expected"),
                        F.lit(True).alias("in_input")))
    cleaned = [c for p, o in state.get("cleaned_to", {}).items() for c in (F.lit(int(p)), F.lit(o).cast("long"))]
    cleaned_to = F.coalesce(F.create_map(*cleaned)[F.col("partition")], F.lit(-1)) if cleaned else F.lit(-1)
    log = spark.read.format("kafkalog").option("path", str(paths.logs)).option("subscribe", TOPIC).load()
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
) -> DemoSummary:
    """Generates a round of events, writes, compacts, verifies, saves the picture (default
    DATA_DIR/compaction.png) and returns the numbers. ``append`` keeps the topic (its
    partitions, segment size and codec) and the earlier rounds. Raises VerificationError when
    the topic disagrees with the input, DemoError when a partition fails to compact."""
    from . import spark as kafkalog_spark

    if events <= 0 or keys <= 0 or partitions <= 0 or not 0 <= delete_ratio < 1:
        raise DemoError("events, keys and partitions must be positive, delete_ratio in [0, 1)")
    kafkalog_spark.register(spark)
    paths = _Paths(data_dir)
    state = _start(paths, append, partitions, segment_bytes, compression)
    last = state["rounds"][-1] if state["rounds"] else None
    start_ms = int(time.time() * 1000) - events * _STEP_MS  # this round's events end about now
    rnd: dict[str, Any] = {
        "round": len(state["rounds"]) + 1, "seed": seed + len(state["rounds"]), "events": events, "keys": keys,
        "delete_ratio": delete_ratio, "first_seq": last["first_seq"] + last["events"] if last else 0,
        "start_ms": max(start_ms, last["start_ms"] + last["events"] * _STEP_MS) if last else start_ms,
    }

    size_before = sum(read_layout(p).size for p in paths.partition_dirs())
    t0 = time.perf_counter()
    _write_round(spark, paths, state, rnd)
    state["rounds"].append(rnd)
    paths.state.write_text(json.dumps(state, indent=1))
    layouts = {lay.partition: lay for lay in map(read_layout, paths.partition_dirs())}
    written = sum(x.size for x in layouts.values()) - size_before
    steps = [Step("generate+write", time.perf_counter() - t0, events, written)]

    t0 = time.perf_counter()
    results = kafkalog_spark.compact(spark, str(paths.logs), topics=[TOPIC], config=_topic_config(state)).collect()
    steps.append(Step("compact", time.perf_counter() - t0, sum(r["records_before"] for r in results),
                      sum(r["bytes_before"] for r in results)))
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
    checked = verify(spark, paths.root)
    steps.append(Step("read+verify", time.perf_counter() - t0, checked.records_read, bytes_after))

    total = sum(r["events"] for r in state["rounds"])
    picture_path = str(picture if picture is not None else paths.root / "compaction.png")
    Path(picture_path).parent.mkdir(parents=True, exist_ok=True)
    save_picture(picture_path, TOPIC, before, after, f"{TOPIC}: clean / dirty / uncleanable bytes per partition, "
                 f"before and after compaction (round {rnd['round']}, {total:,} events)")
    return DemoSummary(str(paths.root), TOPIC, rnd["round"], events, total, state["partitions"], steps[1].records,
                       sum(r["records_after"] for r in results), steps[1].bytes, bytes_after, tuple(steps), checked,
                       before, after, picture_path)


def _start(paths: _Paths, append: bool, partitions: int, segment_bytes: int, compression: str) -> dict[str, Any]:
    """The demo's state: the saved one with ``append``, else a fresh one (the demo's topic,
    input copies and state removed; ``append`` on an empty DATA_DIR starts fresh too)."""
    if append and paths.state.exists():
        state: dict[str, Any] = json.loads(paths.state.read_text())
        if state["partitions"] != partitions:
            raise DemoError(f"--append: the topic has {state['partitions']} partitions, not {partitions}; "
                            "more partitions would move keys, and their order would be lost")
        return state
    if append and paths.partition_dirs():
        raise DemoError(f"--append: {paths.state} is missing, so the rounds in {paths.logs} are unknown")
    for p in (paths.logs, paths.input):
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


def build_session(data_dir: str | os.PathLike[str], cores: int = 2, master: str | None = None) -> SparkSession:
    """A local[cores] session (or one on ``master``) for the demo: UI off, only errors logged
    (log4j2 config in DATA_DIR), no progress bars, workers running this interpreter (its venv has
    kafkalog; on a cluster, the same path on every node)."""
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
             .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j.resolve()}").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kafkalog.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--data-dir", default="demo-data", help="the topic, input copies, state and picture (default demo-data)")
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
        "verify against every round so far; without it a run starts fresh: it removes the demo's topic, input "
        "copies and state in DATA_DIR first")
    add("--master", help="Spark master URL, e.g. spark://host:7077 for a standalone cluster whose executors share "
        "DATA_DIR's file system (default local[2])")
    args = parser.parse_args(argv)

    print(f"kafkalog demo ({'appending a round' if args.append else 'fresh'}): {args.events:,} change events over "
          f"{args.keys:,} customer keys, {args.delete_ratio:.0%} deletes -> topic {TOPIC} in {args.data_dir}/logs",
          flush=True)
    t0 = time.perf_counter()
    spark = build_session(args.data_dir, master=args.master)
    print(f"Spark {spark.version} {spark.sparkContext.master} started in {time.perf_counter() - t0:.1f} s", flush=True)
    try:
        summary = run(spark, args.data_dir, events=args.events, keys=args.keys, partitions=args.partitions,
                      delete_ratio=args.delete_ratio, picture=args.picture, append=args.append,
                      segment_bytes=args.segment_bytes, compression=args.compression)
    except DemoError as e:
        print(f"\nFAILED: {e}", file=sys.stderr)
        sys.exit(1)
    finally:
        spark.stop()
    print(f"round {summary.round}: {summary.total_events:,} events written to the topic so far "
          f"({summary.partitions} partitions)\n")
    print(format_summary(summary))
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
