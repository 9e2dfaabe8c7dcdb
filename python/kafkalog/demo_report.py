"""What the demo (:mod:`kafkalog.demo`) reports: its numbers (:class:`DemoSummary`), the summary
table, and a picture of each partition's clean / dirty / uncleanable sections, in bytes, before
and after a compaction (``make demo`` saves it as ``demo-data/compaction.png``).

Sections follow the log cleaner's accounting (Kafka's ``LogToClean`` and
``cleanableOffsets``), by whole segments: a segment wholly below the first dirty offset is
clean; the segment holding the first uncleanable offset (the active segment, or the one holding
the high watermark or ``min.compaction.lag.ms`` bound) and every later one are uncleanable; the
segments between are dirty (cleanable). Before a clean of a standalone log the first dirty
offset is the log start, so nothing is clean; after it, everything below the clean's end offset
(``cleaned_to_offset``) is.

matplotlib is imported inside :func:`save_picture` (Agg canvas, no pyplot, no global state), so
importing this module starts nothing and needs no matplotlib.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .demo_kafka import KafkaCleanerResult
from .log import UnifiedLog

__all__ = ["Sections", "SegmentLayout", "Step", "Verification", "KafkaComparison", "DemoSummary", "read_layout",
           "sections", "save_picture", "format_summary"]

_COLOURS = {"clean": "#3a9d5d", "dirty": "#e8a33d", "uncleanable": "#9aa0a6"}


class SegmentLayout(NamedTuple):
    """Base offset and size in bytes of each segment of one partition, in offset order."""

    partition: int
    segments: tuple[tuple[int, int], ...]

    @property
    def size(self) -> int:
        return sum(size for _, size in self.segments)


class Sections(NamedTuple):
    """Bytes of one partition's clean, dirty (cleanable) and uncleanable sections."""

    clean: int
    dirty: int
    uncleanable: int

    @property
    def total(self) -> int:
        return self.clean + self.dirty + self.uncleanable


@dataclass(frozen=True)
class Step:
    """One step of the pipeline: wall time, and the records and bytes it went through."""

    name: str
    seconds: float
    records: int
    bytes: int


@dataclass(frozen=True)
class Verification:
    """What the read-back check found (any mismatch or duplicate raises VerificationError)."""

    records_read: int
    keys: int  # distinct keys in the input
    live_keys: int  # keys whose latest event is a value
    deleted_keys: int  # keys whose latest event is a delete
    tombstones: int  # tombstones still in the log
    mismatches: int
    duplicates_in_clean: int  # keys seen twice below a partition's cleaned offset


@dataclass(frozen=True)
class KafkaComparison:
    """The compact step's cleans beside Kafka's cleaner on a copy of the same topic
    (:mod:`kafkalog.demo_kafka`): ``kafka`` is None when it was skipped or failed, and ``note``
    says why. ``kafkalog_seconds`` sums the compact tasks' ``duration_ms`` (each log's open to
    its close), ``kafkalog_kept`` their ``messages_written``; ``bytes`` is the topic's size
    before the clean."""

    kafka: KafkaCleanerResult | None
    note: str | None
    kafkalog_seconds: float
    kafkalog_kept: int
    bytes: int


@dataclass(frozen=True)
class DemoSummary:
    """One run of the demo: ``records_*`` / ``bytes_*`` are the topic's before and after the
    compaction (the compact job's counts), sections per partition as in the module doc."""

    data_dir: str
    topic: str
    round: int
    events: int  # this round
    total_events: int  # every round so far
    partitions: int
    records_before: int
    records_after: int
    bytes_before: int
    bytes_after: int
    steps: tuple[Step, ...]
    verification: Verification
    sections_before: tuple[tuple[int, Sections], ...]
    sections_after: tuple[tuple[int, Sections], ...]
    picture: str
    kafka: KafkaComparison | None = None

    @property
    def record_reduction(self) -> float:
        return 1 - self.records_after / self.records_before if self.records_before else 0.0

    @property
    def byte_reduction(self) -> float:
        return 1 - self.bytes_after / self.bytes_before if self.bytes_before else 0.0


def read_layout(partition_dir: str | os.PathLike[str]) -> SegmentLayout:
    """The segments of a partition dir, through a read-only open (no lock, nothing written)."""
    with UnifiedLog.open(partition_dir, read_only=True) as log:
        return SegmentLayout(log.partition, tuple((s.base_offset, s.size) for s in log.segments))


def sections(layout: SegmentLayout, first_dirty_offset: int, first_uncleanable_offset: int) -> Sections:
    """Splits ``layout``'s bytes at the cleaner's offsets, a whole segment at a time (see the
    module doc)."""
    clean = dirty = uncleanable = 0
    segments = layout.segments
    for i, (_, size) in enumerate(segments):
        next_base = segments[i + 1][0] if i + 1 < len(segments) else None
        if next_base is None or next_base > first_uncleanable_offset:
            uncleanable += size
        elif next_base <= first_dirty_offset:
            clean += size
        else:
            dirty += size
    return Sections(clean, dirty, uncleanable)


def save_picture(
    path: str | os.PathLike[str],
    topic: str,
    before: Sequence[tuple[int, Sections]],
    after: Sequence[tuple[int, Sections]],
    title: str = "",
) -> None:
    """Saves a PNG with one horizontal stacked bar per partition and state (before / after),
    its clean, dirty and uncleanable bytes in MB, labelled, with a legend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows: list[tuple[str, Sections]] = []
    states = dict(after)
    for partition, was in sorted(before):
        rows.append((f"{topic}-{partition}  before", was))
        rows.append((f"{topic}-{partition}  after", states[partition]))
    widest = max((s.total for _, s in rows), default=0) / 1e6 or 1.0
    digits = 1 if widest >= 5 else 2

    fig = Figure(figsize=(12, 1.5 + 0.42 * len(rows)), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ys = []
    for i, _ in enumerate(rows):  # a gap between partitions: before/after pairs stay together
        ys.append(-(i + (i // 2) * 0.6))
    for name, colour in _COLOURS.items():
        widths = [getattr(s, name) / 1e6 for _, s in rows]
        lefts = [_left(s, name) / 1e6 for _, s in rows]
        bars = ax.barh(ys, widths, left=lefts, height=0.8, color=colour, edgecolor="white", label=name)
        labels = [f"{w:.{digits}f}" if w >= 0.07 * widest else "" for w in widths]
        ax.bar_label(bars, labels=labels, label_type="center", fontsize=8, color="white")
    for y, (_, s) in zip(ys, rows):
        ax.text(s.total / 1e6 + 0.01 * widest, y, f"{s.total / 1e6:.{digits}f} MB", va="center", fontsize=8)
    ax.set_yticks(ys, [name for name, _ in rows], fontsize=9)
    ax.set_xlim(0, widest * 1.12)
    ax.set_xlabel("segment bytes (MB): clean | dirty (cleanable) | uncleanable (active segment and beyond)")
    ax.set_title(title or f"{topic}: log sections per partition, before and after compaction", fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, title="section", title_fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    fig.tight_layout()
    fig.savefig(os.fspath(path), format="png")


def _left(s: Sections, name: str) -> int:
    if name == "clean":
        return 0
    if name == "dirty":
        return s.clean
    return s.clean + s.dirty


def format_summary(s: DemoSummary) -> str:
    """The table ``make demo`` prints."""
    v, topic = s.verification, s.topic
    lines = [
        f"{'step':<19}{'time':>9}{'records':>13}{'MB':>10}{'records/s':>13}{'MB/s':>8}",
        *(f"{st.name:<19}{st.seconds:>7.1f} s{st.records:>13,}{st.bytes / 1e6:>10.1f}"
          f"{st.records / st.seconds:>13,.0f}{st.bytes / 1e6 / st.seconds:>8.1f}" for st in s.steps),
        "(MB: generate, the events' keys, values and headers; kafkalog's steps and verify, the topic's log "
        "segments)",
    ]
    if s.kafka is not None:
        lines.append(_kafka_line(s.kafka))
    lines += [
        "",
        f"{'topic ' + topic:<16}{'before':>13}{'after':>13}{'reduction':>11}",
        f"{'records':<16}{s.records_before:>13,}{s.records_after:>13,}{s.record_reduction:>10.1%}",
        f"{'MB':<16}{s.bytes_before / 1e6:>13.1f}{s.bytes_after / 1e6:>13.1f}{s.byte_reduction:>10.1%}",
        "",
        f"{'MB before -> after':<20}{'clean':>16}{'dirty':>16}{'uncleanable':>16}",
    ]
    for (p, b), (_, a) in zip(s.sections_before, s.sections_after):
        lines.append(f"{topic + '-' + str(p):<20}" + "".join(
            f"{f'{getattr(b, k) / 1e6:.1f} -> {getattr(a, k) / 1e6:.1f}':>16}" for k in Sections._fields))
    lines += [
        "",
        f"verified: the latest value of each of {v.keys:,} keys equals the latest of all {s.total_events:,} "
        "generated events "
        f"({v.live_keys:,} live, {v.deleted_keys:,} deleted and without a value; {v.tombstones:,} tombstones kept "
        "until delete.retention.ms passes)",
        f"picture: {s.picture}",
    ]
    return "\n".join(lines)


def _kafka_line(k: KafkaComparison) -> str:
    if k.kafka is None:
        return f"Kafka's own cleaner: skipped: {k.note}"
    theirs, mb = k.kafka, k.bytes / 1e6
    kept = (f"both kept {k.kafkalog_kept:,} records" if theirs.messages_written == k.kafkalog_kept
            else f"kept {theirs.messages_written:,} (Kafka) and {k.kafkalog_kept:,} (kafkalog) records")
    return (f"Kafka {theirs.version}'s own cleaner on a copy of the topic: {theirs.seconds:.2f} s in doClean "
            f"({mb / max(theirs.seconds, 1e-6):.0f} MB/s, one thread); kafkalog's cleaner {k.kafkalog_seconds:.2f} s in the compact "
            f"tasks ({mb / max(k.kafkalog_seconds, 1e-6):.0f} MB/s), both summed over {theirs.partitions} partitions; {kept}")
