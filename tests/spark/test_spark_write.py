"""Batch writes through the ``kafkalog`` data source: round trips, Kafka's default partitioner,
round-robin null keys, topic configs, compression, locking between tasks and writers, errors."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructField, StructType

from kafkalog import UnifiedLog
from kafkalog.spark.partitioner import murmur2, partition_for_key

from spark_helpers import batch_codecs

pytestmark = pytest.mark.spark

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))

# Computed once with Apache Kafka 4.3.1's own code (kafka-clients-4.3.1.jar from
# tests/interop/.cache/lib, plus slf4j-api): a 15-line Java class printing
# Utils.murmur2(key.getBytes(UTF_8)) and Utils.toPositive(Utils.murmur2(...)) % n.
KAFKA_MURMUR2 = {
    b"": 275646681,
    b"a": -1563381124,
    b"customer-1": 1939597761,
    b"customer-42": -542987495,
    b"hello": 2132663229,
    b"kafkalog": -1239170953,
    b"0123456789abcdef": 1438427052,
    b"the quick brown fox": 2136040129,
    bytes([0xFF, 0x00, 0x80, 0x7F, 0x01]): -315781896,
}
KAFKA_PARTITION = {  # (key, partition count) -> partition, from the same run
    (b"", 7): 2,
    (b"a", 3): 1,
    (b"a", 7): 5,
    (b"customer-1", 7): 3,
    (b"customer-42", 7): 1,
    (b"customer-42", 12): 9,
    (b"hello", 6): 3,
    (b"kafkalog", 6): 1,
    (b"kafkalog", 12): 7,
    (b"0123456789abcdef", 7): 6,
    (b"the quick brown fox", 3): 1,
    (bytes([0xFF, 0x00, 0x80, 0x7F, 0x01]), 7): 6,
}


def write(df: DataFrame, path: Path, **options: str) -> None:
    writer = df.write.format("kafkalog").mode("append").option("path", str(path))
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save()


def read_back(spark: SparkSession, path: Path, topic: str) -> list[tuple[object, ...]]:
    df = spark.read.format("kafkalog").option("path", str(path)).option("subscribe", topic).option("includeHeaders", "true").load()
    out = []
    for r in df.orderBy("partition", "offset").collect():
        headers = tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in r["headers"])
        out.append((r["partition"], r["offset"], r["key"] and bytes(r["key"]), r["value"] and bytes(r["value"]), headers))
    return out


def test_murmur2_matches_kafka() -> None:
    for key, hashed in KAFKA_MURMUR2.items():
        assert murmur2(key) == hashed, key
    for (key, n), partition in KAFKA_PARTITION.items():
        assert partition_for_key(key, n) == partition, (key, n)


def test_round_trip_with_headers_null_keys_and_kafka_partitioning(spark: SparkSession, tmp_path: Path) -> None:
    schema = StructType(
        [StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("headers", HEADERS)]
    )
    keys = [k for k, n in KAFKA_PARTITION if n == 7]
    data = [(k, b"v-" + k, [("source", b"test"), ("n", None)]) for k in keys]
    data += [(None, f"null-key-{i}".encode(), []) for i in range(14)]
    data += [(b"tomb", None, None)]
    df = spark.createDataFrame(data, schema).repartition(1)
    write(df, tmp_path, topic="orders", partitions="7", **{"compression.type": "lz4"})
    assert sorted(os.listdir(tmp_path)) == [f"orders-{p}" for p in range(7)]
    got = read_back(spark, tmp_path, "orders")
    assert len(got) == len(data)
    for k in keys:  # every key where Kafka's producer puts it, with its headers
        [(p, _, _, value, headers)] = [g for g in got if g[2] == k]
        assert p == KAFKA_PARTITION[(k, 7)] and value == b"v-" + k
        assert headers == (("source", b"test"), ("n", None))
    nulls = [g[0] for g in got if g[2] is None and g[3] is not None]
    assert sorted(nulls) == sorted(list(range(7)) * 2)  # one task: round robin over 7 partitions
    assert [g for g in got if g[2] == b"tomb"][0][3] is None
    for p in range(7):
        assert set(batch_codecs(tmp_path / f"orders-{p}")) <= {3}


def test_string_columns_topic_and_partition_columns(spark: SparkSession, tmp_path: Path) -> None:
    write(spark.createDataFrame([("x", "seed")], "key string, value string"), tmp_path, topic="t2", partitions="2")
    write(spark.createDataFrame([("x", "seed")], "key string, value string"), tmp_path, topic="t1")
    df = spark.createDataFrame(
        [("t1", None, "a", "1"), ("t2", 1, "b", "2"), ("t2", 0, "c", "3"), ("t1", 0, None, "4")],
        "topic string, partition int, key string, value string",
    )
    write(df.coalesce(1), tmp_path)
    assert [(g[0], g[2], g[3]) for g in read_back(spark, tmp_path, "t1")] == [(0, b"x", b"seed"), (0, b"a", b"1"), (0, None, b"4")]
    by_partition: dict[int, list[tuple[int, bytes, bytes]]] = {0: [], 1: []}
    by_partition[partition_for_key(b"x", 2)].append((partition_for_key(b"x", 2), b"x", b"seed"))
    by_partition[1].append((1, b"b", b"2"))
    by_partition[0].append((0, b"c", b"3"))
    assert [(g[0], g[2], g[3]) for g in read_back(spark, tmp_path, "t2")] == by_partition[0] + by_partition[1]


def test_topic_configs_for_new_topics(spark: SparkSession, tmp_path: Path) -> None:
    df = spark.range(4000).selectExpr(
        "cast(id % 100 as string) as key",
        "concat_ws('', transform(sequence(1, 16), i -> sha2(cast(id * 100 + i as string), 256))) as value",
    )  # 1 KiB of hex per value: zstd halves it at most
    write(df.coalesce(1), tmp_path, topic="cfg", **{"segment.bytes": "1048576", "cleanup.policy": "compact", "compression.type": "zstd"})
    segments = sorted((tmp_path / "cfg-0").glob("*.log"))
    assert len(segments) >= 2  # 4 MB of values, about 2 MB compressed, in 1 MiB segments
    assert set(batch_codecs(tmp_path / "cfg-0")) == {4}
    with pytest.raises(Exception, match=r"option 'segment.bytes' = '12'.*must be >= 1048576"):
        write(df, tmp_path, topic="cfg2", **{"segment.bytes": "12"})
    with pytest.raises(Exception, match=r"option 'segmnt.bytes' = '1'.*unknown option"):
        write(df, tmp_path, topic="cfg2", **{"segmnt.bytes": "1"})
    with pytest.raises(Exception, match=r"option 'compression.type' = 'brotli'"):
        write(df, tmp_path, topic="cfg2", **{"compression.type": "brotli"})
    assert not (tmp_path / "cfg2-0").exists()


def test_write_errors_name_the_option(spark: SparkSession, tmp_path: Path) -> None:
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    with pytest.raises(Exception, match=r"option 'topic' missing"):
        write(df, tmp_path)
    with pytest.raises(Exception, match=r"option 'path' missing"):
        df.write.format("kafkalog").mode("append").option("topic", "t").save()
    with pytest.raises(Exception, match=r"'value' not found"):
        write(df.select("key"), tmp_path, topic="t")
    with pytest.raises(Exception, match=r"option 'partitions' = 'two'"):
        write(df, tmp_path, topic="t", partitions="two")
    with pytest.raises(Exception, match=r"option 'mode' = 'overwrite'"):
        df.write.format("kafkalog").mode("overwrite").option("path", str(tmp_path)).option("topic", "t").save()
    bad_partition = spark.createDataFrame([(5, "v")], "partition int, value string")
    with pytest.raises(Exception, match=r"partition 5 of topic 't' does not exist"):
        write(bad_partition, tmp_path, topic="t")


def test_concurrent_tasks_never_interleave_in_a_partition(spark: SparkSession, tmp_path: Path) -> None:
    # 4 tasks, all writing every row to partition 0 of one topic, each its rows in order
    df = spark.range(0, 40_000, numPartitions=4).selectExpr(
        "0 as partition", "cast(spark_partition_id() as string) as key", "cast(id as string) as value"
    )
    write(df, tmp_path, topic="hot", partitions="2", **{"compression.type": "snappy"})
    with UnifiedLog.open(tmp_path / "hot-0", read_only=True) as log:
        table = log.to_arrow()
    assert table.num_rows == 40_000 and table.column("offset").to_pylist() == list(range(40_000))
    by_task: dict[bytes, list[int]] = {}
    for key, value in zip(table.column("key").to_pylist(), table.column("value").to_pylist()):
        by_task.setdefault(key, []).append(int(value))
    assert sorted(by_task) == [b"0", b"1", b"2", b"3"]
    for values in by_task.values():
        assert values == sorted(values) and len(values) == 10_000  # each task's rows in order


def test_writer_waits_for_another_writers_lock(spark: SparkSession, tmp_path: Path) -> None:
    holder = UnifiedLog.open(tmp_path / "locked-0")  # this process holds the partition's lock
    holder.append([(b"first", b"0")])
    released = threading.Event()

    def release() -> None:
        time.sleep(3)
        holder.close()
        released.set()

    threading.Thread(target=release, daemon=True).start()
    df = spark.createDataFrame([(b"second", b"1")], "key binary, value binary")
    write(df, tmp_path, topic="locked")
    assert released.is_set()  # the write could only finish after the lock was released
    with UnifiedLog.open(tmp_path / "locked-0", read_only=True) as log:
        assert [r.key for r in log.records()] == [b"first", b"second"]
