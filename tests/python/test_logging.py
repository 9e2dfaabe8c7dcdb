"""kafkalog's Rust ``log`` events reach Python's ``logging``, under the ``kafkalog`` logger
hierarchy (the Rust module path is the logger name), and every recovery that changes or
discards data says so at WARNING, naming the file, the position and the bytes.

- what recovery logs: a ``.log`` of random bytes cut to 0, a torn tail, a corrupt index rebuilt,
  a corrupt checkpoint discarded, an interrupted clean rolled back and an interrupted replace
  completed, the segments deleted after a truncation;
- delivery: a call's own events are in the handlers when it returns; events of the cleaner
  threads arrive (and a handler may call back into kafkalog) without deadlock; the Rust-side
  level filter follows ``setLevel`` and ``logging.disable`` at run time and refuses disabled
  levels before an event is made; shutdown and ``fork()`` lose nothing and crash nothing.
"""

from __future__ import annotations

import gc
import logging
import os
import random
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalog import LogManager, Record, UnifiedLog, _native
from kit.manager import HANG_GUARD_S, native_threads, open_manager

LOG0 = "00000000000000000000.log"
#: Cleaner settings as in test_log_cleaner: a small dedupe buffer, tiny segments, any dirty
#: ratio worth a clean.
BROKER: dict[str, Any] = {"log.cleaner.dedupe.buffer.size": 2 * 1024 * 1024, "log.cleaner.io.buffer.size": 65536}
COMPACTED: dict[str, Any] = {
    "cleanup.policy": "compact",
    "internal.segment.bytes": 400,
    "min.cleanable.dirty.ratio": 0.01,
}


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Every test leaves the kafkalog loggers' levels and ``logging.disable`` as it found them."""
    manager = logging.Logger.manager
    saved = {name: logging.getLogger(name).level for name in ["kafkalog", *_our_loggers()]}
    disabled = manager.disable
    yield
    logging.disable(disabled)
    for name in _our_loggers():
        logging.getLogger(name).setLevel(saved.get(name, logging.NOTSET))
    logging.getLogger("kafkalog").setLevel(saved["kafkalog"])


def _our_loggers() -> list[str]:
    return [n for n in list(logging.Logger.manager.loggerDict) if n.startswith("kafkalog.")]


def warnings_of(caplog: pytest.LogCaptureFixture, logger: str = "kafkalog") -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(logger) and r.levelno == logging.WARNING]


def one_warning(caplog: pytest.LogCaptureFixture, *needles: str) -> logging.LogRecord:
    """The one kafkalog WARNING whose message holds every needle."""
    found = [r for r in warnings_of(caplog) if all(n in r.getMessage() for n in needles)]
    assert len(found) == 1, f"{needles} in {[r.getMessage() for r in warnings_of(caplog)]}"
    return found[0]


def write_records(path: Path, count: int, config: dict[str, Any] | None = None) -> list[int]:
    """A log of ``count`` one-record batches; returns the ``.log`` size after each batch."""
    sizes = []
    with UnifiedLog.open(path, config) as log:
        for i in range(count):
            log.append([Record(b"k%d" % i, b"value-%d" % i)])
            sizes.append(os.path.getsize(path / LOG0))
    return sizes


# -- recovery warnings ---------------------------------------------------------------------------


def test_a_log_of_random_bytes_cut_to_zero_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The issue's case: 4,096 random bytes opened writable were cut to 0 without a word, even
    with Python logging at DEBUG."""
    caplog.set_level(logging.DEBUG)
    part = tmp_path / "t-0"
    part.mkdir()
    (part / LOG0).write_bytes(random.Random(12).randbytes(4096))
    with UnifiedLog.open(part) as log:
        assert log.log_end_offset == 0
    assert (part / LOG0).stat().st_size == 0
    cut = one_warning(caplog, "Found invalid messages in log segment", str(part / LOG0))
    assert cut.name == "kafkalog.segment.log_segment"
    assert "at byte offset 0:" in cut.getMessage()
    assert "from 4096 to 0 bytes (4096 bytes discarded)" in cut.getMessage()
    assert cut.pathname.endswith("log_segment/recover.rs") and cut.lineno > 0, "the Rust file and line"
    # The missing index is not reported on its own: Kafka's LogLoader says "Could not find
    # offset index file" only for a segment below the recovery point (or after a clean
    # shutdown); this one, the active segment of a log without a recovery point, is recovered
    # as unflushed anyway.
    assert not [r for r in caplog.records if "Could not find offset index file" in r.getMessage()]


def test_a_torn_tail_names_the_position_and_bytes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalog")
    part = tmp_path / "t-0"
    sizes = write_records(part, 3)
    with open(part / LOG0, "r+b") as f:
        f.truncate(sizes[1] + 30)  # the third batch torn after 30 bytes
    with UnifiedLog.open(part) as log:
        assert log.log_end_offset == 2
    cut = one_warning(caplog, str(part / LOG0), f"at byte offset {sizes[1]}:")
    assert f"a batch of {sizes[2] - sizes[1]} bytes starts there, but only 30 bytes remain" in cut.getMessage()
    assert f"from {sizes[1] + 30} to {sizes[1]} bytes (30 bytes discarded)" in cut.getMessage()


def test_a_corrupt_index_is_rebuilt_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalog")
    part = tmp_path / "t-0"
    write_records(part, 40, {"internal.segment.bytes": 1024, "index.interval.bytes": 100})
    index = part / "00000000000000000000.index"
    assert index.stat().st_size % 8 == 0 and index.stat().st_size > 0
    with open(index, "ab") as f:
        f.write(b"\0\0\0")
    # Without the record of a clean close, the load checks every inactive segment's indexes
    # itself (after a clean one it leaves that to their first use: the test below).
    (part / "kafkalog-clean-close").unlink()
    with UnifiedLog.open(part) as log:
        assert warnings_of(caplog), "found by the load"
        assert [r.offset for r in log.records()] == list(range(40))
    rebuilt = one_warning(caplog, "Found a corrupted index file corresponding to log file", str(part / LOG0))
    assert f"due to index file {index} has a length of" in rebuilt.getMessage()
    assert "recovering segment and rebuilding index files" in rebuilt.getMessage()
    assert index.stat().st_size % 8 == 0


def test_a_corrupt_index_after_a_clean_shutdown_is_rebuilt_at_first_use(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After a clean shutdown the load leaves an inactive segment's index check to its first
    use (as Kafka's loader, which never checks it): the damage is found by the first read, and
    the index is rebuilt there with a warning naming it."""
    caplog.set_level(logging.WARNING, logger="kafkalog")
    d = tmp_path / "d"
    topic = {"internal.segment.bytes": 1024, "index.interval.bytes": 100}
    with open_manager(d, topic_configs={"t": topic}) as m:
        log = m.create_log("t", 0)
        for i in range(40):
            log.append([Record(b"k%d" % i, b"value-%d" % i)])
        assert len(log.segments) > 1
    index = d / "t-0" / "00000000000000000000.index"
    intact = index.read_bytes()
    with open(index, "ab") as f:
        f.write(b"\0\0\0")
    with open_manager(d, topic_configs={"t": topic}) as m:
        assert not warnings_of(caplog), "the load reads no inactive segment's index"
        assert index.stat().st_size == len(intact) + 3
        reopened = m.get_log("t", 0)
        assert reopened is not None
        assert [r.offset for r in reopened.read(0).records][:3] == [0, 1, 2]
        rebuilt = one_warning(caplog, "Found a corrupted index file corresponding to log file",
                              str(d / "t-0" / LOG0))
        assert "at their first use" in rebuilt.getMessage()
        assert index.read_bytes() == intact


def test_a_corrupt_checkpoint_is_discarded_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalog")
    d = tmp_path / "d"
    with open_manager(d) as m:
        log = m.create_log("t", 0)
        log.append([(b"k", b"v")])
    checkpoint = d / "recovery-point-offset-checkpoint"
    checkpoint.write_text("0\n2\nt 0 1\n")  # says 2 entries, holds 1
    with open_manager(d) as m:
        assert m.get_log("t", 0) is not None
    warning = one_warning(caplog, "Error occurred while reading recovery-point-offset-checkpoint file")
    message = warning.getMessage()
    assert f"of directory {d} (10 bytes discarded)" in message
    assert "says 2 entries but 1 follow" in message and "Resetting the recovery checkpoint to 0" in message


def test_an_unclean_load_warns_and_load_summary_still_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Under a LogManager the recovery runs on loader threads; the warning is delivered before
    the constructor returns, and load_summary counts the same bytes."""
    caplog.set_level(logging.WARNING, logger="kafkalog")
    d = tmp_path / "d"
    m = open_manager(d)
    log = m.create_log("t", 0)
    for i in range(3):
        log.append([(b"k%d" % i, b"v%d" % i)])
    log.flush()
    path = Path(log.path) / LOG0
    del m, log  # a crash: no close, so no clean-shutdown marker
    gc.collect()
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b"\xff" * 7)
    with open_manager(d) as m:
        summary = m.load_summary()[0]
    assert summary.bytes_truncated == 7
    assert summary.segments_recovered >= 1
    cut = one_warning(caplog, str(path), f"at byte offset {size}:", "(7 bytes discarded)")
    assert cut.threadName.startswith("log-recovery-"), "the loader thread that logged it"


def test_segments_after_a_truncation_are_listed_when_deleted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalog")
    d = tmp_path / "d"
    m = open_manager(d, {"log.flush.interval.messages": 1})
    log = m.create_log("t", 0, {"internal.segment.bytes": 300})
    for i in range(12):
        log.append([(b"k%d" % i, b"v" * 50)])
    part = Path(log.path)
    segments = [s.base_offset for s in log.segments]
    assert len(segments) >= 3
    del m, log  # a crash
    gc.collect()
    (d / "recovery-point-offset-checkpoint").unlink(missing_ok=True)  # recover from offset 0
    first = part / LOG0
    with open(first, "r+b") as f:
        f.seek(first.stat().st_size - 5)
        f.write(b"\xff" * 5)  # the last batch of the first segment fails its CRC
    with open_manager(d) as m:
        assert [s.base_offset for s in m.get_log("t", 0).segments] == [0]
    deleted = one_warning(caplog, "Corruption found in segment 0 of", f"deleting the {len(segments) - 1} segments")
    for base in segments[1:]:
        assert f"{base:020d}.log" in deleted.getMessage()
    assert "bytes in all" in deleted.getMessage()


def _two_segment_log(part: Path) -> None:
    with UnifiedLog.open(part, {"internal.segment.bytes": 1024}) as log:
        for i in range(20):
            log.append([Record(b"k%d" % i, b"x" * 100)])
        assert len(log.segments) >= 2


def test_an_interrupted_clean_is_rolled_back_with_warnings(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A .cleaned file (and a .swap above it) left by a crash mid-clean are deleted and the
    original segments kept; each deletion names the file and its size."""
    caplog.set_level(logging.WARNING, logger="kafkalog")
    part = tmp_path / "t-0"
    _two_segment_log(part)
    cleaned = part / (LOG0 + ".cleaned")
    shutil.copy(part / LOG0, cleaned)
    swap = part / "00000000000000000003.log.swap"
    swap.write_bytes(b"\0" * 33)
    with UnifiedLog.open(part) as log:
        assert [r.offset for r in log.records()] == list(range(20))
    assert not cleaned.exists() and not swap.exists()
    one_warning(caplog, f"Deleting stray .cleaned file {cleaned} ({(part / LOG0).stat().st_size} bytes)")
    one_warning(caplog, f"Deleting invalid swap file {swap} (33 bytes) minCleanedFileOffset: 0")


def test_an_interrupted_replace_is_completed_with_warnings(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A .swap segment without a .cleaned one completes the replace: the live files it covers
    are deleted (Kafka's "compacted but has not been deleted yet"), the swap renamed into place."""
    caplog.set_level(logging.INFO, logger="kafkalog")
    part = tmp_path / "t-0"
    _two_segment_log(part)
    live = {p.name: p.stat().st_size for p in part.glob("00000000000000000000.*")}
    assert set(live) >= {LOG0, "00000000000000000000.index", "00000000000000000000.timeindex"}
    swap = part / (LOG0 + ".swap")
    shutil.copy(part / LOG0, swap)
    with UnifiedLog.open(part) as log:
        assert [r.offset for r in log.records()] == list(range(20))
    for name, size in live.items():
        one_warning(caplog, f"Deleting segment files {part / name} ({size} bytes) that is compacted")
    renamed = [r for r in caplog.records if "by renaming from .swap files" in r.getMessage()]
    assert len(renamed) == 1 and renamed[0].levelno == logging.INFO


# -- delivery ------------------------------------------------------------------------------------


def test_the_cleaner_summary_arrives_at_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kafkalog")
    with open_manager(tmp_path / "d", BROKER) as m:
        log = m.create_log("c", 0, COMPACTED)
        for i in range(40):
            log.append([Record(b"k%d" % (i % 4), b"v%d" % i)])
        log.roll()
        assert m.run_cleaner_once() is not None
    summaries = [r for r in caplog.records if "Log cleaner thread" in r.getMessage()]
    assert len(summaries) == 1 and summaries[0].levelno == logging.INFO
    assert summaries[0].name == "kafkalog.cleaner.log_cleaner"
    assert "cleaned log c-0 (dirty section = [0, 40])" in summaries[0].getMessage()


def test_events_of_a_cleaner_thread_arrive_without_deadlock(tmp_path: Path) -> None:
    """A real cleaner thread logs while it holds the cleaner's locks; the handler, on the thread
    that delivers the events, calls back into the manager (which takes those locks), and the
    main thread calls into it as well. Delivery must neither deadlock nor lose the summary."""
    logger = logging.getLogger("kafkalog")
    logger.setLevel(logging.INFO)
    done = threading.Event()
    seen: list[logging.LogRecord] = []
    statuses: list[int] = []
    errors: list[BaseException] = []
    manager: list[LogManager] = []

    delivered_on: list[int] = []

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)
            delivered_on.append(threading.get_native_id())
            if "Beginning cleaning" in record.getMessage() and not statuses:
                try:
                    statuses.append(len(manager[0].cleaner_status()))  # back into kafkalog
                except BaseException as e:  # noqa: BLE001 (reported by the assertion below)
                    errors.append(e)
            if "Log cleaner thread" in record.getMessage():
                done.set()

    handler = Handler()
    logger.addHandler(handler)
    try:
        config = {**BROKER, "log.cleaner.threads": 1, "log.cleaner.backoff.ms": 10}
        with LogManager([tmp_path / "d"], config) as m:
            manager.append(m)
            log = m.create_log("c", 0, COMPACTED)
            for i in range(40):
                log.append([Record(b"k%d" % (i % 4), b"v%d" % i)])
            log.roll()

            def compete() -> None:  # a second Python thread competes for the same locks
                while not done.is_set():
                    m.cleaner_status()

            competitor = threading.Thread(target=compete)
            competitor.start()
            try:
                assert done.wait(HANG_GUARD_S), [r.getMessage() for r in seen]
            finally:
                done.set()
                competitor.join()
            assert not any(r.levelno >= logging.ERROR for r in seen), [r.getMessage() for r in seen]
            cleaner_tids = {tid for tid, name in native_threads().items() if name.startswith("kafka-log-clean")}
            assert cleaner_tids, "the cleaner thread runs"
            # The event was not handed to Python on the thread that logged it (which may hold
            # the cleaner's locks while a thread holding the GIL waits for them).
            assert not cleaner_tids & set(delivered_on)
    finally:
        logger.removeHandler(handler)
    summary = next(r for r in seen if "Log cleaner thread" in r.getMessage())
    assert summary.threadName == "kafka-log-cleaner-thread-0"
    assert "cleaned log c-0" in summary.getMessage()
    assert statuses == [1] and errors == [], "the handler called back into kafkalog"


def test_a_disabled_level_is_refused_on_the_rust_side(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """At ERROR, recovery's warnings are not even made: the Rust filter lets none through."""
    caplog.set_level(logging.ERROR, logger="kafkalog")
    assert _native._logging_state()[0] == "ERROR"
    part = tmp_path / "t-0"
    part.mkdir()
    (part / LOG0).write_bytes(b"\x01" * 100)
    accepted = _native._logging_state()[1]
    with UnifiedLog.open(part):
        pass
    assert (part / LOG0).stat().st_size == 0, "recovery ran"
    assert _native._logging_state()[1] == accepted, "no event passed the Rust-side filter"
    assert warnings_of(caplog) == []


def test_level_changes_at_run_time_take_effect(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    kafkalog_logger = logging.getLogger("kafkalog")

    def damaged_open(name: str) -> None:
        part = tmp_path / name
        part.mkdir()
        (part / LOG0).write_bytes(b"\x01" * 100)
        UnifiedLog.open(part).close()

    kafkalog_logger.setLevel(logging.ERROR)
    assert _native._logging_state()[0] == "ERROR"
    damaged_open("a-0")
    assert warnings_of(caplog) == []

    kafkalog_logger.setLevel(logging.WARNING)
    assert _native._logging_state()[0] == "WARN"
    damaged_open("b-0")
    assert any("b-0" in r.getMessage() for r in warnings_of(caplog))

    # logging.disable drops WARNING and below, whatever the loggers' levels.
    logging.disable(logging.WARNING)
    assert _native._logging_state()[0] == "ERROR"
    caplog.clear()
    damaged_open("c-0")
    assert warnings_of(caplog) == []
    logging.disable(logging.NOTSET)

    # A child logger more verbose than its parent opens the Rust filter to its level; the
    # parent's records stay filtered by Python's own check.
    kafkalog_logger.setLevel(logging.ERROR)
    logging.getLogger("kafkalog.segment").setLevel(logging.DEBUG)
    assert _native._logging_state()[0] == "DEBUG"
    caplog.clear()
    damaged_open("d-0")
    names = {r.name for r in warnings_of(caplog)}
    assert names == {"kafkalog.segment.log_segment"}, names


CHILD_SHUTDOWN = textwrap.dedent(
    """
    import logging, os, sys, threading
    from pathlib import Path
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(threadName)s %(message)s")
    import kafkalog
    root = Path(sys.argv[1])
    BROKER = {"log.cleaner.dedupe.buffer.size": 2 * 1024 * 1024, "log.cleaner.backoff.ms": 1}
    COMPACTED = {"cleanup.policy": "compact", "internal.segment.bytes": 400, "min.cleanable.dirty.ratio": 0.01}

    def dirty_manager(topic):
        m = kafkalog.LogManager([root / topic], BROKER)
        log = m.create_log(topic, 0, COMPACTED)
        for i in range(40):
            log.append([kafkalog.Record(b"k%d" % (i % 4), b"v%d" % i)])
        log.roll()
        return m

    def cleaned_by_a_thread(topic):
        # The summary comes from the cleaner thread, delivered by the kafkalog-logging thread
        # while this thread waits (no call returns meanwhile).
        done = threading.Event()
        class Handler(logging.Handler):
            def emit(self, record):
                if f"cleaned log {topic}-0" in record.getMessage():
                    done.set()
        handler = Handler()
        logging.getLogger("kafkalog").addHandler(handler)
        with dirty_manager(topic):
            ok = done.wait(60)
        logging.getLogger("kafkalog").removeHandler(handler)
        return ok

    assert cleaned_by_a_thread("a")
    sys.stdout.flush()  # or the child prints the parent's buffered lines again
    pid = os.fork()
    if pid == 0:
        # The child: its own delivery thread, no mutex inherited locked, no parent event again.
        ok = cleaned_by_a_thread("b")
        print("child ok" if ok else "child timed out", flush=True)
        os._exit(0 if ok else 1)
    assert os.waitpid(pid, 0)[1] == 0
    # A manager with a busy cleaner thread left open at exit: the atexit hook stops the
    # delivery, then the manager closes during finalization.
    m = dirty_manager("c")
    print("exiting", flush=True)
    """
)


def test_shutdown_and_fork_lose_nothing_silently_and_crash_nothing(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD_SHUTDOWN, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "child ok" in out.stdout and "exiting" in out.stdout, out.stdout
    # Each summary once (the cleaner may clean a log in several rounds, each with its own dirty
    # section): the child neither lost its own nor repeated the parent's.
    for topic in "ab":
        sections = re.findall(rf"cleaned log {topic}-0 \(dirty section = \[\d+, \d+\]\)", out.stdout)
        assert sections and len(sections) == len(set(sections)), out.stdout
    assert "INFO kafka-log-cleaner-thread-0 \n\tLog cleaner thread 0 cleaned log b-0" in out.stdout
    assert "panicked" not in out.stderr and "Fatal Python error" not in out.stderr, out.stderr
