"""Batch reads through the ``kafkalog`` data source: the columns of Spark's Kafka source, every
codec, the offset and timestamp options, minPartitions, failOnDataLoss and option errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from kafkalog import Record, UnifiedLog, batches
from kafkalog.spark.source import kafka_schema

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def write_partition(
    path: Path, n: int, *, per_batch: int = 5, codecs: tuple[str, ...] = ("none",), headers: bool = False, roll: bool = False
) -> list[Record]:
    """Appends ``n`` records with explicit timestamps T0 + 10 * offset, cycling through
    ``codecs`` batch by batch (kafkalog's batch builder, follower appends). Every third key
    and every seventh value is null; ``roll`` starts a segment after each batch. Returns what
    was written, by offset."""
    written: list[Record] = []
    with UnifiedLog.open(path) as log:
        base = log.log_end_offset
        for b, first in enumerate(range(0, n, per_batch)):
            recs = []
            for i in range(first, min(n, first + per_batch)):
                o = base + i
                key = None if o % 3 == 0 else f"key-{o}".encode()
                value = None if o % 7 == 6 else f"value-{o}".encode() * (1 + o % 4)
                hdrs = (("h", f"{o}".encode()), ("null", None)) if headers and o % 2 else ()
                recs.append(Record(key, value, hdrs, T0 + 10 * o))
            log.append_as_follower(batches.build(base + first, recs, compression=codecs[b % len(codecs)]))
            if roll:
                log.roll()
            written.extend(recs)
    return written


def spark_rows(df: DataFrame, headers: bool = False) -> list[tuple[Any, ...]]:
    cols = ["topic", "partition", "offset", "key", "value", "unix_millis(timestamp)", "timestampType"]
    if headers:
        cols.append("transform(headers, h -> struct(h.key, h.value))")
    out = []
    for r in df.selectExpr(*cols).orderBy("topic", "partition", "offset").collect():
        t = tuple(r)
        if headers:
            t = t[:-1] + (tuple((h[0], None if h[1] is None else bytes(h[1])) for h in t[-1]),)
        out.append(tuple(bytes(x) if isinstance(x, (bytearray, memoryview)) else x for x in t))
    return out


def expected_spark_rows(topic: str, partition: int, written: list[Record], start: int = 0, headers: bool = False) -> list[tuple[Any, ...]]:
    out = []
    for i, r in enumerate(written):
        row: tuple[Any, ...] = (topic, partition, start + i, r.key, r.value, r.timestamp, 0)
        if headers:
            row += (tuple(r.headers),)
        out.append(row)
    return out


def read(spark: SparkSession, path: Path | str, **options: str) -> DataFrame:
    reader = spark.read.format("kafkalog").option("path", str(path))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_every_codec_with_headers_and_nulls_reads_back(spark: SparkSession, tmp_path: Path) -> None:
    written = write_partition(tmp_path / "codecs-0", 50, codecs=CODECS, headers=True)
    df = read(spark, tmp_path / "codecs-0", includeHeaders="true")
    assert df.schema == kafka_schema(include_headers=True)
    assert spark_rows(df, headers=True) == expected_spark_rows("codecs", 0, written, headers=True)
    # the same rows the native reader gives, column for column
    with UnifiedLog.open(tmp_path / "codecs-0", read_only=True) as log:
        native = log.to_arrow().to_pylist()
    assert [(r["offset"], r["key"], r["value"]) for r in native] == [(r[2], r[3], r[4]) for r in spark_rows(df)]


def test_columns_are_spark_kafka_source_columns(spark: SparkSession, tmp_path: Path) -> None:
    write_partition(tmp_path / "cols-0", 3)
    df = read(spark, tmp_path / "cols-0")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "binary"),
        ("value", "binary"),
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "bigint"),
        ("timestamp", "timestamp"),
        ("timestampType", "int"),
    ]
    assert df.count() == 3


def test_path_forms_and_subscriptions(spark: SparkSession, tmp_path: Path) -> None:
    for name in ("a-0", "a-1", "b-0", "ab-0"):
        write_partition(tmp_path / name, 4)
    (tmp_path / "a-2.4f2c-delete").mkdir()  # Kafka's renamed dirs are never read

    def parts(**opts: str) -> list[tuple[str, int]]:
        df = read(spark, opts.pop("path", str(tmp_path)), **opts)
        return sorted({(r[0], r[1]) for r in spark_rows(df)})

    assert parts(subscribe="a") == [("a", 0), ("a", 1)]
    assert parts(subscribe="a, b") == [("a", 0), ("a", 1), ("b", 0)]
    assert parts(subscribePattern="a.*") == [("a", 0), ("a", 1), ("ab", 0)]
    assert parts(assign=json.dumps({"a": [1], "b": [0]})) == [("a", 1), ("b", 0)]
    assert parts(path=str(tmp_path / "a-1")) == [("a", 1)]
    assert parts(path=f"{tmp_path / 'a-1'},{tmp_path / 'b-0'}") == [("a", 1), ("b", 0)]
    assert parts(path=f"{tmp_path / 'a-1'},{tmp_path / 'b-0'}", subscribe="b") == [("b", 0)]


def test_offset_options(spark: SparkSession, tmp_path: Path) -> None:
    w0 = write_partition(tmp_path / "o-0", 20)
    w1 = write_partition(tmp_path / "o-1", 10)
    sub = {"subscribe": "o"}
    spec = json.dumps({"o": {"0": 5, "1": -2}})
    end = json.dumps({"o": {"0": 12, "1": -1}})
    got = spark_rows(read(spark, tmp_path, startingOffsets=spec, endingOffsets=end, **sub))
    assert got == expected_spark_rows("o", 0, w0[5:12], 5) + expected_spark_rows("o", 1, w1)
    got = spark_rows(read(spark, tmp_path, startingOffsets="earliest", endingOffsets="latest", **sub))
    assert got == expected_spark_rows("o", 0, w0) + expected_spark_rows("o", 1, w1)
    got = spark_rows(read(spark, tmp_path, endingOffsets=json.dumps({"o": {"0": 3, "1": 0}}), **sub))
    assert got == expected_spark_rows("o", 0, w0[:3])


def test_timestamp_options(spark: SparkSession, tmp_path: Path) -> None:
    w0 = write_partition(tmp_path / "ts-0", 20)  # timestamps T0 + 10 * offset
    w1 = write_partition(tmp_path / "ts-1", 20)
    sub = {"subscribe": "ts"}
    got = spark_rows(read(spark, tmp_path, startingTimestamp=str(T0 + 95), endingTimestamp=str(T0 + 150), **sub))
    assert got == expected_spark_rows("ts", 0, w0[10:15], 10) + expected_spark_rows("ts", 1, w1[10:15], 10)
    by_ts = json.dumps({"ts": {"0": T0 + 180, "1": T0}})
    got = spark_rows(read(spark, tmp_path, startingOffsetsByTimestamp=by_ts, endingOffsetsByTimestamp=json.dumps({"ts": {"0": T0 + 10_000, "1": T0 + 20}}), **sub))
    assert got == expected_spark_rows("ts", 0, w0[18:], 18) + expected_spark_rows("ts", 1, w1[:2])
    # startingTimestamp wins over startingOffsets, as in Spark
    got = spark_rows(read(spark, tmp_path, startingTimestamp=str(T0 + 190), startingOffsets=json.dumps({"ts": {"0": 0, "1": 0}}), **sub))
    assert [r[2] for r in got] == [19, 19]
    # no record that recent: an error by default, the latest offset with strategy "latest"
    with pytest.raises(Exception, match=r"startingTimestamp.*no record with timestamp"):
        read(spark, tmp_path, startingTimestamp=str(T0 + 10_000), **sub).collect()
    assert read(spark, tmp_path, startingTimestamp=str(T0 + 10_000), startingOffsetsByTimestampStrategy="latest", **sub).count() == 0


def test_min_partitions_splits_big_partitions(spark: SparkSession, tmp_path: Path) -> None:
    w0 = write_partition(tmp_path / "m-0", 100, per_batch=7)
    w1 = write_partition(tmp_path / "m-1", 10)
    df = read(spark, tmp_path, subscribe="m", minPartitions="6")
    sizes = df.rdd.mapPartitions(lambda it: [sum(1 for _ in it)]).collect()
    assert sorted(sizes) == [10, 20, 20, 20, 20, 20]  # ideal 110/6: m-0 in round(100/18.3) = 5 parts, m-1 whole
    assert spark_rows(df) == expected_spark_rows("m", 0, w0) + expected_spark_rows("m", 1, w1)
    assert read(spark, tmp_path, subscribe="m").rdd.getNumPartitions() == 2


def test_fail_on_data_loss(spark: SparkSession, tmp_path: Path) -> None:
    written = write_partition(tmp_path / "loss-0", 30, roll=True)
    with UnifiedLog.open(tmp_path / "loss-0", {"retention.ms": -1}) as log:  # T0 is years ago
        log.delete_records(12)
        log.delete_old_segments()  # segments [0, 5) and [5, 10) go: the log starts at 10 on disk
    spec = json.dumps({"loss": {"0": 5}})
    with pytest.raises(Exception, match=r"startingOffsets.*offset 5 is below the log start offset 10"):
        read(spark, tmp_path / "loss-0", startingOffsets=spec).collect()
    got = spark_rows(read(spark, tmp_path / "loss-0", startingOffsets=spec, failOnDataLoss="false"))
    assert got == expected_spark_rows("loss", 0, written[10:], 10)
    past_end = json.dumps({"loss": {"0": 99}})
    with pytest.raises(Exception, match=r"endingOffsets.*ending offset 99 is past the log end offset 30"):
        read(spark, tmp_path / "loss-0", endingOffsets=past_end).collect()
    assert read(spark, tmp_path / "loss-0", endingOffsets=past_end, failOnDataLoss="false").count() == 20


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"startingOffset": "earliest"}, r"'startingoffset'.*unknown option"),
        ({"startingOffsets": "{not json"}, r"'startingOffsets'.*\{not json.*invalid JSON"),
        ({"startingOffsets": '{"err": {"0": -5}}'}, r"'startingOffsets'.*-5 is neither"),
        ({"startingOffsets": "latest"}, r"'startingOffsets'.*can't be latest for batch"),
        ({"endingOffsets": '{"err": {"0": -2}}'}, r"'endingOffsets'.*can't be earliest"),
        ({"startingOffsets": '{"err": {"1": 0}}'}, r"'startingOffsets'.*not read.*err-1"),
        ({"failOnDataLoss": "maybe"}, r"'failOnDataLoss'.*'maybe'.*true"),
        ({"minPartitions": "0"}, r"'minPartitions'.*'0'"),
        ({"kafka.isolation.level": "dirty"}, r"'kafka.isolation.level'.*'dirty'"),
        ({"subscribe": "err", "assign": '{"err": [0]}'}, r"only one of"),
        ({"assign": '{"err": [3]}'}, r"'assign'.*no partition directory for err-3"),
    ],
)
def test_option_errors_name_the_option(spark: SparkSession, tmp_path: Path, options: dict[str, str], pattern: str) -> None:
    write_partition(tmp_path / "err-0", 2)
    reader = spark.read.format("kafkalog").option("path", str(tmp_path / "err-0"))
    for k, v in options.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception, match=pattern):
        reader.load().collect()


def test_missing_path_and_subscription_errors(spark: SparkSession, tmp_path: Path) -> None:
    write_partition(tmp_path / "p-0", 1)
    with pytest.raises(Exception, match=r"option 'path' missing"):
        spark.read.format("kafkalog").load().collect()
    with pytest.raises(Exception, match=r"'path'.*is not a directory"):
        read(spark, tmp_path / "nowhere").collect()
    with pytest.raises(Exception, match=r"'subscribe' missing.*folder of partition directories"):
        read(spark, tmp_path).collect()
