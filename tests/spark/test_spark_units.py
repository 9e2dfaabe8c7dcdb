"""The pieces of the data source that need no Spark session: lazy imports, picklable errors,
option parsing, Spark's range splitting and rate limiting."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

from kafkalog.exceptions import DataLossError, InvalidConfigError, InvalidOptionError, OffsetOutOfRangeError
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
