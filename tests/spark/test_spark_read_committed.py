"""``kafka.isolation.level=read_committed`` through the ``kafkalog`` source, batch and streaming:
the records of aborted transactions and the control records are left out (their offsets are
gaps, as in Spark's Kafka source), ranges end at the last stable offset, and the default
``read_uncommitted`` still reads the aborted records.

The partitions are written as a follower receives them (transactional batches and COMMIT/ABORT
markers); the appends write the ``.txnindex``, checked against the entries Kafka's broker
leaves."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from kafkalog import Record, UnifiedLog, batches
from kafkalog.spark.offsets import latest_offset, resolve_offset
from kafkalog.spark.options import parse_read_options

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000


def write_transactions(path: Path, rounds: int) -> tuple[list[int], list[int]]:
    """Per round: a plain record, then a transaction of producer 1 (3 records, every third round
    aborted) interleaved with one of producer 2 (2 records, committed), a segment per round.
    Returns (read_committed offsets, read_uncommitted offsets)."""
    committed: list[int] = []
    data: list[int] = []
    index: dict[int, bytes] = {}
    with UnifiedLog.open(path) as log:
        for n in range(rounds):
            segment = log.segments[-1].base_offset

            def put(pid: int, count: int, transactional: bool = True) -> list[int]:
                base = log.log_end_offset
                recs = [Record(f"{pid}".encode(), f"{base + i}".encode(), timestamp=T0 + base + i) for i in range(count)]
                pid_ = pid if transactional else -1
                log.append_as_follower(
                    batches.build(
                        base,
                        recs,
                        compression="lz4" if n % 2 else "none",
                        producer_id=pid_,
                        producer_epoch=0 if transactional else -1,
                        base_sequence=0 if transactional else -1,
                        transactional=transactional,
                    )
                )
                offsets = list(range(base, base + count))
                data.extend(offsets)
                return offsets

            def marker(pid: int, commit: bool) -> int:
                offset = log.log_end_offset
                log.append_as_follower(batches.end_txn_marker(offset, T0, producer_id=pid, producer_epoch=0, commit=commit))
                return offset

            committed += put(-1, 1, transactional=False)
            first1 = put(1, 2)
            p2 = put(2, 2)
            first1 += put(1, 1)
            aborted = n % 3 == 2
            abort_at = marker(1, commit=not aborted)
            if aborted:
                # producer 2's transaction is still open: the last stable offset then is its start
                entry = struct.pack(">hqqqq", 0, 1, first1[0], abort_at, p2[0])
                index[segment] = index.get(segment, b"") + entry
            else:
                committed += first1
            marker(2, commit=True)
            committed += p2
            log.roll()
    written = {int(f.name.split(".")[0]): f.read_bytes() for f in path.glob("*.txnindex")}
    assert written == index, "the appends indexed the aborted transactions as the broker does"
    return sorted(committed), data


def read(spark: SparkSession, path: Path, **options: str) -> DataFrame:
    reader = spark.read.format("kafkalog").option("path", str(path))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def offsets(df: DataFrame) -> list[int]:
    rows = df.select("offset", "value").orderBy("offset").collect()
    assert all(bytes(r["value"]) == str(r["offset"]).encode() for r in rows)
    return [r["offset"] for r in rows]


def test_batch_read_committed_leaves_out_aborted_and_control_records(spark: SparkSession, tmp_path: Path) -> None:
    committed, data = write_transactions(tmp_path / "tx-0", 6)
    assert len(committed) < len(data)
    assert offsets(read(spark, tmp_path / "tx-0", **{"kafka.isolation.level": "read_committed"})) == committed
    assert offsets(read(spark, tmp_path / "tx-0")) == data
    # Ranges split across Spark partitions give the same rows (each split starts mid-log).
    split = read(spark, tmp_path / "tx-0", minPartitions="7", **{"kafka.isolation.level": "read_committed"})
    assert offsets(split) == committed
    # An explicit range: the gaps of skipped records stay gaps.
    ranged = read(
        spark,
        tmp_path / "tx-0",
        startingOffsets='{"tx": {"0": 10}}',
        endingOffsets='{"tx": {"0": 30}}',
        **{"kafka.isolation.level": "read_committed"},
    )
    assert offsets(ranged) == [o for o in committed if 10 <= o < 30]


def test_streaming_read_committed(spark: SparkSession, tmp_path: Path) -> None:
    committed, _ = write_transactions(tmp_path / "st-0", 4)
    seen: list[int] = []

    def collect(batch: DataFrame, batch_id: int) -> None:
        seen.extend(offsets(batch))

    query = (
        spark.readStream.format("kafkalog")
        .option("path", str(tmp_path / "st-0"))
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .option("maxOffsetsPerTrigger", "5")
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert sorted(seen) == committed


def test_latest_is_the_last_stable_offset(tmp_path: Path) -> None:
    """The driver's latest offset for read_committed is the log's read_committed end (the last
    stable offset), which never passes the high watermark; read_uncommitted's is the high
    watermark."""
    write_transactions(tmp_path / "lt-0", 2)
    committed_opts = parse_read_options({"path": str(tmp_path), "subscribe": "lt", "kafka.isolation.level": "read_committed"}, streaming=False)
    plain_opts = parse_read_options({"path": str(tmp_path), "subscribe": "lt"}, streaming=False)
    with UnifiedLog.open(tmp_path / "lt-0") as log:
        log.set_high_watermark(9)
        assert latest_offset(log, "read_uncommitted") == 9
        assert latest_offset(log, "read_committed") == log.end_offset("read_committed") <= 9
        assert resolve_offset(log, committed_opts.ending, starting=False, isolation="read_committed") <= 9
        assert resolve_offset(log, plain_opts.ending, starting=False) == 9


def test_an_open_transaction_stops_batch_and_streaming_reads_at_its_first_offset(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A transaction left open (no marker yet) holds the last stable offset at its first offset:
    a read_committed batch read and an AvailableNow stream return nothing at or past it, not
    even the plain records appended after it, while read_uncommitted reads them all."""
    committed, data = write_transactions(tmp_path / "op-0", 3)
    with UnifiedLog.open(tmp_path / "op-0") as log:
        open_at = log.log_end_offset
        recs = [Record(b"3", str(open_at + i).encode(), timestamp=T0 + i) for i in range(2)]
        log.append_as_follower(
            batches.build(open_at, recs, producer_id=3, producer_epoch=0, base_sequence=0, transactional=True)
        )
        log.append([Record(b"-1", str(open_at + 2).encode(), timestamp=T0)])
        assert log.last_stable_offset == open_at and log.end_offset("read_committed") == open_at
    iso = {"kafka.isolation.level": "read_committed"}
    assert offsets(read(spark, tmp_path / "op-0", **iso)) == committed
    assert offsets(read(spark, tmp_path / "op-0")) == data + [open_at, open_at + 1, open_at + 2]
    seen: list[int] = []
    query = (
        spark.readStream.format("kafkalog")
        .option("path", str(tmp_path / "op-0"))
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .writeStream.foreachBatch(lambda batch, _: seen.extend(offsets(batch)))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert sorted(seen) == committed
