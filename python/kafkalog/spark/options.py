"""Options of the ``kafkalog`` Spark data source, parsed and checked on the driver.

Spark hands options over as strings in a case-insensitive map whose keys are lower-cased, so
every option is looked up lower-cased and reported under its documented spelling: the names of
Spark's Kafka source (``startingOffsets``, ``failOnDataLoss``, ``kafka.isolation.level``, ...),
with ``path`` in place of ``kafka.bootstrap.servers``. Every problem raises
:class:`kafkalog.exceptions.InvalidOptionError` naming the option and the value.

The parsed forms are frozen dataclasses of strings, numbers and dicts: Spark pickles them to
executors. No pyspark import here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..exceptions import InvalidOptionError

__all__ = [
    "READ_OPTIONS",
    "WRITE_OPTIONS",
    "OffsetSpec",
    "Subscription",
    "ReadOptions",
    "canonical_options",
    "parse_read_options",
    "parse_bool",
    "parse_positive_int",
]

#: Spark's Kafka-source option names this source reads (``path`` instead of bootstrap servers).
READ_OPTIONS = (
    "path",
    "subscribe",
    "subscribePattern",
    "assign",
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "endingTimestamp",
    "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "failOnDataLoss",
    "includeHeaders",
    "minPartitions",
    "maxOffsetsPerTrigger",
    "kafka.isolation.level",
)

#: Sink options; every other option of a write must be a Kafka topic config (``cleanup.policy``).
WRITE_OPTIONS = ("path", "topic", "partitions", "compression.type", "kafka.compression.type", "lockTimeoutMs", "testSeam")

#: Kafka's special offsets in JSON offset maps (Spark's Kafka source uses the same).
EARLIEST = -2
LATEST = -1

_ISOLATION = {"read_uncommitted": "read_uncommitted", "read_committed": "read_committed"}


def canonical_options(options: Mapping[str, str], known: tuple[str, ...]) -> dict[str, str]:
    """Maps Spark's (lower-cased) option keys onto their documented names; an unknown key
    raises InvalidOptionError."""
    by_lower = {name.lower(): name for name in known}
    out: dict[str, str] = {}
    for key, value in options.items():
        name = by_lower.get(key.lower())
        if name is None:
            raise InvalidOptionError(key, str(value), f"unknown option (known: {', '.join(known)})")
        out[name] = str(value)
    return out


def parse_bool(option: str, raw: str) -> bool:
    """"true" / "false", case-insensitive, as Spark parses boolean options."""
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise InvalidOptionError(option, raw, "expected 'true' or 'false'")


def parse_positive_int(option: str, raw: str) -> int:
    """A positive integer option (minPartitions, maxOffsetsPerTrigger, partitions)."""
    try:
        value = int(raw.strip())
    except ValueError:
        raise InvalidOptionError(option, raw, "expected a positive integer") from None
    if value <= 0:
        raise InvalidOptionError(option, raw, "expected a positive integer")
    return value


def _parse_long(option: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidOptionError(option, raw, "expected an integer (milliseconds since the epoch)") from None


def _json_object(option: str, raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InvalidOptionError(option, raw, f"invalid JSON ({e.msg} at character {e.pos})") from None
    if not isinstance(parsed, dict):
        raise InvalidOptionError(option, raw, "expected a JSON object keyed by topic")
    return parsed


def _partition_map(option: str, raw: str) -> dict[tuple[str, int], int]:
    """``{"topic": {"0": 23, "1": -2}}`` into {(topic, 0): 23, (topic, 1): -2}."""
    out: dict[tuple[str, int], int] = {}
    for topic, parts in _json_object(option, raw).items():
        if not isinstance(parts, dict):
            raise InvalidOptionError(option, raw, f"topic {topic!r}: expected an object of partition -> number")
        for p, value in parts.items():
            if not (isinstance(p, str) and p.isdigit()):
                raise InvalidOptionError(option, raw, f"topic {topic!r}: partition {p!r} is not a number")
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidOptionError(option, raw, f"{topic}-{p}: {value!r} is not an integer")
            out[(topic, int(p))] = value
    return out


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends (Spark's ``KafkaOffsetRangeLimit``): ``earliest``,
    ``latest``, ``offsets`` (per partition, -2 = earliest, -1 = latest), ``timestamp`` (one
    for every partition) or ``timestamps`` (per partition). ``option`` and ``raw`` name the
    option it came from, for errors."""

    kind: str
    option: str
    raw: str
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    timestamp: int = 0


@dataclass(frozen=True)
class Subscription:
    """Which partitions to read: ``subscribe`` (topics), ``subscribePattern`` (a regex matched
    against the whole topic name, as Kafka's pattern subscription does), ``assign`` (explicit
    partitions), or ``none`` when ``path`` names partition directories."""

    kind: str
    raw: str = ""
    topics: tuple[str, ...] = ()
    assigned: tuple[tuple[str, int], ...] = ()

    def wants_topic(self, topic: str) -> bool:
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return re.fullmatch(self.raw, topic) is not None
        if self.kind == "assign":
            return any(t == topic for t, _ in self.assigned)
        return True


@dataclass(frozen=True)
class ReadOptions:
    """Every read option, parsed (Spark's Kafka-source names in the field docs)."""

    paths: tuple[str, ...]
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    #: startingOffsetsByTimestampStrategy: "error" or "latest" when no record is that recent.
    timestamp_strategy: str
    fail_on_data_loss: bool
    include_headers: bool
    min_partitions: int | None
    max_offsets_per_trigger: int | None
    #: kafka.isolation.level: read_uncommitted (default) or read_committed.
    isolation: str
    streaming: bool


def _subscription(opts: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribePattern", "assign") if k in opts]
    if len(given) > 1:
        raise InvalidOptionError(
            given[1], opts[given[1]], f"only one of 'subscribe', 'subscribePattern', 'assign' may be given (also {given[0]!r})"
        )
    if not given:
        return Subscription("none")
    kind = given[0]
    raw = opts[kind]
    if kind == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise InvalidOptionError(kind, raw, "expected a comma-separated list of topics")
        return Subscription(kind, raw, topics=topics)
    if kind == "subscribePattern":
        try:
            re.compile(raw)
        except re.error as e:
            raise InvalidOptionError(kind, raw, f"invalid regular expression ({e})") from None
        return Subscription(kind, raw)
    assigned: list[tuple[str, int]] = []
    for topic, parts in _json_object(kind, raw).items():
        if not isinstance(parts, list) or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts):
            raise InvalidOptionError(kind, raw, f"topic {topic!r}: expected a list of partition numbers")
        assigned.extend((topic, p) for p in parts)
    if not assigned:
        raise InvalidOptionError(kind, raw, "assigns no partition")
    return Subscription(kind, raw, assigned=tuple(sorted(set(assigned))))


def _offset_spec(opts: Mapping[str, str], side: str, streaming: bool) -> OffsetSpec:
    """startingX / endingX, in Spark's precedence: ...Timestamp over ...OffsetsByTimestamp
    over ...Offsets."""
    ts_name, by_ts_name, off_name = f"{side}Timestamp", f"{side}OffsetsByTimestamp", f"{side}Offsets"
    if ts_name in opts:
        ts = _parse_long(ts_name, opts[ts_name])
        if ts < 0:
            raise InvalidOptionError(ts_name, opts[ts_name], "timestamps must be >= 0")
        return OffsetSpec("timestamp", ts_name, opts[ts_name], timestamp=ts)
    if by_ts_name in opts:
        stamps = _partition_map(by_ts_name, opts[by_ts_name])
        for (topic, p), ts in stamps.items():
            if ts < 0:
                raise InvalidOptionError(by_ts_name, opts[by_ts_name], f"{topic}-{p}: timestamps must be >= 0")
        return OffsetSpec("timestamps", by_ts_name, opts[by_ts_name], offsets=stamps)
    default = "latest" if side == "ending" or streaming else "earliest"
    raw = opts.get(off_name, default)
    lowered = raw.strip().lower()
    if side == "starting" and not streaming and lowered == "latest":
        raise InvalidOptionError(off_name, raw, "starting offset can't be latest for batch queries")
    if side == "ending" and lowered == "earliest":
        raise InvalidOptionError(off_name, raw, "ending offset can't be earliest for batch queries")
    if lowered in ("earliest", "latest"):
        return OffsetSpec(lowered, off_name, raw)
    offsets = _partition_map(off_name, raw)
    for (topic, p), value in offsets.items():
        if side == "starting" and not streaming and value == LATEST:
            raise InvalidOptionError(off_name, raw, f"{topic}-{p}: starting offset can't be latest (-1) for batch queries")
        if side == "ending" and value == EARLIEST:
            raise InvalidOptionError(off_name, raw, f"{topic}-{p}: ending offset can't be earliest (-2) for batch queries")
        if value < EARLIEST:
            raise InvalidOptionError(off_name, raw, f"{topic}-{p}: offset {value} is neither >= 0, -1 (latest) nor -2 (earliest)")
    return OffsetSpec("offsets", off_name, raw, offsets=offsets)


def parse_read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Parses and checks the options of ``spark.read`` (``streaming=False``) or
    ``spark.readStream`` (``streaming=True``)."""
    opts = canonical_options(options, READ_OPTIONS)
    if "path" not in opts or not opts["path"].strip():
        raise InvalidOptionError("path", opts.get("path"), "a log directory, several comma-separated, or a folder of them is required")
    # Absolute here, on the driver (the planner's Python worker runs in the driver's working
    # directory): executors run theirs in their own work dirs.
    paths = tuple(os.path.abspath(p.strip()) for p in opts["path"].split(",") if p.strip())
    if streaming:
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
            if name in opts:
                raise InvalidOptionError(name, opts[name], "ending offsets are not valid in streaming queries")
    min_partitions = parse_positive_int("minPartitions", opts["minPartitions"]) if "minPartitions" in opts else None
    max_per_trigger = (
        parse_positive_int("maxOffsetsPerTrigger", opts["maxOffsetsPerTrigger"]) if "maxOffsetsPerTrigger" in opts else None
    )
    strategy = opts.get("startingOffsetsByTimestampStrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise InvalidOptionError("startingOffsetsByTimestampStrategy", opts["startingOffsetsByTimestampStrategy"], "expected 'error' or 'latest'")
    raw_isolation = opts.get("kafka.isolation.level", "read_uncommitted")
    isolation = _ISOLATION.get(raw_isolation.strip().lower())
    if isolation is None:
        raise InvalidOptionError("kafka.isolation.level", raw_isolation, "expected 'read_uncommitted' or 'read_committed'")
    return ReadOptions(
        paths=paths,
        subscription=_subscription(opts),
        starting=_offset_spec(opts, "starting", streaming),
        ending=_offset_spec(opts, "ending", streaming),
        timestamp_strategy=strategy,
        fail_on_data_loss=parse_bool("failOnDataLoss", opts.get("failOnDataLoss", "true")),
        include_headers=parse_bool("includeHeaders", opts.get("includeHeaders", "false")),
        min_partitions=min_partitions,
        max_offsets_per_trigger=max_per_trigger,
        isolation=isolation,
        streaming=streaming,
    )
