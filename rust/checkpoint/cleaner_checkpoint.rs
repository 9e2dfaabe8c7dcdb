//! A log dir's `cleaner-offset-checkpoint` kept by cleans that run outside a `LogManager`
//! (kafkalog's on-demand cleans of standalone partitions, such as the Spark maintenance jobs):
//! one partition's entry read, and one entry changed by a read-modify-write that keeps every
//! other entry. Kafka has no such writer: its `LogCleanerManager` owns the file for as long as
//! the broker holds the log dir's `.lock`, and writes it from its in-memory copy.
//!
//! The locks of an update, in the order taken:
//! 1. an exclusive `flock` on the log dir itself, waited for: it makes on-demand writers (in
//!    this process or others, such as several Spark tasks cleaning partitions of one log dir)
//!    take turns, so none writes the file from a copy read before another's write. Held only
//!    for the read, the change and the write.
//! 2. the log dir's `.lock`, the lock a `LogManager` and a Kafka broker hold for their whole
//!    life ([`FileLock`]), tried without waiting: while it is held the file belongs to that
//!    process, which would overwrite an entry written beside it, so the update is refused with
//!    `LogDirLocked` naming the lock file (and the holder when known). The lock is on the open
//!    file, so the file's identity is checked once held (a closing `LogManager` deletes it).
//!
//! The file is written as every checkpoint is (tmp + fsync + rename + directory fsync,
//! [`write_checkpoint`]), so a crash leaves the old or the new file. A missing or corrupt file
//! reads as empty, with Kafka's warning, as the `LogCleanerManager` reads it at start-up.
//!
//! Thread-safety: stateless functions; the locks above serialise writers across threads and
//! processes (`flock` and open-file locks conflict between open files, not only processes).

use std::path::Path;
use std::time::Duration;

use super::checkpoint_file::{read_checkpoint_or_empty, write_checkpoint};
use crate::error::{Error, Result};
use crate::file_names::{TopicPartition, CLEANER_OFFSET_CHECKPOINT_FILE, LOCK_FILE};
use crate::util::file::{DirLock, FileLock};

/// How long an update waits for another on-demand writer of the same log dir (each holds the
/// lock for one small read and one small write, so only a hung writer is ever waited out).
pub const UPDATE_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// How often an update retries when `.lock` was deleted and created anew under it.
const LOCK_FILE_RETRIES: usize = 8;

/// The first dirty offset the log dir's `cleaner-offset-checkpoint` holds for `tp`, or `None`
/// (no file, no entry; a corrupt file reads as empty, with Kafka's warning).
pub fn read_cleaner_checkpoint(log_dir: &Path, tp: &TopicPartition) -> Option<i64> {
    read_checkpoint_or_empty(log_dir, CLEANER_OFFSET_CHECKPOINT_FILE).get(tp).copied()
}

/// Sets `tp`'s entry of the log dir's `cleaner-offset-checkpoint` to `offset`, keeping every
/// other entry (see the module docs for the locks).
///
/// # Errors
/// `LogDirLocked` naming `.lock` when a `LogManager` or Kafka broker holds the log dir, or
/// naming the log dir when another on-demand writer held it for [`UPDATE_LOCK_TIMEOUT`];
/// `Io` naming the file on a failed read or write.
pub fn update_cleaner_checkpoint(log_dir: &Path, tp: &TopicPartition, offset: i64) -> Result<()> {
    update_with(log_dir, UPDATE_LOCK_TIMEOUT, &|| {}, &mut |entries| {
        entries.insert(tp.clone(), offset);
    })
}

/// The read-modify-write under both locks; `on_wait` is called once if the log dir's `flock`
/// is found held (a test seam: tests learn that a second writer waits without timing it).
pub(crate) fn update_with(
    log_dir: &Path,
    timeout: Duration,
    on_wait: &dyn Fn(),
    change: &mut dyn FnMut(&mut std::collections::HashMap<TopicPartition, i64>),
) -> Result<()> {
    with_on_demand_locks(log_dir, timeout, on_wait, || {
        let mut entries = read_checkpoint_or_empty(log_dir, CLEANER_OFFSET_CHECKPOINT_FILE);
        change(&mut entries);
        let entries: Vec<(TopicPartition, i64)> = entries.into_iter().collect();
        write_checkpoint(log_dir, CLEANER_OFFSET_CHECKPOINT_FILE, &entries)
    })
}

/// Runs `write` holding both locks of an on-demand writer of `log_dir` (see the module docs),
/// for any file of the log dir that on-demand cleans share with a `LogManager`.
///
/// # Errors
/// As [`update_cleaner_checkpoint`]'s locks; `write`'s own errors.
pub(crate) fn with_on_demand_locks<T>(
    log_dir: &Path,
    timeout: Duration,
    on_wait: &dyn Fn(),
    write: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let _writers = DirLock::lock_waiting(log_dir, timeout, on_wait)?;
    let _owner = lock_log_dir_file(log_dir)?;
    write()
}

/// Takes `<log_dir>/.lock` without waiting, on the file that name holds once locked.
fn lock_log_dir_file(log_dir: &Path) -> Result<FileLock> {
    let path = log_dir.join(LOCK_FILE);
    for _ in 0..LOCK_FILE_RETRIES {
        let lock = FileLock::try_lock(&path)?;
        if lock.is_at(&path) {
            return Ok(lock);
        }
    }
    Err(Error::LogDirLocked { path, holder: None, waited_ms: None })
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("users", p)
    }

    #[test]
    fn an_update_keeps_the_other_entries_and_kafkas_format() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_cleaner_checkpoint(dir.path(), &tp(0)), None);
        update_cleaner_checkpoint(dir.path(), &tp(1), 70).unwrap();
        update_cleaner_checkpoint(dir.path(), &tp(0), 30).unwrap();
        update_cleaner_checkpoint(dir.path(), &tp(1), 90).unwrap();
        let text = std::fs::read_to_string(dir.path().join(CLEANER_OFFSET_CHECKPOINT_FILE)).unwrap();
        assert_eq!(text, "0\n2\nusers 0 30\nusers 1 90\n");
        assert_eq!(read_cleaner_checkpoint(dir.path(), &tp(1)), Some(90));
        assert!(!dir.path().join("cleaner-offset-checkpoint.tmp").exists());
    }

    #[test]
    fn a_corrupt_file_reads_as_empty_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CLEANER_OFFSET_CHECKPOINT_FILE), "0\n3\nusers 0 5\n").unwrap();
        assert_eq!(read_cleaner_checkpoint(dir.path(), &tp(0)), None);
        update_cleaner_checkpoint(dir.path(), &tp(2), 8).unwrap();
        assert_eq!(read_checkpoint_or_empty(dir.path(), CLEANER_OFFSET_CHECKPOINT_FILE).len(), 1);
    }

    #[test]
    fn a_held_log_dir_lock_refuses_the_update_and_leaves_the_file() {
        let dir = tempfile::tempdir().unwrap();
        update_cleaner_checkpoint(dir.path(), &tp(0), 5).unwrap();
        let manager = FileLock::try_lock(&dir.path().join(LOCK_FILE)).unwrap();
        let err = update_cleaner_checkpoint(dir.path(), &tp(0), 9).unwrap_err();
        assert!(matches!(&err, Error::LogDirLocked { path, .. } if path.ends_with(LOCK_FILE)), "{err:?}");
        assert_eq!(read_cleaner_checkpoint(dir.path(), &tp(0)), Some(5));
        drop(manager);
        update_cleaner_checkpoint(dir.path(), &tp(0), 9).unwrap();
        assert_eq!(read_cleaner_checkpoint(dir.path(), &tp(0)), Some(9));
    }

    /// Two writers of one file, the first paused between its read and its write: the second
    /// must wait for the first (the `on_wait` seam says so, or its return says it did not), and
    /// both entries must survive. Without the log dir's `flock` the second writes first and the
    /// first then writes the copy it read before, losing the second's entry.
    #[test]
    fn a_second_writer_waits_and_no_entry_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let log_dir = dir.path().to_path_buf();
        let (read_tx, read_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let first = {
            let log_dir = log_dir.clone();
            std::thread::spawn(move || {
                update_with(&log_dir, UPDATE_LOCK_TIMEOUT, &|| {}, &mut |entries| {
                    read_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                    entries.insert(tp(0), 10);
                })
            })
        };
        read_rx.recv().unwrap();
        let (event_tx, event_rx) = mpsc::channel();
        let second = {
            let waiting = event_tx.clone();
            std::thread::spawn(move || {
                let on_wait = move || {
                    let _ = waiting.send("waiting");
                };
                let r = update_with(&log_dir, UPDATE_LOCK_TIMEOUT, &on_wait, &mut |entries| {
                    entries.insert(tp(1), 20);
                });
                let _ = event_tx.send("done");
                r
            })
        };
        let first_event = event_rx.recv().unwrap();
        go_tx.send(()).unwrap();
        first.join().unwrap().unwrap();
        second.join().unwrap().unwrap();
        assert_eq!(first_event, "waiting", "the second writer did not wait for the first");
        let entries = read_checkpoint_or_empty(dir.path(), CLEANER_OFFSET_CHECKPOINT_FILE);
        assert_eq!((entries.get(&tp(0)), entries.get(&tp(1))), (Some(&10), Some(&20)));
    }

    #[test]
    fn a_writer_held_past_the_timeout_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let _other = DirLock::try_lock(dir.path()).unwrap();
        let err = update_with(dir.path(), Duration::ZERO, &|| {}, &mut |_| {}).unwrap_err();
        assert!(matches!(&err, Error::LogDirLocked { path, waited_ms: Some(_), .. } if path == dir.path()), "{err:?}");
    }
}
