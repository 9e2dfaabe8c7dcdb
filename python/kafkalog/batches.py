"""Raw v2 record batches built in Kafka's exact format, for follower appends
(``UnifiedLog.append_as_follower``), tools and tests.

``build`` writes a data batch with any header fields a producer or the broker sets: producer
id/epoch/sequence, the transactional flag, a KIP-534 delete horizon, the leader epoch.
``end_txn_marker`` writes a COMMIT or ABORT control batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import _native
from .records import Record

__all__ = ["build", "end_txn_marker"]


def build(
    base_offset: int,
    records: Sequence[Record],
    *,
    compression: str = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    partition_leader_epoch: int = -1,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """One batch whose records get offsets ``base_offset``, ``base_offset + 1``, ...; each
    record's ``timestamp`` must be set."""
    rows = []
    for i, r in enumerate(records):
        if r.timestamp is None:
            raise ValueError(f"record {i} has no timestamp; batches built here need explicit timestamps")
        headers = [(k.encode(), v) for k, v in r.headers]
        rows.append((base_offset + i, r.timestamp, r.key, r.value, headers))
    return _native.build_batch(
        base_offset,
        rows,
        compression,
        producer_id,
        producer_epoch,
        base_sequence,
        transactional,
        partition_leader_epoch,
        delete_horizon_ms,
    )


def end_txn_marker(
    offset: int,
    timestamp: int,
    *,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A COMMIT (``commit=True``) or ABORT control batch at ``offset``."""
    return _native.end_txn_marker(
        offset, timestamp, producer_id, producer_epoch, commit, coordinator_epoch, partition_leader_epoch
    )
