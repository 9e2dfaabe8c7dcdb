"""Streaming reads through the ``kafkalog`` data source: micro-batches over appends, restart
from a checkpoint with nothing skipped or repeated, maxOffsetsPerTrigger, new partitions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from kafkalog import UnifiedLog

pytestmark = pytest.mark.spark

Seen = list[tuple[int, list[tuple[str, int, int, bytes]]]]


def append(path: Path, values: range) -> None:
    with UnifiedLog.open(path) as log:
        log.append([(f"k{v}".encode(), str(v).encode()) for v in values], batch_size=256)


def stream(spark: SparkSession, path: Path, **options: str) -> DataFrame:
    reader = spark.readStream.format("kafkalog").option("path", str(path))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


#: Spark partitions of each non-empty micro-batch, in order (filled by collector()).
SPLITS: list[int] = []


def collector() -> tuple[Seen, Any]:
    seen: Seen = []
    SPLITS.clear()

    def collect(batch: DataFrame, batch_id: int) -> None:
        rows = [(r["topic"], r["partition"], r["offset"], bytes(r["value"])) for r in batch.collect()]
        seen.append((batch_id, sorted(rows)))
        if rows:
            SPLITS.append(batch.rdd.getNumPartitions())

    return seen, collect


def run_available_now(spark: SparkSession, path: Path, checkpoint: Path, **options: str) -> Seen:
    seen, collect = collector()
    query = (
        stream(spark, path, **options)
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    return seen


def values(seen: Seen) -> list[int]:
    return sorted(int(v) for _, rows in seen for (_, _, _, v) in rows)


def test_micro_batches_follow_appends_and_new_partitions(spark: SparkSession, tmp_path: Path) -> None:
    append(tmp_path / "ev-0", range(0, 10))
    seen, collect = collector()
    query = (
        stream(spark, tmp_path, subscribe="ev", startingOffsets="earliest")
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        append(tmp_path / "ev-0", range(10, 15))
        append(tmp_path / "ev-1", range(100, 103))  # a partition that appears mid-query
        query.processAllAvailable()
    finally:
        query.stop()
    batches = [rows for _, rows in seen if rows]
    assert len(batches) >= 2
    assert [v for _, _, _, v in batches[0]] == [str(v).encode() for v in range(10)]
    assert values(seen) == list(range(15)) + [100, 101, 102]
    offsets = [(t, p, o) for _, rows in seen for (t, p, o, _) in rows]
    assert len(offsets) == len(set(offsets))


def test_restart_from_checkpoint_neither_skips_nor_repeats(spark: SparkSession, tmp_path: Path) -> None:
    append(tmp_path / "cp-0", range(0, 20))
    append(tmp_path / "cp-1", range(1000, 1005))
    ckpt = tmp_path / "ckpt"
    first = run_available_now(spark, tmp_path, ckpt, subscribe="cp", startingOffsets="earliest")
    assert values(first) == list(range(20)) + list(range(1000, 1005))
    append(tmp_path / "cp-0", range(20, 27))
    # startingOffsets only applies to a new query: the checkpoint decides where this one goes on
    second = run_available_now(spark, tmp_path, ckpt, subscribe="cp", startingOffsets="earliest")
    assert values(second) == list(range(20, 27))
    assert values(run_available_now(spark, tmp_path, ckpt, subscribe="cp")) == []
    latest = json.loads((ckpt / "offsets" / sorted(p.name for p in (ckpt / "offsets").iterdir())[-1]).read_text().splitlines()[-1])
    assert latest == {"cp": {"0": 27, "1": 5}}  # Spark's Kafka-source offset JSON


def test_max_offsets_per_trigger(spark: SparkSession, tmp_path: Path) -> None:
    append(tmp_path / "rl-0", range(0, 40))
    append(tmp_path / "rl-1", range(100, 110))
    seen = run_available_now(
        spark, tmp_path, tmp_path / "ckpt", subscribe="rl", startingOffsets="earliest", maxOffsetsPerTrigger="10", minPartitions="4"
    )
    sizes = [len(rows) for _, rows in seen if rows]
    assert all(s <= 10 for s in sizes) and len(sizes) >= 5
    assert values(seen) == list(range(40)) + list(range(100, 110))
    # every batch takes from both partitions while both have a backlog (Spark's pro-rating)
    first_batch = next(rows for _, rows in seen if rows)
    assert {partition for _, partition, _, _ in first_batch} == {0, 1}
    # 8 + 2 offsets, minPartitions 4: ideal 2.5, rl-0 in round(8 / 2.5) = 3 ranges, rl-1 whole
    assert SPLITS[0] == 4


def test_starts_at_latest_by_default_and_rejects_ending_offsets(spark: SparkSession, tmp_path: Path) -> None:
    append(tmp_path / "lt-0", range(0, 5))
    ckpt = tmp_path / "ckpt"
    assert values(run_available_now(spark, tmp_path / "lt-0", ckpt)) == []
    append(tmp_path / "lt-0", range(5, 8))
    assert values(run_available_now(spark, tmp_path / "lt-0", ckpt)) == [5, 6, 7]
    with pytest.raises(Exception, match=r"option 'endingOffsets' = 'latest'.*not valid in streaming"):
        run_available_now(spark, tmp_path / "lt-0", tmp_path / "ckpt2", endingOffsets="latest")
