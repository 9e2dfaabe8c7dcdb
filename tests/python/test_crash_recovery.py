"""Crash recovery for real: a child process (crash_child.py) appends, rolls, flushes, runs
retention and deletes records on a LogManager until it is killed with SIGKILL at a seeded
point of its work. After every kill the log dir is reopened here and checked against what the child
recorded durably before it died:

- every flushed record is there, with the value written at its offset;
- offsets are contiguous from the log start offset to the log end offset;
- the log start offset never went backwards (neither below what the child recorded nor below
  what the previous reopen saw);
- every segment's indexes answer correctly (reads and timestamp lookups at random offsets);
- no .swap or .cleaned files remain after the reopen, no .deleted files after a tick, no .tmp
  files but those of checkpoint-like files written tmp + rename (which the load keeps: see the
  xfail test at the end) and none of those after the next checkpoint.

The reopen is closed cleanly or just dropped, at random, so the next child starts after both a
clean and an unclean shutdown; about one kill in ten lands while the child is still loading.
Nothing is left to timing: the child kills itself through the crash seam
(``kafkalog.testing.crash_after``) just before its N-th file operation that changes something,
N seeded, so each kill lands between the same two system calls on any machine and a failure
is repeated exactly by its seed.
A SIGKILL loses no byte already written (the page cache outlives the process), so this tests
that every step (appends, rolls, renames, checkpoints, retention) leaves a consistent state at
any instant; torn and damaged files are test_corruption's business.

KAFKALOG_CRASH_KILLS sets the number of kills (default 30; ``make soak`` uses 500) and
KAFKALOG_CRASH_SEED the seed (default 1); a failure message names the kill and the seed.
"""

from __future__ import annotations

import gc
import os
import random
from pathlib import Path

from crash_child import CONFIG, PARTITIONS, T0, read_status, record_key, record_value, tp_name
from kafkalog import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, LogManager, UnifiedLog
from kit.manager import run_until_crash_seam

CHILD = Path(__file__).with_name("crash_child.py")
KILLS = int(os.environ.get("KAFKALOG_CRASH_KILLS", "30"))
SEED = int(os.environ.get("KAFKALOG_CRASH_SEED", "1"))

#: Files a reopen must leave behind no trace of: an interrupted clean/split/replace is rolled
#: back or completed at load.
FORBIDDEN_AFTER_LOAD = (".swap", ".cleaned")

#: Files written tmp + rename. A crash between the two leaves ``<name>.tmp``; the load does not
#: remove it (see test_checkpoint_tmp_files_left_by_a_crash_are_removed_at_load), the next write
#: of the same file replaces it.
ATOMICALLY_WRITTEN = {
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
    "leader-epoch-checkpoint",
    "partition.metadata",
    "meta.properties",
    ".kafka_cleanshutdown",
}
DIR_CHECKPOINTS = ["recovery-point-offset-checkpoint", "log-start-offset-checkpoint"]


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _crash_child(log_dir: Path, seed: int, status: Path, stderr_path: Path, crash_after: int) -> None:
    """Runs crash_child.py until its crash seam kills it."""
    run_until_crash_seam(CHILD, [log_dir, seed, status, crash_after], stderr_path)


def _check_log(
    log: UnifiedLog, tp: tuple[str, int], status: dict[str, dict[str, int]], floor: int, rng: random.Random
) -> None:
    name = tp_name(tp)
    start, end = log.log_start_offset, log.log_end_offset
    flushed = status["flushed"].get(name, 0)
    recorded_start = status["start"].get(name, 0)
    assert start >= recorded_start, f"{name}: log start {start} went below the recorded {recorded_start}"
    assert start >= floor, f"{name}: log start {start} went below {floor}, seen at the previous reopen"
    assert end >= flushed, f"{name}: log end {end} lost flushed records (flushed up to {flushed})"
    assert start <= end
    assert log.high_watermark == end

    # Every record from the log start to the log end, in order, each the one written there.
    records = list(log.records())
    offsets = [r.offset for r in records]
    assert offsets == list(range(start, end)), f"{name}: offsets not contiguous in [{start}, {end})"
    for r in records:
        assert (r.key, r.value, r.timestamp) == (record_key(r.offset), record_value(tp, r.offset), T0 + r.offset)
    table = log.to_arrow()
    assert table.column("offset").to_pylist() == offsets
    assert table.column("value").to_pylist() == [r.value for r in records]

    # Segments: ascending bases, the first at or below the log start, each segment's data
    # readable from its own first offset.
    segments = log.segments
    bases = [s.base_offset for s in segments]
    assert bases == sorted(set(bases)) and bases, f"{name}: bad segment list {segments}"
    assert bases[0] <= start and bases[-1] <= end
    for seg, next_base in zip(segments, bases[1:] + [end]):
        assert Path(seg.path).is_file()
        # Records below the log start stay in their segment until retention removes it.
        assert seg.record_count == next_base - seg.base_offset, f"{name}: segment {seg} before {next_base}"
        first = max(seg.base_offset, start)
        if first < next_base:
            got = log.read(first, 1 << 16).records
            assert got and got[0].offset == first, f"{name}: read({first}) of segment {seg.base_offset}"

    # The offset and time indexes of every segment, at random offsets.
    if end > start:
        for o in [start, end - 1] + [rng.randrange(start, end) for _ in range(20)]:
            got = log.read(o, 1).records
            assert got and got[0].offset == o and got[0].value == record_value(tp, o), f"{name}: read({o})"
            found = log.offset_for_timestamp(T0 + o)
            assert found is not None and found.offset == o, f"{name}: offset_for_timestamp({T0 + o}) = {found}"
    earliest = log.offset_for_timestamp(EARLIEST_TIMESTAMP)
    latest = log.offset_for_timestamp(LATEST_TIMESTAMP)
    assert earliest is not None and earliest.offset == start
    assert latest is not None and latest.offset == end


def _reopen_and_check(
    log_dir: Path, status_path: Path, floors: dict[str, int], rng: random.Random, close_cleanly: bool
) -> None:
    status = read_status(status_path)
    manager = LogManager([log_dir], CONFIG, scheduler=False)
    try:
        assert manager.offline_log_dirs == {}
        files = _files(log_dir)
        leftovers = [p for p in files if p.name.endswith(FORBIDDEN_AFTER_LOAD)]
        assert not leftovers, f"left after the reopen: {leftovers}"
        tmps = [p for p in files if p.suffix == ".tmp" and p.name.removesuffix(".tmp") not in ATOMICALLY_WRITTEN]
        assert not tmps, f"temporary files left after the reopen: {tmps}"
        for tp in PARTITIONS:
            log = manager.get_log(*tp)
            if log is None:
                assert tp_name(tp) not in status["flushed"], f"{tp_name(tp)} was flushed but is gone"
                continue
            _check_log(log, tp, status, floors.get(tp_name(tp), 0), rng)
            floors[tp_name(tp)] = log.log_start_offset
            del log
        manager.tick()
        deleted = [p for p in _files(log_dir) if p.name.endswith(".deleted")]
        assert not deleted, f".deleted files still there after a tick with delay 0: {deleted}"
        if rng.random() < 0.5:
            manager.checkpoint()
            tmps = [p for p in _files(log_dir) if p.parent == log_dir and p.suffix == ".tmp"]
            assert not tmps, f"checkpoint tmp files left after checkpoint(): {tmps}"
            for name in DIR_CHECKPOINTS:
                assert (log_dir / name).is_file()
    finally:
        if close_cleanly:
            manager.close()
        del manager
        gc.collect()


def test_sigkill_at_random_moments(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    log_dir = tmp_path / "logs"
    status_path = tmp_path / "status.json"
    floors: dict[str, int] = {}
    for kill in range(KILLS):
        stderr_path = tmp_path / f"child-{kill}.err"
        child_seed = rng.randrange(1 << 32)
        # Mostly a crash in the work after the open; one in ten while the child loads (and
        # recovers) the logs, or just after.
        crash_after = rng.randrange(0, 40) if kill > 0 and rng.random() < 0.1 else rng.randrange(40, 600)
        _crash_child(log_dir, child_seed, status_path, stderr_path, crash_after)
        try:
            _reopen_and_check(log_dir, status_path, floors, rng, close_cleanly=rng.random() < 0.5)
        except AssertionError as e:
            raise AssertionError(
                f"after kill {kill} (KAFKALOG_CRASH_SEED={SEED}, child seed {child_seed}, crash after {crash_after}): {e}"
            ) from e
    status = read_status(status_path)
    # The run did real work: data was flushed and retention moved the log start on.
    assert all(tp_name(tp) in status["flushed"] for tp in PARTITIONS), status
    if KILLS >= 10:
        assert any(s > 0 for s in status["start"].values()), status


def test_checkpoint_tmp_files_left_by_a_crash_are_removed_at_load(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    with LogManager([log_dir], CONFIG, scheduler=False) as manager:
        log = manager.create_log("crash", 0)
        log.append([(record_key(o), record_value(("crash", 0), o)) for o in range(10)])
        partition_dir = Path(log.path)
        del log
    # What a SIGKILL between "write <file>.tmp" and "rename" leaves behind.
    (log_dir / "recovery-point-offset-checkpoint.tmp").write_text("0\n1\ncrash 0")
    (log_dir / "log-start-offset-checkpoint.tmp").write_text("")
    (partition_dir / "leader-epoch-checkpoint.tmp").write_text("0\n1\n0 ")
    manager = LogManager([log_dir], CONFIG, scheduler=False)
    try:
        lg = manager.get_log("crash", 0)
        assert lg is not None and lg.log_end_offset == 10
        del lg
        left = [p for p in _files(log_dir) if p.suffix == ".tmp"]
        assert not left, f"left after the reopen: {left}"
    finally:
        manager.close()
