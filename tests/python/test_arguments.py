"""Hostile arguments (issue 12, sections 3 and 4), tried as a careless caller would: each is
refused with a ``kafkalog.exceptions`` type that is also a ValueError or TypeError (so both
styles of ``except`` work), whose message names the argument and what it accepts; nothing on
disk changes; a LogManager's log dir stays online and later calls work.

Every case runs in-process (test_argument_case) and, all of them together, in a child
interpreter (test_every_case_in_a_child_process), where a panic that aborts or a segfault shows
as an exit code and the last "run <case>" line names the case.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kafkalog
from kafkalog import LogManager, Record, UnifiedLog
from kafkalog.checkpoints import read_offset_checkpoint, write_offset_checkpoint
from kafkalog.exceptions import (
    AllLogDirsOfflineError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidConfigError,
    InvalidTopicError,
    KafkaLogError,
    KafkaLogIOError,
    OffsetOutOfRangeError,
    UnsupportedIsolationError,
)

I32_MAX = 2**31 - 1
I64_MAX = 2**63 - 1
OFFSETS = "[0, 9223372036854775807]"
T0 = 1_700_000_000_000

Snapshot = Callable[[Path], dict[str, tuple[int, int, str]]]
Case = Callable[[Path, Snapshot], None]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__.removeprefix("case_")] = fn
    return fn


def refused(call: Callable[[], Any], kind: type[BaseException], builtin: type[BaseException], *words: str) -> BaseException:
    """``call()`` raises ``kind`` (a KafkaLogError), which is also a ``builtin``, and its message
    holds every one of ``words`` (the argument's name, the value, what it accepts)."""
    try:
        call()
    except BaseException as e:  # noqa: BLE001 - the type is the point
        assert isinstance(e, kind), f"expected {kind.__name__}, got {type(e).__name__}: {e}"
        assert isinstance(e, KafkaLogError) and isinstance(e, builtin), type(e).__mro__
        for word in words:
            assert word in str(e), f"{word!r} is not in the message: {e}"
        return e
    raise AssertionError(f"nothing raised; expected {kind.__name__}")


def invalid(call: Callable[[], Any], *words: str) -> BaseException:
    return refused(call, InvalidArgumentError, ValueError, *words)


def wrong_type(call: Callable[[], Any], *words: str) -> BaseException:
    return refused(call, InvalidArgumentTypeError, TypeError, *words)


def filled(path: Path, config: dict[str, str] | None = None) -> UnifiedLog:
    """A log of three segments, offsets 0..8, keyed records, flushed."""
    log = UnifiedLog.open(path, config)
    for seg in range(3):
        log.append([Record(b"k%d" % (i % 2), b"v%d" % (seg * 3 + i), timestamp=T0 + seg * 3 + i) for i in range(3)])
        if seg < 2:
            log.roll()
    log.flush()
    return log


def offsets_of(log: UnifiedLog) -> tuple[int, int, int, int]:
    return log.log_start_offset, log.high_watermark, log.log_end_offset, log.recovery_point


def unchanged(log: UnifiedLog, snap: Snapshot, calls: list[Callable[[], BaseException]]) -> None:
    """Every refused call in ``calls`` leaves the log's files and offsets as they were."""
    before, files = offsets_of(log), snap(Path(log.path))
    for call in calls:
        call()
        assert offsets_of(log) == before, f"offsets moved: {offsets_of(log)} != {before}"
        assert snap(Path(log.path)) == files, "a refused call changed the partition directory"


def still_works(log: UnifiedLog, path: Path) -> None:
    """The next record gets the next offset, and everything survives a reopen."""
    end = log.log_end_offset
    assert log.append([(b"k", b"after")]).first_offset == end
    log.close()
    with UnifiedLog.open(path) as again:
        assert [r.offset for r in again.records()] == list(range(end + 1))


# -- offsets ------------------------------------------------------------------------------------


@case
def case_truncate_fully_and_start_at_negative(tmp: Path, snap: Snapshot) -> None:
    # The defect: -1 was accepted, the log became start = end = -1, the next append was written
    # to -0000000000000000001.log, and after a reopen that record was gone.
    path = tmp / "orders-0"
    log = filled(path)
    unchanged(
        log,
        snap,
        [
            lambda: invalid(lambda: log.truncate_fully_and_start_at(-1), "offset", "-1", "orders-0", OFFSETS),
            lambda: invalid(lambda: log.truncate_fully_and_start_at(-(2**63)), "offset", OFFSETS),
            lambda: invalid(lambda: log.truncate_fully_and_start_at(2**63), "offset", "9223372036854775808", OFFSETS),
            lambda: wrong_type(lambda: log.truncate_fully_and_start_at("0"), "offset", "str"),  # type: ignore[arg-type]
        ],
    )
    assert not any(p.name.startswith("-") for p in path.iterdir())
    still_works(log, path)


@case
def case_truncate_to_negative(tmp: Path, snap: Snapshot) -> None:
    path = tmp / "orders-0"
    log = filled(path)
    unchanged(
        log,
        snap,
        [
            # Kafka's truncateTo: "Cannot truncate partition ... to a negative offset".
            lambda: invalid(lambda: log.truncate_to(-1), "offset", "-1", "negative", OFFSETS),
            lambda: invalid(lambda: log.truncate_to(-(2**63) - 1), "offset", OFFSETS),
            lambda: wrong_type(lambda: log.truncate_to(1.5), "offset", "float"),  # type: ignore[arg-type]
        ],
    )
    still_works(log, path)


@case
def case_delete_records_out_of_range(tmp: Path, snap: Snapshot) -> None:
    path = tmp / "orders-0"
    log = filled(path)
    log.set_high_watermark(6)
    unchanged(
        log,
        snap,
        [
            # Kafka's DeleteRecords: OffsetOutOfRange for a negative offset or one past the HW.
            lambda: refused(lambda: log.delete_records(-1), OffsetOutOfRangeError, ValueError, "-1", "[0, 6]"),
            lambda: refused(lambda: log.delete_records(7), OffsetOutOfRangeError, ValueError, "7", "[0, 6]"),
            lambda: invalid(lambda: log.delete_records(2**63), "offset", OFFSETS),
        ],
    )
    assert log.delete_records(6) == 6
    log.close()


@case
def case_set_high_watermark_negative(tmp: Path, snap: Snapshot) -> None:
    path = tmp / "orders-0"
    log = filled(path)
    unchanged(
        log,
        snap,
        [
            lambda: invalid(lambda: log.set_high_watermark(-1), "offset", "-1", "high watermark", OFFSETS),
            lambda: invalid(lambda: log.set_high_watermark(2**63), "offset", OFFSETS),
        ],
    )
    assert log.set_high_watermark(100) == 9, "past the log end it is clamped, as Kafka's follower path does"
    log.close()


@case
def case_read_offsets(tmp: Path, snap: Snapshot) -> None:
    log = filled(tmp / "orders-0")
    invalid(lambda: log.read(2**63), "offset", "9223372036854775808", OFFSETS)
    invalid(lambda: log.read(-(2**63) - 1), "offset", OFFSETS)
    refused(lambda: log.read(-1), OffsetOutOfRangeError, ValueError, "offset -1", "[0, 9]")
    refused(lambda: log.read(10), OffsetOutOfRangeError, ValueError, "offset 10", "[0, 9]")
    invalid(lambda: log.read(0, -1), "max_bytes", "-1", f"[0, {I64_MAX}]")
    invalid(lambda: log.read(0, 2**64), "max_bytes", f"[0, {I64_MAX}]")
    wrong_type(lambda: log.read("0"), "offset", "str")  # type: ignore[arg-type]
    wrong_type(lambda: log.read(True), "offset", "bool")
    assert [r.offset for r in log.read(0).records] == [0, 1, 2]
    log.close()


@case
def case_range_reads(tmp: Path, snap: Snapshot) -> None:
    log = filled(tmp / "orders-0")
    # Refused when called, before iterating: these are plain functions returning iterators.
    for name, call in {
        "records": log.records,
        "iter_arrow": log.iter_arrow,
        "to_arrow": log.to_arrow,
    }.items():
        invalid(lambda: call(-1), "start", "-1", OFFSETS)
        invalid(lambda: call(0, -1), "end", "-1", OFFSETS)
        invalid(lambda: call(2**63), "start", OFFSETS)
        wrong_type(lambda: call("0"), "start", "str")
        assert name
    invalid(lambda: log.iter_arrow(max_chunk_bytes=0), "max_chunk_bytes", f"[1, {I64_MAX}]")
    # The range is cut to what the log holds.
    assert [r.offset for r in log.records(5, 100)] == [5, 6, 7, 8]
    assert list(log.records(100)) == [] and log.to_arrow(7, 3).num_rows == 0
    log.close()


@case
def case_isolation(tmp: Path, snap: Snapshot) -> None:
    log = filled(tmp / "orders-0")
    calls: dict[str, Callable[[str], Any]] = {
        "read": lambda iso: log.read(0, isolation=iso),
        "records": lambda iso: log.records(isolation=iso),
        "records-empty-range": lambda iso: log.records(100, isolation=iso),
        "iter_arrow": lambda iso: log.iter_arrow(isolation=iso),
        "to_arrow": lambda iso: log.to_arrow(isolation=iso),
    }
    for name, call in calls.items():
        # Every isolation is served: read_committed is accepted (no transactions here, so it
        # reads what read_uncommitted reads).
        for iso in ("read_committed", "read_uncommitted", "log_end"):
            assert call(iso) is not None, name
        invalid(lambda: call("bogus"), "isolation", '"bogus"', "'read_uncommitted'", "'log_end'")
        wrong_type(lambda: call(None), "isolation", "'read_uncommitted'", "NoneType")
    log.close()


@case
def case_offset_for_timestamp(tmp: Path, snap: Snapshot) -> None:
    log = filled(tmp / "orders-0")
    accepted = "[0, 9223372036854775807] (ms), or -2 (earliest), -1 (latest) or -3 (max timestamp)"
    invalid(lambda: log.offset_for_timestamp(2**63), "timestamp", "9223372036854775808", accepted)
    invalid(lambda: log.offset_for_timestamp(-4), "timestamp", "-4", accepted)
    invalid(lambda: log.offset_for_timestamp(-(2**63)), "timestamp", accepted)
    wrong_type(lambda: log.offset_for_timestamp("now"), "timestamp", "str")  # type: ignore[arg-type]
    assert log.offset_for_timestamp(T0 + 4).offset == 4  # type: ignore[union-attr]
    assert log.offset_for_timestamp(-2).offset == 0  # type: ignore[union-attr]
    log.close()


# -- appends ------------------------------------------------------------------------------------


@case
def case_append_arguments(tmp: Path, snap: Snapshot) -> None:
    path = tmp / "orders-0"
    log = filled(path)
    ts = "must be a timestamp in [0, 9223372036854775807] (ms since the epoch)"
    good = (b"k", b"v")
    unchanged(
        log,
        snap,
        [
            lambda: invalid(lambda: log.append([Record(b"k", b"v", timestamp=2**63)]), "records[0].timestamp", ts),
            lambda: invalid(lambda: log.append([good, Record(b"k", b"v", timestamp=-5)]), "records[1].timestamp", "-5", ts),
            lambda: wrong_type(lambda: log.append([Record(b"k", b"v", timestamp="now")]), "records[0].timestamp", "str"),  # type: ignore[arg-type]
            lambda: invalid(lambda: log.append([good], batch_size=-1), "batch_size", "-1", f"[0, {I32_MAX}]"),
            lambda: invalid(lambda: log.append([good], batch_size=2**31), "batch_size", f"[0, {I32_MAX}]"),
            lambda: invalid(lambda: log.append([good], compression="brotli"), "compression", '"brotli"', "none, gzip, snappy, lz4, zstd"),
            lambda: wrong_type(lambda: log.append([good], compression=None), "compression", "'zstd'", "NoneType"),  # type: ignore[arg-type]
            lambda: invalid(lambda: log.append([good], leader_epoch=-2), "leader_epoch", "-2", f"[-1, {I32_MAX}]"),
            lambda: invalid(lambda: log.append([good], leader_epoch=2**31), "leader_epoch", f"[-1, {I32_MAX}]"),
            lambda: invalid(lambda: log.append_batch(b"", leader_epoch=2**31), "leader_epoch", f"[-1, {I32_MAX}]"),
            lambda: wrong_type(lambda: log.append([Record(b"k", b"v", headers=((b"h", b"x"),))]), "records[0].headers[0] key", "str", "bytes"),  # type: ignore[arg-type]
            lambda: wrong_type(lambda: log.append([Record(b"k", b"v", headers=(("h", 5),))]), "records[0].headers[0] value", "int"),  # type: ignore[arg-type]
            lambda: wrong_type(lambda: log.append([Record(b"k", b"v", headers=("hx",))]), "records[0].headers[0]", "pair"),  # type: ignore[arg-type]
            lambda: wrong_type(lambda: log.append([good, (5, b"v")]), "records[1].key", "int"),
            lambda: wrong_type(lambda: log.append([good, b"kv"]), "records[1]", "Record"),  # type: ignore[list-item]
        ],
    )
    still_works(log, path)


@case
def case_flags_bytes_and_configs_of_the_wrong_type(tmp: Path, snap: Snapshot) -> None:
    path = tmp / "orders-0"
    wrong_type(lambda: UnifiedLog.open(path, [("segment.bytes", "1048576")]), "config", "mapping", "list")  # type: ignore[arg-type]
    wrong_type(lambda: UnifiedLog.open(path, read_only="yes"), "read_only", "True or False")  # type: ignore[arg-type]
    assert not path.exists()
    log = filled(path)
    unchanged(
        log,
        snap,
        [
            lambda: wrong_type(lambda: log.append_batch("batch"), "raw", "bytes", "str"),  # type: ignore[arg-type]
            lambda: wrong_type(lambda: log.append_batch(5), "raw", "bytes", "int"),  # type: ignore[arg-type]
            lambda: wrong_type(lambda: log.append_as_follower(None), "raw", "bytes"),  # type: ignore[arg-type]
            lambda: wrong_type(lambda: log.read(0, min_one_message=1), "min_one_message", "True or False"),  # type: ignore[arg-type]
            lambda: wrong_type(lambda: log.to_arrow(use_threads=None), "use_threads", "True or False"),  # type: ignore[arg-type]
            lambda: wrong_type(lambda: log.delete_old_segments(cap_future_timestamps=1), "cap_future_timestamps"),  # type: ignore[arg-type]
            lambda: wrong_type(lambda: log.assign_topic_id(5), "topic_id", "int"),  # type: ignore[arg-type]
            lambda: invalid(lambda: log.assign_topic_id("AAAAAAAAAAAAAAAAAAAAAA"), "topic_id", "22-character", "zero"),
        ],
    )
    log.close()
    d = tmp / "d"
    wrong_type(lambda: LogManager([d], ["log.retention.hours"], scheduler=False), "config", "mapping")  # type: ignore[arg-type]
    wrong_type(lambda: LogManager([d], topic_configs=[("t", {})], scheduler=False), "topic_configs", "mapping")  # type: ignore[arg-type]
    wrong_type(lambda: LogManager([d], topic_configs={"t": "compact"}, scheduler=False), "topic_configs['t']", "mapping")  # type: ignore[dict-item]
    wrong_type(lambda: LogManager([d], scheduler="no"), "scheduler", "True or False")  # type: ignore[arg-type]
    wrong_type(lambda: LogManager([d], scheduler=False, on_progress="print"), "on_progress", "callable")  # type: ignore[arg-type]
    assert not d.exists()
    with LogManager([d], scheduler=False, time_ms=T0) as m:
        wrong_type(lambda: m.cordon_log_dir(d, cordoned="yes"), "cordoned", "True or False")  # type: ignore[arg-type]
        wrong_type(lambda: m.run_retention(cap_future_timestamps=0), "cap_future_timestamps")  # type: ignore[arg-type]
        wrong_type(lambda: m.reconfigure_cleaner([("log.cleaner.threads", "2")]), "config", "mapping")  # type: ignore[arg-type]
        assert [x.cordoned for x in m.log_dirs()] == [False]


# -- compaction ---------------------------------------------------------------------------------


@case
def case_compact_now_of_a_delete_policy_log(tmp: Path, snap: Snapshot) -> None:
    # The defect: 640 records became 100 and keyless records were dropped as invalid, while
    # LogManager.compact_now refused the same with InvalidConfigError.
    path = tmp / "orders-0"
    log = filled(path, {"cleanup.policy": "delete"})
    log.append([(None, b"keyless"), (b"k0", b"x")])
    log.roll()
    unchanged(
        log,
        snap,
        [
            lambda: refused(
                lambda: log.compact_now(time_ms=T0),
                InvalidConfigError,
                ValueError,
                "cleanup.policy",
                '"delete"',
                "orders-0 is not compacted",
                "ignore_cleanup_policy=True",
            ),
            lambda: wrong_type(lambda: log.compact_now(ignore_cleanup_policy="yes"), "ignore_cleanup_policy"),  # type: ignore[arg-type]
        ],
    )
    assert log.config["cleanup.policy"] == "delete"
    # Asked explicitly, it compacts: the latest record of each key stays, the keyless one goes.
    result = log.compact_now(time_ms=T0, ignore_cleanup_policy=True)
    assert result.stats.messages_read == 11
    assert sorted((r.key, r.value) for r in log.records()) == [(b"k0", b"x"), (b"k1", b"v7")]
    log.close()


@case
def case_compact_now_arguments(tmp: Path, snap: Snapshot) -> None:
    log = filled(tmp / "orders-0", {"cleanup.policy": "compact"})
    log.roll()
    unchanged(
        log,
        snap,
        [
            lambda: invalid(lambda: log.compact_now(first_dirty_offset=-1), "first_dirty_offset", "-1", "[0, 9]"),
            lambda: invalid(lambda: log.compact_now(first_dirty_offset=10), "first_dirty_offset", "10", "[0, 9]"),
            lambda: invalid(lambda: log.compact_now(first_dirty_offset=2**63), "first_dirty_offset", OFFSETS),
            lambda: invalid(lambda: log.compact_now(dedupe_buffer_size=0), "dedupe_buffer_size", f"[1, {I64_MAX}]"),
            lambda: invalid(lambda: log.compact_now(dedupe_buffer_size=2**63), "dedupe_buffer_size", f"[1, {I64_MAX}]"),
            lambda: invalid(lambda: log.compact_now(io_buffer_size=1), "io_buffer_size", f"[2, {I32_MAX}]"),
            lambda: refused(lambda: log.compact_now(load_factor=1.5), InvalidConfigError, ValueError, "load.factor", "(0, 1]"),
            lambda: invalid(lambda: log.compact_now(load_factor=2**2000), "load_factor", "too large"),
            lambda: wrong_type(lambda: log.compact_now(load_factor="0.9"), "load_factor", "number"),  # type: ignore[arg-type]
            lambda: invalid(lambda: log.compact_now(time_ms=-1), "time_ms", f"[0, {I64_MAX}]"),
        ],
    )
    assert log.compact_now(time_ms=T0, first_dirty_offset=0).end_offset == 9
    log.close()


# -- constructors and paths ---------------------------------------------------------------------


@case
def case_unified_log_constructor(tmp: Path, snap: Snapshot) -> None:
    # help(UnifiedLog) shows UnifiedLog(native); it used to fail in __repr__ with AttributeError.
    wrong_type(lambda: UnifiedLog("data/orders-0"), "UnifiedLog.open(path)", "str")  # type: ignore[arg-type]
    wrong_type(lambda: UnifiedLog(None), "UnifiedLog.open(path)")  # type: ignore[arg-type]
    assert not (tmp / "data").exists()


@case
def case_open_a_regular_file(tmp: Path, snap: Snapshot) -> None:
    script = tmp / "s1.py"
    script.write_text("print('hello')\n")
    for read_only in (False, True):
        e = refused(lambda: UnifiedLog.open(script, read_only=read_only), KafkaLogIOError, OSError, "is a regular file, not a partition directory")
        assert isinstance(e, OSError) and e.errno == errno.ENOTDIR and e.filename == os.fspath(script)
        assert "found directory" not in str(e)
    assert script.read_text() == "print('hello')\n"
    # A file named like a partition directory, too.
    named = tmp / "orders-0"
    named.write_text("x")
    refused(lambda: UnifiedLog.open(named), KafkaLogIOError, OSError, "regular file")
    assert named.read_text() == "x"


@case
def case_open_missing_or_misnamed(tmp: Path, snap: Snapshot) -> None:
    missing = tmp / "orders-0"
    e = refused(lambda: UnifiedLog.open(missing, read_only=True), KafkaLogIOError, OSError, "no such partition directory")
    assert isinstance(e, OSError) and e.errno == errno.ENOENT and not missing.exists()
    for name in ("orders", "orders-x", "-1", "orders-+1", "orders-2147483648"):
        for read_only in (False, True):
            invalid(lambda: UnifiedLog.open(tmp / name, read_only=read_only), "path", name, "<topic>-<partition>")
            assert not (tmp / name).exists(), name
    (tmp / "lost+found").mkdir()
    invalid(lambda: UnifiedLog.open(tmp / "lost+found"), "path", "expected <topic>-<partition>")
    wrong_type(lambda: UnifiedLog.open(5), "path", "int")  # type: ignore[arg-type]
    # A name no file system takes: the caller's error, and nothing is created.
    long = tmp / "sub" / ("t" * 300 + "-0")
    refused(lambda: UnifiedLog.open(long), InvalidTopicError, ValueError, "302 bytes long", "255", "the topic alone is 300 bytes")
    assert not (tmp / "sub").exists()


@case
def case_log_manager_on_a_regular_file(tmp: Path, snap: Snapshot) -> None:
    blocker = tmp / "d.txt"
    blocker.write_text("not a dir")
    e = refused(lambda: LogManager([blocker], scheduler=False), AllLogDirsOfflineError, Exception, "it is a regular file, not a directory")
    assert os.fspath(blocker) in str(e)
    assert blocker.read_text() == "not a dir"
    wrong_type(lambda: LogManager(5, scheduler=False), "dirs", "int")  # type: ignore[arg-type]
    invalid(lambda: LogManager([tmp / "d"], scheduler=False, time_ms=-1), "time_ms", f"[0, {I64_MAX}]")
    assert not (tmp / "d").exists()


# -- LogManager ---------------------------------------------------------------------------------


def at_t0(value: bytes) -> Record:
    """A record timestamped at the manager's manual clock (Kafka refuses records an hour ahead)."""
    return Record(b"k", value, timestamp=T0)


def manager(tmp: Path) -> LogManager:
    return LogManager([tmp / "d1"], scheduler=False, time_ms=T0)


def online_and_working(m: LogManager, tmp: Path) -> None:
    """The dir is online, and creating, appending and listing work."""
    dirs = m.log_dirs()
    assert [d.online for d in dirs] == [True] and m.offline_log_dirs == {}, dirs
    log = m.create_log("after", 0)
    assert log.append([at_t0(b"v")]).first_offset == 0
    assert ("after", 0) in {(lg.topic, lg.partition) for lg in m.logs()}


@case
def case_create_log_with_a_name_too_long_for_the_file_system(tmp: Path, snap: Snapshot) -> None:
    # The defect: ENAMETOOLONG took the only log dir offline; every later call then failed
    # with AllLogDirsOfflineError.
    m = manager(tmp)
    m.create_log("t", 0).append([at_t0(b"v")])
    m.flush()
    before = snap(tmp / "d1")
    longest = "a" * 249
    e = refused(lambda: m.create_log(longest, I32_MAX), InvalidTopicError, ValueError, f"{longest}-{I32_MAX}", "260 bytes long", "255 bytes")
    assert "at most 5 digits" in str(e)
    refused(lambda: m.create_log(longest, 100_000), InvalidTopicError, ValueError, "256 bytes long")
    refused(lambda: m.create_log("a" * 250, 0), InvalidTopicError, ValueError, "max allowed length 249")
    assert snap(tmp / "d1") == before
    online_and_working(m, tmp)
    # Kafka's longest topic still fits beside a 5-digit partition, and can be deleted.
    m.create_log(longest, 99_999).append([at_t0(b"v")])
    assert len(Path(m.delete_log(longest, 99_999)).name) <= 255
    m.close()


@case
def case_log_manager_partition_numbers(tmp: Path, snap: Snapshot) -> None:
    m = manager(tmp)
    m.create_log("t", 0)
    before = snap(tmp / "d1")
    partitions = f"[0, {I32_MAX}]"
    invalid(lambda: m.create_log("t", 2**31), "partition", "2147483648", partitions)
    invalid(lambda: m.create_log("t", -1), "partition", "-1", "negative", partitions)
    wrong_type(lambda: m.create_log("t", "0"), "partition", "str")  # type: ignore[arg-type]
    wrong_type(lambda: m.create_log(b"t", 0), "topic", "bytes")  # type: ignore[arg-type]
    refused(lambda: m.create_log("bad topic", 0), InvalidTopicError, ValueError, "'bad topic'")
    invalid(lambda: m.create_log("t", 1, topic_id="nope"), "topic_id", '"nope"', "22-character")
    invalid(lambda: m.get_log("t", 2**31), "partition", partitions)
    invalid(lambda: m.delete_log("t", -1), "partition", partitions)
    invalid(lambda: m.compact_now("t", 2**40), "partition", partitions)
    invalid(lambda: m.cleaner_status("t", -1), "partition", partitions)
    invalid(lambda: m.retry_uncleanable("t", 2**31), "partition", partitions)
    refused(lambda: m.update_topic_config("bad topic", {}), InvalidTopicError, ValueError, "'bad topic'")
    invalid(lambda: m.advance_time(-1), "ms", "-1", "never goes back")
    invalid(lambda: m.close(broker_epoch=-2), "broker_epoch", f"[-1, {I64_MAX}]")
    assert snap(tmp / "d1") == before
    assert m.time_ms == T0
    online_and_working(m, tmp)
    m.close()


@case
def case_managed_log_offsets_take_nothing_offline(tmp: Path, snap: Snapshot) -> None:
    m = manager(tmp)
    log = m.create_log("t", 0)
    log.append([at_t0(b"v")] * 3)
    m.flush()
    unchanged(
        log,
        snap,
        [
            lambda: invalid(lambda: log.truncate_fully_and_start_at(-1), "offset", OFFSETS),
            lambda: invalid(lambda: log.truncate_to(-1), "offset", OFFSETS),
            lambda: refused(lambda: log.delete_records(-1), OffsetOutOfRangeError, ValueError, "-1"),
            lambda: invalid(lambda: log.read(2**63), "offset", OFFSETS),
        ],
    )
    online_and_working(m, tmp)
    m.close()


# -- checkpoints --------------------------------------------------------------------------------


@case
def case_write_offset_checkpoint(tmp: Path, snap: Snapshot) -> None:
    path = tmp / "recovery-point-offset-checkpoint"
    invalid(lambda: write_offset_checkpoint(path, {("t", 2**31): 0}), "partition of t", f"[0, {I32_MAX}]")
    invalid(lambda: write_offset_checkpoint(path, {("t", -1): 0}), "partition of t", f"[0, {I32_MAX}]")
    invalid(lambda: write_offset_checkpoint(path, {("t", 0): -1}), "offset of ('t', 0)", OFFSETS)
    invalid(lambda: write_offset_checkpoint(path, {("t", 0): 2**63}), "offset of ('t', 0)", OFFSETS)
    # A space would make the file unreadable (its fields are separated by spaces).
    refused(lambda: write_offset_checkpoint(path, {("bad topic", 0): 1}), InvalidTopicError, ValueError, "'bad topic'")
    wrong_type(lambda: write_offset_checkpoint(path, {"t": 1}), "(topic, partition)")  # type: ignore[dict-item]
    wrong_type(lambda: write_offset_checkpoint(path, [("t", 0, 1)]), "dict")  # type: ignore[arg-type]
    assert not path.exists(), "a refused checkpoint wrote a file"
    write_offset_checkpoint(path, {("t", 0): 5, ("t", I32_MAX): I64_MAX})
    assert read_offset_checkpoint(path) == {("t", 0): 5, ("t", I32_MAX): I64_MAX}


# -- the runners --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_argument_case(name: str, tmp_path: Path, snapshot_dir: Snapshot) -> None:
    CASES[name](tmp_path, snapshot_dir)


def test_every_case_in_a_child_process(tmp_path: Path) -> None:
    """A panic that aborts, or a segfault, would take pytest down; in a child it shows as the
    exit code. Rust panics print "panicked" on stderr even when pyo3 turns them into exceptions."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", RUST_BACKTRACE="0")
    child = subprocess.run(
        [sys.executable, __file__, str(tmp_path)], capture_output=True, text=True, timeout=600, env=env
    )
    assert child.returncode == 0, f"exit {child.returncode}\n{child.stdout}\n{child.stderr}"
    assert "panicked" not in child.stderr, child.stderr
    done = [line.removeprefix("ok ") for line in child.stdout.splitlines() if line.startswith("ok ")]
    assert done == list(CASES), child.stdout


def test_the_exception_types_catch_both_ways() -> None:
    for cls, builtin in [
        (InvalidArgumentError, ValueError),
        (UnsupportedIsolationError, ValueError),
        (OffsetOutOfRangeError, ValueError),
        (InvalidTopicError, ValueError),
        (InvalidConfigError, ValueError),
        (InvalidArgumentTypeError, TypeError),
    ]:
        assert issubclass(cls, KafkaLogError) and issubclass(cls, builtin), cls
    assert issubclass(UnsupportedIsolationError, InvalidArgumentError)
    assert kafkalog.InvalidArgumentError is InvalidArgumentError


def _child_main(work: Path) -> None:
    from kit.files import dir_snapshot  # the venv's kafkalog-dev.pth puts tests/ on the path

    for name, fn in CASES.items():
        print(f"run {name}", flush=True)
        (work / name).mkdir()
        fn(work / name, dir_snapshot)
        print(f"ok {name}", flush=True)


if __name__ == "__main__":
    _child_main(Path(sys.argv[1]))
