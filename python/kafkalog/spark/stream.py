"""Streaming reads: ``spark.readStream.format("kafkalog")``.

:class:`KafkaLogStreamReader` implements pyspark's ``DataSourceStreamReader`` with admission
control and ``SupportsTriggerAvailableNow`` (Spark's ``KafkaMicroBatchStream``). Offsets are
Spark's Kafka-source JSON, ``{"topic": {"0": 23, "1": 45}}``, the next offset to read per
partition. Spark checkpoints each micro-batch's start and end, and ``partitions(start, end)``
depends only on them, so a restarted query neither skips nor repeats records. ``minPartitions``
splits a micro-batch's big ranges as in batch reads.

``maxOffsetsPerTrigger`` caps a micro-batch as Spark's Kafka source does (spread over the
partitions in proportion to their backlog, never starving a small one). Partitions that appear
later start at their earliest offset. Driver calls open logs read-only; ``read`` is the batch
reader's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from ..exceptions import DataLossError
from .._native import DiscoveredPartition
from .discovery import find_partitions
from .offsets import (
    OffsetRange,
    check_isolation,
    check_range,
    check_spec_partitions,
    end_name,
    latest_offset,
    open_read_only,
    resolve_offset,
    split_ranges,
)
from .options import ReadOptions
from .reader import KafkaLogInputPartition, read_partition, to_input_partitions

__all__ = ["KafkaLogStreamReader"]

#: {topic: {partition (a string, as JSON keys are): next offset}}
Offsets = dict[str, dict[str, int]]


def _flat(offsets: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(t, int(p)): int(o) for t, parts in offsets.items() for p, o in parts.items()}


def _nested(flat: dict[tuple[str, int], int]) -> Offsets:
    out: Offsets = {}
    for (t, p), o in sorted(flat.items()):
        out.setdefault(t, {})[str(p)] = o
    return out


def rate_limit(start: dict[tuple[str, int], int], latest: dict[tuple[str, int], int], limit: int) -> dict[tuple[str, int], int]:
    """Spark's ``KafkaMicroBatchStream.rateLimit``: each partition gets ``limit`` x its share of
    the backlog (floor, or ceil when below 1 so small partitions are not starved), never past
    its latest offset."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if tp in start and end - start[tp] > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        if tp not in sizes:
            out[tp] = end
            continue
        prorate = limit * (sizes[tp] / total)
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end, start[tp] + step)
    return out


class KafkaLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """pyspark ``DataSourceStreamReader`` of a micro-batch query (Spark's
    ``KafkaMicroBatchStream``). Lives on the driver (its planner worker) for the whole query;
    holds the parsed options and, under ``Trigger.AvailableNow``, the offsets to stop at."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._available_now: dict[tuple[str, int], int] | None = None

    # -- offsets (driver) ---------------------------------------------------------------------

    def _dirs(self) -> list[DiscoveredPartition]:
        return find_partitions(self.opts.paths, self.opts.subscription)

    def _latest(self) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
        """(log start, latest offset) of every partition read now; the latest offset is the
        last stable offset under read_committed, so a query never reads past an open
        transaction."""
        starts, latest = {}, {}
        for d in self._dirs():
            with open_read_only(d.path) as log:
                starts[(d.topic, d.partition)] = log.log_start_offset
                latest[(d.topic, d.partition)] = latest_offset(log, self.opts.isolation)
        return starts, latest

    def initialOffset(self) -> dict[str, Any]:
        """Where a new query starts: ``startingOffsets`` (default latest) or the timestamp
        options, resolved now; a restarted query uses its checkpoint instead."""
        dirs = self._dirs()
        check_spec_partitions(self.opts.starting, dirs)
        out = {}
        for i, d in enumerate(dirs):
            with open_read_only(d.path) as log:
                if i == 0:
                    check_isolation(log, self.opts.isolation)
                iso = self.opts.isolation
                start = resolve_offset(log, self.opts.starting, starting=True, strategy=self.opts.timestamp_strategy, isolation=iso)
                latest = latest_offset(log, iso)
                r = check_range(
                    OffsetRange(d.topic, d.partition, d.path, start, latest),
                    log.log_start_offset,
                    latest,
                    self.opts.fail_on_data_loss,
                    (self.opts.starting.option, self.opts.starting.raw),
                    (self.opts.starting.option, self.opts.starting.raw),
                    end_name(iso),
                )
                out[(d.topic, d.partition)] = r.start
        return dict(_nested(out))

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxOffsetsPerTrigger`` as Spark's ReadMaxRows, else everything available."""
        if self.opts.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.opts.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: fixes the offsets to stop at, so the query ends."""
        self._available_now = self._latest()[1]

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The end of the next micro-batch: every partition's latest offset (capped by
        AvailableNow's), limited by ``limit``. A partition new since ``start`` begins at its
        log start."""
        log_starts, latest = self._latest()
        if self._available_now is not None:
            latest = {tp: min(o, self._available_now.get(tp, o)) for tp, o in latest.items()}
        begin = _flat(start)
        for tp in latest:
            begin.setdefault(tp, log_starts[tp])
        for tp, o in begin.items():
            if tp in latest and latest[tp] < o:
                if self.opts.fail_on_data_loss:
                    raise DataLossError(
                        "startingOffsets", str(o), f"{tp[0]}-{tp[1]} was truncated to {latest[tp]}, below the offset {o} already read"
                    )
                latest[tp] = o  # nothing to read until the log grows past o again
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        for tp, o in begin.items():
            latest.setdefault(tp, o)  # a vanished partition: partitions() reports it
        return dict(_nested(latest))

    def reportLatestOffset(self) -> dict[str, Any]:
        return dict(_nested(self._latest()[1]))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[KafkaLogInputPartition]:
        """The ranges between two checkpointed offsets; only ``start`` and ``end`` (and, for a
        partition absent from ``start``, its log start) decide them."""
        begin, until = _flat(start), _flat(end)
        dirs = {(d.topic, d.partition): d for d in self._dirs()}
        ranges = []
        for tp, stop in sorted(until.items()):
            d = dirs.get(tp)
            if d is None:
                if self.opts.fail_on_data_loss and stop > begin.get(tp, stop):
                    raise DataLossError("startingOffsets", json.dumps(start), f"partition {tp[0]}-{tp[1]} is gone")
                continue
            with open_read_only(d.path) as log:
                first = begin.get(tp, log.log_start_offset)
                where = ("startingOffsets", json.dumps(start))
                r = check_range(
                    OffsetRange(tp[0], tp[1], d.path, first, stop),
                    log.log_start_offset,
                    latest_offset(log, self.opts.isolation),
                    self.opts.fail_on_data_loss,
                    where,
                    where,
                    end_name(self.opts.isolation),
                )
            ranges.append(r)
        return to_input_partitions(split_ranges(ranges, self.opts.min_partitions), self.opts, "startingOffsets")

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, and the logs are not ours."""

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaLogInputPartition):
            return iter(())  # Spark's stand-in InputPartition(None) when there is nothing to read
        return read_partition(partition)
