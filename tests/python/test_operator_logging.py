"""What an operator reads in the ``kafkalog`` loggers, in Kafka's words, under the component
loggers users configure (``kafkalog.log``, ``kafkalog.cleaner``, ``kafkalog.manager``, ...):

- the cleaner's stats block at INFO after each clean (Kafka's ``LogCleaner`` summary), from a
  manager's ``compact_now`` and from a standalone ``UnifiedLog.compact_now``;
- recovery per log (Kafka's ``LogManager.loadLogs`` / ``LogLoader.recoverLog`` /
  ``UnifiedLog.rebuildProducerState`` lines);
- retention, with the reason for each deleted segment (Kafka's ``RetentionMsBreach``,
  ``RetentionSizeBreach`` and ``StartOffsetBreach`` ``logReason`` lines);
- a component logger's level decides for its part alone.
"""

from __future__ import annotations

import gc
import os
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalog import Record, UnifiedLog
from kit.manager import SMALL_SEGMENTS, fill, now_ms, open_manager

BROKER: dict[str, Any] = {"log.cleaner.dedupe.buffer.size": 2 * 1024 * 1024, "log.cleaner.io.buffer.size": 65536}
COMPACTED: dict[str, Any] = {"cleanup.policy": "compact", "internal.segment.bytes": 400, "min.cleanable.dirty.ratio": 0.01}
NO_SCHEDULED_TASKS = {"log.initial.task.delay.ms": 10**12}
COMPONENTS = ("kafkalog", "kafkalog.log", "kafkalog.cleaner", "kafkalog.manager", "kafkalog.segment")


@pytest.fixture(autouse=True)
def restore_levels() -> Iterator[None]:
    saved = {name: logging.getLogger(name).level for name in COMPONENTS}
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


def infos(caplog: pytest.LogCaptureFixture, needle: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if needle in r.getMessage() and r.levelno == logging.INFO]


def one_info(caplog: pytest.LogCaptureFixture, needle: str) -> logging.LogRecord:
    found = infos(caplog, needle)
    assert len(found) == 1, (needle, [r.getMessage() for r in caplog.records])
    return found[0]


def dirty_compacted(log: UnifiedLog) -> None:
    for i in range(40):
        log.append([Record(b"k%d" % (i % 4), b"v%d" % i)])
    log.roll()


def check_stats_block(record: logging.LogRecord, name: str) -> None:
    """Kafka's stats block, line by line (LogCleaner.recordStats)."""
    lines = record.getMessage().split("\n")
    assert re.fullmatch(rf"\tLog cleaner thread 0 cleaned log {name} \(dirty section = \[0, \d+\]\)", lines[1]), lines
    assert re.fullmatch(r"\t[\d,.]+ MB of log processed in [\d,.]+ seconds \([\d,.]+ MB/sec\)\.", lines[2]), lines
    assert lines[3].startswith("\tIndexed ") and lines[4].startswith("\tBuffer utilization: "), lines
    assert lines[5].startswith("\tCleaned ") and lines[6].startswith("\tStart size: "), lines
    assert re.fullmatch(r"\tEnd size: [\d,.]+ MB \(\d+ messages\)", lines[7]), lines
    assert re.fullmatch(r"\t[\d.]+% size reduction \([\d.]+% fewer messages\)", lines[8]), lines
    assert record.name.startswith("kafkalog.cleaner.")


def test_a_managed_compact_now_logs_the_stats_block(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """LogCleaner.recordStats: the summary at INFO, under kafkalog.cleaner, before the call returns."""
    caplog.set_level(logging.INFO, logger="kafkalog")
    with open_manager(tmp_path / "d", BROKER) as m:
        dirty_compacted(m.create_log("c", 0, COMPACTED))
        result = m.compact_now("c", 0)
        summaries = infos(caplog, "Log cleaner thread")
    assert len(summaries) == len(result.passes) >= 1
    check_stats_block(summaries[0], "c-0")
    assert "(40 messages)" in summaries[0].getMessage(), "Start size counts every record read"


def test_a_standalone_compact_now_logs_the_stats_block(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kafkalog")
    with UnifiedLog.open(tmp_path / "s-0", COMPACTED) as log:
        dirty_compacted(log)
        result = log.compact_now()
    summaries = infos(caplog, "Log cleaner thread")
    assert len(summaries) == len(result.passes) >= 1
    check_stats_block(summaries[0], "s-0")
    assert f"({result.stats.messages_written} messages)" in summaries[-1].getMessage()


def test_the_cleaner_logger_alone_can_be_set_to_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Component loggers: kafkalog at WARNING and kafkalog.cleaner at INFO gives the stats block
    and none of the log's or manager's INFO lines."""
    caplog.set_level(logging.INFO, logger="kafkalog.cleaner")
    logging.getLogger("kafkalog").setLevel(logging.WARNING)
    with open_manager(tmp_path / "d", BROKER) as m:
        dirty_compacted(m.create_log("c", 0, COMPACTED))
        m.compact_now("c", 0)
    names = {r.name.split(".")[1] for r in caplog.records if r.levelno == logging.INFO}
    assert names == {"cleaner"}, [(r.name, r.getMessage()) for r in caplog.records]
    assert infos(caplog, "Log cleaner thread 0 cleaned log c-0")


def test_recovery_is_logged_per_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """LogManager.loadLogs, LogLoader.recoverLog, UnifiedLog.rebuildProducerState: a dir left
    without a clean-shutdown marker says so, each unflushed segment is named with the count
    done, and each log's load ends with its segments and offsets and the dir's count."""
    d = tmp_path / "d"
    m = open_manager(d, {"log.flush.interval.messages": 10**9})
    log = m.create_log("t", 0, {"internal.segment.bytes": 300})
    for i in range(12):
        log.append([Record(b"k%d" % i, b"v" * 50)])
    part = Path(log.path)
    segments = len(log.segments)
    assert segments >= 3
    del m, log  # a crash: no clean shutdown marker
    gc.collect()
    (d / "recovery-point-offset-checkpoint").unlink(missing_ok=True)
    caplog.set_level(logging.INFO, logger="kafkalog")
    with open_manager(d) as m:
        assert m.get_log("t", 0).log_end_offset == 12
    start = one_info(caplog, f"Recovering 1 logs from {d} since no clean shutdown file was found")
    assert start.name.startswith("kafkalog.manager.")
    for n in range(segments):
        line = infos(caplog, f"{n}/{segments} segments recovered for {part}.")
        assert len(line) == 1 and line[0].getMessage().startswith("Recovering unflushed segment ")
        assert line[0].name.startswith("kafkalog.log.")
    assert infos(caplog, "[UnifiedLog partition=t-0] Loading producer state till offset ")
    done = one_info(caplog, f"Completed load of log {part} with {segments} segments")
    assert f"local-log-start-offset 0 and log-end-offset 12 in " in done.getMessage()
    assert done.getMessage().endswith(f"(1/1 completed in {d})")
    assert done.name.startswith("kafkalog.manager.")
    assert re.fullmatch(rf"Loaded 1 logs in \d+ms \(unclean log dirs = \[{re.escape(str(d))}\]\)", infos(caplog, "Loaded 1 logs")[0].getMessage())


def test_a_clean_start_skips_recovery(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "d"
    with open_manager(d) as m:
        m.create_log("t", 0).append([(b"k", b"v")])
    caplog.set_level(logging.INFO, logger="kafkalog")
    with open_manager(d):
        pass
    one_info(caplog, f"Skipping recovery of 1 logs from {d} since clean shutdown file was found")
    assert not infos(caplog, "Recovering unflushed segment")
    assert re.fullmatch(r"Loaded 1 logs in \d+ms", infos(caplog, "Loaded 1 logs")[0].getMessage())


SEGMENT = r"LogSegment\(baseOffset=(\d+), size=(\d+), lastModifiedTime=\d+, largestRecordTimestamp=(-?\d+)\) (\S+)"


def test_retention_names_the_reason_for_each_segment(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's SegmentDeletionReason.logReason lines, per reason, under kafkalog.log, each
    naming the segment as LogSegment.toString does (with its file)."""
    caplog.set_level(logging.INFO, logger="kafkalog")
    t0 = now_ms()
    with open_manager(tmp_path / "d", NO_SCHEDULED_TASKS, time_ms=t0) as m:
        aged = m.create_log("aged", 0, {**SMALL_SEGMENTS, "retention.ms": 1000})
        sized = m.create_log("sized", 0, {**SMALL_SEGMENTS, "retention.bytes": 2000})
        started = m.create_log("started", 0, SMALL_SEGMENTS)
        for log in (aged, sized, started):
            fill(log, 20, timestamp=t0)
        size_before = sized.size_in_bytes
        boundary = started.segments[2].base_offset
        started.delete_records(boundary)
        m.advance_time(1001)
        results = m.run_retention()

    by_time = [r for r in infos(caplog, "due to log retention time 1000ms breach") if "aged-0" in r.getMessage()]
    assert len(by_time) == len(results[("aged", 0)].deleted) > 0
    for record, deleted in zip(by_time, results[("aged", 0)].deleted):
        message = record.getMessage()
        assert message.endswith("breach based on the largest record timestamp in the segment")
        found = re.search(SEGMENT, message)
        assert found and int(found[1]) == deleted.base_offset and int(found[2]) == deleted.size
        assert int(found[3]) == t0 and found[4].endswith(f"aged-0/{deleted.base_offset:020d}.log")
        assert record.name == "kafkalog.log.unified_log.retention"

    by_size = [r for r in infos(caplog, "due to log retention size 2000 breach") if "sized-0" in r.getMessage()]
    assert len(by_size) == len(results[("sized", 0)].deleted) > 0
    remaining = size_before
    for record, deleted in zip(by_size, results[("sized", 0)].deleted):
        remaining -= deleted.size
        assert record.getMessage().endswith(f"Log size after deletion will be {remaining}.")

    by_start = one_info(caplog, f"Deleting segments due to log start offset {boundary} breach: ")
    listed = re.findall(SEGMENT, by_start.getMessage())
    assert [int(s[0]) for s in listed] == [d.base_offset for d in results[("started", 0)].deleted]
    assert "[UnifiedLog partition=started-0, dir=" in by_start.getMessage()
    moved = one_info(caplog, f"[UnifiedLog partition=aged-0, dir={tmp_path / 'd' / 'aged-0'}] Incremented log start offset to 20 due to segment deletion")
    assert moved.name.startswith("kafkalog.log.")


def test_retention_by_modification_time_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A segment whose records carry future timestamps, judged by its file's modification time
    (cap_future_timestamps), is logged with Kafka's "last modified time" basis."""
    caplog.set_level(logging.INFO, logger="kafkalog")
    with UnifiedLog.open(tmp_path / "f-0", {**SMALL_SEGMENTS, "retention.ms": 3_600_000}) as log:
        fill(log, 20, timestamp=now_ms() + 1_000_000)
        log.set_high_watermark(log.log_end_offset)
        old = Path(log.path) / "00000000000000000000.log"
        os.utime(old, (0, 0))
        result = log.delete_old_segments(cap_future_timestamps=True)
    assert [d.base_offset for d in result.deleted] == [0]
    line = one_info(caplog, "Deleting segment LogSegment(baseOffset=0,")
    assert line.getMessage().endswith("due to log retention time 3600000ms breach based on the last modified time of the segment")


def test_a_corrupt_producer_snapshot_is_a_warning_naming_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """ProducerStateManager.loadFromSnapshot: a snapshot that fails its CRC is deleted with
    Kafka's warning naming it, under kafkalog.log, and the state is rebuilt from the log."""
    caplog.set_level(logging.WARNING, logger="kafkalog")
    d = tmp_path / "d"
    with open_manager(d) as m:
        fill(m.create_log("p", 0), 5)
    part = d / "p-0"
    snapshots = sorted(part.glob("*.snapshot"))
    assert snapshots, list(part.iterdir())
    damaged = snapshots[-1]
    data = bytearray(damaged.read_bytes())
    data[-1] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with open_manager(d) as m:  # a clean shutdown: the state is loaded from the snapshot
        log = m.get_log("p", 0)
        assert log is not None and log.log_end_offset == 5
    found = [r for r in caplog.records if f"Failed to load producer snapshot from '{damaged}'" in r.getMessage()]
    assert len(found) == 1 and found[0].levelno == logging.WARNING, [r.getMessage() for r in caplog.records]
    assert found[0].name.startswith("kafkalog.log.")
