"""LogManager start-up and crash recovery through the Python API (``kafkalog.LogManager``), each
scenario beside a floor measured in the same process, and optionally beside Apache Kafka's own
LogManager on copies of the same log dirs (``--kafka``, which ``make bench-kafka`` passes).

Scenarios (those of benches/recovery_bench.rs):

- ``startup clean 1000x10``: one log dir, 1,000 partitions x 10 segments (two ~16 KiB batches
  each), after a clean shutdown; 1 and 2 ``num.recovery.threads.per.data.dir``. Floor: listing
  the same partition directories and stat-ing every file (``os.scandir`` + ``DirEntry.stat``),
  with as many threads.
- ``crash recovery 1000x10``: the same dir in the state a crash leaves (no
  ``.kafka_cleanshutdown``, every active segment's indexes at their preallocated 10 MiB) with
  every recovery point 0, so every segment is recovered (batches CRC-checked, indexes rebuilt);
  ``--crash-threads`` recovery threads (default 1 and 2, issue 17's goals: 1 GB/s with one
  thread, two threads at least 1.8x one). Floor: reading the same ``.log`` bytes
  (``readinto`` 1 MiB into a page-aligned buffer, ``bench_common.read_buffer``) and computing a
  CRC over them with ``zlib.crc32`` (CRC-32, not Kafka's CRC-32C, which the standard library
  lacks; zlib's is carry-less-multiply accelerated, several GB/s, the same order as the CRC-32C
  instruction), with as many threads (both release the GIL).
  It runs ``--crash-runs`` times (default 3; Kafka ``--kafka-reps`` times), no warm-up.
- ``crash recovery <n>dir x <t>thr``: big segments (4 partitions x 4 segments x 32 MiB per
  dir), one dir or two, 1 or 2 recovery threads per dir; floor as above with
  min(dirs x threads, 2) threads.

One timed run is the ``kafkalog.LogManager(...)`` constructor (``scheduler=False``): locks,
``meta.properties``, the marker, the checkpoints, every partition loaded. Outside the clock: a
clean run ends with ``close()`` (which writes the marker again); a crash run starts from the
crash state above and ends by dropping the manager unclosed (another crash) and ``os.sync()``.
Every run starts after an ``os.sync()``, with nothing left to write back. Each run checks
the load summary (clean or not, logs, segments, segments recovered). Figures:
median and best of ``--repeat`` runs after one warm-up; rates from the medians (MB are ``.log``
bytes). The fixture files stay in the page cache: warm-cache figures for every side.

With ``--kafka``, tests/kit/jvm/java/KafkaLoadBench.java (compiled against the Kafka 4.x jars
the interop tests fetch) times ``LogManager.apply`` + ``LogManager.startup`` on a copy of each
fixture (Kafka writes producer snapshots and leader-epoch checkpoints into the dirs it loads),
from the same clean or crash state; Kafka's runs end with a proper ``shutdown`` (untimed).
Both loaders rebuild producer state and write its snapshots.

The fixture: partition 0 is written through ``create_log`` + ``append_as_follower`` with
``internal.segment.bytes`` rolling every N batches; the other partitions are copies of its
directory (each roll fsyncs the rolled segment, about 10 ms here: 10,000 rolls through the API
would take minutes); a first open + close through the API checks the copies and writes the
checkpoints and the marker.

Run with ``make bench`` (about 1.5 minutes) or ``make bench-kafka`` (about 2.5 minutes);
``--quick`` for a smoke run of the same scenarios on small fixtures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench_common import Column, kafka_classpath, machine, print_table, read_buffer, run_java, timed_runs, work_dir

import kafkalog
from kafkalog.batches import build
from kafkalog.checkpoints import write_offset_checkpoint
from kafkalog.records import Record

TOPIC = "bench"
MARKER = ".kafka_cleanshutdown"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
INDEX_BYTES = 10 * 1024 * 1024  # segment.index.bytes default: how big an active segment's indexes are
BATCH_BYTES = 16 * 1024


def one_batch() -> tuple[bytes, int]:
    """A ~16 KiB v2 batch of 100-byte JSON-ish values with 16-byte keys (benches/workload.rs's
    shape), base offset 0; and its record count."""
    records: list[Record] = []
    seed = 0x2545_F491_4F6C_DD1D
    while True:
        value = bytearray()
        while len(value) < 100:
            seed ^= (seed << 13) & 0xFFFF_FFFF_FFFF_FFFF
            seed ^= seed >> 7
            seed ^= (seed << 17) & 0xFFFF_FFFF_FFFF_FFFF
            value += b'"v":%04d' % (seed % 10_000)
        key = b"customer-%07d" % ((seed >> 8) % 1_000_000)
        records.append(Record(key=key, value=bytes(value[:100]), timestamp=1_700_000_000_000 + len(records)))
        if (len(records) + 1) * 130 > BATCH_BYTES:
            break
    raw = build(0, records)
    assert len(raw) <= BATCH_BYTES, len(raw)
    return raw, len(records)


@dataclass
class Fixture:
    dirs: list[Path]
    partitions: list[list[int]]  # per dir
    segments: int  # per partition
    log_files: list[list[Path]]  # per dir
    log_bytes: list[int]  # per dir
    active_base: int  # base offset of every partition's last segment

    def bytes(self, ndirs: int) -> int:
        return sum(self.log_bytes[:ndirs])

    def files(self, ndirs: int) -> list[Path]:
        return [f for files in self.log_files[:ndirs] for f in files]

    def logs(self, ndirs: int) -> int:
        return sum(len(p) for p in self.partitions[:ndirs])

    def make_unclean(self, ndirs: int) -> None:
        """What a crash leaves: no marker, every active segment's offset and time index at its
        preallocated size (segment.index.bytes rounded down to whole entries); then every
        recovery point 0, so every segment is recovered."""
        for d, parts in zip(self.dirs[:ndirs], self.partitions):
            (d / MARKER).unlink(missing_ok=True)
            for p in parts:
                for suffix, entry in ((".index", 8), (".timeindex", 12)):
                    path = d / f"{TOPIC}-{p}" / f"{self.active_base:020d}{suffix}"
                    if path.stat().st_size < INDEX_BYTES // entry * entry:
                        os.truncate(path, INDEX_BYTES // entry * entry)
            write_offset_checkpoint(d / RECOVERY_CHECKPOINT, {(TOPIC, p): 0 for p in parts})

    def ensure_clean(self, ndirs: int) -> None:
        """After crash iterations: one open + close, so the dirs are cleanly shut down again."""
        if any(not (d / MARKER).exists() for d in self.dirs[:ndirs]):
            kafkalog.LogManager(self.dirs[:ndirs], scheduler=False).close(1)

    def copy(self, root: Path) -> Fixture:
        dirs = []
        for d in self.dirs:
            target = root / d.name
            shutil.copytree(d, target)
            dirs.append(target)
        files = [[dirs[i] / f.relative_to(self.dirs[i]) for f in fs] for i, fs in enumerate(self.log_files)]
        return Fixture(dirs, self.partitions, self.segments, files, list(self.log_bytes), self.active_base)


def write_fixture(root: Path, ndirs: int, partitions: int, segments: int, batches_per_segment: int) -> Fixture:
    started = time.perf_counter()
    dirs = [root / f"dir{i}" for i in range(ndirs)]
    raw, count = one_batch()
    batch = bytearray(raw)
    config = {"internal.segment.bytes": batches_per_segment * len(raw)}
    with kafkalog.LogManager(dirs, config, scheduler=False) as manager:
        log = manager.create_log(TOPIC, 0)
        for i in range(segments * batches_per_segment):
            struct.pack_into(">q", batch, 0, i * count)  # the base offset; outside the CRC
            log.append_as_follower(bytes(batch))
        assert len(log.segments) == segments, log.segments
        active_base = log.segments[-1].base_offset
        template = Path(log.path)
        assert template.parent == dirs[0], template
    per_dir: list[list[int]] = [[] for _ in dirs]
    for p in range(partitions):
        if p > 0:
            shutil.copytree(template, dirs[p % ndirs] / f"{TOPIC}-{p}")
        per_dir[p % ndirs].append(p)
    log_files = [sorted(d.glob("*/*.log")) for d in dirs]
    sizes = [sum(f.stat().st_size for f in fs) for fs in log_files]
    fixture = Fixture(dirs, per_dir, segments, log_files, sizes, active_base)
    # The copies are clean but missing from the checkpoints: one open + close through the API
    # checks them and writes the checkpoints and the marker.
    open_once(fixture, ndirs, 2, unclean=False)
    print(
        f"fixture: {ndirs} dir(s), {partitions} partitions x {segments} segments of {batches_per_segment} batches "
        f"({fixture.bytes(ndirs) / 1e6:.0f} MB of .log files) in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return fixture


def open_once(fixture: Fixture, ndirs: int, threads: int, unclean: bool) -> float:
    """One timed `kafkalog.LogManager(...)`, checked. A clean run starts from a clean shutdown
    and ends with close() (untimed); an unclean one starts from a crash's leftovers
    (make_unclean) and ends by dropping the manager unclosed (another crash) and os.sync(),
    untimed. (A close() after an unclean load flushes every recovered segment: seconds for
    the 10,000 segments here.)"""
    if unclean:
        fixture.make_unclean(ndirs)
    else:
        fixture.ensure_clean(ndirs)
    config = {"num.recovery.threads.per.data.dir": threads}
    # Nothing left to write back from before (a close, the crash state's truncations): no run
    # pays for an earlier one's writeback.
    os.sync()
    t0 = time.perf_counter()
    manager = kafkalog.LogManager(fixture.dirs[:ndirs], config, scheduler=False)
    elapsed = time.perf_counter() - t0
    summary = manager.load_summary()
    logs = sum(s.logs_loaded for s in summary)
    segments = sum(s.segments_loaded for s in summary)
    recovered = sum(s.segments_recovered for s in summary)
    assert logs == fixture.logs(ndirs), summary
    assert segments == logs * fixture.segments, summary
    assert all(s.error is None for s in summary), summary
    if unclean:
        assert not any(s.had_clean_shutdown for s in summary) and recovered == segments, summary
        del manager
        os.sync()
    else:
        assert all(s.had_clean_shutdown for s in summary) and recovered == 0, summary
        manager.close(1)
    return elapsed


def list_and_stat(fixture: Fixture, ndirs: int, threads: int) -> int:
    """Every partition directory listed and every file in it stat-ed, `threads` threads per dir
    taking partitions in turn. Returns the files stat-ed."""
    lock = threading.Lock()
    count = 0

    def work(todo: Iterator[str]) -> None:
        nonlocal count
        n = 0
        while True:
            with lock:
                child = next(todo, None)
            if child is None:
                break
            with os.scandir(child) as it:
                for e in it:
                    e.stat()
                    n += 1
        with lock:
            count += n

    workers = []
    for d in fixture.dirs[:ndirs]:
        os.path.exists(d / MARKER)
        with os.scandir(d) as it:
            todo = iter([e.path for e in it if e.is_dir()])
        workers += [threading.Thread(target=work, args=(todo,)) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return count


def read_and_crc(files: list[Path], threads: int) -> int:
    """Reads `files` (1 MiB readinto, into a page-aligned buffer: `read_buffer`) and computes
    zlib.crc32 over every byte; `threads` threads taking files in turn. Returns the bytes
    read."""
    todo = iter(files)
    lock = threading.Lock()
    total = 0

    def work() -> None:
        nonlocal total
        buf = read_buffer()
        view = memoryview(buf)
        crc = 0
        n_bytes = 0
        while True:
            with lock:
                path = next(todo, None)
            if path is None:
                break
            with open(path, "rb", buffering=0) as f:
                while n := f.readinto(view):
                    crc = zlib.crc32(view[:n], crc)
                    n_bytes += n
        with lock:
            total += n_bytes

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return total


def timed(repeat: int, fn: Callable[[], object]) -> list[float]:
    return timed_runs(fn, repeat, warmup=1)


def timed_opens(repeat: int, open_run: Callable[[], float]) -> list[float]:
    """The times ``open_run`` (an :func:`open_once`) returns, of ``repeat`` runs after one
    warm-up: the constructor alone, without the preparation and the close or crash around
    it (which :func:`timed` would count)."""
    open_run()
    return [open_run() for _ in range(repeat)]


@dataclass
class Row:
    scenario: str
    amount: float  # what one run handles, in `unit` x seconds
    unit: str
    kafkalog: list[float]
    floor: list[float]
    floor_name: str
    kafka: tuple[float, float] | None = None  # (median, best) seconds
    load: float = 0.0  # the 1-minute load average after kafkalog's runs and the floor's


def kafka_run(
    classpath: str, fixture: Fixture, ndirs: int, threads: int, mode: str, label: str, warmup: int, reps: int
) -> tuple[float, float]:
    """Runs KafkaLoadBench on `fixture` (Kafka's own copy); returns (median, best) seconds."""
    args = [
        "--dirs", ",".join(str(d) for d in fixture.dirs[:ndirs]), "--mode", mode, "--threads", str(threads),
        "--label", label, "--warmup-reps", str(warmup), "--reps", str(reps),
        "--expect-logs", str(fixture.logs(ndirs)), "--expect-segments", str(fixture.logs(ndirs) * fixture.segments),
    ]  # fmt: skip
    stdout = run_java(classpath, "KafkaLoadBench", args, timeout=900)
    lines = [line for line in stdout.splitlines() if line.startswith("kafka ")]
    if not lines:
        raise SystemExit(f"KafkaLoadBench printed no result:\n{stdout[-3000:]}")
    print(lines[-1], flush=True)
    fields = dict(kv.split("=", 1) for kv in lines[-1].split()[3:])
    return float(fields["median_s"]), float(fields["best_s"])


def ms_and_best(times: list[float]) -> str:
    return f"{statistics.median(times) * 1e3:.1f} [{min(times) * 1e3:>6.1f}]"


def table_row(r: Row) -> list[str]:
    k, f = statistics.median(r.kafkalog), statistics.median(r.floor)
    row = [r.scenario, ms_and_best(r.kafkalog), ms_and_best(r.floor), r.floor_name, f"{k / f:.2f}x",
           f"{r.amount / k:.0f}", f"{r.amount / f:.0f}", r.unit]  # fmt: skip
    if r.kafka:
        row += [f"{r.kafka[0] * 1e3:.1f} [{r.kafka[1] * 1e3:>6.1f}]", f"{r.kafka[0] / k:.2f}x"]
    return row + [f"{r.load:.2f}"]


def print_goals(rows: list[Row], label: str) -> None:
    """Issue 17's recovery goals, each figure beside its floor (and Kafka's, when timed)."""
    by_name = {r.scenario: r for r in rows}
    crash = {t: by_name.get(f"crash recovery {label} {t}thr") for t in (1, 2)}
    clean = by_name.get(f"startup clean {label} 1thr")
    med = statistics.median
    print()
    for t, r in crash.items():
        if r is not None:
            kafka = f", Kafka {r.amount / r.kafka[0]:.0f} MB/s" if r.kafka else ""
            print(f"crash recovery {label}, {t} thread(s): {r.amount / med(r.kafkalog):.0f} MB/s "
                  f"(floor {r.amount / med(r.floor):.0f} MB/s{kafka}; load {r.load:.2f})"
                  + ("; goal >= 1000 MB/s" if t == 1 else ""))  # fmt: skip
    if crash[1] is not None and crash[2] is not None:
        one, two = crash[1], crash[2]
        kafka = f", Kafka {one.kafka[0] / two.kafka[0]:.2f}x" if one.kafka and two.kafka else ""
        print(f"crash recovery {label}, 2 threads / 1 thread: {med(one.kafkalog) / med(two.kafkalog):.2f}x "
              f"(floor {med(one.floor) / med(two.floor):.2f}x{kafka}); goal >= 1.8x")  # fmt: skip
    if clean is not None:
        print(f"startup clean {label}, 1 thread: {med(clean.kafkalog) / med(clean.floor):.2f}x the list+stat floor "
              f"({med(clean.kafkalog) * 1e3:.0f} ms vs {med(clean.floor) * 1e3:.0f} ms; load {clean.load:.2f}); "
              "goal <= 2x")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--segments", type=int, default=10)
    ap.add_argument("--batches-per-segment", type=int, default=2)
    ap.add_argument("--bulk-segment-mib", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5, help="timed repetitions after one warm-up (default: %(default)s)")
    ap.add_argument("--kafka", action="store_true", help="also time Kafka's LogManager (needs java, javac, mvn)")
    ap.add_argument("--crash-runs", type=int, default=3,
                    help="timed runs (no warm-up) of kafkalog's crash recovery of the 1000x10 dir; Kafka's run "
                         "--kafka-reps times (default: %(default)s)")
    ap.add_argument("--crash-threads", default="1,2",
                    help="comma-separated recovery thread counts for the crash recovery of the 1000x10 dir "
                         "(default: %(default)s)")
    ap.add_argument("--kafka-reps", type=int, default=2,
                    help="Kafka's timed repetitions after one warm-up (default: %(default)s)")
    ap.add_argument("--scratch", type=Path, default=None, help="parent of the work directory (default: system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 100 partitions x 4 segments, 2 MiB bulk segments, 2 repetitions, 1 of Kafka's")
    args = ap.parse_args()
    if args.quick:
        args.partitions, args.segments, args.bulk_segment_mib, args.repeat, args.kafka_reps = 100, 4, 2, 2, 1
    started = time.monotonic()

    classpath = kafka_classpath() if args.kafka else None
    rows: list[Row] = []
    with work_dir("kafkalog-bench-recovery-", args.scratch, args.keep) as work:
        small = write_fixture(work / "small", 1, args.partitions, args.segments, args.batches_per_segment)
        bulk_batches = (args.bulk_segment_mib << 20) // BATCH_BYTES
        bulk = write_fixture(work / "bulk", 2, 8, 4, bulk_batches)
        kafka_small = small.copy(work / "kafka-small") if args.kafka else None
        kafka_bulk = bulk.copy(work / "kafka-bulk") if args.kafka else None
        label = f"{args.partitions}x{args.segments}"
        segments_k = args.partitions * args.segments / 1e3

        def kafka(
            fx: Fixture | None, ndirs: int, threads: int, mode: str, name: str, warmup: int, reps: int
        ) -> tuple[float, float] | None:
            if fx is None or classpath is None:
                return None
            return kafka_run(classpath, fx, ndirs, threads, mode, name, warmup, reps)

        # Each row's load average is read right after kafkalog's runs and its floor's.
        for threads in (1, 2):
            ours = timed_opens(args.repeat, lambda: open_once(small, 1, threads, False))
            floor = timed(args.repeat, lambda: list_and_stat(small, 1, threads))
            load = os.getloadavg()[0]
            rows.append(Row(
                f"startup clean {label} {threads}thr", segments_k, "k segments/s", ours, floor,
                f"list+stat {threads}thr",
                kafka(kafka_small, 1, threads, "clean", f"{label}/threads={threads}", 1, args.kafka_reps), load,
            ))  # fmt: skip
        # No warm-up: each run starts from the crash state (make_unclean).
        for threads in (int(t) for t in args.crash_threads.split(",")):
            files = small.files(1)
            ours = [open_once(small, 1, threads, True) for _ in range(args.crash_runs)]
            floor = timed(args.repeat, lambda: read_and_crc(files, threads))
            load = os.getloadavg()[0]
            rows.append(Row(
                f"crash recovery {label} {threads}thr", small.bytes(1) / 1e6, "MB/s", ours, floor,
                f"read+crc32 {threads}thr",
                kafka(kafka_small, 1, threads, "unclean", f"{label}/threads={threads}", 0, args.kafka_reps), load,
            ))  # fmt: skip
        for ndirs, threads in ((1, 1), (1, 2), (2, 1), (2, 2)):
            files = bulk.files(ndirs)
            floor_threads = min(ndirs * threads, 2)
            ours = timed_opens(args.repeat, lambda: open_once(bulk, ndirs, threads, True))
            floor = timed(args.repeat, lambda: read_and_crc(files, floor_threads))
            load = os.getloadavg()[0]
            rows.append(Row(
                f"crash recovery {ndirs}dir x {threads}thr, 4x4x{args.bulk_segment_mib}MiB/dir",
                bulk.bytes(ndirs) / 1e6, "MB/s", ours, floor, f"read+crc32 {floor_threads}thr",
                kafka(kafka_bulk, ndirs, threads, "unclean", f"bulk/dirs={ndirs}/threads={threads}", 1,
                      args.kafka_reps), load,
            ))  # fmt: skip

    print()
    print(
        f"Median of {args.repeat} timed runs after one warm-up ({args.crash_runs} runs, no warm-up, for crash recovery "
        f"{label}), best in brackets; ratio = kafkalog time / floor time; rates from the medians; {machine()}"
    )
    columns = [Column("scenario", 42, left=True), Column("kafkalog ms", 18), Column("floor ms", 18),
               Column("floor", 15, left=True), Column("ratio", 7), Column("kafkalog", 9), Column("floor", 8),
               Column("unit", 13, left=True)]  # fmt: skip
    if args.kafka:
        columns += [Column("Kafka ms", 18), Column("Kafka/kafkalog", 14)]
    columns.append(Column("load", 6))
    print_table(columns, [table_row(r) for r in rows])
    print_goals(rows, label)
    print(f"(total {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
