"""Same seed, same result: the demo's events (kafkalog.demo_events) and their order in each
partition do not depend on the wall clock or on how Spark lays out its tasks, so two runs write
the same partition files and end with the same counts. Also: the generator's partition of a
key is Kafka's partitioner, and the Kafka cleaner line is skipped with a note saying what is missing."""

from __future__ import annotations

import dataclasses
import struct
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import functions as F

from kafkalog import demo, demo_events, demo_kafka
from kafkalog.demo_report import DemoSummary, KafkaComparison, Sections, Step, Verification, format_summary
from kafkalog.spark.partitioner import partition_for_key

pytestmark = pytest.mark.spark

SMALL = {"events": 20_000, "keys": 2_000, "partitions": 3, "segment_bytes": 100_000}
ROUND = {"round": 1, "seed": 7, "events": 20_000, "keys": 2_000, "delete_ratio": 0.05, "first_seq": 0,
         "start_ms": demo_events.EPOCH_MS}


def test_kafka_partitions_is_kafkas_partitioner():
    cids = np.array([*range(3_000), 99_999, 1_000_000, 1_234_567, 7_654_321, demo_events.MAX_KEYS - 1])
    for partitions in (1, 3, 4, 7, 100):
        assert demo_events.kafka_partitions(cids, partitions).tolist() == [
            partition_for_key(demo_events.KEY_FORMAT.encode() % c, partitions) for c in cids.tolist()]


def rows_per_partition(table) -> dict[int, list[tuple]]:
    """The rows of each Kafka partition, in the order the table has them."""
    out: dict[int, list[tuple]] = defaultdict(list)
    d = table.to_pydict()
    for i, p in enumerate(d["partition"]):
        out[p].append(tuple(d[c][i] for c in table.column_names))
    return dict(out)


def test_each_kafka_partition_is_one_task_in_seq_order(spark):
    events = demo_events.generate(spark, ROUND, 3)
    tasks = events.select(F.spark_partition_id().alias("task"), "partition", "seq").rdd.glom().collect()
    owners: dict[int, set[int]] = defaultdict(set)
    for rows in tasks:
        seqs = [r["seq"] for r in rows]
        assert seqs == sorted(seqs)
        for r in rows:
            owners[r["partition"]].add(r["task"])
    assert sorted(owners) == [0, 1, 2] and all(len(t) == 1 for t in owners.values())
    assert len({next(iter(t)) for t in owners.values()}) == 3  # and each its own task


def test_generated_events_do_not_depend_on_the_task_or_the_chunking(spark, monkeypatch):
    """What the write gets per partition from Spark's tasks, and each partition's events drawn in
    one numpy step or in many (chunks of 777 events): the same rows in the same order."""
    spark_rows = rows_per_partition(demo_events.generate(spark, ROUND, 3).toArrow())
    whole = {p: rows_per_partition(demo_events.events_of_partition(ROUND, 3, p))[p] for p in range(3)}
    monkeypatch.setattr(demo_events, "_CHUNK", 777)
    chunked = {p: rows_per_partition(demo_events.events_of_partition(ROUND, 3, p))[p] for p in range(3)}
    assert spark_rows == whole == chunked and sum(map(len, whole.values())) == 20_000
    assert [r[0] for r in whole[0]] == sorted(r[0] for r in whole[0])  # seq order
    other_seed = rows_per_partition(demo_events.generate(spark, {**ROUND, "seed": 8}, 3).toArrow())
    assert other_seed != spark_rows


def test_ops_follow_each_keys_history_across_rounds():
    """Debezium's op per event: c for a key's first change in round 1 or after its delete, d for
    a delete, u otherwise; in a later round a key's first change is an upsert u."""
    for rnd in (ROUND, {**ROUND, "round": 2, "seed": 9, "first_seq": 20_000}):
        seen: dict[str, bool] = {}  # key -> its last event was a delete
        for p in range(3):
            for row in demo_events.events_of_partition(rnd, 3, p).to_pylist():
                deleted = row["value"] is None
                if deleted:
                    want = "d"
                elif row["key"] not in seen:
                    want = "c" if rnd["round"] == 1 else "u"
                else:
                    want = "c" if seen[row["key"]] else "u"
                assert row["op"] == want, row
                seen[row["key"]] = deleted


def test_latest_per_key_is_each_keys_last_event_over_the_rounds():
    second = {**ROUND, "round": 2, "seed": 9, "first_seq": 20_000, "events": 5_000,
              "start_ms": ROUND["start_ms"] + 20_000 * demo_events.STEP_MS}
    last: dict[bytes, tuple[int, bytes | None]] = {}
    for rnd in (ROUND, second):
        for p in range(3):
            for row in demo_events.events_of_partition(rnd, 3, p).to_pylist():
                key = row["key"].encode()
                if key not in last or last[key][0] < row["seq"]:
                    last[key] = (row["seq"], None if row["value"] is None else row["value"].encode())
    table = demo_events.latest_per_key([ROUND, second])
    assert table.column_names == ["key", "seq", "value"]
    got = {r["key"]: (r["seq"], r["value"]) for r in table.to_pylist()}
    assert got == last and table.column("key").to_pylist() == sorted(last)


def masked_log(path: Path) -> bytes:
    """A .log file with each v2 batch's CRC and base and max timestamps zeroed: the sink stamps
    records with the time of the append (a batch's records share it, so their deltas are 0)."""
    data = bytearray(path.read_bytes())
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        assert data[pos + 16] == 2, f"{path} at {pos}: magic {data[pos + 16]}"
        data[pos + 17 : pos + 21] = bytes(4)  # crc
        data[pos + 27 : pos + 43] = bytes(16)  # baseTimestamp, maxTimestamp
        pos += 12 + length
    assert pos == len(data)
    return bytes(data)


def write_once(spark, data: Path, seed: int = 7) -> dict[str, bytes]:
    """The demo's generate and write steps alone (no clean), into ``data``; its partition files."""
    paths = demo._Paths(data)
    state = demo._start(paths, False, SMALL["partitions"], SMALL["segment_bytes"], "lz4")
    demo._write_round(spark, paths, state, {**ROUND, "seed": seed})
    files: dict[str, bytes] = {}
    for d in paths.partition_dirs():
        for f in sorted(d.iterdir()):
            if f.suffix == ".log":
                files[f"{d.name}/{f.name}"] = masked_log(f)
            elif f.suffix == ".index":
                files[f"{d.name}/{f.name}"] = f.read_bytes()
    return files


def test_same_seed_writes_the_same_partition_files(spark, tmp_path):
    first, second = write_once(spark, tmp_path / "a"), write_once(spark, tmp_path / "b")
    assert sum(name.endswith(".log") for name in first) > 3  # several segments in each of 3 partitions
    assert first.keys() == second.keys()
    assert [name for name in first if first[name] != second[name]] == []
    assert write_once(spark, tmp_path / "c", seed=8) != first


def fresh_summary() -> DemoSummary:
    steps = tuple(Step(name, 1.0, 10, 1000) for name in ("Spark: generate", "kafkalog: write"))
    sections = ((0, Sections(0, 800, 200)),)
    return DemoSummary("d", "customers", 1, 10, 10, 1, 10, 5, 1000, 500, steps, Verification(5, 4, 3, 1, 1, 0, 0),
                       sections, sections, "p.png")


def test_kafka_line_is_skipped_with_a_note_saying_what_is_missing(tmp_path, monkeypatch):
    from kit import kafka_harness

    monkeypatch.setattr(kafka_harness, "cached_jars", lambda: None)
    note = demo_kafka.find_kafka_cleaner()
    assert isinstance(note, str) and "not fetched" in note and "make test-interop" in note
    real_which = demo_kafka.shutil.which
    monkeypatch.setattr(demo_kafka.shutil, "which", lambda tool: None if tool == "mvn" else real_which(tool))
    assert demo_kafka.find_kafka_cleaner() == "needs mvn on PATH (Java 17+ and Maven)"

    skipped = demo._compare_with_kafka("needs mvn on PATH", demo._Paths(tmp_path), [], {}, [])
    assert skipped == KafkaComparison(None, "needs mvn on PATH", 0.0, 0, 0)
    assert demo._compare_with_kafka(None, demo._Paths(tmp_path), [], {}, []) is None
    summary = dataclasses.replace(fresh_summary(), kafka=skipped)
    assert "Kafka's own cleaner: skipped: needs mvn on PATH" in format_summary(summary).splitlines()
