"""``kafkalog verify --fix``: repairs what ``verify`` found by running the engine's recovery
(Kafka's ``LogLoader``, through a ``LogManager`` over each log dir with problems), and reports
what changed on disk.

Recovery repairs what it rescans, so before opening the ``LogManager`` each damaged partition's
recovery point (``recovery-point-offset-checkpoint``) is lowered to the base offset of its first
damaged segment, and the clean-shutdown marker is taken away: the load then runs as after an
unclean shutdown, recovering from that segment on (Kafka's rule: a segment truncated there
means the later ones are deleted). Lowering a recovery point only ever makes recovery re-read
more. Three things recovery does not rebuild are handled first, each reported:
- a malformed ``leader-epoch-checkpoint`` (the log could not be opened) is deleted and the log
  recovered from its first segment, which assigns the epochs again from the batches;
- a malformed ``partition.metadata`` is deleted (its topic id is unreadable; the broker writes
  the file again when it leads or follows the partition);
- a producer snapshot that fails its CRC or version is deleted (the loader rebuilds the producer
  state from the log).
A ``meta.properties`` that cannot be read is not repaired: the fix refuses the dir and says so.

What changed is found by comparing the directory's files (size, modification time, inode)
before and after: files deleted, created, truncated or rewritten.

Thread-safety: not shared between threads (the command runs one at a time).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .. import _native, checkpoints
from ..exceptions import KafkaLogError, LogDirLockedError
from ..manager import LogManager
from .verify import CLEAN_SHUTDOWN, META_PROPERTIES, Finding, Report

__all__ = ["FixOutcome", "fix"]

RECOVERY_POINTS = "recovery-point-offset-checkpoint"

#: A file's identity and state: (size, mtime in ns, inode).
Stat = tuple[int, int, int]


@dataclass
class FixOutcome:
    """What ``fix`` did: a line per change, per dir."""

    changes: list[str] = field(default_factory=list)
    failed: bool = False

    def lines(self) -> list[str]:
        return self.changes or ["nothing to fix"]

    def as_json(self) -> dict[str, object]:
        return {"changes": self.changes, "failed": self.failed}


def fix(report: Report) -> FixOutcome:
    """Repairs the log dirs (or the log dirs holding the partition directories) ``report`` found
    problems in."""
    outcome = FixOutcome()
    # Every dir first, problems or not: --fix is for a stopped broker's dirs.
    for log_dir in sorted({Path(d) for d in report.log_dirs} | {Path(c.dir).parent for c in report.partitions}):
        _refuse_if_locked(log_dir)
    by_dir: dict[Path, list[Finding]] = {}
    for f in report.problems:
        by_dir.setdefault(_log_dir_of(Path(f.file), report), []).append(f)
    for log_dir, problems in sorted(by_dir.items()):
        _fix_log_dir(log_dir, problems, report, outcome)
    return outcome


def _log_dir_of(file: Path, report: Report) -> Path:
    for d in report.log_dirs:
        if file.parent == Path(d):
            return Path(d)
    # A partition's file: its log dir is the partition directory's parent.
    return file.parent.parent


def _refuse_if_locked(log_dir: Path) -> None:
    probe = _native.probe_log_dir_lock(log_dir)
    if probe.held:
        holder = probe.holder or "another process"
        raise LogDirLockedError(f"{log_dir} is locked ({probe.lock_file} is held by {holder}): stop it before --fix")


def _fix_log_dir(log_dir: Path, problems: list[Finding], report: Report, outcome: FixOutcome) -> None:
    _refuse_if_locked(log_dir)
    meta = [f for f in problems if Path(f.file) == log_dir / META_PROPERTIES]
    if meta:
        outcome.failed = True
        outcome.changes.append(
            f"{log_dir}: not repaired: {meta[0].message} (recovery does not rewrite {META_PROPERTIES}: restore it "
            "from another log dir of the broker, with this dir's directory.id)"
        )
        return
    before = dict(_files(log_dir))
    recover_from = _pre_repairs(log_dir, problems, report, outcome)
    _lower_recovery_points(log_dir, recover_from, outcome)
    # Segments recovery deletes are renamed .deleted and unlinked after the delay: none here, as
    # no scheduler runs to do it later.
    manager = LogManager([log_dir], {"log.segment.delete.delay.ms": 0}, scheduler=False)
    try:
        offline = manager.offline_log_dirs
        summary = [s for s in manager.load_summary() if Path(s.dir) == log_dir]
    finally:
        manager.close()
    if offline:
        outcome.failed = True
        outcome.changes.append(f"{log_dir}: recovery failed: {offline}")
        return
    for s in summary:
        outcome.changes.append(
            f"{log_dir}: recovery loaded {s.logs_loaded} logs, recovered {s.segments_recovered} of "
            f"{s.segments_loaded} segments, truncated {s.bytes_truncated} bytes"
        )
    outcome.changes.extend(_diff(before, dict(_files(log_dir))))


def _pre_repairs(log_dir: Path, problems: list[Finding], report: Report, outcome: FixOutcome) -> dict[str, int]:
    """Deletes the files recovery cannot use (see the module doc); returns, per partition
    directory name, the offset to recover from."""
    recover_from: dict[str, int] = {}
    for check in report.partitions:
        dir = Path(check.dir)
        if dir.parent != log_dir:
            continue
        mine = [f for f in problems if Path(f.file).parent == dir]
        if check.first_damaged_segment is not None:
            recover_from[dir.name] = check.first_damaged_segment
        for f in mine:
            path = Path(f.file)
            if path.name == "leader-epoch-checkpoint" and "malformed" in f.message:
                _delete(path, "malformed: the epochs are assigned again from the batches", outcome)
                recover_from[dir.name] = check.segment_bases[0] if check.segment_bases else 0
            elif path.name == "partition.metadata" and "differs from" in f.message:
                majority = "no value has a majority" not in f.message
                if not majority:
                    outcome.failed = True
                    outcome.changes.append(f"{path}: not repaired: {f.message}")
                else:
                    _delete(path, "its topic id differs from the topic's: the broker writes it again", outcome)
            elif path.name == "partition.metadata":
                _delete(path, "malformed: the broker writes it again with the topic id", outcome)
            elif path.suffix == ".snapshot" and "corrupt" in f.message.lower():
                _delete(path, "corrupt: the producer state is rebuilt from the log", outcome)
    return recover_from


def _delete(path: Path, why: str, outcome: FixOutcome) -> None:
    path.unlink(missing_ok=True)
    outcome.changes.append(f"{path}: deleted ({why})")


def _lower_recovery_points(log_dir: Path, recover_from: dict[str, int], outcome: FixOutcome) -> None:
    """Makes the load recover each damaged partition from ``recover_from``: its recovery point
    lowered there, and the clean-shutdown marker (which skips recovery) removed."""
    if not recover_from:
        return
    path = log_dir / RECOVERY_POINTS
    try:
        points = checkpoints.read_offset_checkpoint(path) if path.exists() else {}
    except KafkaLogError:
        points = None  # unreadable: the LogManager recovers every segment anyway
    if points is not None:
        changed = False
        for name, offset in recover_from.items():
            topic, _, partition = name.rpartition("-")
            tp = (topic, int(partition))
            if tp in points and points[tp] > offset:
                points[tp] = offset
                changed = True
        # A partition without an entry is recovered from offset 0.
        if changed:
            checkpoints.write_offset_checkpoint(path, points)
    marker = log_dir / CLEAN_SHUTDOWN
    if marker.exists():
        marker.unlink()
    for name, offset in sorted(recover_from.items()):
        outcome.changes.append(f"{log_dir / name}: recovering from offset {offset}, as after an unclean shutdown")


def _files(root: Path) -> Iterator[tuple[Path, Stat]]:
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            yield path, (st.st_size, st.st_mtime_ns, st.st_ino)


def _diff(before: dict[Path, Stat], after: dict[Path, Stat]) -> list[str]:
    out = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if new is None:
            out.append(f"{path}: deleted ({old[0] if old else 0} bytes)")
        elif old is None:
            out.append(f"{path}: created ({new[0]} bytes)")
        elif new[0] < old[0]:
            out.append(f"{path}: truncated from {old[0]} to {new[0]} bytes")
        elif new[0] > old[0]:
            out.append(f"{path}: grew from {old[0]} to {new[0]} bytes")
        else:
            out.append(f"{path}: rewritten ({new[0]} bytes)")
    return out
