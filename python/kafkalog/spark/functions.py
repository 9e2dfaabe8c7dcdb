"""The native cleaner and Kafka's retention as column functions, for a user's own pipelines.

:func:`compact_log` and :func:`run_retention` take a column of partition directory paths
(absolute ``<log dir>/<topic>-<partition>``, on storage the executors share) and return a struct column
holding, for each row, the per-partition result of :func:`kafkalog.spark.compact` /
:func:`kafkalog.spark.run_retention`: the fields of :data:`~kafkalog.spark.COMPACT_SCHEMA` /
:data:`~kafkalog.spark.RETENTION_SCHEMA`, in that order::

    from kafkalog.spark.functions import compact_log

    dirs = [("data/logs/users-0",), ("data/logs/users-1",)]
    results = spark.createDataFrame(dirs, "path string").select(compact_log("path").alias("r")).select("r.*")

or inside ``foreachBatch`` (``batch_df.select(compact_log("path")).collect()``). Each row's work
is the jobs' own per-partition task code (:func:`kafkalog.spark.maintenance_tasks.run_one`), so
everything the jobs document holds here: the locks (the partition's ``flock``; a log dir a
running LogManager or Kafka broker holds is skipped as ``locked``, or waited for with
``wait=True``), the log dir's ``cleaner-offset-checkpoint`` (only the dirty section is
cleaned), ``skipped`` with its reason, failures in ``error`` instead of a failed query. A row
whose path is null, missing, or not one partition directory gets its ``error`` too. Bad
arguments (``config``, ``wait``, ...) fail the call that builds the column, naming the argument.

The functions are marked non-deterministic, so Spark calls them once per row of the plan as
written (never folded, reordered or duplicated into each field read); a retried or speculative
task runs its rows again, which finds the partitions already clean (``nothing dirty``). Each
call runs in the Python worker of the task that holds the row, with the GIL released around
the clean.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .environment import require_pyspark

require_pyspark()  # a missing or unsupported pyspark: SparkUnavailableError naming the fix

from pyspark.sql import Column  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from .maintenance import _COMPACT_FIELDS, _RETENTION_FIELDS, compact_job, retention_job, task_function  # noqa: E402
from .maintenance_tasks import MaintenanceJob  # noqa: E402

__all__ = ["compact_log", "run_retention"]


def compact_log(
    path_col: Column | str,
    config: Mapping[str, Any] | None = None,
    *,
    wait: bool = False,
    wait_timeout: float | None = None,
    roll: bool = False,
    time_ms: int | None = None,
) -> Column:
    """A struct column of :data:`~kafkalog.spark.COMPACT_SCHEMA`'s fields: the partition
    directory each row of ``path_col`` names, compacted by the native cleaner from its
    ``cleaner-offset-checkpoint`` entry. ``config``, ``wait``, ``wait_timeout``, ``roll`` and
    ``time_ms`` as for :func:`kafkalog.spark.compact`."""
    job = compact_job(config, wait, wait_timeout=wait_timeout, roll=roll, time_ms=time_ms)
    column: Column = _column_function(job, _COMPACT_FIELDS, "compact_log")(_as_column(path_col))
    return column


def run_retention(
    path_col: Column | str,
    config: Mapping[str, Any] | None = None,
    *,
    wait: bool = False,
    wait_timeout: float | None = None,
    cap_future_timestamps: bool = False,
) -> Column:
    """A struct column of :data:`~kafkalog.spark.RETENTION_SCHEMA`'s fields: Kafka's retention
    run on the partition directory each row of ``path_col`` names. Arguments as for
    :func:`kafkalog.spark.run_retention`."""
    job = retention_job(config, wait, wait_timeout=wait_timeout, cap_future_timestamps=cap_future_timestamps)
    column: Column = _column_function(job, _RETENTION_FIELDS, "run_retention")(_as_column(path_col))
    return column


def _as_column(path_col: Any) -> Column:
    if isinstance(path_col, str):
        return F.col(path_col)
    if isinstance(path_col, Column):
        return path_col
    raise TypeError(f"path_col must be a column name (str) or a Column of partition directory paths, not {path_col!r}")


def _column_function(job: MaintenanceJob, fields: list[tuple[str, tuple[str, Any]]], name: str) -> Any:
    # The jobs' own task function, on a path instead of an index into the job's partitions.
    return task_function(job, fields, by_path=True, name=name)
