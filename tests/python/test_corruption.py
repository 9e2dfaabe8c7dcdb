"""Corruption: bit flips and truncations in segments, indexes, checkpoints, meta.properties,
partition.metadata and the clean-shutdown marker are recovered from or reported clearly, and
nothing panics.

A pristine pair of log dirs (four partitions of three segments each, one partition of each dir
with its log start offset inside a segment) is built once, left by an unclean shutdown (the
LogManager is dropped without close) or, for the marker, by a clean one. Every case copies it,
damages one file at a seeded random place, reopens it with a LogManager and checks the outcome
against Kafka's rules:

- the last segment is recovered after an unclean shutdown, so damage there cuts the log at the
  start of the damaged batch and nothing else is lost;
- older segments are not re-read at load (they lie below the recovery point): a damaged batch
  there is reported when it is read (CorruptRecordError) and the rest stays readable; bytes after
  a cut (a torn tail) are not records, and every read moves on to the next segment, as Kafka's
  does. A fetch trusts the header fields it reads on its way to an offset (base offset, length;
  Kafka's does too) and may then pass over offsets, though it never serves a record that was
  not written (a damaged last offset delta is caught: the batch before a gap is CRC-checked);
- index damage is repaired (recovered segment) or at worst makes a lookup start further on; it
  never makes a read serve a record that was not written at that offset;
- a damaged checkpoint reads as the value it still parses to, or as empty (full recovery);
- a damaged meta.properties takes its dir offline (the reason names meta.properties) and the
  other dir keeps serving; a damaged partition.metadata is reported naming the file;
- a damaged clean-shutdown marker still counts (Kafka checks that the file exists).

Every record's value is ``<topic>-<partition>:<offset>``, key ``k<offset>`` and timestamp
``T0 + offset``, so any served record can be checked. The random cases accept what Kafka's
rules allow and check everything else; cases found by the soak have their own tests below.

Each case runs in-process (a Rust panic surfaces as pyo3's PanicException and fails the case);
test_corruption_cases_in_a_subprocess runs a share of them in a child interpreter to catch an
abort or a segfault by its exit code. KAFKALOG_CORRUPTION_CASES sets the cases per kind and
damage (default 25).
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkalog import ConsumerRecord, LogManager, Record, UnifiedLog
from kafkalog.checkpoints import read_meta_properties, read_offset_checkpoint
from kafkalog.exceptions import (
    AllLogDirsOfflineError,
    CorruptIndexError,
    CorruptRecordError,
    KafkaLogError,
)

T0 = 1_700_000_000_000
CASES = int(os.environ.get("KAFKALOG_CORRUPTION_CASES", "25"))
SEED = int(os.environ.get("KAFKALOG_CORRUPTION_SEED", "1"))

CONFIG: dict[str, str] = {
    "internal.segment.bytes": "4096",
    "log.retention.ms": "-1",
    "log.roll.ms": str(10 * 365 * 24 * 3600 * 1000),
    "log.segment.delete.delay.ms": "0",
    "log.index.interval.bytes": "512",
    "log.index.size.max.bytes": "1024",
}
PARTITIONS: list[tuple[str, int]] = [("t", 0), ("t", 1), ("u", 0), ("u", 1)]
#: Log start offsets set with delete_records: inside the first and inside the second segment.
DELETED_TO = {("u", 0): 3, ("u", 1): 200}
BATCHES, PER_BATCH = 60, 7
#: Fixed ids, so that every file of the fixture, and so every case, is the same from run to run.
TOPIC_IDS = {"t": "a2Fma2Fsb2ctdG9waWMtdA", "u": "a2Fma2Fsb2ctdG9waWMtdQ"}
DIRECTORY_IDS = {"a": "a2Fma2Fsb2ctZGlyLWFhYQ", "b": "a2Fma2Fsb2ctZGlyLWJiYg", "only": "a2Fma2Fsb2ctZGlyLW9uZQ"}
CLUSTER_ID = "a2Fma2Fsb2ctY2x1c3Rlcg"

TP = tuple[str, int]


def value(tp: TP, offset: int) -> bytes:
    return f"{tp[0]}-{tp[1]}:{offset}".encode()


# -- the pristine log dirs ----------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    position: int
    size: int
    base: int
    last: int


@dataclass(frozen=True)
class Segment:
    base: int
    next: int
    log: str
    """Path of the .log file relative to the fixture root."""
    batches: list[Batch]


@dataclass(frozen=True)
class Partition:
    tp: TP
    dir: str
    """The log dir (relative to the fixture root) holding it."""
    start: int
    end: int
    segments: list[Segment]

    def segment_of(self, offset: int) -> Segment:
        return next(s for s in self.segments if s.base <= offset < s.next)


@dataclass(frozen=True)
class Fixture:
    root: Path
    dirs: list[str]
    parts: dict[TP, Partition]
    clean: bool


def batches_of(path: Path) -> list[Batch]:
    """The v2 batches of a .log file: position, size, base and last offset (header fields)."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (last_delta,) = struct.unpack_from(">i", data, pos + 23)
        out.append(Batch(pos, 12 + length, base, base + last_delta))
        pos += 12 + length
    assert pos == len(data), f"{path} does not end on a batch boundary"
    return out


def build_fixture(root: Path, clean: bool, dirs: tuple[str, ...] = ("a", "b")) -> Fixture:
    if root.exists():
        shutil.rmtree(root)
    for d in dirs:
        # What `kafka-storage format` writes (and kafkalog would, with random ids and the date).
        (root / d).mkdir(parents=True)
        (root / d / "meta.properties").write_text(
            f"#\n#Sun Nov 22 13:00:00 UTC 2026\nnode.id=1\ndirectory.id={DIRECTORY_IDS[d]}\nversion=1\n"
            f"cluster.id={CLUSTER_ID}\n"
        )
    manager = LogManager([root / d for d in dirs], CONFIG, scheduler=False)
    for tp in PARTITIONS:
        log = manager.create_log(*tp, topic_id=TOPIC_IDS[tp[0]])
        for b in range(BATCHES):
            first = log.log_end_offset
            offsets = range(first, first + PER_BATCH)
            records = [Record(f"k{o}".encode(), value(tp, o), timestamp=T0 + o) for o in offsets]
            log.append(records, compression="lz4" if b % 3 == 0 else "none")
        if tp in DELETED_TO:
            log.delete_records(DELETED_TO[tp])
        del log
    manager.flush()
    manager.checkpoint()
    parts = {}
    for log in manager.logs():
        tp = (log.topic, log.partition)
        path = Path(log.path)
        infos = log.segments
        segments = [
            Segment(
                s.base_offset,
                infos[i + 1].base_offset if i + 1 < len(infos) else log.log_end_offset,
                str(Path(s.path).relative_to(root)),
                batches_of(Path(s.path)),
            )
            for i, s in enumerate(infos)
        ]
        log_dir = str(path.parent.relative_to(root))
        parts[tp] = Partition(tp, log_dir, log.log_start_offset, log.log_end_offset, segments)
        assert len(segments) >= 3, f"the fixture wants at least three segments per partition, {tp} has {infos}"
    if clean:
        manager.close()
    # Dropped without close: no clean-shutdown marker, the last segments need recovery.
    del manager
    return Fixture(root, list(dirs), parts, clean)


@pytest.fixture(scope="module")
def unclean(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    return build_fixture(tmp_path_factory.mktemp("pristine") / "unclean", clean=False)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    return build_fixture(tmp_path_factory.mktemp("pristine") / "clean", clean=True)


# -- reading and checking -----------------------------------------------------------------------


def records_served(log: UnifiedLog) -> list[ConsumerRecord]:
    """Every record read() serves from the log start to the log end, in fetch order."""
    out: list[ConsumerRecord] = []
    offset, end = log.log_start_offset, log.log_end_offset
    for _ in range(100_000):
        if offset >= end:
            return out
        result = log.read(offset)
        if not result.records_bytes:
            return out
        out.extend(result.records)
        assert result.next_offset > offset, f"read({offset}) made no progress"
        offset = result.next_offset
    raise AssertionError("read loop did not finish")


def assert_exact(log: UnifiedLog, tp: TP, start: int, end: int, rng: random.Random) -> None:
    """The log serves exactly the records written at [start, end), through every read path."""
    name = f"{tp[0]}-{tp[1]}"
    assert (log.log_start_offset, log.log_end_offset) == (start, end), f"{name}: [start, end)"
    records = records_served(log)
    offsets = [r.offset for r in records]
    assert offsets == list(range(start, end)), f"{name}: offsets served are not [{start}, {end})"
    for r in records:
        assert (r.key, r.value, r.timestamp) == (f"k{r.offset}".encode(), value(tp, r.offset), T0 + r.offset), name
    table = log.to_arrow()
    assert table.column("offset").to_pylist() == offsets, f"{name}: to_arrow offsets"
    assert table.column("value").to_pylist() == [r.value for r in records], f"{name}: to_arrow values"
    if end > start:
        for o in [start, end - 1] + [rng.randrange(start, end) for _ in range(8)]:
            got = log.read(o, 1).records
            assert got and got[0].offset == o and got[0].value == value(tp, o), f"{name}: read({o})"
            found = log.offset_for_timestamp(T0 + o)
            assert found is not None and found.offset == o, f"{name}: offset_for_timestamp(T0 + {o}) = {found}"


def assert_authentic(records: list[ConsumerRecord], tp: TP, end: int) -> None:
    """Each record is one that was written to this partition (at some offset below ``end``),
    whatever offset it is served at."""
    written = {value(tp, o) for o in range(end)}
    for r in records:
        assert r.value in written, f"{tp}: served a record never written: offset {r.offset}, value {r.value!r}"


@contextmanager
def opened(dirs: list[Path]) -> Iterator[LogManager]:
    manager = LogManager(dirs, CONFIG, scheduler=False)
    try:
        yield manager
    finally:
        manager.close()


def open_or_error(dirs: list[Path]) -> LogManager | KafkaLogError:
    """A LogManager over ``dirs``, or the kafkalog error that refused to open them. Anything
    else (a Rust panic surfaces as PanicException, a BaseException) propagates and fails."""
    try:
        return LogManager(dirs, CONFIG, scheduler=False)
    except KafkaLogError as e:
        return e


def exact_elsewhere(manager: LogManager, fx: Fixture, skip: set[TP], rng: random.Random) -> None:
    for tp, part in fx.parts.items():
        if tp in skip:
            continue
        log = manager.get_log(*tp)
        assert log is not None, f"{tp} is not served"
        assert_exact(log, tp, part.start, part.end, rng)


# -- damage -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Damage:
    kind: str
    """"flip" or "truncate"."""
    target: str
    """The damaged file, relative to the case root."""
    at: int
    """The byte flipped, or the length truncated to."""


def damage_file(path: Path, kind: str, rng: random.Random) -> int:
    data = bytearray(path.read_bytes())
    assert data, f"{path} is empty"
    if kind == "flip":
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
    else:
        at = rng.randrange(len(data))
        del data[at:]
    path.write_bytes(bytes(data))
    return at


def header_field(relative: int) -> str:
    """Which field of a v2 batch header a byte belongs to (Kafka's DefaultRecordBatch layout).
    Bytes from attributes on are covered by the CRC; the last offset delta is too, but a fetch
    reads it (to find the batch holding an offset) before any CRC is checked."""
    if relative < 8:
        return "base_offset"
    if relative < 12:
        return "length"
    if relative < 16:
        return "leader_epoch"
    if relative == 16:
        return "magic"
    if relative < 21:
        return "crc"
    if 23 <= relative < 27:
        return "last_offset_delta"
    return "covered"


def batch_at(segment: Segment, position: int) -> Batch:
    return next(b for b in segment.batches if b.position <= position < b.position + b.size)


# -- the checks, one per kind of file -----------------------------------------------------------


@dataclass(frozen=True)
class Case:
    fx: Fixture
    root: Path
    """The damaged copy of the fixture."""
    damage: Damage
    tp: TP
    """The partition picked (the damaged file's, for partition files)."""
    seg: Segment | None
    """The segment picked, for segment files."""
    rng: random.Random

    @property
    def dirs(self) -> list[Path]:
        return case_dirs(self.fx, self.root)

    @property
    def segment(self) -> Segment:
        assert self.seg is not None
        return self.seg

    @property
    def damaged_dir(self) -> str:
        """The log dir (relative to the root) holding the damaged file."""
        return Path(self.damage.target).parts[0]


Check = Callable[[Case], None]


def case_dirs(fx: Fixture, case: Path) -> list[Path]:
    return [case / d for d in fx.dirs]


def check_active_log(c: Case) -> None:
    """The last segment is recovered: the log ends where the damaged batch began."""
    seg, part, at = c.segment, c.fx.parts[c.tp], c.damage.at
    if c.damage.kind == "truncate":
        field, end = "truncated", next(b.base for b in seg.batches if b.position + b.size > at)
    else:
        batch = batch_at(seg, at)
        field = header_field(at - batch.position)
        end = part.end if field == "leader_epoch" else batch.base
    with opened(c.dirs) as manager:
        assert manager.offline_log_dirs == {}
        exact_elsewhere(manager, c.fx, {c.tp}, c.rng)
        log = manager.get_log(*c.tp)
        assert log is not None
        if field != "base_offset":
            assert_exact(log, c.tp, part.start, end, c.rng)
            return
        # The base offset is outside the CRC: Kafka's recovery keeps such a batch when its
        # offsets still go forwards, or empties the segment when the offset index sees them go
        # backwards (see test_recovery_drops_a_batch_whose_base_offset_overlaps). Whatever is
        # served is still a record that was written, and older segments are whole.
        records = records_served(log)
        assert_authentic(records, c.tp, part.end)
        assert [r.offset for r in records if r.offset < seg.base] == list(range(part.start, seg.base))


def check_old_log(c: Case) -> None:
    """An older segment is below the recovery point, so nothing repairs it at load: the damaged
    batch is reported when read, every other offset reads as written."""
    seg, part, at, tp = c.segment, c.fx.parts[c.tp], c.damage.at, c.tp
    batch = batch_at(seg, at)
    field = "truncated" if c.damage.kind == "truncate" else header_field(at - batch.position)
    kept = {o for b in seg.batches if b.position + b.size <= at for o in range(b.base, b.last + 1)}

    def intact(o: int) -> bool:
        if not seg.base <= o < seg.next or field == "leader_epoch":
            return True
        return o in kept if field == "truncated" else o < batch.base

    with opened(c.dirs) as manager:
        assert manager.offline_log_dirs == {}
        exact_elsewhere(manager, c.fx, {tp}, c.rng)
        log = manager.get_log(*tp)
        assert log is not None
        assert (log.log_start_offset, log.log_end_offset) == (part.start, part.end)
        for o in range(part.start, part.end):
            if intact(o):
                got = log.read(o, 1).records
                assert got and got[0].offset == o and got[0].value == value(tp, o), f"read({o}) of an intact batch"
            elif field == "truncated":
                # The bytes after the cut are not records: the read moves on to the next
                # segment, as Kafka's LocalLog.read does (and as to_arrow does, below).
                got = log.read(o, 1).records
                assert got and got[0].offset == seg.next and got[0].value == value(tp, seg.next), f"read({o})"
            elif field in ("magic", "crc", "covered") and o <= batch.last:
                try:
                    got = log.read(o, 1).records
                except CorruptRecordError:
                    continue
                raise AssertionError(f"read({o}) of the damaged batch served {[r.offset for r in got]}")
            elif field in ("crc", "covered"):
                got = log.read(o, 1).records
                assert got and got[0].offset == o and got[0].value == value(tp, o), f"read({o}) after the damage"
            else:
                # A fetch reads the magic, base offset, length and last offset delta of the
                # batches it passes on its way to an offset before any CRC is checked (Kafka's
                # does too): a later offset may hit the damaged batch, or the damaged batch's
                # own offsets may be passed over or served at other offsets. Either way:
                # reported, or only records that were written.
                try:
                    got = log.read(o, 1).records
                except CorruptRecordError:
                    continue
                assert_authentic(got, tp, part.end)
        if field in ("leader_epoch", "truncated"):
            expected = [o for o in range(part.start, part.end) if intact(o)]
            assert log.to_arrow().column("offset").to_pylist() == expected


def check_index(c: Case) -> None:
    """A damaged offset index is rebuilt (the last segment after an unclean shutdown, or a
    length that is not a whole number of entries) or still only points at or before the batch
    it names; at worst a lookup starts further on. No read serves a wrong record."""
    seg, part, tp = c.segment, c.fx.parts[c.tp], c.tp
    with opened(c.dirs) as manager:
        assert manager.offline_log_dirs == {}
        exact_elsewhere(manager, c.fx, {tp}, c.rng)
        log = manager.get_log(*tp)
        assert log is not None
        if seg is part.segments[-1] or c.damage.kind == "truncate":
            assert_exact(log, tp, part.start, part.end, c.rng)
            return
        assert (log.log_start_offset, log.log_end_offset) == (part.start, part.end)
        for o in range(part.start, part.end):
            try:
                got = log.read(o, 1).records
            except (CorruptRecordError, CorruptIndexError):
                # An entry pointing into the middle of a batch: the bytes there do not decode.
                # (That the message names the file: test_a_decode_error_on_read_names_the_segment_file.)
                continue
            assert got, f"read({o}) served nothing"
            if not seg.base <= o < seg.next:
                assert got[0].offset == o, f"read({o}) outside the damaged segment"
            # See test_a_corrupt_offset_index_entry_does_not_skip_records for offsets skipped.
            assert got[0].offset >= o and all(r.value == value(tp, r.offset) for r in got), f"read({o})"


def check_timeindex(c: Case) -> None:
    """Reads never use the time index. The last segment's is rebuilt; an older segment's may
    make a timestamp lookup land later (Kafka's rules do not check it at load), never on a
    record with a smaller timestamp."""
    seg, part, tp = c.segment, c.fx.parts[c.tp], c.tp
    with opened(c.dirs) as manager:
        assert manager.offline_log_dirs == {}
        exact_elsewhere(manager, c.fx, {tp}, c.rng)
        log = manager.get_log(*tp)
        assert log is not None
        if seg is part.segments[-1]:
            assert_exact(log, tp, part.start, part.end, c.rng)
            return
        records = records_served(log)
        assert [r.offset for r in records] == list(range(part.start, part.end))
        assert all(r.value == value(tp, r.offset) for r in records)
        for o in range(max(part.start, seg.base), seg.next):
            found = log.offset_for_timestamp(T0 + o)
            # See test_a_truncated_time_index_still_finds_timestamps for lookups that land later.
            assert found is not None and found.offset >= o and found.timestamp == T0 + found.offset, f"{o}: {found}"


def parsed_checkpoint(path: Path) -> dict[tuple[str, int], int] | None:
    """What the damaged checkpoint still says, or None when it no longer parses."""
    try:
        return read_offset_checkpoint(path)
    except KafkaLogError:
        return None


def check_recovery_checkpoint(c: Case) -> None:
    """A recovery point only decides how much is re-read: all data is served whatever the file
    says, and a file that no longer parses means a full recovery of its dir."""
    parsed = parsed_checkpoint(c.root / c.damage.target)
    with opened(c.dirs) as manager:
        assert manager.offline_log_dirs == {}
        exact_elsewhere(manager, c.fx, set(), c.rng)
        if parsed is None:
            summary = next(s for s in manager.load_summary() if Path(s.dir) == c.root / c.damaged_dir)
            assert summary.segments_recovered == summary.segments_loaded > 0, summary


def check_log_start_checkpoint(c: Case) -> None:
    """The log start is the larger of the first segment's base and what the file still says
    (nothing, when it no longer parses); a value past the log end wipes the log (Kafka's rule)."""
    parsed = parsed_checkpoint(c.root / c.damage.target) or {}
    with opened(c.dirs) as manager:
        assert manager.offline_log_dirs == {}
        for tp, part in c.fx.parts.items():
            log = manager.get_log(*tp)
            assert log is not None
            first_base = part.segments[0].base
            start = max(first_base, parsed.get(tp, first_base)) if part.dir == c.damaged_dir else part.start
            if start > part.end:
                assert (log.log_start_offset, log.log_end_offset) == (start, start)
                assert records_served(log) == []
            else:
                assert_exact(log, tp, start, part.end, c.rng)


def meta_properties_invalid(path: Path) -> bool:
    """Whether the damaged meta.properties is no longer a KRaft v1 file at all."""
    try:
        props = read_meta_properties(path)
    except KafkaLogError:
        return True
    return props.get("version") != "1" or "cluster.id" not in props or "node.id" not in props


def check_dir_file(c: Case, name: str, invalid: bool) -> None:
    """For files whose damage may take their log dir offline: the start-up fails naming the
    file, or the dir goes offline naming it while the other dir serves everything, or (not when
    ``invalid``) everything is served."""
    outcome = open_or_error(c.dirs)
    if isinstance(outcome, KafkaLogError):
        assert name in str(outcome), outcome
        return
    manager = outcome
    try:
        offline = manager.offline_log_dirs
        damaged = str(c.root / c.damaged_dir)
        if offline:
            assert list(offline) == [damaged] and name in offline[damaged], offline
        else:
            assert not invalid, f"its dir stayed online with an unreadable {name}"
        for tp, part in c.fx.parts.items():
            log = manager.get_log(*tp)
            if offline and part.dir == c.damaged_dir:
                assert log is None, f"{tp} is served from an offline dir"
            else:
                assert log is not None, f"{tp} is not served"
                assert_exact(log, tp, part.start, part.end, c.rng)
    finally:
        manager.close()


def check_meta_properties(c: Case) -> None:
    """A meta.properties that cannot be read takes its dir offline, naming the file; the other
    dir keeps serving. One that still parses but disagrees (node.id, cluster.id) fails the
    start-up, naming a meta.properties, as in Kafka."""
    check_dir_file(c, "meta.properties", meta_properties_invalid(c.root / c.damage.target))


def check_partition_metadata(c: Case) -> None:
    """A damaged partition.metadata is reported naming the file (the start-up fails, or the dir
    goes offline: see test_a_malformed_partition_metadata_takes_only_its_dir_offline), or, when
    it still holds a topic id, nothing changes."""
    check_dir_file(c, "partition.metadata", invalid=False)


def check_clean_shutdown(c: Case) -> None:
    """Kafka only checks that .kafka_cleanshutdown exists: a damaged one still means a clean
    shutdown, and everything is served."""
    with opened(c.dirs) as manager:
        assert manager.offline_log_dirs == {}
        summary = next(s for s in manager.load_summary() if Path(s.dir) == c.root / c.damaged_dir)
        assert summary.had_clean_shutdown and summary.segments_recovered == 0, summary
        exact_elsewhere(manager, c.fx, set(), c.rng)


# -- picking a target ---------------------------------------------------------------------------


def pick(fx: Fixture, kind: str, rng: random.Random) -> tuple[str, TP, Segment | None]:
    tp = rng.choice(sorted(fx.parts))
    part = fx.parts[tp]
    if kind == "active_log":
        seg = part.segments[-1]
        return seg.log, tp, seg
    if kind == "old_log":
        seg = rng.choice(part.segments[:-1])
        return seg.log, tp, seg
    if kind in ("index", "timeindex"):
        seg = rng.choice(part.segments)
        return seg.log.removesuffix(".log") + "." + kind, tp, seg
    if kind == "partition_metadata":
        return str(Path(part.segments[0].log).parent / "partition.metadata"), tp, None
    d = rng.choice(fx.dirs)
    name = {
        "recovery_checkpoint": "recovery-point-offset-checkpoint",
        "log_start_checkpoint": "log-start-offset-checkpoint",
        "meta_properties": "meta.properties",
        "clean_shutdown": ".kafka_cleanshutdown",
    }[kind]
    return f"{d}/{name}", tp, None


CHECKS: dict[str, Check] = {
    "active_log": check_active_log,
    "old_log": check_old_log,
    "index": check_index,
    "timeindex": check_timeindex,
    "recovery_checkpoint": check_recovery_checkpoint,
    "log_start_checkpoint": check_log_start_checkpoint,
    "meta_properties": check_meta_properties,
    "partition_metadata": check_partition_metadata,
    "clean_shutdown": check_clean_shutdown,
}
KINDS = list(CHECKS)


def run_cases(fx: Fixture, kind: str, damage_kind: str, cases: int, seed: int, work: Path) -> None:
    rng = random.Random(f"{seed}-{kind}-{damage_kind}")
    for i in range(cases):
        case = work / f"{kind}-{damage_kind}"
        if case.exists():
            shutil.rmtree(case)
        shutil.copytree(fx.root, case)
        target, tp, seg = pick(fx, kind, rng)
        at = damage_file(case / target, damage_kind, rng)
        damage = Damage(damage_kind, target, at)
        try:
            CHECKS[kind](Case(fx, case, damage, tp, seg, rng))
        except AssertionError as e:
            raise AssertionError(f"case {i} (KAFKALOG_CORRUPTION_SEED={seed}): {damage}: {e}") from e
        except KafkaLogError as e:
            raise AssertionError(f"case {i} (KAFKALOG_CORRUPTION_SEED={seed}): {damage}: unexpected {e!r}") from e


@pytest.mark.parametrize("damage_kind", ["flip", "truncate"])
@pytest.mark.parametrize("kind", KINDS)
def test_random_damage(
    kind: str, damage_kind: str, unclean: Fixture, clean: Fixture, tmp_path: Path
) -> None:
    fx = clean if kind == "clean_shutdown" else unclean
    run_cases(fx, kind, damage_kind, CASES, SEED, tmp_path)


def test_an_old_segment_cut_inside_its_first_batch(unclean: Fixture, tmp_path: Path) -> None:
    """Found by `make soak` (case 27, seed 1): to_arrow() raised on an old segment cut inside
    its first batch, while a cut after its first batch was skipped; every read now moves on to
    the next segment, as Kafka's does."""
    run_cases(unclean, "old_log", "truncate", 28, 1, tmp_path)  # case 27 is the one


@pytest.mark.parametrize("damage_kind", ["flip", "truncate"])
def test_damaged_meta_properties_of_the_only_dir(damage_kind: str, tmp_path: Path) -> None:
    """With one log dir, an unreadable meta.properties leaves nothing to serve:
    AllLogDirsOfflineError, naming the file."""
    fx = build_fixture(tmp_path / "pristine", clean=False, dirs=("only",))
    rng = random.Random(f"{SEED}-only-{damage_kind}")
    for i in range(CASES):
        case = tmp_path / "case"
        if case.exists():
            shutil.rmtree(case)
        shutil.copytree(fx.root, case)
        target = case / "only" / "meta.properties"
        at = damage_file(target, damage_kind, rng)
        invalid = meta_properties_invalid(target)
        outcome = open_or_error([case / "only"])
        where = f"case {i}: {damage_kind} of meta.properties at {at}"
        if isinstance(outcome, KafkaLogError):
            assert "meta.properties" in str(outcome), f"{where}: {outcome}"
            if invalid:
                assert isinstance(outcome, AllLogDirsOfflineError), f"{where}: {outcome!r}"
            continue
        assert not invalid, f"{where}: opened with an unreadable meta.properties"
        try:
            exact_elsewhere(outcome, fx, set(), rng)
        finally:
            outcome.close()


def test_an_unparseable_checkpoint_means_full_recovery(unclean: Fixture, tmp_path: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(unclean.root, case)
    for d in unclean.dirs:
        (case / d / "recovery-point-offset-checkpoint").write_bytes(b"\x00garbage\n")
        (case / d / "log-start-offset-checkpoint").write_bytes(b"0\n9\n")
    rng = random.Random(SEED)
    with opened(case_dirs(unclean, case)) as manager:
        for summary in manager.load_summary():
            assert summary.segments_recovered == summary.segments_loaded == 6, summary
        for tp, part in unclean.parts.items():
            log = manager.get_log(*tp)
            assert log is not None
            # The log start offsets are lost with their checkpoint: each log starts at its first
            # segment again, and records deleted with delete_records are served once more.
            assert_exact(log, tp, part.segments[0].base, part.end, rng)


def test_a_log_start_checkpoint_past_the_log_end_wipes_the_log(unclean: Fixture, tmp_path: Path) -> None:
    """Kafka's rule (LogLoader): a checkpointed log start offset past the log end deletes every
    segment and restarts the log, empty, at that offset."""
    case = tmp_path / "case"
    shutil.copytree(unclean.root, case)
    part = unclean.parts[("u", 0)]
    (case / part.dir / "log-start-offset-checkpoint").write_text("0\n1\nu 0 5000\n")
    rng = random.Random(SEED)
    with opened(case_dirs(unclean, case)) as manager:
        log = manager.get_log("u", 0)
        assert log is not None
        assert (log.log_start_offset, log.log_end_offset) == (5000, 5000)
        assert [s.base_offset for s in log.segments] == [5000]
        exact_elsewhere(manager, unclean, {("u", 0)}, rng)


# -- no abort, no segfault: a share of the cases in a child interpreter -------------------------


def test_corruption_cases_in_a_subprocess(tmp_path: Path) -> None:
    """An abort or a segfault would take pytest down with it; in a child it shows in the exit
    code. Rust panics print "panicked" on stderr even when pyo3 turns them into exceptions."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", RUST_BACKTRACE="0")
    child = subprocess.run(
        [sys.executable, __file__, str(tmp_path), str(SEED + 1), "4"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert child.returncode == 0, f"exit {child.returncode}\n{child.stdout}\n{child.stderr}"
    assert "panicked" not in child.stderr, child.stderr
    assert child.stdout.strip().endswith(f"{len(KINDS) * 2 * 4} cases ok"), child.stdout


def _subprocess_main(work: Path, seed: int, cases: int) -> None:
    fixtures = {False: build_fixture(work / "unclean", clean=False), True: build_fixture(work / "clean", clean=True)}
    done = 0
    for kind in KINDS:
        for damage_kind in ("flip", "truncate"):
            run_cases(fixtures[kind == "clean_shutdown"], kind, damage_kind, cases, seed, work / "cases")
            done += cases
    print(f"{done} cases ok")


if __name__ == "__main__":
    _subprocess_main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))


# -- where kafkalog falls short: one exact reproduction each ------------------------------------


def _case(fx: Fixture, tmp_path: Path) -> Path:
    case = tmp_path / "case"
    shutil.copytree(fx.root, case)
    return case


def _flip(path: Path, position: int, mask: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= mask
    path.write_bytes(bytes(data))


def _uncompressed_batch(seg: Segment) -> Batch:
    """An uncompressed batch in the middle of the segment (every third batch is lz4), with an
    odd base offset."""
    for b in seg.batches[2:-1]:
        if (b.base // PER_BATCH) % 3 != 0 and b.base % 2 == 1:
            return b
    raise AssertionError(f"no suitable batch in {seg}")


def _flip_a_value_in_an_older_segment(fx: Fixture, tmp_path: Path) -> tuple[Path, Segment, int]:
    """Flips one bit of a record value in t-0's second segment; returns the case root, the
    segment and the record's offset."""
    case = _case(fx, tmp_path)
    seg = fx.parts[("t", 0)].segments[1]
    batch = _uncompressed_batch(seg)
    offset = batch.base + 2
    data = (case / seg.log).read_bytes()
    at = data.find(value(("t", 0), offset), batch.position, batch.position + batch.size)
    assert at > 0
    _flip(case / seg.log, at + len(value(("t", 0), offset)) - 1, 0x01)
    return case, seg, offset


def test_a_decode_error_on_read_names_the_segment_file(unclean: Fixture, tmp_path: Path) -> None:
    case, seg, offset = _flip_a_value_in_an_older_segment(unclean, tmp_path)
    with opened(case_dirs(unclean, case)) as manager:
        log = manager.get_log("t", 0)
        assert log is not None
        with pytest.raises(CorruptRecordError) as raised:
            log.read(offset, 1)
        assert str(case / seg.log) in str(raised.value)


def test_to_arrow_rejects_a_batch_whose_crc_does_not_match(unclean: Fixture, tmp_path: Path) -> None:
    case, _, offset = _flip_a_value_in_an_older_segment(unclean, tmp_path)
    with opened(case_dirs(unclean, case)) as manager:
        log = manager.get_log("t", 0)
        assert log is not None
        with pytest.raises(CorruptRecordError):
            table = log.to_arrow()
            served = dict(zip(table.column("offset").to_pylist(), table.column("value").to_pylist()))
            written = value(("t", 0), offset)
            raise AssertionError(f"offset {offset} served as {served[offset]!r}, written as {written!r}")


def test_recovery_drops_a_batch_whose_base_offset_overlaps(unclean: Fixture, tmp_path: Path) -> None:
    case = _case(unclean, tmp_path)
    part = unclean.parts[("t", 0)]
    seg = part.segments[-1]
    batch = _uncompressed_batch(seg)
    _flip(case / seg.log, batch.position + 7, 0x01)  # base offset B -> B - 1 (B is odd)
    with opened(case_dirs(unclean, case)) as manager:
        log = manager.get_log("t", 0)
        assert log is not None
        records = records_served(log)
        assert [r.offset for r in records] == list(range(part.start, log.log_end_offset))
        assert all(r.value == value(("t", 0), r.offset) for r in records)
        assert log.log_end_offset == batch.base


def test_a_corrupt_offset_index_entry_does_not_skip_records(unclean: Fixture, tmp_path: Path) -> None:
    case = _case(unclean, tmp_path)
    part = unclean.parts[("t", 0)]
    seg = part.segments[1]
    index = case / seg.log.replace(".log", ".index")
    assert index.stat().st_size >= 3 * 8, "the entry flipped must not be the last one"
    _flip(index, 8 + 4 + 1, 0x01)  # entry 1: position + 65536, past the end of the 4 KB segment
    with opened(case_dirs(unclean, case)) as manager:
        log = manager.get_log("t", 0)
        assert log is not None
        for o in range(seg.base, seg.next):
            try:
                got = log.read(o, 1).records
            except CorruptIndexError as e:
                assert str(index) in str(e)
                continue
            assert got and got[0].offset == o, f"read({o}) served offset {got[0].offset if got else None}"


def test_a_truncated_time_index_still_finds_timestamps(unclean: Fixture, tmp_path: Path) -> None:
    case = _case(unclean, tmp_path)
    seg = unclean.parts[("t", 0)].segments[1]
    time_index = case / seg.log.replace(".log", ".timeindex")
    data = time_index.read_bytes()
    time_index.write_bytes(data[:-5])
    with opened(case_dirs(unclean, case)) as manager:
        log = manager.get_log("t", 0)
        assert log is not None
        for o in range(seg.base, seg.next):
            try:
                found = log.offset_for_timestamp(T0 + o)
            except CorruptIndexError as e:
                assert str(time_index) in str(e)
                continue
            assert found is not None and found.offset == o, f"offset_for_timestamp(T0 + {o}) = {found}"


@pytest.mark.parametrize(
    "field, position, mask",
    [
        # length + 65536: the batch runs past the segment's end, but the offset index points at
        # batches after it, so it is no torn tail: reported (test_damaged_batches.py has the tail).
        ("length", 9, 0x01),
        # delta 6 -> 4: a fetch of the batch's last two offsets passes over the batch (its header
        # says it ends two offsets early) and lands in a gap before the next one; the batch
        # before a gap is checked against its CRC, so the damage is reported.
        ("last_offset_delta", 26, 0x02),
    ],
)
def test_a_corrupt_batch_header_in_an_older_segment_is_reported(
    field: str, position: int, mask: int, unclean: Fixture, tmp_path: Path
) -> None:
    case = _case(unclean, tmp_path)
    seg = unclean.parts[("t", 0)].segments[1]
    batch = _uncompressed_batch(seg)
    assert batch.last - batch.base == 6
    _flip(case / seg.log, batch.position + position, mask)
    with opened(case_dirs(unclean, case)) as manager:
        log = manager.get_log("t", 0)
        assert log is not None
        for o in range(batch.base, seg.next):
            try:
                got = log.read(o, 1).records
            except CorruptRecordError:
                continue  # reported (whether it names the file: the decode-error test above)
            assert got and got[0].offset == o, f"read({o}) served offset {got[0].offset if got else None}"


def test_a_corrupt_base_offset_in_an_older_segment_is_reported(unclean: Fixture, tmp_path: Path) -> None:
    case = _case(unclean, tmp_path)
    seg = unclean.parts[("t", 0)].segments[1]
    batch = _uncompressed_batch(seg)
    _flip(case / seg.log, batch.position + 3, 0x01)  # base offset + 2^32
    with opened(case_dirs(unclean, case)) as manager:
        log = manager.get_log("t", 0)
        assert log is not None
        for o in range(batch.base, batch.last + 1):
            try:
                got = log.read(o, 1).records
            except CorruptRecordError:
                continue
            assert all(seg.base <= r.offset < seg.next for r in got), f"read({o}): {[r.offset for r in got]}"


def test_a_malformed_partition_metadata_costs_only_the_topic_id(unclean: Fixture, tmp_path: Path) -> None:
    """Kafka takes the whole log dir offline for a malformed partition.metadata (an IOException);
    kafkalog loads every log, the damaged one without a topic id, and serves all the data."""
    case = _case(unclean, tmp_path)
    part = unclean.parts[("t", 0)]
    (case / part.dir / "t-0" / "partition.metadata").write_text("version: 0\n")
    outcome = open_or_error(case_dirs(unclean, case))
    assert isinstance(outcome, LogManager), f"the start-up failed: {outcome!r}"
    try:
        assert outcome.offline_log_dirs == {}
        log = outcome.get_log("t", 0)
        assert log is not None and log.topic_id is None
        exact_elsewhere(outcome, unclean, set(), random.Random(SEED))
    finally:
        outcome.close()
