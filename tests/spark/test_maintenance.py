"""kafkalog.spark.compact / run_retention: the native cleaner and retention as a Spark job.

The distributed job must leave every partition exactly as the same clean (or retention) run
directly on the partition leaves a copy of it: the same records at the same offsets, the same
segments, the same bytes in every ``.log`` file. It cleans only what is dirty (the log dir's
cleaner-offset-checkpoint, which a LogManager then continues from), skips partitions a
LogManager (or another writer) holds saying why, waits for them when asked, and names a bad
argument.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import threading
import time
from pathlib import Path

import pytest

import kafkalog
from kafkalog import Record
from kafkalog.spark import compact, run_retention
from kafkalog.testing import Seam

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
DELETE_RETENTION_MS = 1_000
CONFIG = {
    "internal.segment.bytes": "4096",
    "delete.retention.ms": str(DELETE_RETENTION_MS),
    "min.compaction.lag.ms": "0",
    "min.cleanable.dirty.ratio": "0",
}
CODECS = ["none", "gzip", "lz4", "zstd"]
DAY_MS = 24 * 3600 * 1000


def write_keyed(path: Path, seed: int, codec: str, *, batches: int = 60, keys: int = 25, config=None) -> None:
    """A keyed log over several small segments: updates of ``keys`` keys, one in eight a
    tombstone, some with headers."""
    rng = random.Random(seed)
    with kafkalog.UnifiedLog.open(path, {**CONFIG, "cleanup.policy": "compact", **(config or {})}) as log:
        for b in range(batches):
            records = []
            for i in range(rng.randrange(1, 6)):
                key = b"key-%03d" % rng.randrange(keys)
                value = None if rng.random() < 0.125 else b"value-%d-%d-" % (b, i) + b"x" * rng.randrange(40)
                headers = (("source", b"test"), ("n", None)) if rng.random() < 0.3 else ()
                records.append(Record(key, value, headers, timestamp=T0 + 10 * b + i))
            log.append(records, compression=codec, batch_size=rng.choice([120, 400, 2000]))


def append_keyed(path: Path, seed: int, batches: int) -> int:
    """Appends ``batches`` one-record batches of fresh keys and rolls; returns the records added."""
    with kafkalog.UnifiedLog.open(path, {**CONFIG, "cleanup.policy": "compact"}) as log:
        for b in range(batches):
            log.append([Record(b"new-%d-%d" % (seed, b), b"v" * 50, timestamp=T0 + 5_000 + b)])
        log.roll()
    return batches


def write_timed(path: Path, seed: int, *, old_batches: int, new_batches: int) -> None:
    """A log whose first segments hold records ten days old and whose last ones hold recent
    records (retention.ms of a few days deletes exactly the old segments)."""
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    with kafkalog.UnifiedLog.open(path, {"internal.segment.bytes": "4096"}) as log:
        for b in range(old_batches + new_batches):
            ts = now - 10 * DAY_MS + b if b < old_batches else now - 1000 + b
            log.append([Record(b"k%d" % rng.randrange(50), b"v" * rng.randrange(10, 200), timestamp=ts) for _ in range(5)])


def contents(path: Path) -> dict:
    """What "the same log" means: offsets, records (through a read-only UnifiedLog) and the
    bytes of each live segment file."""
    with kafkalog.UnifiedLog.open(path, read_only=True) as log:
        rows = [
            {k: v for k, v in r.items() if k not in ("topic", "partition")} for r in log.to_arrow().to_pylist()
        ]
        offsets = (log.log_start_offset, log.log_end_offset)
    files = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.iterdir())
        if len(p.name) == 24 and p.name.endswith(".log")
    }
    return {"offsets": offsets, "rows": rows, "segments": files}


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()
    }


def by_partition(df) -> dict[tuple[str, int], dict]:
    return {(r["topic"], r["partition"]): r.asDict() for r in df.collect()}


# -- compact ----------------------------------------------------------------------------------


def test_distributed_compact_equals_compact_now_on_each_copy(spark, tmp_path):
    """Four partitions (one codec each) compacted by the job equal copies compacted one by one
    with UnifiedLog.compact_dirty (each in its own log dir, so each keeps its own
    cleaner-offset-checkpoint), over two rounds: the first stamps tombstone horizons, the
    second (past delete.retention.ms, after new records of other keys) removes the tombstones
    the first left. Both roll first, so each round cleans up to the log end. A topic left out
    by ``topics`` is untouched."""
    data, expected = tmp_path / "data", tmp_path / "expected"
    for p, codec in enumerate(CODECS):
        write_keyed(data / f"users-{p}", seed=p, codec=codec)
    write_keyed(data / "other-0", seed=99, codec="none")
    shutil.copytree(data, expected)
    other_before = tree_hashes(data / "other-0")

    for round_, now in enumerate([T0 + 100_000, T0 + 100_000 + DELETE_RETENTION_MS + 1]):
        want = {}
        for p in range(len(CODECS)):
            if round_ == 1:
                append_keyed(data / f"users-{p}", p, 12)
                append_keyed(expected / f"users-{p}", p, 12)
            with kafkalog.UnifiedLog.open(expected / f"users-{p}", {**CONFIG, "cleanup.policy": "compact"}) as log:
                if log.segments[-1].size > 0:
                    log.roll()
                outcome = log.compact_dirty(time_ms=now)
            assert outcome.skipped is None and outcome.result is not None
            want[p] = (contents(expected / f"users-{p}"), outcome.result)

        df = compact(spark, str(data), topics="users", config=CONFIG, roll=True, time_ms=now)
        got = by_partition(df)
        assert sorted(got) == [("users", p) for p in range(len(CODECS))]
        for p in range(len(CODECS)):
            row, (want_contents, result) = got[("users", p)], want[p]
            assert row["error"] is None and row["skipped"] is None
            assert contents(data / f"users-{p}") == want_contents, f"users-{p}, round {round_}"
            assert row["first_dirty_offset"] == result.first_dirty_offset
            assert row["passes"] == len(result.passes) >= 1
            assert row["cleaned_to_offset"] == result.end_offset
            assert row["messages_written"] == result.stats.messages_written
            assert row["tombstones_removed"] == result.stats.tombstones_removed
            assert row["records_after"] == len(want_contents["rows"])
            assert row["bytes_after"] == sum((data / f"users-{p}" / n).stat().st_size for n in want_contents["segments"])
            assert row["duration_ms"] > 0 and row["waited_ms"] >= 0
            if round_ == 0:
                assert row["bytes_after"] < row["bytes_before"] and row["records_after"] < row["records_before"]
            else:
                assert row["tombstones_removed"] > 0
                cleaned = [r for r in want_contents["rows"] if r["offset"] < row["cleaned_to_offset"]]
                assert cleaned and all(r["value"] is not None for r in cleaned)
    assert tree_hashes(data / "other-0") == other_before


def test_roll_makes_the_active_segment_cleanable(spark, tmp_path):
    """Kafka never cleans the active segment; roll=True rolls first, so every key is left once
    (the latest value), and a comma list of partition dirs that names one twice (also through a
    symlink) runs each partition once."""
    write_keyed(tmp_path / "t-0", seed=7, codec="none", batches=20)
    write_keyed(tmp_path / "t-1", seed=8, codec="lz4", batches=20)
    with kafkalog.UnifiedLog.open(tmp_path / "t-0", read_only=True) as log:
        latest = {}
        for r in log.records():
            latest[r.key] = r.value
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "t-0").symlink_to(tmp_path / "t-0")
    path = f"{tmp_path / 't-0'},{tmp_path / 't-1'}, {tmp_path / 't-0'},{tmp_path / 'links'}"
    rows = by_partition(compact(spark, path, config=CONFIG, roll=True, time_ms=T0 + 100_000))
    assert sorted(rows) == [("t", 0), ("t", 1)]
    assert all(r["error"] is None for r in rows.values())
    with kafkalog.UnifiedLog.open(tmp_path / "t-0", read_only=True) as log:
        keys = [r.key for r in log.records()]
        assert len(keys) == len(set(keys)) == len(latest)
        assert rows[("t", 0)]["cleaned_to_offset"] == rows[("t", 0)]["first_uncleanable_offset"] == log.log_end_offset


def test_two_concurrent_jobs_on_one_partition_clean_one_at_a_time(spark, tmp_path):
    """Two jobs on one partition (wait=True): the first job's task is held by the test seam
    while it holds the partition's lock; the second job's task finds the partition locked and
    waits; only when the first is released and done does the second open and clean. Both
    succeed, and the log equals compact_now run twice in turn on a copy. The order of events
    is asserted, not durations."""
    data, expected = tmp_path / "data", tmp_path / "expected"
    with kafkalog.UnifiedLog.open(data / "users-0", {**CONFIG, "cleanup.policy": "compact"}) as log:
        for b in range(200):
            log.append([Record(b"key-%d" % (b % 40), b"%d-" % b + b"v" * 300, timestamp=T0 + b)])
    shutil.copytree(data, expected)
    now = T0 + 100_000
    with kafkalog.UnifiedLog.open(expected / "users-0", {**CONFIG, "cleanup.policy": "compact"}) as log:
        log.compact_dirty(time_ms=now)
        assert log.compact_dirty(time_ms=now).skipped.startswith("nothing dirty: ")
    want = contents(expected / "users-0")

    opened = "compact.opened.users-0"
    results: list = [None, None]

    def job(i: int) -> None:
        results[i] = by_partition(compact(spark, data, config=CONFIG, wait=True, time_ms=now))[("users", 0)]

    threads = [threading.Thread(target=job, args=(i,)) for i in range(2)]
    with Seam(tmp_path / "seam", pause={opened}) as seam:
        threads[0].start()
        seam.wait_for(opened)  # the first task holds the partition's lock, paused
        threads[1].start()
        seam.wait_for("compact.locked.users-0")  # the second found it locked and waits
        seam.release(opened)
        for t in threads:
            t.join()
    assert all(r is not None and r["error"] is None for r in results), results
    events = seam.events()
    first, second = events[0][1], events[2][1]
    assert first != second
    assert events == [
        ("compact.open.users-0", first),
        (opened, first),
        ("compact.open.users-0", second),
        ("compact.locked.users-0", second),
        (f"released {opened}", "test"),
        ("compact.done.users-0", first),
        (opened, second),  # the release let the first go; the second passes the same point at once
        ("compact.done.users-0", second),
    ]
    # The second found the first's checkpoint: nothing left to clean.
    assert results[0]["passes"] >= 1 and results[0]["skipped"] is None
    assert results[1]["passes"] == 0 and results[1]["skipped"].startswith("nothing dirty: ")
    assert results[1]["first_dirty_offset"] == results[1]["checkpoint"] == results[0]["cleaned_to_offset"]
    assert contents(data / "users-0") == want


# -- retention --------------------------------------------------------------------------------


def test_distributed_retention_equals_delete_old_segments_on_each_copy(spark, tmp_path):
    """retention.ms, then retention.bytes, through the job equal delete_old_segments on copies."""
    data, expected = tmp_path / "data", tmp_path / "expected"
    for p in range(3):
        write_timed(data / f"events-{p}", seed=p, old_batches=20 + 10 * p, new_batches=30)
    shutil.copytree(data, expected)

    rounds = [{"retention.ms": str(3 * DAY_MS)}, {"retention.ms": "-1", "retention.bytes": "6000"}]
    for config in rounds:
        want = {}
        for p in range(3):
            with kafkalog.UnifiedLog.open(expected / f"events-{p}", {"internal.segment.bytes": "4096", **config}) as log:
                result = log.delete_old_segments()
            want[p] = (contents(expected / f"events-{p}"), result)
        got = by_partition(run_retention(spark, data, config={"internal.segment.bytes": "4096", **config}))
        assert sorted(got) == [("events", p) for p in range(3)]
        for p in range(3):
            row, (want_contents, result) = got[("events", p)], want[p]
            assert row["error"] is None
            assert contents(data / f"events-{p}") == want_contents, f"events-{p}, {config}"
            assert row["segments_deleted"] == len(result.deleted) > 0
            assert row["log_start_offset_after"] == result.log_start_offset > row["log_start_offset_before"]
            reason = "retention_ms" if "retention.bytes" not in config else "retention_bytes"
            assert row["reasons"] == f"{reason}:{len(result.deleted)}"
            assert row["bytes_after"] < row["bytes_before"]


# -- locks --------------------------------------------------------------------------------


def test_partitions_of_a_running_log_manager_are_refused_or_waited_for(spark, tmp_path):
    data = tmp_path / "data"
    for p in range(2):
        write_keyed(data / f"users-{p}", seed=p, codec="none")
    manager = kafkalog.LogManager(
        data, {"log.cleaner.enable": "false"}, topic_configs={"users": {**CONFIG, "cleanup.policy": "compact"}},
        scheduler=False,
    )
    try:
        segments_before = {p: contents(data / f"users-{p}")["segments"] for p in range(2)}
        rows = by_partition(compact(spark, data, config=CONFIG))
        for p in range(2):
            skipped = rows[("users", p)]["skipped"]
            assert skipped.startswith("locked: ") and "running LogManager" in skipped and "wait=True" in skipped
            assert rows[("users", p)]["error"] is None and rows[("users", p)]["bytes_after"] is None
            assert contents(data / f"users-{p}")["segments"] == segments_before[p]

        rows = by_partition(compact(spark, data, config=CONFIG, wait=True, wait_timeout=0.5))
        assert all(r["skipped"].startswith("locked: ") and r["error"] is None for r in rows.values())
        assert all("still locked after waiting 0.5 s" in r["skipped"] for r in rows.values())

        # wait=True without a timeout: both tasks wait (the seam says so), the manager closes,
        # then both clean.
        results: list = []
        waiting = threading.Thread(target=lambda: results.append(by_partition(compact(spark, data, config=CONFIG, wait=True))))
        with Seam(tmp_path / "seam") as seam:
            waiting.start()
            for p in range(2):
                seam.wait_for(f"compact.locked.users-{p}")
            seam.note("closing the manager")
            manager.close()
            waiting.join()
    finally:
        manager.close()
    events = [e for e, _ in seam.events()]
    closed = events.index("closing the manager")
    for p in range(2):
        assert events.index(f"compact.locked.users-{p}") < closed < events.index(f"compact.opened.users-{p}")
        row = results[0][("users", p)]
        assert row["error"] is None, row["error"]
        assert row["bytes_after"] < row["bytes_before"]


def test_a_partition_dir_removed_after_discovery_gets_an_error_and_stays_removed(spark, tmp_path):
    """A partition deleted (by LogManager.delete_log, say) after the job found it, just before
    its task opens it: that partition's row gets the error and the dir is not recreated (a
    writable open would create it: the task opens with create=False); the others are cleaned."""
    data = tmp_path / "data"
    for p in range(2):
        write_keyed(data / f"users-{p}", seed=p, codec="none")
    point = "compact.open.users-1"
    result: list = []
    job = threading.Thread(target=lambda: result.append(by_partition(compact(spark, data, config=CONFIG))))
    with Seam(tmp_path / "seam", pause={point}) as seam:
        job.start()
        seam.wait_for(point)
        shutil.rmtree(data / "users-1")
        seam.release(point)
        job.join()
    rows = result[0]
    error = rows[("users", 1)]["error"]
    assert error.startswith("KafkaLogIOError: ") and f"partition directory {data / 'users-1'} no longer exists" in error
    assert "not recreated" in error and rows[("users", 1)]["bytes_after"] is None
    assert not (data / "users-1").exists()
    assert rows[("users", 0)]["error"] is None and rows[("users", 0)]["passes"] >= 1


def test_a_partition_held_by_another_writer_is_refused_and_the_others_are_cleaned(spark, tmp_path):
    """The partition flock a writable open takes is what keeps two cleans (or a clean and a
    writer) off one partition: the held partition gets the error, the job goes on."""
    for p in range(2):
        write_keyed(tmp_path / f"users-{p}", seed=p, codec="none")
    with kafkalog.UnifiedLog.open(tmp_path / "users-1", {**CONFIG, "cleanup.policy": "compact"}):
        rows = by_partition(compact(spark, tmp_path, config=CONFIG))
    assert rows[("users", 0)]["error"] is None and rows[("users", 0)]["passes"] >= 1
    skipped, error = rows[("users", 1)]["skipped"], rows[("users", 1)]["error"]
    assert error is None and skipped.startswith("locked: ") and "locked by another writer" in skipped


# -- arguments ------------------------------------------------------------------------------


@pytest.fixture
def one_partition(tmp_path):
    write_keyed(tmp_path / "users-0", seed=1, codec="none", batches=5)
    (tmp_path / "empty").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "job, kwargs, error, words",
    [
        (compact, {"path": "{root}/missing"}, ValueError, ["path", "/missing", "does not exist"]),
        (compact, {"path": "{root}/empty"}, ValueError, ["path", "/empty", "no partition directories"]),
        (compact, {"path": ""}, ValueError, ["path"]),
        (compact, {"path": 42}, TypeError, ["path", "42"]),
        (compact, {"topics": "users,orders"}, ValueError, ["topics", "'orders'"]),
        (compact, {"topics": [1]}, TypeError, ["topics", "[1]"]),
        (compact, {"config": {"segment.bytes": "big"}}, ValueError, ["config", "segment.bytes", "big"]),
        (compact, {"config": {"no.such.key": "1"}}, ValueError, ["config", "no.such.key"]),
        (compact, {"config": {"log.cleaner.dedupe.buffer.size": "lots"}}, ValueError, ["log.cleaner.dedupe.buffer.size", "lots"]),
        (compact, {"config": "retention.ms=1"}, TypeError, ["config", "retention.ms=1"]),
        (compact, {"wait": "yes"}, TypeError, ["wait", "yes"]),
        (compact, {"wait_timeout": -1}, ValueError, ["wait_timeout", "-1"]),
        (compact, {"time_ms": -5}, ValueError, ["time_ms", "-5"]),
        (compact, {"roll": 1}, TypeError, ["roll", "1"]),
        (run_retention, {"config": {"log.cleaner.io.buffer.size": "1024"}}, ValueError, ["log.cleaner.io.buffer.size"]),
        (run_retention, {"config": {"retention.ms": "soon"}}, ValueError, ["config", "retention.ms", "soon"]),
        (run_retention, {"cap_future_timestamps": "no"}, TypeError, ["cap_future_timestamps", "no"]),
    ],
)
def test_bad_arguments_are_named(spark, one_partition, job, kwargs, error, words):
    args = {"path": str(one_partition), **kwargs}
    if isinstance(args["path"], str):
        args["path"] = args["path"].replace("{root}", str(one_partition))
    before = tree_hashes(one_partition)
    with pytest.raises(error) as info:
        job(spark, **args)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert tree_hashes(one_partition) == before


def test_not_a_spark_session_is_named(one_partition):
    with pytest.raises(TypeError, match="spark must be a SparkSession"):
        compact("local[2]", one_partition)


def test_a_folder_of_log_dirs_named_like_partitions_is_not_taken_for_partitions(spark, tmp_path):
    """A data folder holding log dirs named ``<name>-<n>``: they hold partition dirs and no
    segments, so they are log dirs (the engine's rule, kafkalog.discover), not partitions to
    open and write into."""
    for log_dir in ("logs-1", "logs-2"):
        write_keyed(tmp_path / log_dir / "users-0", seed=1, codec="none", batches=2)
    before = tree_hashes(tmp_path)
    with pytest.raises(ValueError, match=r"path: .* holds no partition directories"):
        compact(spark, tmp_path, config=CONFIG)
    with pytest.raises(ValueError, match=r"path: .* holds no partition directories"):
        run_retention(spark, tmp_path)
    assert tree_hashes(tmp_path) == before
