"""Start-up of a partition holding 1 M transactional records (``make bench-kafka``): from its
producer snapshot (a clean shutdown, ``.snapshot`` at the log end) against a full rebuild
(``.kafka_cleanshutdown`` and every ``.snapshot`` deleted, so the producer state is rebuilt from
the segments), kafkalog's ``LogManager`` beside Apache Kafka 4.x's ``LogManager`` loading its own
copy of the same files, in one run: four times.

The fixture, written once through kafkalog's leader append (``append_batch``, origin client)
and ``append_txn_marker`` (origin coordinator): ``--producers`` transactional producers (default
4, ids 1000...) take turns; each transaction is ``--batches-per-txn`` batches (default 2) of
``--records-per-batch`` records (default 100; ``--value-bytes`` 100-byte JSON-ish values, 16-byte
keys, uncompressed), the producers' transactions open side by side and end together, every
fifth round ABORTed, the others COMMITted; ``--records`` records in all (default 1,000,000),
``--segment-mib`` segments (default 16). It is closed cleanly (kafkalog writes the snapshot
at the log end, the checkpoints and the marker), then copied for Kafka.

One timed run is the ``kafkalog.LogManager(...)`` constructor (``scheduler=False``) /
``LogManager.apply`` + ``startup`` (tests/kit/jvm/java/KafkaLoadBench.java, modes ``clean`` and
``rebuild``); outside the clock the dir is put back in the state the run starts from (for a
rebuild: marker and snapshots deleted; recovery points kept, at the log end, so no segment
before the active one is recovered) and the manager is closed afterwards (which writes the
marker and a snapshot again). Each kafkalog run checks what it loaded: the segments, the
producers (all ``--producers``) and the last stable offset (the log end: every transaction
ended); Kafka's line prints its producer count and first unstable offset (none: the log end),
checked here too. Figures: median and
best of ``--reps`` runs after one warm-up, on each side; the files stay in the page cache.

Needs java, javac 17+ and Maven, like ``make test-interop`` (the jars are fetched once).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

from bench_common import Column, kafka_classpath, machine, print_table, run_java, work_dir

import kafkalog
from kafkalog.batches import build
from kafkalog.records import Record

TOPIC = "bench"
MARKER = ".kafka_cleanshutdown"
FIRST_PRODUCER_ID = 1000


def value_records(count: int, value_bytes: int) -> list[Record]:
    """`count` records with JSON-ish values and 16-byte keys (benches/workload.rs's shape)."""
    records = []
    seed = 0x2545_F491_4F6C_DD1D
    for i in range(count):
        value = bytearray()
        while len(value) < value_bytes:
            seed ^= (seed << 13) & 0xFFFF_FFFF_FFFF_FFFF
            seed ^= seed >> 7
            seed ^= (seed << 17) & 0xFFFF_FFFF_FFFF_FFFF
            value += b'"v":%04d' % (seed % 10_000)
        key = b"customer-%07d" % ((seed >> 8) % 1_000_000)
        records.append(Record(key=key, value=bytes(value[:value_bytes]), timestamp=1_700_000_000_000 + i))
    return records


def write_fixture(root: Path, args: argparse.Namespace) -> tuple[Path, int, int, int]:
    """The log dir `root`; returns it, the log end offset, the segment count and the .log bytes."""
    started = time.perf_counter()
    records = value_records(args.records_per_batch, args.value_bytes)
    per_round = args.producers * args.batches_per_txn * args.records_per_batch
    rounds = -(-args.records // per_round)
    sequences = [0] * args.producers
    config = {"segment.bytes": args.segment_mib << 20, "retention.ms": -1}
    with kafkalog.LogManager([root], scheduler=False) as manager:
        log = manager.create_log(TOPIC, 0, config)
        for r in range(rounds):
            for _ in range(args.batches_per_txn):
                for p in range(args.producers):
                    raw = build(0, records, producer_id=FIRST_PRODUCER_ID + p, producer_epoch=0,
                                base_sequence=sequences[p], transactional=True)  # fmt: skip
                    log.append_batch(raw, leader_epoch=0)
                    sequences[p] += len(records)
            for p in range(args.producers):
                log.append_txn_marker(FIRST_PRODUCER_ID + p, 0, commit=r % 5 != 4)
        end = log.log_end_offset
        segments = len(log.segments)
        assert log.last_stable_offset == end, (log.last_stable_offset, end)
    size = sum(f.stat().st_size for f in root.glob("*/*.log"))
    print(f"fixture: {rounds * per_round:,} transactional records from {args.producers} producers, "
          f"{rounds * args.producers:,} markers, {segments} segments, {size / 1e6:.0f} MB of .log "
          f"in {time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
    return root, end, segments, size


def drop_snapshots(root: Path) -> None:
    (root / MARKER).unlink(missing_ok=True)
    for f in root.glob("*/*.snapshot"):
        f.unlink()


def open_once(root: Path, rebuild: bool, end: int, segments: int, producers: int) -> float:
    """One kafkalog start-up, checked, then closed; returns the seconds the constructor took."""
    if rebuild:
        drop_snapshots(root)
    elif not (root / MARKER).exists() or not list(root.glob("*/*.snapshot")):
        raise SystemExit(f"{root} lacks its marker or snapshot")
    t0 = time.perf_counter()
    manager = kafkalog.LogManager([root], scheduler=False)
    elapsed = time.perf_counter() - t0
    [summary] = manager.load_summary()
    assert summary.error is None and summary.had_clean_shutdown != rebuild, summary
    assert summary.logs_loaded == 1 and summary.segments_loaded == segments, summary
    log = manager.get_log(TOPIC, 0)
    assert log is not None and log.log_end_offset == end and log.last_stable_offset == end, log
    assert len(log.active_producers) == producers, log.active_producers
    manager.close(1)
    return elapsed


def kafkalog_times(root: Path, rebuild: bool, reps: int, end: int, segments: int, producers: int) -> list[float]:
    open_once(root, rebuild, end, segments, producers)  # warm-up
    return [open_once(root, rebuild, end, segments, producers) for _ in range(reps)]


def kafka_times(
    classpath: str, root: Path, rebuild: bool, reps: int, end: int, segments: int, producers: int
) -> tuple[float, float]:
    mode = "rebuild" if rebuild else "clean"
    stdout = run_java(classpath, "KafkaLoadBench", [
        "--dirs", str(root), "--mode", mode, "--threads", "1", "--label", "txn", "--warmup-reps", "1",
        "--reps", str(reps), "--expect-logs", "1", "--expect-segments", str(segments),
    ], timeout=900)  # fmt: skip
    lines = [line for line in stdout.splitlines() if line.startswith("kafka ")]
    if not lines:
        raise SystemExit(f"KafkaLoadBench printed no result:\n{stdout[-3000:]}")
    print(lines[-1], flush=True)
    fields = dict(kv.split("=", 1) for kv in lines[-1].split()[3:])
    if int(fields["producers"]) != producers or int(fields["stable_end_sum"]) != end:
        raise SystemExit(f"Kafka loaded {fields['producers']} producers, first unstable offset or log end "
                         f"{fields['stable_end_sum']}; "
                         f"expected {producers}, {end}")  # fmt: skip
    return float(fields["median_s"]), float(fields["best_s"])


def ms(median: float, best: float) -> str:
    return f"{median * 1e3:.1f} [{best * 1e3:>6.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000, help="transactional records (default: %(default)s)")
    ap.add_argument("--producers", type=int, default=4, help="transactional producers (default: %(default)s)")
    ap.add_argument("--batches-per-txn", type=int, default=2, help="(default: %(default)s)")
    ap.add_argument("--records-per-batch", type=int, default=100, help="(default: %(default)s)")
    ap.add_argument("--value-bytes", type=int, default=100, help="(default: %(default)s)")
    ap.add_argument("--segment-mib", type=int, default=16, help="segment.bytes in MiB (default: %(default)s)")
    ap.add_argument("--reps", type=int, default=5,
                    help="timed runs after one warm-up, each side (default: %(default)s)")  # fmt: skip
    ap.add_argument("--no-kafka", action="store_true", help="kafkalog only (no java needed)")
    ap.add_argument("--scratch", type=Path, default=None, help="parent of the work directory (default: system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    started = time.monotonic()

    classpath = None if args.no_kafka else kafka_classpath("bench_txn_startup.py")
    rows = []
    with work_dir("kafkalog-bench-txn-startup-", args.scratch, args.keep) as work:
        root, end, segments, size = write_fixture(work / "kafkalog", args)
        kafka_root = work / "kafka"
        shutil.copytree(root, kafka_root)
        for rebuild in (False, True):
            name = "rebuild (no marker, no .snapshot)" if rebuild else "snapshot (clean shutdown)"
            kl = kafkalog_times(root, rebuild, args.reps, end, segments, args.producers)
            row = [name, ms(statistics.median(kl), min(kl)), f"{size / 1e6 / statistics.median(kl):.0f}"]
            if classpath is not None:
                kf = kafka_times(classpath, kafka_root, rebuild, args.reps, end, segments, args.producers)
                row += [ms(*kf), f"{kf[0] / statistics.median(kl):.2f}x"]
            rows.append(row)

    print()
    print(f"Start-up of one partition, {end:,} offsets ({args.records:,} transactional records, {args.producers} "
          f"producers, {segments} segments, {size / 1e6:.0f} MB): median of {args.reps} runs after one warm-up, "
          f"best in brackets; {machine()}")  # fmt: skip
    columns = [Column("start-up", 34, left=True), Column("kafkalog ms", 18), Column("log MB/s", 8)]
    if classpath is not None:
        columns += [Column("Kafka ms", 18), Column("Kafka/kafkalog", 14)]
    print_table(columns, rows)
    print(f"(total {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
