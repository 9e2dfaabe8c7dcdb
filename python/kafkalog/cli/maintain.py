"""``kafkalog compact PATH`` and ``kafkalog retention PATH``: run Kafka's cleaner or retention
now on each matching partition, with a progress bar, printing the cleaner's summary (Kafka's
stats block) for each clean and, for retention, each deleted segment with its reason.

Both write, so both refuse a log dir whose ``.lock`` a LogManager or Kafka broker holds, naming
the holder (the engine's probe, :func:`kafkalog.probe_log_dir_lock`, which the Spark
maintenance jobs use too): every log dir is checked before anything changes. Each partition is
then opened writable, which takes its ``flock``; a partition another writer holds is reported
and the others go on (exit code 1).

- ``compact`` cleans each compacted partition's dirty section from and to its log dir's
  ``cleaner-offset-checkpoint`` (``UnifiedLog.compact_dirty``), as Kafka's cleaner would: a
  partition Kafka's cleaner would skip is skipped, saying why (``--config
  min.cleanable.dirty.ratio=0`` cleans whatever is dirty; ``--roll`` makes the active segment
  cleanable first).
- ``retention`` runs Kafka's ``deleteOldSegments`` (``UnifiedLog.delete_old_segments``) with the
  high watermark and log start offset of the log dir's ``replication-offset-checkpoint`` and
  ``log-start-offset-checkpoint`` (what a broker restarting on the dir would hold), so nothing at
  or above the high watermark is deleted. The deleted files are unlinked at once
  (``file.delete.delay.ms=0`` unless given: Kafka's delay protects readers inside the broker's
  process, and this process has none).

The progress bar (tqdm, one step per partition) goes to stderr, only when stderr is a terminal
and ``--no-progress`` is not given; the library itself never draws one.

Thread-safety: a command run; not reentrant (writes to stdout and stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from .._native import DiscoveredPartition, on_demand_cleaner_config, probe_log_dir_lock
from ..checkpoints import read_offset_checkpoint
from ..exceptions import KafkaLogError
from ..log import UnifiedLog
from . import EXIT_OK, EXIT_PROBLEMS, UsageError
from . import topic_configs
from .progress import Progress
from .stats_collect import discover_path, iso

__all__ = ["register"]

_COMPACT_EPILOG = """examples:
  kafkalog compact /var/lib/kafka/data --config cleanup.policy=compact
  kafkalog compact /var/lib/kafka/data --topic users --partition 0 --topic-config users:cleanup.policy=compact --roll

Topic configs are not on disk (Kafka keeps them in the cluster metadata): give the compacted
topics' cleanup.policy with --config / --topic-config; a partition read with Kafka's default
policy (delete) is skipped. Exit codes: 0; 1 when a log dir is held by a LogManager or broker
(nothing is done), or a partition failed or was locked (the others are done)."""

_RETENTION_EPILOG = """examples:
  kafkalog retention /var/lib/kafka/data
  kafkalog retention /var/lib/kafka/data --topic-config events:retention.ms=3600000

Exit codes: 0; 1 when a log dir is held by a LogManager or broker (nothing is done), or a
partition failed or was locked (the others are done)."""


def register(commands: Any) -> None:
    compact = commands.add_parser(
        "compact",
        help="run Kafka's cleaner now on each compacted partition (writes; refuses a held log dir)",
        description=(
            "Cleans each matching compacted partition's dirty section now, from and to its log dir's "
            "cleaner-offset-checkpoint, as Kafka's cleaner would, and prints the cleaner's summary for each "
            "clean. A partition Kafka's cleaner would skip is skipped, saying why."
        ),
        epilog=_COMPACT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(compact)
    compact.add_argument("--roll", action="store_true", help="roll each non-empty active segment first, so it is cleanable")
    compact.add_argument(
        "--cleaner-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a broker key of the cleaner ({', '.join(on_demand_cleaner_config([]).KEYS)}); repeatable",
    )
    compact.add_argument(
        "--now-ms", type=int, metavar="MS", help="the clean's time (tombstone horizons, lags), ms since the epoch"
    )
    compact.set_defaults(run=run_compact)
    retention = commands.add_parser(
        "retention",
        help="run Kafka's retention now on each partition (writes; refuses a held log dir)",
        description=(
            "Deletes the segments Kafka's retention would delete now (below the log start offset, past "
            "retention.bytes, older than retention.ms) in each matching partition, printing each deleted "
            "segment with the reason."
        ),
        epilog=_RETENTION_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(retention)
    retention.add_argument(
        "--cap-future-timestamps",
        action="store_true",
        help="judge a segment with future timestamps by its file's modification time (not Kafka's behaviour)",
    )
    retention.set_defaults(run=run_retention)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="a log dir, or a partition dir (<topic>-<partition>)")
    parser.add_argument("--topic", help="only this topic")
    parser.add_argument("--partition", type=int, help="only this partition number")
    parser.add_argument("--no-progress", action="store_true", help="draw no progress bar (drawn only on a terminal)")
    topic_configs.add_arguments(parser)


# -- the run ------------------------------------------------------------------------------------


Work = Callable[[UnifiedLog, dict[str, int | None], Progress], bool]


def run_compact(args: argparse.Namespace) -> int:
    pairs = [_pair(text) for text in args.cleaner_config]
    try:
        cleaner = on_demand_cleaner_config(pairs)
    except KafkaLogError as e:
        raise UsageError(f"--cleaner-config: {e}") from None
    sizes = {
        "dedupe_buffer_size": cleaner.dedupe_buffer_size,
        "load_factor": cleaner.load_factor,
        "io_buffer_size": cleaner.io_buffer_size,
        "max_io_bytes_per_second": cleaner.max_io_bytes_per_second,
    }

    def work(log: UnifiedLog, entries: dict[str, int | None], progress: Progress) -> bool:
        return _compact_one(log, sizes, args.roll, args.now_ms, progress)

    return _run(args, "compact", work)


def run_retention(args: argparse.Namespace) -> int:
    def work(log: UnifiedLog, entries: dict[str, int | None], progress: Progress) -> bool:
        return _retention_one(log, entries, args.cap_future_timestamps, progress)

    return _run(args, "retention", work)


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--cleaner-config {text!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def _run(args: argparse.Namespace, what: str, work: Work) -> int:
    configs = topic_configs.from_args(args)
    found = [
        p
        for p in discover_path(args.path)
        if (args.topic is None or p.topic == args.topic) and (args.partition is None or p.partition == args.partition)
    ]
    if not found:
        print(f"kafkalog {what}: no partition directory in {args.path} matches", file=sys.stderr)
        return EXIT_PROBLEMS
    held = _held_log_dirs(found)
    if held:
        for line in held:
            print(f"kafkalog {what}: {line}", file=sys.stderr)
        return EXIT_PROBLEMS
    checkpoints = _checkpoints(found)
    failures = 0
    with Progress(len(found), what, enabled=not args.no_progress) as progress:
        for p in sorted(found):
            name = f"{p.topic}-{p.partition}"
            progress.describe(name)
            overrides, _ = configs.for_topic(p.topic)
            entries = {f: c.get((p.topic, p.partition)) for f, c in checkpoints.get(os.path.abspath(p.log_dir), {}).items()}
            if what == "retention":
                # Kafka delays the unlink (file.delete.delay.ms) for readers in the broker's own
                # process; this process has none, and another process's open files outlive the
                # unlink, so the command frees the space now unless told otherwise.
                overrides = {"file.delete.delay.ms": "0", **overrides}
            try:
                with UnifiedLog.open(p.path, overrides, create=False) as log:
                    progress.write(f"{name} ({configs.describe(p.topic)}):")
                    if not work(log, entries, progress):
                        failures += 1
            except KafkaLogError as e:
                failures += 1
                progress.write(f"{name}: FAILED: {type(e).__name__}: {e}")
            progress.step()
    return EXIT_PROBLEMS if failures else EXIT_OK


def _held_log_dirs(found: list[DiscoveredPartition]) -> list[str]:
    """A line per log dir whose .lock a LogManager or Kafka broker holds, naming the holder."""
    lines = []
    for log_dir in sorted({os.path.abspath(p.log_dir) for p in found}):
        probe = probe_log_dir_lock(log_dir)
        if probe.held:
            holder = probe.holder or "another process (its pid is unknown)"
            lines.append(
                f"log dir {log_dir} is held by {holder} ({probe.lock_file} is locked): refused, nothing was "
                "changed; stop that LogManager or broker first (kafkalog stats reads a held dir)"
            )
    return lines


def _checkpoints(found: list[DiscoveredPartition]) -> dict[str, dict[str, dict[tuple[str, int], int]]]:
    out: dict[str, dict[str, dict[tuple[str, int], int]]] = {}
    for log_dir in {os.path.abspath(p.log_dir) for p in found}:
        files = {}
        for name in ("replication-offset-checkpoint", "log-start-offset-checkpoint"):
            path = os.path.join(log_dir, name)
            if os.path.exists(path):
                files[name] = read_offset_checkpoint(path)
        out[log_dir] = files
    return out


def _compact_one(log: UnifiedLog, sizes: dict[str, Any], roll: bool, now_ms: int | None, progress: Progress) -> bool:
    policy = [p.strip() for p in log.config["cleanup.policy"].split(",")]
    if roll and "compact" in policy and log.segments and log.segments[-1].size > 0:
        progress.write(f"  rolled the active segment at offset {log.roll()}")
    started = time.monotonic()
    outcome = log.compact_dirty(time_ms=now_ms, on_progress=progress.report, **sizes)
    if outcome.skipped is not None:
        progress.write(f"  skipped: {outcome.skipped}")
    result = outcome.result
    if result is not None:
        for clean_pass in result.passes:
            progress.write("\n".join("  " + line for line in clean_pass.summary.strip("\n").splitlines()))
        stats = result.stats
        progress.write(
            f"  cleaned [{outcome.first_dirty_offset}, {result.end_offset}) in {len(result.passes)} pass(es), "
            f"{time.monotonic() - started:.2f} s: {stats.messages_read:,} -> {stats.messages_written:,} records, "
            f"{stats.bytes_read:,} -> {stats.bytes_written:,} bytes, {stats.tombstones_removed:,} tombstones removed"
        )
    if outcome.checkpoint_written is not None:
        progress.write(f"  cleaner-offset-checkpoint: {log.topic} {log.partition} {outcome.checkpoint_written}")
    if outcome.checkpoint_error is not None:
        progress.write(f"  FAILED to update cleaner-offset-checkpoint (the clean stands): {outcome.checkpoint_error}")
        return False
    return True


def _retention_one(log: UnifiedLog, entries: dict[str, int | None], cap: bool, progress: Progress) -> bool:
    hw = entries.get("replication-offset-checkpoint")
    if hw is not None:
        log.set_high_watermark(hw)
    start = entries.get("log-start-offset-checkpoint")
    if start is not None and log.log_start_offset < start <= log.high_watermark:
        log.delete_records(start)
    before = log.log_start_offset
    result = log.delete_old_segments(cap_future_timestamps=cap)
    for d in result.deleted:
        progress.write(
            f"  deleted segment {d.base_offset} [{d.base_offset}, {d.next_offset}): {d.size:,} bytes, largest "
            f"timestamp {iso(d.largest_timestamp)}: {d.reason}"
        )
    if not result.deleted:
        progress.write("  nothing to delete")
    else:
        progress.write(f"  log start offset {before} -> {result.log_start_offset}")
    for warning in result.warnings:
        progress.write(f"  warning: {warning}")
    return True
