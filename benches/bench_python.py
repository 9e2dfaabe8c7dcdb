"""Python-side benchmarks, each run beside its baseline in the same process, printing the ratio.

- read: ``UnifiedLog.to_arrow`` over a whole log vs. kafka-python's pure-Python record decoder
  (``MemoryRecords`` / ``DefaultRecordBatch``, CRC checked) over the same ``.log`` files;
- append: ``UnifiedLog.append`` of the same records (encode + validate + write) vs.
  kafka-python's ``DefaultRecordBatchBuilder`` encoding them in memory (no I/O).

Run with ``make bench-python`` (part of ``make bench``). Figures are best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import glob
import os
import tempfile
import time
from collections.abc import Callable

from bench_common import kafka_python_batches, machine, timed_runs
from kafka.record.default_records import DefaultRecordBatchBuilder

import kafkalog

KAFKA_PYTHON_CODEC = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    return min(timed_runs(fn, repeat))


def workload_records(n: int, value_size: int) -> list[tuple[bytes, bytes]]:
    base = b'{"status":"shipped","sku":"keyboard","qty":3,"note":"' + b"x" * value_size
    return [(f"customer-{i % 50_000:06d}".encode(), base[:value_size]) for i in range(n)]


def kafka_python_decode(paths: list[str]) -> int:
    count = 0
    for path in paths:
        for batch in kafka_python_batches(path):
            for record in batch:
                count += 1
                _ = (record.offset, record.timestamp, record.key, record.value, record.headers)
    return count


def kafka_python_encode(records: list[tuple[bytes, bytes]], codec: str) -> int:
    size = 0
    ts = int(time.time() * 1000)
    for start in range(0, len(records), 150):
        builder = DefaultRecordBatchBuilder(2, KAFKA_PYTHON_CODEC[codec], False, -1, -1, -1, 16384)
        for i, (k, v) in enumerate(records[start : start + 150]):
            builder.append(i, ts, k, v, [])
        size += len(builder.build())
    return size


def bench_codec(codec: str, n: int, value_size: int, repeat: int) -> None:
    records = workload_records(n, value_size)
    payload = sum(len(k) + len(v) for k, v in records)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench-0")

        def kafkalog_append() -> None:
            with kafkalog.UnifiedLog.open(path, {"retention.ms": -1}) as log:
                log.truncate_fully_and_start_at(0)
                for start in range(0, n, 10_000):
                    log.append(records[start : start + 10_000], compression=codec)

        t_append = best_of(repeat, kafkalog_append)
        t_encode = best_of(repeat, lambda: kafka_python_encode(records, codec))
        paths = sorted(glob.glob(os.path.join(path, "*.log")))
        with kafkalog.UnifiedLog.open(path, read_only=True) as log:
            t_arrow = best_of(repeat, lambda: log.to_arrow())
            rows = log.to_arrow().num_rows
        assert rows == n, (rows, n)
        t_decode = best_of(max(1, repeat // 2), lambda: kafka_python_decode(paths))
        assert kafka_python_decode(paths) == n

    mb = payload / 1e6
    print(f"\n{codec}: {n:,} records of {value_size} B values ({mb:.1f} MB of keys+values); {machine()}")
    print(f"  read   kafkalog to_arrow        {t_arrow * 1e3:9.1f} ms  {mb / t_arrow:8.1f} MB/s  {n / t_arrow / 1e6:6.2f} M rec/s")
    print(f"         kafka-python decode      {t_decode * 1e3:9.1f} ms  {mb / t_decode:8.1f} MB/s  {n / t_decode / 1e6:6.2f} M rec/s")
    print(f"         ratio                    {t_decode / t_arrow:9.1f}x")
    print(f"  append kafkalog append (disk)   {t_append * 1e3:9.1f} ms  {mb / t_append:8.1f} MB/s  {n / t_append / 1e6:6.2f} M rec/s")
    print(f"         kafka-python encode only {t_encode * 1e3:9.1f} ms  {mb / t_encode:8.1f} MB/s  {n / t_encode / 1e6:6.2f} M rec/s")
    print(f"         ratio                    {t_encode / t_append:9.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--codecs", default="none,lz4")
    args = parser.parse_args()
    for codec in args.codecs.split(","):
        bench_codec(codec, args.records, args.value_size, args.repeat)


if __name__ == "__main__":
    main()
