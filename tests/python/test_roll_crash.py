"""SIGKILL around segment rolls (issue 17, part 3): a child (roll_crash_child.py) appends to
LogManager-managed logs with 1 KiB segments, so rolls, the ``flush-log`` tasks they queue
(which trim the rolled segment's indexes, fsync it and only then raise the recovery point) and
checkpoints interleave, until the crash seam kills it at a seeded file operation. After each
kill, before anything reopens the dir:

- the recovery point in ``recovery-point-offset-checkpoint`` never passes unflushed data: the
  trace of the child's file operations shows, for every segment wholly below the checkpointed
  point, an fsync of its ``.log`` after the last write to it and an fsync of the partition
  directory after the file was created, both before the checkpoint was renamed into place;

then the dir is reopened by a LogManager and:

- no acknowledged record is lost: every offset an append returned for is there, with its value;
- the log recovers: offsets are contiguous from 0, every record and every timestamp lookup
  (the indexes rebuilt or trimmed) answers, and nothing is offline.

A SIGKILL loses nothing the page cache holds, so the durability check reads the trace rather
than the disk: it is what a power cut at the same instant would make visible.

KAFKALOG_ROLL_CRASH_KILLS sets the number of kills per mode (default 25) and
KAFKALOG_CRASH_SEED the seed (default 1); a failure names the kill and the seeds.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest
from kit.manager import run_until_crash_seam
from roll_crash_child import CONFIG, PARTITIONS, T0, record_value, tp_name

from kafkalog import LogManager

CHILD = Path(__file__).with_name("roll_crash_child.py")
KILLS = int(os.environ.get("KAFKALOG_ROLL_CRASH_KILLS", "25"))
SEED = int(os.environ.get("KAFKALOG_CRASH_SEED", "1"))
CHECKPOINT = "recovery-point-offset-checkpoint"
SEGMENT_LOG = re.compile(r"^(\d{20})\.log$")


def _acked(acks: Path) -> dict[str, int]:
    """The highest log end each partition's appends returned."""
    ends: dict[str, int] = {}
    if acks.exists():
        for line in acks.read_text().splitlines():
            name, end = line.split()
            ends[name] = max(ends.get(name, 0), int(end))
    return ends


def _checkpointed(log_dir: Path) -> dict[str, int]:
    """The recovery points on disk (Kafka's checkpoint: version, count, ``topic partition offset``)."""
    path = log_dir / CHECKPOINT
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    return {f"{t}-{p}": int(o) for t, p, o in (line.split() for line in lines[2:])}


def _segment_logs(log_dir: Path) -> set[str]:
    return {str(p) for p in log_dir.glob("*/*.log") if SEGMENT_LOG.match(p.name)}


def _check_recovery_points_flushed(log_dir: Path, trace: Path, existing: set[str]) -> int:
    """The durability check of the module docs, for a child that started with the segment
    files ``existing`` (flushed by the previous reopen's clean close); returns how many
    segments it covered."""
    ops = [line.split(" ", 1) for line in trace.read_text().splitlines()] if trace.exists() else []
    renamed = [i for i, (op, path) in enumerate(ops) if op == "rename" and path == str(log_dir / CHECKPOINT)]
    if not renamed:
        return 0
    end = renamed[-1]
    covered = 0
    for name, point in _checkpointed(log_dir).items():
        part = log_dir / name
        bases = sorted(int(m.group(1)) for p in part.iterdir() if (m := SEGMENT_LOG.match(p.name)))
        # Segments wholly below the point: a later segment starts at or below it.
        for base, next_base in zip(bases, bases[1:]):
            if next_base > point:
                break
            log = str(part / f"{base:020d}.log")
            touched = [i for i, (op, path) in enumerate(ops[:end]) if path == log]
            created = None if log in existing else next((i for i in touched if ops[i][0] == "open"), None)
            written = [i for i in touched if ops[i][0] in ("write", "truncate")]
            synced = [i for i in touched if ops[i][0] == "fsync"]
            where = f"{name}: recovery point {point} checkpointed (trace line {end + 1}) over segment {base}"
            if written:
                assert any(s > written[-1] for s in synced), f"{where}, whose last write was never fsynced"
            if created is not None:
                dir_synced = any(op == "fsync" and path == str(part) for op, path in ops[created:end])
                assert dir_synced, f"{where}, whose creation no directory fsync followed"
            covered += 1
    return covered


def _check_reopened(log_dir: Path, acked: dict[str, int], rng: random.Random) -> None:
    manager = LogManager([log_dir], CONFIG, scheduler=False)
    try:
        assert manager.offline_log_dirs == {}
        for tp in PARTITIONS:
            name = tp_name(tp)
            log = manager.get_log(*tp)
            if log is None:
                assert name not in acked, f"{name}: appends were acknowledged but the log is gone"
                continue
            end = log.log_end_offset
            assert end >= acked.get(name, 0), f"{name}: log end {end} lost acknowledged records"
            records = list(log.records())
            assert [r.offset for r in records] == list(range(end)), f"{name}: offsets not contiguous"
            for r in records:
                assert (r.value, r.timestamp) == (record_value(tp, r.offset), T0 + r.offset), f"{name}: {r}"
            for o in [0, end - 1] + [rng.randrange(end) for _ in range(10)] if end else []:
                found = log.offset_for_timestamp(T0 + o)
                assert found is not None and found.offset == o, f"{name}: offset_for_timestamp({T0 + o}) = {found}"
            assert log.recovery_point <= end
            del log
    finally:
        manager.close()


@pytest.mark.parametrize("threaded", [False, True], ids=["manual-scheduler", "scheduler-threads"])
def test_sigkill_around_rolls(tmp_path: Path, threaded: bool) -> None:
    rng = random.Random(SEED * 2 + threaded)
    log_dir, acks = tmp_path / "logs", tmp_path / "acks"
    covered = 0
    for kill in range(KILLS):
        trace = tmp_path / f"trace-{kill}"
        child_seed = rng.randrange(1 << 32)
        crash_after = rng.randrange(30, 400)
        args = [log_dir, child_seed, acks, trace, crash_after, int(threaded)]
        existing = _segment_logs(log_dir)
        run_until_crash_seam(CHILD, args, tmp_path / f"child-{kill}.err")
        where = f"kill {kill} (KAFKALOG_CRASH_SEED={SEED}, child seed {child_seed}, crash after {crash_after})"
        try:
            covered += _check_recovery_points_flushed(log_dir, trace, existing)
            _check_reopened(log_dir, _acked(acks), rng)
        except AssertionError as e:
            raise AssertionError(f"after {where}: {e}") from e
    acked = _acked(acks)
    assert all(acked.get(tp_name(tp), 0) > 0 for tp in PARTITIONS), acked
    if KILLS >= 10:
        assert covered > 0, "no checkpoint ever covered a rolled segment: the durability check checked nothing"
