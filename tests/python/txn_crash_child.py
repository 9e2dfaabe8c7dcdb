"""Child process for test_txn_crash: one UnifiedLog under idempotent and transactional leader
appends, killed with SIGKILL.

    python txn_crash_child.py <partition_dir> <seed> <crash_after>

Arms the crash seam (:func:`kafkalog.testing.crash_after`): the child kills itself with SIGKILL
just before the file operation under ``partition_dir`` that would change something once
``<crash_after>`` of them have gone through (a small number crashes it while it loads and
recovers). Then it opens the partition and, until the crash, picks at random (seeded): a leader
append of an idempotent batch or of a transactional one (several producers, some batches
compressed), a COMMIT or ABORT marker for an open transaction, a producer epoch bump, a new
leader epoch, a roll, a flush, or a clean close and reopen (which writes a snapshot). The crash
point is a pure function of the two numbers, so a failing kill is repeated exactly.

Each producer's epoch and next sequence are read back from the reopened log's own
``active_producers``, so a child continues where the log says the last one stopped: a producer
state recovered wrongly shows up as a refused append (the child then exits with an error, which
the test reports) or as a difference from the rebuild the test compares against.

Nothing here runs at import: the test imports the shared constants.
"""

from __future__ import annotations

import random
import sys
import time

#: Topic configs of the child and of the parent's opens: tiny segments, so rolls (and their
#: snapshots) and multi-segment recovery happen often.
CONFIG: dict[str, str] = {
    "internal.segment.bytes": "2048",
    "index.interval.bytes": "256",
}

#: Idempotent producers (never transactional) and transactional ones.
IDEMPOTENT = [1, 2, 3]
TRANSACTIONAL = [11, 12, 13, 14]

COMPRESSIONS = ["none", "none", "none", "gzip", "lz4", "zstd"]


def run(partition_dir: str, seed: int, crash_after: int) -> None:
    # Imported here so that importing this module for its constants stays cheap.
    from kafkalog import UnifiedLog, batches
    from kafkalog.records import Record
    from kafkalog.testing import crash_after as arm_crash

    rng = random.Random(seed)
    arm_crash(partition_dir, crash_after)
    log = UnifiedLog.open(partition_dir, CONFIG)
    while True:
        producers = {p.producer_id: p for p in log.active_producers}
        op = rng.random()
        if op < 0.55:
            transactional = rng.random() < 0.6
            pid = rng.choice(TRANSACTIONAL if transactional else IDEMPOTENT)
            known = producers.get(pid)
            epoch = known.producer_epoch if known else 0
            seq = known.last_sequence + 1 if known else 0
            if not transactional and known is not None and rng.random() < 0.05:
                epoch, seq = epoch + 1, 0  # an idempotent producer's epoch bump restarts at 0
            count = rng.randint(1, 12)
            now = int(time.time() * 1000)
            records = [Record(b"k%d" % pid, b"p%d-s%d" % (pid, seq + i), timestamp=now) for i in range(count)]
            raw = batches.build(
                0,
                records,
                compression=rng.choice(COMPRESSIONS),
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
                transactional=transactional,
            )
            leader_epoch = (log.latest_epoch or 0) + (1 if rng.random() < 0.04 else 0)
            log.append_batch(raw, leader_epoch=leader_epoch)
        elif op < 0.75:
            open_txns = sorted(p.producer_id for p in log.active_producers if p.current_txn_first_offset is not None)
            if open_txns:
                pid = rng.choice(open_txns)
                p = producers[pid]
                coordinator_epoch = max(p.coordinator_epoch, 0) + (1 if rng.random() < 0.2 else 0)
                commit = rng.random() < 0.6
                log.append_txn_marker(pid, p.producer_epoch, commit=commit, coordinator_epoch=coordinator_epoch)
        elif op < 0.87:
            log.roll()
        elif op < 0.95:
            log.flush()
        else:
            log.close()
            log = UnifiedLog.open(partition_dir, CONFIG)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: txn_crash_child.py <partition_dir> <seed> <crash_after>")
    run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
