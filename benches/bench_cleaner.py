"""Log compaction throughput: ``kafkalog.UnifiedLog.compact_now`` on one cleaner thread, optionally
beside Apache Kafka's own cleaner on copies of the same partition directory (``--kafka``, which
``make bench-kafka`` passes).

Goal (issue 5): at least 5x Kafka's cleaner per thread, and two partitions cleaned by two threads
at least 1.8x faster than by one thread in turn.

Scenarios (uncompressed, 16-byte keys, 100-byte values, 128-record batches of ~16 KiB, the
default 1 GiB segments, a 128 MiB offset map = log.cleaner.dedupe.buffer.size with one cleaner
thread, so about 5.03 M keys a pass):

- ``1M keys``: 1,000,000 distinct keys, each written twice (2 M records, ~250 MB): one pass;
- ``10M keys``: 10,000,000 keys written once, then 3,000,000 of them again (13 M records,
  ~1.6 GB): the map holds about half the keys, so Kafka cleans in three passes, each recopying
  the log from its start. kafkalog by default (``--decisions sliced``) decides every key in
  hash-sliced read passes and rewrites the log once, keeping the same records; with
  ``--decisions rounds`` it follows Kafka's passes (but keeps a segment that a pass leaves byte
  for byte as it was instead of rewriting it, and spares pass 2 the records pass 1 mapped).

``--quick`` (smoke runs) replaces them with 200,000 keys written twice, cleaned once with the
128 MiB map and once with a 2 MiB map (several passes).

Each scenario's input is written once through kafkalog (follower appends of ready-made batches,
then a roll, so all of it is cleanable); every timed run cleans a fresh copy of it (copied and
``os.sync()``-ed outside the clock, so the page cache is warm and no write-back is pending). A run
of kafkalog times ``compact_now(dedupe_buffer_size=...)`` on an open log (the open and the close
are outside the clock; the call takes the offset map the previous call left idle, which
the warm-up run allocates, as compact_now does in any process); a run of Kafka
(tests/kit/jvm/java/KafkaCleanerDriver.java, the JVM options of a broker: BENCH_JVM_OPTS) times
``Cleaner.doClean`` passes over the same range, with one Cleaner and map reused across runs as a
cleaner thread does. Both report passes, records kept and bytes; the script checks that both did
the same work (same passes, end offset, records read and written). Figures: median of ``--runs``
timed runs after ``--warmup`` untimed ones. Rates: cleanable input (MB = 10^6 bytes of .log, and
records) per second of the whole clean.

Memory: the map's bytes per slot (24 by construction: an MD5 digest and an offset) and the
Python process's resident-set growth during compact_now (sampled every 5 ms), per key held in the
map. For Kafka, the JVM's peak heap (it holds the map on-heap).

Concurrency: two partitions (copies of the first scenario's input), cleaned by one thread one
after the other, then by two Python threads each calling compact_now on its own log (the call
releases the GIL), on fresh copies each time.

Run with ``make bench`` (kafkalog only, full sizes: about 2 minutes) or ``make bench-kafka``
(beside Kafka: about 5 minutes on a busy 2-core machine); up to 10 GB of scratch space (checked
first; ``--scratch`` elsewhere, ``--quick`` for 0.3 GB and half a minute).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import threading
import time
from pathlib import Path

from bench_common import Column, kafka_classpath, machine, print_table, run_java, work_dir
from kit.files import copy_partition

import kafkalog
from kafkalog import _native

TOPIC_CONFIG = {"cleanup.policy": "compact"}  # Kafka's defaults otherwise (segment.bytes 1 GiB)
MAP_BYTES = 128 * 1024 * 1024
RECORDS_PER_BATCH = 128
VALUE_BYTES = 100
BASE_TS = 1_700_000_000_000
NOW_MS = BASE_TS + 86_400_000
PERMUTATION_STEP = 7919  # a prime: i -> (i * 7919 + shift) % keys is a permutation for keys = 2^a 5^b
GOAL_RATIO = 5.0
GOALS = {"1M keys": 8.0, "10M keys": 10.0}  # issue 17: per scenario, wall time
GOAL_SPEEDUP = 1.8


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    keys: int
    writes_per_key: float
    map_bytes: int = MAP_BYTES

    @property
    def records(self) -> int:
        return int(self.keys * self.writes_per_key)


FULL = [Scenario("1M keys", 1_000_000, 2.0), Scenario("10M keys", 10_000_000, 1.3)]
QUICK = [Scenario("200K keys", 200_000, 2.0), Scenario("200K keys, 2 MiB map", 200_000, 2.0, 2 * 1024 * 1024)]
APPROX_RECORD_BYTES = 127  # on disk, with the batch header share


# -- the input -------------------------------------------------------------------------------------


def write_input(path: Path, keys: int, writes_per_key: float) -> tuple[int, int]:
    """Writes the scenario's partition directory; returns (records, .log bytes)."""
    pool = bytes((i * 131 + 7) % 251 for i in range(8192))
    total = int(keys * writes_per_key)
    offset = 0
    with kafkalog.UnifiedLog.open(path, TOPIC_CONFIG) as log:
        round_ = 0
        while offset < total:
            shift = round_ * 104_729
            in_round = min(keys, total - offset)
            for start in range(0, in_round, RECORDS_PER_BATCH):
                rows = []
                for i in range(start, min(start + RECORDS_PER_BATCH, in_round)):
                    k = (i * PERMUTATION_STEP + shift) % keys
                    v = (offset * 37) % (len(pool) - VALUE_BYTES)
                    rows.append((offset, BASE_TS + offset, b"key-%012d" % k, pool[v : v + VALUE_BYTES], []))
                    offset += 1
                raw = _native.build_batch(rows[0][0], rows, "none", -1, -1, -1, False, 0, None)
                log.append_as_follower(raw)
            round_ += 1
        log.roll()  # everything cleanable
        size = sum(s.size for s in log.segments)
    return total, size


# -- kafkalog --------------------------------------------------------------------------------------


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class RssSampler:
    """Peak resident set size above the level at start, sampled every 5 ms on a thread."""

    def __init__(self) -> None:
        self.base = rss_bytes()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_bytes())

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())

    @property
    def delta(self) -> int:
        return self.peak - self.base


@dataclasses.dataclass
class Run:
    secs: float
    cpu_secs: float  # CPU time of the cleaning thread (no I/O waits, fsyncs included)
    passes: list[tuple[int, int]]
    end_offset: int
    messages_read: int
    messages_written: int
    bytes_read: int
    map_bytes_read: int
    kept: int  # records the last pass wrote: what the log holds below its end offset
    rss_delta: int = 0  # kafkalog
    heap_peak: int = 0  # Kafka


def kafkalog_once(path: Path, map_bytes: int, sliced: bool) -> Run:
    with kafkalog.UnifiedLog.open(path, TOPIC_CONFIG) as log:
        with RssSampler() as rss:
            c0, t0 = time.thread_time(), time.perf_counter()
            result = log.compact_now(dedupe_buffer_size=map_bytes, time_ms=NOW_MS, sliced_decisions=sliced)
            secs, cpu = time.perf_counter() - t0, time.thread_time() - c0
    s = result.stats
    return Run(
        secs, cpu, [(p.first_dirty_offset, p.end_offset) for p in result.passes], result.end_offset, s.messages_read,
        s.messages_written, s.bytes_read, s.map_bytes_read, result.passes[-1].stats.messages_written,
        rss_delta=rss.delta,
    )  # fmt: skip


def kafkalog_runs(src: Path, work: Path, map_bytes: int, warmup: int, runs: int, sliced: bool) -> list[Run]:
    out = []
    for i in range(warmup + runs):
        d = copy_partition(src, work / f"kafkalog-run{i}" / src.name)
        os.sync()
        r = kafkalog_once(d, map_bytes, sliced)
        shutil.rmtree(d.parent)
        if i >= warmup:
            out.append(r)
    return out


# -- Kafka -----------------------------------------------------------------------------------------


def kafka_runs(classpath: str, src: Path, work: Path, map_bytes: int, warmup: int, runs: int, label: str) -> list[Run]:
    dirs = [copy_partition(src, work / f"kafka-run{i}" / src.name) for i in range(warmup + runs)]
    os.sync()
    args = [
        "--dir", ",".join(str(d) for d in dirs), "--warmup", str(warmup), "--now-ms", str(NOW_MS),
        "--map-bytes", str(map_bytes), "--io-buffer-bytes", str(524288 // 2), "--label", label,
        "--config", "cleanup.policy=compact",
    ]  # fmt: skip
    try:
        stdout = run_java(classpath, "KafkaCleanerDriver", args, timeout=7200)
    finally:
        for d in dirs:
            shutil.rmtree(d.parent, ignore_errors=True)
    results = [json.loads(line.split(" ", 1)[1]) for line in stdout.splitlines() if line.startswith("cleaner-json ")]
    if len(results) != warmup + runs:
        raise SystemExit(f"KafkaCleanerDriver gave {len(results)} results, not {warmup + runs}:\n{stdout[-3000:]}")
    out = []
    for j in results:
        if j["warmup"]:
            continue
        p = j["passes"]
        out.append(Run(
            j["secs"], j["cpu_secs"], [(x["first_dirty_offset"], x["end_offset"]) for x in p], j["end_offset"],
            j["messages_read"], j["messages_written"], j["bytes_read"], sum(x["map_bytes_read"] for x in p),
            p[-1]["messages_written"], heap_peak=j["heap_peak_bytes"],
        ))  # fmt: skip
    return out


# -- two partitions --------------------------------------------------------------------------------


def two_partitions(src: Path, work: Path, map_bytes: int, runs: int) -> tuple[list[float], list[float]]:
    seq, conc = [], []
    for i in range(runs + 1):  # the first of each: warm-up
        for mode, times in (("seq", seq), ("conc", conc)):
            dirs = [copy_partition(src, work / f"{mode}{i}-p{p}" / src.name) for p in (0, 1)]
            os.sync()
            logs = [kafkalog.UnifiedLog.open(d, TOPIC_CONFIG) for d in dirs]
            errors: list[BaseException] = []

            def clean(log: kafkalog.UnifiedLog) -> None:
                try:
                    log.compact_now(dedupe_buffer_size=map_bytes, time_ms=NOW_MS, sliced_decisions=True)
                except BaseException as e:  # noqa: BLE001 (reported below)
                    errors.append(e)

            t0 = time.perf_counter()
            if mode == "seq":
                for log in logs:
                    clean(log)
            else:
                threads = [threading.Thread(target=clean, args=(log,)) for log in logs]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            elapsed = time.perf_counter() - t0
            for log in logs:
                log.close()
            for d in dirs:
                shutil.rmtree(d.parent)
            if errors:
                raise errors[0]
            if i > 0:
                times.append(elapsed)
    return seq, conc


# -- main ------------------------------------------------------------------------------------------


def table_columns(kafka: bool) -> list[Column]:
    columns = [Column("scenario", 22, left=True), Column("records", 11), Column("MB", 6), Column("map", 7),
               Column("passes", 6), Column("kept", 10), Column("kafkalog s", 10), Column("cpu", 6), Column("MB/s", 6),
               Column("krec/s", 7)]  # fmt: skip
    if kafka:
        columns += [Column("Kafka s", 8), Column("cpu", 6), Column("MB/s", 6), Column("krec/s", 7),
                    Column("Kafka/kafkalog", 14), Column("(cpu)", 7)]  # fmt: skip
    return columns


def table_row(sc: Scenario, records: int, size: int, mine: list[Run], theirs: list[Run] | None) -> list[str]:
    k, kc = statistics.median(r.secs for r in mine), statistics.median(r.cpu_secs for r in mine)
    row = [sc.name, f"{records:,}", f"{size / 1e6:.0f}", f"{sc.map_bytes >> 20}MiB", f"{len(mine[0].passes)}",
           f"{mine[0].kept:,}", f"{k:.2f}", f"{kc:.2f}", f"{size / 1e6 / k:.0f}", f"{records / 1e3 / k:.0f}"]  # fmt: skip
    if theirs:
        t, tc = statistics.median(r.secs for r in theirs), statistics.median(r.cpu_secs for r in theirs)
        row += [f"{t:.2f}", f"{tc:.2f}", f"{size / 1e6 / t:.0f}", f"{records / 1e3 / t:.0f}", f"{t / k:.2f}x",
                f"{tc / kc:.2f}x"]  # fmt: skip
    return row


def check_same_work(name: str, a: Run, b: Run, sliced: bool) -> None:
    if sliced:  # one rewrite: the same end and the same records kept as Kafka's last pass
        mine: tuple[object, ...] = (a.end_offset, a.kept)
        theirs: tuple[object, ...] = (b.end_offset, b.kept)
    else:
        mine = (a.passes, a.end_offset, a.messages_read, a.messages_written, a.kept)
        theirs = (b.passes, b.end_offset, b.messages_read, b.messages_written, b.kept)
    if mine != theirs:
        raise SystemExit(f"{name}: kafkalog and Kafka did different work: {mine} vs {theirs}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200K-key scenarios instead of 1M and 10M (smoke runs)")
    ap.add_argument("--kafka", action="store_true", help="also run Kafka's cleaner (needs java, javac, mvn)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per scenario and side (default: %(default)s)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs first, each side (default: %(default)s)")
    ap.add_argument("--big-warmup", type=int, default=0,
                    help="warm-up runs for scenarios over 5 M records (default: %(default)s; a run takes a while "
                         "and Kafka's JIT is warm after its first seconds)")
    ap.add_argument("--only", default=None, help="run only the scenarios whose name contains this (e.g. '1M')")
    ap.add_argument("--no-concurrency", action="store_true", help="skip the two-partition runs")
    ap.add_argument("--decisions", choices=("sliced", "rounds"), default="sliced",
                    help="kafkalog's mode for a range with more keys than the map: hash-sliced decision passes and "
                         "one rewrite (log.cleaner.kafkalog.sliced.decisions), or Kafka's rounds (default: %(default)s)")
    ap.add_argument("--scratch", type=Path, default=None, help="parent of the work directory (default: system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    started = time.monotonic()
    scenarios = [s for s in (QUICK if args.quick else FULL) if args.only is None or args.only in s.name]
    if not scenarios:
        raise SystemExit(f"no scenario matches {args.only!r}")

    classpath = kafka_classpath() if args.kafka else None
    rows = []
    conc_result = None
    sources: dict[tuple[int, float], tuple[Path, int, int]] = {}
    with work_dir("kafkalog-bench-cleaner-", args.scratch, args.keep) as work:
        # Peak: every distinct input, plus warm-up + runs copies (Kafka's all at once), plus output.
        inputs = {(s.keys, s.writes_per_key) for s in scenarios}
        biggest = max(s.records for s in scenarios) * APPROX_RECORD_BYTES
        copies = max(args.warmup, args.big_warmup) + args.runs + 1
        need = sum(int(k * w) for k, w in inputs) * APPROX_RECORD_BYTES + biggest * copies
        free = shutil.disk_usage(work).free
        print(f"scratch {work}: {free / 1e9:.1f} GB free, about {need / 1e9:.1f} GB needed at peak", flush=True)
        if free < need * 1.1:
            raise SystemExit(f"not enough space under {work.parent} (use --scratch or --quick)")
        for sc in scenarios:
            key = (sc.keys, sc.writes_per_key)
            if key not in sources:
                t0 = time.perf_counter()
                src = work / f"input-{sc.keys}-{sc.writes_per_key}" / "bench-0"
                records, size = write_input(src, sc.keys, sc.writes_per_key)
                sources[key] = (src, records, size)
                print(f"input: {sc.keys:,} keys, {records:,} records, {size / 1e6:.0f} MB in "
                      f"{time.perf_counter() - t0:.1f} s", flush=True)  # fmt: skip
            src, records, size = sources[key]
            warmup = args.big_warmup if records > 5_000_000 else args.warmup
            sliced = args.decisions == "sliced"
            mine = kafkalog_runs(src, work, sc.map_bytes, warmup, args.runs, sliced)
            print(f"{sc.name}: kafkalog {', '.join(f'{r.secs:.2f}' for r in mine)} s, {len(mine[0].passes)} pass(es)",
                  flush=True)  # fmt: skip
            theirs = None
            if classpath is not None:
                theirs = kafka_runs(classpath, src, work, sc.map_bytes, warmup, args.runs, sc.name)
                print(f"{sc.name}: Kafka {', '.join(f'{r.secs:.2f}' for r in theirs)} s", flush=True)
                check_same_work(sc.name, mine[0], theirs[0], sliced)
            rows.append((sc, records, size, mine, theirs))
        if not args.no_concurrency:
            src, records, size = sources[(scenarios[0].keys, scenarios[0].writes_per_key)]
            seq, conc = two_partitions(src, work, scenarios[0].map_bytes, args.runs)
            conc_result = (scenarios[0], records, size, seq, conc)

    print()
    print(f"Log compaction, one cleaner thread: median of {args.runs} runs after {args.warmup} warm-up(s) "
          f"({args.big_warmup} for inputs over 5 M records); rates over the cleanable input (MB = 10^6 bytes); "
          f"cpu = CPU seconds of the cleaning thread; kafkalog's decisions: {args.decisions} (passes = its rewrites); "
          f"{machine()}")  # fmt: skip
    print_table(table_columns(args.kafka), [table_row(*row) for row in rows])
    if args.kafka:
        ratios = [statistics.median(r.secs for r in th) / statistics.median(r.secs for r in mi) for _, _, _, mi, th in rows]
        verdict = "met" if min(ratios) >= GOAL_RATIO else "NOT met"
        print(f"goal: kafkalog >= {GOAL_RATIO:.0f}x Kafka's cleaner per thread (wall time): {verdict} "
              f"(worst {min(ratios):.2f}x)")  # fmt: skip
        for (sc, *_), ratio in zip(rows, ratios):
            if sc.name in GOALS:
                met = "met" if ratio >= GOALS[sc.name] else "NOT met"
                print(f"goal (issue 17): {sc.name} >= {GOALS[sc.name]:.0f}x Kafka: {met} ({ratio:.2f}x)")
    else:
        print(f"goal: kafkalog >= {GOAL_RATIO:.0f}x Kafka's cleaner per thread (make bench-kafka measures Kafka)")

    print()
    print("Memory: the offset map takes 24 bytes a slot (16-byte MD5 + 8-byte offset), allocated whole; at the 0.9")
    print("load factor that is 26.7 bytes per key a pass can hold (the sliced decision passes lay the same memory out in")
    print("20-byte slots, 16-byte MD5 + 32-bit offset distance: the same keys a pass, a table 0.75 full instead of 0.9).")
    print("compact_now keeps the map of the previous call")
    print("(the warm-up's), so a timed call's RSS growth is what it needs beside the map (pass 1's marks: 2 bits")
    print("per mapped offset, at most one byte per slot; the sliced decisions: 3 bits per offset of the log, so")
    print("128 MiB + 4.9 MB for 10 M keys = 13.9 bytes per key with the map)")
    for sc, records, size, mine, theirs in rows:
        slots = sc.map_bytes // 24
        rss = statistics.median(r.rss_delta for r in mine)
        beside = rss - sc.map_bytes if rss >= sc.map_bytes * 0.9 else rss  # the call allocated the map itself
        line = (
            f"  {sc.name:<22} map {sc.map_bytes / 2**20:.0f} MiB = {slots:,} slots, {int(slots * 0.9):,} keys a pass;"
            f" kafkalog RSS beside the map during compact_now {beside / 2**20:.0f} MiB"
        )
        if theirs:
            line += f"; Kafka JVM peak heap {statistics.median(r.heap_peak for r in theirs) / 2**20:.0f} MiB"
        print(line)
    print(f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    if conc_result:
        sc, records, size, seq, conc = conc_result
        s, c = statistics.median(seq), statistics.median(conc)
        verdict = "met" if s / c >= GOAL_SPEEDUP else "NOT met"
        print()
        print(f"Two partitions ({sc.name} each, {2 * size / 1e6:.0f} MB), median of {args.runs}: one thread in turn "
              f"{s:.2f} s, two threads {c:.2f} s: speedup {s / c:.2f}x (goal >= {GOAL_SPEEDUP}x: {verdict}; "
              f"{machine()})")  # fmt: skip
    print(f"(total {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
