"""kafkalog.batches: raw batches with producer, transaction and delete-horizon fields."""

from __future__ import annotations

import pytest

import kafkalog
from kafkalog import Record, batches
from kafkalog.exceptions import InvalidRecordError


def test_follower_append_of_built_batches_and_markers(tmp_path):
    data = batches.build(
        0,
        [Record(b"k", b"v", (("h", None),), 1000), Record(None, None, (), 1001)],
        compression="gzip",
        producer_id=9,
        producer_epoch=2,
        base_sequence=0,
        transactional=True,
        partition_leader_epoch=4,
        delete_horizon_ms=5000,
    )
    marker = batches.end_txn_marker(2, 1002, producer_id=9, producer_epoch=2, commit=False, coordinator_epoch=7)
    # decode_batches sees the control record; reads leave it out.
    rows = kafkalog.decode_batches(data + marker)
    assert [(o, ts, k, v, c) for o, ts, _, k, v, _, c in rows] == [
        (0, 1000, b"k", b"v", False),
        (1, 1001, None, None, False),
        (2, 1002, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x07", True),
    ]
    with kafkalog.UnifiedLog.open(tmp_path / "t-0") as log:
        log.append_as_follower(data + marker)
        assert log.log_end_offset == 3
        assert [(r.offset, r.key, r.headers) for r in log.records()] == [(0, b"k", (("h", None),)), (1, None, ())]
        raw = log.read(0).records_bytes
    assert raw[22] & 0x40, "the delete-horizon attribute bit is set"
    assert raw[22] & 0x10, "the transactional bit is set"
    assert int.from_bytes(raw[27:35], "big") == 5000, "baseTimestamp holds the horizon"


def test_build_rejects_missing_timestamps_and_empty_batches():
    with pytest.raises(ValueError, match="timestamp"):
        batches.build(0, [Record(b"k", b"v")])
    with pytest.raises(InvalidRecordError):
        batches.build(0, [])
