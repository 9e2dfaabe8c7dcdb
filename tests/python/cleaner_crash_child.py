"""Child process for test_cleaner_crash: appends keyed records to a compacted log and cleans it
in a loop until its crash seam kills it with SIGKILL.

    python cleaner_crash_child.py <partition_dir> <seed> <crash_after>

Arms the crash seam (:func:`kafkalog.testing.crash_after`): the child kills itself just before
the file operation under the partition dir that would change something once ``<crash_after>``
of them have gone through. Then it opens the log (and recovers it) and loops: append a batch,
maybe roll, and most of the time ``compact_now`` with a random offset-map size (tiny maps mean
many passes, many replaces). Most file operations belong to cleans, so kills land mostly inside
one: writing ``.cleaned`` segments, or in the middle of the crash-safe replace. The crash point
is a pure function of the two numbers, the same on any machine.

Record contents are a pure function of the offset (:func:`content`), so the parent knows what
every offset held without any status file: a record served at offset o must be ``content(o)``,
and every key's last record below the log end must be served unless it is a tombstone (a
tombstone may be gone, but then so must every older record of its key).
"""

from __future__ import annotations

import random
import sys

T0 = 1_700_000_000_000
KEYS = 23
DELETE_RETENTION_MS = 3_000

CONFIG: dict[str, str] = {
    "internal.segment.bytes": "2048",
    "cleanup.policy": "compact",
    "delete.retention.ms": str(DELETE_RETENTION_MS),
    "file.delete.delay.ms": "0",
    "index.interval.bytes": "128",
}


def content(offset: int) -> tuple[bytes, bytes | None, int]:
    """(key, value, timestamp) of the record at ``offset``; a value of None is a tombstone."""
    key = b"k%d" % ((offset * 7919 + offset // 13) % KEYS)
    value = None if (offset * 31) % 11 == 0 else b"v%d-" % offset + b"x" * (offset % 37)
    return key, value, T0 + offset


def clean_time(log_end_offset: int) -> int:
    """The clean's "now": grows with the log, so tombstone horizons pass as the child runs."""
    return T0 + 1_000_000 + log_end_offset * 40


def run(path: str, seed: int, crash_after: int) -> None:
    from kafkalog import Record, UnifiedLog
    from kafkalog.testing import crash_after as arm_crash

    rng = random.Random(seed)
    arm_crash(path, crash_after)
    log = UnifiedLog.open(path, CONFIG)
    while True:
        first = log.log_end_offset
        n = rng.randint(1, 30)
        records = [Record(*content(o)[:2], timestamp=content(o)[2]) for o in range(first, first + n)]
        info = log.append(records, compression=rng.choice(["none", "gzip", "snappy", "lz4", "zstd"]), batch_size=600)
        if info.first_offset != first:
            raise AssertionError(f"append at {first} got {info}")
        if rng.random() < 0.3:
            log.roll()
        if rng.random() < 0.6:
            log.compact_now(
                dedupe_buffer_size=rng.choice([24 * 3, 24 * 12, 1 << 20]),
                io_buffer_size=rng.choice([512, 64 * 1024]),
                time_ms=clean_time(log.log_end_offset),
            )


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: cleaner_crash_child.py <partition_dir> <seed> <crash_after>")
    run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
