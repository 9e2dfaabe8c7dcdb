"""Crash recovery of transactional state: a child process (txn_crash_child.py) makes leader
appends of idempotent and transactional batches from several producers, COMMIT and ABORT
markers, leader epoch changes, rolls, flushes and clean reopens on one UnifiedLog until its crash
seam (``kafkalog.testing.crash_after``) kills it with SIGKILL just before its N-th file
operation, N seeded. After every kill the partition is reopened here (writable, so it recovers)
and its transactional state is checked against a rebuild from scratch of the same bytes: only
the ``.log`` files of the recovered partition, copied into a fresh directory (no snapshots, no
indexes, no .txnindex, no checkpoints) and opened there. Both must agree on:

- the last stable offset and the first unstable offset;
- the aborted transactions (the .txnindex entries, rebuilt from the ABORT markers);
- the leader epoch cache;
- the producer table (epoch, last sequence and offset, coordinator epoch, open transaction
  first offset, last timestamp) and the open transactions.

The issue's crash test (issue 14, Tests: "SIGKILL during transactional and idempotent appends,
rolls and marker writes"); Kafka's LogLoaderTest covers single cases of it
(testProducerSnapshotsRecoveryAfterUncleanShutdownCurrentMessageFormat,
testRecoverLastSegmentWithNoSnapshots): this test reaches every crash point it draws.

The recovered log is closed cleanly or just dropped, at random, so the next child starts after
both clean and unclean shutdowns. Each child continues every producer from the sequence and
epoch the reopened log reports, so a wrong recovery also surfaces as a refused append.

KAFKALOG_TXN_CRASH_KILLS sets the number of kills (default 20; ``make soak`` uses 300) and
KAFKALOG_CRASH_SEED the seed (default 1); a failure message names the kill and the seed.
"""

from __future__ import annotations

import gc
import os
import random
import shutil
from pathlib import Path
from typing import Any

from kafkalog import UnifiedLog
from kit.manager import run_until_crash_seam
from txn_crash_child import CONFIG

CHILD = Path(__file__).with_name("txn_crash_child.py")
KILLS = int(os.environ.get("KAFKALOG_TXN_CRASH_KILLS", "20"))
SEED = int(os.environ.get("KAFKALOG_CRASH_SEED", "1"))


def _crash_child(partition_dir: Path, seed: int, stderr_path: Path, crash_after: int) -> None:
    """Runs txn_crash_child.py until its crash seam kills it."""
    run_until_crash_seam(CHILD, [partition_dir, seed, crash_after], stderr_path)


def _state(log: UnifiedLog) -> dict[str, Any]:
    """Everything the recovered log and the rebuild must agree on."""
    return {
        "log_start_offset": log.log_start_offset,
        "log_end_offset": log.log_end_offset,
        "high_watermark": log.high_watermark,
        "last_stable_offset": log.last_stable_offset,
        "first_unstable_offset": log.first_unstable_offset,
        "aborted_transactions": log.aborted_transactions(),
        "epoch_entries": log.epoch_entries,
        "active_producers": log.active_producers,
        "ongoing_transactions": log.ongoing_transactions,
    }


def _rebuild_from_log_files(recovered: Path, fresh: Path) -> dict[str, Any]:
    """Opens a copy of only the ``.log`` files of ``recovered`` and returns its state."""
    if fresh.exists():
        shutil.rmtree(fresh)
    fresh.mkdir(parents=True)
    for f in sorted(recovered.glob("*.log")):
        shutil.copyfile(f, fresh / f.name)
    with UnifiedLog.open(fresh, CONFIG) as log:
        return _state(log)


def _check(partition_dir: Path, fresh: Path, close_cleanly: bool) -> dict[str, Any]:
    log = UnifiedLog.open(partition_dir, CONFIG)
    try:
        recovered = _state(log)
    finally:
        if close_cleanly:
            log.close()
        del log
        gc.collect()
    rebuilt = _rebuild_from_log_files(partition_dir, fresh)
    for key in recovered:
        assert recovered[key] == rebuilt[key], f"{key}: recovered {recovered[key]} != rebuilt {rebuilt[key]}"
    return recovered


def test_sigkill_during_transactional_appends(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    partition_dir = tmp_path / "txn-0"
    fresh = tmp_path / "rebuilt" / "txn-0"
    seen = {"aborted": 0, "open": 0, "epochs": 0, "producers": 0, "segments": 0}
    for kill in range(KILLS):
        stderr_path = tmp_path / f"child-{kill}.err"
        child_seed = rng.randrange(1 << 32)
        # Mostly a crash in the work after the open; one in ten while the child loads (and
        # recovers) the log, or just after.
        crash_after = rng.randrange(0, 15) if kill > 0 and rng.random() < 0.1 else rng.randrange(15, 250)
        _crash_child(partition_dir, child_seed, stderr_path, crash_after)
        try:
            state = _check(partition_dir, fresh, close_cleanly=rng.random() < 0.5)
        except AssertionError as e:
            raise AssertionError(
                f"after kill {kill} (KAFKALOG_CRASH_SEED={SEED}, child seed {child_seed}, crash after {crash_after}): {e}"
            ) from e
        seen["aborted"] = max(seen["aborted"], len(state["aborted_transactions"]))
        seen["open"] = max(seen["open"], len(state["ongoing_transactions"]))
        seen["epochs"] = max(seen["epochs"], len(state["epoch_entries"]))
        seen["producers"] = max(seen["producers"], len(state["active_producers"]))
        seen["segments"] = len(list(partition_dir.glob("*.log")))
    # The run did real work: aborted and open transactions, several producers, leader epochs
    # and segments were all there to recover.
    if KILLS >= 10:
        assert seen["aborted"] > 0 and seen["open"] > 0 and seen["producers"] >= 4, seen
        assert seen["epochs"] > 1 and seen["segments"] > 3, seen
