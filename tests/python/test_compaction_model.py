"""Model-based tests of log compaction (``UnifiedLog.compact_now``): random keyed workloads with
tombstones and the odd unkeyed record, every codec, random batch sizes, tiny to large offset
maps (a map of 24*k bytes holds floor(k * load factor) keys, so tiny maps force many passes),
interleaved with appends, rolls, high-watermark moves, reopens and cleans at chosen times.

The model knows every record ever written (offset, key, value, timestamp, batch) and, for every
batch, the delete horizon the cleaner must have stamped into it. After a clean at time T that
returns end offset E (the new checkpoint), with B the first segment base at or above E:

- a record below E survives iff it has a key, it is the last record of that key below E, and it
  has a value or it is a tombstone whose batch has no horizon yet or a horizon > T;
- every record at or above E survives (including unkeyed ones and superseded ones);
- every batch below B holding a surviving tombstone carries a horizon, stamped by the first
  clean that recopied it while it held one: that clean's T + delete.retention.ms (checked on the
  raw header: attribute bit 6 and baseTimestamp), and the horizon never changes afterwards;
- offsets never change, timestamps are preserved, each rebuilt batch keeps its codec, base and
  last offset; files at or above B are byte-for-byte untouched;
- every ``.log`` file decodes with kafka-python (CRC checked) to exactly the same records as
  ``UnifiedLog.read`` serves; no ``.cleaned`` / ``.swap`` file is left behind.

Runs derandomized (conftest). KAFKALOG_SOAK=<n> multiplies the number of examples by n.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import kafkalog
from kafkalog import Record
from kit.compaction import CODEC_IDS, CODECS, Row, cleaner_temp_files, data_rows, read_all, scan_dir

SOAK = int(os.environ.get("KAFKALOG_SOAK", "1"))
T0 = 1_700_000_000_000
DELETE_RETENTION_MS = 10_000
#: Offset-map sizes: 24 bytes per slot; with load factor 0.9, 24*2 holds 1 key, 24*3 2 keys.
#: (cleans that ran at least one pass, most passes in one clean), for the coverage check.
CLEANS_WITH_PASSES = [0, 0]
MAP_SIZES = [24 * 2, 24 * 3, 24 * 5, 24 * 17, 24 * 200, 1 << 20]
#: Read/write buffer sizes (each buffer is half): small ones make the cleaner grow them.
IO_BUFFERS = [256, 1024, 64 * 1024, 512 * 1024]


@dataclass
class BatchModel:
    base: int
    last: int
    codec: int
    offsets: list[int]
    horizon: int | None = None


@dataclass
class Model:
    rows: dict[int, Row] = field(default_factory=dict)  # offset -> (offset, ts, key, value)
    batch_of: dict[int, int] = field(default_factory=dict)  # offset -> batch base
    batches: dict[int, BatchModel] = field(default_factory=dict)

    def expected(self) -> list[Row]:
        return [self.rows[o] for o in sorted(self.rows)]

    def apply_clean(self, now: int, first_dirty: int, end: int, recopied_below: int) -> None:
        """The passes' maps together cover [first_dirty, end): a record below ``end`` goes if a
        later record of its key lies in that range. (Records below ``first_dirty`` that only
        older-than-dirty records supersede stay: that happens when the dirty section restarts
        at the log start, and they are then below it, invisible.)"""
        mapped: dict[bytes, int] = {}
        for o, (_, _, key, _) in self.rows.items():
            if first_dirty <= o < end and key is not None:
                mapped[key] = max(mapped.get(key, -1), o)
        kept: dict[int, Row] = {}
        for o, row in self.rows.items():
            _, _, key, value = row
            if o >= end:
                kept[o] = row
            elif key is None or mapped.get(key, -1) > o:
                continue
            elif value is not None:
                kept[o] = row
            else:
                h = self.batches[self.batch_of[o]].horizon
                if h is None or now < h:
                    kept[o] = row
        self.rows = kept
        for b in self.batches.values():
            if b.base < recopied_below and b.horizon is None:
                if any(o in kept and kept[o][3] is None for o in b.offsets):
                    b.horizon = now + DELETE_RETENTION_MS


def stamped_horizons_pending(model: Model) -> list[int]:
    return sorted(
        {b.horizon for b in model.batches.values() if b.horizon is not None and any(o in model.rows for o in b.offsets)}
    )


class CompactionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="compaction-model-"))
        self.path = self.tmp / "model-0"
        self.log: kafkalog.UnifiedLog | None = None
        self.model = Model()
        self.now = T0 + 1_000_000
        self.checkpoint: int | None = None
        self.cleans = 0
        self.truncated_to = 0  # the log end after the last truncation (it may leave no batch)

    @initialize(
        segment_bytes=st.sampled_from([1024, 2048, 4096, 16384]),
        index_interval=st.sampled_from([1, 128, 4096]),
        keys=st.integers(2, 40),
        prefill=st.integers(0, 8),
        seed=st.integers(0, 2**16),
        min_lag=st.sampled_from([0, 0, 999_900]),
    )
    def open_log(self, segment_bytes: int, index_interval: int, keys: int, prefill: int, seed: int, min_lag: int) -> None:
        self.config = {
            "min.compaction.lag.ms": str(min_lag),
            "internal.segment.bytes": str(segment_bytes),
            "cleanup.policy": "compact",
            "delete.retention.ms": str(DELETE_RETENTION_MS),
            "file.delete.delay.ms": "0",
            "index.interval.bytes": str(index_interval),
        }
        self.segment_bytes = segment_bytes
        self.keys = keys
        self.log = kafkalog.UnifiedLog.open(self.path, self.config)
        # A few segments of history, so that the first cleans already have work to do.
        rng = random.Random(seed)
        for _ in range(prefill):
            first = self.log.log_end_offset
            records = []
            for i in range(rng.randint(1, 20)):
                value = None if rng.random() < 0.15 else b"p%d" % (first + i) + b"y" * rng.randint(0, 40)
                records.append(Record(b"key-%d" % rng.randrange(keys), value, timestamp=T0 + first + i))
            codec = rng.choice(CODECS)
            self.log.append(records, compression=codec, batch_size=min(rng.choice([150, 16384]), segment_bytes - 300))
            self._learn(first, records, codec)
            if rng.random() < 0.5:
                self.log.roll()

    def teardown(self) -> None:
        if self.log is not None:
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- writes -----------------------------------------------------------------------------

    def _draw_records(self, data: st.DataObject, first: int, n: int, value_len: int, unkeyed: bool) -> list[Record]:
        records = []
        for i in range(n):
            kind = data.draw(st.integers(0, 99), label="kind")
            key = None if unkeyed and kind < 5 else b"key-%d" % data.draw(st.integers(0, self.keys - 1), label="key")
            value = None if 5 <= kind < 20 else b"v%d-" % (first + i) + b"x" * value_len
            records.append(Record(key, value, timestamp=T0 + first + i))
        return records

    def _learn(self, first: int, records: list[Record], codec: str) -> None:
        """Adds appended records to the model, with the batch boundaries the append chose
        (read back from the raw bytes)."""
        assert self.log is not None
        n = len(records)
        for i, r in enumerate(records):
            self.model.rows[first + i] = (first + i, T0 + first + i, r.key, r.value)
        offset = first
        while offset <= first + n - 1:
            raw = self.log.read(offset, 1 << 20, "log_end").records_bytes
            pos = 0
            while pos + 61 <= len(raw):
                size = 12 + int.from_bytes(raw[pos + 8 : pos + 12], "big")
                base = int.from_bytes(raw[pos : pos + 8], "big")
                last = base + int.from_bytes(raw[pos + 23 : pos + 27], "big")
                if base >= first:
                    offsets = list(range(base, last + 1))
                    written_codec = raw[pos + 22] & 0x07  # kafka-python may leave a batch uncompressed
                    if codec == "none" or raw[pos + 22] & 0x07:
                        assert written_codec == CODEC_IDS[codec]
                    self.model.batches[base] = BatchModel(base, last, written_codec, offsets)
                    for o in offsets:
                        self.model.batch_of[o] = base
                offset = last + 1
                pos += size
        assert all(o in self.model.batch_of for o in range(first, first + n))

    @rule(
        data=st.data(),
        n=st.integers(1, 25),
        codec=st.sampled_from(CODECS),
        batch_size=st.sampled_from([120, 400, 16384]),
        value_len=st.integers(0, 60),
    )
    def append(self, data: st.DataObject, n: int, codec: str, batch_size: int, value_len: int) -> None:
        """A leader append (a compacted topic refuses unkeyed records there)."""
        assert self.log is not None
        first = self.log.log_end_offset
        records = self._draw_records(data, first, n, value_len, unkeyed=False)
        batch_size = min(batch_size, self.segment_bytes - 300)
        info = self.log.append(records, compression=codec, batch_size=batch_size)
        assert (info.first_offset, info.last_offset) == (first, first + n - 1)
        self._learn(first, records, codec)

    @rule(data=st.data(), n=st.integers(1, 8), codec=st.sampled_from(CODECS), value_len=st.integers(0, 40))
    def append_as_follower(self, data: st.DataObject, n: int, codec: str, value_len: int) -> None:
        """One batch built by kafka-python, appended as a follower: it may hold unkeyed records
        (which a clean drops and counts invalid)."""
        from kafka.record.default_records import DefaultRecordBatchBuilder

        assert self.log is not None
        first = self.log.log_end_offset
        records = self._draw_records(data, first, n, value_len, unkeyed=True)
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=CODEC_IDS[codec], is_transactional=False,
            producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
        )
        for i, r in enumerate(records):
            assert builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=[]) is not None
        raw = bytearray(builder.build())
        raw[0:8] = first.to_bytes(8, "big")  # baseOffset is outside the CRC
        info = self.log.append_as_follower(bytes(raw))
        assert (info.first_offset, info.last_offset) == (first, first + n - 1)
        self._learn(first, records, codec)

    @rule()
    def roll(self) -> None:
        assert self.log is not None
        self.log.roll()

    @rule(frac=st.floats(0, 1))
    def move_high_watermark(self, frac: float) -> None:
        assert self.log is not None
        start, end = self.log.log_start_offset, self.log.log_end_offset
        self.log.set_high_watermark(start + int((end - start) * frac))

    @rule()
    def reopen(self) -> None:
        assert self.log is not None
        hw, end = self.log.high_watermark, self.log.log_end_offset
        self.log.close()
        self.log = kafkalog.UnifiedLog.open(self.path, self.config)
        self.log.set_high_watermark(hw)
        new_end = self.log.log_end_offset
        if new_end != end:
            # A truncation into a range the cleaner emptied leaves the log end past the last
            # batch; a reload recomputes it from the files (the active segment's base or last
            # batch), as Kafka's does. Nothing written may be lost.
            assert new_end < end and self.truncated_to == end, f"log end {end} -> {new_end} on reopen"
            assert not [o for o in self.model.rows if o >= new_end], f"records lost with the log end {end} -> {new_end}"
            for base in [b for b in self.model.batches if b >= new_end]:
                for o in self.model.batches.pop(base).offsets:
                    self.model.batch_of.pop(o, None)
            self.truncated_to = new_end
            if self.checkpoint is not None:
                self.checkpoint = min(self.checkpoint, new_end)

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        """Truncates to a batch boundary (or the log end); the checkpoint comes down with it, as
        Kafka's cleaner manager lowers it on truncation."""
        assert self.log is not None
        start = self.log.log_start_offset
        bounds = sorted({b.base_offset for b in scan_dir(self.log.path) if b.base_offset >= start} | {self.log.log_end_offset})
        target = data.draw(st.sampled_from(bounds), label="truncate to")
        hw = self.log.high_watermark
        self.log.truncate_to(target)
        for base in [b for b in self.model.batches if b >= target]:
            for o in self.model.batches.pop(base).offsets:
                self.model.rows.pop(o, None)
                self.model.batch_of.pop(o, None)
        assert self.log.log_end_offset == target
        assert self.log.high_watermark == min(hw, target)
        self.truncated_to = target
        if self.checkpoint is not None:
            self.checkpoint = min(self.checkpoint, target)

    @rule(frac=st.floats(0, 1))
    def delete_records(self, frac: float) -> None:
        assert self.log is not None
        start, hw = self.log.log_start_offset, self.log.high_watermark
        self.log.delete_records(start + int((hw - start) * frac))
        assert start <= self.log.log_start_offset <= hw

    @rule(ms=st.sampled_from([0, 1, DELETE_RETENTION_MS - 1, DELETE_RETENTION_MS, 3 * DELETE_RETENTION_MS, 777]))
    def tick(self, ms: int) -> None:
        self.now += ms

    # -- cleaning ---------------------------------------------------------------------------

    def _clean(self, map_size: int, io_buffer: int, from_checkpoint: bool) -> None:
        assert self.log is not None
        log = self.log
        before_bases = [s.base_offset for s in log.segments]
        before_files = {b: Path(log.path, f"{b:020d}.log").read_bytes() for b in before_bases}
        leo, start = log.log_end_offset, log.log_start_offset
        first_dirty = self.checkpoint if from_checkpoint else None
        result = log.compact_now(
            dedupe_buffer_size=map_size,
            io_buffer_size=io_buffer,
            first_dirty_offset=first_dirty,
            time_ms=self.now,
        )
        self.cleans += 1
        assert (log.log_end_offset, log.log_start_offset) == (leo, start), "a clean moved the log's ends"
        end = result.end_offset
        assert end <= result.first_uncleanable_offset or not result.passes
        if result.passes:
            CLEANS_WITH_PASSES[0] += 1
            CLEANS_WITH_PASSES[1] = max(CLEANS_WITH_PASSES[1], len(result.passes))
            assert end == result.first_uncleanable_offset, f"compact_now stopped early: {result}"
            for p, q in zip(result.passes, result.passes[1:]):
                assert p.end_offset == q.first_dirty_offset and p.end_offset > p.first_dirty_offset
            bases_at_or_above = [b for b in before_bases if b >= end]
            recopied_below = bases_at_or_above[0] if bases_at_or_above else leo
            self.model.apply_clean(self.now, result.first_dirty_offset, end, recopied_below)
            for b in bases_at_or_above:
                got = Path(log.path, f"{b:020d}.log").read_bytes()
                assert got == before_files[b], f"segment {b} at or above the cleaned bound {end} changed"
            self.checkpoint = end
        self.check_log()

    @rule(
        map_size=st.sampled_from(MAP_SIZES),
        io_buffer=st.sampled_from(IO_BUFFERS),
        from_checkpoint=st.booleans(),
    )
    def clean(self, map_size: int, io_buffer: int, from_checkpoint: bool) -> None:
        self._clean(map_size, io_buffer, from_checkpoint)

    @precondition(lambda self: self.log is not None and bool(stamped_horizons_pending(self.model)))
    @rule(which=st.integers(0, 10), offset=st.sampled_from([-1, 0]), map_size=st.sampled_from(MAP_SIZES))
    def clean_at_a_horizon(self, which: int, offset: int, map_size: int) -> None:
        """Cleans exactly at (or 1 ms before) a stamped horizon: the tombstones of that batch
        must go at the horizon and stay 1 ms before it."""
        pending = stamped_horizons_pending(self.model)
        target = pending[which % len(pending)] + offset
        if target >= self.now:
            self.now = target
        self._clean(map_size, 64 * 1024, True)

    # -- invariants -------------------------------------------------------------------------

    def check_log(self) -> None:
        assert self.log is not None
        expected = self.model.expected()
        got = read_all(self.log)
        visible = [r for r in expected if r[0] >= self.log.log_start_offset]
        assert got == visible, f"records differ from the model after {self.cleans} cleans (now={self.now})"
        assert cleaner_temp_files(self.log.path) == []
        raw = scan_dir(self.log.path)
        assert data_rows(raw) == expected, "kafka-python decodes different records from the .log files"
        for b in raw:
            m = self.model.batches.get(b.base_offset)
            assert m is not None, f"a batch at {b.base_offset} that was never appended"
            assert b.last_offset == m.last, f"batch {b.base_offset}: last offset {b.last_offset} != {m.last}"
            if b.records_count > 0:
                assert b.codec == m.codec, f"batch {b.base_offset}: codec {b.codec}, written with {m.codec}"
            has_tombstone = any(v is None for (_, _, _, v) in b.rows)
            if has_tombstone or m.horizon is not None and b.records_count > 0 and b.horizon is not None:
                assert b.horizon == m.horizon, (
                    f"batch {b.base_offset}: horizon {b.horizon}, model {m.horizon} "
                    f"(tombstones {[r[0] for r in b.rows if r[3] is None]}, now {self.now})"
                )

    @invariant()
    def offsets_and_ends(self) -> None:
        if self.log is None:
            return
        expected_end = max(self.model.batch_of) + 1 if self.model.batch_of else 0
        assert self.log.log_end_offset == max(expected_end, self.truncated_to)


TestCompactionModel = CompactionMachine.TestCase
TestCompactionModel.settings = settings(max_examples=40 * SOAK, stateful_step_count=50, deadline=None)


# -- focused cases --------------------------------------------------------------------------------


def _keyed(n: int, keys: int, first: int = 0, tombstone_every: int = 0) -> list[Record]:
    out = []
    for i in range(n):
        o = first + i
        value = None if tombstone_every and i % tombstone_every == tombstone_every - 1 else b"value-%d" % o
        out.append(Record(b"k%d" % (o % keys), value, timestamp=T0 + o))
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_is_kept_and_readable_after_cleaning(tmp_path, codec):
    """Compressed batches that lose records are rebuilt with their codec; kafka-python decodes
    them (CRC checked) to the records the log serves."""
    config = {"internal.segment.bytes": "4096", "cleanup.policy": "compact", "delete.retention.ms": "1000"}
    with kafkalog.UnifiedLog.open(tmp_path / "codec-0", config) as log:
        for i in range(12):
            log.append(_keyed(10, 7, first=10 * i, tombstone_every=4), compression=codec, batch_size=300)
        log.roll()
        before = scan_dir(log.path)
        result = log.compact_now(time_ms=T0 + 10_000)
        assert result.stats.messages_written < result.stats.messages_read
        raw = scan_dir(log.path)
        rebuilt = [b for b in raw if b.records_count > 0]
        assert rebuilt and all(b.codec == CODEC_IDS[codec] for b in rebuilt)
        assert data_rows(raw) == read_all(log)
        latest = {}
        for b in before:
            for row in b.rows:
                latest[row[2]] = row
        assert sorted(read_all(log)) == sorted(latest.values())


def test_tombstone_two_pass_rule_with_an_ancient_timestamp(tmp_path):
    """testCleanTombstone: a tombstone written with a very old timestamp still gets horizon =
    clean time + delete.retention.ms (not record time + retention), survives a clean before the
    horizon and goes at the horizon."""
    config = {"cleanup.policy": "compact", "delete.retention.ms": "5000", "message.timestamp.before.max.ms": str(2**62)}
    with kafkalog.UnifiedLog.open(tmp_path / "tomb-0", config) as log:
        log.append([Record(b"a", b"1", timestamp=1), Record(b"b", None, timestamp=2)])
        log.roll()
        now = T0
        log.compact_now(time_ms=now)
        assert [r[0] for r in read_all(log)] == [0, 1]
        (batch,) = scan_dir(log.path)
        assert batch.horizon == now + 5000
        assert [r[1] for r in batch.rows] == [1, 2], "record timestamps survive the horizon stamp"
        log.compact_now(time_ms=now + 4999)
        assert [r[0] for r in read_all(log)] == [0, 1]
        log.compact_now(time_ms=now + 5000)
        assert read_all(log) == [(0, 1, b"a", b"1")]


def test_tiny_map_progresses_one_key_per_pass(tmp_path):
    """testPartialSegmentClean through Python: a map holding one key cleans in one pass per
    distinct key of the dirty section, and the result equals a clean with a large map."""
    config = {"internal.segment.bytes": "2048", "cleanup.policy": "compact"}
    results = {}
    for name, size in [("tiny", 24 * 2), ("large", 1 << 20)]:
        with kafkalog.UnifiedLog.open(tmp_path / f"{name}-0", config) as log:
            rng = random.Random(5)
            for i in range(60):
                log.append([Record(b"k%d" % rng.randrange(6), b"v%d" % i, timestamp=T0 + i)])
            log.roll()
            result = log.compact_now(dedupe_buffer_size=size, time_ms=T0)
            results[name] = (read_all(log), len(result.passes), result.end_offset)
    assert results["tiny"][0] == results["large"][0]
    assert results["large"][1] == 1 and results["tiny"][1] > 1
    assert results["tiny"][2] == results["large"][2] == 60
