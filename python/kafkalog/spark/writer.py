"""Batch writes: ``df.write.format("kafkalog").option("path", ...).option("topic", ...)``.

:class:`KafkaLogWriter` implements pyspark's ``DataSourceArrowWriter`` (Spark's Kafka sink,
``KafkaWriter`` / ``KafkaWriteTask``). Columns, as Spark's Kafka sink takes them: ``value``
(binary or string) required; ``key`` (binary or string), ``headers``
(array<struct<key:string,value:binary>>), ``topic`` (string) and ``partition`` (int) optional.
Without a ``partition``, a non-null key goes where Kafka's default partitioner puts it
(``toPositive(murmur2(key)) % numPartitions``) and null keys go round-robin. Each record gets a
CreateTime timestamp of now, as a producer's record without one does.

Each task (:class:`TaskWrite`) stays in Arrow: it computes every row's partition with
:func:`kafkalog.arrow_write.partitions_for_keys` (murmur2 in Rust), splits the batch by a
stable sort on the partition (each partition's rows keep their input order) and hands the
slices to the sink, which appends them with :meth:`kafkalog.UnifiedLog.append_arrow`. The
row-based writer this replaced is :mod:`kafkalog.spark.row_writer` (the bench's baseline).

Delivery semantics: at least once, like Spark's Kafka sink. Each task appends its records to
the logs as it goes (under the partition directory's lock, see :mod:`kafkalog.spark.sink`); a
task that fails and is retried, or a job that fails after some tasks finished, leaves the
records already appended in place, so a retry can write some of them twice. Deduplicate on
read (or by key, through compaction) when that matters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from .. import _native
from ..arrow_write import partitions_for_keys
from ..exceptions import InvalidOptionError, InvalidRecordError, RecordBatchTooLargeError
from .batch_limits import row_bounds
from .sink import PartitionAppend, TaskSink
from .write_options import WriteOptions

__all__ = ["KafkaLogWriter", "KafkaLogCommitMessage", "TaskWrite", "check_write_schema", "sink_columns"]

_HEADERS = ArrayType(StructType().add("key", StringType()).add("value", BinaryType()))


def check_write_schema(schema: StructType, opts: WriteOptions) -> None:
    """Spark's ``KafkaWriter.validateQuery``: the column names and types the sink accepts."""
    types = {f.name: f.dataType for f in schema.fields}
    if "value" not in types:
        raise InvalidRecordError("required column 'value' not found (kafkalog, as Spark's Kafka sink, writes key, value, headers)")
    for name in ("key", "value"):
        if name in types and not isinstance(types[name], (BinaryType, StringType)):
            raise InvalidRecordError(f"column {name!r} must be binary or string, not {types[name].simpleString()}")
    if "topic" in types and not isinstance(types["topic"], StringType):
        raise InvalidRecordError(f"column 'topic' must be string, not {types['topic'].simpleString()}")
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise InvalidRecordError(f"column 'partition' must be int, not {types['partition'].simpleString()}")
    if "headers" in types:
        h = types["headers"]
        element = h.elementType if isinstance(h, ArrayType) else None
        fields = [(f.name, type(f.dataType)) for f in element.fields] if isinstance(element, StructType) else []
        if fields != [("key", StringType), ("value", BinaryType)]:
            raise InvalidRecordError(f"column 'headers' must be {_HEADERS.simpleString()}, not {h.simpleString()}")
    if opts.topic is None and "topic" not in types:
        raise InvalidOptionError("topic", None, "give the 'topic' option or a 'topic' column")


@dataclass(frozen=True)
class KafkaLogCommitMessage(WriterCommitMessage):
    """A task's appends, per partition (first and last offset, record count)."""

    appended: tuple[PartitionAppend, ...]


def _binary(col: pa.Array) -> pa.Array:
    if pa.types.is_string(col.type):
        return col.cast(pa.binary())
    if pa.types.is_large_string(col.type):
        return col.cast(pa.large_binary())
    return col


def _task_index() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _length(b: bytes | None) -> str:
    return "null" if b is None else f"{len(b)} byte{'' if len(b) == 1 else 's'}"


class _Rows:
    """Which rows of the task a filtered batch holds, to name a row in an error (the task's
    rows are numbered from 0 in input order); resolved only when asked."""

    def __init__(self, first: int, parent: _Rows | None = None, mask: pa.Array | None = None) -> None:
        self.first = first
        self.parent = parent
        self.mask = mask  # the filter applied to the parent's rows

    def subset(self, mask: pa.Array) -> _Rows:
        return _Rows(self.first, self, mask)

    def number(self, i: int) -> int:
        """The task's row number of row ``i`` of this batch."""
        rows: _Rows | None = self
        while rows is not None and rows.mask is not None:
            i = pc.indices_nonzero(rows.mask)[i].as_py()
            rows = rows.parent
        return self.first + i



def _row_headers(headers: pa.Array | None, i: int) -> list[tuple[bytes, bytes | None]]:
    """Row ``i``'s headers as the native (key bytes, value bytes or None) pairs."""
    if headers is None or not headers[i].is_valid:
        return []
    out = []
    for h in headers[i].as_py():
        key, value = h["key"], h["value"]
        out.append((key.encode() if isinstance(key, str) else key, value.encode() if isinstance(value, str) else value))
    return out


def refuse_what_cannot_fit(
    opts: WriteOptions, cols: pa.RecordBatch, bounds: pa.Array, tp: Callable[[int], tuple[str, int]], rows: _Rows
) -> None:
    """Builds each row of ``cols`` (key, value, headers) that might not fit alone in a batch, as
    the append would, and raises RecordBatchTooLargeError naming the first that does not
    (``tp`` gives a row's topic and partition)."""
    limit = opts.batch_limit
    codec = opts.compression
    keys, values = _binary(cols.column(0)), _binary(cols.column(1))
    headers = cols.column(2) if cols.num_columns > 2 else None
    for i in pc.indices_nonzero(pc.greater(bounds, opts.max_single_record)).to_pylist():
        key, value, hdrs = keys[i].as_py(), values[i].as_py(), _row_headers(headers, i)
        size = len(_native.build_batch(0, [(0, 0, key, value, hdrs)], codec, -1, -1, -1, False, -1, None))
        if size > limit.bytes:
            topic, partition = tp(i)
            header_bytes = sum(len(a) + len(b or b"") for a, b in hdrs)
            raise RecordBatchTooLargeError(
                f"row {rows.number(i)} of write task {_task_index()} (topic {topic!r}, partition {partition}) "
                f"can never be written: alone in a batch ({codec}) it takes {size} bytes (key "
                f"{_length(key)}, value {_length(value)}, {len(hdrs)} headers of {header_bytes} bytes), "
                f"more than the {limit.describe()}"
            )


def sink_columns(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The columns the log takes, from a Spark batch: ``key`` (all null without a key column),
    ``value`` and, when given, ``headers``; ``topic``, ``partition`` and the rest dropped (a
    record's timestamp is the append's now, as in Spark's Kafka sink)."""
    names = batch.schema.names
    keys = batch.column(names.index("key")) if "key" in names else pa.nulls(batch.num_rows, pa.binary())
    arrays = [keys, batch.column(names.index("value"))]
    fields = ["key", "value"]
    if "headers" in names:
        arrays.append(batch.column(names.index("headers")))
        fields.append("headers")
    return pa.RecordBatch.from_arrays(arrays, names=fields)


class TaskWrite:
    """One write task (Spark's ``KafkaWriteTask``): routes each input batch's rows to their
    partitions with Arrow kernels and Kafka's partitioner in Rust (``partitions_for_keys``),
    and buffers each partition's rows as Arrow for ``append_arrow``. Not thread-safe."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        self.first = _task_index()
        #: The next round-robin turn of each topic's null keys (starting at the task index).
        self.robin: dict[str, int] = {}

    def new_sink(self) -> TaskSink:
        return TaskSink(self.opts, turn=self.first)

    def run(self, iterator: Iterator[pa.RecordBatch]) -> KafkaLogCommitMessage:
        """Writes every batch of the task; returns what it appended."""
        sink = self.new_sink()
        first_row = 0
        try:
            for batch in iterator:
                rows = _Rows(first_row)
                if self.opts.topic is not None:
                    self.route(batch, self.opts.topic, sink, rows)
                else:
                    self._route_by_topic(batch, sink, rows)
                first_row += batch.num_rows
                sink.maybe_flush()
            return KafkaLogCommitMessage(tuple(sink.finish()))
        finally:
            sink.close()

    def _route_by_topic(self, batch: pa.RecordBatch, sink: TaskSink, rows: _Rows) -> None:
        topics = batch.column(batch.schema.get_field_index("topic"))
        if topics.null_count:
            raise InvalidRecordError("a row has a null 'topic' and the write has no 'topic' option")
        for topic in pc.unique(topics).to_pylist():
            mask = pc.equal(topics, topic)
            self.route(batch.filter(mask), topic, sink, rows.subset(mask))

    def partitions(self, batch: pa.RecordBatch, topic: str, count: int) -> pa.Array | None:
        """Each row's partition (int32), or None when all go to partition 0: the ``partition``
        column where not null, else Kafka's partitioner on the key, else the next round-robin
        turn of the topic (a row with a given partition takes no turn)."""
        names = batch.schema.names
        given = batch.column(names.index("partition")) if "partition" in names else None
        if given is not None and given.null_count == 0:
            return given
        if count == 1 and given is None:
            return None
        keys = batch.column(names.index("key")) if "key" in names else pa.nulls(batch.num_rows, pa.binary())
        if given is not None:  # a placeholder key where the partition is given: no turn taken
            keys = pc.if_else(pc.is_null(given), keys, pa.scalar(b"", pa.binary()).cast(keys.type))
        start = self.robin.get(topic, self.first)
        pids = partitions_for_keys(keys, count, round_robin_start=start)
        self.robin[topic] = start + keys.null_count
        return pids if given is None else pc.if_else(pc.is_null(given), pids, given)

    def route(self, batch: pa.RecordBatch, topic: str, sink: TaskSink, rows: _Rows) -> None:
        """Splits ``batch`` (rows of one topic) by partition, keeping the input order within
        each, and hands each partition's rows to the sink, after refusing a row that could
        never fit in a batch (see :mod:`.batch_limits`)."""
        if batch.num_rows == 0:
            return
        pids = self.partitions(batch, topic, len(sink.partitions_of(topic)))
        cols = sink_columns(batch)
        headers = cols.column(2) if cols.num_columns > 2 else None
        bounds = row_bounds(cols.column(0), cols.column(1), headers)
        if (pc.max(bounds).as_py() or 0) > self.opts.max_single_record:
            refuse_what_cannot_fit(self.opts, cols, bounds, lambda i: (topic, 0 if pids is None else pids[i].as_py()), rows)
        if pids is None:
            sink.add((topic, 0), cols, cols.num_rows, cols.nbytes)
            return
        counts = pc.value_counts(pids)
        if len(counts) == 1:
            sink.add((topic, counts[0]["values"].as_py()), cols, cols.num_rows, cols.nbytes)
            return
        order = pc.sort_indices(pids)  # stable: each partition's rows stay in input order
        cols, pids = cols.take(order), pids.take(order)
        at = 0
        for p, n in sorted(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist())):
            part = cols.slice(at, n)
            sink.add((topic, p), part, n, part.nbytes)
            at += n


class KafkaLogWriter(DataSourceArrowWriter):
    """pyspark ``DataSourceArrowWriter`` of a batch write (Spark's ``KafkaWriter``). Holds only
    the parsed options; ``write`` runs once per task on an executor (a :class:`TaskWrite`)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaLogCommitMessage:
        return TaskWrite(self.opts).run(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to do: every task's records are already in the logs (at-least-once)."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing can be undone: records appended by finished tasks stay (at-least-once)."""
