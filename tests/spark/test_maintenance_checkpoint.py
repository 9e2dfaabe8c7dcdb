"""kafkalog.spark.compact keeps the log dir's cleaner-offset-checkpoint as Kafka's cleaner does:
a second run cleans only what was appended since the first, partitions of one log dir cleaned
by concurrent tasks all keep their entry, a LogManager opened on the dir continues from the
file, and a partition left alone says why (``skipped``) with ``error`` null.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import kafkalog
from kafkalog import Record
from kafkalog.checkpoints import read_offset_checkpoint
from kafkalog.spark import SKIPPED_REASONS, compact

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
TOPIC_CONFIG = {"cleanup.policy": "compact", "internal.segment.bytes": "2048", "min.compaction.lag.ms": "0"}
NOW = T0 + 100_000


def append(path: Path, first: int, count: int, keys: int, *, config: dict | None = None) -> None:
    """``count`` one-record batches, keys ``k<i % keys>``, then a roll (so all is cleanable)."""
    with kafkalog.UnifiedLog.open(path, {**TOPIC_CONFIG, **(config or {})}) as log:
        for i in range(first, first + count):
            log.append([Record(b"k%d" % (i % keys), b"v%d-" % i + b"x" * 40, timestamp=T0 + i)])
        log.roll()


def rows(df) -> dict[int, dict]:
    return {r["partition"]: r.asDict() for r in df.collect()}


def test_a_second_run_cleans_only_what_was_appended_and_a_log_manager_continues(spark, tmp_path):
    """Round 1 cleans three partitions of one log dir from their log start (their tasks run at
    once and each writes its entry into the one file: all three are there). N records appended
    to each, round 2 starts at the checkpoint: its first dirty offset is round 1's end and its
    offset map read exactly the N new records. A LogManager opened on the dir then takes the
    file as its cleaner's checkpoint."""
    data = tmp_path / "data"
    for p in range(3):
        append(data / f"users-{p}", 0, 200, 30)
    first = rows(compact(spark, data, config=TOPIC_CONFIG, time_ms=NOW))
    for p, row in first.items():
        assert (row["error"], row["skipped"], row["checkpoint"], row["first_dirty_offset"]) == (None, None, None, 0)
        assert row["cleaned_to_offset"] == 200 and row["map_messages_read"] == 200
    entries = read_offset_checkpoint(data / "cleaner-offset-checkpoint")
    assert entries == {("users", p): 200 for p in range(3)}

    n = 25
    for p in range(3):
        append(data / f"users-{p}", 200, n, 30)
    second = rows(compact(spark, data, config={**TOPIC_CONFIG, "min.cleanable.dirty.ratio": "0"}, time_ms=NOW))
    for p, row in second.items():
        assert (row["error"], row["skipped"]) == (None, None)
        assert row["checkpoint"] == row["first_dirty_offset"] == first[p]["cleaned_to_offset"] == 200
        assert row["map_messages_read"] == n and row["cleaned_to_offset"] == 200 + n
        assert 0 < row["map_bytes_read"] < first[p]["map_bytes_read"]
    assert read_offset_checkpoint(data / "cleaner-offset-checkpoint") == {("users", p): 225 for p in range(3)}

    for p in range(3):
        append(data / f"users-{p}", 225, 10, 30)
    with kafkalog.LogManager(data, {"log.cleaner.enable": "true", "log.cleaner.threads": "1"},
                             topic_configs={"users": TOPIC_CONFIG}, scheduler=False) as manager:
        status = {s.partition: s for s in manager.cleaner_status("users")}
        assert all(status[p].first_dirty_offset == 225 for p in range(3))
        result = manager.compact_now("users", 1)
        assert (result.first_dirty_offset, result.end_offset, result.stats.map_messages_read) == (225, 235, 10)
    assert read_offset_checkpoint(data / "cleaner-offset-checkpoint")[("users", 1)] == 235


def test_each_skip_says_why_and_leaves_the_log_alone(spark, tmp_path):
    """delete policy (the config says so), nothing dirty (a run after a full clean), below
    min.cleanable.dirty.ratio (Kafka's default 0.5: a few new records on a large clean log):
    each row has ``skipped`` starting with its reason, ``error`` null, no pass, and the
    partition's segments unchanged."""
    data = tmp_path / "data"
    append(data / "users-0", 0, 300, 300)
    rows0 = rows(compact(spark, data / "users-0", config=TOPIC_CONFIG, time_ms=NOW))
    assert rows0[0]["skipped"] is None and rows0[0]["cleaned_to_offset"] == 300

    def segments() -> list:
        with kafkalog.UnifiedLog.open(data / "users-0", read_only=True) as log:
            return [(s.base_offset, s.size) for s in log.segments]

    cases = [
        ({**TOPIC_CONFIG, "cleanup.policy": "delete"}, "delete policy: cleanup.policy=delete"),
        (TOPIC_CONFIG, "nothing dirty: "),
    ]
    for config, start in cases:
        before = segments()
        row = rows(compact(spark, data / "users-0", config=config, time_ms=NOW))[0]
        assert row["skipped"].startswith(start) and row["error"] is None and row["passes"] == 0, row
        assert segments() == before

    append(data / "users-0", 300, 10, 300)
    before = segments()
    row = rows(compact(spark, data / "users-0", config=TOPIC_CONFIG, time_ms=NOW))[0]
    assert row["skipped"].startswith("below min.cleanable.dirty.ratio: ") and row["error"] is None, row
    assert row["checkpoint"] == row["first_dirty_offset"] == row["cleaned_to_offset"] == 300
    assert segments() == before
    assert all(any(r.startswith(reason) for reason in SKIPPED_REASONS) for r in (row["skipped"],))


def test_the_task_s_map_is_sized_to_the_log_but_never_above_the_configured_buffer(spark, tmp_path):
    """Each task sizes its offset map to what its log can need (twice its records) when the
    configured log.cleaner.dedupe.buffer.size is larger, and keeps the configured one when it
    is smaller: a buffer of 40 slots on 300 keys still takes the passes compact_dirty takes on
    a copy with that buffer, and the default buffer one pass, with the same records."""
    import shutil

    data, copy = tmp_path / "data", tmp_path / "copy"
    append(data / "users-0", 0, 300, 300)
    append(data / "users-1", 0, 300, 300)
    shutil.copytree(data, copy)
    small = 40 * 24
    got = rows(compact(spark, data / "users-0", config={**TOPIC_CONFIG, "log.cleaner.dedupe.buffer.size": small}, time_ms=NOW))
    got |= rows(compact(spark, data / "users-1", config=TOPIC_CONFIG, time_ms=NOW))
    for p, size in ((0, small), (1, None)):
        with kafkalog.UnifiedLog.open(copy / f"users-{p}", TOPIC_CONFIG) as log:
            outcome = log.compact_dirty(time_ms=NOW, **({"dedupe_buffer_size": size} if size else {}))
        assert got[p]["passes"] == len(outcome.result.passes), (p, got[p])
        with kafkalog.UnifiedLog.open(copy / f"users-{p}", read_only=True) as want, \
                kafkalog.UnifiedLog.open(data / f"users-{p}", read_only=True) as have:
            assert [(r.offset, r.key, r.value) for r in have.records()] == [(r.offset, r.key, r.value) for r in want.records()]
    assert got[0]["passes"] > 1 and got[1]["passes"] == 1
