//! `LogManager` end to end through the Rust API (LogManagerTest behaviours): clean and unclean
//! restarts, the scheduler on a manual clock, the `.lock`, and a failing log dir.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kafkalog::error::Error;
use kafkalog::file_names::TopicPartition;
use kafkalog::manager::log_manager::{LogManager, LogManagerOptions};
use kafkalog::util::clock::ManualClock;
use kafkalog::util::fault::{inject, FaultOp};

use crate::common::{append_values, manager_config, scan_all, T0};

/// A `LogManager` over `dirs` with 300-byte segments and the broker keys `extra`, on `clock`,
/// with no scheduler thread.
fn open_small_segments(
    dirs: &[&Path],
    extra: &[(&str, &str)],
    clock: &Arc<ManualClock>,
) -> kafkalog::Result<LogManager> {
    let mut props = vec![("internal.segment.bytes", "300")];
    props.extend_from_slice(extra);
    let options = LogManagerOptions { clock: clock.clone(), start_scheduler: false, ..LogManagerOptions::default() };
    LogManager::open(manager_config(dirs, &props), options)
}

/// Partition `p` of the topic `orders`.
fn orders(p: i32) -> TopicPartition {
    TopicPartition::new("orders", p)
}

/// testCleanShutdownFileWithBrokerEpoch + testLogRecoveryIsCalledUponBrokerCrash: a clean close
/// leaves the marker and the next start recovers nothing; a crash (no close) recovers from the
/// checkpointed recovery point.
#[test]
fn clean_and_unclean_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let clock = ManualClock::new(T0);
    let m = open_small_segments(&[&a, &b], &[], &clock).unwrap();
    for p in 0..4 {
        let log = m.get_or_create_log(&orders(p), None, None).unwrap();
        for i in 0..10 {
            append_values(&log, T0, &[&format!("p{p}-{i}")]);
        }
    }
    let per_dir: Vec<usize> = m.log_dirs().iter().map(|d| d.partitions).collect();
    assert_eq!(per_dir, vec![2, 2], "placement spreads partitions over the dirs");
    m.close(7).unwrap();
    assert_eq!(std::fs::read_to_string(a.join(".kafka_cleanshutdown")).unwrap(), r#"{"version":0,"brokerEpoch":7}"#);
    assert!(!a.join(".lock").exists(), "Kafka deletes .lock at shutdown");

    let m = open_small_segments(&[&a, &b], &[], &clock).unwrap();
    assert!(!a.join(".kafka_cleanshutdown").exists(), "the marker is deleted at start-up");
    for s in m.load_summary() {
        assert!(s.had_clean_shutdown);
        assert_eq!(s.segments_recovered, 0, "{}: nothing to recover after a clean shutdown", s.dir.display());
        assert_eq!(s.logs_loaded, 2);
    }
    for p in 0..4 {
        let log = m.get_log(&orders(p)).unwrap().unwrap();
        assert_eq!(scan_all(&log, 0).unwrap().len(), 10);
        assert_eq!(log.recovery_point(), 10);
    }
    m.checkpoint().unwrap();
    m.get_log(&orders(0)).unwrap().unwrap().roll().unwrap();
    append_values(&m.get_log(&orders(0)).unwrap().unwrap(), T0, &["after the checkpoint"]);
    drop(m); // a crash: no flush, no marker

    let m = open_small_segments(&[&a, &b], &[], &clock).unwrap();
    let recovered: usize = m.load_summary().iter().map(|s| s.segments_recovered).sum();
    assert!(m.load_summary().iter().all(|s| !s.had_clean_shutdown));
    assert!(recovered >= 4, "every log recovers from its checkpointed recovery point ({recovered})");
    assert_eq!(scan_all(&m.get_log(&orders(0)).unwrap().unwrap(), 0).unwrap().len(), 11);
    m.close(-1).unwrap();
}

/// testTwoLogManagersUsingSameDirFails.
#[test]
fn a_second_manager_on_the_same_dir_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let first = open_small_segments(&[tmp.path()], &[], &clock).unwrap();
    match open_small_segments(&[tmp.path()], &[], &clock) {
        Err(Error::LogDirLocked { path, .. }) => assert_eq!(path, tmp.path().join(".lock")),
        other => panic!("expected LogDirLocked, got {:?}", other.map(|_| ())),
    }
    first.close(-1).unwrap();
    open_small_segments(&[tmp.path()], &[], &clock).unwrap().close(-1).unwrap();
}

/// testCleanupExpiredSegments driven by the scheduler: after `log.initial.task.delay.ms`, the
/// retention task deletes expired segments and the checkpoint tasks write their files.
#[test]
fn scheduled_retention_and_checkpoints() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let extra = [
        ("log.retention.ms", "60000"),
        ("log.initial.task.delay.ms", "1000"),
        ("log.retention.check.interval.ms", "5000"),
        ("log.segment.delete.delay.ms", "0"),
    ];
    let m = open_small_segments(&[tmp.path()], &extra, &clock).unwrap();
    let log = m.get_or_create_log(&orders(0), None, None).unwrap();
    for i in 0..30 {
        append_values(&log, T0, &[&format!("old-{i:03}")]);
    }
    assert!(log.number_of_segments() > 3);
    clock.advance(500);
    m.tick();
    assert!(!tmp.path().join("recovery-point-offset-checkpoint").exists(), "nothing before the initial delay");
    clock.advance(120_000);
    m.tick();
    assert_eq!(log.number_of_segments(), 1, "every expired segment went; one empty segment remains");
    assert_eq!(log.log_start_offset(), 30);
    assert_eq!(log.log_end_offset(), 30);
    let checkpoint = std::fs::read_to_string(tmp.path().join("recovery-point-offset-checkpoint")).unwrap();
    assert_eq!(checkpoint, "0\n1\norders 0 30\n");
    let deleted: Vec<PathBuf> = std::fs::read_dir(log.dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".deleted"))
        .collect();
    assert!(deleted.is_empty(), "with a zero delay the files are gone: {deleted:?}");
    m.close(-1).unwrap();
}

/// An I/O error in one log dir takes it offline while the other keeps serving; the last dir
/// failing is fatal (Kafka's handleLogDirFailure).
#[test]
fn a_failing_dir_goes_offline_and_the_last_one_is_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let clock = ManualClock::new(T0);
    let m = open_small_segments(&[&a, &b], &[], &clock).unwrap();
    let in_a = m.get_or_create_log(&orders(0), None, None).unwrap();
    let in_b = m.get_or_create_log(&orders(1), None, None).unwrap();
    assert_eq!(in_a.log_dir(), a.as_path());
    // Epoch 0 assigned first, so the failing write is the segment's, not the epoch checkpoint's.
    append_values(&in_a, T0, &["before"]);
    let fault = inject(&a, FaultOp::Write, libc::EIO, None);
    let mut batch = crate::common::values_batch(0, T0, &["x"]);
    match in_a.append_as_leader(&mut batch, 0) {
        Err(Error::KafkaStorage { path, reason }) => {
            assert_eq!(path, a);
            assert!(reason.contains("00000000000000000000.log"), "{reason}");
        }
        other => panic!("expected KafkaStorage, got {other:?}"),
    }
    let dirs = m.log_dirs();
    assert!(!dirs[0].online && dirs[1].online, "{dirs:?}");
    assert!(m.get_log(&orders(0)).unwrap().is_none());
    append_values(&in_b, T0, &["still serving"]);
    let placed = m.get_or_create_log(&orders(2), None, None).unwrap();
    assert_eq!(placed.log_dir(), b.as_path(), "no placement in an offline dir");
    drop(fault);

    let _fault = inject(&b, FaultOp::Fsync, libc::EIO, None);
    assert!(matches!(m.flush(), Err(Error::AllLogDirsOffline { .. })));
    match m.get_or_create_log(&orders(3), None, None) {
        Err(e @ Error::AllLogDirsOffline { .. }) => assert!(e.to_string().contains("have failed"), "{e}"),
        other => panic!("expected AllLogDirsOffline, got {:?}", other.map(|_| ())),
    }
}
