"""Distributed maintenance: Kafka's log cleaner and retention run on Spark executors, one task
per partition.

:func:`compact` runs the native cleaner (``UnifiedLog.compact_now``) and :func:`run_retention`
runs Kafka's retention (``UnifiedLog.delete_old_segments``) on every selected partition
directory. The partition dirs must live on storage every executor sees (a shared or network
file system, or ``local[*]``); Spark spreads the partitions over its executors, so compaction
scales past one machine.

Both jobs run eagerly (the logs change when the call returns) and return a small DataFrame of
per-partition results. A partition that fails (corrupt, I/O error) gets its error in the
``error`` column while the others go on; one left alone says why in the ``skipped`` column
(locked, and for :func:`compact` a delete policy, nothing dirty, or a dirty ratio below
``min.cleanable.dirty.ratio``). Only bad arguments fail the call, with an error naming the
argument and its value. The same per-partition work is offered as column functions in
:mod:`kafkalog.spark.functions`.

Locks, and why two cleans never meet on one partition:

* A writable ``UnifiedLog.open`` takes an exclusive ``flock`` on the partition dir, held until
  close; every task opens its partition writable, so a second clean (another job, a speculative
  task copy, a ``UnifiedLog`` opened elsewhere) is refused with ``LogDirLockedError``.
* A ``LogManager`` (or a Kafka broker) holds a ``fcntl`` lock on its log dir's ``.lock`` file,
  and its logs hold their partition ``flock``. A task checks the log dir's ``.lock`` without
  taking it (the engine's probe, :func:`kafkalog.probe_log_dir_lock`), so a partition of a
  running manager is refused with a message saying so even in the instant before the manager
  has loaded it.

Which directories are partitions is the engine's rule (:func:`kafkalog.discover`), and the
cleaner's broker keys are read by the engine's key table
(:func:`kafkalog.on_demand_cleaner_config`).

With ``wait=True`` a task waits (polling, up to ``wait_timeout`` seconds; None = forever) until
both locks are free instead of skipping the partition.

:func:`compact` cleans only what is dirty: it reads and writes the log dir's
``cleaner-offset-checkpoint`` as Kafka's cleaner does. Tasks cleaning partitions of one log dir
at the same time update that one file in turns (an exclusive ``flock`` on the log dir, held
for the read-modify-write only, so no task writes from a copy that lacks another's entry),
and only while no LogManager or broker holds ``.lock`` (they own the file then; the task takes
``.lock`` itself for the write, so neither can start in the middle of it).

Kafka keeps topic configs in the cluster metadata and kafkalog does not persist them, so a
partition dir carries none: pass them in ``config`` (Kafka's key names). They apply to every
selected partition; call once per topic for different configs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, replace
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F

from .._native import (
    DiscoveredPartition,
    OnDemandCleanerConfig,
    discover,
    on_demand_cleaner_config,
    validate_topic_config,
)
from ..cleaner import CleanerStats
from ..exceptions import InvalidConfigError
from ..log import _config_pairs
from ..testing import maintenance_seam
from .maintenance_tasks import COMPACT_STATS_COLUMNS, MaintenanceJob, run_one, run_path

__all__ = ["compact", "run_retention", "COMPACT_SCHEMA", "RETENTION_SCHEMA", "SKIPPED_REASONS"]

_LONG, _INT, _STR, _DOUBLE = ("long", pa.int64()), ("int", pa.int32()), ("string", pa.string()), ("double", pa.float64())

_COMMON_HEAD = [("topic", _STR), ("partition", _INT), ("path", _STR)]
_SIZES = [("bytes_before", _LONG), ("bytes_after", _LONG), ("records_before", _LONG), ("records_after", _LONG)]
_COMMON_TAIL = [("waited_ms", _DOUBLE), ("duration_ms", _DOUBLE), ("skipped", _STR), ("error", _STR)]


#: How a ``skipped`` value starts (then ``: `` and the numbers behind it): the partition's log
#: has no ``compact`` in its ``cleanup.policy``; nothing cleanable between the first dirty and the
#: first uncleanable offset; the dirty ratio is not above ``min.cleanable.dirty.ratio``; a
#: LogManager, Kafka broker or another writer holds the partition.
SKIPPED_REASONS = ("delete policy", "nothing dirty", "below min.cleanable.dirty.ratio", "locked")


def _stats_fields(names: tuple[str, ...]) -> list[tuple[str, tuple[str, Any]]]:
    """Columns for CleanerStats fields, typed from the class declared once in the engine
    (``CleanerStats.FIELDS``): an int counter is a long, a float a double."""
    unknown = [n for n in names if n not in CleanerStats.FIELDS]
    if unknown:
        raise AssertionError(f"not CleanerStats fields: {unknown}; its fields are {CleanerStats.FIELDS}")
    zero = CleanerStats()
    return [(n, _DOUBLE if isinstance(getattr(zero, n), float) else _LONG) for n in names]


_COMPACT_FIELDS = [
    *_COMMON_HEAD,
    *_SIZES,
    ("passes", _INT),
    ("checkpoint", _LONG),
    ("first_dirty_offset", _LONG),
    ("cleaned_to_offset", _LONG),
    ("first_uncleanable_offset", _LONG),
    *_stats_fields(COMPACT_STATS_COLUMNS),
    *_COMMON_TAIL,
]
_RETENTION_FIELDS = [
    *_COMMON_HEAD,
    *_SIZES,
    ("segments_deleted", _INT),
    ("log_start_offset_before", _LONG),
    ("log_start_offset_after", _LONG),
    ("reasons", _STR),
    ("warnings", ("array<string>", pa.list_(pa.string()))),
    *_COMMON_TAIL,
]


def _ddl(fields: list[tuple[str, tuple[str, Any]]]) -> str:
    return ", ".join(f"{name} {spark_type}" for name, (spark_type, _) in fields)


def _arrow(fields: list[tuple[str, tuple[str, Any]]]) -> pa.Schema:
    return pa.schema([pa.field(name, arrow_type) for name, (_, arrow_type) in fields])


#: The columns :func:`compact` returns, one row per partition. ``bytes_*`` are the partition's
#: segment bytes, ``records_*`` the records in its batches (control records included);
#: ``passes`` counts the offset-map passes; ``checkpoint`` is the partition's entry in its log
#: dir's ``cleaner-offset-checkpoint`` before the clean (null: none), ``first_dirty_offset``
#: where the clean started (that entry healed into the log), ``cleaned_to_offset`` the first
#: offset not cleaned (the entry written back); ``waited_ms`` the time spent waiting for the
#: locks, ``duration_ms`` the time from the open to the close of the log; ``skipped`` why the
#: partition was not cleaned (starting with one of :data:`SKIPPED_REASONS`; ``error`` is null
#: then), null when it was; ``error`` what failed.
COMPACT_SCHEMA = _ddl(_COMPACT_FIELDS)
#: The columns :func:`run_retention` returns, one row per partition. ``reasons`` counts the
#: deleted segments per check (``retention_ms:3,log_start_offset:1``); ``warnings`` lists the
#: segments whose timestamps lie in the future; ``skipped`` is ``locked: ...`` for a partition
#: another process holds, as for :func:`compact`.
RETENTION_SCHEMA = _ddl(_RETENTION_FIELDS)


# -- arguments (driver) ---------------------------------------------------------------------


def _split_paths(path: Any) -> list[str]:
    if isinstance(path, (str, os.PathLike)):
        parts = [p.strip() for p in os.fspath(path).split(",")]
    elif isinstance(path, Iterable):
        parts = []
        for p in path:
            if not isinstance(p, (str, os.PathLike)):
                raise TypeError(f"path: every entry must be a str or os.PathLike, not {p!r}")
            parts.append(os.fspath(p).strip())
    else:
        raise TypeError(f"path must be a str (a comma list), an os.PathLike or a list of them, not {path!r}")
    parts = [p for p in parts if p]
    if not parts:
        raise ValueError(f"path: no directory given ({path!r})")
    return parts


def _discover(path: Any) -> list[DiscoveredPartition]:
    """The partition dirs named by ``path`` (the engine's rule, :func:`kafkalog.discover`):
    partition dirs themselves, or the partition dirs inside the parent folders given. Absolute
    paths, each directory once (symlinks resolved to compare, kept in the result: the name says
    the topic-partition, the parent is the log dir whose ``.lock`` counts)."""
    found: list[DiscoveredPartition] = []
    for entry in _split_paths(path):
        if not os.path.isdir(entry):
            raise ValueError(f"path: {entry!r} is not a directory" + ("" if os.path.exists(entry) else " (it does not exist)"))
        children = discover(entry)
        if not children:
            raise ValueError(f"path: {entry!r} holds no partition directories (named <topic>-<partition>)")
        found.extend(children)
    seen: set[str] = set()
    out = []
    for d in found:
        real = os.path.realpath(d.path)
        if real not in seen:
            seen.add(real)
            out.append(DiscoveredPartition(d.topic, d.partition, os.path.abspath(d.path), os.path.abspath(d.log_dir)))
    return out


def _filter_topics(partitions: list[DiscoveredPartition], topics: Any, path_arg: Any) -> list[DiscoveredPartition]:
    if topics is None:
        return partitions
    if isinstance(topics, Iterable) and not isinstance(topics, str):
        topics = list(topics)
    if isinstance(topics, str):
        wanted = [t.strip() for t in topics.split(",") if t.strip()]
    elif isinstance(topics, list) and all(isinstance(t, str) for t in topics):
        wanted = [t.strip() for t in topics]
    else:
        raise TypeError(f"topics must be a str (a comma list) or a list of str, not {topics!r}")
    if not wanted:
        raise ValueError(f"topics: no topic given ({topics!r}); pass None for every topic")
    present = {d.topic for d in partitions}
    missing = [t for t in wanted if t not in present]
    if missing:
        raise ValueError(
            f"topics: no partition directory of {', '.join(repr(t) for t in missing)} under path {path_arg!r} "
            f"(topics found: {', '.join(sorted(present)) or 'none'})"
        )
    return [d for d in partitions if d.topic in wanted]


def _config_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _split_config(config: Any, op: str) -> tuple[dict[str, str], dict[str, Any]]:
    """Topic configs for the open, and the cleaner's sizes (broker keys) for compact_now."""
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping of Kafka config keys to values, not {config!r}")
    topic: dict[str, str] = {}
    cleaner_keys: list[tuple[str, str]] = []
    for key, value in config.items():
        if not isinstance(key, str):
            raise TypeError(f"config: keys must be Kafka config names (str), not {key!r}")
        if key in OnDemandCleanerConfig.KEYS:
            if op != "compact":
                raise ValueError(f"config: {key} is a log cleaner setting; run_retention does not clean")
            cleaner_keys.append((key, _config_value(value)))
        else:
            topic[key] = _config_value(value)
    cleaner = _cleaner_sizes(cleaner_keys)
    if op == "compact":
        # A policy without compact is not refused here: each partition is skipped ("delete
        # policy"), as Kafka's cleaner leaves such a log alone.
        topic.setdefault("cleanup.policy", "compact")
    # The engine's topic table checks every key and value now, so a bad one fails the call,
    # naming it, before any task runs.
    try:
        validate_topic_config(_config_pairs(topic))
    except ValueError as e:  # InvalidConfigError names the key and value
        raise ValueError(f"config: {e}") from None
    return topic, cleaner


def _cleaner_sizes(keys: list[tuple[str, str]]) -> dict[str, Any]:
    """The native cleaner's sizes (``compact_now``'s arguments) from their broker keys, read by
    the engine's key table; per task (Kafka divides the dedupe buffer between its cleaner
    threads, here every task has its own). Empty when no key is given."""
    if not keys:
        return {}
    try:
        sizes = on_demand_cleaner_config(keys)
    except InvalidConfigError as e:  # names the key, the value and the rule
        raise ValueError(f"config: {e}") from None
    return {
        "dedupe_buffer_size": sizes.dedupe_buffer_size,
        "load_factor": sizes.load_factor,
        "io_buffer_size": sizes.io_buffer_size,
        "max_io_bytes_per_second": sizes.max_io_bytes_per_second,
    }


def _check_spark(spark: Any) -> None:
    if not hasattr(spark, "range") or not hasattr(spark, "createDataFrame"):
        raise TypeError(f"spark must be a SparkSession, not {spark!r}")


def _check_wait(wait: Any, wait_timeout: Any) -> None:
    if not isinstance(wait, bool):
        raise TypeError(f"wait must be True or False, not {wait!r}")
    if wait_timeout is not None and (
        isinstance(wait_timeout, bool) or not isinstance(wait_timeout, (int, float)) or not wait_timeout >= 0
    ):
        raise ValueError(f"wait_timeout must be None or a number of seconds >= 0, not {wait_timeout!r}")


# -- the jobs -------------------------------------------------------------------------------


def compact(
    spark: Any,
    path: Any,
    topics: Any = None,
    config: Mapping[str, Any] | None = None,
    wait: bool = False,
    *,
    wait_timeout: float | None = None,
    roll: bool = False,
    time_ms: int | None = None,
) -> Any:
    """Compacts every partition dir under ``path`` with Kafka's cleaner, one Spark task per
    partition, and returns a DataFrame of :data:`COMPACT_SCHEMA` (one row per partition, sorted
    by topic and partition).

    ``path``: a parent folder of partition dirs, partition dirs, or several of either (a comma
    list or a list). ``topics``: only these topics (a comma list or a list). ``config``: topic
    configs (``cleanup.policy`` defaults to ``compact``; ``min.compaction.lag.ms``,
    ``delete.retention.ms``, ``segment.bytes``, ...) and the cleaner's broker keys
    ``log.cleaner.dedupe.buffer.size`` (per task, at most: a task's map holds no more than twice its
    partition's records, so it never fills sooner), ``log.cleaner.io.buffer.size``,
    ``log.cleaner.io.buffer.load.factor`` and ``log.cleaner.io.max.bytes.per.second`` (per
    task). ``wait``: wait for locked partitions instead of reporting them (at most
    ``wait_timeout`` seconds each).

    Like Kafka, the cleaner never touches the active segment; ``roll=True`` rolls each log first
    so that everything up to its end is cleaned. ``time_ms`` is the clean's "now" (tombstone
    horizons, ``min.compaction.lag.ms``, ``max.compaction.lag.ms``), for reproducible runs;
    default the clock.

    Only what is dirty is cleaned, as Kafka's cleaner does (:meth:`kafkalog.UnifiedLog.compact_dirty`
    per partition): each partition's entry in its log dir's ``cleaner-offset-checkpoint`` is
    where the clean starts (none: the log start; one outside the log: the log start, with
    Kafka's warning), and the first offset not cleaned is written back, so a periodic job's cost
    grows with the new data, not with the log; a LogManager or Kafka broker opened on the log
    dir later continues from the file. Tasks cleaning partitions of one log dir at once take
    turns for the file's read-modify-write (a ``flock`` on the log dir), so none loses
    another's entry; the file is written tmp + fsync + rename + directory fsync, under the log
    dir's ``.lock``. If a LogManager or broker takes the log dir during the clean, the entry is
    not written (the file is theirs), and ``error`` says so beside the clean's numbers.

    Kafka's choice of what to clean holds: a partition whose dirty ratio is not above the
    topic's ``min.cleanable.dirty.ratio`` (Kafka's default 0.5), with no dirty segment past
    ``max.compaction.lag.ms``, is skipped, as are a partition with nothing dirty and one whose
    ``cleanup.policy`` lacks ``compact``; ``skipped`` says which (:data:`SKIPPED_REASONS`), and
    ``error`` is null. Pass ``config={"min.cleanable.dirty.ratio": 0}`` to clean whatever is
    dirty. A partition another process holds is skipped as ``locked`` (with ``wait=True``, once
    ``wait_timeout`` has passed)."""
    _check_spark(spark)
    job = compact_job(config, wait, wait_timeout=wait_timeout, roll=roll, time_ms=time_ms)
    partitions = _filter_topics(_discover(path), topics, path)
    return _run_job(spark, replace(job, partitions=_job_partitions(partitions)), _COMPACT_FIELDS)


def compact_job(
    config: Mapping[str, Any] | None,
    wait: Any,
    *,
    wait_timeout: Any = None,
    roll: Any = False,
    time_ms: Any = None,
) -> MaintenanceJob:
    """The :class:`MaintenanceJob` of a compaction (no partitions yet), its arguments checked
    as :func:`compact` documents them. Shared by :func:`compact` and
    :func:`kafkalog.spark.functions.compact_log`."""
    _check_wait(wait, wait_timeout)
    if not isinstance(roll, bool):
        raise TypeError(f"roll must be True or False, not {roll!r}")
    if time_ms is not None and (isinstance(time_ms, bool) or not isinstance(time_ms, int) or time_ms < 0):
        raise ValueError(f"time_ms must be None or a timestamp in ms >= 0, not {time_ms!r}")
    topic_config, cleaner = _split_config(config, "compact")
    return MaintenanceJob(
        "compact", [], topic_config, cleaner, wait, wait_timeout, roll=roll, time_ms=time_ms, test_seam=maintenance_seam()
    )


def retention_job(
    config: Mapping[str, Any] | None,
    wait: Any,
    *,
    wait_timeout: Any = None,
    cap_future_timestamps: Any = False,
) -> MaintenanceJob:
    """The :class:`MaintenanceJob` of a retention run (no partitions yet), its arguments
    checked as :func:`run_retention` documents them. Shared by :func:`run_retention` and
    :func:`kafkalog.spark.functions.run_retention`."""
    _check_wait(wait, wait_timeout)
    if not isinstance(cap_future_timestamps, bool):
        raise TypeError(f"cap_future_timestamps must be True or False, not {cap_future_timestamps!r}")
    topic_config, _ = _split_config(config, "retention")
    return MaintenanceJob(
        "retention", [], topic_config, wait=wait, wait_timeout=wait_timeout,
        cap_future_timestamps=cap_future_timestamps, test_seam=maintenance_seam(),
    )


def run_retention(
    spark: Any,
    path: Any,
    topics: Any = None,
    config: Mapping[str, Any] | None = None,
    wait: bool = False,
    *,
    wait_timeout: float | None = None,
    cap_future_timestamps: bool = False,
) -> Any:
    """Runs Kafka's retention (``deleteOldSegments``: the log-start, ``retention.bytes`` and
    ``retention.ms`` checks) on every partition dir under ``path``, one Spark task per
    partition, and returns a DataFrame of :data:`RETENTION_SCHEMA` sorted by topic and
    partition. Arguments as for :func:`compact`; ``config`` holds topic configs
    (``retention.ms``, ``retention.bytes``, ``cleanup.policy`` (default ``delete``),
    ``file.delete.delay.ms``, ...). Retention runs against the wall clock, as Kafka's does.

    Deleted segments are renamed ``.deleted`` at once (readers no longer see them) and unlinked
    when the log closes if ``file.delete.delay.ms`` has passed by then; otherwise the next
    writable open of the partition unlinks them. ``cap_future_timestamps`` (kafkalog's opt-in)
    judges a segment with future timestamps by its file's modification time."""
    _check_spark(spark)
    job = retention_job(config, wait, wait_timeout=wait_timeout, cap_future_timestamps=cap_future_timestamps)
    partitions = _filter_topics(_discover(path), topics, path)
    return _run_job(spark, replace(job, partitions=_job_partitions(partitions)), _RETENTION_FIELDS)


def _job_partitions(partitions: list[DiscoveredPartition]) -> list[tuple[str, int, str, str]]:
    return [(d.topic, d.partition, d.path, d.log_dir) for d in partitions]


def _run_job(spark: Any, job: MaintenanceJob, fields: list[tuple[str, tuple[str, Any]]]) -> Any:
    """Runs one task per partition of ``job`` as ONE Spark job and returns its rows as a local
    DataFrame.

    The job is ``spark.range`` with one range partition (so one task) per log partition and the
    job's column function (:func:`task_function`) applied to each task's index into
    ``job.partitions``: the partitions the driver discovered once, no planning in a Python
    process (a Python data source would plan in two: schema and partitions), and the Python
    workers Spark keeps (``spark.python.worker.reuse``) run the tasks. It works on Spark
    Connect too. Collected here so that the work happens once, now (a lazy DataFrame would
    clean again at every action); the result is built from the collected rows as an Arrow table,
    which Spark keeps as a local relation: reading it runs no second job."""
    count = len(job.partitions)
    rows: list[dict[str, Any]] = []
    if count:
        column = task_function(job, fields, by_path=False)(F.col("id").cast("int"))
        got = spark.range(0, count, 1, count).select(column.alias("r")).collect()
        rows = sorted((r["r"].asDict() for r in got), key=lambda r: (r["topic"], r["partition"], r["path"]))
    return spark.createDataFrame(pa.Table.from_pylist(rows, schema=_arrow(fields)), _ddl(fields))


def task_function(job: MaintenanceJob, fields: list[tuple[str, tuple[str, Any]]], *, by_path: bool, name: str = "") -> Any:
    """The per-partition work as a non-deterministic row-at-a-time Python UDF returning a struct
    of ``fields``: on an index into ``job.partitions`` (the jobs: the driver's discovery) or,
    ``by_path``, on a partition directory path (the column functions of
    :mod:`kafkalog.spark.functions`, :func:`~kafkalog.spark.maintenance_tasks.run_path`).
    Non-deterministic, so Spark never folds, reorders or duplicates the call into each field it
    reads. The job travels as JSON (strings and numbers only)."""
    names = [n for n, _ in fields]
    struct = "struct<" + ",".join(f"{n}:{spark_type}" for n, (spark_type, _) in fields) + ">"
    payload = json.dumps(asdict(job))

    def one_partition(arg: Any) -> tuple[Any, ...]:
        task = MaintenanceJob(**json.loads(payload))
        row = run_path(task, arg) if by_path else run_one(task, task.partitions[arg])
        return tuple(row.get(n) for n in names)

    # A lambda: pyspark infers a pandas UDF from type hints and warns when it cannot; the
    # row-at-a-time form needs neither pandas nor Arrow's conversion of a one-field row.
    run = lambda arg: one_partition(arg)  # noqa: E731
    run.__name__ = name or f"kafkalog_{job.op}"
    return F.udf(run, struct, useArrow=False).asNondeterministic()
