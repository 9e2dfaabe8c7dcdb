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


def test_producer_expiry_of_a_log_opened_alone(tmp_path: Path) -> None:
    """``producer_id_expiration_ms`` is the broker's producer.id.expiration.ms:
    ``remove_expired_producers(time_ms)`` forgets the producers idle that long with no open
    transaction (Kafka's removeExpiredProducers, expired at idle >= the setting); a producer
    with an open transaction stays until its marker."""
    with kafkalog.UnifiedLog.open(tmp_path / "t-0", producer_id_expiration_ms=500) as log:
        log.append_batch(batch(2, seq=0))  # last timestamp 1001
        log.append_batch(batch(1, seq=0, pid=PID + 1, transactional=True))  # 1000, left open
        log.remove_expired_producers(time_ms=1500)
        assert [p.producer_id for p in log.active_producers] == [PID, PID + 1], "idle 499 ms: kept"
        log.remove_expired_producers(time_ms=1501)
        assert [p.producer_id for p in log.active_producers] == [PID + 1], "idle 500 ms: expired, unless open"
        log.remove_expired_producers(time_ms=2**62)
        assert [p.producer_id for p in log.active_producers] == [PID + 1]
        log.append_txn_marker(PID + 1, 0, commit=True, coordinator_epoch=0)
        log.remove_expired_producers(time_ms=2**62)
        assert log.active_producers == []
        # The expired producer is unknown now: it may start again at any sequence's epoch 0.
        assert log.append_batch(batch(1, seq=0)).first_offset == 4


@pytest.mark.parametrize("name", ["producer_id_expiration_ms", "transaction_max_timeout_ms"])
@pytest.mark.parametrize("value", [0, -1, 2**31])
def test_producer_state_settings_are_checked_at_open(tmp_path: Path, name: str, value: int) -> None:
    with pytest.raises(ValueError, match=name):
        kafkalog.UnifiedLog.open(tmp_path / "t-0", **{name: value})
    assert not (tmp_path / "t-0").exists(), "nothing created"
