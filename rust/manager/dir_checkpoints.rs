//! The offset checkpoint files the `LogManager` keeps in each log dir (Kafka's
//! `checkpointLogRecoveryOffsets`, `checkpointLogStartOffsets` and the replication checkpoint):
//! which files, what each holds for a log, and their writing, a failure of which takes the dir
//! offline.
//!
//! Thread-safety: as `LogManager`'s; the dir's logs are listed under the state lock, the files
//! written outside it.

use std::path::Path;

use super::{Inner, LogEntry};
use crate::checkpoint::checkpoint_file::{read_checkpoint_or_empty, write_checkpoint};
use crate::error::Result;
use crate::file_names::{
    TopicPartition, CLEANER_OFFSET_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE, RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
};
use crate::log::unified_log::UnifiedLog;

/// An offset checkpoint file the manager writes, and what it holds for a log (`None`: no line).
pub(super) type Checkpoint = (&'static str, fn(&UnifiedLog) -> Option<i64>);

pub(super) const RECOVERY_POINTS: Checkpoint = (RECOVERY_POINT_CHECKPOINT_FILE, |log| Some(log.recovery_point()));
pub(super) const LOG_STARTS: Checkpoint = (LOG_START_OFFSET_CHECKPOINT_FILE, log_start_entry);
const HIGH_WATERMARKS: Checkpoint = (REPLICATION_OFFSET_CHECKPOINT_FILE, |log| Some(log.high_watermark()));
pub(super) const ALL_CHECKPOINTS: [Checkpoint; 3] = [RECOVERY_POINTS, LOG_STARTS, HIGH_WATERMARKS];

/// Kafka checkpoints a log start offset only when it lies past the first segment's base.
fn log_start_entry(log: &UnifiedLog) -> Option<i64> {
    let first_base = log.segments().first().map_or(0, |s| s.base_offset());
    (log.log_start_offset() > first_base).then_some(log.log_start_offset())
}

/// Writes each of `which` for the logs of `dir`, stopping at the first failure.
pub(super) fn write_checkpoints(dir: &Path, logs: &[LogEntry], which: &[Checkpoint]) -> Result<()> {
    for (name, value) in which {
        let entries: Vec<_> = logs.iter().filter_map(|(tp, l)| value(l).map(|o| (tp.clone(), o))).collect();
        write_checkpoint(dir, name, &entries)?;
    }
    Ok(())
}

impl Inner {
    /// Writes every checkpoint of `dir`.
    pub(super) fn checkpoint_dir(&self, dir: &Path) {
        self.checkpoint_files(dir, &ALL_CHECKPOINTS);
    }

    /// Drops `tp` from the dir's `cleaner-offset-checkpoint`, if the file lists it (Kafka's
    /// cleaner forgets a deleted partition).
    pub(super) fn forget_cleaner_checkpoint(&self, dir: &Path, tp: &TopicPartition) {
        let mut entries = read_checkpoint_or_empty(dir, CLEANER_OFFSET_CHECKPOINT_FILE);
        if entries.remove(tp).is_some() {
            let entries: Vec<_> = entries.into_iter().collect();
            if let Err(e) = write_checkpoint(dir, CLEANER_OFFSET_CHECKPOINT_FILE, &entries) {
                self.failure_channel.maybe_add_offline_log_dir(dir, &e.to_string());
            }
        }
    }

    /// Writes `which` for an online `dir`; a failure takes the dir offline.
    pub(super) fn checkpoint_files(&self, dir: &Path, which: &[Checkpoint]) {
        if self.failure_channel.has_offline_log_dir(dir) {
            return;
        }
        let logs = {
            let state = self.state.read();
            if !state.dirs.iter().any(|d| d.path == dir && d.online) {
                return;
            }
            state.logs_in(dir)
        };
        if let Err(e) = write_checkpoints(dir, &logs, which) {
            self.failure_channel.maybe_add_offline_log_dir(dir, &e.to_string());
        }
    }
}
