"""The log cleaner as the LogManager runs it, through the Python API: per-partition status,
Kafka's gauges by name, on-demand compaction, one loop iteration on a manual clock, retrying
uncleanable partitions, run-time reconfiguration (and its validation), and the cleaner thread.

Managers run on a manual clock with no background thread (kit.manager.open_manager) unless
a test is about the thread.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path
from typing import Any

import pytest

import kafkalog
from kafkalog import CleanerStats, CleanerStatus, CleanOutcome, CompactResult, LogManager, Record, UnifiedLog
from kafkalog.checkpoints import read_offset_checkpoint
from kafkalog.exceptions import IllegalStateError, InvalidConfigError
from kafkalog.testing import fault

from kit.manager import native_thread_names, native_threads, now_ms, open_manager, wait_for, wait_for_new_threads

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
#: Small segments (about five one-record batches each), and any dirty ratio is worth a clean.
COMPACTED: dict[str, Any] = {
    "cleanup.policy": "compact",
    "internal.segment.bytes": 400,
    "min.cleanable.dirty.ratio": 0.01,
}
#: The smallest dedupe buffer Kafka accepts for one thread is just over 1 MiB.
BROKER: dict[str, Any] = {"log.cleaner.dedupe.buffer.size": 2 * 1024 * 1024, "log.cleaner.io.buffer.size": 65536}


def fill_keys(log: UnifiedLog, count: int, keys: int) -> None:
    """``count`` one-record batches over ``keys`` keys: record i has key k<i % keys>, value v<i>."""
    for i in range(count):
        log.append([Record(b"k%d" % (i % keys), b"v%d" % i)])


def latest_per_key(log: UnifiedLog, end: int) -> dict[bytes | None, bytes | None]:
    return {r.key: r.value for r in log.records(end=end)}


def assert_compacted(log: UnifiedLog, upto: int) -> None:
    """Below ``upto`` every key is left at most once."""
    keys = [r.key for r in log.records(end=upto)]
    assert len(keys) == len(set(keys)), f"duplicate keys below {upto}: {keys}"


def test_status_covers_compacted_partitions(tmp_path: Path) -> None:
    a = tmp_path / "a"
    with open_manager(a, BROKER) as m:
        log = m.create_log("c", 0, COMPACTED)
        m.create_log("c", 1, COMPACTED)
        m.create_log("d", 0, {"cleanup.policy": "delete"})
        fill_keys(log, 40, 4)
        statuses = m.cleaner_status()
        assert [(s.topic, s.partition) for s in statuses] == [("c", 0), ("c", 1)], "compacted partitions only"
        s = statuses[0]
        assert isinstance(s, CleanerStatus)
        active_base = log.segments[-1].base_offset
        assert (s.state, s.first_dirty_offset, s.first_uncleanable_offset) == ("none", 0, active_base)
        assert (s.log_start_offset, s.log_end_offset, s.cleanup_policy) == (0, 40, "compact")
        assert s.clean_bytes == 0 and s.cleanable_bytes > 0 and s.dirty_ratio == 1.0
        assert s.clean_bytes + s.cleanable_bytes + s.uncleanable_bytes == log.size_in_bytes
        assert s.records_to_clean == active_base, "one record per offset below the active segment"
        assert s.map_capacity == int((2 * 1024 * 1024 // 24) * 0.9)
        assert s.passes_needed == 1
        assert s.last_clean_ms is None and s.last_clean_stats is None and s.uncleanable_reason is None
        assert s.log_dir == str(a)
        assert re.match(r"CleanerStatus\(c-0, state=none, dirty_ratio=1\.000, dirty=\[0, \d+\)", repr(s)), repr(s)
        assert [(x.topic, x.partition) for x in m.cleaner_status("c", 1)] == [("c", 1)]
        assert m.cleaner_status(partition=1)[0].partition == 1
        assert m.cleaner_status("nope") == []
        with pytest.raises(AttributeError):
            s.state = "x"  # type: ignore[misc]


def test_metrics_have_kafkas_names(tmp_path: Path) -> None:
    a = tmp_path / "a"
    with open_manager(a, BROKER) as m:
        log = m.create_log("c", 0, COMPACTED)
        fill_keys(log, 40, 4)
        m.advance_time(250)
        metrics = m.cleaner_metrics()
        assert set(metrics) == {
            "max-dirty-percent",
            "max-buffer-utilization-percent",
            "cleaner-recopy-percent",
            "max-clean-time-secs",
            "max-compaction-delay-secs",
            "DeadThreadCount",
            "dead-thread-restarts",
            "time-since-last-run-ms",
            "uncleanable-partitions-count",
            "uncleanable-bytes",
            f"uncleanable-partitions-count,logDirectory={a}",
            f"uncleanable-bytes,logDirectory={a}",
            "threads",
        }
        assert metrics["time-since-last-run-ms"] == 250
        assert (metrics["DeadThreadCount"], metrics["threads"], metrics["max-dirty-percent"]) == (0, 0, 0)
        assert all(isinstance(v, int) for v in metrics.values())
        m.run_cleaner_once()
        after = m.cleaner_metrics()
        assert after["max-dirty-percent"] == 100 and after["time-since-last-run-ms"] == 0
        assert 0 < after["cleaner-recopy-percent"] < 100


def test_run_cleaner_once_cleans_the_filthiest_partition(tmp_path: Path) -> None:
    a = tmp_path / "a"
    with open_manager(a, BROKER) as m:
        log = m.create_log("c", 0, COMPACTED)
        fill_keys(log, 40, 4)
        before = latest_per_key(log, 40)
        outcome = m.run_cleaner_once()
        assert isinstance(outcome, CleanOutcome)
        assert (outcome.topic, outcome.partition, outcome.status, outcome.reason) == ("c", 0, "cleaned", None)
        assert outcome.first_dirty_offset == 0 and outcome.end_offset == log.segments[-1].base_offset
        assert isinstance(outcome.stats, CleanerStats)
        assert outcome.stats.messages_read > outcome.stats.messages_written
        assert read_offset_checkpoint(a / CLEANER_CHECKPOINT) == {("c", 0): outcome.end_offset}
        assert latest_per_key(log, 40) == before, "the latest value of every key survives"
        assert_compacted(log, outcome.end_offset)
        status = m.cleaner_status()[0]
        assert status.last_clean_ms == m.time_ms
        assert status.last_clean_range == (0, outcome.end_offset)
        assert status.last_clean_stats == outcome.stats
        assert status.first_dirty_offset == outcome.end_offset
        assert m.run_cleaner_once() is None, "nothing left below the active segment"


def test_the_last_clean_is_kept_on_disk_and_known_after_a_restart(tmp_path: Path) -> None:
    """Kafka's cleaner forgets a clean's stats at a restart; kafkalog keeps the last clean of
    each partition in the log dir's kafkalog-last-clean, written by the cleaner thread and read
    back by the next LogManager (and by ``kafkalog stats``)."""
    a = tmp_path / "a"
    with open_manager(a, BROKER) as m:
        log = m.create_log("c", 0, COMPACTED)
        m.create_log("c", 1, COMPACTED)
        fill_keys(log, 40, 4)
        outcome = m.run_cleaner_once()
        assert outcome is not None and outcome.stats is not None
        cleaned_at = m.time_ms
    (recorded,) = kafkalog.cleaner.read_last_cleans(a).values()
    assert (recorded.topic, recorded.partition, recorded.by, recorded.time_ms) == ("c", 0, "log-cleaner", cleaned_at)
    assert (recorded.first_dirty_offset, recorded.end_offset) == (0, outcome.end_offset)
    assert recorded.stats == outcome.stats
    with open_manager(a, BROKER, time_ms=cleaned_at + 1000, topic_configs={"c": COMPACTED}) as m:
        statuses = {s.partition: s for s in m.cleaner_status()}
        assert statuses[0].last_clean_ms == cleaned_at
        assert statuses[0].last_clean_range == (0, outcome.end_offset)
        assert statuses[0].last_clean_stats == outcome.stats
        assert statuses[1].last_clean_ms is None


def test_compact_now_goes_through_the_manager(tmp_path: Path) -> None:
    a = tmp_path / "a"
    with open_manager(a, BROKER) as m:
        log = m.create_log("c", 0, {**COMPACTED, "min.cleanable.dirty.ratio": 1.0})
        m.create_log("d", 0, {"cleanup.policy": "delete"})
        fill_keys(log, 40, 4)
        assert m.run_cleaner_once() is None, "a ratio of 1.0 is never exceeded: the threads leave it"
        result = m.compact_now("c", 0)
        assert isinstance(result, CompactResult)
        end = log.segments[-1].base_offset
        assert (result.first_dirty_offset, result.end_offset, len(result.passes)) == (0, end, 1)
        assert "Log cleaner thread" in result.passes[0].summary and "c-0" in result.passes[0].summary
        assert read_offset_checkpoint(a / CLEANER_CHECKPOINT) == {("c", 0): end}
        assert_compacted(log, end)
        again = m.compact_now("c", 0)
        assert again.passes == [] and again.first_dirty_offset == end, "starts from the checkpoint"

        with pytest.raises(InvalidConfigError, match=r"cleanup\.policy.*d-0"):
            m.compact_now("d", 0)
        with pytest.raises(IllegalStateError, match="nope-0"):
            m.compact_now("nope", 0)


def test_cleaner_disabled(tmp_path: Path) -> None:
    with open_manager(tmp_path / "a", {"log.cleaner.enable": False}) as m:
        m.create_log("c", 0, COMPACTED)
        for call in (lambda: m.compact_now("c", 0), m.cleaner_status, m.cleaner_metrics, m.run_cleaner_once):
            with pytest.raises(InvalidConfigError, match=r"log\.cleaner\.enable"):
                call()


def reopen_failing(a: Path, t0: int) -> LogManager:
    """Reopens the manager (so nothing about the segments is cached and the stats must read the
    files) and runs the cleaner loop once while reads of c-0 fail: c-0 becomes uncleanable."""
    m = open_manager(a, BROKER, time_ms=t0, topic_configs={"c": COMPACTED})
    with fault(a / "c-0", "read", errno.EIO):
        assert m.run_cleaner_once() is None
    return m


def test_uncleanable_partition_shows_why_and_is_retried(tmp_path: Path) -> None:
    """A partition whose clean fails is skipped (in Kafka until the broker restarts); here the
    reason is visible, and it is retried on request or after a topic config change."""
    a = tmp_path / "a"
    t0 = now_ms()
    with open_manager(a, BROKER, time_ms=t0) as m:
        fill_keys(m.create_log("c", 0, COMPACTED), 40, 4)
    with reopen_failing(a, t0) as m:
        status = m.cleaner_status()[0]
        assert status.uncleanable_reason is not None
        assert "failed to calculate log cleaning stats for partition c-0" in status.uncleanable_reason
        assert status.uncleanable_since_ms == t0
        metrics = m.cleaner_metrics()
        assert metrics["uncleanable-partitions-count"] == 1
        assert metrics[f"uncleanable-bytes,logDirectory={a}"] == status.cleanable_bytes > 0
        assert m.run_cleaner_once() is None, "not retried on its own"
        assert m.retry_uncleanable("other") == []
        assert m.retry_uncleanable("c") == [("c", 0)]
        assert m.cleaner_status()[0].uncleanable_reason is None
        outcome = m.run_cleaner_once()
        assert outcome is not None and outcome.status == "cleaned"
        log = m.get_log("c", 0)
        assert log is not None
        fill_keys(log, 40, 4)
    with reopen_failing(a, t0) as m:
        assert m.cleaner_status()[0].uncleanable_reason is not None
        m.update_topic_config("c", {**COMPACTED, "min.cleanable.dirty.ratio": 0.02})
        assert m.cleaner_status()[0].uncleanable_reason is None
        outcome = m.run_cleaner_once()
        assert outcome is not None and outcome.status == "cleaned"


def test_reconfigure_cleaner_validates_with_kafkas_names(tmp_path: Path) -> None:
    config = {"log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024}
    with open_manager(tmp_path / "a", config) as m:
        after = m.reconfigure_cleaner(
            {"log.cleaner.threads": 2, "log.cleaner.io.max.bytes.per.second": 1e6, "log.cleaner.backoff.ms": 100}
        )
        assert after == {
            "log.cleaner.backoff.ms": "100",
            "log.cleaner.dedupe.buffer.size": "16777216",
            "log.cleaner.io.buffer.load.factor": "0.9",
            "log.cleaner.io.buffer.size": "524288",
            "log.cleaner.io.max.bytes.per.second": "1000000.0",
            "log.cleaner.threads": "2",
        }
        bad = [
            ({"log.cleaner.threads": 5}, "log.cleaner.threads", "5", "more than double the current value 2"),
            ({"log.cleaner.threads": 0}, "log.cleaner.threads", "0", "at least 1|must be >= 1"),
            ({"log.cleaner.backoff.ms": -1}, "log.cleaner.backoff.ms", "-1", "must be >= 0"),
            ({"log.cleaner.io.buffer.load.factor": 1.5}, "log.cleaner.io.buffer.load.factor", "1.5", r"\(0\.0, 1\.0\]"),
            ({"log.cleaner.io.max.bytes.per.second": 0}, "log.cleaner.io.max.bytes.per.second", "0", "> 0"),
            ({"log.cleaner.threads": "two"}, "log.cleaner.threads", "two", "integer"),
            ({"log.cleaner.dedupe.buffer.size": 2 * 1024 * 1024}, "log.cleaner.dedupe.buffer.size", "2097152", "1 MiB per"),
            ({"log.cleaner.enable": False}, "log.cleaner.enable", "false", "not reconfigurable"),
            ({"log.retention.ms": 5}, "log.retention.ms", "5", "not reconfigurable"),
        ]
        for change, key, value, rule in bad:
            with pytest.raises(InvalidConfigError) as e:
                m.reconfigure_cleaner(change)
            text = str(e.value)
            assert key in text and f'"{value}"' in text and re.search(rule, text), text
        assert m.reconfigure_cleaner({})["log.cleaner.threads"] == "2", "rejected changes changed nothing"


def test_cleaner_threads_start_with_the_scheduler_and_clean(tmp_path: Path) -> None:
    """On the system clock, LogManager starts log.cleaner.threads kafka-log-cleaner-thread-<n>
    threads that compact in the background; reconfiguration replaces them; close stops them."""
    a = tmp_path / "a"
    before = set(native_threads())
    with open_manager(a, BROKER):
        wait_for_new_threads(before, [], "no thread on a manual clock")
    config = {**BROKER, "log.cleaner.backoff.ms": 10, "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024}
    m = LogManager([a], config)
    try:
        wait_for(lambda: "kafka-log-clean" in native_thread_names(), what="the kafka-log-cleaner-thread-0 thread")
        log = m.create_log("c", 0, COMPACTED)
        fill_keys(log, 40, 4)
        log.roll()
        wait_for(lambda: m.cleaner_status()[0].first_dirty_offset == 40, what="the cleaner thread's clean")
        assert_compacted(log, 40)
        assert m.cleaner_metrics()["threads"] == 1
        m.reconfigure_cleaner({"log.cleaner.threads": 2})
        assert m.cleaner_metrics()["threads"] == 2
        wait_for(lambda: native_thread_names().count("kafka-log-clean") == 2, what="two cleaner threads")
    finally:
        m.close()
    # close() joined the threads; they leave /proc a moment later.
    wait_for(lambda: "kafka-log-clean" not in native_thread_names(), what="the cleaner threads to go")


def test_public_names() -> None:
    assert kafkalog.CleanerStatus is CleanerStatus
    assert {"CleanerStatus", "CleanOutcome"} <= set(kafkalog.__all__)


def test_a_clean_marks_the_snapshots_of_merged_segments_for_deletion(tmp_path: Path) -> None:
    """Kafka's ``UnifiedLog.replaceSegments`` deletes (asynchronously) the producer snapshots of
    the replaced segments whose base offset no cleaned segment has: merging segments 0 and 50
    leaves no live ``50.snapshot`` (``kafkalog verify`` called it a stray snapshot)."""
    path = tmp_path / "t-0"
    with UnifiedLog.open(path, {"cleanup.policy": "compact"}) as log:
        for _ in range(2):
            log.append([Record(f"k{i % 5}".encode(), b"v") for i in range(50)])
            log.roll()
        assert (path / "00000000000000000050.snapshot").exists()
        result = log.compact_now()
        assert [s.base_offset for s in log.segments] == [0, 100] and result.stats.segments_written == 1
        assert not (path / "00000000000000000050.snapshot").exists()
        assert (path / "00000000000000000050.snapshot.deleted").exists()
        assert (path / "00000000000000000100.snapshot").exists(), "the snapshot of a kept base stays"
