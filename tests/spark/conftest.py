"""Shared set-up of the Spark suites: ONE local[2] SparkSession for the whole run (about 7 s
to start), UI and progress bars off, few shuffle partitions, the ``kafkalog`` source
registered (its check that the Python workers import kafkalog runs once, here). Executors and
the planner run Python workers: PYSPARK_PYTHON and PYSPARK_DRIVER_PYTHON point at this
interpreter, whose venv has kafkalog installed."""

from __future__ import annotations

import os
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
