"""Spark set-up for the ``spark``-marked suites: one local[2] session for the whole run.

Minimal version from branch ``maint``; the lead engineer unifies it with the data source's.
"""

from __future__ import annotations

import os
import sys

import pytest

# Executors must start this interpreter (the one that can import kafkalog), not another Python.
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafkalog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
