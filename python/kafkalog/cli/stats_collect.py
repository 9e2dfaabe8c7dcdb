"""The document ``kafkalog stats`` prints (as text, or as JSON with ``--json``) and draws
(``--plot``): per log dir, topic and partition, what the disk tells, read through the engine's
rules and never written.

Where the numbers come from, offline:

- segments, bytes, exact record counts: ``UnifiedLog.segments`` of a read-only open (no lock,
  nothing written, the log as far as its last complete batch; works on a live broker's dir);
- the log start offset: the larger of the first segment's base and the dir's
  ``log-start-offset-checkpoint`` entry (a ``DeleteRecords`` or retention moved it);
- the high watermark: the dir's ``replication-offset-checkpoint`` entry, as a broker restarting
  on the dir would take it (set on the read-only handle, in memory only), else the log end;
- the cleaner's view (``UnifiedLog.cleaner_sections``): the dir's ``cleaner-offset-checkpoint``
  entry, the first unstable offset, the active segment and ``min.compaction.lag.ms``, by Kafka's
  ``cleanableOffsets``; whether the cleaner would clean the partition now, by the rule of
  ``grabFilthiestCompactedLog`` (``compact_dirty`` applies the same);
- tombstones and their delete horizons (``UnifiedLog.tombstones``: every batch decoded);
- retention (``UnifiedLog.retention_plan``: Kafka's ``deleteOldSegments`` as a dry run).

- the last clean and its stats: the dir's ``kafkalog-last-clean``, which kafkalog's cleans keep
  (a LogManager's cleaner, ``kafkalog compact``, the Spark compact job; Kafka keeps these only
  in its cleaner's memory and log, so after a broker's clean the dir has the checkpoint alone,
  and the document says so).

Thread-safety: plain functions; each call opens and closes its own read-only handles.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from .._native import DiscoveredPartition, discover, probe_log_dir_lock
from ..checkpoints import read_offset_checkpoint
from ..cleaner import LastClean, read_last_cleans
from ..exceptions import KafkaLogError, KafkaLogIOError
from ..log import UnifiedLog
from . import UsageError
from .topic_configs import TopicConfigs

__all__ = ["collect", "discover_path", "iso", "CHECKPOINT_FILES"]

#: The offset checkpoints of a log dir that ``stats`` reads (when present).
CHECKPOINT_FILES = (
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "cleaner-offset-checkpoint",
)

#: The topic keys the document shows for each partition.
SHOWN_KEYS = (
    "cleanup.policy",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
    "retention.ms",
    "retention.bytes",
    "segment.bytes",
    "segment.ms",
)

Doc = dict[str, Any]


def iso(ms: int | None) -> str | None:
    """``ms`` since the epoch as an ISO 8601 UTC time (``2026-11-25T03:39:52.123Z``)."""
    if ms is None:
        return None
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def discover_path(path: str) -> list[DiscoveredPartition]:
    try:
        return discover(path)
    except KafkaLogIOError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            raise UsageError(f"{path}: not a directory (give a log dir or a partition dir, <topic>-<partition>)") from None
        raise


def collect(
    paths: Iterable[str],
    configs: TopicConfigs,
    now_ms: int,
    topic: str | None = None,
    partition: int | None = None,
) -> Doc:
    """The document for ``paths`` (log dirs or partition dirs) at ``now_ms``."""
    by_dir: dict[str, list[DiscoveredPartition]] = {}
    for path in paths:
        for found in discover_path(path):
            if (topic is None or found.topic == topic) and (partition is None or found.partition == partition):
                entries = by_dir.setdefault(os.path.abspath(found.log_dir), [])
                if all(os.path.realpath(e.path) != os.path.realpath(found.path) for e in entries):
                    entries.append(found)
    dirs = [_log_dir(log_dir, sorted(found), configs, now_ms) for log_dir, found in by_dir.items()]
    return {"time_ms": now_ms, "time": iso(now_ms), "log_dirs": dirs}


def _log_dir(log_dir: str, found: list[DiscoveredPartition], configs: TopicConfigs, now_ms: int) -> Doc:
    probe = probe_log_dir_lock(log_dir)
    checkpoints: dict[str, dict[tuple[str, int], int]] = {}
    problems: list[str] = []
    for name in CHECKPOINT_FILES:
        path = os.path.join(log_dir, name)
        if os.path.exists(path):
            try:
                checkpoints[name] = read_offset_checkpoint(path)
            except KafkaLogError as e:
                problems.append(f"{name}: {e}")
    try:
        cleans = read_last_cleans(log_dir)
    except (KafkaLogError, OSError) as e:
        cleans = {}
        problems.append(f"kafkalog-last-clean: {e}")
    return {
        "path": log_dir,
        "lock": {"held": probe.held, "pid": probe.pid, "holder": probe.holder, "lock_file": probe.lock_file},
        "checkpoint_files": sorted(checkpoints),
        "checkpoint_errors": problems,
        "partitions": [_partition(p, checkpoints, cleans, configs, now_ms) for p in found],
    }


def _partition(
    found: DiscoveredPartition,
    checkpoints: dict[str, dict[tuple[str, int], int]],
    cleans: dict[tuple[str, int], LastClean],
    configs: TopicConfigs,
    now_ms: int,
) -> Doc:
    tp = (found.topic, found.partition)
    overrides, _ = configs.for_topic(found.topic)
    doc: Doc = {
        "topic": found.topic,
        "partition": found.partition,
        "path": os.path.abspath(found.path),
        "config_source": configs.describe(found.topic),
        "error": None,
    }
    try:
        with UnifiedLog.open(found.path, overrides, read_only=True, create=False) as log:
            _fill(doc, log, {name: c.get(tp) for name, c in checkpoints.items()}, cleans.get(tp), now_ms)
    except KafkaLogError as e:
        doc["error"] = f"{type(e).__name__}: {e}"
    return doc


def _fill(doc: Doc, log: UnifiedLog, entries: dict[str, int | None], last: LastClean | None, now_ms: int) -> None:
    config = log.config
    doc["config"] = {k: config[k] for k in SHOWN_KEYS if k in config}
    offsets = _offsets(log, entries)
    doc["offsets"] = offsets
    tombstones = {t.base_offset: t for t in log.tombstones(time_ms=now_ms)}
    segments = []
    for s in log.segments:
        t = tombstones.get(s.base_offset)
        segments.append(
            {
                "base_offset": s.base_offset,
                "size": s.size,
                "records": s.record_count,
                "first_batch_timestamp": s.first_batch_timestamp,
                "max_timestamp": s.max_timestamp,
                "future_timestamps": s.max_timestamp > now_ms,
                "tombstones": 0 if t is None else t.tombstones,
                "tombstones_past_horizon": 0 if t is None else t.past_horizon,
            }
        )
    doc["segments"] = segments
    doc["segment_count"] = len(segments)
    doc["bytes"] = sum(s["size"] for s in segments)
    doc["records"] = sum(s["records"] for s in segments)
    policy = [p.strip() for p in config["cleanup.policy"].split(",")]
    checkpoint = entries.get("cleaner-offset-checkpoint")
    doc["compaction"] = _compaction(log, config, segments, checkpoint, last, now_ms) if "compact" in policy else None
    doc["tombstones"] = _tombstones(list(tombstones.values()), config)
    doc["retention"] = _retention(log, config, policy, offsets["log_start_offset"], now_ms)
    doc["future_timestamp_segments"] = [
        {"base_offset": s["base_offset"], "max_timestamp": s["max_timestamp"], "ahead_ms": s["max_timestamp"] - now_ms}
        for s in segments
        if s["future_timestamps"]
    ]


def _offsets(log: UnifiedLog, entries: dict[str, int | None]) -> Doc:
    hw_entry = entries.get("replication-offset-checkpoint")
    if hw_entry is not None:
        log.set_high_watermark(hw_entry)  # in memory only: a read-only handle writes nothing
        hw_source = "replication-offset-checkpoint"
        if hw_entry != log.high_watermark:
            hw_source += f" ({hw_entry}, clamped to the log's range)"
    else:
        hw_source = "no replication-offset-checkpoint entry: the log end offset"
    start_entry = entries.get("log-start-offset-checkpoint")
    start = log.log_start_offset
    start_source = "the first segment's base offset"
    if start_entry is not None and start_entry > start:
        start, start_source = start_entry, "log-start-offset-checkpoint"
    return {
        "log_start_offset": start,
        "log_start_source": start_source,
        "high_watermark": log.high_watermark,
        "high_watermark_source": hw_source,
        "log_end_offset": log.log_end_offset,
        "last_stable_offset": log.last_stable_offset,
        "first_unstable_offset": log.first_unstable_offset,
        "recovery_point_checkpoint": entries.get("recovery-point-offset-checkpoint"),
    }


def _compaction(
    log: UnifiedLog, config: dict[str, str], segments: list[Doc], checkpoint: int | None, last: LastClean | None, now_ms: int
) -> Doc:
    s = log.cleaner_sections(time_ms=now_ms)
    reason, detail = None, s.skipped
    if s.skipped is not None:
        reason = s.skipped.split(":", 1)[0]
        if reason == "nothing dirty" and s.uncleanable_bound == "min.compaction.lag.ms":
            reason = "min.compaction.lag.ms"
    at, when = _eligible_when(s, config, segments, log, reason)
    return {
        "checkpoint": s.checkpoint,
        "first_dirty_offset": s.first_dirty_offset,
        "first_uncleanable_offset": s.first_uncleanable_offset,
        "uncleanable_bound": s.uncleanable_bound,
        "clean_bytes": s.clean_bytes,
        "cleanable_bytes": s.cleanable_bytes,
        "uncleanable_bytes": s.uncleanable_bytes,
        "dirty_ratio": s.dirty_ratio,
        "min_cleanable_dirty_ratio": float(config["min.cleanable.dirty.ratio"]),
        "max_compaction_delay_ms": s.max_compaction_delay_ms,
        "records_to_clean": s.records_to_clean,
        "eligible": s.skipped is None,
        "not_eligible_reason": reason,
        "not_eligible_detail": detail,
        "eligible_at_ms": at,
        "eligible_at": iso(at),
        "eligible_when": when,
        "last_clean": _last_clean(last, now_ms),
        "last_clean_note": _last_clean_note(last, checkpoint),
    }


def _last_clean(last: LastClean | None, now_ms: int) -> Doc | None:
    """The last clean the dir records, with its stats (``CleanerStats``' fields)."""
    if last is None:
        return None
    stats = {name: getattr(last.stats, name) for name in last.stats.FIELDS}
    return {
        "time_ms": last.time_ms,
        "time": iso(last.time_ms),
        "age_ms": now_ms - last.time_ms,
        "by": last.by,
        "first_dirty_offset": last.first_dirty_offset,
        "end_offset": last.end_offset,
        "stats": stats,
    }


def _last_clean_note(last: LastClean | None, checkpoint: int | None) -> str | None:
    """What the dir's files say beside (or instead of) the recorded clean."""
    if last is None and checkpoint is None:
        return "no clean of this partition is recorded in its log dir (no cleaner-offset-checkpoint entry)"
    if last is None:
        return (
            f"cleaned up to offset {checkpoint} (the log dir's cleaner-offset-checkpoint); no kafkalog-last-clean "
            "entry: the clean was not kafkalog's (a Kafka broker keeps a clean's time and stats only in its "
            "cleaner's memory and log)"
        )
    if checkpoint != last.end_offset:
        return (
            f"the cleaner-offset-checkpoint entry is {checkpoint}, not this clean's end {last.end_offset}: "
            "a clean kafkalog did not record (a Kafka broker's) ran since, or the entry was reset"
        )
    return None


def _eligible_when(
    s: Any, config: dict[str, str], segments: list[Doc], log: UnifiedLog, reason: str | None
) -> tuple[int | None, str | None]:
    """When the partition becomes eligible, where the disk tells: (ms or None, why)."""
    if reason is None:
        return None, None
    if s.lag_held_segment is not None and reason in ("min.compaction.lag.ms", "nothing dirty"):
        base, at = s.lag_held_segment
        return at, f"segment {base} leaves min.compaction.lag.ms={config['min.compaction.lag.ms']} at {iso(at)}"
    if reason == "below min.cleanable.dirty.ratio":
        text = (
            f"when the dirty ratio passes min.cleanable.dirty.ratio={config['min.cleanable.dirty.ratio']} "
            "(more appends rolled into dirty segments)"
        )
        if s.max_compaction_lag_due_ms is not None:
            at = s.max_compaction_lag_due_ms
            return at, f"{text}, or at {iso(at)} when max.compaction.lag.ms={config['max.compaction.lag.ms']} forces it"
        return None, text + "; max.compaction.lag.ms is unlimited, so no time is known"
    if reason == "nothing dirty":
        if s.uncleanable_bound == "last stable offset":
            unstable = log.first_unstable_offset
            if unstable is not None:
                return None, f"when the transaction open at offset {unstable} completes (the first unstable offset)"
            return None, f"when the high watermark ({log.high_watermark}) passes the dirty records"
        if segments and segments[-1]["size"] > 0:
            first = segments[-1]["first_batch_timestamp"]
            roll = f"by segment.ms={config['segment.ms']}, at the first append after {iso(first + int(config['segment.ms']))}"
            return None, f"after the active segment rolls ({roll}, or at segment.bytes={config['segment.bytes']})"
        return None, "after new records are appended and their segment rolls"
    return None, "never: Kafka's cleaner does not compact a cleanup.policy without compact"


def _tombstones(census: list[Any], config: dict[str, str]) -> Doc:
    total = sum(t.tombstones for t in census)
    with_horizon = sum(t.with_horizon for t in census)
    past = sum(t.past_horizon for t in census)
    upcoming = [t.next_horizon_ms for t in census if t.next_horizon_ms is not None]
    latest = [t.last_horizon_ms for t in census if t.last_horizon_ms is not None]
    nxt = min(upcoming) if upcoming else None
    return {
        "total": total,
        "past_horizon": past,
        "waiting_for_horizon": with_horizon - past,
        "next_horizon_ms": nxt,
        "next_horizon": iso(nxt),
        "last_horizon_ms": max(latest) if latest else None,
        "without_horizon": total - with_horizon,
        "delete_retention_ms": int(config["delete.retention.ms"]),
    }


def _retention(log: UnifiedLog, config: dict[str, str], policy: list[str], log_start: int, now_ms: int) -> Doc:
    plan = log.retention_plan(time_ms=now_ms, log_start_offset=log_start)
    if "delete" in policy:
        scope = (
            f"cleanup.policy={config['cleanup.policy']}: segments below the log start offset, past "
            f"retention.bytes={config['retention.bytes']} and older than retention.ms={config['retention.ms']}"
        )
    else:
        scope = f"cleanup.policy={config['cleanup.policy']}: only segments below the log start offset"
    nxt = plan.next_expiry
    return {
        "scope": scope,
        "would_delete": [
            {
                "base_offset": d.base_offset,
                "next_offset": d.next_offset,
                "size": d.size,
                "largest_timestamp": d.largest_timestamp,
                "reason": d.reason,
            }
            for d in plan.would_delete
        ],
        "would_delete_bytes": sum(d.size for d in plan.would_delete),
        "log_start_offset_after": plan.log_start_offset,
        "next_expiry": None if nxt is None else {"base_offset": nxt[0], "at_ms": nxt[1], "at": iso(nxt[1])},
        "warnings": list(plan.warnings),
    }
