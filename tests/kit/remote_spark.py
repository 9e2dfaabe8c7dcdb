"""What the suites that run kafkalog on a Spark cluster and through Spark Connect check alike
(tests/spark/test_spark_cluster.py, test_spark_connect.py): a topic's rows read natively, and
a distributed compact compared with ``compact_now`` on a copy of the same partitions."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kafkalog
from kafkalog.records import Record

T0 = 1_700_000_000_000
#: Small segments and horizons, every dirty byte cleanable.
COMPACT_CONFIG = {
    "internal.segment.bytes": "4096",
    "delete.retention.ms": "1000",
    "min.compaction.lag.ms": "0",
    "min.cleanable.dirty.ratio": "0",
}


def local_rows(root: Path, topic: str, partitions: int, *, timestamps: bool = False) -> list[tuple]:
    """(topic, partition, offset, key, value[, timestamp]) of every record of ``topic``'s
    partitions under ``root``, read natively, sorted."""
    fields = ["topic", "partition", "offset", "key", "value"] + (["timestamp"] if timestamps else [])
    rows = []
    for p in range(partitions):
        with kafkalog.UnifiedLog.open(root / f"{topic}-{p}", read_only=True) as log:
            rows += [tuple(r[f] for f in fields) for r in log.to_arrow().to_pylist()]
    return sorted(rows)


def write_keyed(path: Path, seed: int, codec: str) -> None:
    """A compacted partition with superseded keys and some tombstones."""
    with kafkalog.UnifiedLog.open(path, {**COMPACT_CONFIG, "cleanup.policy": "compact"}) as log:
        for b in range(40):
            records = [
                Record(b"key-%02d" % ((seed * 13 + b * 5 + i) % 20), None if (b + i) % 9 == 0 else b"val-%d-%d" % (b, i),
                       timestamp=T0 + 10 * b + i)
                for i in range(1 + (b * 3 + seed) % 4)
            ]  # fmt: skip
            log.append(records, compression=codec, batch_size=300)


def check_clean_equals_compact_now(
    tmp_path: Path, codecs: list[str], clean: Callable[[Path, int], dict[int, Any]], *, seed: int = 0
) -> dict[int, Any]:
    """Writes one ``users`` partition per codec, cleans a copy of them with ``compact_now`` and
    the originals with ``clean(data dir, now)`` (a job or the column function; its result rows
    by partition), and checks each row is error-free with compact_now's end offset, and that
    every segment file is the same byte for byte. Returns the rows."""
    data, expected = tmp_path / "data", tmp_path / "expected"
    for p, codec in enumerate(codecs):
        write_keyed(data / f"users-{p}", seed=p + seed, codec=codec)
    shutil.copytree(data, expected)
    now = T0 + 100_000
    want = {}
    for p in range(len(codecs)):
        with kafkalog.UnifiedLog.open(expected / f"users-{p}", {**COMPACT_CONFIG, "cleanup.policy": "compact"}) as log:
            want[p] = log.compact_now(time_ms=now)
    rows = clean(data, now)
    assert sorted(rows) == list(range(len(codecs)))
    for p in range(len(codecs)):
        assert rows[p]["error"] is None and rows[p]["skipped"] is None, rows[p]
        assert rows[p]["cleaned_to_offset"] == want[p].end_offset
        assert rows[p]["records_after"] < rows[p]["records_before"]
    assert local_rows(data, "users", len(codecs)) == local_rows(expected, "users", len(codecs))
    for seg in sorted(expected.glob("users-*/*.log")):
        assert (data / seg.parent.name / seg.name).read_bytes() == seg.read_bytes(), seg.name
    return rows
