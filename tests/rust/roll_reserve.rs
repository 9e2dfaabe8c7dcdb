//! The next roll's files created ahead (`segment/reserved_files.rs`): the flush task after a
//! roll creates the next segment's `.log`, `.index`, `.timeindex` and producer snapshot as
//! unnamed files, and the next roll names them instead of creating files under the write
//! lock. What a reader of the directory sees must be exactly what a roll that creates its
//! files leaves: the same names, lengths and contents, nothing else, also after a close, a
//! crash or an injected fault.

use std::path::Path;
use std::sync::Arc;

use kafkalog::file_names::{log_file, offset_index_file, producer_snapshot_file, time_index_file};
use kafkalog::log::producer_state::snapshot::read_snapshot;
use kafkalog::log::unified_log::{LogOpenOptions, RollFlushMode};
use kafkalog::record::builder::{BatchBuilder, BatchHeader};
use kafkalog::util::background::BackgroundScheduler;
use kafkalog::util::fault::{inject, FaultOp};
use kafkalog::{Error, UnifiedLog};

use crate::common::{config, listing, read_all, Fixture, T0};

const PID: i64 = 7;

/// Indexes of 1 KiB with an entry per batch after a segment's first.
fn indexed_config() -> kafkalog::LogConfig {
    config(&[("index.interval.bytes", "1"), ("segment.index.bytes", "1024")])
}

fn open_with(fx: &Fixture, scheduler: &Arc<BackgroundScheduler>, mode: RollFlushMode) -> UnifiedLog {
    let options = LogOpenOptions { flush_scheduler: Some(scheduler.clone()), roll_flush: mode, ..fx.options() };
    UnifiedLog::open(&fx.dir, indexed_config(), options).expect("open log")
}

/// Appends `n` one-record idempotent batches of producer `PID`, sequences going on from the
/// log end offset (one record per offset).
fn append_idempotent(log: &UnifiedLog, n: usize) {
    for _ in 0..n {
        let offset = log.log_end_offset();
        let mut b = BatchBuilder::new(BatchHeader {
            producer_id: PID,
            producer_epoch: 0,
            base_sequence: offset as i32,
            ..BatchHeader::default()
        });
        b.append_next(T0 + offset, Some(b"k"), Some(format!("v{offset}").as_bytes()), &[]).unwrap();
        let mut records = b.build().unwrap();
        log.append_as_leader(&mut records, 0).expect("append");
    }
}

/// The directory's file names and lengths.
fn names_and_lengths(dir: &Path) -> Vec<(String, u64)> {
    listing(dir).into_iter().map(|(name, len, _)| (name, len)).collect()
}

/// A log in the background mode after two appends, a roll at offset 2 and its flush task:
/// the next roll's files are reserved.
fn rolled_once() -> (Fixture, Arc<BackgroundScheduler>, UnifiedLog) {
    let fx = Fixture::new();
    let scheduler = Arc::new(BackgroundScheduler::manual());
    let log = open_with(&fx, &scheduler, RollFlushMode::Background);
    append_idempotent(&log, 2);
    assert_eq!(log.roll().unwrap(), 2);
    scheduler.run_pending();
    assert!(log.next_roll_files_reserved());
    (fx, scheduler, log)
}

/// The directory's file names.
fn names(dir: &Path) -> Vec<String> {
    listing(dir).into_iter().map(|(name, _, _)| name).collect()
}

/// Rolls four times, running the flush task after each roll: with appends between, and twice
/// in a row with none (the segment between never uses its indexes).
fn roll_four_times(log: &UnifiedLog, scheduler: &BackgroundScheduler) {
    append_idempotent(log, 3);
    log.roll().unwrap();
    scheduler.run_pending();
    append_idempotent(log, 3);
    log.roll().unwrap();
    scheduler.run_pending();
    log.roll().unwrap();
    scheduler.run_pending();
    append_idempotent(log, 1);
    log.roll().unwrap();
    scheduler.run_pending();
    append_idempotent(log, 3);
}

/// The first roll creates its files; its flush task creates the next roll's files unnamed
/// (nothing shows in the directory); the next roll takes them, and its flush creates new ones.
#[test]
fn the_flush_after_a_roll_creates_the_next_rolls_files_ahead() {
    let fx = Fixture::new();
    let scheduler = Arc::new(BackgroundScheduler::manual());
    let log = open_with(&fx, &scheduler, RollFlushMode::Background);
    append_idempotent(&log, 3);
    assert!(!log.next_roll_files_reserved(), "nothing is reserved before a roll");
    log.roll().unwrap();
    assert!(!log.next_roll_files_reserved(), "the task has not run");
    let before = names(&fx.dir);
    assert_eq!(scheduler.run_pending(), 1);
    assert!(log.next_roll_files_reserved());
    assert_eq!(names(&fx.dir), before, "unnamed files do not show");

    append_idempotent(&log, 3);
    assert_eq!(log.roll().unwrap(), 6);
    assert!(!log.next_roll_files_reserved(), "the roll took them");
    assert_eq!(std::fs::metadata(log_file(&fx.dir, 6)).unwrap().len(), 0);
    let snapshot = read_snapshot(&producer_snapshot_file(&fx.dir, 6)).unwrap();
    assert_eq!(snapshot.len(), 1, "the snapshot written into the reserved file holds the producer");
    assert_eq!(snapshot[0].producer_id(), PID);
    append_idempotent(&log, 2);
    // The indexes were named at their first use, preallocated as a created index would be.
    assert_eq!(std::fs::metadata(offset_index_file(&fx.dir, 6)).unwrap().len(), 1024);
    assert_eq!(std::fs::metadata(time_index_file(&fx.dir, 6)).unwrap().len(), 1020);
    assert_eq!(scheduler.run_pending(), 1);
    assert!(log.next_roll_files_reserved(), "the next roll's files are ready again");
    log.close().unwrap();
    assert_eq!(read_all(&fx.open(&indexed_config()), 0).len(), 8);
}

/// The same appends and rolls with and without files created ahead leave the same directory
/// after a close: the same names, lengths and bytes (a segment whose offset index was never
/// used gets its reserved file named empty, as a created roll creates it empty).
#[test]
fn reserved_files_leave_the_directory_a_created_roll_leaves() {
    let reserved = Fixture::new();
    let created = Fixture::new();
    for (fx, mode) in [(&reserved, RollFlushMode::Background), (&created, RollFlushMode::Synchronous)] {
        let scheduler = Arc::new(BackgroundScheduler::manual());
        let log = open_with(fx, &scheduler, mode);
        roll_four_times(&log, &scheduler);
        log.close().unwrap();
    }
    let names = names_and_lengths(&reserved.dir);
    assert_eq!(names, names_and_lengths(&created.dir));
    for (name, _) in &names {
        let (a, b) = (std::fs::read(reserved.dir.join(name)).unwrap(), std::fs::read(created.dir.join(name)).unwrap());
        assert!(a == b, "{name} differs");
    }
}

/// A reservation that is never used (the log closes) leaves nothing behind, and the reopened
/// log goes on rolling.
#[test]
fn an_unused_reservation_leaves_nothing() {
    let (fx, scheduler, log) = rolled_once();
    log.close().unwrap();
    assert!(!log.next_roll_files_reserved(), "close drops the reservation");
    let expected = [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000002.index",
        "00000000000000000002.log",
        "00000000000000000002.snapshot",
        "00000000000000000002.timeindex",
        "leader-epoch-checkpoint",
    ];
    assert_eq!(names(&fx.dir), expected);
    let log = open_with(&fx, &scheduler, RollFlushMode::Background);
    append_idempotent(&log, 1);
    assert_eq!(log.roll().unwrap(), 3);
    assert_eq!(read_all(&log, 0).len(), 3);
    log.close().unwrap();
}

/// Files created ahead are preallocated when named, so a `segment.index.bytes` changed after
/// they were created applies to them.
#[test]
fn a_changed_index_size_applies_to_files_created_ahead() {
    let (fx, _scheduler, log) = rolled_once();
    log.update_config(config(&[("index.interval.bytes", "1"), ("segment.index.bytes", "2048")])).unwrap();
    append_idempotent(&log, 2);
    assert_eq!(log.roll().unwrap(), 4);
    append_idempotent(&log, 2);
    assert_eq!(std::fs::metadata(offset_index_file(&fx.dir, 4)).unwrap().len(), 2048);
    assert_eq!(std::fs::metadata(time_index_file(&fx.dir, 4)).unwrap().len(), 2040);
    log.close().unwrap();
}

/// A failure to create the new segment's `.log` (injected on its name) fails a roll that
/// would name a reserved file as it fails one that creates it: the error names the file, and
/// nothing of the new segment is left.
#[test]
fn a_failed_create_of_a_reserved_segment_file_fails_the_roll() {
    let (fx, _scheduler, log) = rolled_once();
    append_idempotent(&log, 2);
    let fault = inject(&log_file(&fx.dir, 4), FaultOp::Open, libc::EIO, Some(1));
    let err = log.roll().unwrap_err();
    assert!(matches!(err, Error::KafkaStorage { .. } | Error::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("00000000000000000004.log"), "{err}");
    drop(fault);
    assert!(!log_file(&fx.dir, 4).exists());
}
