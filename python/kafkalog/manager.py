"""`kafkalog.LogManager`: the logs of several log dirs, as a Kafka broker keeps them.

Mirrors Kafka's LogManager. At start-up it locks each dir (``.lock``), checks or writes
``meta.properties``, and loads and recovers every partition in parallel
(``num.recovery.threads.per.data.dir`` threads per dir), taking the clean-shutdown marker into
account. While open it runs retention, flushes and checkpoints on Kafka's schedule (one
``kafka-scheduler-0`` thread, started here, never at import), and takes a log dir offline after
an I/O error while the others keep serving. ``close()`` flushes, writes the checkpoints and the
``.kafka_cleanshutdown`` marker, exactly as Kafka does, so Kafka can open the dirs afterwards.

With ``log.cleaner.enable`` (the default) it also runs Kafka's log cleaner:
``log.cleaner.threads`` threads named ``kafka-log-cleaner-thread-<n>`` (started here with the
scheduler) compact the filthiest compacted partitions and give ``compact,delete`` topics their
retention. :meth:`LogManager.compact_now`, :meth:`LogManager.cleaner_status`,
:meth:`LogManager.cleaner_metrics`, :meth:`LogManager.retry_uncleanable`,
:meth:`LogManager.run_cleaner_once` and :meth:`LogManager.reconfigure_cleaner` expose what
Kafka keeps to itself.

Broker keys keep Kafka's names: ``log.dirs``, ``log.retention.hours``, ``log.segment.bytes``,
``log.retention.check.interval.ms``, ``num.recovery.threads.per.data.dir``, ...
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

from . import _arguments as arg
from . import _native
from ._native import (
    CleanerStatus,
    CleanOutcome,
    DirLoadSummary,
    DirRecoveryProgress,
    Gauge,
    LogDirInfo,
    MetricsSnapshot,
    Progress,
)
from .cleaner import CompactResult
from .exceptions import InvalidArgumentTypeError
from .log import UnifiedLog, _config_pairs
from .records import RetentionResult

__all__ = [
    "LogManager",
    "LogDirInfo",
    "DirLoadSummary",
    "DirRecoveryProgress",
    "CleanerStatus",
    "CleanOutcome",
    "Gauge",
    "MetricsSnapshot",
    "Progress",
]


def _dirs_value(dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> str:
    if isinstance(dirs, (str, os.PathLike)):
        dirs = [dirs]
    elif not isinstance(dirs, Iterable) or isinstance(dirs, bytes):
        raise InvalidArgumentTypeError(f"dirs must be a path or a list of paths, not {type(dirs).__name__} ({dirs!r:.80})")
    return ",".join(os.path.abspath(arg.path("dirs", d)) for d in dirs)


def _topic(value: Any) -> str:
    return arg.string("topic", value)


def _optional_partition(value: Any) -> int | None:
    return None if value is None else arg.partition(value)


class LogManager:
    """The logs of one or more log dirs. Use it as a context manager: leaving the block closes
    it cleanly (Kafka's LogManager.shutdown)."""

    __slots__ = ("_m", "_closed")

    def __init__(
        self,
        dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        topic_configs: Mapping[str, Mapping[str, Any]] | None = None,
        scheduler: bool = True,
        time_ms: int | None = None,
        on_progress: Callable[[list[DirRecoveryProgress]], None] | None = None,
        lock_timeout_ms: int = 30_000,
    ) -> None:
        """Opens the log dirs ``dirs`` (or ``log.dirs`` in ``config``) and loads every partition.

        ``config`` holds broker keys (``log.retention.hours``, ``log.segment.bytes``,
        ``num.recovery.threads.per.data.dir``, ``node.id``, ...); invalid ones raise
        InvalidConfigError naming the key. ``topic_configs`` maps a topic to its topic-level
        overrides (Kafka keeps these in the cluster metadata).

        ``scheduler=False`` runs no background thread; ``time_ms`` runs the manager on a manual
        clock starting there (no thread; move it with :meth:`advance_time`), for tests.
        ``on_progress`` is called on this thread with every dir's recovery progress while the
        logs load.

        A dir locked by another LogManager or a running Kafka broker raises LogDirLockedError.
        A partition directory locked by another writer (a distributed clean, a standalone
        UnifiedLog) is waited for, up to ``lock_timeout_ms`` (wall-clock milliseconds, also with
        ``time_ms``); ``on_progress`` lists it in ``waiting_for_lock`` meanwhile. Then the
        start-up fails with LogDirLockedError naming the partition and, when the system tells,
        the process holding it."""
        lock_timeout_ms = arg.integer("lock_timeout_ms", lock_timeout_ms, 0, arg.I64_MAX)
        pairs = _config_pairs(config)
        if dirs is not None:
            pairs = [(k, v) for k, v in pairs if k not in ("log.dirs", "log.dir")]
            pairs.append(("log.dirs", _dirs_value(dirs)))
        topics = {
            _topic(t): _config_pairs(c, f"topic_configs[{t!r}]")
            for t, c in arg.mapping("topic_configs", topic_configs or {}).items()
        }
        if on_progress is not None and not callable(on_progress):
            raise InvalidArgumentTypeError(f"on_progress must be a callable or None, not {type(on_progress).__name__}")

        time_ms = arg.optional_integer("time_ms", time_ms, 0, arg.I64_MAX)
        scheduler = arg.flag("scheduler", scheduler)
        self._m = _native.LogManager.open(pairs, topics, scheduler, time_ms, on_progress, lock_timeout_ms)
        self._closed = False

    def __enter__(self) -> LogManager:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        dirs = ", ".join(d.path for d in self.log_dirs())
        return f"LogManager([{dirs}], logs={len(self.logs())})"

    # -- partitions -------------------------------------------------------------------------

    def create_log(
        self, topic: str, partition: int, config: Mapping[str, Any] | None = None, *, topic_id: str | None = None
    ) -> UnifiedLog:
        """Returns the log of ``topic``-``partition``, creating it (Kafka's getOrCreateLog) in
        the online, non-cordoned log dir holding the fewest partitions. A ``config`` becomes
        the topic's config, for its existing partitions too. Invalid topic names (Kafka's
        rules), and names whose directory the log dir's file system cannot hold (a 249-character
        topic leaves room for a partition number of 5 digits), raise InvalidTopicError and take
        no log dir offline; a partition outside [0, 2**31 - 1] raises InvalidArgumentError."""
        pairs = None if config is None else _config_pairs(config)
        topic_id = None if topic_id is None else arg.string("topic_id", topic_id)
        return UnifiedLog(self._m.get_or_create_log(_topic(topic), arg.partition(partition), pairs, topic_id))

    def get_log(self, topic: str, partition: int) -> UnifiedLog | None:
        """The log of ``topic``-``partition``, or None."""
        native = self._m.get_log(_topic(topic), arg.partition(partition))
        return None if native is None else UnifiedLog(native)

    def logs(self) -> list[UnifiedLog]:
        """Every log served, in topic-partition order."""
        return [UnifiedLog(n) for n in self._m.logs()]

    def future_logs(self) -> list[UnifiedLog]:
        """Logs in ``-future`` directories (partitions being moved between log dirs)."""
        return [UnifiedLog(n) for n in self._m.future_logs()]

    def delete_log(self, topic: str, partition: int) -> str:
        """Deletes the partition as Kafka does: its directory is renamed
        ``<topic>-<partition>.<uuid>-delete`` at once and removed after
        ``log.segment.delete.delay.ms``. Returns the renamed directory."""
        return os.fspath(self._m.delete_log(_topic(topic), arg.partition(partition)))

    def update_topic_config(self, topic: str, config: Mapping[str, Any]) -> None:
        """Sets a topic's config (validated first) for its existing and future partitions."""
        self._m.update_topic_config(_topic(topic), _config_pairs(config))

    # -- maintenance ------------------------------------------------------------------------

    def flush(self) -> None:
        """Fsyncs every log up to its log end offset."""
        self._m.flush()

    def checkpoint(self) -> None:
        """Writes recovery-point-offset-checkpoint, log-start-offset-checkpoint and
        replication-offset-checkpoint (high watermarks) in every online log dir."""
        self._m.checkpoint()

    def run_retention(
        self, *, cap_future_timestamps: bool = False, on_progress: Callable[[Progress], None] | None = None
    ) -> dict[tuple[str, int], RetentionResult]:
        """Runs retention now on every log whose cleanup.policy is delete only (compacted logs
        are left to the cleaner, as in Kafka) and returns what each deleted and why.
        ``cap_future_timestamps`` is explained at UnifiedLog.delete_old_segments.

        ``on_progress``, if given, is called on this thread with a :class:`kafkalog.Progress`
        (phase ``retention``, counted in ``logs``; the last has ``done == total``), at most
        every 100 ms but always at the end; the work runs on another thread meanwhile. An
        exception it raises stops the run before the next log (the logs done stay done; paused
        cleaning is resumed) and propagates once the run has stopped."""
        cap = arg.flag("cap_future_timestamps", cap_future_timestamps)
        return self._m.run_retention(cap, arg.progress_callback("on_progress", on_progress))

    def tick(self) -> int:
        """Runs the scheduled tasks that are due; returns the ms until the next one."""
        return self._m.tick()

    def advance_time(self, ms: int) -> int:
        """On a manual clock (``time_ms=``): moves it forward and runs what became due."""
        return self._m.advance_time(arg.integer("ms", ms, 0, arg.I64_MAX, f"must be in [0, {arg.I64_MAX}]: the clock never goes back"))

    @property
    def time_ms(self) -> int | None:
        """The manual clock's time, or None on the system clock."""
        return self._m.time_ms

    # -- log cleaner ------------------------------------------------------------------------

    def compact_now(
        self, topic: str, partition: int, *, on_progress: Callable[[Progress], None] | None = None
    ) -> CompactResult:
        """Compacts ``topic``-``partition`` now, through the cleaner's own bookkeeping: from its
        ``cleaner-offset-checkpoint`` entry over the whole cleanable range (in as many passes as
        the offset map needs), then the checkpoint moves to where the clean ended. Waits while a
        cleaner thread cleans the partition. Raises IllegalStateError if its cleaning is paused
        (the message says by what) or the partition is unknown, and InvalidConfigError if its
        ``cleanup.policy`` lacks ``compact`` or ``log.cleaner.enable`` is false. A partition
        marked uncleanable is tried anyway, and cleared on success.

        ``on_progress``, if given, is called on this thread with a :class:`kafkalog.Progress` for
        each phase of each round of the clean (``indexing``: the dirty segments' bytes mapped;
        ``cleaning``: the bytes of the segments recopied; each phase's last report has ``done
        == total``), at most every 100 ms per phase; the clean runs on another thread
        meanwhile. An exception it raises (or Ctrl-C) stops the clean at its next chunk: the
        segments already swapped in stay cleaned, the others are untouched, the partition is
        released, and the exception propagates once the clean has stopped."""
        progress = arg.progress_callback("on_progress", on_progress)
        return self._m.compact_now(_topic(topic), arg.partition(partition), progress)

    def cleaner_status(self, topic: str | None = None, partition: int | None = None) -> list[CleanerStatus]:
        """The compaction picture of every compacted partition (optionally of one topic or
        partition), in topic-partition order: cleaning state, clean / cleanable / uncleanable
        sections and dirty ratio, the last clean and its stats, why it is uncleanable or paused,
        and the passes the current offset map needs."""
        return self._m.cleaner_status(None if topic is None else _topic(topic), _optional_partition(partition))

    def cleaner_metrics(self) -> dict[str, int]:
        """Kafka's cleaner gauges by their names: ``max-dirty-percent``,
        ``max-buffer-utilization-percent``, ``cleaner-recopy-percent``, ``max-clean-time-secs``,
        ``max-compaction-delay-secs``, ``DeadThreadCount``, ``time-since-last-run-ms``,
        ``uncleanable-partitions-count`` and ``uncleanable-bytes`` (summed, and per log dir as
        ``<name>,logDirectory=<dir>``), plus ``dead-thread-restarts`` and ``threads``."""
        return dict(self._m.cleaner_metrics())

    def metrics(self) -> MetricsSnapshot:
        """A snapshot of the gauges Kafka registers for this manager, under Kafka's MBean names
        (``Gauge.mbean_name``): per log ``kafka.log:type=Log,name=NumLogSegments|LogStartOffset|
        LogEndOffset|Size,topic=T,partition=P`` (plus ``is-future=true`` for a future log); the
        manager's ``kafka.log:type=LogManager,name=OfflineLogDirectoryCount``, and per dir
        ``LogDirectoryOffline,logDirectory=D`` and the recovery gauges ``remainingLogsToRecover,
        dir=D`` / ``remainingSegmentsToRecover,dir=D,threadNum=0`` (0 once the manager is open;
        ``on_progress`` shows them during start-up); the cleaner's (unless
        ``log.cleaner.enable=false``) ``kafka.log:type=LogCleaner,name=max-buffer-utilization-
        percent|cleaner-recopy-percent|max-clean-time-secs|max-compaction-delay-secs|
        DeadThreadCount`` and ``kafka.log:type=LogCleanerManager,name=max-dirty-percent|
        time-since-last-run-ms`` and, per dir, ``uncleanable-partitions-count`` /
        ``uncleanable-bytes,logDirectory=D``. ``kafkalog.metrics.prometheus_text`` renders it."""
        return self._m.metrics()

    def retry_uncleanable(self, topic: str | None = None, partition: int | None = None) -> list[tuple[str, int]]:
        """Clears the uncleanable mark of the selected partitions (all by default) so the
        cleaner tries them again; returns the partitions cleared. (A topic config change
        retries its partitions by itself.)"""
        return self._m.retry_uncleanable(None if topic is None else _topic(topic), _optional_partition(partition))

    def run_cleaner_once(self) -> CleanOutcome | None:
        """Runs one iteration of a cleaner thread's loop on this thread (for a manual clock):
        cleans the filthiest compacted partition, if any is dirty enough, then runs retention
        on the idle compacted partitions. None when nothing needed cleaning."""
        return self._m.run_cleaner_once()

    def reconfigure_cleaner(self, config: Mapping[str, Any]) -> dict[str, str]:
        """Changes the cleaner at run time, as Kafka's dynamic broker config does:
        ``log.cleaner.threads`` (at least half, at most double the current count),
        ``log.cleaner.dedupe.buffer.size``, ``log.cleaner.io.buffer.load.factor``,
        ``log.cleaner.io.buffer.size``, ``log.cleaner.io.max.bytes.per.second`` and
        ``log.cleaner.backoff.ms``. Each value is checked against its key's range
        (InvalidConfigError names key, value and the rule); then the throttle changes at once
        and the threads are replaced by new ones with the new sizes. Returns the cleaner's keys
        after the change."""
        return self._m.reconfigure_cleaner(_config_pairs(config))

    # -- log dirs ---------------------------------------------------------------------------

    def log_dirs(self) -> list[LogDirInfo]:
        """Every configured log dir: online or not (and why), cordoned, partitions held."""
        return self._m.log_dirs()

    @property
    def live_log_dirs(self) -> list[str]:
        """The online log dirs."""
        return [d.path for d in self.log_dirs() if d.online]

    @property
    def offline_log_dirs(self) -> dict[str, str]:
        """Offline log dirs and the error that took each offline."""
        return {d.path: d.offline_reason or "offline" for d in self.log_dirs() if not d.online}

    def cordon_log_dir(self, path: str | os.PathLike[str], cordoned: bool = True) -> None:
        """Stops (or resumes) placing new partitions in ``path`` (KIP-1066)."""
        self._m.cordon_log_dir(os.path.abspath(arg.path("path", path)), arg.flag("cordoned", cordoned))

    def load_summary(self) -> list[DirLoadSummary]:
        """What start-up found in each log dir."""
        return self._m.load_summary()

    def stray_dirs(self) -> list[str]:
        """``-stray`` partition directories found at start-up (kept, not served)."""
        return [os.fspath(p) for p in self._m.stray_dirs()]

    def dirs_pending_deletion(self) -> list[str]:
        """``-delete`` directories waiting for their delay to pass."""
        return [os.fspath(p) for p in self._m.dirs_pending_deletion()]

    @property
    def config(self) -> dict[str, str]:
        """The broker-level configuration, every key with its value."""
        return self._m.config()

    def close(self, broker_epoch: int = -1) -> None:
        """Flushes and closes every log, writes the checkpoints and, in each dir where that all
        succeeded, ``.kafka_cleanshutdown`` with ``broker_epoch``; releases the locks. Closing
        twice is harmless."""
        broker_epoch = arg.integer("broker_epoch", broker_epoch, -1, arg.I64_MAX, f"must be in [-1, {arg.I64_MAX}] (-1: unknown)")
        if self._closed:
            return
        self._closed = True
        self._m.close(broker_epoch)
