//! Kafka 4.3.1's transactions-version-2 rules (KIP-890: the coordinator bumps the producer
//! epoch at the end of every transaction), transaction verification entries
//! (`ProducerStateManagerTest`'s verification cases), and the log-facing feeders of
//! `log_updates.rs` (`UnifiedLog.updateProducers`, `loadProducersFromRecords`,
//! `LogSegment.updateProducerState`).

use std::collections::HashMap;

use super::append_info::{TV_0, TV_2, TV_UNKNOWN};
use super::manager_tests::{client, fixture, marker, Fixture, EPOCH, PID};
use super::txn_metadata::{CompletedTxn, LogOffsetMetadata};
use crate::error::Error;
use crate::log::log_validator::AppendOrigin;
use crate::record::batch::RecordBatch;
use crate::record::builder::{write_end_txn_marker, BatchBuilder, BatchHeader};
use crate::record::control::{ControlRecordType, EndTransactionMarker};
use crate::util::clock::Clock;

const COMMIT: ControlRecordType = ControlRecordType::Commit;
const ABORT: ControlRecordType = ControlRecordType::Abort;

/// Kafka 4.3.1 `ProducerAppendInfo.checkProducerEpoch` with TV2: each transaction's marker
/// carries the bumped epoch; the next transaction starts at sequence 0 of that epoch; a marker
/// with the transaction's own (unbumped) epoch is refused.
#[test]
fn tv2_marker_must_bump_the_epoch() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, 3, 0, 0, 0, true).unwrap();
    let err = marker(&mut psm, PID, 3, COMMIT, 1, 0, 0, TV_2).unwrap_err();
    assert!(
        matches!(err, Error::InvalidProducerEpoch { epoch: 3, current_epoch: 3, transaction_version: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("not above the last seen epoch 3"), "{err}");
    assert_eq!(psm.first_undecided_offset(), Some(0), "the refused marker closed nothing");
    let done = marker(&mut psm, PID, 4, COMMIT, 1, 0, 0, TV_2).unwrap();
    assert_eq!(done, Some(CompletedTxn { producer_id: PID, first_offset: 0, last_offset: 1, is_aborted: false }));
    let e = *psm.last_entry(PID).unwrap();
    assert_eq!((e.producer_epoch(), e.last_seq(), e.current_txn_first_offset()), (4, -1, None));
    // The next transaction, in the bumped epoch, starts at sequence 0.
    assert!(matches!(client(&mut psm, PID, 4, 1, 2, 0, true), Err(Error::OutOfOrderSequence { .. })));
    client(&mut psm, PID, 4, 0, 2, 0, true).unwrap();
    assert_eq!(psm.first_undecided_offset(), Some(2));
    // Under TV0 the same-epoch marker is the normal case.
    marker(&mut psm, PID, 4, ABORT, 3, 0, 0, TV_0).unwrap();
    assert_eq!(psm.first_undecided_offset(), None);
}

/// Kafka 4.3.1 `checkProducerEpoch`: a retried TV2 marker (same bumped epoch, transaction
/// already closed) is accepted and completes nothing; an older epoch is still refused.
#[test]
fn tv2_retried_marker_is_accepted() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, 3, 0, 0, 0, true).unwrap();
    marker(&mut psm, PID, 4, ABORT, 1, 0, 0, TV_2).unwrap();
    assert_eq!(marker(&mut psm, PID, 4, ABORT, 2, 0, 0, TV_2).unwrap(), None);
    assert!(matches!(marker(&mut psm, PID, 3, ABORT, 3, 0, 0, TV_2), Err(Error::InvalidProducerEpoch { .. })));
    // At the last epoch a same-epoch marker closes the open transaction (the epoch cannot bump).
    client(&mut psm, 9, i16::MAX, 0, 10, 0, true).unwrap();
    let done = marker(&mut psm, 9, i16::MAX, COMMIT, 11, 0, 0, TV_2).unwrap();
    assert_eq!(done.map(|t| t.first_offset), Some(10));
}

/// Kafka 4.3.1 `appendEndTxnMarker`: only replication may leave the transaction version unknown
/// (it then counts as version 0).
#[test]
fn unknown_transaction_version_only_for_replication() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, 3, 0, 0, 0, true).unwrap();
    let err = marker(&mut psm, PID, 3, COMMIT, 1, 0, 0, TV_UNKNOWN).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let mut info = psm.prepare_update(PID, AppendOrigin::Replication);
    let m = EndTransactionMarker { control_type: COMMIT, coordinator_epoch: 0 };
    assert!(info.append_end_txn_marker(m, 3, 1, 0, TV_UNKNOWN).unwrap().is_some());
}

/// Replication trusts the leader: an old epoch is logged, not refused
/// (`checkProducerEpoch` with `AppendOrigin.REPLICATION`).
#[test]
fn replication_accepts_an_old_epoch() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, 5, 0, 0, 0, false).unwrap();
    super::manager_tests::replication(&mut psm, 4, 7, 1, 0).unwrap();
    assert_eq!(psm.last_entry(PID).unwrap().producer_epoch(), 4);
}

/// ProducerStateManagerTest.testEntryForVerification.
#[test]
fn entry_for_verification() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let original = psm.maybe_create_verification_state_entry(PID, 0, EPOCH, false);
    let again = psm.maybe_create_verification_state_entry(PID, 0, EPOCH, false);
    assert_eq!(again.verification_guard(), original.verification_guard(), "an existing entry is reused");
    assert_eq!(psm.verification_state_entry(PID).unwrap().verification_guard(), original.verification_guard());
    client(&mut psm, PID, 0, 0, 0, 0, true).unwrap();
    psm.clear_verification_state_entry(PID);
    assert!(psm.verification_state_entry(PID).is_none());
}

/// ProducerStateManagerTest.testSequenceAndEpochInVerificationEntry.
#[test]
fn sequence_and_epoch_in_verification_entry() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let guard = psm.maybe_create_verification_state_entry(PID, 1, EPOCH, false).verification_guard();
    let check = |e: super::verification::VerificationStateEntry, seq: i32, epoch: i16| {
        assert_eq!((e.verification_guard(), e.lowest_sequence(), e.epoch()), (guard, seq, epoch));
    };
    check(psm.maybe_create_verification_state_entry(PID, 0, EPOCH, false), 0, EPOCH);
    check(psm.maybe_create_verification_state_entry(PID, 2, 1, false), 2, 1);
    check(psm.maybe_create_verification_state_entry(PID, 0, EPOCH, false), 2, 1);
}

/// ProducerStateManagerTest.testThrowOutOfOrderSequenceWithVerificationSequenceCheck (both
/// with verification enabled and dynamically disabled: an existing entry is still checked).
#[test]
fn out_of_order_sequence_with_verification_sequence_check() {
    for disable in [false, true] {
        let Fixture { mut psm, dir: _dir, .. } = fixture();
        let original = psm.maybe_create_verification_state_entry(PID, 0, EPOCH, false);
        if disable {
            psm.config_mut().transaction_verification_enabled = false;
        }
        let err = client(&mut psm, PID, EPOCH, 4, 0, 0, true).unwrap_err();
        assert!(err.to_string().contains("0 (earliest seen sequence)"), "{err}");
        assert_eq!(psm.verification_state_entry(PID), Some(&original));
    }
}

/// Kafka 4.3.1 `checkSequence`: a verified TV2 producer with no state must start at sequence 0.
#[test]
fn tv2_verified_producer_without_state_starts_at_zero() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    psm.maybe_create_verification_state_entry(PID, 3, EPOCH, true);
    let err = client(&mut psm, PID, EPOCH, 3, 0, 0, true).unwrap_err();
    assert!(err.to_string().contains("expected sequence 0"), "{err}");
    psm.clear_verification_state_entry(PID);
    psm.maybe_create_verification_state_entry(PID, 0, EPOCH, true);
    client(&mut psm, PID, EPOCH, 0, 0, 0, true).unwrap();
}

/// ProducerStateManagerTest.testVerificationStateEntryExpiration.
#[test]
fn verification_state_entry_expiration() {
    let Fixture { mut psm, clock, dir: _dir } = fixture();
    let original = psm.maybe_create_verification_state_entry(PID, 0, EPOCH, false);
    let half = i64::from(psm.config().producer_id_expiration_ms) / 2;
    clock.advance(half);
    psm.remove_expired_producers(clock.milliseconds());
    assert_eq!(psm.verification_state_entry(PID), Some(&original));
    clock.advance(half + 1);
    psm.remove_expired_producers(clock.milliseconds());
    assert!(psm.verification_state_entry(PID).is_none());
}

fn data_batch(base_offset: i64, pid: i64, epoch: i16, base_seq: i32, n: i64, txn: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchHeader {
        base_offset,
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: base_seq,
        is_transactional: txn,
        ..BatchHeader::default()
    });
    for i in 0..n {
        b.append(base_offset + i, 1_000 + i, Some(b"k"), Some(b"v"), &[]).unwrap();
    }
    b.build().unwrap()
}

fn marker_batch(offset: i64, pid: i64, epoch: i16, t: ControlRecordType, coordinator_epoch: i32) -> Vec<u8> {
    let mut out = Vec::new();
    write_end_txn_marker(&mut out, offset, 2_000, 0, pid, epoch, t, coordinator_epoch).unwrap();
    out
}

/// `UnifiedLog.updateProducers` over real batches: a retried batch is found as a duplicate
/// with its original offsets (`ProducerStateEntry.findDuplicateBatch`), a marker batch
/// completes the transaction, and a TV2 marker keeps the verification entry of its epoch.
#[test]
fn update_producers_from_batches() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let first = data_batch(0, PID, 0, 0, 3, true);
    let mut infos = HashMap::new();
    let batch = RecordBatch::new(&first).unwrap();
    let start = LogOffsetMetadata::new(0, 0, 0);
    assert_eq!(psm.update_producers(&batch, &mut infos, Some(start), AppendOrigin::Client, TV_2).unwrap(), None);
    for (_, info) in infos.drain() {
        psm.update(info).unwrap();
    }
    let dup = psm.last_entry(PID).and_then(|e| e.find_duplicate_batch(&batch)).expect("a retry is a duplicate");
    assert_eq!((dup.first_offset(), dup.last_offset, dup.first_seq(), dup.last_seq), (0, 2, 0, 2));
    assert_eq!(psm.first_unstable_offset(), Some(start));
    psm.maybe_create_verification_state_entry(PID, 0, 1, true);
    let m = marker_batch(3, PID, 1, ControlRecordType::Abort, 7);
    let m = RecordBatch::new(&m).unwrap();
    let done = psm.update_producers(&m, &mut infos, None, AppendOrigin::Coordinator, TV_2).unwrap();
    assert_eq!(done, Some(CompletedTxn { producer_id: PID, first_offset: 0, last_offset: 3, is_aborted: true }));
    assert!(psm.verification_state_entry(PID).is_some(), "a TV2 marker of the verified epoch keeps it");
    let next = data_batch(4, PID, 1, 0, 1, true);
    psm.update_producers(&RecordBatch::new(&next).unwrap(), &mut infos, None, AppendOrigin::Client, TV_2).unwrap();
    assert!(psm.verification_state_entry(PID).is_none(), "transactional data clears it");
}

/// `UnifiedLog.loadProducersFromRecords` and `LogSegment.updateProducerState`: replaying the
/// same bytes both ways gives the same table, and recovery hands each completed transaction to
/// the caller with its last stable offset before completing it.
#[test]
fn rebuild_and_recovery_replay_the_same_state() {
    let mut log = Vec::new();
    log.extend(data_batch(0, 7, 0, 0, 2, true));
    log.extend(data_batch(2, 8, 0, 0, 2, true));
    log.extend(marker_batch(4, 7, 0, ABORT, 1));
    log.extend(data_batch(5, 9, 0, 0, 1, false));
    let Fixture { psm: mut rebuilt, dir: _dir, .. } = fixture();
    rebuilt.load_producers_from_records(&log).unwrap();
    rebuilt.update_map_end_offset(6);
    let Fixture { psm: mut recovered, dir: _dir, .. } = fixture();
    let mut seen = Vec::new();
    for item in crate::record::records::BatchIter::new(&log) {
        let (_, crate::record::records::AnyBatch::V2(batch)) = item.unwrap() else { unreachable!() };
        recovered
            .update_from_recovered_batch(&batch, |txn, lso| {
                seen.push((*txn, lso));
                Ok(())
            })
            .unwrap();
    }
    let aborted = CompletedTxn { producer_id: 7, first_offset: 0, last_offset: 4, is_aborted: true };
    assert_eq!(seen, [(aborted, 2)], "the LSO is producer 8's open transaction");
    assert_eq!(recovered.map_end_offset(), 6);
    let mut a: Vec<_> = rebuilt.active_producers().values().copied().collect();
    let mut b: Vec<_> = recovered.active_producers().values().copied().collect();
    a.sort_by_key(super::entry::ProducerStateEntry::producer_id);
    b.sort_by_key(super::entry::ProducerStateEntry::producer_id);
    assert_eq!(a, b);
    assert_eq!(a.len(), 3);
    for psm in [&rebuilt, &recovered] {
        assert_eq!(psm.first_undecided_offset(), Some(2));
        assert_eq!(psm.first_unstable_offset().map(|m| m.message_offset), Some(0), "the abort is above the HW");
    }
}
