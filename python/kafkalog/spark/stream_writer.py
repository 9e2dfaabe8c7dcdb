"""Streaming writes: ``df.writeStream.format("kafkalog").option("path", ...)
.option("checkpointLocation", ...).start()`` (Spark's Kafka sink, ``KafkaStreamingWrite``).

Each micro-batch is written as a batch write is (:class:`kafkalog.spark.writer.TaskWrite`: the
same columns, options, partitioning, locking and errors); Spark's checkpoint records the
source offsets of each batch and, once every task of the batch succeeded and
:meth:`KafkaLogStreamWriter.commit` returned, the batch id in its commit log.

Delivery guarantee: **at least once**, exactly as Spark's Kafka sink. Every row of a batch
whose commit Spark recorded is in the log, once; a stopped query restarted from its
checkpoint goes on after the last committed batch, so a clean stop and restart neither loses
nor repeats a row. Rows are written twice only when a batch is run again: a task that failed
and is retried (its appends before the failure stay), or a query that stopped (crash, kill)
after some of a batch's tasks appended and before Spark recorded the batch's commit, which
re-runs that batch from the same source offsets on restart. Exactly-once would need the log
to hide a batch's records until the driver commits it (Kafka's transactions: records under a
producer id, made visible by a COMMIT marker): the tasks append before the driver's commit,
and recording the batch id at commit time cannot undo appends of a batch that never reached
it. Deduplicate on read, or by key through compaction, when that matters.

The output modes are Spark's Kafka sink's: append, update and complete all append each
micro-batch's rows (complete mode writes the whole result table each time; a log is never
truncated).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from .write_options import WriteOptions
from .writer import KafkaLogCommitMessage, TaskWrite

__all__ = ["KafkaLogStreamWriter"]


class KafkaLogStreamWriter(DataSourceStreamArrowWriter):
    """pyspark ``DataSourceStreamArrowWriter`` of a streaming write (Spark's
    ``KafkaStreamingWrite``). Holds only the parsed options; ``write`` runs once per task of
    each micro-batch, on an executor."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaLogCommitMessage:
        return TaskWrite(self.opts).run(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to do: the batch's records are in the logs; Spark records the commit."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing can be undone: records appended by the batch's finished tasks stay, and the
        batch runs again on restart (at-least-once)."""
