//! Producer state wired into the log: the transaction and producer cases of Kafka 4.3.1's
//! `UnifiedLogTest` and `LogLoaderTest`, on kafkalog's `UnifiedLog`.

use kafkalog::index::transaction_index::AbortedTxn;
use kafkalog::log::unified_log::{ActiveProducer, LogOpenOptions, UnifiedLog};
use kafkalog::record::builder::{BatchBuilder, BatchHeader};
use kafkalog::Error;

use crate::common::{config, files_with_suffix, segment_file_name, Fixture, T0};

const PID: i64 = 42;

/// A client batch of `n` records of `producer_id` (epoch, first sequence), at offset 0.
fn batch(producer_id: i64, epoch: i16, base_sequence: i32, n: usize, transactional: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchHeader {
        producer_id,
        producer_epoch: epoch,
        base_sequence,
        is_transactional: transactional,
        ..BatchHeader::default()
    });
    for i in 0..n {
        let v = format!("v{i}");
        b.append_next(T0, Some(b"k"), Some(v.as_bytes()), &[]).unwrap();
    }
    b.build().unwrap()
}

/// Appends a client batch as leader; returns (first, last) offsets.
fn append(
    log: &UnifiedLog,
    producer_id: i64,
    epoch: i16,
    seq: i32,
    n: usize,
    txn: bool,
) -> kafkalog::Result<(i64, i64)> {
    let mut records = batch(producer_id, epoch, seq, n, txn);
    log.append_as_leader(&mut records, 0).map(|i| (i.first_offset, i.last_offset))
}

/// A follower copy of a client batch at `base`.
fn follower_batch(base: i64, producer_id: i64, epoch: i16, seq: i32, n: usize, txn: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchHeader {
        base_offset: base,
        producer_id,
        producer_epoch: epoch,
        base_sequence: seq,
        is_transactional: txn,
        ..BatchHeader::default()
    });
    for _ in 0..n {
        b.append_next(T0, Some(b"k"), Some(b"v"), &[]).unwrap();
    }
    b.build().unwrap()
}

fn producer(log: &UnifiedLog, producer_id: i64) -> Option<ActiveProducer> {
    log.active_producers().into_iter().find(|p| p.producer_id == producer_id)
}

/// UnifiedLogTest.testDuplicateAppends: a retried batch gets the original offsets back and
/// nothing is written.
#[test]
fn duplicate_appends_return_the_original_offsets() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    assert_eq!(append(&log, PID, 0, 0, 3, false).unwrap(), (0, 2));
    assert_eq!(append(&log, PID, 0, 3, 2, false).unwrap(), (3, 4));
    let size = log.size_in_bytes();
    // The first batch again (within the last five): the original offsets, nothing written.
    assert_eq!(append(&log, PID, 0, 0, 3, false).unwrap(), (0, 2));
    assert_eq!(append(&log, PID, 0, 3, 2, false).unwrap(), (3, 4));
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (5, size));
    // Another producer's same sequences are not duplicates.
    assert_eq!(append(&log, PID + 1, 0, 0, 3, false).unwrap(), (5, 7));
    let p = producer(&log, PID).unwrap();
    assert_eq!((p.producer_epoch, p.last_sequence, p.last_data_offset), (0, 4, 4));
}

/// UnifiedLogTest.testNonSequentialAppend and testOldProducerEpoch: a gap in the sequence is
/// `OutOfOrderSequence`, an older epoch `InvalidProducerEpoch`; both write nothing.
#[test]
fn out_of_order_sequences_and_old_epochs_are_refused_before_writing() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append(&log, PID, 1, 0, 2, false).unwrap();
    let size = log.size_in_bytes();
    let err = append(&log, PID, 1, 5, 1, false).unwrap_err();
    assert!(matches!(err, Error::OutOfOrderSequence { producer_id: PID, sequence: 5, .. }), "{err}");
    let err = append(&log, PID, 0, 2, 1, false).unwrap_err();
    assert!(matches!(err, Error::InvalidProducerEpoch { producer_id: PID, epoch: 0, current_epoch: 1, .. }), "{err}");
    assert_eq!((log.log_end_offset(), log.size_in_bytes()), (2, size));
    // A new epoch starts at sequence 0.
    assert_eq!(append(&log, PID, 2, 0, 1, false).unwrap(), (2, 2));
}

/// UnifiedLogTest.testNonTransactionalAppendWithOngoingTransaction: a plain batch while the
/// producer's transaction is open is `InvalidTxnState`.
#[test]
fn a_plain_batch_inside_an_open_transaction_is_refused() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append(&log, PID, 0, 0, 2, true).unwrap();
    let err = append(&log, PID, 0, 2, 1, false).unwrap_err();
    assert!(matches!(err, Error::InvalidTxnState { producer_id: PID, .. }), "{err}");
    assert_eq!(log.log_end_offset(), 2);
}

/// UnifiedLogTest.testFirstUnstableOffsetWithTransactionalData and
/// testLastStableOffsetWithMixedProducerData: an open transaction holds the LSO at its first
/// offset; the COMMIT marker releases it.
#[test]
fn markers_and_the_last_stable_offset() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append(&log, 7, 0, 0, 2, false).unwrap(); // 0..=1, idempotent only
    assert_eq!((log.first_unstable_offset(), log.last_stable_offset()), (None, 2));
    append(&log, PID, 0, 0, 3, true).unwrap(); // 2..=4
    append(&log, PID + 1, 0, 0, 2, true).unwrap(); // 5..=6
    assert_eq!(log.first_unstable_offset(), Some(2));
    assert_eq!(log.last_stable_offset(), 2);
    assert_eq!(log.ongoing_transactions(), vec![(PID, 2), (PID + 1, 5)]);
    let info = log.append_txn_marker(PID, 0, true, 0, None).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (7, 7));
    assert_eq!((log.first_unstable_offset(), log.last_stable_offset()), (Some(5), 5));
    log.append_txn_marker(PID + 1, 0, false, 0, None).unwrap();
    assert_eq!((log.first_unstable_offset(), log.last_stable_offset()), (None, 9));
    assert!(log.ongoing_transactions().is_empty());
    // The abort is indexed with the LSO then (no other transaction open: the marker + 1).
    assert_eq!(log.aborted_transactions(0, log.log_end_offset()).unwrap(), vec![AbortedTxn::new(PID + 1, 5, 8, 9)]);
    // A marker from an older coordinator epoch is a zombie's.
    log.append_txn_marker(PID, 0, true, 5, None).unwrap();
    let err = log.append_txn_marker(PID, 0, true, 4, None).unwrap_err();
    assert!(matches!(err, Error::TransactionCoordinatorFenced { .. }), "{err}");
}

/// UnifiedLogTest.testLastStableOffsetDoesNotExceedHighWatermark (as a follower): a completed
/// transaction stays unstable until the high watermark passes its marker.
#[test]
fn the_last_stable_offset_follows_the_high_watermark() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    log.set_high_watermark(0).unwrap();
    log.append_as_follower(&follower_batch(0, PID, 0, 0, 3, true)).unwrap();
    assert_eq!((log.first_unstable_offset(), log.last_stable_offset()), (Some(0), 0));
    let mut marker = Vec::new();
    kafkalog::record::builder::write_end_txn_marker(
        &mut marker,
        3,
        T0,
        0,
        PID,
        0,
        kafkalog::record::control::ControlRecordType::Commit,
        0,
    )
    .unwrap();
    log.append_as_follower(&marker).unwrap();
    assert_eq!(log.first_unstable_offset(), Some(0), "the marker is above the high watermark");
    log.set_high_watermark(3).unwrap();
    assert_eq!((log.first_unstable_offset(), log.last_stable_offset()), (Some(0), 0));
    log.set_high_watermark(4).unwrap();
    assert_eq!((log.first_unstable_offset(), log.last_stable_offset()), (None, 4));
}

/// UnifiedLogTest.testTakeSnapshotOnRollAndDeleteSnapshotOnRecoveryPointCheckpoint (its first
/// half) and testProducerSnapshotsRecoveryAfterUncleanShutdown's clean half: a snapshot at every
/// roll and at close; the reopened log resumes the producers from it.
#[test]
fn snapshots_at_roll_and_close_restore_the_producers() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    {
        let log = fx.open(&cfg);
        append(&log, PID, 0, 0, 2, false).unwrap();
        log.roll().unwrap();
        assert_eq!(files_with_suffix(&fx.dir, ".snapshot"), [segment_file_name(2, ".snapshot")]);
        append(&log, PID, 0, 2, 2, true).unwrap();
        log.close().unwrap();
    }
    assert_eq!(
        files_with_suffix(&fx.dir, ".snapshot"),
        [segment_file_name(2, ".snapshot"), segment_file_name(4, ".snapshot")]
    );
    let log = UnifiedLog::open(&fx.dir, cfg, LogOpenOptions { had_clean_shutdown: true, ..fx.options() }).unwrap();
    let p = producer(&log, PID).unwrap();
    assert_eq!((p.last_sequence, p.last_data_offset, p.current_txn_first_offset), (3, 3, Some(2)));
    assert_eq!(log.last_stable_offset(), 2);
    // Sequences go on from where they were; the retry of the last batch is a duplicate.
    assert_eq!(append(&log, PID, 0, 2, 2, true).unwrap(), (2, 3));
    assert!(matches!(append(&log, PID, 0, 9, 1, true), Err(Error::OutOfOrderSequence { .. })));
}

/// LogLoaderTest.testLoadProducersAfterDeleteRecordsMidSegment's idea and
/// testSkipTruncateAndReloadIfNewMessageFormatAndCleanShutdown's converse: the state loaded
/// from the latest snapshot plus the replay after it equals a rebuild from the whole log.
#[test]
fn recovery_from_a_snapshot_equals_a_full_rebuild() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    {
        let log = fx.open(&cfg);
        append(&log, PID, 0, 0, 2, true).unwrap();
        log.roll().unwrap();
        append(&log, 9, 3, 0, 1, false).unwrap();
        log.append_txn_marker(PID, 0, false, 1, None).unwrap();
        append(&log, PID + 1, 0, 0, 2, true).unwrap();
        // No close: an unclean shutdown, the snapshot at 2 is the latest.
    }
    let from_snapshot = fx.open(&cfg);
    let (producers, ongoing, lso) =
        (from_snapshot.active_producers(), from_snapshot.ongoing_transactions(), from_snapshot.last_stable_offset());
    from_snapshot.close().unwrap();
    for f in files_with_suffix(&fx.dir, ".snapshot") {
        std::fs::remove_file(fx.dir.join(f)).unwrap();
    }
    let rebuilt = fx.open(&cfg);
    assert_eq!(rebuilt.active_producers(), producers);
    assert_eq!((rebuilt.ongoing_transactions(), rebuilt.last_stable_offset()), (ongoing, lso));
    assert_eq!(lso, 4);
    assert_eq!(rebuilt.ongoing_transactions(), vec![(PID + 1, 4)]);
}

/// ProducerStateManagerTest.testLoadFromCorruptSnapshotFile through the log: a corrupt latest
/// snapshot is deleted and the older one used, with the replay after it.
#[test]
fn a_corrupt_snapshot_falls_back_to_the_older_one() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    {
        let log = fx.open(&cfg);
        append(&log, PID, 0, 0, 2, false).unwrap();
        log.roll().unwrap();
        append(&log, PID, 0, 2, 2, false).unwrap();
        log.close().unwrap();
    }
    std::fs::write(fx.dir.join(segment_file_name(4, ".snapshot")), b"garbage").unwrap();
    let log = fx.open(&cfg);
    assert_eq!(producer(&log, PID).unwrap().last_sequence, 3);
    assert!(!files_with_suffix(&fx.dir, ".snapshot").is_empty());
}

/// UnifiedLogTest.testProducerIdMapTruncateTo: truncation drops the snapshots past the new end
/// and reloads the producers as the remaining data leaves them.
#[test]
fn truncation_reloads_the_producers() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append(&log, PID, 0, 0, 1, false).unwrap();
    log.roll().unwrap();
    append(&log, PID, 0, 1, 1, false).unwrap();
    log.roll().unwrap();
    append(&log, PID, 0, 2, 1, true).unwrap();
    assert_eq!(log.last_stable_offset(), 2);
    log.truncate_to(2).unwrap();
    assert_eq!(producer(&log, PID).unwrap().last_sequence, 1);
    assert_eq!((log.first_unstable_offset(), log.last_stable_offset()), (None, 2));
    log.truncate_to(1).unwrap();
    assert_eq!(producer(&log, PID).unwrap().last_sequence, 0);
    assert!(files_with_suffix(&fx.dir, ".snapshot").iter().all(|f| f <= &segment_file_name(1, ".snapshot")));
    log.truncate_fully_and_start_at(10).unwrap();
    assert!(log.active_producers().is_empty());
    assert!(files_with_suffix(&fx.dir, ".snapshot").is_empty());
}

/// A read-only open rebuilds the state in memory and writes no snapshot.
#[test]
fn a_read_only_open_writes_no_snapshot() {
    let fx = Fixture::new();
    let cfg = config(&[]);
    {
        let log = fx.open(&cfg);
        append(&log, PID, 0, 0, 2, true).unwrap();
        // Unclean: no snapshot at all.
    }
    assert!(files_with_suffix(&fx.dir, ".snapshot").is_empty());
    let log = fx.open_read_only(&cfg);
    assert_eq!(log.ongoing_transactions(), vec![(PID, 0)]);
    assert_eq!(log.last_stable_offset(), 0);
    assert!(files_with_suffix(&fx.dir, ".snapshot").is_empty());
}

/// UnifiedLogTest.testProducerExpireCheckAfterDelete / ProducerStateManagerTest's expiry through
/// the LogManager: its scheduler runs `PeriodicProducerExpirationCheck` every
/// `producer.id.expiration.check.interval.ms` on the manual clock and forgets producers idle for
/// `producer.id.expiration.ms`, except one with an open transaction.
#[test]
fn the_log_manager_expires_idle_producers_on_its_clock() {
    use kafkalog::file_names::TopicPartition;
    use kafkalog::manager::log_manager::{LogManager, LogManagerOptions};
    let tmp = tempfile::tempdir().unwrap();
    let clock = kafkalog::util::clock::ManualClock::new(T0);
    let props = [("producer.id.expiration.ms", "1000"), ("producer.id.expiration.check.interval.ms", "500")];
    let options = LogManagerOptions { clock: clock.clone(), start_scheduler: false, ..LogManagerOptions::default() };
    let mgr = LogManager::open(crate::common::manager_config(&[tmp.path()], &props), options).unwrap();
    let log = mgr.get_or_create_log(&TopicPartition::new("t", 0), None, None).unwrap();
    append(&log, PID, 0, 0, 1, false).unwrap();
    append(&log, PID + 1, 0, 0, 1, true).unwrap();
    clock.advance(499);
    mgr.tick();
    assert_eq!(log.active_producers().len(), 2, "the check has not run yet");
    clock.advance(1);
    mgr.tick();
    assert_eq!(log.active_producers().len(), 2, "checked, but nobody is idle for 1000 ms yet");
    clock.advance(500);
    mgr.tick();
    let left: Vec<i64> = log.active_producers().iter().map(|p| p.producer_id).collect();
    assert_eq!(left, vec![PID + 1], "the idle producer goes, the one with an open transaction stays");
    mgr.close(0).unwrap();
}

/// Writes a log over three segments with two producers' transactions, one aborted in each of
/// the first two segments and one left open, and an idempotent producer; not closed.
fn transactional_log(fx: &Fixture) {
    let log = fx.open(&config(&[]));
    append(&log, PID, 0, 0, 2, true).unwrap(); // 0..=1
    append(&log, 9, 0, 0, 1, false).unwrap(); // 2
    log.append_txn_marker(PID, 0, false, 0, None).unwrap(); // 3
    log.roll().unwrap();
    append(&log, PID + 1, 0, 0, 2, true).unwrap(); // 4..=5
    append(&log, PID, 1, 0, 1, true).unwrap(); // 6
    log.append_txn_marker(PID + 1, 0, false, 0, None).unwrap(); // 7
    log.roll().unwrap();
    append(&log, 9, 0, 1, 2, false).unwrap(); // 8..=9
}

/// LogLoaderTest.testRecoverWithProducerState (and testSkipTruncateAndReloadIfOldMessageFormat's
/// converse): recovery of every segment, with no snapshot and no index, rebuilds the
/// `.txnindex` files and the producer table; both equal the log written live.
#[test]
fn recovery_rebuilds_the_txn_index_and_the_producers() {
    let fx = Fixture::new();
    transactional_log(&fx);
    let live = fx.open_read_only(&config(&[]));
    let (producers, ongoing) = (live.active_producers(), live.ongoing_transactions());
    let aborted = live.aborted_transactions(0, 10).unwrap();
    drop(live);
    assert_eq!(aborted, vec![AbortedTxn::new(PID, 0, 3, 4), AbortedTxn::new(PID + 1, 4, 7, 6)]);
    for suffix in [".snapshot", ".txnindex", ".index"] {
        for f in files_with_suffix(&fx.dir, suffix) {
            std::fs::remove_file(fx.dir.join(f)).unwrap();
        }
    }
    let options = LogOpenOptions { recovery_point: Some(0), ..fx.options() };
    let log = UnifiedLog::open(&fx.dir, config(&[]), options).unwrap();
    assert_eq!(log.load_result().segments_recovered, 3);
    assert_eq!(log.aborted_transactions(0, 10).unwrap(), aborted);
    assert_eq!((log.active_producers(), log.ongoing_transactions()), (producers, ongoing));
    assert_eq!(log.last_stable_offset(), 6);
    // Each recovery snapshotted the state at its segment's end; the open, at the log end.
    assert!(fx.dir.join(segment_file_name(10, ".snapshot")).exists());
}

/// The loader carries one producer state from each recovered segment to the next
/// (`reload_from_own_snapshot`) where Kafka's `recoverSegment` builds a fresh one per segment
/// from the snapshot just written: both leave the same files. The carried path (indexes kept,
/// recovery from recovery point 0) and the fresh path (every offset index deleted, so each
/// segment is recovered alone before the unclean pass) run on copies of one log, two days
/// later, so the idempotent producer has expired when each snapshot is loaded.
#[test]
fn carried_recovery_state_writes_what_a_fresh_one_per_segment_writes() {
    let carried = Fixture::new();
    transactional_log(&carried);
    let fresh = Fixture::new();
    std::fs::create_dir_all(&fresh.dir).unwrap();
    for entry in std::fs::read_dir(&carried.dir).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), fresh.dir.join(entry.file_name())).unwrap();
    }
    let doomed = |fx: &Fixture, suffixes: &[&str]| {
        for suffix in suffixes {
            for f in files_with_suffix(&fx.dir, suffix) {
                std::fs::remove_file(fx.dir.join(f)).unwrap();
            }
        }
    };
    doomed(&carried, &[".snapshot", ".txnindex"]);
    doomed(&fresh, &[".snapshot", ".txnindex", ".index"]);
    let mut logs = Vec::new();
    for fx in [&carried, &fresh] {
        fx.clock.advance(2 * 24 * 3_600_000);
        let options = LogOpenOptions { recovery_point: Some(0), ..fx.options() };
        let log = UnifiedLog::open(&fx.dir, config(&[]), options).unwrap();
        assert_eq!(log.load_result().segments_recovered, 3);
        logs.push(log);
    }
    let contents = |fx: &Fixture| -> Vec<(String, Vec<u8>)> {
        let mut names: Vec<String> = [".snapshot", ".txnindex", ".index", ".timeindex"]
            .iter()
            .flat_map(|s| files_with_suffix(&fx.dir, s))
            .collect();
        names.sort();
        names.into_iter().map(|n| (n.clone(), std::fs::read(fx.dir.join(&n)).unwrap())).collect()
    };
    let (a, b) = (contents(&carried), contents(&fresh));
    assert_eq!(a.iter().map(|(n, _)| n).collect::<Vec<_>>(), b.iter().map(|(n, _)| n).collect::<Vec<_>>());
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert_eq!(x, y, "{name} differs between the carried and the fresh recovery");
    }
    assert!(carried.dir.join(segment_file_name(8, ".snapshot")).exists());
    assert_eq!(logs[0].active_producers(), logs[1].active_producers());
    assert_eq!(logs[0].aborted_transactions(0, 10).unwrap(), logs[1].aborted_transactions(0, 10).unwrap());
}

/// A crash recovery hands the producer state it ended with to the log, which takes it as it
/// would a fresh manager's over the directory: strays below the recovered segment (which the
/// recovery leaves) are removed as Kafka's `removeStraySnapshots` removes them, and the table
/// equals a full rebuild's (a read-only open replays the log from its start).
#[test]
fn crash_recovery_hands_its_producer_state_to_the_log() {
    let fx = Fixture::new();
    transactional_log(&fx);
    let at = |o: i64| fx.dir.join(segment_file_name(o, ".snapshot"));
    std::fs::copy(at(4), at(1)).unwrap();
    std::fs::copy(at(4), at(6)).unwrap();
    let options = LogOpenOptions { recovery_point: Some(8), ..fx.options() };
    let log = UnifiedLog::open(&fx.dir, config(&[]), options).unwrap();
    assert_eq!(log.load_result().segments_recovered, 1);
    assert!(!at(1).exists() && !at(6).exists(), "strays below the last base go");
    assert!(at(4).exists() && at(8).exists() && at(10).exists());
    let rebuilt = fx.open_read_only(&config(&[]));
    assert_eq!(
        (log.active_producers(), log.ongoing_transactions()),
        (rebuilt.active_producers(), rebuilt.ongoing_transactions())
    );
    assert_eq!(log.ongoing_transactions(), vec![(PID, 6)]);
}

/// LogLoaderTest.testRemoveStraySnapshots (Kafka's removeStraySnapshots on load): snapshots at
/// no segment base go, except the latest when past the last base (the log end's).
#[test]
fn stray_snapshots_are_removed_at_open() {
    let fx = Fixture::new();
    transactional_log(&fx);
    let at = |o: i64| fx.dir.join(segment_file_name(o, ".snapshot"));
    std::fs::copy(at(4), at(1)).unwrap();
    std::fs::copy(at(4), at(6)).unwrap();
    let log =
        UnifiedLog::open(&fx.dir, config(&[]), LogOpenOptions { had_clean_shutdown: true, ..fx.options() }).unwrap();
    assert!(!at(1).exists() && !at(6).exists(), "strays below the last base go");
    assert!(at(4).exists() && at(8).exists() && at(10).exists());
    assert_eq!(log.ongoing_transactions(), vec![(PID, 6)]);
}

/// LogSegment.sanityCheck's `txnIndex.sanityCheck()`: a damaged `.txnindex` (a torn entry) gets
/// its segment recovered, which rebuilds the index from the markers.
#[test]
fn a_damaged_txn_index_is_rebuilt_by_recovery() {
    let fx = Fixture::new();
    transactional_log(&fx);
    let index = fx.dir.join(segment_file_name(0, ".txnindex"));
    let good = std::fs::read(&index).unwrap();
    std::fs::write(&index, [&good[..], &[0u8; 7]].concat()).unwrap();
    let log =
        UnifiedLog::open(&fx.dir, config(&[]), LogOpenOptions { had_clean_shutdown: true, ..fx.options() }).unwrap();
    assert_eq!(std::fs::read(&index).unwrap(), good);
    assert_eq!(log.load_result().segments_recovered, 1);
}
