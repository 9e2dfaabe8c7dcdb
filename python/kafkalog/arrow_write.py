"""Arrow input for the engine: the record batches of :meth:`kafkalog.UnifiedLog.append_arrow`
and Kafka's default partitioner over an Arrow key column. The engine reads the Arrow buffers in
place through Arrow's C data interface (the Arrow PyCapsule interface, ``__arrow_c_array__``):
no Python object per record, and the GIL released for the per-row work.

The columns are those of Spark's Kafka sink: ``value`` (binary or string, nullable) required;
``key`` (binary or string, nullable), ``headers`` (``list<struct<key: string, value:
binary>>``), ``timestamp`` (a timestamp of any unit, null for now), ``partition`` (int32) and
``topic`` (string) optional; other columns are ignored. ``large_`` variants, sliced arrays and
columns of type ``null`` are accepted.

Pure functions; thread-safe.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import pyarrow as pa

from . import _arguments as arg
from . import _native
from .exceptions import InvalidArgumentTypeError

__all__ = ["ArrowData", "record_batch_capsules", "partitions_for_keys"]

#: What :meth:`kafkalog.UnifiedLog.append_arrow` takes.
ArrowData: TypeAlias = pa.Table | pa.RecordBatch | pa.RecordBatchReader

_Capsules = tuple[object, object]


def record_batch_capsules(data: Any, name: str = "data") -> list[_Capsules]:
    """The ``__arrow_c_array__`` capsules of each record batch of ``data``: a pyarrow ``Table``,
    ``RecordBatch`` or ``RecordBatchReader`` (read to its end: an append checks every row
    before it writes), or any object of the Arrow PyCapsule interface (``__arrow_c_stream__``
    or a struct array's ``__arrow_c_array__``)."""
    batches: list[Any]
    if isinstance(data, pa.RecordBatch):
        batches = [data]
    elif isinstance(data, pa.Table):
        batches = data.to_batches()
    elif isinstance(data, pa.RecordBatchReader):
        batches = list(data)
    elif hasattr(data, "__arrow_c_stream__"):
        batches = list(pa.RecordBatchReader.from_stream(data))
    elif hasattr(data, "__arrow_c_array__"):
        batches = [data]
    else:
        raise InvalidArgumentTypeError(
            f"{name} must be a pyarrow Table, RecordBatch or RecordBatchReader, not {type(data).__name__}"
        )
    return [b.__arrow_c_array__() for b in batches]


def partitions_for_keys(
    keys: pa.Array | pa.ChunkedArray, num_partitions: int, *, round_robin_start: int = 0
) -> pa.Int32Array:
    """The partition Kafka's default partitioner (``BuiltInPartitioner.partitionForKey``) picks
    for each key: ``toPositive(murmur2(key)) % num_partitions``, computed natively. The ``k``-th
    null key takes ``(round_robin_start + k) % num_partitions``, as the Spark writer deals null
    keys round-robin. ``keys`` is binary, string, their ``large_`` variants, or ``null``."""
    num_partitions = arg.integer("num_partitions", num_partitions, 1, arg.I32_MAX)
    round_robin_start = arg.integer("round_robin_start", round_robin_start, 0, arg.I64_MAX)
    if isinstance(keys, pa.ChunkedArray):
        chunks = [c.__arrow_c_array__() for c in keys.chunks]
    elif isinstance(keys, pa.Array):
        chunks = [keys.__arrow_c_array__()]
    else:
        raise InvalidArgumentTypeError(f"keys must be a pyarrow Array or ChunkedArray, not {type(keys).__name__}")
    values = _native.partitions_for_keys(chunks, num_partitions, round_robin_start)
    out = pa.Array.from_buffers(pa.int32(), len(keys), [None, pa.py_buffer(values)])
    assert isinstance(out, pa.Int32Array)
    return out
