"""Options of ``df.write.format("kafkalog")``, parsed and checked on the driver.

Sink options (Spark's Kafka sink names where they exist):

- ``path``: the folder holding the topic's partition directories (a log dir); several
  comma-separated spread new partitions over them (partition p goes to dir p % n).
- ``topic``: the topic of every row (overrides a ``topic`` column, as in Spark's Kafka sink).
- ``partitions``: partition count of a topic created by the write (default 1, Kafka's
  ``num.partitions``); a larger count than an existing topic has adds partitions, as
  ``kafka-topics --alter --partitions`` does.
- ``compression.type`` (or Spark's ``kafka.compression.type``): the producer's codec for the
  written batches: none (default), gzip, snappy, lz4, zstd.
- ``lockTimeoutMs``: how long a task waits for another writer's lock on a partition
  directory (default 600000); then LogDirLockedError.
- ``testSeam``: for kafkalog's own tests only, the ``spec`` of a
  :class:`kafkalog.testing.Seam` (a task waiting for a lock says so through it).

Batches are at most ``min(max.message.bytes, segment size)`` bytes, what the engine accepts
(see :mod:`kafkalog.spark.batch_limits`); a row that cannot fit alone in a batch fails its
task with RecordBatchTooLargeError naming the row.

``checkpointLocation`` (a streaming write's, read by Spark itself) is ignored.

Every other option must be a Kafka topic config (``cleanup.policy``, ``segment.bytes``,
``max.message.bytes``, ...), validated by kafkalog's LogConfig; it applies to the logs this
write opens (kafkalog keeps no topic configs on disk, as Kafka keeps them in cluster metadata).
No pyspark import.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from ..exceptions import InvalidConfigError, InvalidOptionError
from .._native import validate_topic_config
from .batch_limits import BatchLimit, batch_limit, max_single_record
from .options import WRITE_OPTIONS, parse_positive_int

__all__ = ["WriteOptions", "parse_write_options", "PRODUCER_CODECS"]

#: Kafka producer's compression.type values.
PRODUCER_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

#: Options Spark reads itself and still hands the sink (lower case): not topic configs.
SPARK_OWN_OPTIONS = frozenset({"checkpointlocation"})


@dataclass(frozen=True)
class WriteOptions:
    """Every write option, parsed; plain values, pickled to executors."""

    parents: tuple[str, ...]
    topic: str | None
    partitions: int | None
    compression: str
    lock_timeout_ms: int
    topic_config: dict[str, str] = field(default_factory=dict)
    #: The largest batch the logs accept, from the topic configs as the engine resolves them.
    batch_limit: BatchLimit = BatchLimit(1048588, 1 << 30, "segment.bytes")
    #: Tests only (the ``testSeam`` option): a kafkalog.testing.Seam spec.
    test_seam: str | None = None

    @cached_property
    def max_single_record(self) -> int:
        """Rows whose encoded size may pass this are measured alone before they are buffered."""
        return max_single_record(self.batch_limit.bytes, self.compression)

    def dir_for(self, topic: str, partition: int) -> str:
        """Where a new partition directory goes."""
        return os.path.join(self.parents[partition % len(self.parents)], f"{topic}-{partition}")


def _resolve_topic_config(config: dict[str, str]) -> dict[str, str]:
    """Checks ``config`` with the engine's topic table (an unknown key is an unknown option);
    returns the config a log opened with it would have."""
    try:
        return validate_topic_config(list(config.items()))
    except InvalidConfigError as e:
        message = str(e)
        m = re.search(r"for configuration (\S+):", message)
        bad = m[1] if m else None
        if bad is None or bad not in config:
            raise
        if "unknown" in message:
            known = ", ".join(o for o in WRITE_OPTIONS if o != "testSeam")
            message = f"unknown option: neither a sink option ({known}) nor a Kafka topic config"
        raise InvalidOptionError(bad, config[bad], message) from None


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    """Parses the options of a write; sink options are matched case-insensitively, the rest go
    to LogConfig as topic configs (whose names are lower case)."""
    by_lower = {name.lower(): name for name in WRITE_OPTIONS}
    sink: dict[str, str] = {}
    config: dict[str, str] = {}
    for key, value in options.items():
        name = by_lower.get(key.lower())
        if key.lower() in SPARK_OWN_OPTIONS:
            continue
        if name is None:
            config[key.lower()] = str(value)
        else:
            sink[name] = str(value)
    raw_path = sink.get("path", "")
    # Absolute here, on the driver (the planner's Python worker runs in the driver's working
    # directory): each executor's tasks run in its own work dir, where a relative path would
    # put the partitions.
    parents = tuple(os.path.abspath(p.strip()) for p in raw_path.split(",") if p.strip())
    if not parents:
        raise InvalidOptionError("path", sink.get("path"), "the folder to write partition directories into is required")
    for p in parents:
        if os.path.exists(p) and not os.path.isdir(p):
            raise InvalidOptionError("path", raw_path, f"{p!r} is not a directory")
    topic = sink.get("topic")
    if topic is not None and not topic.strip():
        raise InvalidOptionError("topic", topic, "empty topic name")
    partitions = parse_positive_int("partitions", sink["partitions"]) if "partitions" in sink else None
    codec_option = "compression.type" if "compression.type" in sink else "kafka.compression.type"
    codec = sink.get(codec_option, "none").strip().lower()
    if codec not in PRODUCER_CODECS:
        raise InvalidOptionError(codec_option, sink[codec_option], f"expected one of {', '.join(PRODUCER_CODECS)}")
    lock_timeout = parse_positive_int("lockTimeoutMs", sink["lockTimeoutMs"]) if "lockTimeoutMs" in sink else 600_000
    limit = batch_limit(_resolve_topic_config(config))
    return WriteOptions(
        parents, topic.strip() if topic else None, partitions, codec, lock_timeout, config, limit, sink.get("testSeam")
    )
