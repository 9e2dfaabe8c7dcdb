"""Helpers shared by the Spark suites."""

from __future__ import annotations

import struct
from pathlib import Path


def batch_codecs(log_path: Path) -> list[int]:
    """The compression codec id (attributes & 7) of every batch in a partition's segments:
    0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
    codecs = []
    for seg in sorted(log_path.glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos + 61 <= len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            (attributes,) = struct.unpack_from(">h", data, pos + 21)
            codecs.append(attributes & 7)
            pos += 12 + length
    return codecs
