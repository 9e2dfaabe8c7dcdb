"""Batch writes through the ``kafkalog`` data source: round trips, Kafka's default partitioner,
round-robin null keys, topic configs, compression, locking between tasks and writers, errors."""

from __future__ import annotations

import os
import random
import struct
import threading
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType

from kafkalog import UnifiedLog
from kafkalog.spark.partitioner import murmur2, partition_for_key
from kafkalog.testing import Seam

from kit.files import batch_codecs
from kit.kafka_vectors import KAFKA_MURMUR2, KAFKA_PARTITION

pytestmark = pytest.mark.spark

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))



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


def test_appends_in_the_partitions_latest_leader_epoch(spark: SparkSession, tmp_path: Path) -> None:
    """A partition whose latest leader epoch is 3 (as one a Kafka broker wrote): the write appends
    in epoch 3, not epoch 0, which the log would refuse as a stale leader's."""
    with UnifiedLog.open(tmp_path / "epochs-0") as log:
        log.append([(b"k", b"before")], leader_epoch=3)
    write(spark.createDataFrame([("k", "after")], "key string, value string"), tmp_path, topic="epochs")
    with UnifiedLog.open(tmp_path / "epochs-0", read_only=True) as log:
        assert [r.value for r in log.records()] == [b"before", b"after"]
        assert [(e.epoch, e.start_offset) for e in log.epoch_entries] == [(3, 0)]


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
    """The write task finds the partition locked by this process and waits (it says so through
    the test seam); only then is the lock released, and the write completes after it."""
    data = tmp_path / "data"
    holder = UnifiedLog.open(data / "locked-0")  # this process holds the partition's lock
    holder.append([(b"first", b"0")])
    seam = Seam(tmp_path / "seam")
    writing = threading.Event()

    def release_when_the_task_waits() -> None:
        try:
            seam.wait_for("write.locked.locked-0", alive=writing.is_set)
            seam.note("closing the holder")
        finally:
            holder.close()

    # Spark calls stay on this thread (a data source registered here is not found from another).
    releaser = threading.Thread(target=release_when_the_task_waits)
    writing.set()
    releaser.start()
    try:
        write(spark.createDataFrame([(b"second", b"1")], "key binary, value binary"), data, topic="locked", testSeam=seam.spec)
    finally:
        writing.clear()
        releaser.join()
    assert [e for e, _ in seam.events()] == ["write.locked.locked-0", "closing the holder"]
    with UnifiedLog.open(data / "locked-0", read_only=True) as log:
        assert [r.key for r in log.records()] == [b"first", b"second"]


# -- batch sizes: what one segment (and one message) can take --------------------------------


def segment_batch_sizes(path: Path) -> list[int]:
    """The size of every batch (12 + its length field) in a partition's segments."""
    sizes = []
    for seg in sorted(path.glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            sizes.append(12 + length)
            pos += 12 + length
    return sizes


def test_batches_fit_a_small_internal_segment(spark: SparkSession, tmp_path: Path) -> None:
    """100,000 short rows into internal.segment.bytes=262144: the writer used to build batches
    of up to 1 MiB, refused by the engine (RecordBatchTooLargeError: record batch of 790889
    bytes is larger than the limit of 262144 bytes); now every batch fits one segment."""
    n = 100_000
    df = spark.range(n, numPartitions=2).selectExpr("cast(id as string) as key", "cast(id * 7 as string) as value")
    write(df, tmp_path, topic="small", **{"internal.segment.bytes": "262144"})
    sizes = segment_batch_sizes(tmp_path / "small-0")
    assert len(sizes) > 4 and max(sizes) <= 262144
    assert max(sizes) > 262144 - 1000  # the batches are as big as the segment allows, not smaller
    assert len(list((tmp_path / "small-0").glob("*.log"))) > 4
    got = spark.read.format("kafkalog").option("path", str(tmp_path)).option("subscribe", "small").load()
    rows = got.selectExpr("cast(key as string) as k", "cast(value as string) as v").collect()
    assert len(rows) == n and all(int(r["v"]) == int(r["k"]) * 7 for r in rows)


CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def test_rows_near_a_mib_fit_the_minimum_segment_bytes(spark: SparkSession, tmp_path: Path) -> None:
    """segment.bytes=1048576 (its minimum) and max.message.bytes 1048588 (its default): random
    rows of up to 300 bytes, which no codec shrinks, used to overfill compressed batches
    (RecordBatchTooLargeError: record batch of 1048772 bytes with snappy); a row whose batch is exactly
    1048576 bytes fits, and so does a 3 MiB row a codec shrinks below a segment. Every batch
    is at most a segment, and every row reads back as written."""
    rng = random.Random(12)
    small = [(None, rng.randbytes(rng.randrange(10, 300))) for _ in range(14_000)]  # about 2.2 MB
    exact = (None, rng.randbytes(1_048_504))  # 61 + 11 + 1048504 = 1048576 bytes alone, uncompressed
    squeezable = (b"big", b"x" * (3 << 20))
    for codec in CODECS:
        rows = small + [exact if codec == "none" else squeezable]
        df = spark.createDataFrame(rows, "key binary, value binary").coalesce(1)
        write(df, tmp_path, topic=f"mib-{codec}", **{"segment.bytes": "1048576", "compression.type": codec})
        sizes = segment_batch_sizes(tmp_path / f"mib-{codec}-0")
        assert max(sizes) <= 1048576, codec
        if codec == "none":
            assert 1048576 in sizes
        with UnifiedLog.open(tmp_path / f"mib-{codec}-0", read_only=True) as log:
            assert [(r.key, r.value) for r in log.records()] == rows, codec


def test_a_row_that_can_never_fit_is_named(spark: SparkSession, tmp_path: Path) -> None:
    """A row whose batch alone is bigger than min(max.message.bytes, segment size) fails the
    write with an error naming the row, the partition and the sizes; nothing of the task is
    written. One byte more than the largest row that fits (above) is enough; with a codec the
    compressed size counts (this random row would fit uncompressed, in 1048573 bytes, but lz4's
    framing makes it 1048648)."""
    rng = random.Random(13)
    cases = [
        ("none", (None, rng.randbytes(1_048_505)), "it takes 1048577 bytes", "value 1048505 bytes"),
        ("lz4", (b"k", rng.randbytes(1_048_500)), "alone in a batch (lz4) it takes 1048648 bytes", "key 1 byte, value 1048500 bytes"),
    ]
    for codec, big, takes, sizes in cases:
        rows = [(b"a", b"1"), (b"b", b"2"), big, (b"c", b"3")]
        df = spark.createDataFrame(rows, "key binary, value binary").coalesce(1)
        with pytest.raises(Exception) as info:
            write(df, tmp_path, topic=f"never-{codec}", **{"segment.bytes": "1048576", "compression.type": codec})
        message = str(info.value)
        assert "RecordBatchTooLargeError: row 2 of write task 0 (topic " in message, message
        assert f"'never-{codec}', partition 0) can never be written" in message
        assert takes in message and sizes in message and "0 headers" in message
        assert (
            "more than the 1048576 bytes a batch may have (the smaller of max.message.bytes=1048588 "
            "and the segment size 1048576 from segment.bytes)"
        ) in message
        with UnifiedLog.open(tmp_path / f"never-{codec}-0", read_only=True) as log:
            assert log.log_end_offset == 0
    # rows routed by a topic column: the row number is still the task's
    rows = [("t-a", b"a", b"1"), ("t-b", b"b", b"2"), ("t-b", b"c", b"3"), ("t-a", None, rng.randbytes(1_048_505))]
    df = spark.createDataFrame(rows, "topic string, key binary, value binary").coalesce(1)
    with pytest.raises(Exception, match=r"row 3 of write task 0 \(topic 't-a', partition 0\) can never be written"):
        write(df, tmp_path, **{"segment.bytes": "1048576"})
    # max.message.bytes below the segment size is the limit, and headers count
    df = spark.createDataFrame([(b"k", b"v" * 900, [("h", b"x" * 100)])], "key binary, value binary, headers array<struct<key:string,value:binary>>")
    with pytest.raises(Exception, match=r"1 headers of 101 bytes.*the smaller of max.message.bytes=1000 and the segment size 1073741824 from segment.bytes"):
        write(df, tmp_path, topic="small-message", **{"max.message.bytes": "1000"})


def test_arrow_and_row_based_writers_write_the_same_logs(spark: SparkSession, tmp_path: Path) -> None:
    """The Arrow sink (``kafkalog``) and the row-based baseline (``kafkalog-rows``) put the same
    records at the same offsets: 25,000 rows of one task, so three Arrow batches of Spark's
    10,000, with keyed rows (Kafka's partitioner), null keys (round-robin from the task index,
    the turn carried from batch to batch), rows with a given partition (which take no turn,
    even with a null key), headers and null values."""
    from kafkalog.spark.row_writer import KafkaLogRowDataSource

    spark.dataSource.register(KafkaLogRowDataSource)
    df = spark.range(25_000, numPartitions=1).selectExpr(
        "case when id % 3 = 0 then null else concat('k', cast(id % 50 as string)) end as key",
        "case when id % 11 = 0 then null else cast(id as string) end as value",
        "case when id % 5 = 0 then 1 else null end as partition",
        "case when id % 4 = 0 then array(named_struct('key', 'n', 'value', cast(cast(id as string) as binary))) end as headers",
    )
    write(df, tmp_path / "arrow", topic="same", partitions="7")
    df.write.format("kafkalog-rows").mode("append").option("path", str(tmp_path / "rows")).option(
        "topic", "same"
    ).option("partitions", "7").save()
    arrow, rows = read_back(spark, tmp_path / "arrow", "same"), read_back(spark, tmp_path / "rows", "same")
    assert len(arrow) == 25_000 and arrow == rows
    # the k-th row with neither key nor partition went to partition k % 7, in input order
    robin = [i for i in range(25_000) if i % 3 == 0 and i % 5 != 0]
    got = {int(v): p for p, _, k, v, _ in arrow if k is None and v is not None}
    assert all(got[i] == k % 7 for k, i in enumerate(robin) if i % 11 != 0)
