"""Shared set-up of the Spark suites: ONE local[2] SparkSession for the whole run (about 7 s
to start), UI and progress bars off, few shuffle partitions, the ``kafkalog`` source
registered (its check that the Python workers import kafkalog runs once, here). Executors and
the planner run Python workers: PYSPARK_PYTHON and PYSPARK_DRIVER_PYTHON point at this
interpreter, whose venv has kafkalog installed.

The cluster suites (test_spark_cluster.py, test_spark_connect.py) run last: a Python process has
one SparkContext, so the standalone cluster's session replaces the local one (which no test
after them needs), and a Spark Connect client session marks the whole process as Connect
(SPARK_CONNECT_MODE_ENABLED), which its fixture undoes when its module ends."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit.spark_cluster import ConnectServer, StandaloneCluster

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

from pyspark.sql import SparkSession  # noqa: E402

#: The suites that need a SparkContext other than the local one, in the order they run, last.
_RUN_LAST = ("test_spark_cluster.py", "test_spark_connect.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return _RUN_LAST.index(name) + 1 if name in _RUN_LAST else 0

    items.sort(key=rank)  # stable: every other test keeps its place

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


def _base_config(builder: SparkSession.Builder) -> SparkSession.Builder:
    return (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
    )


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A standalone master and two workers (1 core, 1 GiB each) on loopback, for the run."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def cluster_spark(spark_cluster: StandaloneCluster) -> Iterator[SparkSession]:
    """A session whose executors are the cluster's (two executor JVMs, one per worker, each
    with its own Python workers), replacing the local session if one runs."""
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    session = (
        _base_config(SparkSession.builder.master(spark_cluster.master_url).appName("kafkalog-cluster-tests"))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        # Both executors registered before the first job (not Spark's 30 s cap, which on a
        # busy machine would start with one): a hang guard only.
        .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "300s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kafkalog.spark.register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """A Spark Connect server (local[2]) started by pyspark's start-connect-server.sh."""
    server = ConnectServer(tmp_path_factory.mktemp("spark-connect")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def connect_spark(connect_server: ConnectServer) -> Iterator[SparkSession]:
    """A Spark Connect client session on :func:`connect_server`. pyspark marks the process as
    a Connect client (SPARK_CONNECT_MODE_ENABLED) and never unmarks it; the mark is removed
    when the module ends, so a classic session works again after it."""
    marked = "SPARK_CONNECT_MODE_ENABLED" in os.environ
    session = SparkSession.builder.remote(connect_server.url).create()  # beside a classic context
    kafkalog.spark.register(session)
    try:
        yield session
    finally:
        session.stop()
        if not marked:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
