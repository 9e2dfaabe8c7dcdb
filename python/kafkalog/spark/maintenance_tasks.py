"""The executor side of the maintenance jobs (:mod:`kafkalog.spark.maintenance`) and of the
column functions (:mod:`kafkalog.spark.functions`): one task's clean or retention of one
partition directory, its locks, and the row it reports.

Thread-safety: each task runs in its own Python worker; nothing here is shared.
"""

from __future__ import annotations

import errno
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._native import discover, probe_log_dir_lock
from ..exceptions import KafkaLogIOError, LogDirLockedError
from ..log import UnifiedLog

__all__ = ["MaintenanceJob", "run_one", "run_path", "COMPACT_STATS_COLUMNS"]

#: The CleanerStats counters a compact row reports (the clean's totals): ``map_bytes_read`` /
#: ``map_messages_read`` the dirty section read to build the offset map, ``bytes_read`` /
#: ``messages_read`` what the recopy read.
COMPACT_STATS_COLUMNS = (
    "map_bytes_read", "map_messages_read", "bytes_read", "messages_read", "messages_written", "tombstones_removed",
)


@dataclass(frozen=True)
class MaintenanceJob:
    """Everything a task needs; pickled to the executors (strings and numbers only)."""

    op: str
    #: One entry per task: (topic, partition, partition dir, log dir), as discovery found them.
    partitions: list[tuple[str, int, str, str]]
    config: dict[str, str]
    cleaner: dict[str, Any] = field(default_factory=dict)
    wait: bool = False
    wait_timeout: float | None = None
    roll: bool = False
    time_ms: int | None = None
    cap_future_timestamps: bool = False
    #: Tests only: the spec of a :class:`kafkalog.testing.Seam` (set by the jobs from
    #: :func:`kafkalog.testing.maintenance_seam`, never from an argument); None otherwise.
    test_seam: str | None = None


class _Points:
    """The task's points of the job's test seam (no-ops without one)."""

    def __init__(self, job: MaintenanceJob, path: str) -> None:
        self.spec = job.test_seam
        self.prefix = job.op
        self.name = os.path.basename(path)
        self.who = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def __call__(self, stage: str) -> None:
        if self.spec is not None:
            from ..testing import seam_point

            seam_point(self.spec, f"{self.prefix}.{stage}.{self.name}", self.who)


def run_one(job: MaintenanceJob, partition_entry: Sequence[Any]) -> dict[str, Any]:
    topic, partition, path, log_dir = partition_entry
    row: dict[str, Any] = {"topic": topic, "partition": partition, "path": path}
    point = _Points(job, path)
    asked = time.monotonic()
    opened = None
    log = None
    try:
        try:
            log = _open_when_free(job, path, log_dir, point)
        except _Locked as locked:
            row["waited_ms"] = (time.monotonic() - asked) * 1000.0
            row["skipped"] = f"locked: {locked}"
            return row
        opened = time.monotonic()
        row["waited_ms"] = (opened - asked) * 1000.0
        point("opened")
        row["bytes_before"], row["records_before"] = _sizes(log)
        if job.op == "compact":
            _compact_one(job, log, row)
        else:
            _retention_one(job, log, row)
        row["bytes_after"], row["records_after"] = _sizes(log)
        point("done")
        done, log = log, None
        done.close()
    except Exception as e:  # noqa: BLE001 - every failure belongs to this partition's row
        row["error"] = f"{type(e).__name__}: {e}"
    finally:
        if log is not None:
            try:
                log.close()
            except Exception:  # noqa: BLE001 - the first error is already in the row
                pass
    if opened is not None:
        row["duration_ms"] = (time.monotonic() - opened) * 1000.0
    return row


def run_path(job: MaintenanceJob, path: Any) -> dict[str, Any]:
    """:func:`run_one` on the partition directory ``path`` names (the column functions' row):
    the engine's discovery tells its topic, partition and log dir. A null path, a path that is
    not one partition directory (a log dir of several, a missing dir) gets its row with the
    error, as a failing partition does, and so does a relative path (executors do not share the
    driver's working directory)."""
    if path is None:
        return {"error": "ValueError: path is null (expected a partition directory, <topic>-<partition>)"}
    if not isinstance(path, str):
        return {"error": f"TypeError: path must be a string naming a partition directory, not {path!r}"}
    row: dict[str, Any] = {"path": path}
    if not os.path.isabs(path):
        # An executor runs in its own working directory (on a cluster, not the driver's), so a
        # relative path would name another directory on each of them.
        row["error"] = (
            f"ValueError: path {path!r} is relative; the column functions run on executors, each in its own "
            "working directory: pass absolute paths (os.path.abspath on the driver)"
        )
        return row
    try:
        found = discover(path)
    except Exception as e:  # noqa: BLE001 - the row says what was wrong with its path
        row["error"] = f"{type(e).__name__}: {e}"
        return row
    here = os.path.realpath(path)
    if len(found) != 1 or os.path.realpath(found[0].path) != here:
        row["error"] = (
            f"ValueError: path {path!r} is not a partition directory (<topic>-<partition>); it holds "
            f"{len(found)} partition directories: pass each one, or use kafkalog.spark.compact / run_retention "
            "for a log dir"
        )
        return row
    d = found[0]
    return run_one(job, (d.topic, d.partition, os.path.abspath(path), os.path.abspath(d.log_dir)))


def _sizes(log: UnifiedLog) -> tuple[int, int]:
    segments = log.segments
    return sum(s.size for s in segments), sum(s.record_count for s in segments)


def _compact_one(job: MaintenanceJob, log: UnifiedLog, row: dict[str, Any]) -> None:
    """Cleans the partition's dirty section from and to its log dir's cleaner-offset-checkpoint
    (``UnifiedLog.compact_dirty``), or says why not in ``skipped``."""
    compacted = "compact" in [p.strip() for p in log.config["cleanup.policy"].split(",")]
    if compacted and job.roll and log.segments and log.segments[-1].size > 0:
        log.roll()
    outcome = log.compact_dirty(time_ms=job.time_ms, **_sized_cleaner(job.cleaner, row["records_before"]))
    result = outcome.result
    row["passes"] = 0 if result is None else len(result.passes)
    row["checkpoint"] = outcome.checkpoint
    row["first_dirty_offset"] = outcome.first_dirty_offset
    row["cleaned_to_offset"] = outcome.first_dirty_offset if result is None else result.end_offset
    row["first_uncleanable_offset"] = outcome.first_uncleanable_offset
    for name in COMPACT_STATS_COLUMNS:
        row[name] = 0 if result is None else getattr(result.stats, name)
    row["skipped"] = outcome.skipped
    if outcome.checkpoint_error is not None:
        row["error"] = (
            f"cleaned to offset {row['cleaned_to_offset']}, but cleaner-offset-checkpoint was not updated "
            f"(the next clean starts from the old entry): {outcome.checkpoint_error}"
        )


#: compact_dirty's defaults (Kafka's log.cleaner.dedupe.buffer.size and
#: log.cleaner.io.buffer.load.factor).
_DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024
_LOAD_FACTOR = 0.9


def _sized_cleaner(cleaner: dict[str, Any], records: int) -> dict[str, Any]:
    """The cleaner's sizes for a partition of ``records`` records: the dedupe buffer as
    configured (``log.cleaner.dedupe.buffer.size``, per task), but no larger than a map whose
    usable slots (``load_factor`` of them) hold twice every record of the log. The dirty section
    has no more keys than records, so such a map never fills: the clean makes the same single
    pass, with the same result, as with the configured map, without allocating and zeroing
    memory it cannot use (Kafka's cleaner threads allocate their map once; each task's first
    clean allocates its own, 128 MiB by default, which cost a small partition more than the
    clean itself)."""
    load_factor = float(cleaner.get("load_factor", _LOAD_FACTOR))
    configured = int(cleaner.get("dedupe_buffer_size", _DEDUPE_BUFFER_SIZE))
    fits = (int(2 * max(records, 1) / load_factor) + 1) * 24
    return {**cleaner, "dedupe_buffer_size": min(configured, fits)}


def _retention_one(job: MaintenanceJob, log: UnifiedLog, row: dict[str, Any]) -> None:
    row["log_start_offset_before"] = log.log_start_offset
    result = log.delete_old_segments(cap_future_timestamps=job.cap_future_timestamps)
    row["segments_deleted"] = len(result.deleted)
    row["log_start_offset_after"] = result.log_start_offset
    counts: dict[str, int] = {}
    for d in result.deleted:
        counts[d.reason] = counts.get(d.reason, 0) + 1
    row["reasons"] = ",".join(f"{k}:{v}" for k, v in counts.items())
    row["warnings"] = list(result.warnings)


# -- locks ------------------------------------------------------------------------------------


class _Locked(Exception):
    """The partition is held (by a LogManager, a Kafka broker or another writer): the task
    skips it, saying so."""


def _open_when_free(job: MaintenanceJob, path: str, log_dir: str, point: _Points) -> UnifiedLog:
    """Opens the partition writable (taking its flock) once neither a LogManager / Kafka broker
    on its log dir nor another writer holds it; raises _Locked at once unless ``job.wait``,
    or when ``job.wait_timeout`` has passed. Never creates the partition dir: one deleted since the job found it (by
    ``LogManager.delete_log``, say) gives KafkaLogIOError (ENOENT) and stays deleted."""
    deadline = None if job.wait_timeout is None else time.monotonic() + job.wait_timeout
    delay = 0.05
    waiting = False
    point("open")
    while True:
        reason = _manager_lock_reason(path, log_dir)
        if reason is None:
            try:
                return UnifiedLog.open(path, job.config, create=False)
            except LogDirLockedError:
                reason = f"{path} is locked by another writer (another clean, a LogManager's log or an open UnifiedLog)"
            except KafkaLogIOError as e:
                if e.errno == errno.ENOENT and e.filename == path:
                    raise KafkaLogIOError(
                        errno.ENOENT, f"partition directory {path} no longer exists (removed after the job found it); not recreated", path
                    ) from None
                raise
        if not job.wait:
            raise _Locked(f"{reason}; refused (pass wait=True to wait for it)")
        if not waiting:
            waiting = True
            point("locked")
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            raise _Locked(f"{reason}; still locked after waiting {job.wait_timeout} s")
        time.sleep(delay if deadline is None else min(delay, max(deadline - now, 0.0)))
        delay = min(delay * 2, 1.0)


def _manager_lock_reason(path: str, log_dir: str) -> str | None:
    """Why the partition's log dir is in use by a LogManager or a Kafka broker (they hold an
    exclusive lock on ``<log dir>/.lock``), or None. The engine's probe: only tests for the
    lock, never takes it, never creates the file."""
    probe = probe_log_dir_lock(log_dir)
    if not probe.held:
        return None
    return f"{path} belongs to a running LogManager or Kafka broker (it holds {probe.lock_file})"
