"""Kafka's small log-directory files, read (and written) the way Kafka does.

- offset checkpoints: ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``;
- a partition's ``leader-epoch-checkpoint``;
- ``.kafka_cleanshutdown`` (the broker epoch) and ``meta.properties``.

Malformed files raise IllegalStateError naming the file and line; missing ones KafkaLogIOError.
"""

from __future__ import annotations

import os

from . import _native

__all__ = [
    "read_offset_checkpoint",
    "write_offset_checkpoint",
    "read_leader_epoch_checkpoint",
    "read_clean_shutdown",
    "read_meta_properties",
]


def read_offset_checkpoint(path: str | os.PathLike[str]) -> dict[tuple[str, int], int]:
    """Offsets by (topic, partition) from an offset checkpoint file."""
    return {(t, p): o for t, p, o in _native.read_offset_checkpoint(os.fspath(path))}


def write_offset_checkpoint(path: str | os.PathLike[str], offsets: dict[tuple[str, int], int]) -> None:
    """Writes an offset checkpoint file (tmp + fsync + rename + directory fsync)."""
    _native.write_offset_checkpoint(os.fspath(path), [(t, p, o) for (t, p), o in sorted(offsets.items())])


def read_leader_epoch_checkpoint(path: str | os.PathLike[str]) -> list[tuple[int, int]]:
    """(epoch, start offset) entries of a partition's leader-epoch-checkpoint."""
    return _native.read_leader_epoch_checkpoint(os.fspath(path))


def read_clean_shutdown(path: str | os.PathLike[str]) -> int:
    """The broker epoch recorded in a .kafka_cleanshutdown file."""
    return _native.read_clean_shutdown(os.fspath(path))


def read_meta_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """The keys of a log directory's meta.properties (version, cluster.id, node.id, directory.id)."""
    return _native.read_properties(os.fspath(path))
