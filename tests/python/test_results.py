"""Every result crosses the native boundary as a frozen class declared once in Rust
(rust/python/results.rs): importable from ``kafkalog`` under its public name, compared by value,
pickled by every protocol (Spark ships results from executors to the driver), immutable. The
ones that were named tuples still unpack, index and compare like a tuple of their fields;
``CleanerStats``' fields are the engine's one list."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

import kafkalog
from kafkalog import _native, checkpoints
from kafkalog.records import Record

from kit.manager import open_manager

#: Result classes that were named tuples: they unpack and compare like tuples.
SEQUENCES = [
    "AppendInfo", "SegmentInfo", "ReadResult", "TimestampAndOffset", "DeletedSegment", "RetentionResult",
    "DecodedRecord", "EpochEntry", "CleanOutcome", "DirRecoveryProgress", "DirLoadSummary", "LogDirInfo",
]
#: Result classes that were frozen dataclasses (or a pyclass): compared with their own class only.
RECORDS = [
    "ConsumerRecord", "CleanerStats", "CleanPass", "CompactResult", "CleanerStatus", "AbortedTransaction",
    "CleanableSections", "SegmentTombstones", "RetentionPlan",
]

COMPACTED = {"cleanup.policy": "compact", "internal.segment.bytes": 400, "min.cleanable.dirty.ratio": 0.01}


def results_of_a_log(tmp_path: Path) -> list[Any]:
    """One of each result a log hands out, from real calls."""
    out: list[Any] = []
    with kafkalog.UnifiedLog.open(tmp_path / "t-0", COMPACTED) as log:
        for i in range(12):
            out.append(log.append([Record(b"k%d" % (i % 3), b"v%d" % i, (("h", b"x"),), 1000 + i)]))
        read = log.read(0)
        out += [read, read.records[0], log.offset_for_timestamp(1003)]
        out += log.segments
        out.append(kafkalog.decode_batches(read.records_bytes)[0])
        log.roll()
        compacted = log.compact_now(time_ms=10_000, dedupe_buffer_size=1 << 16)
        out += [compacted, compacted.passes[0], compacted.stats]
        log.delete_records(log.segments[1].base_offset)
        out += [log.cleaner_sections(time_ms=10_000), log.tombstones(time_ms=10_000)[0], log.retention_plan()]
        retention = log.delete_old_segments()
        out += [retention, retention.deleted[0]]
    return out


def results_of_a_manager(tmp_path: Path) -> list[Any]:
    progress: list[Any] = []
    with open_manager(tmp_path / "d", {"log.cleaner.dedupe.buffer.size": 2 << 20}, on_progress=progress.extend) as m:
        log = m.create_log("c", 0, COMPACTED)
        for i in range(12):
            log.append([Record(b"k%d" % (i % 3), b"v%d" % i)])
        log.roll()
        outcome = m.run_cleaner_once()
        out = [outcome, *m.cleaner_status(), *m.log_dirs(), *m.load_summary()]
    with open_manager(tmp_path / "d", on_progress=progress.extend) as m:
        pass
    return out + progress[:1]


def test_every_result_class_is_the_native_one_under_its_public_name() -> None:
    for name in SEQUENCES + RECORDS:
        cls = getattr(kafkalog, name)
        assert cls is getattr(_native, name), name
        assert cls.__module__ == "kafkalog", name


def test_results_pickle_compare_and_stay_frozen(tmp_path: Path) -> None:
    results = results_of_a_log(tmp_path / "log") + results_of_a_manager(tmp_path / "manager")
    # EpochEntry comes from a checkpoint, AbortedTransaction from a .txnindex (test_txn_index.py).
    assert {type(r).__name__ for r in results} == set(SEQUENCES + RECORDS) - {"EpochEntry", "AbortedTransaction"}
    for r in results:
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(r, protocol=protocol))
            assert type(back) is type(r) and back == r and not back != r, (r, protocol)
        field = type(r).__match_args__[0]
        with pytest.raises(AttributeError):
            setattr(r, field, getattr(r, field))
        assert repr(r).startswith(type(r).__name__ + "(")
        if type(r).__name__ in SEQUENCES:
            values = tuple(getattr(r, f) for f in type(r).__match_args__)
            assert tuple(r) == values and r == values and len(r) == len(values) and r[-1] == values[-1]
            assert type(r)(*values) == r
        else:
            assert r != tuple(getattr(r, f) for f in type(r).__match_args__)


def test_equal_values_are_equal_and_hash_alike() -> None:
    a = kafkalog.AppendInfo(0, 2, 5, 1, -1, 0, 3, 1, 100)
    b = kafkalog.AppendInfo(first_offset=0, last_offset=2, max_timestamp=5, offset_of_max_timestamp=1,
                            log_append_time=-1, log_start_offset=0, record_count=3, batch_count=1, valid_bytes=100)
    assert a == b and hash(a) == hash(b)
    assert a == (0, 2, 5, 1, -1, 0, 3, 1, 100) and hash(a) == hash((0, 2, 5, 1, -1, 0, 3, 1, 100))
    assert a < kafkalog.AppendInfo(0, 3, 5, 1, -1, 0, 3, 1, 100)
    first, last, *_ = a
    assert (first, last) == (0, 2)
    s = kafkalog.CleanerStats(bytes_read=4, bytes_written=1)
    assert s == kafkalog.CleanerStats(bytes_read=4, bytes_written=1) != kafkalog.CleanerStats(bytes_read=4)
    assert hash(s) == hash(kafkalog.CleanerStats(bytes_read=4, bytes_written=1))
    assert (s.size_reduction, kafkalog.CleanerStats().size_reduction) == (0.75, 0.0)
    with pytest.raises(TypeError):
        _ = s < s  # type: ignore[operator]
    assert kafkalog.CompactResult() == kafkalog.CompactResult(passes=[], stats=kafkalog.CleanerStats())


def test_cleaner_stats_fields_are_the_engines_one_list() -> None:
    fields = kafkalog.CleanerStats.FIELDS
    assert fields == kafkalog.CleanerStats.__match_args__
    assert fields[:2] == ("bytes_read", "bytes_written") and fields[-1] == "throttled_ms" and len(fields) == 17
    zero = kafkalog.CleanerStats()
    assert all(getattr(zero, f) == 0 for f in fields)
    assert {f for f in fields if isinstance(getattr(zero, f), float)} == {
        "buffer_utilization", "elapsed_secs", "elapsed_index_secs"
    }
    assert repr(zero) == "CleanerStats(" + ", ".join(f"{f}={getattr(zero, f)!r}" for f in fields) + ")"


def test_checkpoint_readers_return_typed_results(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text("0\n2\n0 0\n3 17\n")
    entries = checkpoints.read_leader_epoch_checkpoint(path)
    assert entries == [(0, 0), (3, 17)]
    assert [(e.epoch, e.start_offset) for e in entries] == [(0, 0), (3, 17)]
    assert all(type(e) is kafkalog.EpochEntry for e in entries)
    checkpoints.write_offset_checkpoint(tmp_path / "cp", {("a", 1): 5, ("b", 0): 7})
    assert checkpoints.read_offset_checkpoint(tmp_path / "cp") == {("a", 1): 5, ("b", 0): 7}
