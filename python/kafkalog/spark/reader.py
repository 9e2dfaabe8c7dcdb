"""Batch reads: ``spark.read.format("kafkalog")``.

:class:`KafkaLogBatchReader` implements pyspark's ``DataSourceReader`` (Spark's Kafka source's
``KafkaBatch`` / ``KafkaRelation``): ``partitions()`` runs on the driver, opens every selected log
read-only, fixes each partition's offset range once (so a log another process is appending to
gives a consistent prefix) and splits big ranges for ``minPartitions``; ``read()`` runs on an
executor per :class:`KafkaLogInputPartition` and yields pyarrow RecordBatches decoded by the
native bulk reader, never a Python object per record.
"""

from __future__ import annotations

import errno
import gc
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from ..arrow import KAFKA_SCHEMA
from ..exceptions import DataLossError, KafkaLogIOError
from ..log import UnifiedLog
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

__all__ = ["KafkaLogInputPartition", "KafkaLogBatchReader", "read_partition", "plan_batch", "freeze_gc_in_reused_worker"]

#: Key/value bytes per Arrow batch handed to Spark.
CHUNK_BYTES = 16 << 20
_NO_HEADERS = pa.schema(list(KAFKA_SCHEMA)[:7])


def freeze_gc_in_reused_worker() -> None:
    """Moves the objects a reused pyspark worker holds for good (pyspark, pyarrow, kafkalog
    modules and classes: about 50,000) into the collector's permanent generation, once per
    worker process.

    pyspark's daemon runs a full ``gc.collect()`` after every task of a reused worker
    (``SPARK_REUSE_WORKER``), before the worker takes the next task: with pyarrow imported each
    took 10 ms idle and 20-60 ms on a busy two-core machine, a third of the read path's Python
    time, between one task and the next and after each planning call. Frozen objects are still
    freed by reference counting; only cycles among them are no longer collected, and there are
    none to collect (every such post-task collect found 0). Elsewhere (the driver, tests, plain
    Python) this does nothing."""
    if os.environ.get("SPARK_REUSE_WORKER") and gc.get_freeze_count() == 0:
        gc.freeze()


@dataclass(frozen=True)
class KafkaLogInputPartition(InputPartition):
    """One Spark task's work (Spark's ``KafkaBatchInputPartition``): offsets [start, end) of
    one partition directory. Plain strings and numbers: Spark pickles it to an executor."""

    topic: str
    partition: int
    path: str
    start: int
    end: int
    include_headers: bool
    isolation: str
    fail_on_data_loss: bool
    #: the option the start offset came from, for DataLossError messages.
    start_option: str = "startingOffsets"


def read_partition(part: KafkaLogInputPartition) -> Iterator[pa.RecordBatch]:
    """Reads ``part`` on an executor: a read-only open (no lock, no writes), Arrow batches of
    Spark's Kafka-source columns, the log closed in ``finally``. Records deleted since planning
    (log start moved past ``start``) or a vanished directory raise DataLossError unless
    failOnDataLoss is false, which skips them."""
    tp = f"{part.topic}-{part.partition}"
    freeze_gc_in_reused_worker()
    try:
        log = UnifiedLog.open(part.path, read_only=True)
    except KafkaLogIOError as e:
        if e.errno != errno.ENOENT:
            raise
        if part.fail_on_data_loss:
            raise DataLossError(part.start_option, str(part.start), f"{tp}: partition directory {part.path} is gone") from None
        return
    try:
        start, end = part.start, part.end
        if log.log_start_offset > start:
            if part.fail_on_data_loss:
                raise DataLossError(
                    part.start_option,
                    str(start),
                    f"{tp}: offsets {start} to {log.log_start_offset - 1} were deleted after the query was planned",
                )
            start = log.log_start_offset
        if log.log_end_offset < end and part.fail_on_data_loss:
            raise DataLossError(
                part.start_option, str(start), f"{tp}: the log was truncated to {log.log_end_offset}, below the planned end {end}"
            )
        for batch in log.iter_arrow(start, end, part.isolation, max_chunk_bytes=CHUNK_BYTES):
            if part.include_headers:
                yield batch
            else:
                yield pa.RecordBatch.from_arrays(batch.columns[:7], schema=_NO_HEADERS)
    finally:
        log.close()


def plan_batch(opts: ReadOptions) -> list[OffsetRange]:
    """The offset ranges of a batch query, resolved against the logs as they are now."""
    dirs = find_partitions(opts.paths, opts.subscription)
    check_spec_partitions(opts.starting, dirs)
    check_spec_partitions(opts.ending, dirs)
    ranges = []
    for i, d in enumerate(dirs):
        with open_read_only(d.path) as log:
            if i == 0:
                check_isolation(log, opts.isolation)
            iso = opts.isolation
            start = resolve_offset(log, opts.starting, starting=True, strategy=opts.timestamp_strategy, isolation=iso)
            end = resolve_offset(log, opts.ending, starting=False, isolation=iso)
            r = OffsetRange(d.topic, d.partition, d.path, start, end)
            ranges.append(
                check_range(
                    r,
                    log.log_start_offset,
                    latest_offset(log, iso),
                    opts.fail_on_data_loss,
                    (opts.starting.option, opts.starting.raw),
                    (opts.ending.option, opts.ending.raw),
                    end_name(iso),
                )
            )
    return split_ranges(ranges, opts.min_partitions)


def to_input_partitions(ranges: list[OffsetRange], opts: ReadOptions, start_option: str) -> list[KafkaLogInputPartition]:
    return [
        KafkaLogInputPartition(
            r.topic, r.partition, r.path, r.start, r.end, opts.include_headers, opts.isolation, opts.fail_on_data_loss, start_option
        )
        for r in ranges
    ]


class KafkaLogBatchReader(DataSourceReader):
    """pyspark ``DataSourceReader`` of a batch query (Spark's ``KafkaBatch``). Holds only the
    parsed options; the ranges are fixed in :meth:`partitions` on the driver."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

    def partitions(self) -> list[KafkaLogInputPartition]:
        freeze_gc_in_reused_worker()  # the planning worker is reused and collected after each call too
        return to_input_partitions(plan_batch(self.opts), self.opts, self.opts.starting.option)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaLogInputPartition):
            return iter(())  # Spark's stand-in InputPartition(None) when there is nothing to read
        return read_partition(partition)
