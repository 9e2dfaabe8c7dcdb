"""The ``kafkalog`` data source: pyspark's ``DataSource`` (Spark's ``KafkaSourceProvider``).

Reads return exactly the columns of Spark's Kafka source: ``key binary, value binary, topic
string, partition int, offset long, timestamp timestamp, timestampType int``, plus ``headers
array<struct<key:string,value:binary>>`` with ``includeHeaders=true``. Options are parsed in
:mod:`kafkalog.spark.options` (reads) and :mod:`kafkalog.spark.write_options` (writes).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..exceptions import InvalidOptionError
from .options import parse_bool, parse_read_options
from .reader import KafkaLogBatchReader, freeze_gc_in_reused_worker
from .sink import ensure_topic
from .write_options import parse_write_options
from .write_options import WriteOptions
from .writer import KafkaLogWriter, check_write_schema

__all__ = ["KafkaLogDataSource", "kafka_schema"]


def kafka_schema(include_headers: bool = False) -> StructType:
    """Spark's Kafka-source schema (``KafkaRecordToRowConverter``), with or without headers."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    return StructType(fields)


def _option(options: Mapping[str, str], name: str) -> str | None:
    for key, value in options.items():
        if key.lower() == name.lower():
            return str(value)
    return None


class KafkaLogDataSource(DataSource):
    """pyspark ``DataSource`` named ``kafkalog``: batch and streaming reads of Kafka log
    directories, and batch writes into them. Holds only its options (Spark pickles it)."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> StructType:
        freeze_gc_in_reused_worker()  # runs in the (reused) worker that creates the data source
        raw = _option(self.options, "includeHeaders")
        return kafka_schema(parse_bool("includeHeaders", raw) if raw is not None else False)

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaLogBatchReader(parse_read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = parse_read_options(self.options, streaming=True)
        try:
            from .stream import KafkaLogStreamReader
        except ImportError as e:  # pyspark 4.1: batch reads and writes work, streams need 4.2
            raise ImportError(
                "kafkalog streaming reads need pyspark >= 4.2 (admission control and Trigger.AvailableNow "
                f"for Python streaming sources, SPARK-55304): {e}"
            ) from e
        return KafkaLogStreamReader(opts)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise InvalidOptionError("mode", "overwrite", "kafkalog only appends, as Spark's Kafka sink: use mode('append')")
        return KafkaLogWriter(self._write_options(schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """Streaming writes; ``overwrite`` (complete mode) appends too, as Spark's Kafka sink
        (its truncate does nothing): see :mod:`kafkalog.spark.stream_writer`."""
        from .stream_writer import KafkaLogStreamWriter

        return KafkaLogStreamWriter(self._write_options(schema))

    def _write_options(self, schema: StructType) -> WriteOptions:
        opts = parse_write_options(self.options)
        check_write_schema(schema, opts)
        if opts.topic is not None:
            ensure_topic(opts, opts.topic)  # create it once, here, with the write's configs
        return opts
