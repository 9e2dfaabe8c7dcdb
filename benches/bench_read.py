"""``UnifiedLog.to_arrow`` against the page-cache read floor, in one run.

The log holds ``--records`` uncompressed records (a 15-byte key, a ``--value-size`` value, no
headers) in batches of ``--batch-records``, as a producer with ``linger.ms`` would write them,
over segments of ``--segment-mb``. The files are read once untimed, so the page cache is warm.

Each round times, one after the other:
- the floor: a plain read of the same ``.log`` files (``readinto`` of 1 MiB chunks into one
  reused page-aligned buffer, ``bench_common.read_buffer``: the copy out of the page cache and
  nothing else; into a ``bytearray`` it is about 3x slower on AMD's cores, see there);
- ``to_arrow(use_threads=False)`` over the whole log (read_uncommitted), building Spark's
  Kafka-source columns on one thread;
- ``to_arrow()``, the default: the range cut into pieces decoded at once on up to
  ``pyarrow.cpu_count()`` threads (``kafkalog.arrow_read``).

Throughput is bytes of ``.log`` per second for all three. The script prints each round, then the
median of ``--repeat`` rounds and the ratio, with the load average before and after (the
machine is often shared). Issue 17's goal: to_arrow at 3 GB/s or more.

Run with ``.venv/bin/python benches/bench_read.py``; ``make bench`` runs it too.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import time
from pathlib import Path

import pyarrow as pa
from bench_common import machine, read_buffer, work_dir

import kafkalog
from kafkalog import Record, batches

TS = 1_700_000_000_000


def build_log(path: Path, records: int, per_batch: int, value_size: int, segment_mb: int) -> None:
    value = bytes(i % 251 for i in range(value_size))
    config = {"segment.bytes": str(segment_mb << 20), "retention.ms": "-1"}
    with kafkalog.UnifiedLog.open(str(path), config) as log:
        for base in range(0, records, per_batch):
            n = min(per_batch, records - base)
            batch = [Record(key=b"customer-%06d" % ((base + i) % 100_000), value=value, timestamp=TS + base + i) for i in range(n)]
            log.append_as_follower(batches.build(base, batch, partition_leader_epoch=0))


def log_files(path: Path) -> list[Path]:
    return sorted(path.glob("*.log"))


def plain_read(files: list[Path], buf: mmap.mmap) -> int:
    """Reads every file through ``buf``; returns the bytes read."""
    view = memoryview(buf)
    total = 0
    for f in files:
        with open(f, "rb", buffering=0) as fh:
            while n := fh.readinto(view):
                total += n
    return total


def timed(fn: object) -> float:
    t0 = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--batch-records", type=int, default=100)
    parser.add_argument("--segment-mb", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scratch", help="where to put the log (default: the system temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()

    with work_dir("bench-read-", args.scratch, args.keep) as work:
        path = work / "bench-0"
        build_log(path, args.records, args.batch_records, args.value_size, args.segment_mb)
        files = log_files(path)
        size = sum(f.stat().st_size for f in files)
        buf = read_buffer()
        assert plain_read(files, buf) == size
        with kafkalog.UnifiedLog.open(str(path), read_only=True) as log:
            rows = log.to_arrow().num_rows  # warm-up, and the check
            assert rows == args.records, (rows, args.records)
            print(
                f"to_arrow over {args.records:,} uncompressed records ({args.value_size} B values, "
                f"{args.batch_records} per batch): {size / 1e6:.1f} MB of .log in {len(files)} segments"
            )
            print(f"before: {machine()}")
            floors, singles, reads = [], [], []
            for i in range(args.repeat):
                floor = timed(lambda: plain_read(files, buf))
                single = timed(lambda: log.to_arrow(use_threads=False))
                read = timed(log.to_arrow)
                floors.append(floor)
                singles.append(single)
                reads.append(read)
                print(
                    f"  round {i + 1}: floor {size / floor / 1e9:6.2f} GB/s   to_arrow 1 thread "
                    f"{size / single / 1e9:6.2f} GB/s   to_arrow {size / read / 1e9:6.2f} GB/s"
                )
        floor, single, read = statistics.median(floors), statistics.median(singles), statistics.median(reads)
        print(f"median of {args.repeat} ({pa.cpu_count()} threads for to_arrow):")
        print(f"  plain read (floor)       {floor * 1e3:8.1f} ms  {size / floor / 1e9:6.2f} GB/s")
        for name, t in [("to_arrow, 1 thread", single), ("to_arrow", read)]:
            print(f"  {name:<23}  {t * 1e3:8.1f} ms  {size / t / 1e9:6.2f} GB/s  ({args.records / t / 1e6:.1f} M rec/s)")
        print(f"  to_arrow / floor         {floor / read:8.2f}   (1 thread: {floor / single:.2f})")
        print(f"after: {machine()}")


if __name__ == "__main__":
    main()
