"""Shared set-up of the Spark suites: ONE local[2] SparkSession for the whole run (about 7 s
to start), UI and progress bars off, few shuffle partitions, the ``kafkalog`` source
registered. Executors and the planner run Python workers: PYSPARK_PYTHON and
PYSPARK_DRIVER_PYTHON point at this interpreter, whose venv has kafkalog installed."""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

from pyspark.sql import SparkSession  # noqa: E402

import kafkalog.spark  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafkalog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kafkalog.spark.register(session)
    yield session
    session.stop()


def batch_codecs(log_path: Path) -> list[int]:
    """The compression codec id (attributes & 7) of every batch in a partition's segments:
    0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
    codecs = []
    for seg in sorted(log_path.glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos + 61 <= len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            (attributes,) = struct.unpack_from(">h", data, pos + 21)
            codecs.append(attributes & 7)
            pos += 12 + length
    return codecs
