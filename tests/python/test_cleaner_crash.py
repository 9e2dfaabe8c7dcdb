"""A clean that fails or dies half-way must leave a log that reads as before or as after it.

(a) Fault injection (kafkalog.testing) at each step of a clean and of the crash-safe replace:
    creating, writing, syncing and trimming the ``.cleaned`` files; each rename ``.cleaned`` ->
    ``.swap``; each old segment -> ``.deleted``; each ``.swap`` -> live; unlinking the
    ``.deleted`` files. After the failure the log is closed and reopened (the loader finishes or
    rolls back the replace): it must read exactly as before or exactly as after the clean. The
    still-open log and a retried clean are checked too.
    The directory fsync that ends a replace is not covered: the seam matches path prefixes, so a
    rule on the directory fires first on the ``.cleaned`` files' own fsyncs.
(b) A child (cleaner_crash_child.py) appends and cleans in a loop and SIGKILLs itself through
    the crash seam just before its N-th file operation that changes something, N seeded: each
    kill lands between the same two system calls on any machine. Each reopen must serve every record exactly as
    written at its offset, every key's last record (unless it is a tombstone, in which case all
    of the key may be gone), no ``.cleaned`` / ``.swap`` files, and ``.log`` files kafka-python
    decodes. Kills:
    KAFKALOG_CLEANER_CRASH_KILLS (default 20; 500 for a soak), seed KAFKALOG_CLEANER_CRASH_SEED.
(c) Readers (read() and to_arrow() in threads) while compact_now runs in another thread: every
    read sees increasing offsets and, at every offset, the record written there. The threads
    meet through a barrier and an event (the cleans start once the readers run, each reader
    reads at least once, the writer waits half-way for the first clean), so how much they
    overlap varies but no check depends on it.
"""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import kafkalog
from kafkalog import Record
from kafkalog.exceptions import KafkaLogIOError, LogClosedError
from kafkalog.testing import clear_faults, inject_fault
from kit.compaction import Row, cleaner_temp_files, data_rows, read_all, scan_dir
from kit.manager import HANG_GUARD_S

from cleaner_crash_child import CONFIG as CHILD_CONFIG
from cleaner_crash_child import content

T0 = 1_700_000_000_000
NOW = T0 + 1_000_000
CONFIG = {
    "internal.segment.bytes": "4096",
    "cleanup.policy": "compact",
    "delete.retention.ms": "5000",
    "file.delete.delay.ms": "0",
}


def name(base: int, suffix: str) -> str:
    return f"{base:020d}{suffix}"


def build(path: Path, config: dict[str, str], segments: int = 4, per_segment: int = 6, keys: int = 5) -> kafkalog.UnifiedLog:
    """``segments`` rolled segments of ``per_segment`` records (keys cycling over ``keys``, a
    tombstone every 9th offset), then one record in the active segment."""
    log = kafkalog.UnifiedLog.open(path, config)
    o = 0
    for _ in range(segments):
        records = []
        for _ in range(per_segment):
            records.append(Record(b"k%d" % (o % keys), None if o % 9 == 8 else b"v%d" % o, timestamp=T0 + o))
            o += 1
        log.append(records, compression="lz4" if o % 2 else "none")
        log.roll()
    log.append([Record(b"k0", b"active", timestamp=T0 + o)])
    return log


def reference(tmp_path: Path, config: dict[str, str], **kw: int) -> tuple[list[Row], list[Row], list[int]]:
    """The log's records before and after a clean at NOW, and the bases of the cleaned groups."""
    log = build(tmp_path / "reference-0", config, **kw)
    before = read_all(log)
    result = log.compact_now(time_ms=NOW)
    after = read_all(log)
    groups = [s.base_offset for s in log.segments if s.base_offset < result.end_offset]
    log.close()
    assert after != before
    return before, after, groups


#: (op, file name relative to the partition dir) — each is one step of a single-group clean of
#: the log `build` makes (old segments at 0, 6, 12, 18; the cleaned one at 0). The cleaned
#: segment's offset index gets no entry (its batches are smaller than index.interval.bytes), so
#: it is never mapped: the trim creates it empty (an open) instead of cutting a preallocated file.
STEPS = [
    ("open", name(0, ".log.cleaned")),
    ("write", name(0, ".log.cleaned")),
    ("fsync", name(0, ".log.cleaned")),
    ("truncate", name(0, ".timeindex.cleaned")),
    ("open", name(0, ".index.cleaned")),
    ("rename", name(0, ".log.cleaned")),
    ("rename", name(0, ".index.cleaned")),
    ("rename", name(0, ".timeindex.cleaned")),
    ("rename", name(0, ".log")),
    ("rename", name(6, ".log")),
    ("rename", name(18, ".timeindex")),
    ("rename", name(0, ".log.swap")),
    ("rename", name(0, ".index.swap")),
    ("rename", name(0, ".timeindex.swap")),
    ("delete", name(6, ".log.deleted")),
]
STEP_IDS = [f"{op}-{f}" for op, f in STEPS]


def _fail_one_step(path: Path, op: str, file: str) -> kafkalog.UnifiedLog:
    log = build(path, CONFIG)
    inject_fault(path / file, op, errno.EIO, times=1)
    try:
        with pytest.raises(KafkaLogIOError) as exc:
            log.compact_now(time_ms=NOW)
    finally:
        clear_faults(path)
    assert exc.value.errno == errno.EIO and file in str(exc.value)
    return log


@pytest.mark.parametrize(("op", "file"), STEPS, ids=STEP_IDS)
def test_failed_step_then_reopen_reads_before_or_after(tmp_path, op, file):
    before, after, _ = reference(tmp_path, CONFIG)
    path = tmp_path / "faulty-0"
    log = _fail_one_step(path, op, file)
    log.close()
    with kafkalog.UnifiedLog.open(path, CONFIG) as reopened:
        assert cleaner_temp_files(path) == []
        got = read_all(reopened)
        assert got in (before, after), f"after a failed {op} of {file} the log reads as neither: {got}"
        assert data_rows(scan_dir(path)) == got
        # A clean of the reopened log finishes the job.
        reopened.compact_now(time_ms=NOW)
        assert read_all(reopened) == after


#: Steps that fail inside the swap (after the `.cleaned` files are complete): kafkalog then closes
#: the log, as Kafka takes the log dir offline, and only a reopen (which finishes or rolls back
#: the swap) serves it again.
SWAP_STEPS = {i for (op, f), i in zip(STEPS, STEP_IDS) if op in ("rename", "delete") or (op == "fsync" and "." not in f)}


@pytest.mark.parametrize(("op", "file"), STEPS, ids=STEP_IDS)
def test_failed_step_leaves_the_open_log_readable_as_before_or_after(tmp_path, op, file):
    before, after, _ = reference(tmp_path, CONFIG)
    path = tmp_path / "faulty-0"
    log = _fail_one_step(path, op, file)
    try:
        try:
            assert read_all(log) in (before, after)
        except LogClosedError:
            # Refusing to serve a half-swapped log is allowed; serving a mix is not.
            assert f"{op}-{file}" in SWAP_STEPS, f"a failed {op} of {file} closed the log"
    finally:
        log.close()


@pytest.mark.parametrize(("op", "file"), STEPS, ids=STEP_IDS)
def test_retried_clean_after_a_failed_step_loses_nothing(tmp_path, op, file):
    """After the failure the caller retries the clean and appends on the same open log (errors
    allowed), then closes; the reopened log must read as before or after, plus the append."""
    before, after, _ = reference(tmp_path, CONFIG)
    path = tmp_path / "faulty-0"
    log = _fail_one_step(path, op, file)
    try:
        log.compact_now(time_ms=NOW)
    except kafkalog.KafkaLogError:
        pass
    extra: list[Row] = []
    try:
        info = log.append([Record(b"k1", b"new", timestamp=T0 + 100)])
        extra = [(info.first_offset, T0 + 100, b"k1", b"new")]
    except kafkalog.KafkaLogError:
        pass
    log.close()
    with kafkalog.UnifiedLog.open(path, CONFIG) as reopened:
        got = read_all(reopened)
        assert got in (before + extra, after + extra), f"lost records: {got}"


def test_failure_in_a_later_group_keeps_earlier_groups_cleaned(tmp_path):
    """A clean of several groups: every group is its own replace. A failure in the third
    group's replace leaves the first two cleaned, the third before or after, the rest as before;
    in every case each key's latest value is served."""
    config = dict(CONFIG, **{"internal.segment.bytes": "300"})
    kw = {"segments": 10, "per_segment": 5, "keys": 23}
    before, after, groups = reference(tmp_path, config, **kw)
    assert len(groups) >= 4, groups
    for op, suffix in [("rename", ".log.cleaned"), ("rename", ".log.swap"), ("write", ".log.cleaned")]:
        path = tmp_path / f"{op}{suffix.replace('.', '_')}-0"
        log = build(path, config, **kw)
        inject_fault(path / name(groups[2], suffix), op, errno.EIO, times=1)
        try:
            with pytest.raises(KafkaLogIOError):
                log.compact_now(time_ms=NOW)
        finally:
            clear_faults(path)
        log.close()
        with kafkalog.UnifiedLog.open(path, config) as reopened:
            got = read_all(reopened)
        bounds = groups + [10**9]

        def part(rows: list[Row], i: int) -> list[Row]:
            return [r for r in rows if bounds[i] <= r[0] < bounds[i + 1]]

        for i in range(len(groups)):
            if i < 2:
                assert part(got, i) == part(after, i), (op, suffix, i)
            elif i == 2:
                assert part(got, i) in (part(before, i), part(after, i)), (op, suffix, i)
            else:
                assert part(got, i) == part(before, i), (op, suffix, i)
        latest = {r[2]: r for r in before}
        for row in latest.values():
            if row[3] is not None:
                assert row in got, f"{op} {suffix}: latest {row} lost"


# -- (b) SIGKILL ----------------------------------------------------------------------------------

CHILD = Path(__file__).with_name("cleaner_crash_child.py")
KILLS = int(os.environ.get("KAFKALOG_CLEANER_CRASH_KILLS", "20"))
SEED = int(os.environ.get("KAFKALOG_CLEANER_CRASH_SEED", "1"))


def check_model_invariant(log: kafkalog.UnifiedLog, where: str) -> list[Row]:
    rows = read_all(log)
    for o, ts, key, value in rows:
        assert (key, value, ts) == content(o), f"{where}: offset {o} serves {(key, value, ts)}, written {content(o)}"
    present = {r[0] for r in rows}
    last: dict[bytes, int] = {}
    for o in range(log.log_end_offset):
        last[content(o)[0]] = o
    for key, o in last.items():
        if content(o)[1] is not None:
            assert o in present, f"{where}: the latest value of {key!r} (offset {o}) is gone"
        elif o not in present:
            older = [r[0] for r in rows if r[2] == key]
            assert not older, f"{where}: tombstone {o} of {key!r} gone but older records {older} remain"
    return rows


def test_sigkill_during_cleaning_recovers_a_consistent_log(tmp_path):
    path = tmp_path / "crash-0"
    rng = random.Random(SEED)
    previous_end = 0
    killed_while_cleaning_files = 0
    for kill in range(KILLS):
        child_seed, crash_after = rng.randrange(2**31), rng.randrange(0, 400)
        where = f"kill {kill} (KAFKALOG_CLEANER_CRASH_SEED={SEED}, crash after {crash_after})"
        child = subprocess.run(
            [sys.executable, str(CHILD), str(path), str(child_seed), str(crash_after)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
            timeout=HANG_GUARD_S,  # the child ends at its crash point; this only turns a hang into a failure
        )
        assert child.returncode == -signal.SIGKILL, f"{where}: child exited with {child.returncode}: {child.stderr!r}"
        if any(n.endswith((".cleaned", ".swap", ".deleted")) for n in os.listdir(path)):
            killed_while_cleaning_files += 1
        with kafkalog.UnifiedLog.open(path, CHILD_CONFIG) as log:
            assert cleaner_temp_files(path) == [], where
            assert log.log_end_offset >= previous_end, f"{where}: log end went back"
            rows = check_model_invariant(log, where)
            assert data_rows(scan_dir(path)) == rows, where
            previous_end = log.log_end_offset
    assert previous_end > 0
    print(f"{killed_while_cleaning_files} of {KILLS} kills saw .cleaned/.swap/.deleted files just before")


# -- (c) readers while cleaning -------------------------------------------------------------------


def _reader_log(path: Path, delete_delay_ms: str) -> kafkalog.UnifiedLog:
    config = {
        "internal.segment.bytes": "65536",
        "cleanup.policy": "compact",
        "delete.retention.ms": "5000",
        "file.delete.delay.ms": delete_delay_ms,
    }
    log = kafkalog.UnifiedLog.open(path, config)
    for j in range(120):
        first = log.log_end_offset
        log.append([Record(*content(o)[:2], timestamp=content(o)[2]) for o in range(first, first + 10)])
        if j % 2:
            log.roll()
    return log


def _check_rows(rows: list[tuple[int, bytes | None, bytes | None]], what: str) -> None:
    prev = -1
    for o, key, value in rows:
        assert o > prev, f"{what}: offset {o} after {prev}"
        prev = o
        assert (key, value) == content(o)[:2], f"{what}: offset {o} holds {(key, value)}"


def _run_readers(log: kafkalog.UnifiedLog, kinds: list[str], cleans: int) -> tuple[int, list[str]]:
    stop = threading.Event()
    errors: list[str] = []
    reads = [0]
    # The cleans start once every reader runs, and each reader finishes at least one read, so
    # every run overlaps reads and cleans (how much varies; no check depends on it).
    started = threading.Barrier(len(kinds) + 1)

    def reader(kind: str) -> None:
        started.wait(HANG_GUARD_S)
        first = True
        while first or not stop.is_set():
            first = False
            try:
                if kind == "read-head":
                    # Fetches at the log start only: during a swap the new first segment is
                    # already there while the old ones still follow it.
                    rows = []
                    for _ in range(20):
                        r = log.read(log.log_start_offset, 2048)
                        rows = [(x.offset, x.key, x.value) for x in r.records]
                        _check_rows(rows, kind)
                elif kind == "read":
                    offset, rows = log.log_start_offset, []
                    while offset < log.high_watermark:
                        r = log.read(offset, 2048)
                        rows.extend((x.offset, x.key, x.value) for x in r.records)
                        if r.next_offset <= offset:
                            break
                        offset = r.next_offset
                else:
                    t = log.to_arrow()
                    rows = list(zip(t.column("offset").to_pylist(), t.column("key").to_pylist(), t.column("value").to_pylist()))
                _check_rows(rows, kind)
                reads[0] += 1
            except Exception as e:  # noqa: BLE001 - every failure is reported below
                errors.append(f"{kind}: {type(e).__name__}: {e}")
                stop.set()

    threads = [threading.Thread(target=reader, args=(k,)) for k in kinds]
    for t in threads:
        t.start()
    try:
        started.wait(HANG_GUARD_S)
        for i in range(cleans):
            if stop.is_set():
                break
            first = log.log_end_offset
            log.append([Record(*content(o)[:2], timestamp=content(o)[2]) for o in range(first, first + 10)])
            log.roll()
            log.compact_now(dedupe_buffer_size=24 * 40, time_ms=NOW + 1000 * i)
    finally:
        stop.set()
        for t in threads:
            t.join()
    return reads[0], errors


@pytest.mark.parametrize("kinds", [["read", "read-head"], ["arrow", "arrow"]], ids=["read", "arrow"])
def test_reads_while_cleaning_are_consistent(tmp_path, kinds):
    """Fresh logs of 60 segments whose first clean swaps them all at once (the widest window).
    Before the swap became one step for readers, each attempt caught the overlap about half the
    time, so 12 attempts miss a regression about once in 4000 runs."""
    for attempt in range(12):
        with _reader_log(tmp_path / f"readers-{attempt}-0", "60000") as log:
            reads, errors = _run_readers(log, kinds, cleans=2)
            assert errors == [], f"attempt {attempt}: {errors[:3]}"
            assert reads > 0


def test_appends_and_rolls_while_cleaning_keep_every_latest_value(tmp_path):
    """A writer thread appends and rolls while compact_now runs in a loop (tiny and large maps):
    afterwards, and after a reopen, every record is the one written at its offset and every
    key's latest value is there."""
    path = tmp_path / "writers-0"
    log = kafkalog.UnifiedLog.open(path, CHILD_CONFIG)
    target = 800
    errors: list[str] = []
    # The writer waits half-way for the first clean to end, so at least one clean runs on a
    # half-written log with appends after it, however the threads are scheduled.
    first_clean = threading.Event()

    def writer() -> None:
        rng = random.Random(SEED)
        try:
            while log.log_end_offset < target:
                if log.log_end_offset >= target // 2 and not first_clean.wait(HANG_GUARD_S):
                    raise AssertionError(f"no clean ended within {HANG_GUARD_S}s")
                first = log.log_end_offset
                batch = [Record(*content(o)[:2], timestamp=content(o)[2]) for o in range(first, first + rng.randint(1, 20))]
                log.append(batch, compression=rng.choice(["none", "lz4", "zstd"]))
                if rng.random() < 0.3:
                    log.roll()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"writer: {type(e).__name__}: {e}")

    thread = threading.Thread(target=writer)
    thread.start()
    rng = random.Random(SEED)
    cleans = 0
    try:
        while cleans == 0 or (thread.is_alive() and not errors):
            log.compact_now(dedupe_buffer_size=rng.choice([24 * 3, 24 * 12, 1 << 20]), time_ms=NOW + cleans * 500)
            cleans += 1
            first_clean.set()
    finally:
        first_clean.set()
        thread.join()
    assert errors == []
    assert cleans > 0
    check_model_invariant(log, "live")
    log.close()
    with kafkalog.UnifiedLog.open(path, CHILD_CONFIG) as reopened:
        assert cleaner_temp_files(path) == []
        rows = check_model_invariant(reopened, "reopened")
        assert data_rows(scan_dir(path)) == rows
