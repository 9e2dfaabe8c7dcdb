"""The row-based sink: the ``kafkalog`` write as it was before it appended Arrow, kept as the
baseline of ``benches/bench_spark_write.py`` (and tested to give the same logs).

Each task routes its rows with Kafka's partitioner in Python (:mod:`.partitioner`, memoised)
and hands the native row append one (key, value, headers, timestamp) tuple per record: a few
Python objects per row. :class:`KafkaLogRowDataSource` (format ``kafkalog-rows``) selects it;
its options, columns, locking and errors are those of ``kafkalog`` (:mod:`.writer`).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ..exceptions import InvalidRecordError
from .batch_limits import row_bounds
from .partitioner import murmur2
from .sink import NativeRecord, RowTaskSink, TaskSink
from .source import KafkaLogDataSource
from .write_options import WriteOptions
from .writer import KafkaLogCommitMessage, TaskWrite, _binary, _Rows, refuse_what_cannot_fit, sink_columns

__all__ = ["KafkaLogRowDataSource", "KafkaLogRowWriter", "RowTaskWrite"]


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


class RowTaskWrite(TaskWrite):
    """A write task of the row-based sink. Not thread-safe."""

    def __init__(self, opts: WriteOptions) -> None:
        super().__init__(opts)
        self.hashes: dict[bytes, int] = {}

    def new_sink(self) -> TaskSink:
        return RowTaskSink(self.opts)

    def _partitions(self, topic: str, count: int, keys: list[bytes | None], given: list[int | None] | None) -> list[int]:
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

    def route(self, batch: pa.RecordBatch, topic: str, sink: TaskSink, rows: _Rows) -> None:
        """Splits ``batch`` by partition with pyarrow masks and hands each partition's rows to
        the sink as native tuples, after refusing a row that could never fit in a batch."""
        names = batch.schema.names
        cols = sink_columns(batch)
        keys, values = _binary(cols.column(0)), _binary(cols.column(1))
        headers = cols.column(2) if cols.num_columns > 2 else None
        given = batch.column(names.index("partition")).to_pylist() if "partition" in names else None
        count = len(sink.partitions_of(topic))
        pids = pa.array(self._partitions(topic, count, keys.to_pylist(), given), pa.int32())
        for p in pc.unique(pids).to_pylist():
            mask = pc.equal(pids, p)
            k, v = keys.filter(mask), values.filter(mask)
            h = headers.filter(mask) if headers is not None and headers.filter(mask).null_count < len(k) else None
            bounds = row_bounds(k, v, h)
            size = pc.sum(bounds).as_py() or 0
            if (pc.max(bounds).as_py() or 0) > self.opts.max_single_record:
                part = cols.filter(mask)
                tp = (topic, p)
                refuse_what_cannot_fit(self.opts, part, bounds, lambda _: tp, rows.subset(mask))
            records: list[NativeRecord]
            if h is not None:
                records = list(zip(k.to_pylist(), v.to_pylist(), _native_headers(h, topic), repeat(None)))
            else:
                records = list(zip(k.to_pylist(), v.to_pylist(), repeat([]), repeat(None)))
            sink.add((topic, p), records, len(records), size)


class KafkaLogRowWriter(DataSourceArrowWriter):
    """The row-based ``DataSourceArrowWriter`` (the bench's baseline): a :class:`RowTaskWrite`
    per task. Holds only the parsed options."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaLogCommitMessage:
        return RowTaskWrite(self.opts).run(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to do (at-least-once, as ``kafkalog``)."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing can be undone (at-least-once, as ``kafkalog``)."""


class KafkaLogRowDataSource(KafkaLogDataSource):
    """The ``kafkalog`` data source with the row-based writer, as format ``kafkalog-rows``."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog-rows"

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        base = super().writer(schema, overwrite)
        assert hasattr(base, "opts")
        return KafkaLogRowWriter(base.opts)
