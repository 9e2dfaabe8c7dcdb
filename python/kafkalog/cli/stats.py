"""``kafkalog stats PATH...``: per log dir, topic and partition, the segments, sizes, exact
record counts and offsets; the cleaner's clean / cleanable / uncleanable sections, dirty ratio
and whether (and when) the partition is eligible for compaction; the last clean the disk
records; tombstones waiting for their horizon; what retention would delete now and when the
next segment expires; segments with future timestamps. ``--json`` prints the same as one JSON
document; ``--plot FILE.png`` draws it (:mod:`kafkalog.cli.plot`).

Read-only: logs are opened with ``read_only=True`` (no lock taken, nothing written), so it works
on a live broker's dir. Where each number comes from is in :mod:`kafkalog.cli.stats_collect`.

Thread-safety: a command run; not reentrant (writes to stdout).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, TextIO

from . import EXIT_OK, EXIT_PROBLEMS
from . import topic_configs
from .stats_collect import Doc, collect, iso

__all__ = ["register", "run", "render_text"]

_EPILOG = """examples:
  kafkalog stats /var/lib/kafka/data
  kafkalog stats /var/lib/kafka/data --topic-config users:cleanup.policy=compact --json
  kafkalog stats /var/lib/kafka/data/users-0 --config cleanup.policy=compact --plot users.png

Topic configs are not on disk (Kafka keeps them in the cluster metadata): without --config /
--topic-config each partition is read with Kafka's defaults, and the output says so.
Exit codes: 0, or 1 when a partition could not be read (its entry says why)."""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "stats",
        help="sizes, offsets, the cleaner's view and retention of each partition (read-only)",
        description=(
            "Per log dir, topic and partition: segments, bytes, exact record counts, log start / high "
            "watermark / log end; the clean, cleanable and uncleanable sections and dirty ratio, whether "
            "the partition is eligible for compaction now and, if not, why and when it becomes so; the "
            "last clean; tombstones waiting for delete.retention.ms; what retention would delete now "
            "and when the next segment expires; segments with future timestamps. Never writes or locks."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a log dir, or a partition dir (<topic>-<partition>)")
    parser.add_argument("--topic", help="only this topic")
    parser.add_argument("--partition", type=int, help="only this partition number")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument("--plot", metavar="FILE.png", help="also draw each partition's segments into a PNG (needs Pillow)")
    parser.add_argument(
        "--now-ms",
        type=int,
        metavar="MS",
        help="judge times (retention, lags, tombstone horizons) at this time, ms since the epoch (default: now)",
    )
    topic_configs.add_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    configs = topic_configs.from_args(args)
    if args.plot is not None:
        from .plot import require_pillow

        require_pillow()
    now = int(time.time() * 1000) if args.now_ms is None else args.now_ms
    doc = collect(args.paths, configs, now, args.topic, args.partition)
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_text(doc, sys.stdout)
    if args.plot is not None:
        from .plot import draw

        size = draw(doc, args.plot)
        print(f"plot: {args.plot} ({size[0]}x{size[1]})", file=sys.stderr if args.json else sys.stdout)
    failed = any(p["error"] for d in doc["log_dirs"] for p in d["partitions"])
    return EXIT_PROBLEMS if failed else EXIT_OK


# -- text -------------------------------------------------------------------------------------


def _n(v: int) -> str:
    return f"{v:,}"


def _ms(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if abs(ms) >= size:
            return f"{ms / size:.1f} {unit}"
    return f"{ms} ms"


def render_text(doc: Doc, out: TextIO) -> None:
    w = out.write
    w(f"kafkalog stats at {doc['time']} ({doc['time_ms']} ms)\n")
    if not doc["log_dirs"]:
        w("no partition directories found\n")
    for d in doc["log_dirs"]:
        lock = d["lock"]
        held = f"held by {lock['holder'] or 'another process'}" if lock["held"] else "not held"
        w(f"\nlog dir {d['path']} (.lock {held}; read without locking)\n")
        files = ", ".join(d["checkpoint_files"]) or "none"
        w(f"  checkpoint files: {files}\n")
        for problem in d["checkpoint_errors"]:
            w(f"  unreadable checkpoint: {problem}\n")
        for p in d["partitions"]:
            _partition_text(p, doc["time_ms"], w)


def _partition_text(p: Doc, now: int, w: Any) -> None:
    w(f"\n  {p['topic']}-{p['partition']}  ({p['path']})\n")
    w(f"    config: {p['config_source']}\n")
    if p["error"]:
        w(f"    ERROR: {p['error']}\n")
        return
    c = p["config"]
    w(f"    cleanup.policy={c['cleanup.policy']}\n")
    w(f"    segments: {p['segment_count']}, {_n(p['bytes'])} bytes, {_n(p['records'])} records (exact)\n")
    o = p["offsets"]
    w(f"    log start offset: {o['log_start_offset']} ({o['log_start_source']})\n")
    w(f"    high watermark: {o['high_watermark']} ({o['high_watermark_source']})\n")
    w(f"    log end offset: {o['log_end_offset']}\n")
    if o["first_unstable_offset"] is not None:
        w(f"    first unstable offset: {o['first_unstable_offset']} (an open transaction)\n")
    for s in p["segments"]:
        extra = f", {_n(s['tombstones'])} tombstones" if s["tombstones"] else ""
        future = "  FUTURE TIMESTAMPS" if s["future_timestamps"] else ""
        w(
            f"      segment {s['base_offset']:>12}: {_n(s['size']):>14} bytes, {_n(s['records']):>10} records, "
            f"max timestamp {iso(s['max_timestamp'])}{extra}{future}\n"
        )
    if p["compaction"] is not None:
        _compaction_text(p["compaction"], w)
    _tombstones_text(p["tombstones"], p["compaction"] is not None, w)
    _retention_text(p["retention"], w)
    for f in p["future_timestamp_segments"]:
        w(
            f"    future timestamps: segment {f['base_offset']} (largest {iso(f['max_timestamp'])}, "
            f"{_ms(f['ahead_ms'])} ahead): time retention cannot delete it, or any segment after it, until then\n"
        )


def _compaction_text(k: Doc, w: Any) -> None:
    w("    compaction:\n")
    w(f"      clean       [.., {k['first_dirty_offset']}): {_n(k['clean_bytes'])} bytes\n")
    w(f"      cleanable   [{k['first_dirty_offset']}, {k['first_uncleanable_offset']}): {_n(k['cleanable_bytes'])} bytes, "
      f"{_n(k['records_to_clean'])} records\n")
    w(f"      uncleanable [{k['first_uncleanable_offset']}, ..): {_n(k['uncleanable_bytes'])} bytes "
      f"(the cleanable range ends at the {k['uncleanable_bound']})\n")
    w(f"      dirty ratio {k['dirty_ratio']:.4f} (min.cleanable.dirty.ratio {k['min_cleanable_dirty_ratio']})\n")
    if k["eligible"]:
        overdue = f", {_ms(k['max_compaction_delay_ms'])} past max.compaction.lag.ms" if k["max_compaction_delay_ms"] else ""
        w(f"      eligible for compaction now{overdue}\n")
    else:
        w(f"      not eligible now: {k['not_eligible_detail']}\n")
        if k["eligible_when"]:
            w(f"      becomes eligible: {k['eligible_when']}\n")
    _last_clean_text(k["last_clean"], k["last_clean_note"], w)


def _last_clean_text(last: Doc | None, note: str | None, w: Any) -> None:
    if last is None:
        w(f"      last clean: {note}\n")
        return
    st = last["stats"]
    by = "a LogManager's cleaner" if last["by"] == "log-cleaner" else "an on-demand clean (kafkalog compact, Spark)"
    w(f"      last clean: {last['time']} ({_ms(last['age_ms'])} ago) by {by}, dirty section "
      f"[{last['first_dirty_offset']}, {last['end_offset']})\n")
    smaller = 100.0 * (1 - st["bytes_written"] / st["bytes_read"]) if st["bytes_read"] else 0.0
    w(f"        {_n(st['messages_read'])} -> {_n(st['messages_written'])} records, {_n(st['bytes_read'])} -> "
      f"{_n(st['bytes_written'])} bytes ({smaller:.1f}% smaller) in {st['elapsed_secs']:.3f} s; "
      f"tombstones {_n(st['tombstones_removed'])} removed, {_n(st['tombstones_retained'])} kept; "
      f"offset map {100 * st['buffer_utilization']:.1f}% full\n")
    if note:
        w(f"        note: {note}\n")


def _tombstones_text(t: Doc, compacted: bool, w: Any) -> None:
    if not t["total"]:
        w("    tombstones: none\n")
        return
    parts = [f"{_n(t['total'])} tombstones"]
    if compacted:
        if t["past_horizon"]:
            parts.append(f"{_n(t['past_horizon'])} past their delete horizon (the next clean removes them)")
        if t["waiting_for_horizon"]:
            parts.append(f"{_n(t['waiting_for_horizon'])} waiting for their horizon (next at {t['next_horizon']})")
        if t["without_horizon"]:
            parts.append(
                f"{_n(t['without_horizon'])} not yet through a clean (their first clean gives them a horizon of "
                f"that clean's time + delete.retention.ms={t['delete_retention_ms']})"
            )
    w(f"    tombstones: {'; '.join(parts)}\n")


def _retention_text(r: Doc, w: Any) -> None:
    w(f"    retention ({r['scope']}):\n")
    if not r["would_delete"]:
        w("      nothing would be deleted now\n")
    for d in r["would_delete"]:
        w(
            f"      would delete segment {d['base_offset']} [{d['base_offset']}, {d['next_offset']}): "
            f"{_n(d['size'])} bytes, largest timestamp {iso(d['largest_timestamp'])}: {d['reason']}\n"
        )
    if r["would_delete"]:
        w(f"      log start offset after: {r['log_start_offset_after']} ({_n(r['would_delete_bytes'])} bytes freed)\n")
    nxt = r["next_expiry"]
    if nxt is not None:
        w(f"      next expiry: segment {nxt['base_offset']} at {nxt['at']} (retention.ms)\n")
    for warning in r["warnings"]:
        w(f"      warning: {warning}\n")
