"""Direction C, log compaction: one input log (written by kafkalog), two copies, one compacted by
Apache Kafka's own cleaner (java/KafkaCleanerDriver.java: kafka-storage's Cleaner and
SkimpyOffsetMap on a UnifiedLog, as a broker's cleaner thread runs them) and one by
``kafkalog.UnifiedLog.compact_now``, with the same offset map size and the same "now". Kafka's
cleaner is deterministic (MD5 map, fixed grouping, horizon = now + delete.retention.ms), so the
two cleaned directories must hold the same segments, the same batches with the same header fields
(base/last offset, attributes with the delete-horizon bit, base timestamp = horizon, max
timestamp, count, producer fields, leader epoch), the same records, and the same .index /
.timeindex; the .log bytes are compared exactly, except that a batch the cleaner rebuilt with a
codec may compress differently (Java's zlib/snappy-java/lz4-java/zstd-jni against kafkalog's
codec libraries): such a batch must then have every header field equal and the same bytes once
decompressed, and its segment's indexes must be what Kafka's LogSegment writes for kafkalog's
batches.

The input: about 2,300 records over ~360 keys in 64 KiB segments, leader appends with every
codec (none, gzip, snappy, lz4, zstd) and several batch sizes, headers (empty key, null value),
empty values, tombstones (some batches only tombstones), out-of-order timestamps, an empty and a
binary key, follower batches with unkeyed records (the cleaner drops them; a compacted topic's
leader refuses them), hand-made empty batches (count 0), big batches (~55 KB, the most a
64 KiB segment takes; uncompressed and zstd) that outgrow the cleaner's 16 KiB I/O buffers, and
a last cleanable batch of unkeyed records only (kept as an empty batch: it ends the cleaning round). Everything but the
active segment is cleanable; the active segment also updates keys of the cleanable part.

Then:
1. round 1 (now = NOW1): Kafka vs kafkalog, one pass (1 MiB map) and several passes (a map of
   150 slots); tombstones kept, their batches stamped with a delete horizon;
2. (c) kafkalog reads the Kafka-cleaned dir (read-only, then read-write: it appends round 2's
   records to it); DumpLogSegments prints the same batches and records for both dirs;
3. round 2 (now = NOW2, past every horizon), after the same appends and a roll on both dirs,
   from round 1's end offset: the stamped tombstones go, the new ones get a horizon;
4. (a) DumpLogSegments --deep-iteration --index-sanity-check --print-data-log on the
   kafkalog-cleaned dir: no problem but the offset gaps compaction leaves, every index sane, the
   records printed are kafkalog's; --verify-index-only: what it reports for Kafka's own cleaned
   dir (a time-index entry from an empty batch has no record to match); (b) Kafka's UnifiedLog opens a copy of the kafkalog-cleaned dir and reads every
   record back.

The other tests, same comparisons: idempotent-producer batches (producer id/epoch/sequence,
what Kafka 3+ producers send by default: Kafka's cleaner keeps each active producer's last batch,
empty if all its records are superseded; a broker knows its producers from its snapshots, the
driver rebuilds them from the segments); the cleanable range under min.compaction.lag.ms and from
a first dirty offset inside a segment; transactions (committed, aborted, spanning segments,
markers, and transactions still open in closed segments, which bound the cleanable range at the
last stable offset), over two rounds, including the cleaned segments' .txnindex. And kafkalog's
sliced decisions (one rewrite) against Kafka's passes run until the range is done, on logs
needing 2, 3 and 5 passes of a 40-slot map: the same records, batches and end offset.

Runtime: about 25 s (a dozen short JVM runs).
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import random
import struct
import time
from collections import Counter
from pathlib import Path

import kafkalog
import pytest
from kafkalog import Record
from kafkalog.batches import build
from kit.files import copy_partition, segment_files
from kit.kafka_harness import (
    DumpResult,
    KafkaJars,
    describe_index,
    dump_log_segments,
    kafka_segment_indexes,
    parse_dump,
    run_kafka_cleaner,
)

DAY_MS = 86_400_000
BASE_TS = 1_700_000_000_000
NOW1 = BASE_TS + 3_600_000
NOW2 = NOW1 + DAY_MS + 1  # past every horizon round 1 stamps (NOW1 + delete.retention.ms)
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
DELETE_HORIZON_FLAG = 0x40
INDEX_INTERVAL = 4096
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "internal.segment.bytes": "65536",
    "delete.retention.ms": str(DAY_MS),
    "min.compaction.lag.ms": "0",
    "index.interval.bytes": str(INDEX_INTERVAL),
    "max.message.bytes": "1048588",
}
BIG_MAP = 1 << 20  # 43,690 slots: every key of the input in one pass
TINY_MAP = 24 * 150  # 150 slots, 135 keys a pass: several passes, the map fills mid-batch
# Each of Kafka's two I/O buffers (a broker passes log.cleaner.io.buffer.size / threads / 2), small
# so that the big batches make the cleaner grow its buffers.
KAFKA_IO_BUFFER = 16384
KAFKALOG_IO_BUFFER = 2 * KAFKA_IO_BUFFER


# -- v2 batches, byte level --------------------------------------------------------------------------

def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 batch header


def empty_batch(base_offset: int, last_offset_delta: int, base_ts: int, max_ts: int, leader_epoch: int = 0) -> bytes:
    """A v2 batch with no record (count 0) spanning base_offset .. base_offset + delta, as the
    cleaner leaves (writeEmptyHeader) and a follower replicates."""
    body = struct.pack(">hiqqqhii", 0, last_offset_delta, base_ts, max_ts, -1, -1, -1, 0)
    return struct.pack(">qiibI", base_offset, 4 + 1 + 4 + len(body), leader_epoch, 2, crc32c(body)) + body


@dataclasses.dataclass
class RawBatch:
    position: int
    raw: bytes

    def __post_init__(self) -> None:
        (self.base_offset, self.length, self.leader_epoch, self.magic, self.crc, self.attributes,
         self.last_offset_delta, self.base_timestamp, self.max_timestamp, self.producer_id,
         self.producer_epoch, self.base_sequence, self.count) = _HEADER.unpack_from(self.raw, 0)  # fmt: skip

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def codec(self) -> str:
        return CODECS[self.attributes & 7]

    @property
    def has_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG)

    def fields(self) -> dict[str, int]:
        """Every header field but the CRC and the length."""
        return {
            "base_offset": self.base_offset, "last_offset_delta": self.last_offset_delta,
            "partition_leader_epoch": self.leader_epoch, "magic": self.magic, "attributes": self.attributes,
            "base_timestamp": self.base_timestamp, "max_timestamp": self.max_timestamp,
            "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
            "base_sequence": self.base_sequence, "count": self.count,
        }  # fmt: skip

    def payload(self) -> bytes:
        """The records section, decompressed."""
        import kafka.codec as kc

        data = self.raw[61:]
        return {
            "none": lambda d: d, "gzip": gzip.decompress, "snappy": kc.snappy_decode, "lz4": kc.lz4_decode,
            "zstd": kc.zstd_decode,
        }[self.codec](data)  # fmt: skip


def parse_batches(data: bytes) -> list[RawBatch]:
    out, pos = [], 0
    while pos < len(data):
        assert pos + 61 <= len(data), f"torn batch header at {pos}"
        size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
        assert pos + size <= len(data), f"torn batch at {pos}"
        out.append(RawBatch(pos, data[pos : pos + size]))
        pos += size
    return out


# -- the input ---------------------------------------------------------------------------------------

Row = tuple  # (offset, timestamp, key, value, headers)


@dataclasses.dataclass
class Input:
    rows: list[Row]
    uncleanable: int  # the active segment's base offset


def _no_newline(data: bytes) -> bytes:
    # DumpLogSegments prints keys and values as text, one record a line (and the harness reads
    # its output with universal newlines: \r ends a line too).
    return data.replace(b"\n", b"\x0b").replace(b"\r", b"\x0c")


class Writer:
    """Appends to a kafkalog log and remembers every record written (offset, timestamp, key,
    value, headers)."""

    def __init__(self, log: kafkalog.UnifiedLog, rng: random.Random, keys: list[bytes], ts: int) -> None:
        self.log, self.rng, self.keys, self.ts = log, rng, keys, ts
        self.rows: list[Row] = []

    def _ts(self) -> int:
        self.ts += 10
        return self.ts - (5_000 if self.rng.random() < 0.08 else 0)  # some out of order

    def record(self, key: bytes | None = ..., value: bytes | None = ..., big: bool = False) -> Record:  # type: ignore[assignment]
        rng = self.rng
        if key is ...:
            key = rng.choice(self.keys[:25]) if rng.random() < 0.3 else rng.choice(self.keys)
        if value is ...:
            r = rng.random()
            if big:
                value = _no_newline(rng.randbytes(10_000)) if r < 0.5 else (b"big %d " % self.ts) * 600
            elif r < 0.07:
                value = None
            elif r < 0.10:
                value = b""
            elif r < 0.55:
                value = (f"{key!r} at {self.ts} " * rng.randrange(1, 10)).encode()
            else:
                value = _no_newline(rng.randbytes(rng.randrange(10, 300)))
        n = len(self.rows) + rng.randrange(3)
        headers: tuple = ()
        if n % 3 == 0:
            headers = (("h", b"v%d" % n), ("", b""), ("null", None))
        elif n % 7 == 0:
            headers = (("trace-id", _no_newline(rng.randbytes(16))),)
        return Record(key, value, headers, self._ts())

    def leader(self, records: list[Record], codec: str, batch_size: int = 16384) -> None:
        info = self.log.append(records, compression=codec, batch_size=batch_size)
        assert info.record_count == len(records)
        for i, r in enumerate(records):
            self.rows.append((info.first_offset + i, r.timestamp, r.key, r.value, tuple(r.headers)))

    def follower(self, records: list[Record], codec: str, **producer) -> None:
        base = self.log.log_end_offset
        self.log.append_as_follower(build(base, records, compression=codec, partition_leader_epoch=0, **producer))
        for i, r in enumerate(records):
            self.rows.append((base + i, r.timestamp, r.key, r.value, tuple(r.headers)))

    def empty(self, span: int) -> None:
        base = self.log.log_end_offset
        ts = self._ts()
        self.log.append_as_follower(empty_batch(base, span - 1, ts, ts + 3))
        assert self.log.log_end_offset == base + span


def write_input(path: Path, seed: int) -> Input:
    rng = random.Random(seed)
    keys = [f"key-{i:04d}".encode() for i in range(360)] + [b"", b"\x00\xffbinary key\x01"]
    with kafkalog.UnifiedLog.open(path, TOPIC_CONFIG) as log:
        w = Writer(log, rng, keys, BASE_TS)
        for step in range(90):
            codec = CODECS[step % 5]
            if step in (20, 21, 60):  # big (~55 KB, the most a 64 KiB segment takes), uncompressed
                w.leader([w.record(key=rng.choice(keys[:200]), big=True) for _ in range(5)], "none", 1 << 20)
            elif step in (45, 46):  # big, zstd
                w.leader([w.record(key=rng.choice(keys[:200]), big=True) for _ in range(5)], "zstd", 1 << 20)
            elif step % 11 == 5:  # follower batch with unkeyed records
                recs = [w.record(key=None) if rng.random() < 0.3 else w.record() for _ in range(rng.randrange(5, 30))]
                w.follower(recs, codec)
            elif step % 17 == 8:
                w.empty(rng.randrange(1, 4))
            elif step % 13 == 3:  # tombstones only
                w.leader([w.record(value=None) for _ in range(rng.randrange(1, 6))], codec)
            else:
                w.leader([w.record() for _ in range(rng.randrange(5, 60))], codec, rng.choice([1024, 4096, 16384]))
        # Keys tombstoned at the very end of the cleanable part, and the round's last batch: only
        # unkeyed records, so nothing of it survives and the cleaner keeps it as an empty batch.
        w.leader([w.record(key=k, value=None) for k in (keys[1], keys[2], b"")], "lz4")
        w.follower([w.record(key=None) for _ in range(4)], "snappy")
        uncleanable = log.roll()
        # The active segment (uncleanable): updates of cleanable keys, a tombstone.
        w.leader([w.record(key=keys[i]) for i in range(30)] + [w.record(key=keys[40], value=None)], "gzip")
        rows = w.rows
    segments = sorted(path.glob("*.log"))
    assert len(segments) >= 8, f"test set-up: expected many segments, got {len(segments)}"
    return Input(rows, uncleanable)


def append_round_two(path: Path, seed: int) -> tuple[int, list[Row]]:
    """The same appends on either copy: updates, new tombstones (some for keys that round 1
    kept tombstones of), unkeyed records, then as the round's last batch a hand-made empty one;
    a roll; a few records in the new active segment. Returns the new active segment's base and
    the records written."""
    rng = random.Random(seed)
    keys = [f"key-{i:04d}".encode() for i in range(360)] + [b"", b"\x00\xffbinary key\x01"]
    with kafkalog.UnifiedLog.open(path, TOPIC_CONFIG) as log:
        w = Writer(log, rng, keys, BASE_TS + 1_000_000)
        for step in range(12):
            codec = CODECS[step % 5]
            if step % 4 == 1:
                w.follower([w.record(key=None) if rng.random() < 0.3 else w.record() for _ in range(20)], codec)
            else:
                w.leader([w.record(key=rng.choice(keys[100:220])) for _ in range(rng.randrange(10, 40))], codec)
        w.leader([w.record(key=keys[1], value=b"back again"), w.record(key=keys[300], value=None)], "zstd")
        w.empty(2)
        uncleanable = log.roll()
        w.leader([w.record() for _ in range(10)], "none")
        return uncleanable, w.rows


def expected_records(rows: list[Row], uncleanable: int, tombstone_removable) -> list[Row]:
    """What compaction leaves: below `uncleanable`, the last record of each key (within that
    range) unless it is a removable tombstone, no unkeyed record; from `uncleanable` on,
    everything."""
    last: dict[bytes, int] = {}
    for r in rows:
        if r[0] < uncleanable and r[2] is not None:
            last[r[2]] = r[0]
    out = []
    for r in sorted(rows):
        o, _, key, value, _ = r
        if o >= uncleanable:
            out.append(r)
        elif key is None or last[key] != o:
            continue
        elif value is None and tombstone_removable(o):
            continue
        else:
            out.append(r)
    return out


# -- running the two cleaners ------------------------------------------------------------------------


def kafka_clean(jars: KafkaJars, path: Path, now: int, map_bytes: int, first_dirty: int | None = None, read: bool = True):
    args = ["--dir", str(path), "--now-ms", str(now), "--map-bytes", str(map_bytes),
            "--io-buffer-bytes", str(KAFKA_IO_BUFFER), "--read", "true" if read else "false"]  # fmt: skip
    if first_dirty is not None:
        args += ["--first-dirty", str(first_dirty)]
    return run_kafka_cleaner(jars, *args, config=TOPIC_CONFIG)


def kafkalog_clean(path: Path, now: int, map_bytes: int, first_dirty: int | None = None):
    with kafkalog.UnifiedLog.open(path, TOPIC_CONFIG) as log:
        return log.compact_now(
            dedupe_buffer_size=map_bytes, io_buffer_size=KAFKALOG_IO_BUFFER, time_ms=now, first_dirty_offset=first_dirty
        )


def partition_rows(path: Path, read_only: bool = True) -> list[Row]:
    """Every record of the partition at ``path`` as (offset, timestamp, key, value, headers)."""
    with kafkalog.UnifiedLog.open(path, TOPIC_CONFIG, read_only=read_only) as log:
        return [
            (r.offset, r.timestamp, r.key, r.value, tuple(r.headers))
            for r in log.records(end=log.log_end_offset, isolation="log_end")
        ]


def compare_passes(kafka_run: dict, result, what: str, exact: bool, same_input: bool = True) -> None:
    """kafkalog's CompactResult against the driver's JSON: same range, same passes (the map is
    the same, so each pass ends at the same offset) and the same counters. Byte counts (and the
    map's record count, which starts at an offset-index lookup) depend on the sizes of the
    batches a previous pass recompressed, so unless every batch came out byte-identical
    (``exact``) they are compared for the first pass only, which reads the common input (if
    ``same_input``: the input of round 2 is round 1's output)."""
    got = {
        "first_dirty_offset": result.first_dirty_offset,
        "first_uncleanable_offset": result.first_uncleanable_offset,
        "end_offset": result.end_offset,
        "passes": [(p.first_dirty_offset, p.end_offset) for p in result.passes],
    }
    want = {
        "first_dirty_offset": kafka_run["first_dirty_offset"],
        "first_uncleanable_offset": kafka_run["first_uncleanable_offset"],
        "end_offset": kafka_run["end_offset"],
        "passes": [(p["first_dirty_offset"], p["end_offset"]) for p in kafka_run["passes"]],
    }
    assert got == want, f"{what}: kafkalog's cleaning range and passes differ from Kafka's"
    diffs = []
    for i, (p, kp) in enumerate(zip(result.passes, kafka_run["passes"])):
        names = ["messages_read", "messages_written", "invalid_messages_read"]
        if exact or (i == 0 and same_input):
            names += ["map_messages_read", "map_bytes_read", "bytes_read"]
        if exact:
            names.append("bytes_written")
        for n in names:
            if getattr(p.stats, n) != kp[n]:
                diffs.append(f"pass {i} {n}: kafkalog {getattr(p.stats, n)}, Kafka {kp[n]}")
        if abs(p.stats.buffer_utilization - kp["buffer_utilization"]) > 1e-6:
            diffs.append(f"pass {i} buffer_utilization: kafkalog {p.stats.buffer_utilization}, Kafka {kp['buffer_utilization']}")
    assert not diffs, f"{what}: CleanerStats differ from Kafka's:\n" + "\n".join(diffs)


@dataclasses.dataclass
class Comparison:
    identical_segments: int = 0
    segments: int = 0
    identical_batches: int = 0
    recompressed: Counter = dataclasses.field(default_factory=Counter)  # codec -> batches equal once decompressed
    batches: int = 0


def compare_dirs(kafka_dir: Path, kl_dir: Path, what: str, compare_mtimes_below: int | None = None) -> Comparison:
    """Kafka's cleaned partition dir against kafkalog's (see the module docstring)."""
    problems: list[str] = []
    leftovers = [p.name for p in kl_dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert not leftovers, f"{what}: kafkalog left {leftovers}"
    names = lambda d: sorted(p.name for p in d.iterdir() if p.suffix in (".log", ".index", ".timeindex"))  # noqa: E731
    assert names(kl_dir) == names(kafka_dir), f"{what}: segment files differ"
    cmp = Comparison()
    for log_file in sorted(kafka_dir.glob("*.log")):
        name, base = log_file.name, int(log_file.name.split(".")[0])
        k_bytes, l_bytes = log_file.read_bytes(), (kl_dir / name).read_bytes()
        cmp.segments += 1
        k_batches, l_batches = parse_batches(k_bytes), parse_batches(l_bytes)
        cmp.batches += len(k_batches)
        if compare_mtimes_below is not None and base < compare_mtimes_below:
            k_m, l_m = (os.stat(d / name).st_mtime_ns // 1_000_000 for d in (kafka_dir, kl_dir))
            if k_m != l_m:
                problems.append(f"{name}: mtime {l_m} ms, Kafka's cleaned segment has {k_m} (its last source's)")
        if k_bytes == l_bytes:
            cmp.identical_segments += 1
            cmp.identical_batches += len(k_batches)
            for suffix in (".index", ".timeindex"):
                k_idx, l_idx = (kafka_dir / name).with_suffix(suffix).read_bytes(), (kl_dir / name).with_suffix(suffix).read_bytes()
                if k_idx != l_idx:
                    problems.append(
                        f"{name[:-4]}{suffix}: kafkalog {describe_index(l_idx, suffix, base)}, "
                        f"Kafka {describe_index(k_idx, suffix, base)}"
                    )
            continue
        k_offsets = [(b.base_offset, b.last_offset) for b in k_batches]
        l_offsets = [(b.base_offset, b.last_offset) for b in l_batches]
        if k_offsets != l_offsets:
            only_k = sorted(set(k_offsets) - set(l_offsets))[:10]
            only_l = sorted(set(l_offsets) - set(k_offsets))[:10]
            problems.append(
                f"{name}: batches (base, last offset) differ: {len(k_batches)} in Kafka's, {len(l_batches)} in "
                f"kafkalog's; only Kafka's: {only_k}; only kafkalog's: {only_l}"
            )
            continue
        for k, l in zip(k_batches, l_batches):
            if k.raw == l.raw:
                cmp.identical_batches += 1
                continue
            kf, lf = k.fields(), l.fields()
            if kf != lf:
                diff = {f: (lf[f], kf[f]) for f in kf if kf[f] != lf[f]}
                problems.append(f"{name} batch {k.base_offset}..{k.last_offset}: header fields (kafkalog, Kafka) {diff}")
            elif k.payload() != l.payload():
                problems.append(
                    f"{name} batch {k.base_offset}..{k.last_offset} ({k.codec}): records section differs "
                    f"({len(l.payload())} bytes decompressed in kafkalog's, {len(k.payload())} in Kafka's)"
                )
            elif k.codec == "none":
                problems.append(f"{name} batch {k.base_offset}: uncompressed bytes differ but fields and records match (CRC?)")
            else:
                cmp.recompressed[k.codec] += 1
        # Positions moved with the recompressed batches: kafkalog's indexes must be what Kafka's
        # LogSegment writes for kafkalog's own batches (and Kafka's for Kafka's, as a guard).
        for d, batches, who in ((kl_dir, l_batches, "kafkalog"), (kafka_dir, k_batches, "Kafka")):
            want = kafka_segment_indexes(batches, base, INDEX_INTERVAL)
            for suffix, w in zip((".index", ".timeindex"), want):
                got = (d / name).with_suffix(suffix).read_bytes()
                if got != w:
                    problems.append(
                        f"{who} {name[:-4]}{suffix}: {describe_index(got, suffix, base)}, LogSegment writes "
                        f"{describe_index(w, suffix, base)}"
                    )
    assert not problems, f"{what}: kafkalog's cleaned dir differs from Kafka's:\n" + "\n".join(problems[:40])
    return cmp


# -- DumpLogSegments -----------------------------------------------------------------------------------


def offset_gaps_and_problems(res: DumpResult, path: Path) -> tuple[list[str], list[str]]:
    """Splits DumpResult.problems() into the "Non-consecutive offsets" lists, which a compacted
    segment always has (file names made relative, sorted: Kafka prints them from a hash map), and
    everything else."""
    gaps, other, in_gaps = [], [], False
    for line in res.problems():
        if line.startswith("Non-consecutive offsets in "):
            in_gaps = True
            gaps.append("Non-consecutive offsets in " + Path(line.split(" in ", 1)[1]).name)
        elif in_gaps and " is followed by " in line:
            gaps.append(line.strip())
        else:
            in_gaps = False
            other.append(line.replace(str(path), "<dir>"))
    return sorted(gaps), other


def dumped_batches(res: DumpResult, path: Path, exact: bool) -> dict[str, list]:
    out = {}
    for f, batches in parse_dump(res.stdout).items():
        out[Path(f).name] = [
            b if exact else dataclasses.replace(b, crc=0, size=0, position=0) for b in batches
        ]
    return out


# -- the tests -----------------------------------------------------------------------------------------


def test_kafkalog_compaction_matches_kafka_cleaner(tmp_path, kafka_jars: KafkaJars):
    t0 = time.monotonic()
    source = tmp_path / "source" / "compacted-0"
    inp = write_input(source, seed=501)
    n_in = len(inp.rows)

    # -- round 1, one pass and several passes ---------------------------------------------------
    expected1 = expected_records(inp.rows, inp.uncleanable, lambda o: False)
    summaries = []
    dirs = {}
    exact = {}
    for label, map_bytes in (("one pass", BIG_MAP), ("multi-pass", TINY_MAP)):
        k_dir = copy_partition(source, tmp_path / f"kafka-{map_bytes}" / "compacted-0")
        l_dir = copy_partition(source, tmp_path / f"kafkalog-{map_bytes}" / "compacted-0")
        dirs[label] = (k_dir, l_dir)
        kafka = kafka_clean(kafka_jars, k_dir, NOW1, map_bytes)
        run = kafka.runs[0]
        assert run["first_uncleanable_offset"] == inp.uncleanable and run["end_offset"] == inp.uncleanable, run
        if label == "multi-pass":
            assert len(run["passes"]) >= 3, f"test set-up: expected several passes, got {run['passes']}"
        else:
            assert len(run["passes"]) == 1
        assert kafka.records == expected1, f"test set-up: Kafka's cleaner ({label}) left other records than the model"
        stamped = [b for b in kafka.batches if b[6] is not None]
        assert stamped and all(b[6] == NOW1 + DAY_MS for b in stamped), f"test set-up: horizons {stamped[:5]}"

        result = kafkalog_clean(l_dir, NOW1, map_bytes)
        got = partition_rows(l_dir)
        assert got == kafka.records, f"round 1 ({label}): kafkalog kept other records than Kafka's cleaner"
        cmp = compare_dirs(k_dir, l_dir, f"round 1 ({label})", compare_mtimes_below=inp.uncleanable)
        exact[label] = not cmp.recompressed
        compare_passes(run, result, f"round 1 ({label})", exact=not cmp.recompressed)
        # (c) kafkalog reads Kafka's cleaned dir: what Kafka's UnifiedLog.read returned.
        assert partition_rows(k_dir) == kafka.records, f"round 1 ({label}): kafkalog reads Kafka's cleaned dir differently"
        summaries.append(
            f"{label}: {len(run['passes'])} pass(es), {n_in} -> {len(got)} records, {cmp.batches} batches "
            f"({cmp.identical_batches} byte-identical, recompressed but equal once decompressed: "
            f"{dict(cmp.recompressed) or 'none'}), {cmp.identical_segments}/{cmp.segments} segments byte-identical"
        )

    k_dir, l_dir = dirs["one pass"]
    # The two map sizes end in the same records.
    assert partition_rows(dirs["multi-pass"][1]) == partition_rows(l_dir)

    # DumpLogSegments prints the same for both dirs (gaps included).
    k_dump = dump_log_segments(kafka_jars, segment_files(k_dir)[0], "--deep-iteration", "--print-data-log")
    l_dump = dump_log_segments(kafka_jars, segment_files(l_dir)[0], "--deep-iteration", "--print-data-log")
    k_gaps, k_other = offset_gaps_and_problems(k_dump, k_dir)
    l_gaps, l_other = offset_gaps_and_problems(l_dump, l_dir)
    assert k_other == [], f"test set-up: DumpLogSegments on Kafka's cleaned dir: {k_other[:10]}"
    assert l_other == [], f"DumpLogSegments on kafkalog's cleaned dir: {l_other[:10]}"
    assert l_gaps == k_gaps
    assert dumped_batches(l_dump, l_dir, exact["one pass"]) == dumped_batches(k_dump, k_dir, exact["one pass"])

    # -- round 2: the same appends on both (kafkalog writes into Kafka's cleaned dir too) ----------
    end1 = inp.uncleanable
    uncleanable2, appended = append_round_two(k_dir, seed=502)
    assert append_round_two(l_dir, seed=502) == (uncleanable2, appended)
    assert partition_rows(k_dir, read_only=False) == partition_rows(l_dir, read_only=False)
    rows2 = sorted(inp.rows + appended)
    # Tombstones below round 1's end carry horizon NOW1 + retention < NOW2: they go.
    expected2 = expected_records(rows2, uncleanable2, lambda o: o < end1)
    kafka2 = kafka_clean(kafka_jars, k_dir, NOW2, BIG_MAP, first_dirty=end1)
    run2 = kafka2.runs[0]
    assert (run2["first_dirty_offset"], run2["end_offset"]) == (end1, uncleanable2), run2
    assert kafka2.records == expected2, "test set-up: Kafka's round 2 left other records than the model"
    # New horizons on the batches of round 2's surviving tombstones; a rebuilt batch keeps the
    # horizon it had.
    stamped2 = {b[6] for b in kafka2.batches if b[6] is not None}
    assert NOW2 + DAY_MS in stamped2 and stamped2 <= {NOW1 + DAY_MS, NOW2 + DAY_MS}, f"test set-up: {stamped2}"
    result2 = kafkalog_clean(l_dir, NOW2, BIG_MAP, first_dirty=end1)
    got2 = partition_rows(l_dir)
    assert got2 == kafka2.records, "round 2: kafkalog kept other records than Kafka's cleaner"
    assert not any(r[3] is None and r[0] < end1 for r in got2)
    cmp2 = compare_dirs(k_dir, l_dir, "round 2")
    compare_passes(run2, result2, "round 2", exact=exact["one pass"] and not cmp2.recompressed, same_input=exact["one pass"])
    assert partition_rows(k_dir) == kafka2.records

    # -- (a) DumpLogSegments on kafkalog's cleaned dir, with the index checks ---------------------
    logs, indexes = segment_files(l_dir)
    res = dump_log_segments(kafka_jars, logs + indexes, "--deep-iteration", "--index-sanity-check", "--print-data-log")
    gaps, other = offset_gaps_and_problems(res, l_dir)
    assert other == [], "DumpLogSegments --deep-iteration --index-sanity-check:\n" + "\n".join(other[:20])
    for idx in indexes:
        verdicts = (f"{idx} passed sanity check.", f"{idx} is empty.")
        assert any(v in res.stdout.split("\n") for v in verdicts), f"no sanity-check verdict for {idx.name}"
    # --verify-index-only: what it reports for Kafka's own cleaned dir and nothing else. (It
    # looks for the record holding each time-index entry's timestamp; an entry from an empty
    # batch, such as the one that ends a cleaning round, has none: "log timestamp: -1".)
    res_verify = dump_log_segments(kafka_jars, indexes, "--verify-index-only")
    k_verify = dump_log_segments(kafka_jars, segment_files(k_dir)[1], "--verify-index-only")
    normalize = lambda res, d: [line.replace(str(d), "<dir>") for line in res.problems()]  # noqa: E731
    assert normalize(res_verify, l_dir) == normalize(k_verify, k_dir), (
        "DumpLogSegments --verify-index-only on kafkalog's cleaned dir:\n" + "\n".join(res_verify.problems())
        + "\non Kafka's:\n" + "\n".join(k_verify.problems())
    )
    dumped = [(r.offset, r.timestamp, r.key_size, r.value_size) for f in logs for b in parse_dump(res.stdout)[str(f)] for r in b.records]
    assert dumped == [(o, ts, -1 if k is None else len(k), -1 if v is None else len(v)) for o, ts, k, v, _ in got2]

    # -- (b) Kafka's UnifiedLog opens (a copy of) kafkalog's cleaned dir and reads it all --------
    copy = copy_partition(l_dir, tmp_path / "kafka-reads-kafkalog" / "compacted-0")
    back = run_kafka_cleaner(kafka_jars, "--dir", str(copy), "--max-passes", "0", "--read", "true", config=TOPIC_CONFIG)
    assert back.records == got2, "Kafka's UnifiedLog reads kafkalog's cleaned dir differently"
    assert (back.log_start_offset, back.log_end_offset) == (0, uncleanable2 + 10)

    print(
        f"\n{time.monotonic() - t0:.1f}s; round 1 " + "; ".join(summaries)
        + f"; round 2: {len(rows2)} -> {len(got2)} records, {cmp2.identical_batches}/{cmp2.batches} batches "
        f"byte-identical, recompressed {dict(cmp2.recompressed) or 'none'}"
    )


def test_kafkalog_compaction_keeps_producer_last_batches_like_kafka(tmp_path, kafka_jars: KafkaJars):
    """Idempotent-producer batches: each active producer's last batch stays (as an empty batch
    when every record of it is superseded), as Kafka's cleaner does with the producer state a
    broker keeps; the other batches follow the usual rules. Timestamps are recent: Kafka expires
    producers idle for producer.id.expiration.ms (1 day) by the wall clock."""
    rng = random.Random(77)
    now = int(time.time() * 1000)
    source = tmp_path / "source" / "producers-0"
    keys = [f"p-key-{i:03d}".encode() for i in range(80)]
    sequences: dict[int, int] = {}
    with kafkalog.UnifiedLog.open(source, TOPIC_CONFIG) as log:
        w = Writer(log, rng, keys, now - 3_600_000)
        for step in range(60):
            pid = 5000 + step % 3 if step < 50 else 5000  # producers 5001 and 5002 stop at step 50
            recs = [w.record(key=rng.choice(keys)) for _ in range(rng.randrange(3, 25))]
            seq = sequences.get(pid, 0)
            w.follower(recs, CODECS[step % 5], producer_id=pid, producer_epoch=0, base_sequence=seq)
            sequences[pid] = seq + len(recs)
        # Supersede every key, so producers 5001 and 5002 keep nothing but their last batch.
        for chunk in range(0, len(keys), 20):
            recs = [w.record(key=k, value=b"final") for k in keys[chunk : chunk + 20]]
            w.follower(recs, "none", producer_id=5000, producer_epoch=0, base_sequence=sequences[5000])
            sequences[5000] += len(recs)
        log.roll()
        w.follower([w.record(key=keys[0])], "none", producer_id=5000, producer_epoch=0, base_sequence=sequences[5000])
    k_dir = copy_partition(source, tmp_path / "kafka" / "producers-0")
    l_dir = copy_partition(source, tmp_path / "kafkalog" / "producers-0")
    kafka = run_kafka_cleaner(
        kafka_jars, "--dir", str(k_dir), "--now-ms", str(now), "--map-bytes", str(BIG_MAP),
        "--rebuild-producer-state", "true", "--read", "true", config=TOPIC_CONFIG,
    )  # fmt: skip
    empty = [b for b in kafka.batches if b[5] == 0]
    assert len(empty) >= 2, f"test set-up: Kafka should keep producers 5001/5002's last batches empty: {kafka.batches}"
    result = kafkalog_clean(l_dir, now, BIG_MAP)
    assert partition_rows(l_dir) == kafka.records
    cmp = compare_dirs(k_dir, l_dir, "idempotent producers")
    compare_passes(kafka.runs[0], result, "idempotent producers", exact=not cmp.recompressed)


def test_kafkalog_skips_superseded_runs_where_kafka_reads_them(tmp_path, kafka_jars: KafkaJars):
    """Every key written in rounds (as periodic snapshots of a table are): whole runs of batches
    hold only superseded records. kafkalog's rewrite drops them unread (``bytes_skipped``),
    Kafka's reads and drops them; the dirs and the counters come out the same. Round 1 holds an
    idempotent producer's only batch (kept empty by both), round 2 tombstones that round 3
    supersedes. Segments of 1 MiB, so that runs longer than a skip's 64 KiB fit in one."""
    rng = random.Random(91)
    now = int(time.time() * 1000)  # Kafka expires idle producers by the wall clock
    config = {**TOPIC_CONFIG, "internal.segment.bytes": str(1 << 20)}
    source = tmp_path / "source" / "rounds-0"
    keys = [f"r-key-{i:04d}".encode() for i in range(1500)]
    with kafkalog.UnifiedLog.open(source, config) as log:
        w = Writer(log, rng, keys, now - 3_600_000)
        for round_ in range(3):
            order = rng.sample(keys, len(keys))
            for chunk in range(0, len(order), 50):
                recs = []
                for k in order[chunk : chunk + 50]:
                    tombstone = round_ == 1 and rng.random() < 0.05
                    recs.append(w.record(key=k, value=None if tombstone else _no_newline(rng.randbytes(150))))
                producer = {"producer_id": 6001, "producer_epoch": 0, "base_sequence": 0} if (round_, chunk) == (0, 500) else {}
                w.follower(recs, "none", **producer)
        log.roll()
        w.follower([w.record(key=keys[0])], "none")
    k_dir = copy_partition(source, tmp_path / "kafka" / "rounds-0")
    l_dir = copy_partition(source, tmp_path / "kafkalog" / "rounds-0")
    kafka = run_kafka_cleaner(
        kafka_jars, "--dir", str(k_dir), "--now-ms", str(now), "--map-bytes", str(BIG_MAP),
        "--io-buffer-bytes", str(KAFKA_IO_BUFFER), "--rebuild-producer-state", "true", "--read", "true", config=config,
    )  # fmt: skip
    assert [b for b in kafka.batches if b[5] == 0], "test set-up: Kafka should keep producer 6001's batch empty"
    with kafkalog.UnifiedLog.open(l_dir, config) as log:
        result = log.compact_now(dedupe_buffer_size=BIG_MAP, io_buffer_size=KAFKALOG_IO_BUFFER, time_ms=now)
    assert result.stats.bytes_skipped > 256 << 10, result.stats
    assert partition_rows(l_dir) == kafka.records
    cmp = compare_dirs(k_dir, l_dir, "superseded runs")
    assert cmp.identical_segments == cmp.segments and not cmp.recompressed, cmp
    compare_passes(kafka.runs[0], result, "superseded runs", exact=True)


@pytest.mark.parametrize("case", ["min-compaction-lag", "first-dirty-mid-segment"])
def test_kafkalog_cleanable_range_matches_kafka(tmp_path, kafka_jars: KafkaJars, case: str):
    """The cleanable range: min.compaction.lag.ms stops it at the first segment whose largest
    timestamp is within the lag of now; a first dirty offset inside a segment starts the map
    there (the segment is still recopied whole)."""
    source = tmp_path / "source" / "range-0"
    inp = write_input(source, seed=503)
    config = dict(TOPIC_CONFIG)
    first_dirty = None
    if case == "min-compaction-lag":
        # Records are stamped BASE_TS + 10 ms per record (some 5 s earlier): a lag reaching back
        # to about offset 1,200 makes the segments from there on uncleanable.
        config["min.compaction.lag.ms"] = str(NOW1 - (BASE_TS + 10 * 1200))
    else:
        first_dirty = 517
    k_dir = copy_partition(source, tmp_path / "kafka" / "range-0")
    l_dir = copy_partition(source, tmp_path / "kafkalog" / "range-0")
    args = ["--dir", str(k_dir), "--now-ms", str(NOW1), "--map-bytes", str(BIG_MAP), "--read", "true"]
    if first_dirty is not None:
        args += ["--first-dirty", str(first_dirty)]
    kafka = run_kafka_cleaner(kafka_jars, *args, config=config)
    run = kafka.runs[0]
    if case == "min-compaction-lag":
        assert 0 < run["first_uncleanable_offset"] < inp.uncleanable, f"test set-up: {run}"
    else:
        assert run["first_dirty_offset"] == first_dirty and run["end_offset"] == inp.uncleanable, run
    with kafkalog.UnifiedLog.open(l_dir, config) as log:
        result = log.compact_now(
            dedupe_buffer_size=BIG_MAP, io_buffer_size=KAFKALOG_IO_BUFFER, time_ms=NOW1, first_dirty_offset=first_dirty
        )
    assert partition_rows(l_dir) == kafka.records, f"{case}: kafkalog kept other records than Kafka's cleaner"
    cmp = compare_dirs(k_dir, l_dir, case, compare_mtimes_below=run["end_offset"])
    compare_passes(run, result, case, exact=not cmp.recompressed)


@pytest.mark.parametrize("open_txn_at_end", [False, True], ids=["all-decided", "open-transaction"])
def test_kafkalog_compaction_of_transactions_matches_kafka(tmp_path, kafka_jars: KafkaJars, open_txn_at_end: bool):
    """Transactional batches and their COMMIT / ABORT markers (follower appends): aborted data
    goes whatever its key, markers stay until their data is gone and then follow the
    delete-horizon rule; with ``open_txn_at_end``, transactions still open in closed segments
    bound the cleanable range (the last stable offset, which LogToClean aligns down to the base
    of its segment). Kafka's driver opens the log as after a clean shutdown, as a running broker
    has it: its producer state comes from the snapshot kafkalog wrote at close and its aborted
    transactions from kafkalog's .txnindex files (a rebuild would instead date an aborted
    transaction from its first batch left after round 1, which round 1 may have removed).
    delete.retention.ms is 1 s here so that round 2 can pass the horizons with a clock near the
    wall clock (Kafka expires producers by the wall clock)."""
    rng = random.Random(91)
    now1 = int(time.time() * 1000)
    now2 = now1 + 2_000
    config = {**TOPIC_CONFIG, "delete.retention.ms": "1000"}
    keys = [f"t-key-{i:03d}".encode() for i in range(120)]
    source = tmp_path / "source" / "txn-0"
    seqs: dict[int, int] = {}
    open_txn: dict[int, bool] = {}

    with kafkalog.UnifiedLog.open(source, config) as log:
        w = Writer(log, rng, keys, now1 - 3_600_000)

        def data(pid: int = -1, transactional: bool = False, n: int | None = None) -> None:
            recs = [w.record() for _ in range(n or rng.randrange(3, 20))]
            producer = {}
            if pid >= 0:
                seq = seqs.get(pid, 0)
                producer = {"producer_id": pid, "producer_epoch": 0, "base_sequence": seq, "transactional": transactional}
                seqs[pid] = seq + len(recs)
                open_txn[pid] = open_txn.get(pid, False) or transactional
            w.follower(recs, CODECS[rng.randrange(5)], **producer)

        def marker(pid: int, commit: bool) -> None:
            offset = log.log_end_offset
            log.append_as_follower(
                kafkalog.batches.end_txn_marker(
                    offset, w._ts(), producer_id=pid, producer_epoch=0, commit=commit, coordinator_epoch=3,
                    partition_leader_epoch=0,
                )
            )  # fmt: skip
            open_txn[pid] = False

        for cycle in range(14):
            data()
            data(7000, True)
            data()
            data(7001, True)
            data(7000, True)
            marker(7000, commit=True)
            data(7001, True)
            marker(7001, commit=False)
            data(7002, True)
            if cycle % 4 == 3:
                marker(7002, commit=cycle % 8 == 3)
            data(7004)  # idempotent, not transactional
        data(7003, True)
        if not open_txn_at_end:
            marker(7002, commit=True)
            marker(7003, commit=False)
        # else both stay open: the last stable offset stops the clean at 7002's first offset
        data()
        data()
        active1 = log.roll()
        data(n=5)
    k_dir = copy_partition(source, tmp_path / "kafka" / "txn-0")
    l_dir = copy_partition(source, tmp_path / "kafkalog" / "txn-0")

    def kafka_round(now: int, first_dirty: int | None):
        args = ["--dir", str(k_dir), "--now-ms", str(now), "--map-bytes", str(BIG_MAP), "--read", "true"]
        if first_dirty is not None:
            args += ["--first-dirty", str(first_dirty)]
        return run_kafka_cleaner(kafka_jars, *args, config=config)

    def kafkalog_round(now: int, first_dirty: int | None):
        with kafkalog.UnifiedLog.open(l_dir, config) as log:
            return log.compact_now(dedupe_buffer_size=BIG_MAP, time_ms=now, first_dirty_offset=first_dirty)

    kafka1 = kafka_round(now1, None)
    run1 = kafka1.runs[0]
    if open_txn_at_end:
        assert run1["first_uncleanable_offset"] < active1, f"test set-up: the open transaction should bound the clean: {run1}"
    else:
        assert run1["first_uncleanable_offset"] == active1, f"test set-up: {run1}"
    result1 = kafkalog_round(now1, None)
    assert partition_rows(l_dir) == kafka1.records, "round 1: kafkalog kept other records than Kafka's cleaner"
    cmp1 = compare_dirs(k_dir, l_dir, "transactions, round 1")
    compare_passes(run1, result1, "transactions, round 1", exact=not cmp1.recompressed)

    # Round 2: the open transactions end, more data, a roll; past the markers' horizons.
    end1 = run1["end_offset"]
    for d in (k_dir, l_dir):
        with kafkalog.UnifiedLog.open(d, config) as log:
            w2 = Writer(log, random.Random(92), keys, now1 - 1_000_000)
            for pid in (7002, 7003) if open_txn_at_end else ():
                log.append_as_follower(
                    kafkalog.batches.end_txn_marker(
                        log.log_end_offset, now1 - 999_000, producer_id=pid, producer_epoch=0, commit=pid == 7003,
                        coordinator_epoch=3, partition_leader_epoch=0,
                    )
                )  # fmt: skip
            w2.follower([w2.record() for _ in range(30)], "lz4")
            log.roll()
            w2.follower([w2.record() for _ in range(3)], "none")
    kafka2 = kafka_round(now2, end1)
    result2 = kafkalog_round(now2, end1)
    assert partition_rows(l_dir) == kafka2.records, "round 2: kafkalog kept other records than Kafka's cleaner"
    cmp2 = compare_dirs(k_dir, l_dir, "transactions, round 2")
    compare_passes(kafka2.runs[0], result2, "transactions, round 2", exact=not (cmp1.recompressed or cmp2.recompressed),
                   same_input=not cmp1.recompressed)  # fmt: skip
    # The cleaned segments' transaction indexes: Kafka's cleaner writes into the cleaned
    # segment's .txnindex every aborted transaction whose ABORT marker it kept, as its
    # collectAbortedTransactions read it.
    end2 = kafka2.runs[0]["end_offset"]
    txn = {
        who: {
            p.name: p.read_bytes()
            for p in sorted(d.glob("*.txnindex"))
            if p.stat().st_size and int(p.name.split(".")[0]) < end2
        }
        for who, d in (("Kafka", k_dir), ("kafkalog", l_dir))
    }
    assert txn["kafkalog"] == txn["Kafka"], (
        f"non-empty .txnindex files of cleaned segments differ: Kafka {sorted(txn['Kafka'])}, "
        f"kafkalog {sorted(txn['kafkalog'])}"
    )


# -- hash-sliced decisions against Kafka's passes run to convergence ---------------------------------

SLICED_MAP = 24 * 40  # 40 slots, 36 keys a pass


@pytest.mark.parametrize("keys,passes", [(60, 2), (80, 3), (130, 5)], ids=["2-passes", "3-passes", "5-passes"])
def test_sliced_decisions_keep_what_kafkas_passes_keep(tmp_path, kafka_jars: KafkaJars, keys: int, passes: int):
    """kafkalog's ``sliced_decisions`` (``log.cleaner.kafkalog.sliced.decisions``: hash-sliced
    decision passes, then one rewrite) against Kafka's Cleaner run pass after pass until the
    cleanable range is done (the driver's loop), on a log whose keys need 2, 3 and 5 of Kafka's
    passes with a 40-slot map. The log was cleaned once by Kafka (tombstones and markers stamped,
    now past their horizon), then got more data, tombstones, committed and aborted transactions
    across several segments. Both sides must keep the same records (offset, timestamp, key,
    value, headers), the same batches (offsets, control or not: markers and empty batches) and
    end at the same offset; kafkalog in one rewrite. Only the delete-horizon stamps may differ
    (see ``cleaner::sliced``), so they are not compared."""
    rng = random.Random(1700 + keys)
    now1 = int(time.time() * 1000)
    now2 = now1 + 2_000  # past round 1's horizons (delete.retention.ms = 1 s)
    config = {**TOPIC_CONFIG, "delete.retention.ms": "1000", "internal.segment.bytes": "8192"}
    names = [f"s-key-{i:04d}".encode() for i in range(keys)]
    source = tmp_path / "source" / "sliced-0"
    seqs: dict[int, int] = {}

    def batch(log: kafkalog.UnifiedLog, ts: int, recs: list[tuple[bytes | None, bytes | None]], pid: int = -1, txn: bool = False) -> None:
        producer = {}
        if pid >= 0:
            seq = seqs.get(pid, 0)
            producer = {"producer_id": pid, "producer_epoch": 0, "base_sequence": seq, "transactional": txn}
            seqs[pid] = seq + len(recs)
        records = [Record(k, v, (("h", b"%d" % i),) if i % 5 == 0 else (), ts + i) for i, (k, v) in enumerate(recs)]
        log.append_as_follower(build(log.log_end_offset, records, compression="none", partition_leader_epoch=0, **producer))

    def marker(log: kafkalog.UnifiedLog, ts: int, pid: int, commit: bool) -> None:
        log.append_as_follower(
            kafkalog.batches.end_txn_marker(
                log.log_end_offset, ts, producer_id=pid, producer_epoch=0, commit=commit, coordinator_epoch=3,
                partition_leader_epoch=0,
            )
        )  # fmt: skip

    def some(n: int, tombstones: float) -> list[tuple[bytes | None, bytes | None]]:
        return [(k, None if rng.random() < tombstones else b"v%d" % rng.randrange(10**6)) for k in rng.sample(names, n)]

    ts = now1 - 3_600_000
    with kafkalog.UnifiedLog.open(source, config) as log:
        for i in range(0, keys, 5):  # every key once, some deleted
            batch(log, ts, some(5, 0.1))
            ts += 10
        log.roll()
    k_dir = copy_partition(source, tmp_path / "kafka" / "sliced-0")
    args = ["--dir", str(k_dir), "--now-ms", str(now1), "--map-bytes", str(BIG_MAP), "--read", "false"]
    end1 = run_kafka_cleaner(kafka_jars, *args, config=config).runs[0]["end_offset"]
    with kafkalog.UnifiedLog.open(k_dir, config) as log:
        for cycle in range(keys // 6):
            batch(log, ts, some(3, 0.15))
            batch(log, ts, some(2, 0.0), pid=7000, txn=True)
            batch(log, ts, some(2, 0.2), pid=7001, txn=True)
            marker(log, ts, 7000, commit=True)
            batch(log, ts, some(3, 0.1))
            marker(log, ts, 7001, commit=cycle % 3 == 0)
            ts += 10
        log.roll()
        batch(log, ts, some(2, 0.0))  # the active segment
    l_dir = copy_partition(k_dir, tmp_path / "kafkalog" / "sliced-0")

    args = ["--dir", str(k_dir), "--now-ms", str(now2), "--map-bytes", str(SLICED_MAP), "--read", "true",
            "--first-dirty", str(end1)]  # fmt: skip
    kafka = run_kafka_cleaner(kafka_jars, *args, config=config)
    run = kafka.runs[0]
    assert len(run["passes"]) == passes, f"test set-up: Kafka needed {len(run['passes'])} passes, not {passes}"
    with kafkalog.UnifiedLog.open(l_dir, config) as log:
        result = log.compact_now(dedupe_buffer_size=SLICED_MAP, time_ms=now2, first_dirty_offset=end1, sliced_decisions=True)
    assert len(result.passes) == 1, "kafkalog rewrote the log once"
    assert (result.first_dirty_offset, result.end_offset) == (run["first_dirty_offset"], run["end_offset"])
    assert partition_rows(l_dir) == kafka.records, "kafkalog kept other records than Kafka's passes"
    mine = [(b.base_offset, b.last_offset, bool(b.attributes & 0x20)) for f in sorted(l_dir.glob("*.log"))
            for b in parse_batches(f.read_bytes())]  # fmt: skip
    theirs = [(b[0], b[1], b[4]) for b in kafka.batches]
    assert mine == theirs, "kafkalog kept other batches (markers, empty batches) than Kafka's passes"
    assert any(c for *_, c in mine), "test set-up: markers survive"
