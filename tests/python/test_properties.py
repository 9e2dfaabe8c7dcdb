"""A Hypothesis state machine drives one UnifiedLog through appends, rolls, truncations,
delete_records, high-watermark moves, reads and close/reopen cycles, and checks it against a
plain in-memory model of Kafka's log after every step."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kafkalog import Record, UnifiedLog
from kafkalog.exceptions import OffsetOutOfRangeError

BASE_TS = 1_700_000_000_000
# Small segments and indexes, so appends roll often; every append (at most ~1.4 KB) still fits a
# segment, as Kafka requires.
CONFIG = {"internal.segment.bytes": 2000, "index.interval.bytes": 64, "segment.index.bytes": 1024}

optional_bytes = st.one_of(st.none(), st.binary(max_size=40))
header = st.tuples(st.text(max_size=6), optional_bytes)
record = st.builds(
    Record,
    key=optional_bytes,
    value=optional_bytes,
    headers=st.lists(header, max_size=2).map(tuple),
    timestamp=st.integers(BASE_TS, BASE_TS + 10_000),
)


@dataclass
class Model:
    """What Kafka's log holds: every stored record by offset, the batch bounds, and the offsets."""

    records: dict[int, Record] = field(default_factory=dict)
    batches: list[tuple[int, int]] = field(default_factory=list)  # (first, last) per append
    log_start: int = 0
    # Base offset of the first segment: where a reopened standalone log starts (it keeps no
    # log-start-offset-checkpoint; LogManager does).
    first_base: int = 0
    log_end: int = 0
    hw: int = 0
    hw_follows: bool = True

    def visible(self, start: int, end: int) -> list[tuple]:
        return [
            (o, self.records[o].timestamp, self.records[o].key, self.records[o].value, tuple(self.records[o].headers))
            for o in range(max(start, self.log_start), end)
        ]

    def boundaries(self) -> list[int]:
        return [first for first, _ in self.batches] + [self.log_end]


def as_rows(recs) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in recs]


class UnifiedLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="kafkalog-sm-"))
        self.path = self.tmp / "machine-0"
        self.model = Model()
        self.log: UnifiedLog | None = None

    @initialize()
    def open_log(self) -> None:
        self.log = UnifiedLog.open(self.path, CONFIG)

    def teardown(self) -> None:
        if self.log is not None:
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- rules -------------------------------------------------------------------------------

    @rule(recs=st.lists(record, min_size=1, max_size=6), codec=st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]))
    def append(self, recs, codec):
        m = self.model
        info = self.log.append(recs, compression=codec, batch_size=1 << 20)
        assert (info.first_offset, info.last_offset) == (m.log_end, m.log_end + len(recs) - 1)
        assert info.record_count == len(recs) and info.batch_count == 1
        assert info.max_timestamp == max(r.timestamp for r in recs)
        assert info.log_start_offset == m.log_start
        for i, r in enumerate(recs):
            m.records[m.log_end + i] = r
        m.batches.append((m.log_end, m.log_end + len(recs) - 1))
        m.log_end += len(recs)
        if m.hw_follows:
            m.hw = m.log_end

    @rule()
    def roll(self):
        assert self.log.roll() == self.model.log_end
        assert self.log.segments[-1].base_offset == self.model.log_end

    @rule(data=st.data())
    def truncate_to(self, data):
        # Kafka truncates at batch boundaries (leader-epoch ends, high watermarks).
        m = self.model
        target = data.draw(st.sampled_from(m.boundaries() + [m.log_end + 3]), label="target")
        changed = self.log.truncate_to(target)
        assert changed == (target < m.log_end)
        if not changed:
            return
        for o in [o for o in m.records if o >= target]:
            del m.records[o]
        m.batches = [b for b in m.batches if b[0] < target]
        m.log_end = target
        m.hw = min(m.hw, target)
        m.log_start = min(m.log_start, target)
        m.first_base = min(m.first_base, target)

    @rule(data=st.data())
    def delete_records(self, data):
        m = self.model
        target = data.draw(st.integers(max(0, m.log_start - 2), m.hw + 2), label="target")
        if target > m.hw:
            with pytest.raises(OffsetOutOfRangeError):
                self.log.delete_records(target)
            return
        m.log_start = max(m.log_start, target)
        assert self.log.delete_records(target) == m.log_start

    @rule(data=st.data())
    def set_high_watermark(self, data):
        m = self.model
        target = data.draw(st.sampled_from([b for b in m.boundaries() if b >= m.log_start] + [m.log_end + 5]))
        m.hw = min(max(target, m.log_start), m.log_end)
        m.hw_follows = False
        assert self.log.set_high_watermark(target) == m.hw

    @rule()
    def reopen(self):
        self.log.close()
        self.log = UnifiedLog.open(self.path, CONFIG)
        # A reopened log's high watermark starts at its log end again and follows it; its log
        # start offset is its first segment's base offset.
        self.model.log_start = self.model.first_base
        self.model.hw = self.model.log_end
        self.model.hw_follows = True

    @rule()
    def flush(self):
        self.log.flush()
        assert self.log.recovery_point == self.model.log_end

    @rule(data=st.data())
    def read(self, data):
        m = self.model
        offset = data.draw(st.integers(max(0, m.log_start - 1), m.log_end + 1), label="offset")
        max_bytes = data.draw(st.sampled_from([1, 200, 1 << 20]), label="max_bytes")
        if offset < m.log_start or offset > m.log_end:
            with pytest.raises(OffsetOutOfRangeError):
                self.log.read(offset, max_bytes)
            return
        result = self.log.read(offset, max_bytes)
        got = as_rows(result.records)
        if offset < m.hw:
            assert got, "min_one_message: at least the batch holding the offset"
            assert got == m.visible(offset, offset + len(got))
            assert got[-1][0] < m.hw
        else:
            assert got == []
        # A read stays within the segment holding the offset, so it returns a prefix.
        tail = as_rows(self.log.read(offset, 1 << 20, "log_end").records)
        assert tail == m.visible(offset, m.log_end)[: len(tail)]
        assert bool(tail) == (offset < m.log_end)

    @rule(data=st.data())
    def read_only_view(self, data):
        m = self.model
        start = data.draw(st.integers(m.log_start, m.log_end), label="start")
        with UnifiedLog.open(self.path, read_only=True) as ro:
            assert ro.log_end_offset == m.log_end
            assert as_rows(ro.records(start)) == m.visible(start, m.log_end)

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def offsets_match(self):
        m, lg = self.model, self.log
        if lg is None:
            return
        got = (lg.log_start_offset, lg.high_watermark, lg.log_end_offset)
        assert got == (m.log_start, m.hw, m.log_end), "(log start, high watermark, log end) differ from the model"

    @invariant()
    def records_match(self):
        m, lg = self.model, self.log
        if lg is None:
            return
        assert as_rows(lg.records()) == m.visible(m.log_start, m.hw)
        assert lg.to_arrow(isolation="log_end").column("offset").to_pylist() == list(range(m.log_start, m.log_end))

    @invariant()
    def segments_match(self):
        m, lg = self.model, self.log
        if lg is None:
            return
        segs = lg.segments
        bases = [s.base_offset for s in segs]
        assert bases == sorted(set(bases))
        assert bases[0] <= m.log_start and bases[-1] <= m.log_end
        assert sum(s.record_count for s in segs) == len(m.records)
        assert sum(s.size for s in segs) == lg.size_in_bytes

    @precondition(lambda self: self.log is not None and self.model.records)
    @invariant()
    def max_timestamp_lookup(self):
        # ListOffsets MAX_TIMESTAMP: the first record holding the largest timestamp. (Kafka does
        # not filter by the log start offset here, so only the unambiguous case is checked.)
        m = self.model
        top = max(r.timestamp for r in m.records.values())
        holders = sorted(o for o, r in m.records.items() if r.timestamp == top)
        found = self.log.offset_for_timestamp(-3)
        if holders[0] >= m.log_start:
            assert found is not None
            assert (found.timestamp, found.offset) == (top, holders[0])


UnifiedLogMachine.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=30,
    derandomize=True,
    deadline=None,
    database=None,
    # The explain phase replays a failure many times over; the shrunk steps say enough.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)
TestUnifiedLogMachine = UnifiedLogMachine.TestCase
