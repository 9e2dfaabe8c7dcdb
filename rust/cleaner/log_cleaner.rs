//! The cleaner threads (Kafka's `LogCleaner` and its `CleanerThread`s): `log.cleaner.threads`
//! OS threads named `kafka-log-cleaner-thread-<n>`, each owning one [`Cleaner`] (and so one
//! offset map, allocated when the thread starts), all sharing one [`Throttler`]. Each thread
//! loops: clean the filthiest compacted log, checkpoint where the clean ended, log Kafka's
//! summary at INFO, run retention on the idle compacted logs (this is how `compact,delete`
//! logs get retention), and sleep `log.cleaner.backoff.ms` when there was nothing to clean.
//!
//! Errors follow Kafka: an aborted clean is ignored, an offline dir is ignored, an I/O error
//! takes the dir offline, anything else marks the partition uncleanable (with the reason kept).
//! Beyond Kafka: a panic inside the loop does not abort the process; the thread is counted dead
//! (`DeadThreadCount`) and restarted by [`LogCleaner::maybe_restart_dead_threads`] (the
//! `LogManager`'s scheduler tick calls it) or by the next [`LogCleaner::reconfigure`]; the
//! partition it was cleaning is marked uncleanable with the panic message.
//!
//! Nothing here starts a thread until [`LogCleaner::startup`]. [`LogCleaner::run_once`] runs one
//! iteration on the caller's thread (tests on a manual clock), and [`LogCleaner::compact_now`]
//! cleans one partition on demand through the same states.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};

use super::cleaner::{Cleaner, CleanerParams};
use super::cleaner_stats::CleanerStats;
use super::compact::{compact_log, CompactOptions, CompactResult};
use super::decision_mode::DecisionMode;
use super::log_cleaner_manager::{LogCleanerManager, LogSource, PreCleanStats};
use super::log_to_clean::LogToClean;
use super::offset_map::{SkimpyOffsetMap, BYTES_PER_ENTRY, MAX_MAP_BYTES};
use super::throttler::{Throttler, CHECK_INTERVAL};
use crate::config::CleanerConfig;
use crate::error::{Error, Result};
use crate::file_names::TopicPartition;
use crate::log::log_dir_failure_channel::LogDirFailureChannel;
use crate::log::unified_log::{RetentionResult, UnifiedLog};
use crate::util::clock::SharedClock;
use crate::util::progress::ProgressSink;

/// What the cleaner needs from its owner (Kafka's `LogCleaner` constructor arguments). A plain
/// value; the source and channel are shared handles.
#[derive(Clone)]
pub struct LogCleanerContext {
    /// The log dirs whose `cleaner-offset-checkpoint` the cleaner keeps.
    pub log_dirs: Vec<PathBuf>,
    /// The live partition map.
    pub logs: LogSource,
    /// Where I/O errors of a clean report their log dir.
    pub failure_channel: Arc<LogDirFailureChannel>,
    /// The clock for cleaning times, lags and horizons.
    pub clock: SharedClock,
    /// Broker `message.max.bytes`: the largest the cleaner's buffers grow.
    pub max_message_bytes: usize,
}

/// Called on the cleaning thread just before a partition is cleaned (by a thread, `run_once`
/// or `compact_now`): a seam for tests. An error it returns fails the clean as if the cleaner
/// had returned it; a panic exercises the dead-thread handling.
pub type CleanHook = Arc<dyn Fn(&TopicPartition) -> Result<()> + Send + Sync>;

/// How a clean chosen by [`LogCleaner::run_once`] or a thread ended (the branches of Kafka's
/// `cleanLog` / `tryCleanFilthiestLog`). A plain value.
#[derive(Debug, Clone)]
pub enum CleanStatus {
    /// Cleaned; the new checkpoint is the outcome's `end_offset`.
    Cleaned(CleanerStats),
    /// Stopped by `abort_and_pause_cleaning`, a truncation, close or shutdown.
    Aborted,
    /// The log's dir is offline (or went offline because of this clean).
    Offline(String),
    /// The clean failed; the partition is now uncleanable for this reason.
    Uncleanable(String),
    /// The clean panicked; the partition is now uncleanable and the thread counted dead.
    Panicked(String),
}

/// One iteration's clean (Kafka's `cleanLog` as seen from outside). A plain value.
#[derive(Debug, Clone)]
pub struct CleanOutcome {
    /// The partition chosen.
    pub topic_partition: TopicPartition,
    /// The checkpoint the clean started from.
    pub first_dirty_offset: i64,
    /// The checkpoint it left (unchanged unless cleaned).
    pub end_offset: i64,
    /// How it ended.
    pub status: CleanStatus,
    /// What choosing the log saw.
    pub pre_clean: PreCleanStats,
}

/// The visible state of one cleaner thread (or of the caller's "thread" used by `run_once`).
#[derive(Debug, Default)]
struct ThreadSlot {
    last_stats: Mutex<Option<CleanerStats>>,
    last_pre_clean: Mutex<PreCleanStats>,
    /// The panic that killed the thread.
    dead: Mutex<Option<String>>,
}

/// A stop flag that a sleeping thread can be woken from.
#[derive(Debug, Default)]
struct Stop {
    flag: Mutex<bool>,
    cv: Condvar,
}

impl Stop {
    fn is_set(&self) -> bool {
        *self.flag.lock()
    }
    fn set(&self) {
        *self.flag.lock() = true;
        self.cv.notify_all();
    }
    /// Sleeps `ms` unless stopped first.
    fn sleep(&self, ms: i64) {
        let mut stopped = self.flag.lock();
        if !*stopped {
            let d = Duration::from_millis(u64::try_from(ms.max(0)).unwrap_or(u64::MAX));
            self.cv.wait_for(&mut stopped, d);
        }
    }
}

struct CleanerThread {
    id: usize,
    slot: Arc<ThreadSlot>,
    stop: Arc<Stop>,
    handle: Option<JoinHandle<()>>,
}

impl CleanerThread {
    fn shutdown(&mut self) {
        self.stop.set();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// What every thread shares.
struct Core {
    config: RwLock<CleanerConfig>,
    manager: Arc<LogCleanerManager>,
    throttler: Arc<Throttler>,
    failure_channel: Arc<LogDirFailureChannel>,
    clock: SharedClock,
    max_message_bytes: usize,
    hook: RwLock<Option<CleanHook>>,
    /// Threads restarted after dying.
    restarts: AtomicU64,
    /// Threads that died (of a panic) since the cleaner was created; `died` wakes
    /// [`LogCleaner::wait_for_deaths`].
    deaths: Mutex<u64>,
    died: Condvar,
}

/// The pool of cleaner threads. Mirrors Kafka's `LogCleaner` (with `CleanerThread`).
///
/// Thread-safety: `Send + Sync`. The thread list sits behind a mutex taken only to start, stop
/// or inspect threads; cleaning state lives in the [`LogCleanerManager`].
pub struct LogCleaner {
    core: Arc<Core>,
    threads: Mutex<Vec<CleanerThread>>,
    started: Mutex<bool>,
    /// The cleaner `run_once` uses, allocated on first use.
    caller: Mutex<Option<Cleaner>>,
    caller_slot: Arc<ThreadSlot>,
}

impl std::fmt::Debug for LogCleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogCleaner")
            .field("config", &*self.core.config.read())
            .field("threads", &self.thread_count())
            .finish_non_exhaustive()
    }
}

/// The offset map bytes of one thread: `min(dedupe buffer / threads, i32::MAX)`.
pub fn map_bytes_per_thread(config: &CleanerConfig) -> usize {
    let per = config.dedupe_buffer_size / i64::from(config.num_threads.max(1));
    usize::try_from(per.max(0)).unwrap_or(usize::MAX).min(MAX_MAP_BYTES)
}

/// How many keys one pass of a thread's map holds: `(int)(slots * load factor)`.
#[allow(clippy::cast_precision_loss)]
pub fn map_capacity(config: &CleanerConfig) -> u64 {
    let slots = map_bytes_per_thread(config) / BYTES_PER_ENTRY;
    (slots as f64 * config.dedupe_buffer_load_factor) as u64
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

impl LogCleaner {
    /// A cleaner with `config`; no thread runs until [`LogCleaner::startup`].
    pub fn new(config: CleanerConfig, ctx: LogCleanerContext) -> Self {
        let manager =
            Arc::new(LogCleanerManager::new(&ctx.log_dirs, ctx.logs, ctx.failure_channel.clone(), ctx.clock.clone()));
        let throttler =
            Arc::new(Throttler::with_clock(config.max_io_bytes_per_second, CHECK_INTERVAL, ctx.clock.clone()));
        let core = Core {
            config: RwLock::new(config),
            manager,
            throttler,
            failure_channel: ctx.failure_channel,
            clock: ctx.clock,
            max_message_bytes: ctx.max_message_bytes,
            hook: RwLock::new(None),
            restarts: AtomicU64::new(0),
            deaths: Mutex::new(0),
            died: Condvar::new(),
        };
        LogCleaner {
            core: Arc::new(core),
            threads: Mutex::new(Vec::new()),
            started: Mutex::new(false),
            caller: Mutex::new(None),
            caller_slot: Arc::new(ThreadSlot::default()),
        }
    }

    /// The partition states and checkpoints.
    pub fn manager(&self) -> &Arc<LogCleanerManager> {
        &self.core.manager
    }

    /// The shared I/O throttle.
    pub fn throttler(&self) -> &Arc<Throttler> {
        &self.core.throttler
    }

    /// The current configuration (after any reconfiguration).
    pub fn current_config(&self) -> CleanerConfig {
        self.core.config.read().clone()
    }

    /// Installs (or removes) the test hook called before each partition is cleaned.
    pub fn set_clean_hook(&self, hook: Option<CleanHook>) {
        *self.core.hook.write() = hook;
    }

    /// Starts `log.cleaner.threads` threads (Kafka's `startup`). Each allocates its offset map
    /// here; an allocation failure is returned and no thread is left running.
    pub fn startup(&self) -> Result<()> {
        let mut started = self.started.lock();
        if *started {
            return Ok(());
        }
        let config = self.current_config();
        log::info!("starting the log cleaner with {} thread(s)", config.num_threads);
        let mut threads = self.threads.lock();
        for id in 0..config.num_threads.max(0) as usize {
            match self.core.spawn(id, &config) {
                Ok(t) => threads.push(t),
                Err(e) => {
                    for t in threads.iter_mut() {
                        t.shutdown();
                    }
                    threads.clear();
                    return Err(e);
                }
            }
        }
        *started = true;
        Ok(())
    }

    /// Stops every thread and waits for them (a running clean stops at its next check).
    pub fn shutdown(&self) {
        let mut started = self.started.lock();
        let mut threads = std::mem::take(&mut *self.threads.lock());
        if !threads.is_empty() {
            log::info!("shutting down the log cleaner");
        }
        for t in &threads {
            t.stop.set();
        }
        for t in &mut threads {
            t.shutdown();
        }
        *started = false;
    }

    /// Threads running or dead (not yet restarted).
    pub fn thread_count(&self) -> usize {
        self.threads.lock().len()
    }

    /// The names of the threads (`kafka-log-cleaner-thread-<n>`).
    pub fn thread_names(&self) -> Vec<String> {
        self.threads.lock().iter().map(|t| thread_name(t.id)).collect()
    }

    /// Threads that died of a panic and were not restarted yet (Kafka's `DeadThreadCount`).
    pub fn dead_thread_count(&self) -> usize {
        self.threads.lock().iter().filter(|t| t.slot.dead.lock().is_some()).count()
    }

    /// Blocks until at least `n` threads have died since the cleaner was created (restarted or
    /// not), woken by each death; false if `timeout` passes first (a hang guard).
    pub fn wait_for_deaths(&self, n: u64, timeout: std::time::Duration) -> bool {
        let mut deaths = self.core.deaths.lock();
        !self.core.died.wait_while_for(&mut deaths, |d| *d < n, timeout).timed_out()
    }

    /// Threads restarted after dying, since the cleaner was created.
    pub fn dead_thread_restarts(&self) -> u64 {
        self.core.restarts.load(Ordering::Relaxed)
    }

    /// Restarts the threads that died (each with a fresh offset map); returns how many.
    pub fn maybe_restart_dead_threads(&self) -> Result<usize> {
        if !*self.started.lock() {
            return Ok(0);
        }
        let config = self.current_config();
        let mut threads = self.threads.lock();
        let mut restarted = 0;
        for t in threads.iter_mut() {
            let Some(why) = t.slot.dead.lock().clone() else { continue };
            t.shutdown();
            log::warn!("restarting {} (it died: {why})", thread_name(t.id));
            *t = self.core.spawn(t.id, &config)?;
            self.core.restarts.fetch_add(1, Ordering::Relaxed);
            restarted += 1;
        }
        Ok(restarted)
    }

    /// Kafka's `validateReconfiguration`: the new config is valid, and the thread count is at
    /// least 1, at least half and at most double the current one.
    pub fn validate_reconfiguration(&self, new: &CleanerConfig) -> Result<()> {
        new.validate()?;
        let current = self.core.config.read().num_threads;
        let threads = new.num_threads;
        let bad = |rule: String| Err(Error::invalid_config("log.cleaner.threads", threads, rule));
        if threads < current / 2 {
            return bad(format!("cannot be reduced to less than half the current value {current}"));
        }
        if threads > current.saturating_mul(2) {
            return bad(format!("cannot be increased to more than double the current value {current}"));
        }
        Ok(())
    }

    /// Applies a new configuration at run time (Kafka's `reconfigure`): updates the throttle
    /// rate, then stops the threads and starts new ones with the new sizes (which also
    /// replaces dead threads). Threads are restarted only if they were running.
    pub fn reconfigure(&self, new: &CleanerConfig) -> Result<()> {
        self.validate_reconfiguration(new)?;
        let old = std::mem::replace(&mut *self.core.config.write(), new.clone());
        if old.max_io_bytes_per_second.to_bits() != new.max_io_bytes_per_second.to_bits() {
            log::info!("updating log.cleaner.io.max.bytes.per.second to {}", new.max_io_bytes_per_second);
            self.core.throttler.update_desired_rate_per_sec(new.max_io_bytes_per_second);
        }
        self.caller.lock().take();
        let was_started = *self.started.lock();
        if was_started {
            self.shutdown();
            self.startup()?;
        }
        Ok(())
    }

    /// Runs one iteration of a cleaner thread's loop on the calling thread: cleans the
    /// filthiest log (if any), then runs retention on the idle compacted logs. `None` when no
    /// log needed cleaning.
    pub fn run_once(&self) -> Option<CleanOutcome> {
        let mut caller = self.caller.lock();
        if caller.is_none() {
            let config = self.current_config();
            match self.core.new_cleaner(config.num_threads.max(0) as usize, &config) {
                Ok(c) => *caller = Some(c),
                Err(e) => {
                    log::error!("cannot run the cleaner: {e}");
                    return None;
                }
            }
        }
        let cleaner = caller.as_mut()?;
        let work = catch_unwind(AssertUnwindSafe(|| self.core.do_work(cleaner, &self.caller_slot, None)));
        self.core.manager.maintain_uncleanable_partitions();
        match work {
            Ok(work) => {
                if work.panic.is_some() {
                    *caller = None;
                }
                work.outcome
            }
            Err(payload) => {
                log::error!("the cleaner panicked outside a clean: {}", panic_message(payload.as_ref()));
                *caller = None;
                None
            }
        }
    }

    /// Cleans the whole cleanable range of `tp` now, in as many passes as needed, with a
    /// cleaner sized like a thread's (allocated for the call). Waits while a thread cleans the
    /// partition; fails if it is paused, not compacted, or unknown. The checkpoint moves to
    /// where the clean ended; a success clears an uncleanable mark.
    pub fn compact_now(&self, tp: &TopicPartition) -> Result<CompactResult> {
        self.compact_now_with_progress(tp, None)
    }

    /// [`LogCleaner::compact_now`], reporting the clean's progress to `progress` (see
    /// `Cleaner::set_progress`); cancelling it stops the clean with `LogCleaningAborted`.
    pub fn compact_now_with_progress(
        &self,
        tp: &TopicPartition,
        progress: Option<ProgressSink>,
    ) -> Result<CompactResult> {
        let log = self.core.manager.logs().into_iter().find(|(t, _)| t == tp).map(|(_, l)| l);
        let log = log.ok_or_else(|| Error::illegal_state(format!("no log for partition {tp} to compact")))?;
        let config = log.config();
        if !config.compact() {
            return Err(Error::invalid_config(
                "cleanup.policy",
                config.cleanup_policy,
                format!("partition {tp} is not compacted: compact_now needs cleanup.policy to contain compact"),
            ));
        }
        self.core.manager.begin_on_demand(tp)?;
        self.core.compact_on_demand(tp, &log, self.thread_count(), progress)
    }

    /// The last clean stats of every thread (and of `run_once`).
    fn last_stats(&self) -> Vec<CleanerStats> {
        let threads = self.threads.lock();
        let slots = threads.iter().map(|t| &t.slot).chain(std::iter::once(&self.caller_slot));
        slots.filter_map(|s| s.last_stats.lock().clone()).collect()
    }

    /// The largest `max.compaction.lag.ms` overrun seen by any thread's last choice (ms).
    fn max_compaction_delay_ms(&self) -> i64 {
        let threads = self.threads.lock();
        let slots = threads.iter().map(|t| &t.slot).chain(std::iter::once(&self.caller_slot));
        slots.map(|s| s.last_pre_clean.lock().max_compaction_delay_ms).max().unwrap_or(0)
    }

    /// Kafka's cleaner gauges (`kafka.log:type=LogCleaner` and `type=LogCleanerManager`).
    #[allow(clippy::cast_precision_loss)]
    pub fn metrics(&self) -> CleanerMetrics {
        let stats = self.last_stats();
        let max = |f: fn(&CleanerStats) -> f64| stats.iter().map(f).fold(0.0, f64::max);
        let read: u64 = stats.iter().map(|s| s.bytes_read).sum();
        let written: u64 = stats.iter().map(|s| s.bytes_written).sum();
        let uncleanable = self.core.manager.uncleanable_metrics();
        CleanerMetrics {
            max_dirty_percent: self.core.manager.max_dirty_percent(),
            max_buffer_utilization_percent: (max(|s| s.buffer_utilization) * 100.0) as i32,
            cleaner_recopy_percent: (100.0 * written as f64 / read.max(1) as f64) as i32,
            max_clean_time_secs: max(|s| s.elapsed_secs) as i32,
            max_compaction_delay_secs: (self.max_compaction_delay_ms() / 1000) as i32,
            dead_thread_count: self.dead_thread_count(),
            dead_thread_restarts: self.dead_thread_restarts(),
            uncleanable_partitions_count: uncleanable.iter().map(|(d, (n, _))| (d.clone(), *n)).collect(),
            uncleanable_bytes: uncleanable.iter().map(|(d, (_, b))| (d.clone(), *b)).collect(),
            time_since_last_run_ms: self.core.manager.time_since_last_run_ms(),
            threads: self.thread_count(),
        }
    }
}

impl Drop for LogCleaner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Kafka's cleaner gauges (`LogCleaner` and `LogCleanerManager` metrics), by their Kafka
/// names. A snapshot: plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerMetrics {
    /// `max-dirty-percent`.
    pub max_dirty_percent: i32,
    /// `max-buffer-utilization-percent` (of each thread's last clean).
    pub max_buffer_utilization_percent: i32,
    /// `cleaner-recopy-percent`: bytes written / bytes read of the threads' last cleans.
    pub cleaner_recopy_percent: i32,
    /// `max-clean-time-secs`.
    pub max_clean_time_secs: i32,
    /// `max-compaction-delay-secs`.
    pub max_compaction_delay_secs: i32,
    /// `DeadThreadCount`.
    pub dead_thread_count: usize,
    /// Dead threads restarted so far (kafkalog's own).
    pub dead_thread_restarts: u64,
    /// `uncleanable-partitions-count` per log dir.
    pub uncleanable_partitions_count: std::collections::BTreeMap<PathBuf, usize>,
    /// `uncleanable-bytes` per log dir.
    pub uncleanable_bytes: std::collections::BTreeMap<PathBuf, u64>,
    /// `time-since-last-run-ms`.
    pub time_since_last_run_ms: i64,
    /// Cleaner threads (running or dead).
    pub threads: usize,
}

fn thread_name(id: usize) -> String {
    format!("kafka-log-cleaner-thread-{id}")
}

/// One iteration's result, and the panic that should kill the thread.
struct Work {
    outcome: Option<CleanOutcome>,
    panic: Option<String>,
}

impl Core {
    /// A cleaner for thread `id` sized by `config` (Kafka's `CleanerThread` constructor).
    fn new_cleaner(&self, id: usize, config: &CleanerConfig) -> Result<Cleaner> {
        let threads = config.num_threads.max(1) as usize;
        let per_thread = config.dedupe_buffer_size / threads as i64;
        if per_thread > MAX_MAP_BYTES as i64 {
            log::warn!(
                "cannot use more than 2G of cleaner buffer space per cleaner thread, ignoring excess buffer space"
            );
        }
        let map = SkimpyOffsetMap::new(map_bytes_per_thread(config))?;
        let params = CleanerParams {
            io_buffer_size: usize::try_from(config.io_buffer_size.max(0)).unwrap_or(0) / threads / 2,
            max_io_buffer_size: self.max_message_bytes,
            dedupe_buffer_load_factor: config.dedupe_buffer_load_factor,
            decision_mode: DecisionMode::of_config(config.sliced_decisions),
        };
        Cleaner::new(id, map, params, self.throttler.clone(), self.clock.clone())
    }

    /// Starts thread `id` with a new cleaner.
    fn spawn(self: &Arc<Self>, id: usize, config: &CleanerConfig) -> Result<CleanerThread> {
        let cleaner = self.new_cleaner(id, config)?;
        let slot = Arc::new(ThreadSlot::default());
        let stop = Arc::new(Stop::default());
        let (core, thread_slot, thread_stop) = (self.clone(), slot.clone(), stop.clone());
        let name = thread_name(id);
        let handle = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || core.thread_main(cleaner, &thread_slot, &thread_stop))
            .map_err(|e| Error::io(Path::new(&name), "start thread", e))?;
        Ok(CleanerThread { id, slot, stop, handle: Some(handle) })
    }

    /// A cleaner thread's loop (Kafka's `doWork`, repeated until shutdown).
    fn thread_main(&self, mut cleaner: Cleaner, slot: &ThreadSlot, stop: &Stop) {
        while !stop.is_set() {
            let work = catch_unwind(AssertUnwindSafe(|| self.do_work(&mut cleaner, slot, Some(stop))));
            let panic = match work {
                Ok(Work { panic: Some(p), .. }) => p,
                Ok(Work { outcome, panic: None }) => {
                    self.manager.maintain_uncleanable_partitions();
                    // A clean that could not move (an open transaction starts in its first
                    // dirty segment) counts as nothing cleaned, or the thread would spin.
                    let progressed = matches!(
                        &outcome,
                        Some(o @ CleanOutcome { status: CleanStatus::Cleaned(_), .. }) if o.end_offset > o.first_dirty_offset
                    );
                    if !progressed {
                        stop.sleep(self.config.read().backoff_ms);
                    }
                    continue;
                }
                Err(payload) => panic_message(payload.as_ref()),
            };
            log::error!("{} died: {panic}", thread_name(cleaner.id()));
            *slot.dead.lock() = Some(panic);
            *self.deaths.lock() += 1;
            self.died.notify_all();
            return;
        }
    }

    /// One iteration: clean the filthiest log, then retention on the idle compacted logs.
    fn do_work(&self, cleaner: &mut Cleaner, slot: &ThreadSlot, stop: Option<&Stop>) -> Work {
        let mut pre_clean = PreCleanStats::default();
        let chosen = self.manager.grab_filthiest_compacted_log(&mut pre_clean);
        let outcome = chosen.map(|ltc| {
            *slot.last_pre_clean.lock() = pre_clean;
            self.clean_log(cleaner, slot, &ltc, stop, pre_clean)
        });
        let mut panic = match &outcome {
            Some(CleanOutcome { status: CleanStatus::Panicked(p), .. }) => Some(p.clone()),
            _ => None,
        };
        if let Err(p) = self.retention_on_deletable_logs() {
            panic.get_or_insert(p);
        }
        Work { outcome, panic }
    }

    /// Cleans one chosen log and ends its in-progress state (Kafka's `cleanLog`).
    fn clean_log(
        &self,
        cleaner: &mut Cleaner,
        slot: &ThreadSlot,
        ltc: &LogToClean,
        stop: Option<&Stop>,
        pre_clean: PreCleanStats,
    ) -> CleanOutcome {
        let tp = ltc.log.topic_partition().clone();
        let dir = ltc.log.log_dir().to_path_buf();
        let start = ltc.first_dirty_offset;
        let check_done = || {
            if stop.is_some_and(Stop::is_set) {
                return Err(Error::LogCleaningAborted { partition: tp.to_string() });
            }
            self.manager.check_cleaning_aborted(&tp)
        };
        let hook = self.hook.read().clone();
        let result = catch_unwind(AssertUnwindSafe(|| {
            if let Some(h) = hook {
                h(&tp)?;
            }
            cleaner.clean(ltc, &check_done)
        }));
        let (end, status) = match result {
            Ok(Ok((end, stats))) => {
                self.record_stats(cleaner.id(), &ltc.log, start, end, &stats, pre_clean);
                *slot.last_stats.lock() = Some(stats.clone());
                (end, CleanStatus::Cleaned(stats))
            }
            Ok(Err(e)) => (start, self.clean_error(&tp, &dir, e)),
            Err(payload) => {
                let reason = format!("the cleaner panicked while cleaning {tp}: {}", panic_message(payload.as_ref()));
                (start, CleanStatus::Panicked(reason))
            }
        };
        // Marked before it is released, so that no other thread picks it up in between.
        if let CleanStatus::Uncleanable(reason) | CleanStatus::Panicked(reason) = &status {
            log::warn!("unexpected failure cleaning log {tp}: {reason}; marking the partition as uncleanable");
            self.manager.mark_partition_uncleanable(&dir, &tp, reason);
        }
        if let Err(e) = self.manager.done_cleaning(&tp, &dir, end) {
            log::error!("{e}");
        }
        CleanOutcome { topic_partition: tp, first_dirty_offset: start, end_offset: end, status, pre_clean }
    }

    /// Kafka's `cleanLog` error handling.
    fn clean_error(&self, tp: &TopicPartition, dir: &Path, e: Error) -> CleanStatus {
        match e {
            Error::LogCleaningAborted { .. } => CleanStatus::Aborted,
            e @ (Error::KafkaStorage { .. } | Error::LogClosed { .. }) => CleanStatus::Offline(e.to_string()),
            e @ Error::Io { .. } => {
                let reason =
                    format!("failed to clean up log for {tp} in dir {} due to an I/O error: {e}", dir.display());
                self.failure_channel.maybe_add_offline_log_dir(dir, &reason);
                CleanStatus::Offline(reason)
            }
            e => CleanStatus::Uncleanable(e.to_string()),
        }
    }

    /// Logs Kafka's summary of one clean (`recordStats`).
    fn record_stats(&self, id: usize, log: &UnifiedLog, from: i64, to: i64, stats: &CleanerStats, pre: PreCleanStats) {
        let tp = log.topic_partition();
        self.manager.record_clean(tp, log.log_dir(), from, to, stats);
        log::info!("{}", stats.summary(id, &tp.to_string(), from, to));
        if pre.delayed_partitions > 0 {
            log::info!(
                "\tCleanable partitions: {}, Delayed partitions: {}, max delay: {}",
                pre.cleanable_partitions,
                pre.delayed_partitions,
                pre.max_compaction_delay_ms
            );
        }
        if stats.invalid_messages_read > 0 {
            log::warn!("\tFound {} invalid messages during compaction.", stats.invalid_messages_read);
        }
    }

    /// Retention on the idle compacted logs (Kafka's `deletableLogs` + `deleteOldSegments` +
    /// `doneDeleting`). A failure marks the partition uncleanable; a panic is returned after
    /// every partition was released.
    fn retention_on_deletable_logs(&self) -> std::result::Result<Vec<(TopicPartition, RetentionResult)>, String> {
        let deletable = self.manager.deletable_logs();
        let mut out = Vec::new();
        let mut panic = None;
        for (tp, log) in &deletable {
            match catch_unwind(AssertUnwindSafe(|| log.delete_old_segments())) {
                Ok(Ok(result)) => {
                    for w in &result.warnings {
                        log::warn!("{w}");
                    }
                    out.push((tp.clone(), result));
                }
                Ok(Err(e)) => self.retention_error(tp, log, e),
                Err(payload) => {
                    let reason = format!("retention of {tp} panicked: {}", panic_message(payload.as_ref()));
                    self.manager.mark_partition_uncleanable(log.log_dir(), tp, &reason);
                    panic = Some(reason);
                    break;
                }
            }
        }
        let tps: Vec<TopicPartition> = deletable.into_iter().map(|(tp, _)| tp).collect();
        if let Err(e) = self.manager.done_deleting(&tps) {
            log::error!("{e}");
        }
        panic.map_or(Ok(out), Err)
    }

    fn retention_error(&self, tp: &TopicPartition, log: &UnifiedLog, e: Error) {
        match e {
            Error::KafkaStorage { .. } | Error::LogClosed { .. } => {}
            e @ Error::Io { .. } => {
                let reason = format!("retention of {tp} failed: {e}");
                self.failure_channel.maybe_add_offline_log_dir(log.log_dir(), &reason);
            }
            e => {
                let reason = format!("retention of {tp} failed: {e}");
                log::warn!("{reason}; marking the partition as uncleanable");
                self.manager.mark_partition_uncleanable(log.log_dir(), tp, &reason);
            }
        }
    }

    /// The body of `compact_now` once the partition is marked in progress.
    fn compact_on_demand(
        &self,
        tp: &TopicPartition,
        log: &Arc<UnifiedLog>,
        id: usize,
        progress: Option<ProgressSink>,
    ) -> Result<CompactResult> {
        let dir = log.log_dir().to_path_buf();
        let config = self.config.read().clone();
        let hook = self.hook.read().clone();
        let run = || -> Result<CompactResult> {
            if let Some(h) = hook {
                h(tp)?;
            }
            let mut cleaner = self.new_cleaner(id, &config)?;
            cleaner.set_progress(progress);
            let options = CompactOptions { first_dirty_offset: self.manager.checkpoint_of(log), now_ms: None };
            let check_done = || self.manager.check_cleaning_aborted(tp);
            compact_log(&mut cleaner, log, &options, &check_done)
        };
        let result = match catch_unwind(AssertUnwindSafe(run)) {
            Ok(r) => r,
            Err(payload) => {
                let reason = format!("compaction of {tp} panicked: {}", panic_message(payload.as_ref()));
                self.manager.mark_partition_uncleanable(&dir, tp, &reason);
                Err(Error::illegal_state(reason))
            }
        };
        match result {
            Ok(r) => {
                self.manager.done_cleaning(tp, &dir, r.end_offset)?;
                // `compact_log` logged each pass's stats block as it finished; the last clean is
                // the whole of it.
                if !r.passes.is_empty() {
                    self.manager.record_clean(tp, &dir, r.first_dirty_offset, r.end_offset, &r.stats);
                }
                self.manager.retry_uncleanable(Some(tp));
                Ok(r)
            }
            Err(e) => {
                if let Err(e2) = self.manager.finish_cleaning(tp, &dir, None) {
                    log::error!("{e2}");
                }
                if let Error::Io { .. } = &e {
                    self.failure_channel.maybe_add_offline_log_dir(&dir, &format!("compaction of {tp} failed: {e}"));
                }
                Err(e)
            }
        }
    }
}
