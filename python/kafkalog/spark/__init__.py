"""kafkalog for Apache Spark: the ``kafkalog`` data source (pyspark >= 4.1 Python Data Source API).

.. code-block:: python

    import kafkalog.spark
    kafkalog.spark.register(spark)

    df = (spark.read.format("kafkalog").option("path", "data/logs")
          .option("subscribe", "orders").option("includeHeaders", "true").load())
    (df.select("key", "value").write.format("kafkalog").mode("append")
       .option("path", "data/logs").option("topic", "orders-copy").option("partitions", "6")
       .option("cleanup.policy", "compact").save())
    stream = (spark.readStream.format("kafkalog").option("path", "data/logs")
              .option("subscribe", "orders").option("maxOffsetsPerTrigger", "10000").load())

Reads return Spark's Kafka-source columns and take its option names (``subscribe``,
``subscribePattern``, ``assign``, ``startingOffsets``, ``endingOffsets``, the timestamp
variants, ``failOnDataLoss``, ``includeHeaders``, ``minPartitions``, ``maxOffsetsPerTrigger``,
``kafka.isolation.level``), with ``path`` in place of ``kafka.bootstrap.servers``; see
:mod:`kafkalog.spark.options`. Writes, batch and streaming (``df.writeStream.format("kafkalog")``),
follow Spark's Kafka sink; see :mod:`kafkalog.spark.writer`, :mod:`kafkalog.spark.stream_writer`
and :mod:`kafkalog.spark.write_options`.

Maintenance runs the native cleaner and retention as Spark jobs, one task per partition
(:mod:`kafkalog.spark.maintenance`)::

    results = kafkalog.spark.compact(spark, "data/logs", topics=["orders"])
    results = kafkalog.spark.run_retention(spark, "data/logs", config={"retention.ms": "604800000"})

Importing this package imports neither pyspark nor starts anything; :func:`register` loads the
data source (and checks, once per session, that Spark's Python workers can import kafkalog:
:mod:`kafkalog.spark.workers`), and the maintenance names load their module when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .maintenance import COMPACT_SCHEMA, RETENTION_SCHEMA, SKIPPED_REASONS, compact, run_retention

__all__ = ["register", "SOURCE_NAME", "compact", "run_retention", "COMPACT_SCHEMA", "RETENTION_SCHEMA", "SKIPPED_REASONS"]

_MAINTENANCE = frozenset({"compact", "run_retention", "COMPACT_SCHEMA", "RETENTION_SCHEMA", "SKIPPED_REASONS"})

#: The format name: ``spark.read.format("kafkalog")``.
SOURCE_NAME = "kafkalog"


def register(spark: SparkSession, *, check: bool = True) -> None:
    """Registers the ``kafkalog`` data source with ``spark`` (``spark.dataSource.register``).

    The data source runs in Spark's Python workers, which must import kafkalog: with ``check``
    (the default) a one-task job checks that they can, once per session, and raises
    :class:`kafkalog.exceptions.WorkerImportError` saying how to fix it when they cannot
    (``PYSPARK_PYTHON``, or a virtualenv shipped with ``spark.archives``); see
    :mod:`kafkalog.spark.workers`. A missing or unsupported pyspark raises
    :class:`kafkalog.exceptions.SparkUnavailableError` naming the fix, and so does a session
    running another Spark version (:mod:`kafkalog.spark.environment`)."""
    from .environment import require_pyspark, require_spark_version

    require_pyspark()
    require_spark_version(spark.version)
    from .source import KafkaLogDataSource

    spark.dataSource.register(KafkaLogDataSource)
    if check:
        from .workers import check_workers

        check_workers(spark)


def __getattr__(name: str) -> Any:
    """The maintenance jobs, imported on first use (they import pyspark)."""
    if name in _MAINTENANCE:
        from .environment import require_pyspark

        require_pyspark()
        from . import maintenance

        return getattr(maintenance, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
