"""Exceptions raised by kafkalog.

Every error the native engine reports maps onto one of these classes, so callers (and Spark,
which pickles exceptions back to the driver) can catch them by kind. Messages name the file,
offset, position, config key or allowed range involved.
"""

from __future__ import annotations

__all__ = [
    "KafkaLogError",
    "CorruptRecordError",
    "CorruptIndexError",
    "OffsetOutOfRangeError",
    "RecordBatchTooLargeError",
    "InvalidRecordError",
    "InvalidOffsetError",
    "OffsetOverflowError",
    "InvalidConfigError",
    "IllegalStateError",
    "LogClosedError",
    "ReadOnlyLogError",
    "LogDirLockedError",
    "InconsistentTopicIdError",
    "InvalidTopicError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "UnsupportedIsolationError",
    "KafkaLogIOError",
    "KafkaStorageError",
    "AllLogDirsOfflineError",
    "LogCleaningAbortedError",
    "FencedLeaderEpochError",
    "SparkOptionError",
    "InvalidOptionError",
    "DataLossError",
    "WorkerImportError",
    "OutOfOrderSequenceError",
    "InvalidProducerEpochError",
    "TransactionCoordinatorFencedError",
    "InvalidTxnStateError",
    "CorruptSnapshotError",
    "SparkUnavailableError",
]


class KafkaLogError(Exception):
    """Base class of every kafkalog error."""


class CorruptRecordError(KafkaLogError):
    """Bytes that do not form a valid record batch (Kafka's CorruptRecordException)."""


class CorruptIndexError(KafkaLogError):
    """An index file that fails its sanity check (Kafka's CorruptIndexException)."""


class OffsetOutOfRangeError(KafkaLogError, ValueError):
    """An offset outside [log start offset, log end offset] (Kafka's OffsetOutOfRangeException):
    a read's offset, or a new log start past the high watermark. A ValueError too: the offset
    given is wrong for this log."""


class RecordBatchTooLargeError(KafkaLogError):
    """A batch larger than max.message.bytes (Kafka's RecordBatchTooLargeException)."""


class InvalidRecordError(KafkaLogError):
    """A record the log refuses: a missing key on a compacted topic, a timestamp out of range."""


class InvalidOffsetError(KafkaLogError):
    """Offsets that do not increase (Kafka's InvalidOffsetException)."""


class OffsetOverflowError(InvalidOffsetError):
    """An offset too far from its segment's base offset to be stored relative to it."""


class InvalidConfigError(KafkaLogError, ValueError):
    """A configuration value rejected when given; the message names the key, value and rule."""


class IllegalStateError(KafkaLogError):
    """An operation the log's current state does not allow."""


class LogClosedError(KafkaLogError):
    """The log has been closed."""


class ReadOnlyLogError(KafkaLogError):
    """A write on a log opened with read_only=True."""


class LogDirLockedError(KafkaLogError):
    """Another writer holds the directory; read-only opens need no lock."""


class InconsistentTopicIdError(KafkaLogError):
    """partition.metadata names another topic id (Kafka's InconsistentTopicIdException)."""


class InvalidTopicError(KafkaLogError, ValueError):
    """A topic name that breaks Kafka's rules (Kafka's InvalidTopicException): empty, '.' or
    '..', longer than 249 characters, or a character other than ASCII alphanumerics, '.', '_'
    and '-'."""


class InvalidArgumentError(KafkaLogError, ValueError):
    """An argument outside its allowed range or set of values (Kafka's IllegalArgumentException):
    a negative offset, a number too large for its field, an unknown compression or isolation
    name. The message names the argument, the value given and what is accepted. Raised before
    anything changes."""


class InvalidArgumentTypeError(KafkaLogError, TypeError):
    """An argument of the wrong type (a bytes header key, a str where an int belongs); the
    message names the argument and the types accepted."""


class UnsupportedIsolationError(InvalidArgumentError):
    """A read isolation this version cannot serve. Every isolation (``read_uncommitted``,
    ``read_committed``, ``log_end``) is served now, so nothing raises it: the class stays so that
    code catching it keeps working."""


class KafkaLogIOError(KafkaLogError, OSError):
    """An operating-system I/O error; errno and filename are set as on OSError."""


class KafkaStorageError(KafkaLogError):
    """The log's log dir went offline after an I/O error (Kafka's KafkaStorageException).

    The LogManager takes the dir offline: its logs are closed and new partitions go elsewhere.
    """


class AllLogDirsOfflineError(KafkaStorageError):
    """Every log dir of the LogManager has failed; it cannot serve anything any more."""


class LogCleaningAbortedError(KafkaLogError):
    """A clean stopped because its log was truncated, deleted or closed meanwhile (Kafka's
    LogCleaningAbortedException). The log is unchanged; cleaning it again is safe."""


class FencedLeaderEpochError(KafkaLogError):
    """A leader append in a leader epoch older than the partition's latest (Kafka's
    FencedLeaderEpochException): the caller is a stale leader. Nothing was written."""


class SparkOptionError(KafkaLogError):
    """Base of the Spark data source's errors, which name an option: built from (option, value,
    reason), which stay the exception's ``args`` so it pickles back from Spark executors with
    its fields intact; built from a single message, a plain error with that message."""

    option: str | None
    value: str | None
    reason: str | None

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        named = len(args) == 3 and all(a is None or isinstance(a, str) for a in args)
        self.option, self.value, self.reason = args if named else (None, None, None)  # type: ignore[assignment]

    def _shown(self) -> str:
        return "missing" if self.value is None else f"= {self.value!r}"


class InvalidOptionError(SparkOptionError, InvalidConfigError):
    """A Spark data source option (``kafkalog.spark``) that is unknown, missing, malformed or out
    of range: ``InvalidOptionError(option, value, reason)``. ``option`` is the option's
    documented name (Spark's Kafka-source spelling, e.g. ``startingOffsets``), ``value`` the
    string given (None when missing)."""

    def __str__(self) -> str:
        if self.option is None:
            return super().__str__()
        return f"option {self.option!r} {self._shown()}: {self.reason}"


class DataLossError(SparkOptionError, OffsetOutOfRangeError):
    """Records a Spark query needs are gone or out of range: offsets below the log start (deleted
    by retention or ``delete_records``), past the log end, or a partition directory that
    vanished. Raised with ``failOnDataLoss=true`` (the default), as Spark's Kafka source fails
    the query; ``failOnDataLoss=false`` skips the missing range instead.
    ``DataLossError(option, value, reason)`` names the option whose offsets could not be
    honoured."""

    def __str__(self) -> str:
        if self.option is None:
            return super().__str__()
        return (
            f"option {self.option!r} {self._shown()}: {self.reason} "
            "(set failOnDataLoss=false to skip lost records instead of failing)"
        )


class WorkerImportError(KafkaLogError, ImportError):
    """Spark's Python workers cannot import kafkalog (``kafkalog.spark.register`` checks), so
    the data source cannot run; the message says how to make it importable there."""


class OutOfOrderSequenceError(KafkaLogError):
    """A producer batch whose sequence number does not follow the last one the partition accepted
    from that producer (Kafka's OutOfOrderSequenceException). The message names the producer id,
    the batch's offset and sequence, and the sequence that was expected."""


class InvalidProducerEpochError(KafkaLogError):
    """A batch or transaction marker from an older producer epoch than the partition has seen
    (Kafka's InvalidProducerEpochException); with transactions version 2 a marker must bump the
    epoch. The message names the producer id, the offset and both epochs."""


class TransactionCoordinatorFencedError(KafkaLogError):
    """A transaction marker from an older transaction coordinator epoch than the partition has
    seen for the producer (Kafka's TransactionCoordinatorFencedException): a zombie coordinator."""


class InvalidTxnStateError(KafkaLogError):
    """A write that breaks the producer's transaction state (Kafka's InvalidTxnStateException),
    such as a non-transactional batch while the producer has a transaction open."""


class CorruptSnapshotError(KafkaLogError):
    """A producer state snapshot (``<offset>.snapshot``) that fails its version, schema or CRC
    check (Kafka's CorruptSnapshotException). Loading a log deletes such a snapshot with a
    warning and uses the next older one."""


class SparkUnavailableError(KafkaLogError, ImportError):
    """kafkalog.spark cannot run here: pyspark is missing or of an unsupported version, or no
    Java runtime Spark can use was found. The message names what was found and the fix
    (``pip install 'kafkalog[spark]'``, a JDK 17+ on PATH or in JAVA_HOME)."""
