"""Child process for test_crash_recovery: a LogManager under load, killed with SIGKILL.

    python crash_child.py <log_dir> <seed> <status_file> <crash_after>

Arms the crash seam (:func:`kafkalog.testing.crash_after`): the child kills itself with SIGKILL
just before the file operation under ``log_dir`` that would change something once
``<crash_after>`` of them have gone through. Then it opens ``log_dir`` with a LogManager (no
scheduler thread; a small ``<crash_after>`` crashes it while it loads and recovers), gets or
creates the partitions of :data:`PARTITIONS` and, until the crash, picks at random (seeded):
append a batch, roll, flush, run retention, delete records, tick. The crash point is a pure
function of the two numbers, so a failing kill is repeated exactly, on any machine.

Every record encodes where it belongs: its value is ``<topic>-<partition>:<offset>``, its key
``k<offset>`` and its timestamp ``T0 + offset``, so a reader can check any record it is served.

The status file is the ground truth the parent checks a reopened log against. It is rewritten
durably (tmp file, fsync, os.replace, directory fsync), and only after the fact it records is on
disk:

- ``flushed[tp] = F`` after ``LogManager.flush()`` and ``checkpoint()`` returned: every offset
  below F was written and fsynced, so a reopen must serve it (unless retention removed it);
- ``start[tp] = S`` after ``run_retention()`` and ``checkpoint()`` returned: the log start
  offset was S and is durable (segments below it are renamed ``.deleted``, a start inside a
  segment is in log-start-offset-checkpoint), so a reopen must never start below S.

Nothing here runs at import: the test imports the shared constants and helpers.
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import Any

#: Topic-partitions the child writes to: two topics, so checkpoints hold several topics.
PARTITIONS: list[tuple[str, int]] = [("crash", 0), ("crash", 1), ("other", 0)]

#: Record timestamps are T0 + offset (CreateTime).
T0 = 1_700_000_000_000

#: Broker config of the child and of the parent's reopen: tiny segments so rolls, retention and
#: recovery happen often; retention by size only (the timestamps lie in the past); deleted files
#: unlinked at the next tick.
CONFIG: dict[str, str] = {
    "internal.segment.bytes": "4096",
    "log.retention.bytes": "12288",
    "log.retention.ms": "-1",
    "log.roll.ms": str(10 * 365 * 24 * 3600 * 1000),
    "log.segment.delete.delay.ms": "0",
    "log.index.interval.bytes": "256",
    "log.index.size.max.bytes": "4096",
    "num.recovery.threads.per.data.dir": "2",
}

COMPRESSIONS = ["none", "none", "gzip", "snappy", "lz4", "zstd"]


def tp_name(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"


def record_value(tp: tuple[str, int], offset: int) -> bytes:
    return f"{tp_name(tp)}:{offset}".encode()


def record_key(offset: int) -> bytes:
    return f"k{offset}".encode()


def read_status(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """The status file as ``{"flushed": {tp_name: F}, "start": {tp_name: S}}`` (empty maps when
    the child never wrote one)."""
    try:
        with open(path, encoding="utf-8") as f:
            raw: dict[str, Any] = json.load(f)
    except FileNotFoundError:
        raw = {}
    return {
        "flushed": {str(k): int(v) for k, v in raw.get("flushed", {}).items()},
        "start": {str(k): int(v) for k, v in raw.get("start", {}).items()},
    }


def write_status_durably(path: str, status: dict[str, dict[str, int]]) -> None:
    """tmp + fsync + os.replace + directory fsync: after this returns the new status survives any
    crash, and a crash before it leaves the old one whole."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(status, f, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def run(log_dir: str, seed: int, status_path: str, crash_after: int) -> None:
    # Imported here so that importing this module for its constants stays cheap.
    from kafkalog import LogManager, Record
    from kafkalog.testing import crash_after as arm_crash

    rng = random.Random(seed)
    status = read_status(status_path)
    arm_crash(log_dir, crash_after)
    manager = LogManager([log_dir], CONFIG, scheduler=False)
    logs = {tp: manager.create_log(*tp) for tp in PARTITIONS}

    def record_offsets(key: str, offsets: dict[str, int]) -> None:
        for name, offset in offsets.items():
            # The parent checks that these only grow; a smaller value here means the log lost
            # something it had promised, so say so loudly instead of hiding it.
            previous = status[key].get(name)
            if previous is not None and offset < previous:
                raise AssertionError(f"{key} of {name} went backwards: {previous} -> {offset}")
            status[key][name] = offset
        write_status_durably(status_path, status)

    while True:
        tp = rng.choice(PARTITIONS)
        log = logs[tp]
        op = rng.random()
        if op < 0.66:
            first = log.log_end_offset
            count = rng.randint(1, 30)
            offsets = range(first, first + count)
            records = [Record(record_key(o), record_value(tp, o), timestamp=T0 + o) for o in offsets]
            info = log.append(records, compression=rng.choice(COMPRESSIONS), batch_size=rng.choice([256, 16384]))
            if info.first_offset != first or info.last_offset != first + count - 1:
                raise AssertionError(f"append to {tp_name(tp)} at {first} got offsets {info}")
        elif op < 0.72:
            log.roll()
        elif op < 0.84:
            ends = {tp_name(t): lg.log_end_offset for t, lg in logs.items()}
            manager.flush()
            manager.checkpoint()
            record_offsets("flushed", ends)
        elif op < 0.93:
            manager.run_retention()
            manager.checkpoint()
            record_offsets("start", {tp_name(t): lg.log_start_offset for t, lg in logs.items()})
        elif op < 0.97:
            start, end = log.log_start_offset, log.high_watermark
            log.delete_records(rng.randint(start, max(start, start + (end - start) // 4)))
        else:
            manager.tick()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: crash_child.py <log_dir> <seed> <status_file> <crash_after>")
    run(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
