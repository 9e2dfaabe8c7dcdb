"""Child process for test_roll_crash: appends to LogManager-managed logs with small segments,
so nearly every few appends roll, until its crash seam SIGKILLs it.

    python roll_crash_child.py <log_dir> <seed> <acks_file> <trace_file> <crash_after> <threaded>

Arms the crash seam (:func:`kafkalog.testing.crash_after`: SIGKILL just before the file
operation under ``log_dir`` that would change something once ``<crash_after>`` of them went
through) and the file-operation trace (:func:`kafkalog.testing.trace_file_ops`, every
operation under ``log_dir`` that went through, in order, to ``<trace_file>``). Then it opens a
LogManager and, until the crash, picks at random (seeded): append a batch, roll, tick (which
runs the ``flush-log`` tasks the rolls queued when there is no scheduler thread), checkpoint,
flush.

``<threaded>`` 0: no scheduler thread, so the crash point is a pure function of the seed and
``<crash_after>`` and a failing kill repeats exactly. 1: the manager's threads run the flushes
after rolls and the checkpoints as a broker's do; the kill then lands wherever the counting of
both threads' operations puts it.

Every record encodes its place (value ``<topic>-<partition>:<offset>``, timestamp T0 + offset).
After each append returns, ``<tp> <log end>`` goes to ``<acks_file>`` in one ``O_APPEND`` write:
what the child was told is stored, which a SIGKILL must not lose (the page cache outlives the
process, so no fsync is needed for that promise, nor for the acks file).
"""

from __future__ import annotations

import os
import random
import sys

PARTITIONS: list[tuple[str, int]] = [("roll", 0), ("roll", 1)]
T0 = 1_700_000_000_000

#: Segments of 1 KiB (a roll every one to three appends) with several index entries each;
#: nothing deleted; checkpoints every 10 ms when the scheduler thread runs.
CONFIG: dict[str, str] = {
    "internal.segment.bytes": "1024",
    "log.index.interval.bytes": "64",
    "log.index.size.max.bytes": "4096",
    "log.retention.bytes": "-1",
    "log.retention.ms": "-1",
    "log.flush.offset.checkpoint.interval.ms": "10",
    "log.flush.start.offset.checkpoint.interval.ms": "10",
}


def tp_name(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"


def record_value(tp: tuple[str, int], offset: int) -> bytes:
    return f"{tp_name(tp)}:{offset}".encode()


def run(log_dir: str, seed: int, acks_path: str, trace_path: str, crash_after: int, threaded: bool) -> None:
    from kafkalog import LogManager, Record
    from kafkalog.testing import crash_after as arm_crash
    from kafkalog.testing import trace_file_ops

    rng = random.Random(seed)
    acks = os.open(acks_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    trace_file_ops(log_dir, trace_path)
    arm_crash(log_dir, crash_after)
    manager = LogManager([log_dir], CONFIG, scheduler=threaded)
    logs = {tp: manager.create_log(*tp) for tp in PARTITIONS}
    while True:
        tp = rng.choice(PARTITIONS)
        log = logs[tp]
        op = rng.random()
        if op < 0.8:
            first = log.log_end_offset
            offsets = range(first, first + rng.randint(1, 12))
            log.append([Record(None, record_value(tp, o), timestamp=T0 + o) for o in offsets], batch_size=256)
            os.write(acks, f"{tp_name(tp)} {offsets[-1] + 1}\n".encode())
        elif op < 0.86:
            log.roll()
        elif op < 0.94:
            manager.tick()
        elif op < 0.98:
            manager.checkpoint()
        else:
            manager.flush()


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit("usage: roll_crash_child.py <log_dir> <seed> <acks_file> <trace_file> <crash_after> <threaded>")
    run(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6] == "1")
