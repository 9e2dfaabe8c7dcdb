//! The storage subsystem over several log dirs (Kafka's `LogManager`, `kafka/log/LogManager.scala`):
//! locks and validates the dirs, loads and recovers every partition in parallel at start-up,
//! places new partitions, deletes partitions (rename to `-delete`, unlink later), keeps the
//! recovery-point and log-start checkpoints, runs retention, flush and deletion on a schedule
//! (and on demand), takes a failed log dir offline while the others keep serving, and writes the
//! clean-shutdown marker at close. The log cleaner's wiring lives in `cleaning.rs`.
//!
//! Thread-safety: `LogManager` is `Send + Sync`. The partition maps sit behind one `RwLock`
//! held only briefly; creation, deletion and close serialise on a separate mutex (Kafka's
//! `logCreationOrDeletionLock`); I/O on logs runs outside both.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use super::loading::{load_log_dirs, DirLoadSummary, LoadContext, LoadedDir, ProgressCallback};
use super::log_dir::LogDir;
use super::scheduler::{SchedulerThread, Tasks};
use super::startup::{check_meta_properties, create_and_validate_log_dirs, lock_log_dirs};
use crate::checkpoint::log_dir_files::write_clean_shutdown;
use crate::checkpoint::partition_metadata::TopicId;
use crate::cleaner::log_cleaner::LogCleaner;
use crate::config::LogConfig;
use crate::config::LogManagerConfig;
use crate::error::{Error, Result};
use crate::file_names::{
    log_delete_dir_name, validate_partition_dir_name, validate_topic_name, TopicPartition, CLEAN_SHUTDOWN_FILE,
    LOCK_FILE,
};
use crate::log::log_dir_failure_channel::LogDirFailureChannel;
use crate::log::unified_log::{LogOpenOptions, RetentionOptions, RetentionResult, UnifiedLog};
use crate::util::background::BackgroundScheduler;
use crate::util::clock::{system_clock, SharedClock};
use crate::util::progress::ProgressSink;
use dir_checkpoints::{write_checkpoints, ALL_CHECKPOINTS};

/// A partition and its log.
type LogEntry = (TopicPartition, Arc<UnifiedLog>);

const RETENTION_TASK: &str = "kafka-log-retention";
const FLUSH_TASK: &str = "kafka-log-flusher";
const RECOVERY_POINT_TASK: &str = "kafka-recovery-point-checkpoint";
const LOG_START_TASK: &str = "kafka-log-start-offset-checkpoint";
const DELETE_LOGS_TASK: &str = "kafka-delete-logs";
/// Kafka's per-log `PeriodicProducerExpirationCheck`, run here for every log at once.
const PRODUCER_EXPIRATION_TASK: &str = "PeriodicProducerExpirationCheck";

#[path = "cleaning.rs"]
pub mod cleaning;
#[path = "dir_checkpoints.rs"]
mod dir_checkpoints;
#[path = "scheduled_tasks.rs"]
mod scheduled_tasks;

/// How to open a `LogManager`.
#[derive(Clone)]
pub struct LogManagerOptions {
    /// The clock for every log and task.
    pub clock: SharedClock,
    /// Start the `kafka-scheduler-0` thread and the log cleaner threads. Tests with a manual
    /// clock leave it off and call [`LogManager::tick`] and [`LogManager::run_cleaner_once`].
    pub start_scheduler: bool,
    /// Told how recovery is going while the logs load.
    pub progress: Option<ProgressCallback>,
    /// Per-topic configs (Kafka reads these from the cluster metadata); others use the
    /// broker defaults.
    pub topic_configs: HashMap<String, LogConfig>,
    /// How long start-up waits for a partition directory another writer has locked (a
    /// distributed clean, a standalone open) before it fails naming the partition and holder.
    pub partition_lock_timeout: std::time::Duration,
}

/// [`LogManagerOptions::partition_lock_timeout`]'s default.
pub const DEFAULT_PARTITION_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Default for LogManagerOptions {
    fn default() -> Self {
        LogManagerOptions {
            clock: system_clock(),
            start_scheduler: true,
            progress: None,
            topic_configs: HashMap::new(),
            partition_lock_timeout: DEFAULT_PARTITION_LOCK_TIMEOUT,
        }
    }
}

/// A log dir as reported to callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirInfo {
    /// The directory.
    pub path: PathBuf,
    /// Serving.
    pub online: bool,
    /// No new partitions are placed here.
    pub cordoned: bool,
    /// Partitions (current and future) held.
    pub partitions: usize,
    /// Why it went offline.
    pub offline_reason: Option<String>,
    /// `directory.id` from `meta.properties`.
    pub directory_id: Option<String>,
}

/// The storage subsystem. Mirrors Kafka's `LogManager`.
pub struct LogManager {
    inner: Arc<Inner>,
    scheduler: Mutex<Option<SchedulerThread>>,
}

struct Inner {
    config: LogManagerConfig,
    clock: SharedClock,
    failure_channel: Arc<LogDirFailureChannel>,
    state: RwLock<State>,
    creation_lock: Mutex<()>,
    tasks: Mutex<Tasks>,
    load_summary: Vec<DirLoadSummary>,
    /// The log cleaner, when `log.cleaner.enable` is true.
    cleaner: Option<Arc<LogCleaner>>,
    /// Where the logs' `flush-log` tasks (the flush after a roll) run: a `kafka-flush-log`
    /// thread with the scheduler on, run by `tick` without it.
    flush_scheduler: Arc<BackgroundScheduler>,
}

#[derive(Default)]
struct State {
    dirs: Vec<LogDir>,
    current: BTreeMap<TopicPartition, Arc<UnifiedLog>>,
    future: BTreeMap<TopicPartition, Arc<UnifiedLog>>,
    /// `-delete` directories and when they may be removed.
    to_delete: Vec<(PathBuf, i64)>,
    stray: Vec<PathBuf>,
    topic_configs: HashMap<String, LogConfig>,
    topic_ids: HashMap<String, TopicId>,
    closed: bool,
    /// Set when the last log dir failed.
    fatal: Option<String>,
}

impl State {
    fn logs_in(&self, dir: &Path) -> Vec<(TopicPartition, Arc<UnifiedLog>)> {
        self.current
            .iter()
            .chain(&self.future)
            .filter(|(_, log)| log.log_dir() == dir)
            .map(|(tp, log)| (tp.clone(), log.clone()))
            .collect()
    }
}

impl LogManager {
    /// Opens every dir of `log.dirs`: creates missing ones, takes each `.lock`, checks or writes
    /// `meta.properties`, loads and recovers all partitions, and schedules the periodic tasks.
    #[allow(clippy::needless_pass_by_value)]
    pub fn open(config: LogManagerConfig, options: LogManagerOptions) -> Result<Self> {
        let clock = options.clock.clone();
        let failure_channel = Arc::new(LogDirFailureChannel::new());
        let mut dirs = create_and_validate_log_dirs(&config, &failure_channel);
        lock_log_dirs(&mut dirs, &failure_channel)?;
        check_meta_properties(&mut dirs, &config, clock.milliseconds(), &failure_channel)?;
        let live: Vec<PathBuf> = dirs.iter().filter(|d| d.online).map(|d| d.path.clone()).collect();
        if live.is_empty() {
            return Err(all_offline(&dirs, "none of the log dirs could be created, locked or validated"));
        }
        let default_config = config.log_config().clone();
        let ctx = LoadContext {
            topic_configs: &options.topic_configs,
            default_config: &default_config,
            threads_per_dir: config.recovery_threads_per_data_dir as usize,
            clock: clock.clone(),
            failure_channel: failure_channel.clone(),
            progress: options.progress.clone(),
            partition_lock_timeout: options.partition_lock_timeout,
            producer_state: producer_state_config(&config),
            max_transaction_timeout_ms: config.transaction_max_timeout_ms,
        };
        let loaded = load_log_dirs(&live, &ctx)?;
        let mut state = State { dirs, topic_configs: options.topic_configs.clone(), ..State::default() };
        let mut load_summary = Vec::new();
        let now = clock.milliseconds();
        for (items, summary) in loaded {
            for dir in state.dirs.iter_mut().filter(|d| d.path == summary.dir) {
                dir.had_clean_shutdown = summary.had_clean_shutdown;
            }
            load_summary.push(summary);
            for item in items {
                match item {
                    LoadedDir::Current(log) => insert_unique(&mut state.current, log, "")?,
                    LoadedDir::Future(log) => insert_unique(&mut state.future, log, "future ")?,
                    LoadedDir::Delete(path) => {
                        state.to_delete.push((path, now.saturating_add(default_config.file_delete_delay_ms)));
                    }
                    LoadedDir::Stray(path) => state.stray.push(path),
                }
            }
        }
        let flush_scheduler = Arc::new(if options.start_scheduler {
            BackgroundScheduler::threaded("kafka-flush-log")
        } else {
            BackgroundScheduler::manual()
        });
        for log in state.current.values().chain(state.future.values()) {
            log.set_flush_scheduler(flush_scheduler.clone());
        }
        for (tp, log) in &state.current {
            if let Some(id) = log.topic_id() {
                state.topic_ids.entry(tp.topic.clone()).or_insert(id);
            }
        }
        let mut tasks = Tasks::default();
        let delay = config.initial_task_delay_ms;
        tasks.schedule(RETENTION_TASK, now, delay, config.retention_check_ms);
        tasks.schedule(FLUSH_TASK, now, delay, config.flush_check_ms());
        tasks.schedule(RECOVERY_POINT_TASK, now, delay, i64::from(config.flush_recovery_offset_checkpoint_ms));
        tasks.schedule(LOG_START_TASK, now, delay, i64::from(config.flush_start_offset_checkpoint_ms));
        tasks.schedule(DELETE_LOGS_TASK, now, delay, 1000);
        // Kafka's UnifiedLog schedules it with the interval as its first delay too.
        let expiration_check = i64::from(config.producer_id_expiration_check_interval_ms);
        tasks.schedule(PRODUCER_EXPIRATION_TASK, now, expiration_check, expiration_check);
        let inner = Arc::new_cyclic(|weak| {
            let cleaner =
                cleaning::new_log_cleaner(&config, &live, weak.clone(), failure_channel.clone(), clock.clone());
            Inner {
                config,
                clock,
                failure_channel,
                state: RwLock::new(state),
                creation_lock: Mutex::new(()),
                tasks: Mutex::new(tasks),
                load_summary,
                cleaner,
                flush_scheduler,
            }
        });
        inner.process_failures();
        let manager = LogManager { inner, scheduler: Mutex::new(None) };
        if options.start_scheduler {
            manager.start_scheduler()?;
            if let Some(cleaner) = &manager.inner.cleaner {
                cleaner.startup()?;
            }
        }
        Ok(manager)
    }

    fn start_scheduler(&self) -> Result<()> {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let thread = SchedulerThread::start(Duration::from_secs(1), move || {
            weak.upgrade().map_or(i64::MAX, |inner| inner.tick())
        })
        .map_err(|e| Error::io(Path::new("kafka-scheduler-0"), "start thread", e))?;
        *self.scheduler.lock() = Some(thread);
        Ok(())
    }

    /// The broker-level configuration.
    pub fn config(&self) -> &LogManagerConfig {
        &self.inner.config
    }

    /// The clock of every log and task.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// What loading found in each log dir at start-up.
    pub fn load_summary(&self) -> &[DirLoadSummary] {
        &self.inner.load_summary
    }

    /// Every configured log dir and its state.
    pub fn log_dirs(&self) -> Vec<LogDirInfo> {
        self.inner.process_failures();
        let state = self.inner.state.read();
        state
            .dirs
            .iter()
            .map(|d| LogDirInfo {
                path: d.path.clone(),
                online: d.online,
                cordoned: d.cordoned,
                partitions: state
                    .current
                    .values()
                    .chain(state.future.values())
                    .filter(|l| l.log_dir() == d.path)
                    .count(),
                offline_reason: d.offline_reason.clone(),
                directory_id: d.directory_id.map(|id| id.to_string()),
            })
            .collect()
    }

    /// Stops placing new partitions in `dir` (KIP-1066); existing ones keep serving.
    pub fn cordon_log_dir(&self, dir: &Path, cordoned: bool) -> Result<()> {
        let mut state = self.inner.state.write();
        let d = state.dirs.iter_mut().find(|d| d.path == dir).ok_or_else(|| {
            Error::illegal_state(format!("{} is not one of the log dirs of this log manager", dir.display()))
        })?;
        d.cordoned = cordoned;
        Ok(())
    }

    /// The log of `tp`, if this manager holds it (and its dir is online).
    pub fn get_log(&self, tp: &TopicPartition) -> Result<Option<Arc<UnifiedLog>>> {
        self.inner.check_usable()?;
        Ok(self.inner.state.read().current.get(tp).cloned())
    }

    /// Every served log, in topic-partition order.
    pub fn logs(&self) -> Result<Vec<Arc<UnifiedLog>>> {
        self.inner.check_usable()?;
        Ok(self.inner.state.read().current.values().cloned().collect())
    }

    /// The `-future` logs loaded at start-up.
    pub fn future_logs(&self) -> Vec<Arc<UnifiedLog>> {
        self.inner.state.read().future.values().cloned().collect()
    }

    /// `-stray` directories found at start-up (kept, not served).
    pub fn stray_dirs(&self) -> Vec<PathBuf> {
        self.inner.state.read().stray.clone()
    }

    /// `-delete` directories waiting for `log.segment.delete.delay.ms` to pass.
    pub fn dirs_pending_deletion(&self) -> Vec<PathBuf> {
        self.inner.state.read().to_delete.iter().map(|(p, _)| p.clone()).collect()
    }

    /// The log of `tp`, created if missing (Kafka's `getOrCreateLog`) in the online,
    /// non-cordoned log dir with the fewest partitions. A given `config` becomes the topic's
    /// config and applies to its existing partitions too; `topic_id` is written to
    /// `partition.metadata` (by default, the topic's existing id or a new random one). An invalid
    /// topic (Kafka's rules), a negative partition, or a directory name longer than the log dir's
    /// file system allows is refused before anything is created, and takes no dir offline.
    #[allow(clippy::needless_pass_by_value)]
    pub fn get_or_create_log(
        &self,
        tp: &TopicPartition,
        config: Option<LogConfig>,
        topic_id: Option<TopicId>,
    ) -> Result<Arc<UnifiedLog>> {
        check_new_partition(tp, config.as_ref())?;
        let _creation = self.inner.creation_lock.lock();
        self.inner.check_usable()?;
        if let Some(config) = &config {
            self.update_topic_config_locked(&tp.topic, config.clone())?;
        }
        if let Some(log) = self.inner.state.read().current.get(tp).cloned() {
            if let Some(id) = topic_id {
                log.assign_topic_id(id)?;
            }
            return Ok(log);
        }
        let (candidates, config, topic_id) = {
            let state = self.inner.state.read();
            let config =
                state.topic_configs.get(&tp.topic).cloned().unwrap_or_else(|| self.inner.config.log_config().clone());
            let topic_id = topic_id.or_else(|| state.topic_ids.get(&tp.topic).copied()).unwrap_or_else(TopicId::random);
            (next_log_dirs(&state), config, topic_id)
        };
        let mut last_error = None;
        for dir in candidates {
            // A name the file system cannot hold is the caller's error, not a failing disk:
            // refused before anything is created, and the dir stays online.
            validate_partition_dir_name(tp, crate::util::file::name_max(&dir))?;
            let path = dir.join(tp.dir_name());
            let created = crate::util::file::create_dir_all(&path).and_then(|()| crate::util::file::fsync_dir(&dir));
            if let Err(e) = created {
                if let Some(refused) = name_too_long(&e, tp) {
                    return Err(refused);
                }
                self.inner.failure_channel.maybe_add_offline_log_dir(&dir, &e.to_string());
                last_error = Some(e);
                continue;
            }
            let options = LogOpenOptions {
                had_clean_shutdown: true,
                clock: self.inner.clock.clone(),
                log_dir_failure_channel: Some(self.inner.failure_channel.clone()),
                producer_state: producer_state_config(&self.inner.config),
                max_transaction_timeout_ms: self.inner.config.transaction_max_timeout_ms,
                flush_scheduler: Some(self.inner.flush_scheduler.clone()),
                ..LogOpenOptions::default()
            };
            let log = match UnifiedLog::open(&path, config.clone(), options).and_then(|log| {
                log.assign_topic_id(topic_id)?;
                Ok(log)
            }) {
                Ok(log) => Arc::new(log),
                Err(e @ (Error::KafkaStorage { .. } | Error::Io { .. })) => {
                    self.inner.failure_channel.maybe_add_offline_log_dir(&dir, &e.to_string());
                    last_error = Some(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            log::info!("created log for partition {tp} in {} with topic id {topic_id}", dir.display());
            let mut state = self.inner.state.write();
            state.topic_ids.entry(tp.topic.clone()).or_insert(topic_id);
            state.current.insert(tp.clone(), log.clone());
            return Ok(log);
        }
        self.inner.process_failures();
        self.inner.check_usable()?;
        Err(last_error.unwrap_or_else(|| Error::illegal_state(format!("no online log dir can hold {tp}"))))
    }

    /// Sets the config of `topic` for its existing and future partitions (the topic name and the
    /// config validated first).
    pub fn update_topic_config(&self, topic: &str, config: LogConfig) -> Result<()> {
        validate_topic_name(topic)?;
        config.validate()?;
        let _creation = self.inner.creation_lock.lock();
        self.inner.check_usable()?;
        self.update_topic_config_locked(topic, config)
    }

    #[allow(clippy::needless_pass_by_value)]
    fn update_topic_config_locked(&self, topic: &str, config: LogConfig) -> Result<()> {
        let (logs, current): (Vec<_>, Vec<_>) = {
            let mut state = self.inner.state.write();
            state.topic_configs.insert(topic.to_string(), config.clone());
            let logs = state.current.iter().chain(&state.future).filter(|(tp, _)| tp.topic == topic);
            let current = state.current.iter().filter(|(tp, _)| tp.topic == topic);
            (
                logs.map(|(_, l)| l.clone()).collect(),
                current.map(|(tp, l)| (tp.clone(), l.config().compact())).collect(),
            )
        };
        for log in logs {
            log.update_config(config.clone())?;
        }
        let changed: Vec<_> = current.into_iter().map(|(tp, was)| (tp, was, config.compact())).collect();
        self.inner.cleaner_config_changed(&changed);
        Ok(())
    }

    /// Deletes the partition (Kafka's `asyncDelete`): the log is closed, its directory renamed
    /// `<topic>-<partition>.<uuid>-delete` at once, the checkpoints rewritten without it, and the
    /// directory removed after `log.segment.delete.delay.ms`. Returns the renamed directory.
    pub fn delete_log(&self, tp: &TopicPartition) -> Result<PathBuf> {
        let _creation = self.inner.creation_lock.lock();
        self.inner.check_usable()?;
        let log = self
            .inner
            .state
            .write()
            .current
            .remove(tp)
            .ok_or_else(|| Error::illegal_state(format!("no log for partition {tp} to delete")))?;
        self.inner.pause_cleaning_for_deletion(tp);
        log.close_handlers();
        let log_dir = log.log_dir().to_path_buf();
        let target = log_dir.join(log_delete_dir_name(tp));
        let renamed =
            crate::util::file::rename(log.dir(), &target).and_then(|()| crate::util::file::fsync_dir(&log_dir));
        if let Err(e) = renamed {
            self.inner.failure_channel.maybe_add_offline_log_dir(&log_dir, &e.to_string());
            self.inner.forget_cleaner_state(&log_dir, tp);
            self.inner.process_failures();
            return Err(Error::KafkaStorage { path: log_dir, reason: e.to_string() });
        }
        let due = self.inner.clock.milliseconds().saturating_add(self.inner.config.log_config().file_delete_delay_ms);
        self.inner.state.write().to_delete.push((target.clone(), due));
        log::info!("log for partition {tp} is renamed to {} and is scheduled for deletion", target.display());
        self.inner.checkpoint_dir(&log_dir);
        self.inner.forget_cleaner_state(&log_dir, tp);
        Ok(target)
    }

    /// Fsyncs every log up to its log end.
    /// Fails with the first error if any log could not be flushed (its dir is then offline;
    /// the other logs are still flushed).
    pub fn flush(&self) -> Result<()> {
        self.inner.check_usable()?;
        let mut first_error = None;
        for log in self.inner.all_logs() {
            if let Err(e) = log.flush() {
                log::error!("flush of {} failed: {e}", log.dir().display());
                first_error.get_or_insert(e);
            }
        }
        self.inner.process_failures();
        self.inner.check_usable()?;
        first_error.map_or(Ok(()), Err)
    }

    /// Writes `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint` and
    /// `replication-offset-checkpoint` (high watermarks) in every online log dir.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.check_usable()?;
        let dirs: Vec<PathBuf> =
            self.inner.state.read().dirs.iter().filter(|d| d.online).map(|d| d.path.clone()).collect();
        for dir in dirs {
            self.inner.checkpoint_dir(&dir);
        }
        self.inner.process_failures();
        self.inner.check_usable()
    }

    /// Runs retention now on every log whose policy is `delete` only (Kafka's `cleanupLogs`;
    /// compacted logs are left to the cleaner). Returns what each log deleted.
    pub fn run_retention(&self, options: RetentionOptions) -> Result<Vec<(TopicPartition, RetentionResult)>> {
        self.run_retention_with_progress(options, None)
    }

    /// [`LogManager::run_retention`], reporting a `retention` phase counted in logs to
    /// `progress`. Cancelling it stops before the next log (the logs done keep their results).
    pub fn run_retention_with_progress(
        &self,
        options: RetentionOptions,
        progress: Option<&ProgressSink>,
    ) -> Result<Vec<(TopicPartition, RetentionResult)>> {
        self.inner.check_usable()?;
        let out = self.inner.cleanup_logs(options, progress);
        self.inner.process_failures();
        self.inner.check_usable()?;
        Ok(out)
    }

    /// Runs the periodic tasks that are due by the manager's clock; returns the ms until the
    /// next one. The scheduler thread calls this; tests with a manual clock call it directly.
    pub fn tick(&self) -> i64 {
        self.inner.tick()
    }

    /// Shuts down as Kafka does: stops the scheduler, flushes and closes every log, writes both
    /// checkpoints and, in each dir where all of that succeeded, `.kafka_cleanshutdown` with
    /// `broker_epoch`; then releases and deletes the `.lock` files. Closing twice is harmless.
    pub fn close(&self, broker_epoch: i64) -> Result<()> {
        if let Some(mut s) = self.scheduler.lock().take() {
            s.shutdown();
        }
        if let Some(cleaner) = &self.inner.cleaner {
            cleaner.shutdown();
        }
        let _creation = self.inner.creation_lock.lock();
        self.inner.process_failures();
        let mut state = self.inner.state.write();
        if state.closed {
            return Ok(());
        }
        state.closed = true;
        let online: Vec<PathBuf> = state.dirs.iter().filter(|d| d.online).map(|d| d.path.clone()).collect();
        let per_dir: Vec<(PathBuf, Vec<LogEntry>)> = online.iter().map(|d| (d.clone(), state.logs_in(d))).collect();
        drop(state);
        let threads = self.inner.config.recovery_threads_per_data_dir as usize;
        let mut first_error = None;
        std::thread::scope(|scope| {
            let handles: Vec<_> =
                per_dir.iter().map(|(dir, logs)| scope.spawn(move || close_dir_logs(dir, logs, threads))).collect();
            for ((dir, logs), handle) in per_dir.iter().zip(handles) {
                let ok = handle.join().unwrap_or(false);
                if !ok {
                    log::warn!("not writing a clean shutdown marker in {}: a log failed to close", dir.display());
                    first_error.get_or_insert_with(|| format!("a log in {} failed to close", dir.display()));
                    continue;
                }
                let written = write_checkpoints(dir, logs, &ALL_CHECKPOINTS)
                    .and_then(|()| write_clean_shutdown(&dir.join(CLEAN_SHUTDOWN_FILE), broker_epoch));
                if let Err(e) = written {
                    log::error!("shutdown of {} incomplete: {e}", dir.display());
                    first_error.get_or_insert_with(|| e.to_string());
                }
            }
        });
        let mut state = self.inner.state.write();
        for d in &mut state.dirs {
            if d.lock.take().is_some() {
                let _ = crate::util::file::delete_if_exists(&d.path.join(LOCK_FILE));
            }
        }
        state.current.clear();
        state.future.clear();
        drop(state);
        // Every log closed (each waited for its running flush); queued ones find it closed.
        self.inner.flush_scheduler.shutdown();
        match first_error {
            None => Ok(()),
            Some(reason) => Err(Error::illegal_state(format!("log manager shut down uncleanly: {reason}"))),
        }
    }
}

impl Drop for LogManager {
    fn drop(&mut self) {
        if let Some(mut s) = self.scheduler.lock().take() {
            s.shutdown();
        }
        if let Some(cleaner) = &self.inner.cleaner {
            cleaner.shutdown();
        }
    }
}

/// Flushes and closes the logs of one dir with up to `threads` threads (`log-closing-<dir>`).
fn close_dir_logs(dir: &Path, logs: &[LogEntry], threads: usize) -> bool {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let ok = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1).min(logs.len().max(1)) {
            let (next, ok) = (&next, &ok);
            let work = move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                let Some((tp, log)) = logs.get(i) else { break };
                if let Err(e) = log.close() {
                    log::error!("error closing the log of {tp} in {}: {e}", dir.display());
                    ok.store(false, std::sync::atomic::Ordering::Release);
                }
            };
            if std::thread::Builder::new()
                .name(format!("log-closing-{}", dir.display()))
                .spawn_scoped(scope, work)
                .is_err()
            {
                ok.store(false, std::sync::atomic::Ordering::Release);
            }
        }
    });
    ok.load(std::sync::atomic::Ordering::Acquire)
}

fn insert_unique(map: &mut BTreeMap<TopicPartition, Arc<UnifiedLog>>, log: Arc<UnifiedLog>, kind: &str) -> Result<()> {
    let tp = log.topic_partition().clone();
    if let Some(previous) = map.get(&tp) {
        let message = format!(
            "duplicate {kind}log directories for {tp} are found in both {} and {}. Recover from this by deleting \
             one of the two directories for this partition (the one in the log dir that failed most recently)",
            log.dir().display(),
            previous.dir().display()
        );
        log.close_handlers();
        previous.close_handlers();
        for l in map.values() {
            l.close_handlers();
        }
        return Err(Error::illegal_state(message));
    }
    map.insert(tp, log);
    Ok(())
}

/// The caller's part of `get_or_create_log`, checked before anything: Kafka's topic rules, a
/// partition number that is not negative, a valid config.
fn check_new_partition(tp: &TopicPartition, config: Option<&LogConfig>) -> Result<()> {
    validate_topic_name(&tp.topic)?;
    if tp.partition < 0 {
        return Err(Error::invalid_argument(
            "partition",
            tp.partition,
            format!("partition numbers of topic {} must not be negative: [0, {}]", tp.topic, i32::MAX),
        ));
    }
    config.map_or(Ok(()), LogConfig::validate)
}

/// An `ENAMETOOLONG` from creating or opening `tp`'s directory (a file system whose limit
/// `pathconf` did not report): the caller's error, as `InvalidTopic`, never a reason to take the
/// log dir offline.
fn name_too_long(e: &Error, tp: &TopicPartition) -> Option<Error> {
    match e {
        Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENAMETOOLONG) => Some(Error::InvalidTopic {
            topic: tp.topic.clone(),
            reason: format!(
                "the partition directory name '{}' is too long for the log dir's file system: {e}",
                tp.dir_name()
            ),
        }),
        _ => None,
    }
}

/// Kafka's `nextLogDirs`: online, non-cordoned dirs by ascending partition count (stable).
fn next_log_dirs(state: &State) -> Vec<PathBuf> {
    let mut counts: Vec<(usize, PathBuf)> = state
        .dirs
        .iter()
        .filter(|d| d.online && !d.cordoned)
        .map(|d| {
            let n = state.current.values().chain(state.future.values()).filter(|l| l.log_dir() == d.path).count();
            (n, d.path.clone())
        })
        .collect();
    counts.sort_by_key(|(n, _)| *n);
    if counts.is_empty() {
        // Every online dir is cordoned: Kafka falls back to the first live dir.
        return state.dirs.iter().find(|d| d.online).map(|d| d.path.clone()).into_iter().collect();
    }
    counts.into_iter().map(|(_, p)| p).collect()
}

fn all_offline(dirs: &[LogDir], reason: &str) -> Error {
    let detail: Vec<String> = dirs
        .iter()
        .map(|d| format!("{} ({})", d.path.display(), d.offline_reason.as_deref().unwrap_or("offline")))
        .collect();
    Error::AllLogDirsOffline {
        dirs: dirs.iter().map(|d| d.path.clone()).collect(),
        reason: format!("{reason}: {}", detail.join("; ")),
    }
}

impl Inner {
    fn all_logs(&self) -> Vec<Arc<UnifiedLog>> {
        let state = self.state.read();
        state.current.values().chain(state.future.values()).cloned().collect()
    }

    /// Fails when the manager is closed or every dir has failed.
    fn check_usable(&self) -> Result<()> {
        self.process_failures();
        let state = self.state.read();
        if state.closed {
            return Err(Error::illegal_state("the log manager is closed"));
        }
        if let Some(reason) = &state.fatal {
            return Err(Error::AllLogDirsOffline {
                dirs: state.dirs.iter().map(|d| d.path.clone()).collect(),
                reason: reason.clone(),
            });
        }
        Ok(())
    }

    /// Takes the dirs reported to the failure channel offline (Kafka's `handleLogDirFailure`):
    /// their logs leave the maps and have their files closed without writes, their checkpoints
    /// are no longer written, no partition is placed there, and their `.lock` is released.
    fn process_failures(&self) {
        let failed = self.failure_channel.take_offline_log_dirs();
        if failed.is_empty() {
            return;
        }
        let failed_dirs: Vec<PathBuf> = failed.iter().map(|(d, _)| d.clone()).collect();
        let mut state = self.state.write();
        for (dir, reason) in failed {
            log::warn!("stopping serving logs in dir {}: {reason}", dir.display());
            let Some(d) = state.dirs.iter_mut().find(|d| d.path == dir) else { continue };
            d.online = false;
            d.offline_reason.get_or_insert(reason);
            if d.lock.take().is_some() {
                // Kafka destroys the failed dir's lock (the file goes too, if the disk allows).
                let _ = std::fs::remove_file(d.path.join(LOCK_FILE));
            }
            let logs = state.logs_in(&dir);
            for (tp, log) in &logs {
                state.current.retain(|k, l| !(k == tp && Arc::ptr_eq(l, log)));
                state.future.retain(|k, l| !(k == tp && Arc::ptr_eq(l, log)));
                log.close_handlers();
            }
            log::warn!(
                "logs for partitions {:?} are offline due to the failure of log dir {}",
                logs.iter().map(|(tp, _)| tp.to_string()).collect::<Vec<_>>(),
                dir.display()
            );
            if state.dirs.iter().all(|d| !d.online) && state.fatal.is_none() {
                let dirs: Vec<String> = state.dirs.iter().map(|d| d.path.display().to_string()).collect();
                let message = format!("all log dirs in {} have failed", dirs.join(", "));
                log::error!("{message}");
                state.fatal = Some(message);
            }
        }
        drop(state);
        self.cleaner_dirs_failed(&failed_dirs);
    }
}

/// The producer-state settings of the broker config (Kafka's `ProducerStateManagerConfig`
/// built from `producer.id.expiration.ms`; transaction verification is a broker's concern and
/// stays at Kafka's default).
fn producer_state_config(config: &LogManagerConfig) -> crate::log::producer_state::ProducerStateManagerConfig {
    crate::log::producer_state::ProducerStateManagerConfig {
        producer_id_expiration_ms: config.producer_id_expiration_ms,
        ..Default::default()
    }
}
