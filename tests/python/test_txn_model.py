"""Model-based test of transactions on one writable ``UnifiedLog`` (issue 14, "A model test").

A hypothesis state machine interleaves idempotent producers' leader appends
(``append_batch`` with each producer's next sequence), transactional producers' batches and
their COMMIT/ABORT markers (``append_txn_marker``), plain records (``append``), rolls,
truncations to a batch boundary and close + reopen, on tiny segments. A plain Python model knows
every offset the log holds: each data record's key, value and producer, each batch, each
transaction (its producer, first offset, marker offset and fate: committed, aborted or open) and
each producer's next sequence.

Truncation mirrors Kafka (``UnifiedLog.truncateTo``: producer state reloaded from the log up to
the truncation point): every offset at or after the target goes; a transaction whose first
offset goes is gone; one whose first offset stays but whose marker goes is open again; a
producer's next sequence follows its last surviving batch (a producer with none left starts
again at 0, as an unknown producer may).

Invariants after every step (a standalone log's high watermark follows its log end):

- ``records(isolation="read_committed")`` is exactly the committed and non-transactional data
  records below the model's LSO (no aborted record, no control record);
- ``records()`` (read_uncommitted) is every data record, transactional or not, fate aside;
- ``last_stable_offset`` is the first offset of the earliest open transaction, else the high
  watermark; ``first_unstable_offset`` that first offset or None; ``ongoing_transactions`` the
  open transactions by first offset;
- ``aborted_transactions()`` is exactly the aborted transactions (producer, first offset,
  ABORT marker offset, and the LSO right after the marker: the earliest other open
  transaction's first offset, else the marker offset + 1, as ``ProducerStateManager.
  lastStableOffset(completedTxn)``).

Cleans (``compact_now`` on a ``cleanup.policy=compact`` log, keys drawn from a few) follow
Kafka's cleaner (``LogCleaner.cleanSegments`` with ``CleanedTransactionMetadata``): the clean
covers the log start up to min(LSO, active segment base) rounded down to a segment base, and
must report that bound; below it every
aborted record goes, and of the rest (committed and non-transactional alike) only the latest
record of each key stays. Records at or above the bound are untouched. ``.txnindex`` entries
whose ABORT marker lies below a clean's bound may go with the data they described (Kafka
rewrites the entry only while it still covers data); no entry is ever invented, and entries at
or above every bound stay.

After a clean, truncations stay at or above the log end of the time of that clean: below it
Kafka's reload replays cleaned segments whose batches the cleaner removed (it keeps only each
producer's last batch), so a producer's restored sequence depends on which snapshot the reload
starts from, which the model does not track.

Runs derandomized (conftest). KAFKALOG_SOAK=<n> multiplies the number of examples by n.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import kafkalog
from kafkalog import batches
from kafkalog.records import Record

SOAK = int(os.environ.get("KAFKALOG_SOAK", "1"))
T0 = 1_700_000_000_000
IDEMPOTENT = [1, 2]
TRANSACTIONAL = [11, 12, 13]
EPOCH = 0
KEYS = 5
DAY_MS = 24 * 60 * 60 * 1000

#: (offset, key, value) of one data record.
Row = tuple[int, bytes | None, bytes | None]


@dataclass
class Txn:
    producer_id: int
    first_offset: int
    marker: int | None = None  # the COMMIT/ABORT marker's offset; None while open
    committed: bool = False
    lso_after: int | None = None  # the LSO the ABORT's .txnindex entry records


@dataclass
class Batch:
    base: int
    last: int
    producer_id: int  # -1 for plain records and markers
    last_sequence: int | None  # None for a marker or a plain batch


@dataclass
class Model:
    rows: dict[int, tuple[bytes | None, bytes | None]] = field(default_factory=dict)
    txn_of: dict[int, Txn] = field(default_factory=dict)  # offset of a transactional record -> its txn
    batches: list[Batch] = field(default_factory=list)
    txns: list[Txn] = field(default_factory=list)  # every transaction still in the log, by first offset
    log_end: int = 0
    clean_floor: int = 0  # the log end at the latest clean: truncations stay at or above it
    clean_bound: int = 0  # the highest first-uncleanable offset of any clean so far

    def open_txn(self, pid: int) -> Txn | None:
        return next((t for t in self.txns if t.producer_id == pid and t.marker is None), None)

    def open_txns(self) -> list[Txn]:
        return sorted((t for t in self.txns if t.marker is None), key=lambda t: t.first_offset)

    def next_sequence(self, pid: int) -> int:
        seqs = [b.last_sequence for b in self.batches if b.producer_id == pid and b.last_sequence is not None]
        return seqs[-1] + 1 if seqs else 0

    def lso(self) -> int:
        opened = self.open_txns()
        return opened[0].first_offset if opened else self.log_end

    def committed_view(self) -> list[Row]:
        lso = self.lso()
        out = []
        for o in sorted(self.rows):
            if o >= lso:
                break
            t = self.txn_of.get(o)
            if t is None or t.committed:
                out.append((o, *self.rows[o]))
        return out

    def all_rows(self) -> list[Row]:
        return [(o, *self.rows[o]) for o in sorted(self.rows)]

    def clean(self, bound: int) -> None:
        """Kafka's cleaner over [log start, bound): aborted records go, then only the latest
        record of each key stays."""
        below = [o for o in sorted(self.rows) if o < bound]
        live = [o for o in below if not self._aborted(o)]
        latest = {self.rows[o][0]: o for o in live}
        dropped = [o for o in below if self._aborted(o) or latest[self.rows[o][0]] != o]
        event(f"clean dropped {'no' if not dropped else 'some'} records")
        for o in dropped:
            del self.rows[o]
        self.clean_floor = self.log_end
        self.clean_bound = max(self.clean_bound, bound)

    def _aborted(self, offset: int) -> bool:
        t = self.txn_of.get(offset)
        return t is not None and t.marker is not None and not t.committed

    def aborted(self) -> list[tuple[int, int, int, int]]:
        return sorted(
            (t.producer_id, t.first_offset, t.marker, t.lso_after)
            for t in self.txns
            if t.marker is not None and not t.committed and t.lso_after is not None
        )

    def truncate(self, target: int) -> None:
        if any(t.first_offset >= target for t in self.txns):
            event("truncation removed a transaction")
        if any(t.first_offset < target <= (t.marker if t.marker is not None else -1) for t in self.txns):
            event("truncation reopened a transaction")
        self.rows = {o: r for o, r in self.rows.items() if o < target}
        self.txn_of = {o: t for o, t in self.txn_of.items() if o < target}
        self.batches = [b for b in self.batches if b.base < target]
        self.txns = [t for t in self.txns if t.first_offset < target]
        for t in self.txns:
            if t.marker is not None and t.marker >= target:
                t.marker, t.committed, t.lso_after = None, False, None
        self.log_end = target


def _records(first: int, n: int, tag: str, value_len: int) -> list[Record]:
    """``n`` records from offset ``first``; keys come from a few (shared by every producer), so
    a clean has records to drop, and each value names its producer and offset."""
    return [
        Record(
            b"k%d" % ((first + i) * 7 % KEYS),
            b"%s-v%d-" % (tag.encode(), first + i) + b"x" * value_len,
            timestamp=T0 + first + i,
        )
        for i in range(n)
    ]


class TxnMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="txn-model-"))
        self.path = self.tmp / "txn-0"
        self.log: kafkalog.UnifiedLog | None = None
        self.model = Model()
        self.config: dict[str, str] = {}

    @initialize(segment_bytes=st.sampled_from([1024, 2048, 8192]))
    def open_log(self, segment_bytes: int) -> None:
        self.config = {
            "internal.segment.bytes": str(segment_bytes),
            "index.interval.bytes": "256",
            "cleanup.policy": "compact",
        }
        self.time_ms = T0
        self.log = kafkalog.UnifiedLog.open(self.path, self.config)

    def teardown(self) -> None:
        if self.log is not None:
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- writes -----------------------------------------------------------------------------

    def _producer_batch(self, pid: int, n: int, value_len: int, transactional: bool, codec: str) -> None:
        assert self.log is not None
        m = self.model
        first = m.log_end
        seq = m.next_sequence(pid)
        records = _records(first, n, f"p{pid}", value_len)
        raw = batches.build(
            0,
            records,
            compression=codec,
            producer_id=pid,
            producer_epoch=EPOCH,
            base_sequence=seq,
            transactional=transactional,
        )
        info = self.log.append_batch(raw)
        assert (info.first_offset, info.last_offset) == (first, first + n - 1)
        txn = None
        if transactional:
            txn = m.open_txn(pid)
            if txn is None:
                txn = Txn(pid, first)
                m.txns.append(txn)
        for i, r in enumerate(records):
            m.rows[first + i] = (r.key, r.value)
            if txn is not None:
                m.txn_of[first + i] = txn
        m.batches.append(Batch(first, first + n - 1, pid, seq + n - 1))
        m.log_end = first + n

    @rule(pid=st.sampled_from(IDEMPOTENT), n=st.integers(1, 6), value_len=st.integers(0, 40),
          codec=st.sampled_from(["none", "none", "gzip", "zstd"]))
    def idempotent_append(self, pid: int, n: int, value_len: int, codec: str) -> None:
        self._producer_batch(pid, n, value_len, False, codec)

    @rule(pid=st.sampled_from(TRANSACTIONAL), n=st.integers(1, 6), value_len=st.integers(0, 40),
          codec=st.sampled_from(["none", "none", "lz4"]))
    def transactional_append(self, pid: int, n: int, value_len: int, codec: str) -> None:
        self._producer_batch(pid, n, value_len, True, codec)

    @precondition(lambda self: bool(self.model.open_txns()))
    @rule(which=st.integers(0, 5), commit=st.booleans())
    def end_transaction(self, which: int, commit: bool) -> None:
        assert self.log is not None
        m = self.model
        opened = m.open_txns()
        txn = opened[which % len(opened)]
        marker = m.log_end
        info = self.log.append_txn_marker(txn.producer_id, EPOCH, commit=commit, coordinator_epoch=0)
        assert (info.first_offset, info.last_offset) == (marker, marker)
        txn.marker, txn.committed = marker, commit
        others = [t.first_offset for t in m.open_txns()]
        txn.lso_after = min(others, default=marker + 1)
        event(("commit" if commit else "abort") + (" with another transaction open" if others else ""))
        m.batches.append(Batch(marker, marker, -1, None))
        m.log_end = marker + 1

    @rule(n=st.integers(1, 5), value_len=st.integers(0, 30))
    def plain_append(self, n: int, value_len: int) -> None:
        assert self.log is not None
        m = self.model
        first = m.log_end
        records = _records(first, n, "plain", value_len)
        info = self.log.append(records)
        assert (info.first_offset, info.last_offset) == (first, first + n - 1)
        for i, r in enumerate(records):
            m.rows[first + i] = (r.key, r.value)
        m.batches.append(Batch(first, first + n - 1, -1, None))
        m.log_end = first + n

    @rule()
    def roll(self) -> None:
        assert self.log is not None
        self.log.roll()

    @precondition(lambda self: bool(self.model.batches))
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        """Truncates to a batch boundary (a batch's base offset, or the log end)."""
        assert self.log is not None
        floor = self.model.clean_floor
        bounds = sorted({b.base for b in self.model.batches if b.base >= floor} | {self.model.log_end})
        target = data.draw(st.sampled_from(bounds), label="truncate to")
        self.log.truncate_to(target)
        self.model.truncate(target)
        assert self.log.log_end_offset == target

    @rule(later=st.booleans())
    def compact(self, later: bool) -> None:
        """``compact_now``; ``later`` moves the clean's clock past ``delete.retention.ms`` (a
        day), so markers a first clean stamped may go in this one."""
        assert self.log is not None
        m = self.model
        if later:
            self.time_ms += 2 * DAY_MS
        bases = [s.base_offset for s in self.log.segments]
        result = self.log.compact_now(dedupe_buffer_size=1 << 20, time_ms=self.time_ms)
        # Kafka's LogCleanerManager: cleanable below min(LSO, active segment base), rounded down
        # to the base of the segment holding it (calculateCleanableBytes).
        uncleanable = min(m.lso(), bases[-1])
        bound = max(b for b in bases if b <= uncleanable)
        assert result.first_uncleanable_offset == bound, "the clean is bounded by the LSO and the active segment"
        if m.open_txns() and m.lso() < bases[-1]:
            event("clean bounded by an open transaction")
        m.clean(bound)

    @rule()
    def reopen(self) -> None:
        assert self.log is not None
        if self.model.open_txns():
            event("reopen with an open transaction")
        self.log.close()
        self.log = kafkalog.UnifiedLog.open(self.path, self.config)

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def matches_model(self) -> None:
        log, m = self.log, self.model
        if log is None:
            return
        assert log.log_end_offset == m.log_end
        assert log.high_watermark == m.log_end, "a standalone log's high watermark follows its log end"
        opened = m.open_txns()
        assert [(t.producer_id, t.first_offset) for t in log.ongoing_transactions] == [
            (t.producer_id, t.first_offset) for t in opened
        ]
        assert log.last_stable_offset == m.lso()
        assert log.end_offset("read_committed") == m.lso()
        assert log.first_unstable_offset == (opened[0].first_offset if opened else None)
        got_all = [(r.offset, r.key, r.value) for r in log.records()]
        assert got_all == m.all_rows(), "read_uncommitted differs from the model's data records"
        got_committed = [(r.offset, r.key, r.value) for r in log.records(isolation="read_committed")]
        assert got_committed == m.committed_view(), "read_committed differs from the model"
        aborted = sorted(
            (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset) for a in log.aborted_transactions()
        )
        expected = m.aborted()
        assert set(aborted) <= set(expected), "aborted_transactions has entries the model lacks"
        kept = [a for a in expected if a[2] >= m.clean_bound]
        assert set(kept) <= set(aborted), "an aborted transaction no clean reached is missing"
        assert len(set(aborted)) == len(aborted), "aborted_transactions repeats an entry"


TestTxnModel = TxnMachine.TestCase
TestTxnModel.settings = settings(max_examples=40 * SOAK, stateful_step_count=60, deadline=None)
