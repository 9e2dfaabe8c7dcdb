"""The partition directories a read's ``path`` option names: a partition directory itself,
several comma-separated, or a parent folder holding them (a log dir as Kafka or a kafkalog
LogManager keeps it). Which directories are partitions is the engine's rule
(:func:`kafkalog.discover`: Kafka's ``<topic>-<partition>`` names; renamed ``-delete``,
``-future`` and ``-stray`` directories are never picked up); this module adds the options'
rules on top. No pyspark import; runs on the driver.
"""

from __future__ import annotations

import os

from .._native import DiscoveredPartition, discover
from ..exceptions import InvalidOptionError
from .options import Subscription

__all__ = ["find_partitions"]


def find_partitions(paths: tuple[str, ...], subscription: Subscription) -> list[DiscoveredPartition]:
    """The partitions ``path`` and the subscription select, sorted by (topic, partition).

    A parent folder needs ``subscribe`` / ``subscribePattern`` / ``assign``, as Spark's Kafka
    source needs one of them; partition directories named directly may go without. A
    partition found twice, or an assigned partition not found, is an error naming the option."""
    raw_path = ",".join(paths)
    found: dict[tuple[str, int], DiscoveredPartition] = {}
    saw_parent = False
    for path in paths:
        if not os.path.isdir(path):
            raise InvalidOptionError("path", raw_path, f"{path!r} is not a directory")
        candidates = discover(path)
        # Only a partition directory named directly comes back as the path given.
        if not any(c.path == path for c in candidates):
            saw_parent = True
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
