"""Batch writes: ``df.write.format("kafkalog").option("path", ...).option("topic", ...)``.

:class:`KafkaLogWriter` implements pyspark's ``DataSourceArrowWriter`` (Spark's Kafka sink,
``KafkaWriter`` / ``KafkaWriteTask``). Columns, as Spark's Kafka sink takes them: ``value``
(binary or string) required; ``key`` (binary or string), ``headers``
(array<struct<key:string,value:binary>>), ``topic`` (string) and ``partition`` (int) optional.
Without a ``partition``, a non-null key goes where Kafka's default partitioner puts it
(``toPositive(murmur2(key)) % numPartitions``) and null keys go round-robin. Each record gets a
CreateTime timestamp of now, as a producer's record without one does.

Delivery semantics: at least once, like Spark's Kafka sink. Each task appends its records to
the logs as it goes (under the partition directory's lock, see :mod:`kafkalog.spark.sink`); a
task that fails and is retried, or a job that fails after some tasks finished, leaves the
records already appended in place, so a retry can write some of them twice. Deduplicate on
read (or by key, through compaction) when that matters.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from .. import _native
from ..exceptions import InvalidOptionError, InvalidRecordError, RecordBatchTooLargeError
from .batch_limits import row_bounds
from .partitioner import murmur2
from .sink import NativeRecord, PartitionAppend, TaskSink
from .write_options import WriteOptions

__all__ = ["KafkaLogWriter", "KafkaLogCommitMessage", "check_write_schema"]

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


class _Router:
    """Chooses each row's partition: the ``partition`` column, else Kafka's partitioner on
    the key (memoised: change streams repeat keys), else round-robin for null keys."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.robin: dict[str, int] = {}
        self.hashes: dict[bytes, int] = {}

    def partitions(self, topic: str, count: int, keys: list[bytes | None], given: list[int | None] | None) -> list[int]:
        hashes = self.hashes
        if len(hashes) > 1_000_000:
            hashes.clear()
        out = []
        for i, key in enumerate(keys):
            p = given[i] if given is not None else None
            if p is None:
                if key is not None:
                    h = hashes.get(key)
                    if h is None:
                        h = hashes[key] = murmur2(key) & 0x7FFFFFFF
                    p = h % count
                else:
                    turn = self.robin.get(topic, self.first)
                    self.robin[topic] = turn + 1
                    p = turn % count
            out.append(p)
        return out


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


def _native_headers(column: pa.Array, topic: str) -> list[list[tuple[bytes, bytes | None]]]:
    """Each row's headers as (key bytes, value bytes or None) pairs, from the Arrow
    ``array<struct<key: string, value: binary>>`` column: the keys and values are converted
    once for the whole column, then split by the list offsets (a null row has no headers)."""
    if not isinstance(column, pa.ListArray | pa.LargeListArray):
        raise InvalidRecordError(f"the 'headers' column of topic {topic!r} is {column.type}, not array<struct<key, value>>")
    entries = column.values
    if entries.null_count:
        raise InvalidRecordError(f"a row of topic {topic!r} has a null header")
    keys = entries.field("key")
    if keys.null_count:
        raise InvalidRecordError(f"a row of topic {topic!r} has a null header key")
    key_bytes = _binary(keys).to_pylist()
    value_bytes = _binary(entries.field("value")).to_pylist()
    offsets = column.offsets.to_pylist()
    valid = column.is_valid().to_pylist()
    return [
        list(zip(key_bytes[offsets[i] : offsets[i + 1]], value_bytes[offsets[i] : offsets[i + 1]])) if valid[i] else []
        for i in range(len(column))
    ]


class KafkaLogWriter(DataSourceArrowWriter):
    """pyspark ``DataSourceArrowWriter`` of a batch write (Spark's ``KafkaWriter``). Holds only
    the parsed options; ``write`` runs once per task on an executor."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaLogCommitMessage:
        sink = TaskSink(self.opts)
        router = _Router(_task_index())
        first_row = 0
        try:
            for batch in iterator:
                rows = _Rows(first_row)
                if self.opts.topic is not None:
                    self._route(batch, self.opts.topic, sink, router, rows)
                else:
                    self._route_by_topic(batch, sink, router, rows)
                first_row += batch.num_rows
                sink.maybe_flush()
            return KafkaLogCommitMessage(tuple(sink.finish()))
        finally:
            sink.close()

    def _route_by_topic(self, batch: pa.RecordBatch, sink: TaskSink, router: _Router, rows: _Rows) -> None:
        topics = batch.column(batch.schema.get_field_index("topic"))
        if topics.null_count:
            raise InvalidRecordError("a row has a null 'topic' and the write has no 'topic' option")
        for topic in pc.unique(topics).to_pylist():
            mask = pc.equal(topics, topic)
            self._route(batch.filter(mask), topic, sink, router, rows.subset(mask))

    def _route(self, batch: pa.RecordBatch, topic: str, sink: TaskSink, router: _Router, rows: _Rows) -> None:
        """Splits ``batch`` (rows of one topic) by partition with pyarrow and hands each
        partition's rows to the sink as the native (key, value, headers, timestamp) tuples,
        after refusing a row that could never fit in a batch (see :mod:`.batch_limits`)."""
        names = batch.schema.names
        keys = _binary(batch.column(names.index("key"))) if "key" in names else pa.nulls(batch.num_rows, pa.binary())
        values = _binary(batch.column(names.index("value")))
        given = batch.column(names.index("partition")).to_pylist() if "partition" in names else None
        headers = batch.column(names.index("headers")) if "headers" in names else None
        count = len(sink.partitions_of(topic))
        pids = pa.array(router.partitions(topic, count, keys.to_pylist(), given), pa.int32())
        for p in pc.unique(pids).to_pylist():
            mask = pc.equal(pids, p)
            k, v = keys.filter(mask), values.filter(mask)
            h = headers.filter(mask) if headers is not None and headers.filter(mask).null_count < len(k) else None
            bounds = row_bounds(k, v, h)
            size = pc.sum(bounds).as_py() or 0
            records: list[NativeRecord]
            if h is not None:
                records = list(zip(k.to_pylist(), v.to_pylist(), _native_headers(h, topic), repeat(None)))
            else:
                records = list(zip(k.to_pylist(), v.to_pylist(), repeat([]), repeat(None)))
            if (pc.max(bounds).as_py() or 0) > self.opts.max_single_record:
                self._refuse_what_cannot_fit(records, bounds, (topic, p), rows.subset(mask))
            sink.add((topic, p), records, size)

    def _refuse_what_cannot_fit(self, records: list[NativeRecord], bounds: pa.Array, tp: tuple[str, int], rows: _Rows) -> None:
        """Builds each row that might not fit alone in a batch, as the append would, and raises
        RecordBatchTooLargeError naming the first that does not."""
        limit = self.opts.batch_limit
        codec = self.opts.compression
        for i in pc.indices_nonzero(pc.greater(bounds, self.opts.max_single_record)).to_pylist():
            key, value, hdrs, _ = records[i]
            size = len(_native.build_batch(0, [(0, 0, key, value, hdrs)], codec, -1, -1, -1, False, -1, None))
            if size > limit.bytes:
                header_bytes = sum(len(a) + len(b or b"") for a, b in hdrs)
                raise RecordBatchTooLargeError(
                    f"row {rows.number(i)} of write task {_task_index()} (topic {tp[0]!r}, partition {tp[1]}) "
                    f"can never be written: alone in a batch ({codec}) it takes {size} bytes (key "
                    f"{_length(key)}, value {_length(value)}, {len(hdrs)} headers of {header_bytes} bytes), "
                    f"more than the {limit.describe()}"
                )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to do: every task's records are already in the logs (at-least-once)."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing can be undone: records appended by finished tasks stay (at-least-once)."""
