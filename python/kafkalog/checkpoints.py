"""Kafka's small log-directory files, read (and written) the way Kafka does.

- offset checkpoints: ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``;
- a partition's ``leader-epoch-checkpoint``;
- ``.kafka_cleanshutdown`` (the broker epoch) and ``meta.properties``.

Malformed files raise IllegalStateError naming the file and line; missing ones KafkaLogIOError.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from . import _arguments as arg
from . import _native
from .exceptions import InvalidArgumentTypeError
from .records import EpochEntry

__all__ = [
    "read_offset_checkpoint",
    "write_offset_checkpoint",
    "read_leader_epoch_checkpoint",
    "read_clean_shutdown",
    "read_meta_properties",
]


def read_offset_checkpoint(path: str | os.PathLike[str]) -> dict[tuple[str, int], int]:
    """Offsets by (topic, partition) from an offset checkpoint file."""
    return _native.read_offset_checkpoint(arg.path("path", path))


def write_offset_checkpoint(path: str | os.PathLike[str], offsets: dict[tuple[str, int], int]) -> None:
    """Writes an offset checkpoint file (tmp + fsync + rename + directory fsync). Each key is a
    (topic, partition) with a valid Kafka topic name (InvalidTopicError otherwise) and a
    partition in [0, 2**31 - 1], each value an offset in [0, 2**63 - 1] (InvalidArgumentError
    otherwise); nothing is written when one is refused."""
    if not isinstance(offsets, Mapping):
        raise InvalidArgumentTypeError(f"offsets must be a dict of (topic, partition) -> offset, not {type(offsets).__name__}")
    entries = []
    for key, offset in offsets.items():
        if not isinstance(key, tuple) or len(key) != 2:
            raise InvalidArgumentTypeError(f"offsets keys must be (topic, partition) pairs, not {key!r:.80}")
        topic = arg.string("topic", key[0])
        entries.append((topic, arg.partition(key[1], f"partition of {topic}"), arg.integer(f"offset of {key!r}", offset, 0, arg.I64_MAX, arg.OFFSETS)))
    _native.write_offset_checkpoint(arg.path("path", path), sorted(entries))


def read_leader_epoch_checkpoint(path: str | os.PathLike[str]) -> list[EpochEntry]:
    """The (epoch, start offset) entries of a partition's leader-epoch-checkpoint."""
    return _native.read_leader_epoch_checkpoint(arg.path("path", path))


def read_clean_shutdown(path: str | os.PathLike[str]) -> int:
    """The broker epoch recorded in a .kafka_cleanshutdown file."""
    return _native.read_clean_shutdown(arg.path("path", path))


def read_meta_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """The keys of a log directory's meta.properties (version, cluster.id, node.id, directory.id)."""
    return _native.read_properties(arg.path("path", path))
