"""Offset planning on the driver: turning ``startingOffsets`` / ``endingOffsets`` and their
timestamp variants into fixed offset ranges per partition, checking them against each log's
start and end (``failOnDataLoss``), and splitting big ranges (``minPartitions``). Mirrors Spark's
``KafkaOffsetReader`` (offset resolution) and ``KafkaOffsetRangeCalculator`` (splitting).

Logs are opened read-only (no lock, nothing written): the end of a log another process is
appending to is fixed here, once, so every executor reads the same consistent prefix.
No pyspark import.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..exceptions import DataLossError, InvalidOptionError
from ..log import UnifiedLog
from .._native import DiscoveredPartition
from .options import EARLIEST, LATEST, OffsetSpec

__all__ = [
    "OffsetRange",
    "open_read_only",
    "resolve_offset",
    "latest_offset",
    "end_name",
    "check_range",
    "check_isolation",
    "split_ranges",
    "check_spec_partitions",
]


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets [start, end) of one partition (Spark's ``KafkaOffsetRange``)."""

    topic: str
    partition: int
    path: str
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@contextmanager
def open_read_only(path: str) -> Iterator[UnifiedLog]:
    """A read-only open of one partition directory, closed on exit."""
    log = UnifiedLog.open(path, read_only=True)
    try:
        yield log
    finally:
        log.close()


def check_isolation(log: UnifiedLog, isolation: str) -> None:
    """Asks the native reader whether it serves ``isolation`` (an empty read), so an
    unsupported ``kafka.isolation.level`` fails on the driver, naming the option."""
    try:
        next(log.iter_arrow(log.log_start_offset, log.log_start_offset, isolation), None)
    except ValueError as e:
        raise InvalidOptionError("kafka.isolation.level", isolation, str(e)) from None


def latest_offset(log: UnifiedLog, isolation: str) -> int:
    """The latest offset a query of ``kafka.isolation.level`` reads up to, as Spark's Kafka
    source gets it from its consumer: the high watermark for ``read_uncommitted``, the last
    stable offset for ``read_committed`` (a query never reads past an open transaction)."""
    return log.end_offset(isolation)


def end_name(isolation: str) -> str:
    """What ``latest_offset`` is, for messages."""
    return "last stable offset" if isolation == "read_committed" else "log end offset"


def check_spec_partitions(spec: OffsetSpec, selected: list[DiscoveredPartition]) -> None:
    """Per-partition JSON must name exactly the partitions read, in batch and streaming queries
    alike (Spark's Kafka source: "If startingOffsets contains specific offsets, you must specify
    all TopicPartitions")."""
    if spec.kind not in ("offsets", "timestamps"):
        return
    wanted = {(d.topic, d.partition) for d in selected}
    extra = sorted(set(spec.offsets) - wanted)
    if extra:
        names = ", ".join(f"{t}-{p}" for t, p in extra)
        raise InvalidOptionError(spec.option, spec.raw, f"names partitions that are not read (not found or not subscribed): {names}")
    missing = sorted(wanted - set(spec.offsets))
    if missing:
        names = ", ".join(f"{t}-{p}" for t, p in missing)
        raise InvalidOptionError(spec.option, spec.raw, f"specific offsets must be given for every partition read; missing {names}")


def resolve_offset(
    log: UnifiedLog, spec: OffsetSpec, *, starting: bool, strategy: str = "error", isolation: str = "read_uncommitted"
) -> int:
    """The offset ``spec`` means in ``log``: earliest = log start, latest = ``latest_offset``
    for ``isolation`` (the high watermark a read-only open found, or the last stable offset for
    ``read_committed``), a timestamp = the first record at or after it (none:
    ``startingOffsetsByTimestampStrategy`` for a start, latest for an end, as in Spark)."""
    tp = (log.topic, log.partition)
    latest = latest_offset(log, isolation)
    if spec.kind == "earliest":
        return log.log_start_offset
    if spec.kind == "latest":
        return latest
    if spec.kind == "offsets":
        value = spec.offsets.get(tp, EARLIEST)
        return log.log_start_offset if value == EARLIEST else latest if value == LATEST else value
    ts = spec.timestamp if spec.kind == "timestamp" else spec.offsets.get(tp)
    if ts is None:
        return log.log_start_offset
    found = log.offset_for_timestamp(ts)
    if found is not None and found.offset < latest:
        return max(found.offset, log.log_start_offset)
    if starting and strategy == "error":
        raise InvalidOptionError(
            spec.option,
            spec.raw,
            f"{tp[0]}-{tp[1]} has no record with timestamp >= {ts} (startingOffsetsByTimestampStrategy=latest "
            "starts such partitions at the latest offset instead)",
        )
    return latest


def check_range(
    r: OffsetRange,
    log_start: int,
    log_end: int,
    fail_on_data_loss: bool,
    start_option: tuple[str, str],
    end_option: tuple[str, str],
    end_label: str = "log end offset",
) -> OffsetRange:
    """Holds ``r`` against the log's current [log_start, log_end] (``log_end`` is what the
    query may read up to: ``end_label`` names it). With failOnDataLoss (the default) a start
    below the log start (deleted records), an end past the log end or a start past the end
    raise DataLossError naming the option, given as (name, value); without it the range is
    clipped."""
    start, end = r.start, r.end
    tp = f"{r.topic}-{r.partition}"
    fail = fail_on_data_loss
    if start < log_start:
        if fail:
            raise DataLossError(*start_option, f"{tp}: offset {start} is below the log start offset {log_start} (records deleted)")
        start = log_start
    if end > log_end:
        if fail:
            raise DataLossError(*end_option, f"{tp}: ending offset {end} is past the {end_label} {log_end}")
        end = log_end
    if start > end:
        if fail:
            raise DataLossError(*start_option, f"{tp}: starting offset {start} is after the ending offset {end}")
        start = end
    return OffsetRange(r.topic, r.partition, r.path, start, end)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Spark's ``KafkaOffsetRangeCalculator.getRanges``: with ``minPartitions`` larger than the
    number of ranges, a range bigger than total/minPartitions offsets is cut into
    round(size / ideal) nearly equal parts; smaller ranges stay whole. Empty ranges go."""
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is None or min_partitions <= len(ranges):
        return ranges
    total = sum(r.size for r in ranges)
    ideal = total / min_partitions
    out: list[OffsetRange] = []
    for r in ranges:
        if r.size <= ideal:
            out.append(r)
            continue
        parts = max(int(math.floor(r.size / ideal + 0.5)), 1)
        bounds = [r.start + (r.size * i) // parts for i in range(parts)] + [r.end]
        out.extend(OffsetRange(r.topic, r.partition, r.path, a, b) for a, b in zip(bounds, bounds[1:]) if b > a)
    return out
