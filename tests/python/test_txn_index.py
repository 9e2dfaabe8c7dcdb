"""UnifiedLog.aborted_transactions: read-only introspection of the segments' .txnindex files
(Kafka's TransactionIndex, 34-byte AbortedTxn entries), as Kafka's broker writes them and as
kafkalog's cleaner writes them through the cleaned segment's index."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import pytest

import kafkalog
from kafkalog import AbortedTransaction, batches
from kafkalog.exceptions import CorruptIndexError, InvalidArgumentError
from kafkalog.records import Record


def entry(producer_id: int, first: int, last: int, lso: int, version: int = 0) -> bytes:
    """One .txnindex entry in Kafka's layout: version int16, then four int64s, big-endian."""
    return struct.pack(">hqqqq", version, producer_id, first, last, lso)


def txnindex(log_dir: Path, base: int) -> Path:
    return log_dir / f"{base:020d}.txnindex"


def three_segments(log_dir: Path) -> None:
    """Segments at 0, 10 and 20 holding ten records each."""
    with kafkalog.UnifiedLog.open(log_dir) as log:
        for n in range(3):
            log.append([Record(b"k", b"v%d" % i, timestamp=1000 + i) for i in range(10)], batch_size=1)
            if n < 2:
                log.roll()


def test_aborted_transactions_of_indexes_written_by_a_broker(tmp_path: Path) -> None:
    log_dir = tmp_path / "t-0"
    three_segments(log_dir)
    # As Kafka's broker leaves a partition: an index per segment, most of them empty.
    txnindex(log_dir, 0).write_bytes(entry(1, 2, 5, 6))
    txnindex(log_dir, 10).write_bytes(entry(2, 8, 12, 11) + entry(3, 11, 15, 16))
    txnindex(log_dir, 20).write_bytes(b"")
    t1, t2, t3 = AbortedTransaction(1, 2, 5, 6), AbortedTransaction(2, 8, 12, 11), AbortedTransaction(3, 11, 15, 16)
    with kafkalog.UnifiedLog.open(log_dir, read_only=True) as log:
        assert log.aborted_transactions() == [t1, t2, t3]
        assert log.aborted_transactions(13, 16) == [t3]
        assert log.aborted_transactions(9, 11) == [t2]
        assert log.aborted_transactions(6, 8) == []
        assert log.aborted_transactions(20, 10) == []
        with pytest.raises(InvalidArgumentError, match="start"):
            log.aborted_transactions(-1, 5)
    with kafkalog.UnifiedLog.open(log_dir) as log:
        assert log.truncate_to(12)
        assert log.aborted_transactions() == [t1], "truncation cuts the entries of markers at or above 12"
    assert txnindex(log_dir, 10).read_bytes() == b""


def test_aborted_transaction_is_a_frozen_value() -> None:
    t = AbortedTransaction(producer_id=7, first_offset=0, last_offset=2, last_stable_offset=3)
    assert (t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) == (7, 0, 2, 3)
    assert t == AbortedTransaction(7, 0, 2, 3) != AbortedTransaction(7, 0, 2, 4)
    assert hash(t) == hash(AbortedTransaction(7, 0, 2, 3))
    assert repr(t) == "AbortedTransaction(producer_id=7, first_offset=0, last_offset=2, last_stable_offset=3)"
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(t, protocol=protocol)) == t
    with pytest.raises(AttributeError):
        t.producer_id = 8  # type: ignore[misc]
    assert AbortedTransaction is kafkalog._native.AbortedTransaction and AbortedTransaction.__module__ == "kafkalog"


def test_an_entry_of_an_unknown_version_is_named(tmp_path: Path) -> None:
    log_dir = tmp_path / "t-0"
    three_segments(log_dir)
    txnindex(log_dir, 10).write_bytes(entry(2, 8, 12, 11) + entry(3, 11, 15, 16, version=3))
    with kafkalog.UnifiedLog.open(log_dir, read_only=True) as log:
        with pytest.raises(CorruptIndexError, match=r"00000000000000000010\.txnindex.*version 3 at position 34"):
            log.aborted_transactions()


def cleaned_transactional_log(log_dir: Path) -> kafkalog.UnifiedLog:
    """A compacted log with an aborted transaction of producer 7 (offsets 0-1, ABORT marker at
    2) then plain records, cleaned once: the aborted data goes, the marker and its index entry
    stay (written by kafkalog into the cleaned segment's .txnindex)."""
    log = kafkalog.UnifiedLog.open(log_dir, {"cleanup.policy": "compact", "delete.retention.ms": 1000})
    txn = [Record(b"a", b"1", timestamp=1000), Record(b"b", b"2", timestamp=1000)]
    log.append_as_follower(batches.build(0, txn, producer_id=7, producer_epoch=0, base_sequence=0, transactional=True))
    log.append_as_follower(batches.end_txn_marker(2, 1000, producer_id=7, producer_epoch=0, commit=False))
    log.append_as_follower(batches.build(3, [Record(b"c", b"3", timestamp=1000), Record(b"d", b"4", timestamp=1000)]))
    log.roll()
    log.compact_now(time_ms=10 * 86_400_000, dedupe_buffer_size=1 << 16)
    return log


def test_the_cleaner_writes_the_index_of_the_segment_it_cleans(tmp_path: Path) -> None:
    log_dir = tmp_path / "c-0"
    with cleaned_transactional_log(log_dir) as log:
        assert [r.offset for r in log.records()] == [3, 4]
        assert log.aborted_transactions() == [AbortedTransaction(7, 0, 2, 3)]
    assert txnindex(log_dir, 0).read_bytes() == entry(7, 0, 2, 3)
    assert not list(log_dir.glob("*.cleaned")) and not list(log_dir.glob("*.swap"))
