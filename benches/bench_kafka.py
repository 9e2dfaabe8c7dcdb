"""kafkalog beside Apache Kafka's own storage code, timed on the same workload files, on one
machine, in one run (``make bench-kafka``).

For each workload (producer batches of about 16 KiB holding 100-byte or 1 KiB records,
uncompressed or lz4, 32 MiB in all by default):

1. ``benches/bench_workload.rs write`` builds the batches (the generator of
   benches/log_bench.rs) into ``<scratch>/<workload>/producer.batches``;
2. ``benches/bench_workload.rs run`` (release build) times kafkalog on them;
3. ``tests/kit/jvm/java/KafkaStorageBench.java`` (compiled against the Kafka 4.x jars that the
   interop tests resolve from Maven Central) times Kafka on the same file, in one JVM with
   warm-up repetitions first.

The two programs alternate which runs first from one workload to the next. Both print one
line per measurement (``<impl> <op> <workload> key=value...``), echoed here as they come; a
table follows with best and median throughput of each and the kafkalog/Kafka ratio (above 1:
kafkalog is faster). Finally the ``.log``/``.index``/``.timeindex`` files each side wrote as
leader (the input of ``scan``) are compared byte for byte.

What each op times, on each side (only the appends or the scan; opening, closing with its
fsyncs and removing the log are outside the clock):

- ``append_leader``: ``UnifiedLog.append_as_leader`` / Kafka ``UnifiedLog.appendAsLeader``
  (origin CLIENT, thread-confined RequestLocal as a request handler thread has), once per
  producer batch: CRC check, LogValidator record validation and offset assignment, roll check,
  indexes, write into the page cache. Both layers also keep producer state (these batches
  carry no producer id, so it stays empty) and the leader epoch cache (one
  leader-epoch-checkpoint write per log).
- ``append_follower``: ``append_as_follower`` / ``appendAsFollower(batch, 0)`` of the same
  batches with offsets and partition leader epoch 0 already set (as a leader wrote them).
- ``append_segment``: ``LogSegment::append`` / ``LogSegment.append(lastOffset, records)`` of
  those batches on a bare segment: the raw segment layer (indexes and file write) only.
- ``scan``: kafkalog ``UnifiedLog::scan`` with ``ensure_valid`` and every record decoded vs.
  Kafka ``FileRecords`` over the segment file: ``batches()``, ``ensureValid()``,
  ``streamingIterator`` (decompressing as Kafka's consumer does), ``key()``/``value()`` read.

Idempotent leader appends (``--idem-workloads``, by default 100B/none, 1024B/none and 100B/lz4
from 4 producers, ``append_leader`` only): the same records in batches carrying producer id
``1000 + i % 4``, epoch 0 and per-producer sequences, so both logs keep producer state and check
each batch's epoch and sequence; every ``--duplicate-every``-th batch (default 20) is sent twice
in a row, a producer's retry, which each log's duplicate check answers with the first append's
offsets (throughputs count each record once). A second table prints them beside the
non-idempotent leader append of the same records, the reference.

Needs cargo, java/javac 17+ and Maven (the jars are fetched once into tests/kit/jvm/.cache).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from pathlib import Path

from bench_common import Column, jvm_opts, kafka_classpath, machine, print_table, require_tools, run_checked, work_dir

WORKLOADS = [(100, "none"), (1024, "none"), (100, "lz4"), (1024, "lz4")]
OPS = ["append_leader", "append_follower", "append_segment", "scan"]
IDEM_WORKLOADS = "100B/none/idem4,1024B/none/idem4,100B/lz4/idem4"
LINE = re.compile(r"^(kafkalog|kafka) (\S+) (\S+) (.*)$")


def results(stdout: str) -> list[tuple[str, str, str, dict[str, float]]]:
    """(impl, op, workload, fields) of each measurement line; echoes them."""
    out = []
    for line in stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        print(line, flush=True)
        fields = {k: float(v) for k, v in (kv.split("=", 1) for kv in m[4].split())}
        out.append((m[1], m[2], m[3], fields))
    return out


def build_example() -> Path:
    run_checked(["cargo", "build", "--release", "--quiet", "--example", "bench_workload"], timeout=900)
    meta = json.loads(run_checked(["cargo", "metadata", "--format-version", "1", "--no-deps"]))
    exe = Path(meta["target_directory"]) / "release" / "examples" / "bench_workload"
    if not exe.exists():
        raise SystemExit(f"{exe} missing after cargo build")
    return exe


def compare_logs(a: Path, b: Path) -> str:
    names = sorted(p.name for p in a.iterdir() if p.suffix in (".log", ".index", ".timeindex"))
    other = sorted(p.name for p in b.iterdir() if p.suffix in (".log", ".index", ".timeindex"))
    if names != other:
        return f"DIFFERENT file sets: kafkalog {names}, Kafka {other}"
    differing = [n for n in names if (a / n).read_bytes() != (b / n).read_bytes()]
    if differing:
        return f"DIFFERENT bytes in {differing}"
    return f"identical ({len(names)} files)"


def fmt_ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def idem_table(rows: dict[tuple[str, str], dict[str, dict[str, float]]], duplicate_every: int) -> None:
    """Idempotent leader appends (with duplicate checks) beside the same records' non-idempotent
    leader appends, the reference: records/s, MB/s (10^6 bytes) and kafkalog/Kafka of each."""
    table = []
    for (wl, op), by in rows.items():
        base = wl.rsplit("/idem", 1)[0]
        kl, kf = by.get("kafkalog"), by.get("kafka")
        if op != "append_leader" or base == wl or not (kl and kf):
            continue
        ref = rows.get((base, op), {})
        rk, rf = ref.get("kafkalog"), ref.get("kafka")
        mb = {impl: f["rec/s"] * f["bytes"] / f["records"] / 1e6 for impl, f in by.items()}
        table.append([wl, f"{kl['rec/s'] / 1e6:.2f}", f"{mb['kafkalog']:.0f}", f"{kf['rec/s'] / 1e6:.2f}",
                      f"{mb['kafka']:.0f}", fmt_ratio(kl["rec/s"], kf["rec/s"]),
                      fmt_ratio(kl["median_rec/s"], kf["median_rec/s"]),
                      f"{rk['rec/s'] / 1e6:.2f}" if rk else "-", f"{rf['rec/s'] / 1e6:.2f}" if rf else "-",
                      fmt_ratio(rk["rec/s"], rf["rec/s"]) if rk and rf else "-"])  # fmt: skip
    if not table:
        return
    print()
    retry = f"every {duplicate_every}th batch sent twice (a retry)" if duplicate_every else "no retries"
    print(f"Idempotent leader append (producer id/epoch/sequence checked, duplicates looked up; {retry}), "
          "best of the measured repetitions; the reference is the same records' non-idempotent leader append")
    columns = [Column("workload", 17, left=True), Column("kafkalog Mrec/s", 15), Column("MB/s", 5),
               Column("Kafka Mrec/s", 12), Column("MB/s", 5), Column("kafkalog/Kafka", 14), Column("(median)", 8),
               Column("non-idem kafkalog", 17), Column("Kafka", 6), Column("kafkalog/Kafka", 14)]  # fmt: skip
    print_table(columns, table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(f"{s}B/{c}" for s, c in WORKLOADS),
                    help="comma-separated <record size>B/<codec> (default: %(default)s)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated (default: %(default)s)")
    ap.add_argument("--idem-workloads", default=IDEM_WORKLOADS,
                    help="comma-separated <record size>B/<codec>/idem<producers>: idempotent producers' batches "
                         "(default: %(default)s; empty: none)")
    ap.add_argument("--idem-ops", default="append_leader", help="ops run on them (default: %(default)s)")
    ap.add_argument("--duplicate-every", type=int, default=20,
                    help="in the idempotent workloads' leader appends every N-th batch is sent twice in a row, a "
                         "retry the duplicate check answers (default: %(default)s; 0: never)")
    ap.add_argument("--total-mib", type=int, default=32, help="batch bytes per workload (default: %(default)s)")
    ap.add_argument("--reps", type=int, default=7, help="measured repetitions (default: %(default)s)")
    ap.add_argument("--warmup-reps", type=int, default=3, help="minimum warm-up repetitions (default: %(default)s)")
    ap.add_argument("--warmup-s", type=float, default=1.5, help="minimum warm-up seconds per op (default: %(default)s)")
    ap.add_argument("--scratch", type=Path, default=None, help="parent of the work directory (default: system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (workload files, scanned logs)")
    args = ap.parse_args()

    started = time.monotonic()
    require_tools("cargo", why="bench_kafka.py")
    workloads = []  # (record size, codec, idempotent producers, ops)
    for w in args.workloads.split(","):
        m = re.fullmatch(r"(\d+)B/(\w+)", w.strip())
        if not m:
            raise SystemExit(f"bad workload {w!r}: want e.g. 100B/none")
        workloads.append((int(m[1]), m[2], 0, args.ops))
    for w in filter(None, args.idem_workloads.split(",")):
        m = re.fullmatch(r"(\d+)B/(\w+)/idem(\d+)", w.strip())
        if not m or int(m[3]) < 1:
            raise SystemExit(f"bad idempotent workload {w!r}: want e.g. 100B/none/idem4")
        workloads.append((int(m[1]), m[2], int(m[3]), args.idem_ops))

    classpath = kafka_classpath("bench_kafka.py")
    exe = build_example()
    java_version = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    print(f"kafkalog: {exe}; JVM: {(java_version.splitlines() or ['?'])[0]} {' '.join(jvm_opts())}", flush=True)

    timing = ["--reps", str(args.reps), "--warmup-reps", str(args.warmup_reps), "--warmup-s", str(args.warmup_s)]
    rows: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    identity: dict[str, str] = {}
    with work_dir("kafkalog-bench-kafka-", args.scratch, args.keep) as work:
        for i, (size, codec, producers, ops) in enumerate(workloads):
            label = f"{size}B/{codec}" + (f"/idem{producers}" if producers else "")
            wdir = work / label.replace("/", "-")
            idem = ["--producers", str(producers), "--duplicate-every", str(args.duplicate_every)] if producers else []
            run_checked([str(exe), "write", "--out", str(wdir), "--record-size", str(size), "--codec", codec,
                         "--total-mib", str(args.total_mib), *idem])
            scratch = wdir / "logs"
            kl_log = wdir / "kafkalog-leader" / "bench-0"
            kafka_log = wdir / "kafka-leader" / "bench-0"
            kl_cmd = [str(exe), "run", "--workload", str(wdir), "--ops", ops, "--scratch", str(scratch),
                      "--log-out", str(kl_log), *timing]
            kafka_cmd = ["java", *jvm_opts(), "-cp", classpath, "KafkaStorageBench", "--workload", str(wdir),
                         "--ops", ops, "--scratch", str(scratch), "--log-out", str(kafka_log), *timing]
            for cmd in ([kl_cmd, kafka_cmd] if i % 2 == 0 else [kafka_cmd, kl_cmd]):
                for impl, op, wl, fields in results(run_checked(cmd)):
                    rows.setdefault((wl, op), {})[impl] = fields
            if kl_log.is_dir() and kafka_log.is_dir():
                identity[label] = compare_logs(kl_log, kafka_log)

    print()
    print(f"Throughput of batch bytes, best and median of the measured repetitions; {machine()}")
    columns = [Column("workload", 11, left=True), Column("op", 16, left=True), Column("kafkalog MiB/s", 14),
               Column("(median)", 8), Column("Kafka MiB/s", 11), Column("(median)", 8), Column("kafkalog/Kafka", 14),
               Column("(median)", 8), Column("kafkalog Mrec/s", 15), Column("Kafka Mrec/s", 12)]  # fmt: skip
    table = []
    for (wl, op), by in rows.items():
        kl, kf = by.get("kafkalog"), by.get("kafka")
        if kl and kf:
            table.append([wl, op, f"{kl['MiB/s']:.0f}", f"{kl['median_MiB/s']:.0f}", f"{kf['MiB/s']:.0f}",
                          f"{kf['median_MiB/s']:.0f}", fmt_ratio(kl["MiB/s"], kf["MiB/s"]),
                          fmt_ratio(kl["median_MiB/s"], kf["median_MiB/s"]), f"{kl['rec/s'] / 1e6:.2f}",
                          f"{kf['rec/s'] / 1e6:.2f}"])  # fmt: skip
    print_table(columns, table)
    print()
    print("Layers timed (kafkalog | Kafka 4.x):")
    print("  append_leader    UnifiedLog::append_as_leader | UnifiedLog.appendAsLeader (LogValidator, producer state, epoch cache)")
    print("  append_follower  UnifiedLog::append_as_follower | UnifiedLog.appendAsFollower (offset-assigned batches)")
    print("  append_segment   LogSegment::append | LogSegment.append (bare segment: indexes + write)")
    print("  scan             UnifiedLog::scan + ensure_valid + decode | FileRecords.batches + ensureValid + streamingIterator")
    idem_table(rows, args.duplicate_every)
    for label, verdict in identity.items():
        print(f"leader-written segment files, kafkalog vs Kafka, {label}: {verdict}")
    print(f"({args.reps} measured repetitions after >= {args.warmup_reps} and >= {args.warmup_s}s of warm-up; "
          f"{args.total_mib} MiB per workload; total {time.monotonic() - started:.0f}s)")


if __name__ == "__main__":
    main()
