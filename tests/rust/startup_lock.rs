//! A `LogManager` start-up that finds a partition directory locked by another writer (a
//! distributed clean, a standalone open) waits for it up to `partition_lock_timeout`, then
//! fails naming the partition and the holder. No sleeps: the test releases the lock when the
//! start-up reports, through its progress callback, that it is waiting.

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use kafkalog::error::Error;
use kafkalog::file_names::TopicPartition;
use kafkalog::manager::loading::{DirRecoveryProgress, ProgressCallback};
use kafkalog::manager::log_manager::{LogManager, LogManagerOptions};
use kafkalog::util::clock::ManualClock;
use kafkalog::util::file::DirLock;

use crate::common::{append_values, manager_config, scan_all, T0};

/// A start-up on a manual clock, no scheduler thread, waiting up to `timeout` for a locked
/// partition and reporting to `progress`.
fn lock_wait_options(timeout: Duration, progress: Option<ProgressCallback>) -> LogManagerOptions {
    LogManagerOptions {
        clock: ManualClock::new(T0),
        start_scheduler: false,
        progress,
        partition_lock_timeout: timeout,
        ..LogManagerOptions::default()
    }
}

/// A log dir holding `orders-0` with one record, closed cleanly.
fn log_dir(dir: &Path) -> std::path::PathBuf {
    let m = LogManager::open(manager_config(&[dir], &[]), lock_wait_options(Duration::ZERO, None)).unwrap();
    let log = m.get_or_create_log(&TopicPartition::new("orders", 0), None, None).unwrap();
    append_values(&log, T0, &["v"]);
    m.close(-1).unwrap();
    dir.join("orders-0")
}

#[test]
fn a_locked_partition_fails_the_start_up_after_the_timeout_naming_it_and_its_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let partition = log_dir(tmp.path());
    let _held = DirLock::try_lock(&partition).unwrap();
    let err = LogManager::open(manager_config(&[tmp.path()], &[]), lock_wait_options(Duration::ZERO, None))
        .map(|_| ())
        .unwrap_err();
    let me = std::process::id();
    match &err {
        Error::LogDirLocked { path, holder, waited_ms } => {
            assert_eq!(path, &partition);
            assert_eq!(holder.as_deref(), Some(format!("this process (pid {me})").as_str()));
            assert!(waited_ms.is_some());
        }
        other => panic!("expected LogDirLocked, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains("orders-0") && message.contains(&format!("pid {me}")), "{message}");
    assert!(message.contains("partition lock timeout"), "{message}");
}

#[test]
fn a_locked_partition_is_waited_for_and_loaded_when_released() {
    let tmp = tempfile::tempdir().unwrap();
    let partition = log_dir(tmp.path());
    let held = DirLock::try_lock(&partition).unwrap();
    let (tx, rx) = mpsc::channel::<Vec<std::path::PathBuf>>();
    let tx = std::sync::Mutex::new(tx);
    let progress: ProgressCallback = Arc::new(move |dirs: &[DirRecoveryProgress]| {
        let waiting: Vec<_> = dirs.iter().flat_map(|d| d.waiting_for_lock.clone()).collect();
        let _ = tx.lock().unwrap().send(waiting);
    });
    // The timeout only guards against a hang; the lock is released as soon as the start-up
    // says it waits.
    let dir = tmp.path().to_path_buf();
    let opener = std::thread::spawn(move || {
        LogManager::open(manager_config(&[&dir], &[]), lock_wait_options(Duration::from_secs(600), Some(progress)))
    });
    loop {
        let waiting = rx.recv().expect("the start-up reports progress");
        if !waiting.is_empty() {
            assert_eq!(waiting, vec![partition.clone()]);
            break;
        }
    }
    drop(held);
    let m = opener.join().unwrap().unwrap();
    let log = m.get_log(&TopicPartition::new("orders", 0)).unwrap().expect("loaded");
    assert_eq!(scan_all(&log, 0).unwrap().len(), 1);
    // The last report says nobody waits any more.
    let last = rx.try_iter().last().unwrap_or_default();
    assert!(last.is_empty(), "{last:?}");
    m.close(-1).unwrap();
}
