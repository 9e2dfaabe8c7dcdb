"""The main job for now (`make demo`): write a log of realistic keyed records across several
segments, read it back, and print a short summary.

Run as ``python -m kafkalog.demo [--data-dir DIR] [--records N]``. The data goes to
``demo-data/`` in the project by default and is replaced on each run.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path

import pyarrow.compute as pc

from .log import UnifiedLog
from .records import Record

_STATUSES = ("created", "paid", "packed", "shipped", "delivered", "returned")
_PRODUCTS = ("keyboard", "monitor", "laptop", "headset", "webcam", "dock", "mouse", "chair")


def order_events(count: int, customers: int, seed: int = 7) -> list[Record]:
    """Change events for orders keyed by customer id: JSON values, a few headers, 2% deletes
    (tombstones), timestamps one second apart ending now."""
    rng = random.Random(seed)
    start_ms = int(time.time() * 1000) - count * 1000
    events = []
    for i in range(count):
        customer = f"customer-{rng.randrange(customers):06d}".encode()
        headers = (("source", b"orders-service"), ("trace-id", f"{rng.getrandbits(64):016x}".encode()))
        if rng.random() < 0.02:
            events.append(Record(customer, None, headers, start_ms + i * 1000))
            continue
        order = {
            "order_id": i,
            "status": rng.choice(_STATUSES),
            "items": [{"sku": rng.choice(_PRODUCTS), "qty": rng.randint(1, 4)} for _ in range(rng.randint(1, 3))],
            "total_cents": rng.randint(500, 250_000),
            "currency": "EUR",
        }
        events.append(Record(customer, json.dumps(order).encode(), headers, start_ms + i * 1000))
    return events


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default="demo-data", help="folder for the demo log (replaced)")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--customers", type=int, default=20_000)
    parser.add_argument("--compression", default="lz4", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    args = parser.parse_args(argv)

    data_dir = Path(args.data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
    partition_dir = data_dir / "orders-0"
    config = {"segment.bytes": 1 << 20, "cleanup.policy": "delete", "retention.ms": -1}

    events = order_events(args.records, args.customers)
    raw_bytes = sum(len(e.key or b"") + len(e.value or b"") for e in events)

    t0 = time.perf_counter()
    with UnifiedLog.open(partition_dir, config) as log:
        for start in range(0, len(events), 5_000):
            log.append(events[start : start + 5_000], compression=args.compression)
        log.flush()
    append_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    with UnifiedLog.open(partition_dir, read_only=True) as log:
        table = log.to_arrow()
        segments = log.segments
        on_disk = log.size_in_bytes
    read_s = time.perf_counter() - t0

    tombstones = table.num_rows - pc.sum(pc.is_valid(table["value"])).as_py()
    latest = table.group_by("key").aggregate([("offset", "max")]).num_rows
    if table.num_rows != len(events):
        raise SystemExit(f"read back {table.num_rows} records, wrote {len(events)}")
    if table["key"].to_pylist()[:3] != [e.key for e in events[:3]]:
        raise SystemExit("the first records read back differ from those written")

    print(f"kafkalog demo: {partition_dir}")
    print(f"  wrote   {len(events):,} records ({raw_bytes / 1e6:.1f} MB of keys and values, {args.compression})")
    print(f"          in {append_s:.2f} s = {raw_bytes / 1e6 / append_s:.0f} MB/s, {len(events) / append_s:,.0f} records/s")
    print(f"  on disk {len(segments)} segments, {on_disk / 1e6:.1f} MB, offsets 0..{len(events) - 1}")
    print(f"  read    {table.num_rows:,} records back as Arrow in {read_s:.2f} s ({table.num_rows / read_s:,.0f} records/s)")
    print(f"          {latest:,} distinct customer keys, {tombstones:,} tombstones")
    print(f"  segment {'base offset':>12} {'records':>8} {'bytes':>9}")
    shown = segments if len(segments) <= 6 else segments[:3] + segments[-3:]
    for i, s in enumerate(shown):
        if len(segments) > 6 and i == 3:
            print("          ...")
        print(f"          {s.base_offset:>12,} {s.record_count:>8,} {s.size:>9,}")


if __name__ == "__main__":
    main()
