"""UnifiedLog's producer state from Python: the producers and transactions the log knows, its
last stable offset, coordinator markers, and the kafkalog.exceptions class of each refusal."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import kafkalog
from kafkalog import ActiveProducer, OngoingTransaction, batches
from kafkalog.exceptions import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from kafkalog.records import Record

PID = 42


def batch(n: int, *, seq: int, epoch: int = 0, pid: int = PID, transactional: bool = False) -> bytes:
    records = [Record(b"k", b"v%d" % i, timestamp=1000 + i) for i in range(n)]
    return batches.build(
        0, records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional
    )


def test_producers_transactions_and_the_last_stable_offset(tmp_path: Path) -> None:
    with kafkalog.UnifiedLog.open(tmp_path / "t-0") as log:
        assert (log.active_producers, log.ongoing_transactions) == ([], [])
        assert (log.first_unstable_offset, log.last_stable_offset) == (None, 0)
        log.append_batch(batch(2, seq=0))
        log.append_batch(batch(3, seq=0, pid=PID + 1, transactional=True))
        assert log.ongoing_transactions == [OngoingTransaction(PID + 1, 2)]
        assert (log.first_unstable_offset, log.last_stable_offset) == (2, 2)
        producers = log.active_producers
        assert producers[0] == ActiveProducer(PID, 0, 1, 1, -1, None, 1001)
        assert producers[1].current_txn_first_offset == 2
        assert pickle.loads(pickle.dumps(producers[1])) == producers[1]
        info = log.append_txn_marker(PID + 1, 0, commit=False, coordinator_epoch=3)
        assert (info.first_offset, info.last_offset) == (5, 5)
        assert (log.first_unstable_offset, log.last_stable_offset) == (None, 6)
        assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.aborted_transactions()] == [(PID + 1, 2, 5)]
        assert log.active_producers[1].coordinator_epoch == 3


def test_a_duplicate_batch_returns_its_original_offsets(tmp_path: Path) -> None:
    with kafkalog.UnifiedLog.open(tmp_path / "t-0") as log:
        first = log.append_batch(batch(3, seq=0))
        again = log.append_batch(batch(3, seq=0))
        assert (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset) == (0, 2)
        assert log.log_end_offset == 3


def test_each_refusal_maps_to_its_exception(tmp_path: Path) -> None:
    with kafkalog.UnifiedLog.open(tmp_path / "t-0") as log:
        log.append_batch(batch(2, seq=0, epoch=1))
        with pytest.raises(OutOfOrderSequenceError, match="producer"):
            log.append_batch(batch(1, seq=7, epoch=1))
        with pytest.raises(InvalidProducerEpochError):
            log.append_batch(batch(1, seq=2, epoch=0))
        log.append_batch(batch(1, seq=2, epoch=1, transactional=True))
        with pytest.raises(InvalidTxnStateError):
            log.append_batch(batch(1, seq=3, epoch=1))
        log.append_txn_marker(PID, 1, commit=True, coordinator_epoch=5)
        with pytest.raises(TransactionCoordinatorFencedError):
            log.append_txn_marker(PID, 1, commit=True, coordinator_epoch=4)
        with pytest.raises(InvalidProducerEpochError):
            log.append_txn_marker(PID, 0, commit=True, coordinator_epoch=5)
        assert log.log_end_offset == 4
