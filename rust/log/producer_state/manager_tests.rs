//! `ProducerStateManagerTest`'s cases for appends, sequences, epochs, fencing and transactions
//! (the snapshot cases are in `snapshot_tests.rs`), plus the transactions-version-2 rules of
//! Kafka 4.3.1's `ProducerAppendInfo`.

use std::path::Path;
use std::sync::Arc;

use super::append_info::TV_0;
use super::manager::{last_stable_offset_for, ProducerStateManager, LATE_TRANSACTION_BUFFER_MS};
use super::manager_config::ProducerStateManagerConfig;
use super::txn_metadata::{CompletedTxn, LogOffsetMetadata, TxnMetadata};
use crate::error::{Error, Result};
use crate::file_names::TopicPartition;
use crate::log::log_validator::AppendOrigin;
use crate::record::batch::{RecordBatch, NO_SEQUENCE};
use crate::record::control::{ControlRecordType, EndTransactionMarker};
use crate::util::clock::{Clock, ManualClock};

pub(super) const PID: i64 = 1;
pub(super) const EPOCH: i16 = 0;
pub(super) const MAX_TXN_TIMEOUT_MS: i32 = 5 * 60 * 1000;
const LATE_TXN_TIMEOUT_MS: i64 = MAX_TXN_TIMEOUT_MS as i64 + LATE_TRANSACTION_BUFFER_MS;

/// A manager for `test-0` in `dir` on `clock`, with Kafka's default expiration.
pub(super) fn manager(dir: &Path, clock: &Arc<ManualClock>) -> ProducerStateManager {
    let clock: Arc<dyn Clock> = clock.clone();
    ProducerStateManager::new(
        TopicPartition::new("test", 0),
        dir,
        MAX_TXN_TIMEOUT_MS,
        ProducerStateManagerConfig::default(),
        clock,
    )
    .unwrap()
}

pub(super) struct Fixture {
    #[allow(dead_code)] // kept alive (and read by the snapshot tests)
    pub dir: tempfile::TempDir,
    pub clock: Arc<ManualClock>,
    pub psm: ProducerStateManager,
}

pub(super) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let psm = manager(dir.path(), &clock);
    Fixture { dir, clock, psm }
}

/// The test's `appendEntry`: one single-record batch at `offset`, then the map end past it.
#[allow(clippy::too_many_arguments)]
pub(super) fn append_entry(
    psm: &mut ProducerStateManager,
    pid: i64,
    epoch: i16,
    seq: i32,
    offset: i64,
    ts: i64,
    origin: AppendOrigin,
    transactional: bool,
) -> Result<()> {
    let mut info = psm.prepare_update(pid, origin);
    info.append_data_batch(epoch, seq, seq, ts, LogOffsetMetadata::offset_only(offset), offset, transactional)?;
    psm.update(info)?;
    psm.update_map_end_offset(offset + 1);
    Ok(())
}

/// The test's `appendClientEntry`.
pub(super) fn client(
    psm: &mut ProducerStateManager,
    pid: i64,
    epoch: i16,
    seq: i32,
    offset: i64,
    ts: i64,
    txn: bool,
) -> Result<()> {
    append_entry(psm, pid, epoch, seq, offset, ts, AppendOrigin::Client, txn)
}

/// The test's `appendReplicationEntry` (producer 1).
pub(super) fn replication(psm: &mut ProducerStateManager, epoch: i16, seq: i32, offset: i64, ts: i64) -> Result<()> {
    append_entry(psm, PID, epoch, seq, offset, ts, AppendOrigin::Replication, false)
}

/// The test's `appendEndTxnMarker`: a coordinator's marker, completing the transaction.
#[allow(clippy::too_many_arguments)]
pub(super) fn marker(
    psm: &mut ProducerStateManager,
    pid: i64,
    epoch: i16,
    control: ControlRecordType,
    offset: i64,
    coordinator_epoch: i32,
    ts: i64,
    tv: i16,
) -> Result<Option<CompletedTxn>> {
    let mut info = psm.prepare_update(pid, AppendOrigin::Coordinator);
    let m = EndTransactionMarker { control_type: control, coordinator_epoch };
    let completed = info.append_end_txn_marker(m, epoch, offset, ts, tv)?;
    psm.update(info)?;
    if let Some(txn) = &completed {
        psm.complete_txn(txn)?;
    }
    psm.update_map_end_offset(offset + 1);
    Ok(completed)
}

const COMMIT: ControlRecordType = ControlRecordType::Commit;
const ABORT: ControlRecordType = ControlRecordType::Abort;

fn entry(psm: &ProducerStateManager, pid: i64) -> super::entry::ProducerStateEntry {
    *psm.last_entry(pid).unwrap_or_else(|| panic!("producer {pid} should have an entry"))
}

/// ProducerStateManagerTest.testBasicIdMapping.
#[test]
fn basic_id_mapping() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, EPOCH, 0, 0, 0, false).unwrap();
    client(&mut psm, PID, EPOCH, 1, 0, 1, false).unwrap();
    // Duplicates are checked separately (by the log), and are out of order here.
    assert!(matches!(client(&mut psm, PID, EPOCH, 1, 0, 1, false), Err(Error::OutOfOrderSequence { .. })));
    let err = client(&mut psm, PID, EPOCH, 5, 0, 2, false).unwrap_err();
    assert!(matches!(err, Error::OutOfOrderSequence { sequence: 5, .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("producer 1") && msg.contains("test-0") && msg.contains("1 (current end sequence number)"),
        "{msg}"
    );
    client(&mut psm, PID, EPOCH + 1, 0, 0, 3, false).unwrap();
    let err = client(&mut psm, PID, EPOCH, 0, 0, 4, false).unwrap_err();
    assert!(matches!(err, Error::InvalidProducerEpoch { epoch: 0, current_epoch: 1, .. }), "{err}");
}

/// ProducerStateManagerTest.testAppendTxnMarkerWithNoProducerState.
#[test]
fn append_txn_marker_with_no_producer_state() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    marker(&mut psm, PID, 2, COMMIT, 27, 0, 0, TV_0).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.producer_epoch(), e.producer_id(), e.last_seq()), (2, PID, NO_SEQUENCE));
    // Fencing works even when a marker is all that is left.
    assert!(matches!(client(&mut psm, PID, 0, 0, 4, 0, false), Err(Error::InvalidProducerEpoch { .. })));
    // A non-zero sequence makes the producer reset its state.
    assert!(matches!(client(&mut psm, PID, 2, 17, 4, 0, false), Err(Error::OutOfOrderSequence { .. })));
    client(&mut psm, PID, 2, 0, 4, 39, false).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.producer_epoch(), e.last_seq()), (2, 0));
}

/// ProducerStateManagerTest.testProducerSequenceWrapAround.
#[test]
fn producer_sequence_wrap_around() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    replication(&mut psm, 15, i32::MAX, 735, 0).unwrap();
    client(&mut psm, PID, 15, 0, 735 + 500, 0, false).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.producer_epoch(), e.first_seq(), e.last_seq()), (15, i32::MAX, 0));
}

/// ProducerStateManagerTest.testProducerSequenceWithWrapAroundBatchRecord.
#[test]
fn producer_sequence_with_wrap_around_batch_record() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let mut info = psm.prepare_update(PID, AppendOrigin::Replication);
    info.append_data_batch(15, i32::MAX - 10, 9, 0, LogOffsetMetadata::offset_only(2000), 2020, false).unwrap();
    assert!(psm.last_entry(PID).is_none(), "nothing changes before update");
    psm.update(info).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.first_seq(), e.last_seq()), (i32::MAX - 10, 9));
    assert_eq!((e.first_data_offset(), e.last_data_offset()), (2000, 2020));
}

/// ProducerStateManagerTest.testProducerSequenceInvalidWrapAround.
#[test]
fn producer_sequence_invalid_wrap_around() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    replication(&mut psm, 15, i32::MAX, 735, 0).unwrap();
    assert!(matches!(client(&mut psm, PID, 15, 1, 735 + 500, 0, false), Err(Error::OutOfOrderSequence { .. })));
}

/// ProducerStateManagerTest.testNoValidationOnFirstEntryWhenLoadingLog.
#[test]
fn no_validation_on_first_entry_when_loading_log() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    replication(&mut psm, 5, 16, 735, 0).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.producer_epoch(), e.first_seq(), e.last_seq()), (5, 16, 16));
    assert_eq!((e.first_data_offset(), e.last_data_offset()), (735, 735));
}

/// ProducerStateManagerTest.testControlRecordBumpsProducerEpoch.
#[test]
fn control_record_bumps_producer_epoch() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, EPOCH, 0, 0, 0, false).unwrap();
    marker(&mut psm, PID, 1, ABORT, 1, 0, 0, TV_0).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.producer_epoch(), e.current_txn_first_offset()), (1, None));
    assert_eq!((e.first_seq(), e.last_seq()), (NO_SEQUENCE, NO_SEQUENCE));
    client(&mut psm, PID, 1, 0, 2, 0, false).unwrap();
    assert_eq!(entry(&psm, PID).first_seq(), 0);
}

/// ProducerStateManagerTest.testTxnFirstOffsetMetadataCached.
#[test]
fn txn_first_offset_metadata_cached() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let mut info = psm.prepare_update(PID, AppendOrigin::Client);
    let first = LogOffsetMetadata::new(992_342, 990_000, 234_224);
    info.append_data_batch(EPOCH, 0, 0, 0, first, 992_342, true).unwrap();
    psm.update(info).unwrap();
    assert_eq!(psm.first_unstable_offset(), Some(first));
}

/// ProducerStateManagerTest.testHasLateTransaction.
#[test]
fn has_late_transaction() {
    let Fixture { mut psm, clock, dir: _dir } = fixture();
    let now = || clock.milliseconds();
    client(&mut psm, 39, 2, 0, 100, now(), true).unwrap();
    assert!(!psm.has_late_transaction(now()));
    clock.advance(500);
    client(&mut psm, 57, 9, 0, 150, now(), true).unwrap();
    assert!(!psm.has_late_transaction(now()));
    clock.advance(LATE_TXN_TIMEOUT_MS - 500 + 1);
    assert!(psm.has_late_transaction(now()), "the first transaction is late");
    clock.advance(500);
    assert!(psm.has_late_transaction(now()));
    marker(&mut psm, 39, 2, COMMIT, 200, 0, now(), TV_0).unwrap();
    assert!(psm.has_late_transaction(now()), "the second is late too");
    marker(&mut psm, 57, 9, COMMIT, 250, 0, now(), TV_0).unwrap();
    assert!(!psm.has_late_transaction(now()));
}

/// ProducerStateManagerTest.testHasLateTransactionUpdatedAfterPartialTruncation and
/// testHasLateTransactionUpdatedAfterFullTruncation.
#[test]
fn has_late_transaction_updated_after_truncation() {
    for full in [false, true] {
        let Fixture { mut psm, clock, dir: _dir } = fixture();
        client(&mut psm, 39, 2, 0, 100, clock.milliseconds(), true).unwrap();
        clock.advance(LATE_TXN_TIMEOUT_MS + 1);
        assert!(psm.has_late_transaction(clock.milliseconds()));
        if full {
            psm.truncate_fully_and_start_at(150).unwrap();
        } else {
            psm.truncate_and_reload(0, 80, clock.milliseconds()).unwrap();
        }
        assert!(!psm.has_late_transaction(clock.milliseconds()));
    }
}

/// ProducerStateManagerTest.testPrepareUpdateDoesNotMutate.
#[test]
fn prepare_update_does_not_mutate() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let mut info = psm.prepare_update(PID, AppendOrigin::Client);
    info.append_data_batch(EPOCH, 0, 5, 0, LogOffsetMetadata::offset_only(15), 20, false).unwrap();
    assert!(psm.last_entry(PID).is_none());
    psm.update(info).unwrap();
    let mut next = psm.prepare_update(PID, AppendOrigin::Client);
    next.append_data_batch(EPOCH, 6, 10, 0, LogOffsetMetadata::offset_only(26), 30, false).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.first_seq(), e.last_seq(), e.last_data_offset()), (0, 5, 20));
    psm.update(next).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.first_seq(), e.last_seq(), e.last_data_offset()), (0, 10, 30));
}

/// ProducerStateManagerTest.updateProducerTransactionState.
#[test]
fn update_producer_transaction_state() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, EPOCH, 0, 9, 0, false).unwrap();
    let mut info = psm.prepare_update(PID, AppendOrigin::Client);
    info.append_data_batch(EPOCH, 1, 5, 0, LogOffsetMetadata::offset_only(16), 20, true).unwrap();
    info.append_data_batch(EPOCH, 6, 10, 0, LogOffsetMetadata::offset_only(26), 30, true).unwrap();
    let e = *info.to_entry();
    assert_eq!((e.first_seq(), e.last_seq(), e.first_data_offset(), e.last_data_offset()), (1, 10, 16, 30));
    assert_eq!(e.current_txn_first_offset(), Some(16));
    assert_eq!(info.started_transactions(), [TxnMetadata::new(PID, LogOffsetMetadata::offset_only(16))]);
    let m = EndTransactionMarker { control_type: COMMIT, coordinator_epoch: 15 };
    let done = info.append_end_txn_marker(m, EPOCH, 40, 0, TV_0).unwrap().expect("the transaction completes");
    assert_eq!(done, CompletedTxn { producer_id: PID, first_offset: 16, last_offset: 40, is_aborted: false });
    // The marker leaves the cached batches alone.
    let e = *info.to_entry();
    assert_eq!((e.first_seq(), e.last_seq(), e.first_data_offset(), e.last_data_offset()), (1, 10, 16, 30));
    assert_eq!((e.current_txn_first_offset(), e.coordinator_epoch()), (None, 15));
}

/// ProducerStateManagerTest.testOutOfSequenceAfterControlRecordEpochBump.
#[test]
fn out_of_sequence_after_control_record_epoch_bump() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, EPOCH, 0, 0, 0, true).unwrap();
    client(&mut psm, PID, EPOCH, 1, 1, 0, true).unwrap();
    marker(&mut psm, PID, 1, ABORT, 1, 0, 0, TV_0).unwrap();
    assert!(matches!(client(&mut psm, PID, 1, 2, 2, 0, true), Err(Error::OutOfOrderSequence { .. })));
    assert!(matches!(client(&mut psm, PID, 2, 2, 2, 0, true), Err(Error::OutOfOrderSequence { .. })));
    client(&mut psm, PID, 1, 0, 0, 0, true).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.producer_epoch(), e.last_seq()), (1, 0));
}

/// ProducerStateManagerTest.testNonTransactionalAppendWithOngoingTransaction.
#[test]
fn non_transactional_append_with_ongoing_transaction() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, EPOCH, 0, 0, 0, true).unwrap();
    let err = client(&mut psm, PID, EPOCH, 1, 1, 0, false).unwrap_err();
    assert!(matches!(err, Error::InvalidTxnState { producer_id: PID, .. }), "{err}");
    assert!(err.to_string().contains("offset 0"), "{err}");
}

/// ProducerStateManagerTest.testProducerStateAfterFencingAbortMarker.
#[test]
fn producer_state_after_fencing_abort_marker() {
    let Fixture { mut psm, clock, dir: _dir } = fixture();
    client(&mut psm, PID, EPOCH, 0, 0, clock.milliseconds(), true).unwrap();
    marker(&mut psm, PID, EPOCH + 1, ABORT, 1, 0, clock.milliseconds(), TV_0).unwrap();
    let e = entry(&psm, PID);
    assert_eq!((e.current_txn_first_offset(), e.last_data_offset(), e.first_data_offset()), (None, -1, -1));
    // Kept, to preserve the fencing epoch.
    psm.remove_expired_producers(clock.milliseconds());
    assert!(psm.last_entry(PID).is_some());
}

/// ProducerStateManagerTest.testAcceptAppendWithSequenceGapsOnReplica.
#[test]
fn accept_append_with_sequence_gaps_on_replica() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, EPOCH, 0, 0, 0, false).unwrap();
    assert!(matches!(client(&mut psm, PID, EPOCH, 3, 1, 1, false), Err(Error::OutOfOrderSequence { .. })));
    assert_eq!(entry(&psm, PID).last_seq(), 0, "a refused append changes nothing");
    replication(&mut psm, EPOCH, 3, 1, 1).unwrap();
    assert_eq!(entry(&psm, PID).last_seq(), 3);
}

/// ProducerStateManagerTest.testPidExpirationTimeout.
#[test]
fn pid_expiration_timeout() {
    let Fixture { mut psm, clock, dir: _dir } = fixture();
    client(&mut psm, PID, 5, 0, 1, clock.milliseconds(), false).unwrap();
    clock.advance(i64::from(psm.config().producer_id_expiration_ms) + 1);
    psm.remove_expired_producers(clock.milliseconds());
    assert!(psm.last_entry(PID).is_none());
    client(&mut psm, PID, 5, 1, 2, clock.milliseconds(), false).unwrap();
    assert_eq!(psm.active_producers().len(), 1);
    assert_eq!(entry(&psm, PID).last_seq(), 1);
    assert_eq!(psm.map_end_offset(), 3);
}

/// ProducerStateManagerTest.testFirstUnstableOffset.
#[test]
fn first_unstable_offset() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let fuo = |psm: &ProducerStateManager| psm.first_unstable_offset().map(|m| m.message_offset);
    assert_eq!(psm.first_undecided_offset(), None);
    client(&mut psm, PID, 5, 0, 99, 0, true).unwrap();
    assert_eq!((psm.first_undecided_offset(), fuo(&psm)), (Some(99), Some(99)));
    client(&mut psm, 2, 5, 0, 105, 0, true).unwrap();
    assert_eq!((psm.first_undecided_offset(), fuo(&psm)), (Some(99), Some(99)));
    marker(&mut psm, PID, 5, COMMIT, 109, 0, 0, TV_0).unwrap();
    assert_eq!((psm.first_undecided_offset(), fuo(&psm)), (Some(105), Some(99)));
    psm.on_high_watermark_updated(100);
    assert_eq!(fuo(&psm), Some(99));
    psm.on_high_watermark_updated(110);
    assert_eq!(fuo(&psm), Some(105));
    marker(&mut psm, 2, 5, ABORT, 112, 0, 0, TV_0).unwrap();
    assert_eq!((psm.first_undecided_offset(), fuo(&psm)), (None, Some(105)));
    psm.on_high_watermark_updated(113);
    assert_eq!(fuo(&psm), None);
}

/// ProducerStateManagerTest.testProducersWithOngoingTransactionsDontExpire.
#[test]
fn producers_with_ongoing_transactions_dont_expire() {
    let Fixture { mut psm, clock, dir: _dir } = fixture();
    client(&mut psm, PID, 5, 0, 99, clock.milliseconds(), true).unwrap();
    clock.advance(i64::from(psm.config().producer_id_expiration_ms) + 1);
    psm.remove_expired_producers(clock.milliseconds());
    assert!(psm.last_entry(PID).is_some());
    assert_eq!(psm.first_undecided_offset(), Some(99));
}

/// ProducerStateManagerTest.testSequenceNotValidatedForGroupMetadataTopic: coordinator
/// appends carry no sequences.
#[test]
fn sequence_not_validated_for_coordinator_appends() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    append_entry(&mut psm, PID, EPOCH, NO_SEQUENCE, 99, 0, AppendOrigin::Coordinator, true).unwrap();
    append_entry(&mut psm, PID, EPOCH, NO_SEQUENCE, 100, 0, AppendOrigin::Coordinator, true).unwrap();
}

/// ProducerStateManagerTest.testOldEpochForControlRecord.
#[test]
fn old_epoch_for_control_record() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, 5, 0, 99, 0, true).unwrap();
    let err = marker(&mut psm, PID, 3, COMMIT, 100, 0, 0, TV_0).unwrap_err();
    assert!(matches!(err, Error::InvalidProducerEpoch { epoch: 3, current_epoch: 5, offset: 100, .. }), "{err}");
}

/// ProducerStateManagerTest.testCoordinatorFencing.
#[test]
fn coordinator_fencing() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    client(&mut psm, PID, 5, 0, 99, 0, true).unwrap();
    marker(&mut psm, PID, 5, COMMIT, 100, 1, 0, TV_0).unwrap();
    assert_eq!(entry(&psm, PID).coordinator_epoch(), 1);
    marker(&mut psm, PID, 5, COMMIT, 101, 1, 0, TV_0).unwrap();
    marker(&mut psm, PID, 5, COMMIT, 102, 2, 0, TV_0).unwrap();
    let err = marker(&mut psm, PID, 5, COMMIT, 103, 1, 0, TV_0).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TransactionCoordinatorFenced { coordinator_epoch: 1, current_coordinator_epoch: 2, offset: 103, .. }
        ),
        "{err}"
    );
    // Replication only logs it.
    let mut info = psm.prepare_update(PID, AppendOrigin::Replication);
    info.append_end_txn_marker(EndTransactionMarker { control_type: COMMIT, coordinator_epoch: 1 }, 5, 104, 0, TV_0)
        .unwrap();
}

/// ProducerStateManagerTest.testAppendEmptyControlBatch: a control batch the cleaner emptied
/// starts nothing.
#[test]
fn append_empty_control_batch() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let mut buf = Vec::new();
    crate::record::builder::write_empty_header(
        &mut buf,
        15,
        15,
        23_423,
        0,
        -1,
        0,
        crate::record::TimestampType::CreateTime,
        0,
        true,
        true,
    )
    .unwrap();
    let batch = RecordBatch::new(&buf).unwrap();
    let mut info = psm.prepare_update(23_423, AppendOrigin::Client);
    assert_eq!(info.append(&batch, None, TV_0).unwrap(), None);
    psm.update(info).unwrap();
    assert_eq!(entry(&psm, 23_423).current_txn_first_offset(), None);
}

/// ProducerStateManagerTest.testLastStableOffsetCompletedTxn.
#[test]
fn last_stable_offset_completed_txn() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let (p1, p2, p3) = (PID, PID + 1, PID + 2);
    let (s1, s2, s3) = (992_342, 992_342 + 25, 992_342 + 57);
    for (pid, start) in [(p1, s1), (p2, s2), (p3, s3)] {
        let mut info = psm.prepare_update(pid, AppendOrigin::Client);
        let first = LogOffsetMetadata::new(start, 990_000, 50 * (start - 990_000) as i32);
        info.append_data_batch(EPOCH, 0, 0, 0, first, start, true).unwrap();
        psm.update(info).unwrap();
    }
    let fuo = |psm: &ProducerStateManager| psm.first_unstable_offset().map(|m| m.message_offset);
    let l1 = s3 + 15;
    let t1 = CompletedTxn { producer_id: p1, first_offset: s1, last_offset: l1, is_aborted: false };
    assert_eq!(psm.last_stable_offset(&t1), s2);
    psm.complete_txn(&t1).unwrap();
    psm.on_high_watermark_updated(l1 + 1);
    assert_eq!(fuo(&psm), Some(s2));
    let l3 = l1 + 20;
    let t3 = CompletedTxn { producer_id: p3, first_offset: s3, last_offset: l3, is_aborted: false };
    assert_eq!(psm.last_stable_offset(&t3), s2);
    psm.complete_txn(&t3).unwrap();
    psm.on_high_watermark_updated(l3 + 1);
    assert_eq!(fuo(&psm), Some(s2));
    let l2 = l3 + 78;
    let t2 = CompletedTxn { producer_id: p2, first_offset: s2, last_offset: l2, is_aborted: false };
    assert_eq!(psm.last_stable_offset(&t2), l2 + 1);
    psm.complete_txn(&t2).unwrap();
    psm.on_high_watermark_updated(l2 + 1);
    assert_eq!(fuo(&psm), None);
    assert!(matches!(psm.complete_txn(&t2), Err(Error::IllegalState { .. })), "completing twice is refused");
}

/// ProducerStateManagerTest.testSkipEmptyTransactions.
#[test]
fn skip_empty_transactions() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    let mut seq = 0;
    let mut data = |info: &mut super::append_info::ProducerAppendInfo, start: i64, end: i64| {
        let count = (end - start) as i32;
        info.append_data_batch(EPOCH, seq, seq + count, 0, LogOffsetMetadata::offset_only(start), end, true).unwrap();
        seq += count + 1;
    };
    let end = |info: &mut super::append_info::ProducerAppendInfo, t: ControlRecordType, offset: i64| {
        info.append_end_txn_marker(
            EndTransactionMarker { control_type: t, coordinator_epoch: 27 },
            EPOCH,
            offset,
            0,
            TV_0,
        )
        .unwrap()
    };
    let mut first = psm.prepare_update(PID, AppendOrigin::Client);
    data(&mut first, 16, 20);
    assert_eq!(first.started_transactions(), [TxnMetadata::new(PID, LogOffsetMetadata::offset_only(16))]);
    psm.update(first).unwrap();
    psm.on_high_watermark_updated(21);
    assert_eq!(psm.first_unstable_offset(), Some(LogOffsetMetadata::offset_only(16)));
    let mut second = psm.prepare_update(PID, AppendOrigin::Client);
    let c1 = end(&mut second, COMMIT, 21);
    assert_eq!(c1, Some(CompletedTxn { producer_id: PID, first_offset: 16, last_offset: 21, is_aborted: false }));
    assert_eq!(end(&mut second, COMMIT, 22), None);
    assert_eq!(end(&mut second, ABORT, 23), None);
    data(&mut second, 24, 27);
    let c2 = end(&mut second, ABORT, 28);
    assert!(c2.is_some_and(|t| t.is_aborted));
    assert_eq!(end(&mut second, ABORT, 29), None);
    data(&mut second, 30, 31);
    let started: Vec<i64> = second.started_transactions().iter().map(|t| t.first_offset.message_offset).collect();
    assert_eq!(started, [24, 30]);
    psm.update(second).unwrap();
    psm.complete_txn(&c1.unwrap()).unwrap();
    psm.complete_txn(&c2.unwrap()).unwrap();
    psm.on_high_watermark_updated(32);
    assert_eq!(psm.first_unstable_offset(), Some(LogOffsetMetadata::offset_only(30)));
}

/// `UnifiedLog.lastStableOffset` / `maybeIncrementFirstUnstableOffset`: the LSO is the first
/// unstable offset below the high watermark, else the high watermark; a first unstable offset
/// below the log start is raised to it.
#[test]
fn last_stable_offset_follows_the_high_watermark() {
    let Fixture { mut psm, dir: _dir, .. } = fixture();
    assert_eq!(last_stable_offset_for(psm.first_unstable_offset().map(|m| m.message_offset), 50), 50);
    client(&mut psm, PID, EPOCH, 0, 10, 0, true).unwrap();
    let fuo = psm.first_unstable_offset_from(0).map(|m| m.message_offset);
    assert_eq!((last_stable_offset_for(fuo, 5), last_stable_offset_for(fuo, 50)), (5, 10));
    assert_eq!(psm.first_unstable_offset_from(12), Some(LogOffsetMetadata::offset_only(12)));
}
