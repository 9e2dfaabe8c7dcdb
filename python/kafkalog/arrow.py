"""Arrow tables with the columns of Spark's Kafka source, built from the native column buffers
without a Python object per record."""

from __future__ import annotations

import pyarrow as pa

from ._native import ArrowColumns, BinaryBuffers

__all__ = ["KAFKA_SCHEMA", "columns_to_record_batch"]

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))

#: Spark's Kafka source schema: key, value, topic, partition, offset, timestamp, timestampType, headers.
KAFKA_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
        pa.field("headers", HEADER_TYPE),
    ]
)


def _binary(col: BinaryBuffers, rows: int, type_: pa.DataType) -> pa.Array:
    validity = pa.py_buffer(col.validity) if col.nulls else None
    return pa.Array.from_buffers(
        type_,
        rows,
        [validity, pa.py_buffer(col.offsets), pa.py_buffer(col.data)],
        null_count=col.nulls,
    )


def columns_to_record_batch(cols: ArrowColumns) -> pa.RecordBatch:
    """Wraps the buffers returned by the native `read_columns` as a RecordBatch of KAFKA_SCHEMA."""
    rows = cols.rows
    n_headers = cols.header_count
    header_struct = pa.StructArray.from_arrays(
        [
            _binary(cols.header_key, n_headers, pa.string()),
            _binary(cols.header_value, n_headers, pa.binary()),
        ],
        fields=list(HEADER_TYPE.value_type),
    )
    headers = pa.Array.from_buffers(HEADER_TYPE, rows, [None, pa.py_buffer(cols.header_offsets)], children=[header_struct])

    def fixed(buffer: object, type_: pa.DataType) -> pa.Array:
        return pa.Array.from_buffers(type_, rows, [None, pa.py_buffer(buffer)])

    return pa.RecordBatch.from_arrays(
        [
            _binary(cols.key, rows, pa.binary()),
            _binary(cols.value, rows, pa.binary()),
            _binary(cols.topic, rows, pa.string()),
            fixed(cols.partition, pa.int32()),
            fixed(cols.offset, pa.int64()),
            fixed(cols.timestamp, pa.timestamp("us", tz="UTC")),
            fixed(cols.timestamp_type, pa.int32()),
            headers,
        ],
        schema=KAFKA_SCHEMA,
    )
