"""What the suites and benches look at on disk, beside kafkalog's own readers: a directory's
"unchanged" fingerprint, the codec of every batch in a partition's segments, a partition's
segment and index files, a partition copied with its file times.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
from pathlib import Path


def dir_snapshot(path: Path) -> dict[str, tuple[int, int, str]]:
    """Name -> (size, mtime_ns, sha256) of every file under ``path``: what "unchanged" means."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(path))] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


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


def segment_files(path: Path) -> tuple[list[Path], list[Path]]:
    """A partition directory's ``.log`` files, and its ``.index`` then ``.timeindex`` files
    (each group sorted by name, so by base offset)."""
    logs = sorted(path.glob("*.log"))
    return logs, sorted(path.glob("*.index")) + sorted(path.glob("*.timeindex"))


def copy_partition(src: Path, dst: Path) -> Path:
    """Copies a partition directory to ``dst`` (which must not exist) and returns ``dst``. File
    times are kept (``shutil.copy2``): the cleaner gives a cleaned segment the last source
    segment's modification time, and retention reads it."""
    shutil.copytree(src, dst)
    return dst
