"""Finding the partition directories (``<topic>-<partition>``) a ``path`` option names: a
partition directory itself, several comma-separated, or a parent folder holding them (a log
dir as Kafka or a kafkalog LogManager keeps it). Kafka's renamed directories (``-delete``,
``-future``, ``-stray``) are never picked up. No pyspark import; runs on the driver.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..exceptions import InvalidOptionError
from .options import Subscription

__all__ = ["PARTITION_DIR", "TopicPartitionDir", "is_partition_dir", "parse_partition_dir", "partition_dirs_under", "find_partitions"]

#: `<topic>-<partition>`: Kafka's topic characters (legal names are checked by Kafka at
#: creation; here they only tell partition dirs from other folders). `-delete`, `-stray` and
#: `-future` dirs (`<topic>-<partition>.<uuid>-delete`) do not match, so they are never touched.
PARTITION_DIR = re.compile(r"^(?P<topic>[A-Za-z0-9._-]{1,249})-(?P<partition>0|[1-9][0-9]{0,9})$")


@dataclass(frozen=True, order=True)
class TopicPartitionDir:
    """One partition's log directory (Kafka's TopicPartition plus where it lives)."""

    topic: str
    partition: int
    path: str


def parse_partition_dir(path: str) -> tuple[str, int] | None:
    """The (topic, partition) a partition dir's name gives, None for any other name."""
    m = PARTITION_DIR.match(os.path.basename(os.path.normpath(path)))
    return (m["topic"], int(m["partition"])) if m else None


def is_partition_dir(path: str) -> bool:
    """A directory named ``<topic>-<N>`` holding a segment (``*.log``) or ``partition.metadata``;
    a log dir's parent folder holds neither."""
    if parse_partition_dir(path) is None or not os.path.isdir(path):
        return False
    with os.scandir(path) as it:
        return any(e.name.endswith(".log") or e.name == "partition.metadata" for e in it)


def partition_dirs_under(parent: str) -> list[TopicPartitionDir]:
    """The partition directories directly inside ``parent``."""
    out = []
    with os.scandir(parent) as it:
        for entry in it:
            tp = parse_partition_dir(entry.name)
            if tp is not None and entry.is_dir() and is_partition_dir(entry.path):
                out.append(TopicPartitionDir(tp[0], tp[1], entry.path))
    return out


def find_partitions(paths: tuple[str, ...], subscription: Subscription) -> list[TopicPartitionDir]:
    """The partitions ``path`` and the subscription select, sorted by (topic, partition).

    A parent folder needs ``subscribe`` / ``subscribePattern`` / ``assign``, as Spark's Kafka
    source needs one of them; partition directories named directly may go without. A
    partition found twice, or an assigned partition not found, is an error naming the option."""
    raw_path = ",".join(paths)
    found: dict[tuple[str, int], TopicPartitionDir] = {}
    saw_parent = False
    for path in paths:
        if not os.path.isdir(path):
            raise InvalidOptionError("path", raw_path, f"{path!r} is not a directory")
        if is_partition_dir(path):
            tp = parse_partition_dir(path)
            assert tp is not None
            candidates = [TopicPartitionDir(tp[0], tp[1], path)]
        else:
            saw_parent = True
            candidates = partition_dirs_under(path)
        for c in candidates:
            other = found.get((c.topic, c.partition))
            if other is not None and os.path.realpath(other.path) != os.path.realpath(c.path):
                raise InvalidOptionError("path", raw_path, f"partition {c.topic}-{c.partition} found twice: {other.path} and {c.path}")
            found[(c.topic, c.partition)] = c
    if saw_parent and subscription.kind == "none":
        raise InvalidOptionError(
            "subscribe", None, f"path {raw_path!r} is a folder of partition directories: give one of 'subscribe', 'subscribePattern' or 'assign'"
        )
    if subscription.kind == "assign":
        missing = [f"{t}-{p}" for t, p in subscription.assigned if (t, p) not in found]
        if missing:
            raise InvalidOptionError("assign", subscription.raw, f"no partition directory for {', '.join(missing)} under {raw_path!r}")
        wanted = set(subscription.assigned)
        return sorted(d for key, d in found.items() if key in wanted)
    return sorted(d for d in found.values() if subscription.wants_topic(d.topic))
