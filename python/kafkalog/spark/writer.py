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

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from ..exceptions import InvalidOptionError, InvalidRecordError
from ..records import Record
from .partitioner import partition_for_key
from .sink import PartitionAppend, TaskSink
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


def _bytes_column(batch: pa.RecordBatch, name: str) -> list[bytes | None] | None:
    idx = batch.schema.get_field_index(name)
    if idx < 0:
        return None
    col = batch.column(idx)
    if pa.types.is_string(col.type):
        col = col.cast(pa.binary())
    elif pa.types.is_large_string(col.type):
        col = col.cast(pa.large_binary())
    values: list[bytes | None] = col.to_pylist()
    return values


def _column(batch: pa.RecordBatch, name: str) -> list[object] | None:
    idx = batch.schema.get_field_index(name)
    return None if idx < 0 else list(batch.column(idx).to_pylist())


def _task_index() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


class KafkaLogWriter(DataSourceArrowWriter):
    """pyspark ``DataSourceArrowWriter`` of a batch write (Spark's ``KafkaWriter``). Holds only
    the parsed options; ``write`` runs once per task on an executor."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaLogCommitMessage:
        sink = TaskSink(self.opts)
        robin: dict[str, int] = {}
        first = _task_index()
        try:
            for batch in iterator:
                self._route(batch, sink, robin, first)
                sink.maybe_flush()
            return KafkaLogCommitMessage(tuple(sink.finish()))
        finally:
            sink.close()

    def _route(self, batch: pa.RecordBatch, sink: TaskSink, robin: dict[str, int], first: int) -> None:
        n = batch.num_rows
        values = _bytes_column(batch, "value")
        assert values is not None
        keys = _bytes_column(batch, "key") or [None] * n
        topics = None if self.opts.topic is not None else _column(batch, "topic")
        parts = _column(batch, "partition")
        headers = _column(batch, "headers")
        counts: dict[str, int] = {}
        for i in range(n):
            topic = self.opts.topic if topics is None else topics[i]
            if not isinstance(topic, str):
                raise InvalidRecordError("a row has a null 'topic' and the write has no 'topic' option")
            count = counts.get(topic)
            if count is None:
                count = counts[topic] = len(sink.partitions_of(topic))
            key, value = keys[i], values[i]
            p = parts[i] if parts is not None else None
            if not isinstance(p, int):
                if key is not None:
                    p = partition_for_key(key, count)
                else:
                    turn = robin.get(topic, first)
                    robin[topic] = turn + 1
                    p = turn % count
            size = len(key or b"") + len(value or b"")
            row_headers = headers[i] if headers is not None else None
            if row_headers:
                pairs = []
                for h in row_headers:  # type: ignore[attr-defined]
                    if h is None or h["key"] is None:
                        raise InvalidRecordError(f"a row of topic {topic!r} has a null header or header key")
                    pairs.append((h["key"], h["value"]))
                    size += len(h["key"]) + len(h["value"] or b"")
                sink.add((topic, p), Record(key, value, tuple(pairs)), size)
            else:
                sink.add((topic, p), (key, value), size)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to do: every task's records are already in the logs (at-least-once)."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing can be undone: records appended by finished tasks stay (at-least-once)."""
