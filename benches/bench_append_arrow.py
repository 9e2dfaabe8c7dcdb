"""``UnifiedLog.append_arrow`` beside the row-based ``UnifiedLog.append`` of the same rows, in
one run: ``--records`` records of a 15-byte key and a ``--value-size``-byte value (100 by
default), uncompressed, each append into a fresh log (page cache; no flush).

- arrow: ``append_arrow`` of a pyarrow Table (built before the clock starts): the engine reads
  the Arrow buffers in place, builds the batches and appends them;
- records: ``append`` of the same rows as (key, value) tuples (the list built before the clock
  starts): every record crosses into Rust as Python objects.

Both build identical batches (tests/python/test_append_arrow.py checks the bytes). MB/s counts
the key and value bytes appended; figures are the best of ``--repeat`` runs, by the wall clock
and by the CPU time of the appending thread (user + system: on a shared machine the wall clock
also counts the time other processes ran; the append itself runs on the calling thread). The
issue's goal: append_arrow at least 1 GB/s for 100-byte values, uncompressed.

Run: ``.venv/bin/python benches/bench_append_arrow.py [--records N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
from bench_common import machine, work_dir

import kafkalog


def rows(n: int, value_size: int) -> tuple[pa.Table, list[tuple[bytes, bytes]]]:
    """The same rows as a Table and as tuples; keys repeat every 50,000 as in a change stream."""
    keys = [f"customer-{i % 50_000:06d}".encode() for i in range(n)]
    base = (b'{"status":"shipped","sku":"keyboard","qty":3,"note":"' + b"x" * value_size)[:value_size]
    values = [base[:-6] + f"{i % 1_000_000:06d}".encode() for i in range(n)]
    table = pa.table({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())})
    return table, list(zip(keys, values))


def thread_cpu() -> float:
    """User + system seconds of the calling thread."""
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def best(
    repeat: int, work: Path, name: str, append: Callable[[kafkalog.UnifiedLog], object]
) -> tuple[float, float]:
    """Wall and thread-CPU seconds of the fastest of ``repeat`` appends (each its own best),
    each into a fresh log (opening and closing it untimed)."""
    walls, cpus = [], []
    for run in range(repeat):
        with kafkalog.UnifiedLog.open(work / f"{name}{run}" / "bench-0", {"segment.bytes": 1 << 30}) as log:
            c0, t0 = thread_cpu(), time.perf_counter()
            append(log)
            walls.append(time.perf_counter() - t0)
            cpus.append(thread_cpu() - c0)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=16384, help="append's batch_size (default: a producer's)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scratch", help="directory for the logs (default: the temp dir)")
    parser.add_argument("--arrow-only", action="store_true", help="time append_arrow alone (append takes ~20x longer)")
    args = parser.parse_args()

    table, tuples = rows(args.records, args.value_size)
    payload = table.column("key").nbytes + table.column("value").nbytes - 8 * (args.records + 1)  # minus offsets
    with work_dir("bench-append-arrow-", args.scratch, keep=False) as work:
        arrow = best(args.repeat, work, "arrow", lambda log: log.append_arrow(table, batch_size=args.batch_size))
        records = (
            (float("nan"), float("nan"))
            if args.arrow_only
            else best(args.repeat, work, "records", lambda log: log.append(tuples, batch_size=args.batch_size))
        )
    print(f"append_arrow vs append: {args.records:,} records, {args.value_size}-byte values, uncompressed, "
          f"batch_size={args.batch_size}, best of {args.repeat} ({machine()})")
    print(f"{'path':<14}{'time':>9}{'records/s':>14}{'MB/s':>10}{'CPU time':>10}{'MB/s of CPU':>13}")
    for name, (wall, cpu) in (("append_arrow", arrow), ("append", records)):
        print(
            f"{name:<14}{wall:>8.3f}s{args.records / wall:>14,.0f}{payload / wall / 1e6:>10,.0f}"
            f"{cpu:>9.3f}s{payload / cpu / 1e6:>13,.0f}"
        )
    print(f"ratio: append_arrow is {records[0] / arrow[0]:.1f}x append")


if __name__ == "__main__":
    main()
