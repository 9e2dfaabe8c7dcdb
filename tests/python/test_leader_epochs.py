"""The leader epoch cache from Python: ``epoch_entries``, ``latest_epoch`` and
``end_offset_for`` on a standalone log and on a LogManager's, how appends, truncation and
``delete_records`` change them, the ``leader-epoch-checkpoint`` they are persisted to, read-only
opens that write nothing, and a stale leader refused with FencedLeaderEpochError."""

from __future__ import annotations

import pickle

import pytest

import kafkalog
from kafkalog import EpochEntry, LogManager, OffsetAndEpoch, Record, UnifiedLog, batches, checkpoints
from kafkalog.exceptions import FencedLeaderEpochError, InvalidArgumentError

TS = 1_700_000_000_000


def values(n: int, tag: str) -> list[Record]:
    return [Record(key=b"k", value=f"{tag}{i}".encode(), timestamp=TS + i) for i in range(n)]


def test_epochs_follow_appends_truncation_and_log_start(tmp_path):
    with UnifiedLog.open(tmp_path / "orders-0") as log:
        assert (log.epoch_entries, log.latest_epoch, log.end_offset_for(0)) == ([], None, None)
        log.append(values(3, "a"), leader_epoch=1)
        log.append(values(2, "b"), leader_epoch=1)
        log.append(values(4, "c"), leader_epoch=4)
        assert log.epoch_entries == [EpochEntry(1, 0), EpochEntry(4, 5)]
        assert log.latest_epoch == 4
        # Kafka's endOffsetForEpoch: an older epoch ends where the next begins, the latest at
        # the log end, one in between belongs to the epoch below it.
        assert log.end_offset_for(1) == OffsetAndEpoch(offset=5, leader_epoch=1)
        assert log.end_offset_for(3) == OffsetAndEpoch(5, 1)
        assert log.end_offset_for(4) == (9, 4)
        assert log.end_offset_for(0) == OffsetAndEpoch(0, 0)
        assert log.end_offset_for(5) is None and log.end_offset_for(-1) is None
        ckpt = tmp_path / "orders-0" / "leader-epoch-checkpoint"
        assert ckpt.read_text() == "0\n2\n1 0\n4 5\n"

        log.delete_records(2)
        assert log.epoch_entries == [EpochEntry(1, 2), EpochEntry(4, 5)]
        log.truncate_to(5)
        assert log.epoch_entries == [EpochEntry(1, 2)]
        assert checkpoints.read_leader_epoch_checkpoint(ckpt) == [EpochEntry(1, 2)]

        with pytest.raises(FencedLeaderEpochError, match=r"leader epoch 0 .* latest leader epoch 1"):
            log.append(values(1, "d"), leader_epoch=0)
        assert log.log_end_offset == 5
        log.truncate_fully_and_start_at(40)
        assert (log.epoch_entries, ckpt.read_text()) == ([], "0\n0\n")


def test_follower_batches_and_results_are_plain_values(tmp_path):
    with UnifiedLog.open(tmp_path / "orders-1") as log:
        log.append_as_follower(batches.build(0, values(2, "x"), partition_leader_epoch=7))
        log.append_as_follower(batches.build(2, values(2, "y"), partition_leader_epoch=9))
        log.append_as_follower(batches.build(4, values(1, "z")))  # no epoch: nothing assigned
        entries = log.epoch_entries
        result = log.end_offset_for(7)
    assert entries == [EpochEntry(7, 0), EpochEntry(9, 2)]
    assert result == OffsetAndEpoch(2, 7)
    assert pickle.loads(pickle.dumps(result)) == result
    offset, epoch = result
    assert (offset, epoch) == (2, 7) and kafkalog.OffsetAndEpoch is OffsetAndEpoch


def test_read_only_opens_write_nothing_and_managed_logs_expose_epochs(tmp_path):
    with LogManager([tmp_path], scheduler=False) as m:
        log = m.create_log("orders", 0)
        log.append(values(2, "a"), leader_epoch=3)
        assert m.get_log("orders", 0).epoch_entries == [EpochEntry(3, 0)]
    ckpt = tmp_path / "orders-0" / "leader-epoch-checkpoint"
    ckpt.write_text("0\n2\n3 0\n5 2\n")  # an entry past the log end, as a crash can leave
    before = ckpt.stat().st_mtime_ns
    with UnifiedLog.open(tmp_path / "orders-0", read_only=True) as reader:
        assert reader.epoch_entries == [EpochEntry(3, 0)]
        assert reader.latest_epoch == 3
    assert ckpt.read_text() == "0\n2\n3 0\n5 2\n" and ckpt.stat().st_mtime_ns == before


def test_bad_epoch_arguments_and_malformed_checkpoint(tmp_path):
    with UnifiedLog.open(tmp_path / "orders-2") as log:
        with pytest.raises(InvalidArgumentError, match="leader_epoch"):
            log.end_offset_for(-2)
        with pytest.raises(InvalidArgumentError, match="leader_epoch"):
            log.end_offset_for(2**31)
    ckpt = tmp_path / "orders-2" / "leader-epoch-checkpoint"
    ckpt.write_text("0\n1\n3 zero\n")
    with pytest.raises(kafkalog.exceptions.IllegalStateError, match=r"leader-epoch-checkpoint at line 3"):
        UnifiedLog.open(tmp_path / "orders-2")


def test_appends_default_to_the_latest_epoch_and_a_stale_one_is_refused(tmp_path):
    """Without leader_epoch an append uses the log's latest epoch (0 in a log with none), so a
    partition a broker wrote in a later epoch takes appends as it is; an explicit older epoch is
    a stale leader's and writes nothing."""
    with UnifiedLog.open(tmp_path / "orders-0") as log:
        log.append(values(2, "a"))
        assert log.epoch_entries == [EpochEntry(0, 0)]
        log.append(values(2, "b"), leader_epoch=7)
        log.append(values(3, "c"))
        log.append_batch(batches.build(0, values(1, "d")))
        # Stamped 7, not 0: an append in epoch 0 after epoch 7 would have been refused.
        assert log.epoch_entries == [EpochEntry(0, 0), EpochEntry(7, 2)]
        with pytest.raises(FencedLeaderEpochError, match="older than the partition's latest leader epoch 7"):
            log.append(values(1, "e"), leader_epoch=6)
        assert log.log_end_offset == 8
