//! The cleaner manager tests' kit (`log_cleaner_manager.rs`, `cleaner_threads.rs`): an `Env` of
//! log dirs, a manual clock and the partition map a `LogCleanerManager` reads, compacted configs,
//! appends, and waits for a state another thread reaches (with a hang guard, never a fixed time).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafkalog::checkpoint::checkpoint_file::read_checkpoint_or_empty;
use kafkalog::cleaner::log_cleaner::{LogCleaner, LogCleanerContext};
use kafkalog::cleaner::log_cleaner_manager::{LogCleanerManager, LogEntry, LogSource, PreCleanStats};
use kafkalog::cleaner::log_to_clean::LogToClean;
use kafkalog::config::CleanerConfig;
use kafkalog::file_names::TopicPartition;
use kafkalog::file_names::CLEANER_OFFSET_CHECKPOINT_FILE;
use kafkalog::log::log_dir_failure_channel::LogDirFailureChannel;
use kafkalog::log::unified_log::{LogOpenOptions, UnifiedLog};
use kafkalog::record::CompressionType;
use kafkalog::util::clock::ManualClock;

use super::{batch, config, T0};

pub(crate) const HOUR: i64 = 3_600_000;

/// A log dir (or two), a manual clock and a partition map the manager reads.
pub(crate) struct Env {
    _tmp: tempfile::TempDir,
    pub(crate) dirs: Vec<PathBuf>,
    pub(crate) clock: Arc<ManualClock>,
    channel: Arc<LogDirFailureChannel>,
    pub(crate) logs: Arc<Mutex<Vec<LogEntry>>>,
}

impl Env {
    pub(crate) fn new() -> Self {
        Self::with_dirs(1)
    }

    pub(crate) fn with_dirs(n: usize) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = (0..n).map(|i| tmp.path().join(format!("data{i}"))).collect();
        for d in &dirs {
            std::fs::create_dir_all(d).unwrap();
        }
        Env {
            _tmp: tmp,
            dirs,
            clock: ManualClock::new(T0),
            channel: Arc::new(LogDirFailureChannel::new()),
            logs: Arc::default(),
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dirs[0]
    }

    fn source(&self) -> LogSource {
        let logs = self.logs.clone();
        Arc::new(move || logs.lock().unwrap().clone())
    }

    pub(crate) fn manager(&self) -> LogCleanerManager {
        LogCleanerManager::new(&self.dirs, self.source(), self.channel.clone(), self.clock.clone())
    }

    pub(crate) fn cleaner(&self, config: CleanerConfig) -> LogCleaner {
        let ctx = LogCleanerContext {
            log_dirs: self.dirs.clone(),
            logs: self.source(),
            failure_channel: self.channel.clone(),
            clock: self.clock.clone(),
            max_message_bytes: 1_048_588,
        };
        LogCleaner::new(config, ctx)
    }

    /// Opens `<topic>-0` in the first dir with `props` and adds it to the partition map.
    pub(crate) fn log(&self, topic: &str, props: &[(&str, &str)]) -> Arc<UnifiedLog> {
        self.log_in(0, topic, props)
    }

    /// Closes `log` and opens it again in its place in the partition map.
    pub(crate) fn reopen(&self, log: &Arc<UnifiedLog>, props: &[(&str, &str)]) -> Arc<UnifiedLog> {
        log.close().unwrap();
        let topic = log.topic_partition().topic.clone();
        let index = self.dirs.iter().position(|d| d == log.log_dir()).unwrap();
        self.logs.lock().unwrap().retain(|(tp, _)| tp.topic != topic);
        self.log_in(index, &topic, props)
    }

    pub(crate) fn log_in(&self, dir: usize, topic: &str, props: &[(&str, &str)]) -> Arc<UnifiedLog> {
        let options = LogOpenOptions {
            clock: self.clock.clone(),
            log_dir_failure_channel: Some(self.channel.clone()),
            ..LogOpenOptions::default()
        };
        let path = self.dirs[dir].join(format!("{topic}-0"));
        let log = Arc::new(UnifiedLog::open(&path, config(props), options).unwrap());
        self.logs.lock().unwrap().push((log.topic_partition().clone(), log.clone()));
        log
    }
}

/// Compacted, small segments (about three one-record batches each), any dirty ratio cleans.
pub(crate) fn compact(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut p =
        vec![("cleanup.policy", "compact"), ("internal.segment.bytes", "300"), ("min.cleanable.dirty.ratio", "0.01")];
    p.extend_from_slice(extra);
    p
}

/// Appends `n` one-record batches, keys `key-(i % keys)`, timestamped `ts`.
pub(crate) fn fill(log: &UnifiedLog, n: usize, keys: usize, ts: i64) {
    for i in 0..n {
        let (k, v) = (format!("key-{}", i % keys), format!("value-{i}"));
        let mut b = batch(0, CompressionType::None, &[(Some(k.as_bytes()), Some(v.as_bytes()), ts)]);
        log.append_as_leader(&mut b, 0).unwrap();
    }
}

pub(crate) fn base(log: &UnifiedLog, segment: usize) -> i64 {
    log.segments()[segment].base_offset()
}

pub(crate) fn file_checkpoints(dir: &Path) -> std::collections::HashMap<TopicPartition, i64> {
    read_checkpoint_or_empty(dir, CLEANER_OFFSET_CHECKPOINT_FILE)
}

pub(crate) fn tp(topic: &str) -> TopicPartition {
    TopicPartition::new(topic, 0)
}

pub(crate) fn grab(m: &LogCleanerManager) -> Option<LogToClean> {
    m.grab_filthiest_compacted_log(&mut PreCleanStats::default())
}

/// How long a test waits for a state a cleaner thread reaches (the engine's `wait_for_*`
/// calls block on its events; this only turns a hang into a failure).
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(300);
