//! The `LogManager`'s scheduled tasks (Kafka's `LogManager.startup` schedules them): retention
//! (`cleanupLogs`), the flush of logs past `flush.ms` (`flushDirtyLogs`), the removal of
//! `-delete` directories past their delay (`deleteLogs`), the checkpoints and the producer
//! expiration check, each run when due by [`Inner::tick`] (from the scheduler thread, or by the
//! caller without it).
//!
//! Thread-safety: as `LogManager`'s; the tasks take the manager's locks only briefly and run
//! their I/O outside them.

use std::path::{Path, PathBuf};

use super::dir_checkpoints::{LOG_STARTS, RECOVERY_POINTS};
use super::{
    Inner, DELETE_LOGS_TASK, FLUSH_TASK, LOG_START_TASK, PRODUCER_EXPIRATION_TASK, RECOVERY_POINT_TASK, RETENTION_TASK,
};
use crate::file_names::TopicPartition;
use crate::log::unified_log::{RetentionOptions, RetentionResult};
use crate::util::progress::{Progress, ProgressSink};

impl Inner {
    pub(super) fn tick(&self) -> i64 {
        // Without the scheduler thread, the flushes after rolls run here (before the
        // checkpoints, which then see their recovery points).
        if self.flush_scheduler.is_manual() {
            self.flush_scheduler.run_pending();
        }
        self.process_failures();
        if self.state.read().closed {
            return i64::MAX;
        }
        let now = self.clock.milliseconds();
        let due = self.tasks.lock().take_due(now);
        for task in due {
            match task {
                RETENTION_TASK => {
                    self.cleanup_logs(RetentionOptions::default(), None);
                }
                FLUSH_TASK => self.flush_dirty_logs(),
                RECOVERY_POINT_TASK | LOG_START_TASK => {
                    let dirs: Vec<PathBuf> =
                        self.state.read().dirs.iter().filter(|d| d.online).map(|d| d.path.clone()).collect();
                    let which = if task == RECOVERY_POINT_TASK { RECOVERY_POINTS } else { LOG_STARTS };
                    for dir in dirs {
                        self.checkpoint_files(&dir, &[which]);
                    }
                }
                DELETE_LOGS_TASK => self.delete_logs(now),
                PRODUCER_EXPIRATION_TASK => {
                    for log in self.all_logs() {
                        log.remove_expired_producers(now);
                    }
                }
                _ => {}
            }
        }
        for log in self.all_logs() {
            if let Err(e) = log.delete_due_files() {
                log::warn!("deleting old segment files of {} failed: {e}", log.dir().display());
            }
        }
        self.cleaner_health_check();
        self.process_failures();
        self.tasks.lock().until_next(self.clock.milliseconds())
    }

    /// Kafka's `cleanupLogs`: retention on every log whose policy does not include `compact`
    /// (with a cleaner, only the idle ones, paused meanwhile; compacted logs get retention from
    /// the cleaner threads).
    pub(super) fn cleanup_logs(
        &self,
        options: RetentionOptions,
        progress: Option<&ProgressSink>,
    ) -> Vec<(TopicPartition, RetentionResult)> {
        let logs = self.logs_for_retention();
        let mut out = Vec::new();
        let report = |done: usize| {
            if let Some(sink) = progress {
                let total = logs.len() as u64;
                sink.report(&Progress { phase: "retention", done: done as u64, total, unit: "logs", round: 1 });
            }
        };
        report(0);
        for (i, (tp, log)) in logs.iter().enumerate() {
            if progress.is_some_and(ProgressSink::is_cancelled) {
                break;
            }
            match log.delete_old_segments_with(options) {
                Ok(result) => {
                    for w in &result.warnings {
                        log::warn!("{w}");
                    }
                    out.push((tp.clone(), result));
                }
                Err(e) => log::error!("retention of {tp} failed: {e}"),
            }
            report(i + 1);
        }
        self.retention_done(&logs);
        out
    }

    /// Kafka's `flushDirtyLogs`: flushes every log whose last flush is older than `flush.ms`.
    fn flush_dirty_logs(&self) {
        let now = self.clock.milliseconds();
        for log in self.all_logs() {
            if now - log.last_flush_time() >= log.config().flush_ms {
                if let Err(e) = log.flush() {
                    log::error!("flush of {} failed: {e}", log.dir().display());
                }
            }
        }
    }

    /// Kafka's `deleteLogs`: removes the `-delete` directories whose delay has passed.
    fn delete_logs(&self, now: i64) {
        let due: Vec<PathBuf> = {
            let mut state = self.state.write();
            let (due, keep): (Vec<_>, Vec<_>) = state.to_delete.drain(..).partition(|(_, t)| *t <= now);
            state.to_delete = keep;
            due.into_iter().map(|(p, _)| p).collect()
        };
        for path in due {
            match std::fs::remove_dir_all(&path) {
                Ok(()) => log::info!("deleted log directory {}", path.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
                    self.failure_channel
                        .maybe_add_offline_log_dir(&parent, &format!("deleting {} failed: {e}", path.display()));
                }
            }
        }
    }
}
