"""The pieces of the data source that need no Spark session: lazy imports, picklable errors,
option parsing, Spark's range splitting and rate limiting."""

from __future__ import annotations

import os
import pickle
import random
import struct
import subprocess
import sys

import pyarrow as pa
import pytest

from kafkalog import UnifiedLog, _native
from kafkalog.exceptions import DataLossError, InvalidConfigError, InvalidOptionError, OffsetOutOfRangeError
from kafkalog.spark.batch_limits import BatchLimit, batch_limit, compressed_bound, grouping_size, max_single_record, row_bounds
from kafkalog.spark.offsets import OffsetRange, split_ranges
from kafkalog.spark.options import parse_read_options
from kafkalog.spark.stream import rate_limit

pytestmark = pytest.mark.spark


def test_import_starts_nothing_and_loads_no_pyspark() -> None:
    code = (
        "import sys, threading, kafkalog, kafkalog.spark\n"
        "assert not any(m == 'pyspark' or m.startswith('pyspark.') for m in sys.modules), 'pyspark imported'\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_errors_pickle_with_their_fields() -> None:
    for cls, base in ((InvalidOptionError, InvalidConfigError), (DataLossError, OffsetOutOfRangeError)):
        err = cls("startingOffsets", '{"t": {"0": 5}}', "offset 5 is below the log start offset 10")
        back = pickle.loads(pickle.dumps(err))
        assert isinstance(back, base) and type(back) is cls
        assert (back.option, back.value, back.reason) == (err.option, err.value, err.reason)
        assert str(back) == str(err) and "startingOffsets" in str(back) and '{"t": {"0": 5}}' in str(back)


def test_options_are_case_insensitive_and_keep_sparks_names() -> None:
    opts = parse_read_options(
        {"path": "/x", "startingoffsets": '{"t": {"0": 3, "1": -2}}', "FAILONDATALOSS": "False", "subscribe": "t"},
        streaming=False,
    )
    assert opts.starting.kind == "offsets" and opts.starting.option == "startingOffsets"
    assert opts.starting.offsets == {("t", 0): 3, ("t", 1): -2}
    assert opts.fail_on_data_loss is False and opts.ending.kind == "latest" and opts.isolation == "read_uncommitted"
    stream = parse_read_options({"path": "/x", "subscribe": "t"}, streaming=True)
    assert stream.starting.kind == "latest"  # Spark's streaming default
    with pytest.raises(InvalidOptionError, match=r"'maxOffsetsPerTrigger' = '-3'"):
        parse_read_options({"path": "/x", "maxOffsetsPerTrigger": "-3"}, streaming=True)
    with pytest.raises(InvalidOptionError, match=r"'subscribePattern' = '\(oops'.*regular expression"):
        parse_read_options({"path": "/x", "subscribePattern": "(oops"}, streaming=False)


def test_split_ranges_as_sparks_range_calculator() -> None:
    big, small = OffsetRange("t", 0, "/t-0", 10, 110), OffsetRange("t", 1, "/t-1", 0, 10)
    assert split_ranges([big, small], None) == [big, small]
    assert split_ranges([big, small], 2) == [big, small]
    parts = split_ranges([big, small, OffsetRange("t", 2, "/t-2", 5, 5)], 6)
    assert [(r.partition, r.start, r.end) for r in parts] == [(0, 10, 30), (0, 30, 50), (0, 50, 70), (0, 70, 90), (0, 90, 110), (1, 0, 10)]


def test_rate_limit_as_sparks_kafka_source() -> None:
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 7}
    latest = {("t", 0): 1000, ("t", 1): 2, ("t", 2): 7}
    assert rate_limit(start, latest, 100) == {("t", 0): 99, ("t", 1): 1, ("t", 2): 7}  # ceil below 1, floor above
    assert rate_limit(start, latest, 10_000) == latest


@pytest.mark.parametrize("reuse", [None, "1"])
def test_gc_is_frozen_only_in_reused_pyspark_workers(reuse: str | None) -> None:
    """freeze_gc_in_reused_worker acts once, and only where pyspark's daemon reuses the worker
    (SPARK_REUSE_WORKER set); the driver and plain Python keep a normal collector."""
    code = (
        "import gc\n"
        "from kafkalog.spark.reader import freeze_gc_in_reused_worker\n"
        "freeze_gc_in_reused_worker()\n"
        "first = gc.get_freeze_count()\n"
        "freeze_gc_in_reused_worker()\n"
        "print(first, gc.get_freeze_count())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REUSE_WORKER"}
    if reuse is not None:
        env["SPARK_REUSE_WORKER"] = reuse
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    first, second = int(out[0]), int(out[1])
    if reuse is None:
        assert (first, second) == (0, 0)
    else:
        assert first > 1000 and second == first, "frozen once, not again"


# -- batch sizes (kafkalog.spark.batch_limits) ------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("limit", [1048576, 262144, 20000, 3000])
def test_batches_grouped_for_a_limit_fit_it_whatever_the_codec(tmp_path, codec: str, limit: int) -> None:
    """Incompressible records (the codecs' worst case) of many sizes, grouped with
    grouping_size: the engine, whose segment size is the limit, accepts every batch, and the
    largest batch comes close to the limit. max_single_record is exact for its bound."""
    payload = max_single_record(limit, codec)
    assert 61 + compressed_bound(codec, payload) <= limit < 61 + compressed_bound(codec, payload + 1)
    rng = random.Random(limit)
    batch_size = grouping_size(limit, codec, 1 << 20)
    largest = 0
    with UnifiedLog.open(tmp_path / "t-0", {"internal.segment.bytes": str(limit), "max.message.bytes": str(limit)}) as log:
        for size in (8, 60, 300, 2000):
            records = [(None, rng.randbytes(rng.randrange(1, size)), [], None) for _ in range(3 * limit // size)]
            records += [(b"k", rng.randbytes(max(payload - 60, 1)), [(b"h", b"x")], None)]  # near the biggest that fits alone
            log._log.append_records(records, codec, 0, batch_size, 1_700_000_000_000)
        for seg in log.segments:
            data = open(seg.path, "rb").read()
            pos = 0
            while pos + 12 <= len(data):
                (length,) = struct.unpack_from(">i", data, pos + 8)
                largest = max(largest, 12 + length)
                pos += 12 + length
    assert largest <= limit
    assert largest > limit * 0.8 - 200  # not needlessly small (gzip and snappy keep 1/8 and 1/6 spare)


def test_batch_limit_resolves_the_segment_size_as_the_engine() -> None:
    assert batch_limit({}).bytes == 1048588  # max.message.bytes' default; segment.bytes 1 GiB
    assert batch_limit({"max.message.bytes": "5000000", "segment.bytes": "1048576"}) == BatchLimit(5000000, 1048576, "segment.bytes")
    limit = batch_limit({"segment.bytes": "1073741824", "internal.segment.bytes": "262144"})
    assert (limit.bytes, limit.segment_key) == (262144, "internal.segment.bytes")
    assert "the smaller of max.message.bytes=1048588 and the segment size 262144 from internal.segment.bytes" in limit.describe()


def test_row_bounds_are_upper_bounds_of_the_encoded_records() -> None:
    rng = random.Random(3)
    rows = []
    for _ in range(300):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 200))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 70_000))
        headers = None if rng.random() < 0.3 else [(f"h{i}", None if rng.random() < 0.2 else rng.randbytes(rng.randrange(50))) for i in range(rng.randrange(4))]
        rows.append((key, value, headers))
    header_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    bounds = row_bounds(
        pa.array([r[0] for r in rows], pa.binary()),
        pa.array([r[1] for r in rows], pa.binary()),
        # a sliced column (Arrow batches can be views into a bigger one)
        pa.array([[{"key": "x", "value": b"y" * 5000}]] + [None if r[2] is None else [{"key": k, "value": v} for k, v in r[2]] for r in rows], header_type).slice(1),
    ).to_pylist()
    for (key, value, headers), bound in zip(rows, bounds):
        native_headers = [(k.encode(), v) for k, v in headers or []]
        encoded = len(_native.build_batch(0, [(0, 2**40, key, value, native_headers)], "none", -1, -1, -1, False, -1, None)) - 61
        assert encoded <= bound <= encoded + 36 + 10 * len(native_headers)


def _two_partition_rows() -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([b"k"] * 10), pa.array([b"v" * 100] * 10)], names=["key", "value"])


def _locked(path: str) -> bool:
    try:
        UnifiedLog.open(path).close()
    except Exception as e:  # noqa: BLE001 - only the lock error is expected
        assert type(e).__name__ == "LogDirLockedError", e
        return True
    return False


def test_arrow_sink_releases_a_partition_after_a_flush_worth_a_close(tmp_path) -> None:
    """Between flushes the Arrow sink releases each partition it appended a MiB or more to (so
    the other tasks of a job can append), and a sink whose turn is 1 appends to partition 1
    first. A small append keeps the partition held until the task ends; the row sink (the
    bench's baseline) keeps every partition it locked. A released partition's next open
    recovers nothing: its close recorded itself."""
    from kafkalog.spark.sink import RELEASE_MIN_BYTES, RowTaskSink, TaskSink
    from kafkalog.spark.write_options import parse_write_options

    opts = parse_write_options({"path": str(tmp_path), "topic": "t", "partitions": "3"})
    rows = _two_partition_rows()
    sink = TaskSink(opts, flush_bytes=1, turn=1)
    sink.add(("t", 0), rows, rows.num_rows, RELEASE_MIN_BYTES)
    sink.add(("t", 1), rows, rows.num_rows, RELEASE_MIN_BYTES)
    sink.add(("t", 2), rows, rows.num_rows, RELEASE_MIN_BYTES - 1)
    sink.maybe_flush()
    assert list(sink.appended) == [("t", 1), ("t", 2), ("t", 0)]
    assert not sink.pending
    assert [_locked(str(tmp_path / f"t-{p}")) for p in (0, 1, 2)] == [False, False, True]
    assert [(a.partition, a.first_offset, a.last_offset) for a in sink.finish()] == [(0, 0, 9), (1, 0, 9), (2, 0, 9)]
    assert not _locked(str(tmp_path / "t-2"))

    assert (tmp_path / "t-0" / "kafkalog-clean-close").exists()

    rows_sink = RowTaskSink(opts)
    rows_sink.flush_bytes = 1
    records = [(b"k", b"v", [], None)] * 3
    rows_sink.add(("t", 0), records, len(records), RELEASE_MIN_BYTES)
    rows_sink.maybe_flush()
    assert _locked(str(tmp_path / "t-0"))
    rows_sink.finish()
    assert not _locked(str(tmp_path / "t-0"))
