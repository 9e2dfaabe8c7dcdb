"""read_committed on every read API: ``read`` (its ``records`` and ``aborted_transactions``; its
``records_bytes`` stay the raw batches), ``records``, ``iter_arrow`` and ``to_arrow`` leave out
the records of aborted transactions and every control record, as a Kafka consumer with
``isolation.level=read_committed`` does (Kafka's ``FetcherTest`` cases, through the Python
surface), and ``end_offset`` gives each isolation's bound.

The partitions are built as a follower receives them (``append_as_follower`` of transactional
batches and COMMIT/ABORT markers); the appends write each segment's ``.txnindex``, which must
hold exactly the entries Kafka's broker would have written there."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest

import kafkalog
from kafkalog import AbortedTransaction, batches
from kafkalog.records import Record

T0 = 1_700_000_000_000


@dataclass
class TxnDir:
    """A partition directory being written, with the read_committed model of it."""

    path: Path
    log: kafkalog.UnifiedLog
    open_txns: dict[int, int] = field(default_factory=dict)
    pending: dict[int, list[int]] = field(default_factory=dict)
    visible: list[int] = field(default_factory=list)
    # (segment base, aborted transaction) in marker order.
    aborted: list[tuple[int, AbortedTransaction]] = field(default_factory=list)

    def data(self, producer_id: int, n: int, *, transactional: bool = True, compression: str = "none") -> None:
        base = self.log.log_end_offset
        records = [Record(f"{producer_id}-{base + i}".encode(), b"v", timestamp=T0 + base + i) for i in range(n)]
        pid = producer_id if transactional or producer_id >= 0 else -1
        raw = batches.build(
            base,
            records,
            compression=compression,
            producer_id=pid,
            producer_epoch=0 if pid >= 0 else -1,
            base_sequence=0 if pid >= 0 else -1,
            transactional=transactional,
        )
        self.log.append_as_follower(raw)
        offsets = list(range(base, base + n))
        if transactional:
            self.open_txns.setdefault(producer_id, base)
            self.pending.setdefault(producer_id, []).extend(offsets)
        else:
            self.visible.extend(offsets)

    def end(self, producer_id: int, commit: bool) -> None:
        offset = self.log.log_end_offset
        self.log.append_as_follower(batches.end_txn_marker(offset, T0, producer_id=producer_id, producer_epoch=0, commit=commit))
        first = self.open_txns.pop(producer_id, None)
        records = self.pending.pop(producer_id, [])
        if commit:
            self.visible.extend(records)
        elif first is not None:
            lso = min(self.open_txns.values(), default=offset + 1)
            segment = self.log.segments[-1].base_offset
            self.aborted.append((segment, AbortedTransaction(producer_id, first, offset, lso)))

    def close(self) -> None:
        """Closes the log; its .txnindex files must be the broker's, byte for byte."""
        self.log.close()
        by_segment: dict[int, bytes] = {}
        for base, t in self.aborted:
            entry = struct.pack(">hqqqq", 0, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
            by_segment[base] = by_segment.get(base, b"") + entry
        written = {int(f.name.split(".")[0]): f.read_bytes() for f in self.path.glob("*.txnindex")}
        assert written == by_segment

    def expected(self, start: int = 0, end: int | None = None) -> list[int]:
        return sorted(o for o in self.visible if o >= start and (end is None or o < end))


def build(path: Path) -> TxnDir:
    """Two transactional producers interleaved with a plain one, transactions committed and
    aborted, one aborted transaction across segments, a duplicate ABORT, a gzip batch; every
    transaction decided (so the high watermark is a stable offset today)."""
    t = TxnDir(path, kafkalog.UnifiedLog.open(path))
    t.data(1, 2)  # 0-1 committed
    t.data(2, 1)  # 2 aborted
    t.end(1, commit=True)  # 3
    t.data(-1, 2, transactional=False)  # 4-5
    t.data(2, 1, compression="gzip")  # 6
    t.log.roll()
    t.data(1, 1)  # 7 aborted
    t.end(2, commit=False)  # 8: producer 2's transaction 2-6 aborted in the second segment
    t.end(2, commit=False)  # 9: duplicate ABORT, nothing open
    t.data(2, 3)  # 10-12 committed
    t.data(1, 1)  # 13
    t.end(1, commit=False)  # 14
    t.end(2, commit=True)  # 15
    t.data(-1, 1, transactional=False)  # 16
    t.close()
    assert t.expected() == [0, 1, 4, 5, 10, 11, 12, 16]
    return t


def keys(records: list[kafkalog.ConsumerRecord]) -> list[int]:
    return [r.offset for r in records]


@pytest.fixture
def txn(tmp_path: Path) -> TxnDir:
    return build(tmp_path / "txn-0")


@pytest.mark.parametrize("read_only", [True, False])
def test_records_and_arrow_leave_out_aborted_and_control_records(txn: TxnDir, read_only: bool) -> None:
    with kafkalog.UnifiedLog.open(txn.path, read_only=read_only) as log:
        end = log.log_end_offset
        if not read_only:
            log.set_high_watermark(end)
        for start in range(end + 1):
            want = txn.expected(start)
            assert keys(list(log.records(start, isolation="read_committed"))) == want, start
            table = log.to_arrow(start, isolation="read_committed")
            assert table.column("offset").to_pylist() == want, start
            # Small chunks: chunks of only aborted or control records move on.
            chunks = list(log.iter_arrow(start, isolation="read_committed", max_chunk_bytes=1))
            assert [o for c in chunks for o in c.column(4).to_pylist()] == want, start
        # read_uncommitted still sees the aborted records (never the control ones).
        assert keys(list(log.records())) == [0, 1, 2, 4, 5, 6, 7, 10, 11, 12, 13, 16]
        rows = log.to_arrow(isolation="read_committed").to_pylist()
        assert all(r["key"].decode().endswith(f"-{r['offset']}") and r["value"] == b"v" for r in rows)


def test_read_returns_raw_batches_and_the_aborted_transactions(txn: TxnDir) -> None:
    with kafkalog.UnifiedLog.open(txn.path, read_only=True) as log:
        committed = log.read(0, isolation="read_committed")
        uncommitted = log.read(0)
        # The bytes are what a fetch returns; the decoded records are what a consumer keeps.
        assert committed.records_bytes == uncommitted.records_bytes
        assert keys(committed.records) == txn.expected(0, committed.next_offset)
        assert keys(uncommitted.records) == [0, 1, 2, 4, 5, 6]
        assert committed.aborted_transactions == [AbortedTransaction(2, 2, 8, 7)]
        assert uncommitted.aborted_transactions is None
        assert log.read(0, isolation="log_end").aborted_transactions is None
        second = log.read(committed.next_offset, isolation="read_committed")
        assert keys(second.records) == txn.expected(committed.next_offset, second.next_offset)
        # Kafka's fetch returns every aborted transaction whose marker is in or after the fetch
        # and which starts before its end: 2's (marker at 8) and 1's (7 to 14).
        assert second.aborted_transactions == [AbortedTransaction(2, 2, 8, 7), AbortedTransaction(1, 7, 14, 10)]
        # One batch per fetch: the transaction begun before the fetch is still dropped.
        result = log.read(6, max_bytes=1, isolation="read_committed")
        assert keys(result.records) == [] and result.next_offset == 7
        assert result.aborted_transactions == [AbortedTransaction(2, 2, 8, 7)]
        at_end = log.read(log.log_end_offset, isolation="read_committed")
        assert at_end.records_bytes == b"" and at_end.aborted_transactions == []


def test_end_offset_per_isolation(txn: TxnDir) -> None:
    with kafkalog.UnifiedLog.open(txn.path) as log:
        log.set_high_watermark(10)
        assert log.end_offset() == log.end_offset("read_uncommitted") == 10
        assert log.end_offset("log_end") == 17
        # The last stable offset never passes the high watermark.
        assert log.end_offset("read_committed") <= 10
        assert keys(list(log.records(isolation="read_committed"))) == txn.expected(0, log.end_offset("read_committed"))
        assert log.to_arrow(isolation="read_committed").column("offset").to_pylist() == txn.expected(
            0, log.end_offset("read_committed")
        )
        with pytest.raises(kafkalog.InvalidArgumentError, match="isolation"):
            log.end_offset("bogus")


def test_a_log_without_transactions_reads_the_same(tmp_path: Path) -> None:
    with kafkalog.UnifiedLog.open(tmp_path / "plain-0") as log:
        log.append([Record(b"k%d" % i, b"v", timestamp=T0) for i in range(20)], batch_size=100)
        committed = log.to_arrow(isolation="read_committed")
        assert committed.equals(log.to_arrow())
        assert isinstance(committed, pa.Table) and committed.num_rows == 20
