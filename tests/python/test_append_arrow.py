"""``UnifiedLog.append_arrow`` (Spark's Kafka sink columns read in place through Arrow's C data
interface) and ``kafkalog.arrow_write.partitions_for_keys`` (Kafka's default partitioner over
an Arrow key column, in Rust).

The central property: ``append_arrow`` of some rows writes the same segment files, byte for
byte, as ``append`` of the same rows as records. Bad input is refused before anything is
written, with an error naming the row and the column."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog import Record, UnifiedLog
from kafkalog.arrow_write import partitions_for_keys
from kafkalog.exceptions import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidRecordError,
    RecordBatchTooLargeError,
)
from kafkalog.spark.partitioner import murmur2

from kit.kafka_vectors import KAFKA_PARTITION

Snapshot = Callable[[Path], dict[str, tuple[int, int, str]]]
NOW = 1_700_000_000_000
HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]

Row = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None, int | None]


def table_of(rows: list[Row], *, headers: bool = True, timestamps: bool = True) -> pa.Table:
    columns: dict[str, pa.Array] = {
        "key": pa.array([r[0] for r in rows], pa.binary()),
        "value": pa.array([r[1] for r in rows], pa.binary()),
    }
    if headers:
        columns["headers"] = pa.array([r[2] for r in rows], HEADER_TYPE)
    if timestamps:
        columns["timestamp"] = pa.array([r[3] for r in rows], pa.timestamp("ms"))
    return pa.table(columns)


def records_of(rows: list[Row]) -> list[Record]:
    """The records ``append`` takes for ``rows``: no timestamp is NOW, as append_arrow's
    ``timestamp=NOW`` gives them."""
    return [Record(k, v, tuple(h or ()), NOW if ts is None else ts) for k, v, h, ts in rows]


def segment_files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.suffix in (".log", ".index", ".timeindex")}


def both_ways(tmp: Path, rows: list[Row], data: Any, config: dict[str, Any] | None = None, **kwargs: Any) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The segment files of ``append(records_of(rows))`` and of ``append_arrow(data)``, each in
    a fresh log, after close."""
    by_records, by_arrow = tmp / "records" / "t-0", tmp / "arrow" / "t-0"
    with UnifiedLog.open(by_records, config) as log:
        log.append(records_of(rows), **kwargs)
    with UnifiedLog.open(by_arrow, config) as log:
        info = log.append_arrow(data, timestamp=NOW, **kwargs)
        assert (info.first_offset, info.record_count) == (0, len(rows))
    return segment_files(by_records), segment_files(by_arrow)


ROWS: list[Row] = [
    (b"k0", b"v0", [("h", b"x"), ("i", None)], NOW + 5),
    (None, b"tombstone-less", None, None),
    (b"k2", None, [], NOW - 1000),
    (b"", b"", [("", b"")], None),
    (b"k4", b"v" * 300, None, NOW),
]


@pytest.mark.parametrize("codec", CODECS)
def test_same_rows_same_segment_bytes_as_append(tmp_path: Path, codec: str) -> None:
    records, arrow = both_ways(tmp_path, ROWS, table_of(ROWS), compression=codec, batch_size=400)
    assert records == arrow
    assert len(records["00000000000000000000.log"]) > 0


row = st.tuples(
    st.none() | st.binary(max_size=20),
    st.none() | st.binary(max_size=60),
    st.none() | st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=8)), max_size=3),
    st.none() | st.integers(0, NOW),
)


@settings(max_examples=40)
@given(
    rows=st.lists(row, min_size=1, max_size=40),
    batch_size=st.sampled_from([0, 100, 1000, 16384]),
    codec=st.sampled_from(CODECS),
    chunk=st.integers(1, 7),
    skip=st.integers(0, 3),
)
def test_property_arrow_and_records_write_identical_segments(
    tmp_path_factory: pytest.TempPathFactory, rows: list[Row], batch_size: int, codec: str, chunk: int, skip: int
) -> None:
    """Any rows, in chunks of several record batches, sliced out of a bigger table (non-zero
    offsets in every column, the header list's child included)."""
    padding: list[Row] = [(b"pad", b"pad", [("p", b"p")], 1)] * skip
    table = table_of(padding + rows + padding)
    data = pa.Table.from_batches(table.slice(skip, len(rows)).to_batches(max_chunksize=chunk))
    records, arrow = both_ways(tmp_path_factory.mktemp("p"), rows, data, compression=codec, batch_size=batch_size)
    assert records == arrow


def test_every_input_form_and_column_type(tmp_path: Path) -> None:
    """RecordBatch, RecordBatchReader, large and string variants, a null-typed column, every
    timestamp unit (with a time zone too), and no timestamp column."""
    rows: list[Row] = [(b"a", b"1", [("k", b"v")], 1_000), (None, None, None, None), (b"c", b"3", [], 7_000)]
    records = records_of(rows)
    t = table_of(rows)
    forms: dict[str, Any] = {
        "batch": t.combine_chunks().to_batches()[0],
        "reader": pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=1)),
        "large": t.cast(
            pa.schema(
                [
                    ("key", pa.large_binary()),
                    ("value", pa.large_string()),
                    ("headers", pa.large_list(pa.struct([("key", pa.large_string()), ("value", pa.large_binary())]))),
                    ("timestamp", pa.timestamp("ms")),
                ]
            )
        ),
    }
    for unit, scale in [("s", 1 / 1000), ("ms", 1), ("us", 1000), ("ns", 1_000_000)]:
        ts = pa.array([int(1_000 * scale), None, int(7_000 * scale)], pa.timestamp(unit, tz="UTC"))
        forms[unit] = t.set_column(3, "timestamp", ts)
    expected = None
    for name, data in forms.items():
        path = tmp_path / name / "t-0"
        with UnifiedLog.open(path) as log:
            log.append_arrow(data, timestamp=NOW)
            got = [(r.key, r.value, r.headers, r.timestamp) for r in log.records()]
        assert got == [(r.key, r.value, tuple(r.headers), r.timestamp) for r in records], name
        expected = expected or segment_files(path)
        assert segment_files(path) == expected, name
    nulls = pa.table({"key": pa.nulls(2), "value": pa.array(["x", "y"]), "headers": pa.nulls(2)})
    with UnifiedLog.open(tmp_path / "nulls" / "t-0") as log:
        log.append_arrow(nulls, timestamp=NOW)
        assert [(r.key, r.value, r.headers) for r in log.records()] == [(None, b"x", ()), (None, b"y", ())]


def test_a_null_or_missing_timestamp_is_now(tmp_path: Path) -> None:
    with UnifiedLog.open(tmp_path / "t-0") as log:
        before = int(dt.datetime.now().timestamp() * 1000)
        log.append_arrow(pa.table({"value": [b"x"]}))
        after = int(dt.datetime.now().timestamp() * 1000)
        (record,) = log.records()
        assert before <= record.timestamp <= after


def test_the_partition_and_topic_columns_must_name_this_log(tmp_path: Path) -> None:
    """A single log does not route: a null or its own partition and topic pass; another is refused."""
    with UnifiedLog.open(tmp_path / "orders-3") as log:
        ok = pa.table({"value": [b"a", b"b"], "partition": pa.array([3, None], pa.int32()), "topic": ["orders", None]})
        assert log.append_arrow(ok).record_count == 2
        with pytest.raises(InvalidRecordError, match=r"row 1 of data, column 'partition', is 4, but this log is orders-3"):
            log.append_arrow(pa.table({"value": [b"a", b"b"], "partition": pa.array([3, 4], pa.int32())}))
        with pytest.raises(InvalidRecordError, match=r"row 0 of data, column 'topic', is \"payments\""):
            log.append_arrow(pa.table({"value": [b"a"], "topic": ["payments"]}))
        assert log.log_end_offset == 2


def bad_inputs() -> dict[str, tuple[Any, type[Exception], str]]:
    value = pa.array([b"v0", b"v1", b"v2"])
    headers = pa.array([[], [("k", b"v"), (None, b"x")], []], HEADER_TYPE)
    good = pa.record_batch({"key": pa.array([b"a", b"b", b"c"]), "value": value, "headers": pa.array([[]] * 3, HEADER_TYPE)})
    bad = pa.record_batch({"key": pa.array([b"a", b"b", b"c"]), "value": value, "headers": headers})
    null_entry = pa.ListArray.from_arrays(
        pa.array([0, 0, 1, 1], pa.int32()),
        pa.StructArray.from_arrays([pa.array(["k"]), pa.array([b"v"])], names=["key", "value"], mask=pa.array([True])),
    )
    return {
        "not arrow": ([(b"k", b"v")], InvalidArgumentTypeError, "data must be a pyarrow Table, RecordBatch or RecordBatchReader, not list"),
        "no value column": (pa.table({"key": [b"k"]}), InvalidArgumentError, r"columns \[key\] for data: must have a 'value' column"),
        "int key": (pa.table({"key": [1], "value": [b"v"]}), InvalidArgumentError, "int64 for the type of data column 'key'"),
        "string_view": (pa.table({"value": pa.array(["v"], pa.string_view())}), InvalidArgumentError, "string_view for the type of data column 'value'"),
        "dictionary": (pa.table({"value": pa.array(["v"]).dictionary_encode()}), InvalidArgumentError, r"dictionary<values=string, indices=int32> for the type of data column 'value'"),
        "headers as map": (
            pa.table({"value": [b"v"], "headers": pa.array([[("k", b"v")]], pa.map_(pa.string(), pa.binary()))}),
            InvalidArgumentError,
            "map for the type of data column 'headers'",
        ),
        "int partition 64": (pa.table({"value": [b"v"], "partition": pa.array([0], pa.int64())}), InvalidArgumentError, "int64 for the type of data column 'partition'"),
        "null header key": (pa.Table.from_batches([good, bad]), InvalidRecordError, r"row 4 of data, column 'headers', has a null key in header 1"),
        "null header": (pa.table({"value": value, "headers": null_entry}), InvalidRecordError, r"row 1 of data, column 'headers', has a null header at position 0"),
        "negative timestamp": (
            pa.table({"value": value, "timestamp": pa.array([0, None, -1], pa.timestamp("ms"))}),
            InvalidRecordError,
            r"row 2 of data, column 'timestamp', is -1",
        ),
        "empty": (pa.table({"value": pa.array([], pa.binary())}), InvalidRecordError, "no records to append"),
    }


@pytest.mark.parametrize("case", list(bad_inputs()))
def test_bad_input_names_row_and_column_and_writes_nothing(tmp_path: Path, snapshot_dir: Snapshot, case: str) -> None:
    data, error, message = bad_inputs()[case]
    path = tmp_path / "t-0"
    with UnifiedLog.open(path) as log:
        log.append_arrow(pa.table({"value": [b"first"]}), timestamp=NOW)
        log.flush()
        before = snapshot_dir(path)
        with pytest.raises(error, match=message):
            log.append_arrow(data)
        assert snapshot_dir(path) == before
        assert log.log_end_offset == 1


def test_a_compacted_topic_refuses_a_null_key_by_row(tmp_path: Path, snapshot_dir: Snapshot) -> None:
    with UnifiedLog.open(tmp_path / "t-0", {"cleanup.policy": "compact"}) as log:
        before = snapshot_dir(tmp_path)
        with pytest.raises(InvalidRecordError, match=r"row 1 of data, column 'key', is null; a compacted topic"):
            log.append_arrow(pa.table({"key": [b"a", None], "value": [b"1", b"2"]}))
        assert snapshot_dir(tmp_path) == before


def test_an_oversized_record_is_named_before_anything_is_written(tmp_path: Path, snapshot_dir: Snapshot) -> None:
    """A row that cannot fit alone in a batch of max.message.bytes (Kafka's producer raises
    RecordTooLargeException), named with its sizes, even when earlier batches would fit."""
    with UnifiedLog.open(tmp_path / "t-0", {"max.message.bytes": 1000}) as log:
        before = snapshot_dir(tmp_path)
        data = pa.table({"key": [b"a", b"b", b"c"], "value": [b"x" * 10, b"y" * 2000, b"z"]})
        with pytest.raises(
            RecordBatchTooLargeError,
            match=r"row 1 \(key 1 bytes, value 2000 bytes, 0 headers of 0 bytes\) alone in a batch \(none\) takes \d+ bytes, "
            r"more than max.message.bytes=1000",
        ):
            log.append_arrow(data, batch_size=100)
        assert snapshot_dir(tmp_path) == before
        # Compressed, the same row fits: the limit applies to the batch as written.
        assert log.append_arrow(data, batch_size=100, compression="zstd").record_count == 3


def test_a_reader_is_read_whole_before_anything_is_written(tmp_path: Path, snapshot_dir: Snapshot) -> None:
    schema = pa.schema([("value", pa.binary()), ("timestamp", pa.timestamp("ms"))])
    batches = [
        pa.record_batch([pa.array([b"a", b"b"]), pa.array([1, 2], pa.timestamp("ms"))], schema=schema),
        pa.record_batch([pa.array([b"c"]), pa.array([-5], pa.timestamp("ms"))], schema=schema),
    ]
    with UnifiedLog.open(tmp_path / "t-0") as log:
        before = snapshot_dir(tmp_path)
        with pytest.raises(InvalidRecordError, match="row 2 of data, column 'timestamp'"):
            log.append_arrow(pa.RecordBatchReader.from_batches(schema, batches))
        assert snapshot_dir(tmp_path) == before


def test_partitions_for_keys_match_kafka() -> None:
    for (key, n), partition in KAFKA_PARTITION.items():
        assert partitions_for_keys(pa.array([key]), n).to_pylist() == [partition], (key, n)
        assert partitions_for_keys(pa.array([key], pa.large_binary()), n).to_pylist() == [partition]


@settings(max_examples=50)
@given(keys=st.lists(st.none() | st.binary(max_size=40), max_size=60), n=st.integers(1, 50), start=st.integers(0, 100), chunk=st.integers(1, 9))
def test_partitions_for_keys_match_the_python_partitioner(keys: list[bytes | None], n: int, start: int, chunk: int) -> None:
    """Chunked (round-robin continuing across chunks) and sliced: as the Spark writer's router
    deals them, murmur2 for keys and turns from ``start`` for nulls."""
    expected, turn = [], start
    for key in keys:
        if key is None:
            expected.append(turn % n)
            turn += 1
        else:
            expected.append((murmur2(key) & 0x7FFFFFFF) % n)
    padded = pa.array([b"x"] + keys, pa.binary()).slice(1)
    chunked = pa.chunked_array([padded[i : i + chunk] for i in range(0, len(keys), chunk)], pa.binary())
    assert partitions_for_keys(chunked, n, round_robin_start=start).to_pylist() == expected
    assert partitions_for_keys(padded, n, round_robin_start=start).to_pylist() == expected


def test_partitions_for_keys_refuses_bad_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="num_partitions"):
        partitions_for_keys(pa.array([b"k"]), 0)
    with pytest.raises(InvalidArgumentError, match="int64 for the type of data column 'key'"):
        partitions_for_keys(pa.array([1]), 3)
    with pytest.raises(InvalidArgumentTypeError, match="keys must be a pyarrow Array"):
        partitions_for_keys([b"k"], 3)  # type: ignore[arg-type]
    assert partitions_for_keys(pa.array(["k", None], pa.string()), 7).to_pylist() == [
        partitions_for_keys(pa.array([b"k"]), 7)[0].as_py(),
        0,
    ]
