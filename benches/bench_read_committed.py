"""``read_committed`` against ``read_uncommitted`` on the same transactional log, in one run.

The log is what an exactly-once pipeline leaves behind. Several producers each write
transactions of ``--batches-per-txn`` batches of 100 records (lz4), interleaved with each
other; a COMMIT marker ends each transaction, or an ABORT for every fifth one. The batches are
appended as a follower would append them, so the appends keep producer state and the
``.txnindex``.

Each isolation then reads the whole log with ``UnifiedLog.to_arrow``: read_uncommitted returns
every record, read_committed leaves out the aborted ones and the markers. The script prints the
best of ``--repeat`` runs for each, and the ratio. Issue 14's goal is a ratio under 1.5.

Run with ``.venv/bin/python benches/bench_read_committed.py``; ``make bench`` runs it too.
"""

from __future__ import annotations

import argparse

from bench_common import Column, machine, print_table, timed_runs, work_dir

import kafkalog
from kafkalog import Record, batches

TS = 1_700_000_000_000
RECORDS_PER_BATCH = 100


def build_log(path: str, producers: int, txns: int, batches_per_txn: int, value_size: int) -> tuple[int, int]:
    """Writes the workload; returns (records written, records a read_committed reader keeps)."""
    value = b"v" * value_size
    offset = 0
    sequence = [0] * producers
    written = kept = 0
    with kafkalog.UnifiedLog.open(path, {"segment.bytes": str(64 << 20)}) as log:
        for t in range(txns):
            for b in range(batches_per_txn):
                for p in range(producers):
                    records = [
                        Record(key=b"p%d-%d" % (p, i), value=value, timestamp=TS + offset + i)
                        for i in range(RECORDS_PER_BATCH)
                    ]
                    raw = batches.build(
                        offset,
                        records,
                        compression="lz4",
                        producer_id=1000 + p,
                        producer_epoch=0,
                        base_sequence=sequence[p],
                        transactional=True,
                        partition_leader_epoch=0,
                    )
                    log.append_as_follower(raw)
                    sequence[p] += RECORDS_PER_BATCH
                    offset += RECORDS_PER_BATCH
                    written += RECORDS_PER_BATCH
                    kept += RECORDS_PER_BATCH if t % 5 != 4 else 0
            for p in range(producers):
                marker = batches.end_txn_marker(
                    offset, TS + offset, producer_id=1000 + p, producer_epoch=0, commit=t % 5 != 4, partition_leader_epoch=0
                )
                log.append_as_follower(marker)
                offset += 1
        log.flush()
    return written, kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--txns", type=int, default=100)
    parser.add_argument("--batches-per-txn", type=int, default=5)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scratch", help="where the work directory goes (default: the temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    print(f"bench_read_committed: {machine()}")
    with work_dir("kafkalog-bench-rc-", args.scratch, args.keep) as work:
        path = str(work / "eos-0")
        written, kept = build_log(path, args.producers, args.txns, args.batches_per_txn, args.value_size)
        with kafkalog.UnifiedLog.open(path, read_only=True) as log:
            end = log.log_end_offset
            uncommitted = log.to_arrow(0, end)
            committed = log.to_arrow(0, end, isolation="read_committed")
            if uncommitted.num_rows != written or committed.num_rows != kept:
                raise SystemExit(
                    f"wrong rows: read_uncommitted {uncommitted.num_rows} (want {written}), "
                    f"read_committed {committed.num_rows} (want {kept})"
                )
            mb = uncommitted.nbytes / 1e6
            times = {
                iso: min(timed_runs(lambda iso=iso: log.to_arrow(0, end, isolation=iso), args.repeat, warmup=1))
                for iso in ("read_uncommitted", "read_committed")
            }
    columns = [Column("isolation", 18, left=True), Column("records", 10), Column("seconds", 9), Column("MB/s", 8)]
    rows = [
        ("read_uncommitted", f"{written:,}", f"{times['read_uncommitted']:.4f}", f"{mb / times['read_uncommitted']:.0f}"),
        ("read_committed", f"{kept:,}", f"{times['read_committed']:.4f}", f"{mb / times['read_committed']:.0f}"),
    ]
    print_table(columns, rows)
    ratio = times["read_committed"] / times["read_uncommitted"]
    print(f"read_committed / read_uncommitted time: {ratio:.2f}x (goal: under 1.5x)")


if __name__ == "__main__":
    main()
