"""kafkalog: Apache Kafka's log storage engine as a library.

Reads and writes Kafka 4.x log directories byte for byte: v2 record batches with every codec,
segments with offset and time indexes, one :class:`UnifiedLog` per partition, and a
:class:`LogManager` over several log dirs (recovery, checkpoints, retention).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import batches, checkpoints, cleaner, exceptions
from ._native import __version__, decode_batches
from ._native import (
    DiscoveredPartition,
    LogDirLockProbe,
    OnDemandCleanerConfig,
    PartitionCheck,
    VerifyFinding,
    discover,
    log_dir_partitions,
    on_demand_cleaner_config,
    probe_log_dir_lock,
)
from .cleaner import (
    CleanableSections,
    CleanerStats,
    CleanPass,
    CompactResult,
    DirtyCompactResult,
    LastClean,
    SegmentTombstones,
)
from .exceptions import (
    CorruptRecordError,
    InvalidArgumentError,
    InvalidConfigError,
    KafkaLogError,
    LogClosedError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
)
from .log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, UnifiedLog
from .manager import (
    CleanerStatus,
    CleanOutcome,
    DirLoadSummary,
    DirRecoveryProgress,
    Gauge,
    LogDirInfo,
    LogManager,
    MetricsSnapshot,
    Progress,
)
from .records import (
    AbortedTransaction,
    ActiveProducer,
    AppendInfo,
    ConsumerRecord,
    DecodedRecord,
    DeletedSegment,
    EpochEntry,
    OffsetAndEpoch,
    OngoingTransaction,
    ReadResult,
    Record,
    RetentionPlan,
    RetentionResult,
    SegmentInfo,
    TimestampAndOffset,
)

__all__ = [
    "__version__",
    "decode_batches",
    "batches",
    "checkpoints",
    "exceptions",
    "cleaner",
    "CleanerStats",
    "CleanPass",
    "CompactResult",
    "DirtyCompactResult",
    "CleanableSections",
    "SegmentTombstones",
    "RetentionPlan",
    "LastClean",
    "KAFKA_SCHEMA",
    "UnifiedLog",
    "LogManager",
    "LogDirInfo",
    "DirLoadSummary",
    "Gauge",
    "MetricsSnapshot",
    "Progress",
    "DirRecoveryProgress",
    "CleanerStatus",
    "CleanOutcome",
    "DeletedSegment",
    "RetentionResult",
    "Record",
    "ConsumerRecord",
    "AppendInfo",
    "SegmentInfo",
    "ReadResult",
    "TimestampAndOffset",
    "DecodedRecord",
    "EpochEntry",
    "OffsetAndEpoch",
    "AbortedTransaction",
    "ActiveProducer",
    "OngoingTransaction",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "KafkaLogError",
    "CorruptRecordError",
    "OffsetOutOfRangeError",
    "RecordBatchTooLargeError",
    "InvalidConfigError",
    "InvalidArgumentError",
    "LogClosedError",
]

# Partition discovery, the log dir lock probe and the on-demand cleaner's keys, from the engine
# (the Spark data source and maintenance jobs use them).
__all__ += [
    "discover",
    "log_dir_partitions",
    "DiscoveredPartition",
    "probe_log_dir_lock",
    "LogDirLockProbe",
    "on_demand_cleaner_config",
    "OnDemandCleanerConfig",
]

# kafkalog verify's result classes (exported here so that they pickle).
__all__ += ["PartitionCheck", "VerifyFinding"]

if TYPE_CHECKING:  # for type checkers: kafkalog.KAFKA_SCHEMA is a pyarrow Schema
    from .arrow import KAFKA_SCHEMA as KAFKA_SCHEMA
else:

    def __getattr__(name: str) -> Any:
        """``KAFKA_SCHEMA``, a pyarrow schema, on first use: ``import kafkalog`` does not
        import pyarrow, whose import starts threads (numpy's OpenBLAS pool). ``from kafkalog
        import *`` does import it."""
        if name == "KAFKA_SCHEMA":
            from .arrow import KAFKA_SCHEMA

            return KAFKA_SCHEMA
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(globals()) | {"KAFKA_SCHEMA"})
