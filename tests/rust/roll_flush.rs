//! The flush after a roll runs in the background (Kafka's `UnifiedLog.roll` and its `flush-log`
//! task): the roll returns before any fsync, the recovery point moves only when the flush has
//! completed, a failed flush never moves it (and takes a managed log's dir offline), a segment
//! removed before its flush is skipped, and close waits for or does the flush itself. The tests
//! use a manual `BackgroundScheduler` (or a `LogManager` without its scheduler thread, whose
//! `tick` runs the flushes), so each step happens when the test says.

use std::path::Path;
use std::sync::Arc;

use kafkalog::error::Error;
use kafkalog::file_names::{log_file, producer_snapshot_file, with_suffix, DELETED_FILE_SUFFIX};
use kafkalog::log::unified_log::{LogOpenOptions, RollFlushMode};
use kafkalog::manager::log_manager::{LogManager, LogManagerOptions};
use kafkalog::util::background::BackgroundScheduler;
use kafkalog::util::clock::ManualClock;
use kafkalog::util::fault::{inject, FaultOp};
use kafkalog::{file_names::TopicPartition, UnifiedLog};

use crate::common::{append_values, config, manager_config, scan_all, values_batch, Fixture, T0};

/// Opens the fixture's log with its roll flushes on `scheduler`.
fn open_with(fx: &Fixture, scheduler: &Arc<BackgroundScheduler>, mode: RollFlushMode) -> UnifiedLog {
    let options = LogOpenOptions { flush_scheduler: Some(scheduler.clone()), roll_flush: mode, ..fx.options() };
    UnifiedLog::open(&fx.dir, config(&[]), options).expect("open log")
}

fn try_append(log: &UnifiedLog, value: &str) -> kafkalog::Result<i64> {
    let mut records = values_batch(0, T0, &[value]);
    log.append_as_leader(&mut records, 0).map(|info| info.first_offset)
}

/// UnifiedLogTest.testFlushingEmptyActiveSegments's set-up, with the flush-log task held: the
/// roll and the appends after it return while the recovery point stays put; the task moves it
/// to the rolled segment's base. The synchronous mode (the bench's baseline) moves it in the roll.
#[test]
fn the_recovery_point_moves_when_the_flush_after_a_roll_completes() {
    let fx = Fixture::new();
    let scheduler = Arc::new(BackgroundScheduler::manual());
    let log = open_with(&fx, &scheduler, RollFlushMode::Background);
    append_values(&log, T0, &["a", "b", "c"]);
    assert_eq!(log.roll().unwrap(), 3);
    append_values(&log, T0, &["d"]);
    assert_eq!(log.recovery_point(), 0, "no fsync under the roll");
    assert!(log.roll_flush_pending());
    assert_eq!(log.roll().unwrap(), 4);
    assert_eq!(scheduler.run_pending(), 1, "two rolls before the task ran: one flush");
    assert_eq!(log.recovery_point(), 4);
    assert!(!log.roll_flush_pending());
    log.close().unwrap();

    let fx = Fixture::new();
    let log = open_with(&fx, &scheduler, RollFlushMode::Synchronous);
    append_values(&log, T0, &["a", "b", "c"]);
    log.roll().unwrap();
    assert_eq!(log.recovery_point(), 3, "the synchronous mode flushes inside the roll");
    assert_eq!(scheduler.run_pending(), 0);
    log.close().unwrap();
}

/// UnifiedLogTest.testRecoveryPointNotIncrementedOnProducerStateSnapshotFlushFailure: the
/// snapshot's fsync fails in the task, so the recovery point stays; the standalone log then
/// refuses writes (a second fsync may succeed without the data) and close says why. A reopen
/// recovers the segments the flush never covered.
#[test]
fn a_failed_flush_after_a_roll_never_moves_the_recovery_point() {
    let fx = Fixture::new();
    let scheduler = Arc::new(BackgroundScheduler::manual());
    let log = open_with(&fx, &scheduler, RollFlushMode::Background);
    append_values(&log, T0, &["a"]);
    let fault = inject(&producer_snapshot_file(&fx.dir, 1), FaultOp::Fsync, libc::EIO, None);
    log.roll().unwrap();
    match log.wait_for_roll_flush() {
        Err(Error::KafkaStorage { reason, .. }) => {
            assert!(reason.contains("00000000000000000001.snapshot") && reason.contains("fsync"), "{reason}")
        }
        other => panic!("expected KafkaStorage, got {other:?}"),
    }
    drop(fault);
    assert_eq!(log.recovery_point(), 0);
    assert!(matches!(try_append(&log, "b"), Err(Error::KafkaStorage { .. })), "writes refused");
    assert!(matches!(log.flush(), Err(Error::KafkaStorage { .. })), "no second fsync");
    assert!(matches!(log.close(), Err(Error::KafkaStorage { .. })));

    let log = open_with(&fx, &scheduler, RollFlushMode::Background);
    assert_eq!(scan_all(&log, 0).unwrap().len(), 1, "the record is still there");
    assert_eq!(try_append(&log, "b").unwrap(), 1);
    log.close().unwrap();
}

/// A segment that retention removed before its flush ran is skipped: its files (renamed
/// `.deleted`) are not fsynced, and the recovery point still reaches the later roll.
#[test]
fn a_segment_deleted_before_its_flush_is_skipped() {
    let fx = Fixture::new();
    let scheduler = Arc::new(BackgroundScheduler::manual());
    let log = open_with(&fx, &scheduler, RollFlushMode::Background);
    append_values(&log, T0, &["a", "b"]);
    log.roll().unwrap();
    append_values(&log, T0, &["c"]);
    log.roll().unwrap();
    log.delete_records(2).unwrap();
    log.delete_old_segments().unwrap();
    let deleted = with_suffix(&log_file(&fx.dir, 0), DELETED_FILE_SUFFIX);
    assert!(deleted.exists(), "segment 0 is waiting for its delete delay");
    let _fault = inject(&deleted, FaultOp::Fsync, libc::EIO, None);
    log.wait_for_roll_flush().expect("the removed segment is not flushed");
    assert_eq!(log.recovery_point(), 3);
    log.close().unwrap();
}

/// Close waits for a running flush and flushes everything itself; a task still queued finds
/// the log closed and does nothing.
#[test]
fn close_performs_the_pending_flush() {
    let fx = Fixture::new();
    let scheduler = Arc::new(BackgroundScheduler::manual());
    let log = open_with(&fx, &scheduler, RollFlushMode::Background);
    append_values(&log, T0, &["a", "b"]);
    log.roll().unwrap();
    append_values(&log, T0, &["c"]);
    log.close().unwrap();
    assert_eq!(log.recovery_point(), 3, "close flushed up to the log end");
    let _fault = inject(&fx.dir, FaultOp::Fsync, libc::EIO, None);
    assert_eq!(scheduler.run_pending(), 1);
    assert!(!log.roll_flush_pending(), "the queued task ran and found the log closed");
}

/// A standalone log with no scheduler lent flushes inside the roll: it has no recovery point
/// on disk, so the rolled segment is durable (and the recovery point past it) when the roll
/// returns, and no task is ever pending.
#[test]
fn a_standalone_log_without_a_scheduler_flushes_inside_the_roll() {
    let fx = Fixture::new();
    let log = fx.open(&config(&[]));
    append_values(&log, T0, &["a", "b"]);
    log.roll().unwrap();
    assert!(!log.roll_flush_pending());
    assert_eq!(log.recovery_point(), 2);
    append_values(&log, T0, &["c"]);
    log.roll().unwrap();
    assert_eq!(log.recovery_point(), 3);
    log.close().unwrap();
}

fn open_manager(dir: &Path, clock: &Arc<ManualClock>) -> LogManager {
    let props = [("internal.segment.bytes", "300")];
    let options = LogManagerOptions { clock: clock.clone(), start_scheduler: false, ..LogManagerOptions::default() };
    LogManager::open(manager_config(&[dir], &props), options).unwrap()
}

fn checkpointed_recovery_point(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("recovery-point-offset-checkpoint")).unwrap()
}

/// In a `LogManager`, the recovery point written to `recovery-point-offset-checkpoint` never
/// passes a roll whose flush has not run; `tick` runs the flush (before the checkpoint task).
/// After a crash there, recovery starts at the checkpointed point and loses nothing.
#[test]
fn a_managed_log_checkpoints_only_flushed_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let m = open_manager(tmp.path(), &clock);
    let tp = TopicPartition::new("orders", 0);
    let log = m.get_or_create_log(&tp, None, None).unwrap();
    append_values(&log, T0, &["a", "b", "c"]);
    log.roll().unwrap();
    m.checkpoint().unwrap();
    assert_eq!(checkpointed_recovery_point(tmp.path()), "0\n1\norders 0 0\n", "the roll's flush has not run");
    m.tick();
    assert_eq!(log.recovery_point(), 3);
    m.checkpoint().unwrap();
    assert_eq!(checkpointed_recovery_point(tmp.path()), "0\n1\norders 0 3\n");
    append_values(&log, T0, &["d"]);
    log.roll().unwrap();
    m.checkpoint().unwrap();
    drop(log);
    drop(m); // a crash: no close, the second roll's flush never ran

    let m = open_manager(tmp.path(), &clock);
    let log = m.get_log(&tp).unwrap().expect("loaded");
    let summary = &m.load_summary()[0];
    assert!(!summary.had_clean_shutdown);
    assert_eq!(summary.segments_recovered, 2, "from the checkpointed point 3: segments 3 and 4");
    assert_eq!(scan_all(&log, 0).unwrap().len(), 4);
    m.close(-1).unwrap();
}

/// A failed fsync in a managed log's background flush takes its log dir offline through the
/// `LogDirFailureChannel`, and the checkpoint keeps the old recovery point.
#[test]
fn a_failed_background_flush_takes_the_managed_log_dir_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let clock = ManualClock::new(T0);
    let options = LogManagerOptions { clock: clock.clone(), start_scheduler: false, ..LogManagerOptions::default() };
    let m = LogManager::open(manager_config(&[&a, &b], &[("internal.segment.bytes", "300")]), options).unwrap();
    let (in_a, in_b) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
    let log_a = m.get_or_create_log(&in_a, None, None).unwrap();
    let log_b = m.get_or_create_log(&in_b, None, None).unwrap();
    assert_eq!((log_a.log_dir(), log_b.log_dir()), (a.as_path(), b.as_path()));
    append_values(&log_a, T0, &["x"]);
    append_values(&log_b, T0, &["y"]);
    log_a.roll().unwrap();
    log_b.roll().unwrap();
    let _fault = inject(&log_file(log_a.dir(), 0), FaultOp::Fsync, libc::EIO, None);
    m.tick();
    let dirs = m.log_dirs();
    assert!(!dirs[0].online && dirs[1].online, "{dirs:?}");
    assert!(dirs[0].offline_reason.as_deref().is_some_and(|r| r.contains("00000000000000000000.log")), "{dirs:?}");
    assert_eq!(log_a.recovery_point(), 0);
    assert_eq!(log_b.recovery_point(), 1, "the other dir's flush went through");
    assert!(m.get_log(&in_a).unwrap().is_none());
}

/// Every batch after a segment's first gets an index entry; indexes of 1 KiB (85 time entries).
fn indexed_config() -> kafkalog::LogConfig {
    config(&[("index.interval.bytes", "1"), ("segment.index.bytes", "1024")])
}

fn open_indexed(fx: &Fixture, scheduler: &Arc<BackgroundScheduler>) -> UnifiedLog {
    let options = LogOpenOptions { flush_scheduler: Some(scheduler.clone()), ..fx.options() };
    UnifiedLog::open(&fx.dir, indexed_config(), options).expect("open log")
}

/// Appends `n` one-record batches with timestamps T0 + offset.
fn append_batches(log: &UnifiedLog, n: usize) {
    for _ in 0..n {
        let offset = log.log_end_offset();
        append_values(log, T0 + offset, &["v"]);
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// (.index, .timeindex) lengths of segment `base`.
fn index_lens(dir: &Path, base: i64) -> (u64, u64) {
    use kafkalog::file_names::{offset_index_file, time_index_file};
    (file_len(&offset_index_file(dir, base)), file_len(&time_index_file(dir, base)))
}

/// Kafka's roll trims the old segment's indexes under the log's lock; kafkalog leaves the trim
/// to the flush task (a cut inside a page the mapping dirtied writes that page out first): the
/// roll returns with the preallocated files, the task trims them to their entries before the
/// fsync, and a closed log is Kafka's result (every index as long as its entries).
#[test]
fn the_flush_after_a_roll_trims_the_rolled_segment_indexes() {
    let fx = Fixture::new();
    let scheduler = Arc::new(BackgroundScheduler::manual());
    let log = open_indexed(&fx, &scheduler);
    append_batches(&log, 5);
    assert_eq!(log.roll().unwrap(), 5);
    let rolled = &log.segments()[0];
    assert!(rolled.index_trim_pending());
    assert_eq!(index_lens(&fx.dir, 0), (1024, 1020), "the roll cut nothing");
    assert_eq!(scheduler.run_pending(), 1);
    assert!(!rolled.index_trim_pending());
    // 4 offset entries (batches 1..=4); 4 time entries plus none at roll (the last repeated).
    assert_eq!(index_lens(&fx.dir, 0), (4 * 8, 4 * 12), "trimmed before the recovery point moved");
    assert_eq!(log.recovery_point(), 5);

    append_batches(&log, 3);
    log.roll().unwrap();
    append_batches(&log, 2);
    log.close().unwrap();
    assert_eq!(index_lens(&fx.dir, 5), (2 * 8, 2 * 12), "close trims what no flush did");
    assert_eq!(index_lens(&fx.dir, 8), (8, 12));
    let log = open_indexed(&fx, &scheduler);
    // A standalone log keeps no clean-shutdown marker: only its last segment is recovered.
    assert_eq!(log.load_result().segments_recovered, 1, "the trimmed segments are trusted");
    for offset in 0..10 {
        let found = log.offset_for_timestamp(T0 + offset).unwrap().expect("found");
        assert_eq!(found.offset, offset);
    }
    log.close().unwrap();
}

/// `delete_records` raises the recovery point with the log start (Kafka's
/// `updateLogStartOffset`): the rolled segments it passes before their flush ran get their
/// index trim then, so no segment below the recovery point keeps a preallocated index.
#[test]
fn delete_records_trims_the_rolled_segments_it_passes() {
    let fx = Fixture::new();
    let scheduler = Arc::new(BackgroundScheduler::manual());
    let log = open_indexed(&fx, &scheduler);
    append_batches(&log, 5);
    log.roll().unwrap();
    append_batches(&log, 3);
    log.roll().unwrap();
    append_batches(&log, 1);
    let segments = log.segments();
    assert!(segments[0].index_trim_pending() && segments[1].index_trim_pending());
    assert_eq!(log.delete_records(6).unwrap(), 6);
    assert_eq!(log.recovery_point(), 6);
    assert!(!segments[0].index_trim_pending() && !segments[1].index_trim_pending());
    assert_eq!(index_lens(&fx.dir, 0), (4 * 8, 4 * 12));
    assert_eq!(index_lens(&fx.dir, 5), (2 * 8, 2 * 12));
    assert_eq!(scheduler.run_pending(), 1);
    assert_eq!(log.recovery_point(), 8, "the flush after the rolls, up to the active segment");
    log.close().unwrap();
}

/// A truncation back into a segment whose trim is pending makes it the active segment again:
/// the pending trim is dropped with the resize to full size, so the flush task that runs after
/// it leaves the index whole and the segment takes as many entries as its index holds.
#[test]
fn a_truncation_into_a_segment_whose_trim_is_pending_keeps_its_full_indexes() {
    let fx = Fixture::new();
    let scheduler = Arc::new(BackgroundScheduler::manual());
    let log = open_indexed(&fx, &scheduler);
    append_batches(&log, 5);
    log.roll().unwrap();
    append_batches(&log, 2);
    assert!(log.truncate_to(3).unwrap());
    assert_eq!(log.number_of_segments(), 1);
    let active = &log.segments()[0];
    assert!(!active.index_trim_pending(), "the truncation took the trim back");
    scheduler.run_pending();
    assert_eq!(index_lens(&fx.dir, 0), (1024, 1020), "the flush after the roll cut nothing");
    // 84 time entries fit before the time index is full (the last slot is the roll's).
    append_batches(&log, 80);
    assert_eq!(log.number_of_segments(), 1, "no roll for a full index");
    // 2 entries kept, and one per batch after the first since the truncation (Kafka's
    // `truncateTo` restarts the byte count).
    assert_eq!(active.offset_index().unwrap().get().unwrap().entries(), 81);
    assert_eq!(index_lens(&fx.dir, 0), (1024, 1020));
    log.close().unwrap();
}

/// A crash after rolls whose flushes never ran leaves the rolled segments' indexes untrimmed.
/// A managed log recovers them (they lie above its recovery point); an open without a recovery
/// point (a partition of a manager's dir opened on its own) recovers only the last segment, so
/// the load finds the tail of zeros and recovers the others too. Either way every lookup works.
#[test]
fn a_crash_before_the_trim_recovers_the_untrimmed_segments() {
    for recovery_point in [Some(0), None] {
        let fx = Fixture::new();
        let scheduler = Arc::new(BackgroundScheduler::manual());
        let log = open_indexed(&fx, &scheduler);
        append_batches(&log, 5);
        log.roll().unwrap();
        append_batches(&log, 4);
        log.roll().unwrap();
        append_batches(&log, 3);
        drop(log); // a crash: the queued flush never runs
        assert_eq!(index_lens(&fx.dir, 0), (1024, 1020));

        let options = LogOpenOptions { recovery_point, ..fx.options() };
        let log = UnifiedLog::open(&fx.dir, indexed_config(), options).unwrap();
        assert_eq!(log.load_result().segments_recovered, 3, "recovery point {recovery_point:?}");
        assert_eq!(index_lens(&fx.dir, 0), (4 * 8, 4 * 12), "rebuilt at its entries");
        assert_eq!(scan_all(&log, 0).unwrap().len(), 12);
        for offset in 0..12 {
            let found = log.offset_for_timestamp(T0 + offset).unwrap().expect("found");
            assert_eq!(found.offset, offset, "recovery point {recovery_point:?}");
        }
        log.close().unwrap();
    }
}
