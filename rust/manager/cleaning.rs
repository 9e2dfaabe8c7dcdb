//! The `LogManager`'s side of log compaction (Kafka's `LogManager` wiring of its `LogCleaner`):
//! the cleaner is created at open when `log.cleaner.enable` is true (its threads start with
//! the scheduler), stopped first at close, told about deleted partitions, failed dirs and topic
//! config changes, and its dead threads are restarted from the scheduler tick. On top of
//! Kafka: compaction on demand, a per-partition status, the gauges as values, retrying
//! uncleanable partitions, one loop iteration on the caller's thread, and reconfiguration of
//! the `log.cleaner.*` keys at run time.
//!
//! Thread-safety: as `LogManager`. Calls into the cleaner are made without the manager's state
//! lock held (the cleaner reads the partition map under its own lock).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use super::Inner;
use crate::cleaner::cleaner_status::{CleanerPartitionStatus, StatusFilter};
use crate::cleaner::log_cleaner::{CleanOutcome, CleanerMetrics, LogCleaner, LogCleanerContext};
use crate::cleaner::log_cleaner_manager::{LogEntry, LogSource};
use crate::cleaner::CompactResult;
use crate::config::{CleanerConfig, LogManagerConfig};
use crate::error::{Error, Result};
use crate::file_names::TopicPartition;
use crate::log::log_dir_failure_channel::LogDirFailureChannel;
use crate::manager::log_manager::LogManager;
use crate::util::clock::SharedClock;
use crate::util::progress::ProgressSink;

/// The `log.cleaner.*` keys that [`LogManager::reconfigure_cleaner_props`] accepts (Kafka's
/// `LogCleaner.RECONFIGURABLE_CONFIGS` without `message.max.bytes`, which here is a topic
/// default and not reconfigurable).
pub const RECONFIGURABLE_CLEANER_KEYS: [&str; 6] = [
    "log.cleaner.threads",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms",
];

/// The cleaner of a new manager, when `log.cleaner.enable` is true. It reads the partition map
/// through `weak`, so it never keeps the manager alive.
pub(super) fn new_log_cleaner(
    config: &LogManagerConfig,
    live_dirs: &[PathBuf],
    weak: Weak<Inner>,
    failure_channel: Arc<LogDirFailureChannel>,
    clock: SharedClock,
) -> Option<Arc<LogCleaner>> {
    if !config.cleaner.enable_cleaner {
        log::warn!(
            "log.cleaner.enable=false: compacted topics are neither compacted nor given retention (the key is \
             deprecated since Kafka 4.1; from Kafka 5.0 the log cleaner is always enabled)"
        );
        return None;
    }
    let logs: LogSource = Arc::new(move || {
        weak.upgrade().map_or_else(Vec::new, |inner| {
            inner.state.read().current.iter().map(|(tp, l)| (tp.clone(), l.clone())).collect::<Vec<LogEntry>>()
        })
    });
    let ctx = LogCleanerContext {
        log_dirs: live_dirs.to_vec(),
        logs,
        failure_channel,
        clock,
        max_message_bytes: usize::try_from(config.log_config().max_message_bytes.max(0)).unwrap_or(0),
    };
    Some(Arc::new(LogCleaner::new(config.cleaner.clone(), ctx)))
}

fn disabled() -> Error {
    Error::invalid_config(
        "log.cleaner.enable",
        false,
        "the log cleaner is disabled; open the LogManager with log.cleaner.enable=true to compact",
    )
}

impl LogManager {
    /// The log cleaner (`None` when `log.cleaner.enable` is false).
    pub fn log_cleaner(&self) -> Option<&Arc<LogCleaner>> {
        self.inner.cleaner.as_ref()
    }

    fn cleaner_or_err(&self) -> Result<&Arc<LogCleaner>> {
        self.inner.check_usable()?;
        self.inner.cleaner.as_ref().ok_or_else(disabled)
    }

    /// Compacts `tp` now: its whole cleanable range, in as many passes as the offset map needs,
    /// from its cleaner checkpoint (which then moves to where the clean ended). Waits for a
    /// cleaner thread that is cleaning it; fails when its cleaning is paused, when it is not
    /// compacted, or when the cleaner is disabled.
    pub fn compact_now(&self, tp: &TopicPartition) -> Result<CompactResult> {
        self.compact_now_with_progress(tp, None)
    }

    /// [`LogManager::compact_now`], reporting the clean's progress to `progress`; cancelling
    /// it stops the clean with `LogCleaningAborted` (the partition is released either way).
    pub fn compact_now_with_progress(
        &self,
        tp: &TopicPartition,
        progress: Option<ProgressSink>,
    ) -> Result<CompactResult> {
        let cleaner = self.cleaner_or_err()?;
        let result = cleaner.compact_now_with_progress(tp, progress);
        self.inner.process_failures();
        result
    }

    /// The compaction status of every compacted partition `filter` selects.
    pub fn cleaner_status(&self, filter: &StatusFilter) -> Result<Vec<CleanerPartitionStatus>> {
        Ok(self.cleaner_or_err()?.status(filter))
    }

    /// Kafka's cleaner gauges.
    pub fn cleaner_metrics(&self) -> Result<CleanerMetrics> {
        Ok(self.cleaner_or_err()?.metrics())
    }

    /// Clears the uncleanable mark of `tp` (or of every partition) so the cleaner tries again;
    /// returns the partitions cleared.
    pub fn retry_uncleanable(&self, tp: Option<&TopicPartition>) -> Result<Vec<TopicPartition>> {
        Ok(self.cleaner_or_err()?.manager().retry_uncleanable(tp))
    }

    /// Clears the uncleanable mark of every partition `filter` selects; returns them.
    pub fn retry_uncleanable_matching(&self, filter: &StatusFilter) -> Result<Vec<TopicPartition>> {
        Ok(self.cleaner_or_err()?.manager().retry_uncleanable_where(&|tp| filter.matches(tp)))
    }

    /// Runs one iteration of a cleaner thread's loop on this thread (for a manual clock): the
    /// filthiest log is cleaned, then retention runs on the idle compacted logs. `None` when no
    /// log needed cleaning.
    pub fn run_cleaner_once(&self) -> Result<Option<CleanOutcome>> {
        let outcome = self.cleaner_or_err()?.run_once();
        self.inner.process_failures();
        Ok(outcome)
    }

    /// Applies new cleaner settings at run time (Kafka's dynamic `log.cleaner.*` update): the
    /// throttle rate changes at once, and running threads are replaced by `num_threads` new
    /// ones with the new buffer sizes. The thread count may at most double or halve.
    pub fn reconfigure_cleaner(&self, config: &CleanerConfig) -> Result<()> {
        self.cleaner_or_err()?.reconfigure(config)
    }

    /// [`LogManager::reconfigure_cleaner`] from Kafka keys (only
    /// [`RECONFIGURABLE_CLEANER_KEYS`]), each checked against its key's range; keys not given
    /// keep their current value. Returns the new config.
    pub fn reconfigure_cleaner_props(&self, props: &[(&str, &str)]) -> Result<CleanerConfig> {
        let cleaner = self.cleaner_or_err()?;
        let mut scratch = self.inner.config.clone();
        scratch.cleaner = cleaner.current_config();
        for (key, value) in props {
            if !RECONFIGURABLE_CLEANER_KEYS.contains(key) {
                let rule = format!(
                    "is not reconfigurable at run time; the keys that are: {}",
                    RECONFIGURABLE_CLEANER_KEYS.join(", ")
                );
                return Err(Error::invalid_config(key, value, rule));
            }
            scratch.set(key, value)?;
        }
        cleaner.reconfigure(&scratch.cleaner)?;
        Ok(scratch.cleaner)
    }
}

impl LogManager {
    /// The `log.cleaner.*` keys of the running cleaner with their current values (after any
    /// reconfiguration), as Kafka prints them; empty without a cleaner.
    pub fn cleaner_props(&self) -> Vec<(String, String)> {
        let Some(cleaner) = &self.inner.cleaner else { return Vec::new() };
        let mut config = self.inner.config.clone();
        config.cleaner = cleaner.current_config();
        config
            .to_props()
            .into_iter()
            .filter(|(k, _)| k.starts_with("log.cleaner.") && !matches!(*k, "log.cleaner.enable"))
            .filter(|(k, _)| RECONFIGURABLE_CLEANER_KEYS.contains(k))
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }
}

impl Inner {
    /// Restarts dead cleaner threads (from the scheduler tick).
    pub(super) fn cleaner_health_check(&self) {
        if let Some(cleaner) = &self.cleaner {
            match cleaner.maybe_restart_dead_threads() {
                Ok(0) => {}
                Ok(n) => log::warn!("restarted {n} dead log cleaner thread(s)"),
                Err(e) => log::error!("cannot restart dead log cleaner threads: {e}"),
            }
        }
    }

    /// Aborts a running clean of `tp`, waits for it, and pauses the partition (before it is
    /// deleted). No-op without a cleaner.
    pub(super) fn pause_cleaning_for_deletion(&self, tp: &TopicPartition) {
        if let Some(cleaner) = &self.cleaner {
            cleaner.manager().abort_and_pause_cleaning_for(tp, "log deletion");
        }
    }

    /// Forgets a deleted partition's cleaner state and `cleaner-offset-checkpoint` line.
    pub(super) fn forget_cleaner_state(&self, dir: &Path, tp: &TopicPartition) {
        match &self.cleaner {
            Some(cleaner) => cleaner.manager().forget_partition(tp, dir),
            None => self.forget_cleaner_checkpoint(dir, tp),
        }
    }

    /// After a topic config change: a clean running on a partition that is no longer compacted
    /// is aborted (Kafka's `updateTopicConfig`), and the topic's uncleanable partitions are
    /// retried.
    pub(super) fn cleaner_config_changed(&self, changed: &[(TopicPartition, bool, bool)]) {
        let Some(cleaner) = &self.cleaner else { return };
        for (tp, was_compact, is_compact) in changed {
            if *was_compact && !*is_compact {
                cleaner.manager().abort_cleaning(tp);
                log::info!("the cleaning for partition {tp} is aborted (compact was removed from cleanup.policy)");
            }
            cleaner.manager().retry_uncleanable(Some(tp));
        }
    }

    /// The logs a retention run covers (Kafka's `cleanupLogs`): with a cleaner, the idle
    /// non-compacted logs, paused until [`Inner::retention_done`]; without, every
    /// non-compacted log.
    pub(super) fn logs_for_retention(&self) -> Vec<LogEntry> {
        if let Some(cleaner) = &self.cleaner {
            return cleaner.manager().pause_cleaning_for_non_compacted_partitions();
        }
        let state = self.state.read();
        state.current.iter().filter(|(_, l)| !l.config().compact()).map(|(tp, l)| (tp.clone(), l.clone())).collect()
    }

    /// Resumes the partitions paused by [`Inner::logs_for_retention`].
    pub(super) fn retention_done(&self, logs: &[LogEntry]) {
        if let Some(cleaner) = &self.cleaner {
            let tps: Vec<TopicPartition> = logs.iter().map(|(tp, _)| tp.clone()).collect();
            if let Err(e) = cleaner.manager().resume_cleaning(&tps) {
                log::error!("{e}");
            }
        }
    }

    /// Tells the cleaner that `dirs` failed.
    pub(super) fn cleaner_dirs_failed(&self, dirs: &[PathBuf]) {
        if let Some(cleaner) = &self.cleaner {
            for dir in dirs {
                cleaner.manager().handle_log_dir_failure(dir);
            }
        }
    }
}
