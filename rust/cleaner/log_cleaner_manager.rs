//! Which partitions may be cleaned, and where each clean got to (Kafka's `LogCleanerManager`):
//! the per-partition cleaning states, the choice of the filthiest compacted log, the logs the
//! cleaner threads run retention on, the `cleaner-offset-checkpoint` of every log dir, and the
//! partitions a clean failed on ("uncleanable").
//!
//! States (Kafka's `LogCleaningState`): a partition with no entry is `none`; a clean or a
//! retention run by a cleaner thread marks it `in-progress`; `abort_and_pause_cleaning` turns
//! `in-progress` into `aborted` (the clean stops at its next check, and `done_cleaning` makes it
//! `paused(1)`), `none` into `paused(1)` and `paused(n)` into `paused(n+1)`; every
//! `resume_cleaning` undoes one pause.
//!
//! Unlike Kafka, an uncleanable partition keeps the reason it became uncleanable, and is retried
//! once its topic config changes or when asked (`retry_uncleanable`).
//!
//! Lock order: the manager's lock is taken before the `LogManager`'s partition map (the
//! [`LogSource`] is called under it), so the `LogManager` never calls in here while holding its
//! own state lock.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::cleaner_stats::CleanerStats;
use super::last_clean::{read_last_cleans, write_last_cleans, CleanedBy, LastClean};
use super::log_to_clean::{calculate_cleanable_bytes, cleanable_offsets, max_compaction_delay, LogToClean};
use crate::checkpoint::checkpoint_file::{read_checkpoint_or_empty, write_checkpoint};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::file_names::TopicPartition;
use crate::file_names::CLEANER_OFFSET_CHECKPOINT_FILE;
use crate::log::log_dir_failure_channel::LogDirFailureChannel;
use crate::log::unified_log::UnifiedLog;
use crate::util::clock::SharedClock;

/// A partition and its log.
pub type LogEntry = (TopicPartition, Arc<UnifiedLog>);

/// The live partition map the cleaner works on (Kafka hands its `LogCleaner` the `LogManager`'s
/// `currentLogs` map): called whenever the manager needs the current logs.
pub type LogSource = Arc<dyn Fn() -> Vec<LogEntry> + Send + Sync>;

/// A partition's cleaning state; no entry means none. Mirrors Kafka's `LogCleaningState`.
/// A plain value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogCleaningState {
    /// A clean (or a cleaner thread's retention run) is running.
    InProgress,
    /// A clean is running and was asked to stop.
    Aborted,
    /// No clean may start; the count of pauses still to be resumed.
    Paused(u32),
}

impl LogCleaningState {
    /// `none`, `in-progress`, `aborted` or `paused(n)`.
    pub fn name(state: Option<Self>) -> String {
        match state {
            None => "none".into(),
            Some(LogCleaningState::InProgress) => "in-progress".into(),
            Some(LogCleaningState::Aborted) => "aborted".into(),
            Some(LogCleaningState::Paused(n)) => format!("paused({n})"),
        }
    }
}

/// What choosing a log saw. Mirrors Kafka's `PreCleanStats`; plain data, owned by one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PreCleanStats {
    /// The largest `max.compaction.lag.ms` overrun among the candidates (ms).
    pub max_compaction_delay_ms: i64,
    /// Candidates past their `max.compaction.lag.ms`.
    pub delayed_partitions: u32,
    /// Candidates eligible for cleaning.
    pub cleanable_partitions: u32,
}

impl PreCleanStats {
    /// Accounts one candidate's compaction delay.
    pub fn update_max_compaction_delay(&mut self, delay_ms: i64) {
        self.max_compaction_delay_ms = self.max_compaction_delay_ms.max(delay_ms);
        if delay_ms > 0 {
            self.delayed_partitions += 1;
        }
    }
}

/// Why and since when a partition is not cleaned (Kafka keeps only the partition, in
/// `uncleanablePartitions`). Plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct UncleanablePartition {
    /// The error that made it uncleanable.
    pub reason: String,
    /// When (ms).
    pub since_ms: i64,
    /// The topic config then; a different config retries the partition.
    config: Option<Arc<LogConfig>>,
}

#[derive(Default)]
struct State {
    in_progress: HashMap<TopicPartition, LogCleaningState>,
    pause_reasons: HashMap<TopicPartition, Vec<String>>,
    /// The `cleaner-offset-checkpoint` of each live log dir, as last written.
    checkpoints: BTreeMap<PathBuf, HashMap<TopicPartition, i64>>,
    uncleanable: BTreeMap<PathBuf, BTreeMap<TopicPartition, UncleanablePartition>>,
    last_clean: HashMap<TopicPartition, LastClean>,
    dirtiest_ratio: f64,
    time_of_last_run: i64,
}

/// The cleaning states of every partition and the cleaner checkpoints of every log dir.
/// Mirrors Kafka's `LogCleanerManager`.
///
/// Thread-safety: `Send + Sync`; one mutex guards everything (Kafka's single lock), and a
/// condition variable wakes the callers waiting for a clean to stop or finish.
pub struct LogCleanerManager {
    logs: LogSource,
    failure_channel: Arc<LogDirFailureChannel>,
    clock: SharedClock,
    state: Mutex<State>,
    changed: Condvar,
}

impl std::fmt::Debug for LogCleanerManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("LogCleanerManager")
            .field("in_progress", &state.in_progress)
            .field("dirs", &state.checkpoints.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl LogCleanerManager {
    /// A manager over the logs `logs` returns, reading the `cleaner-offset-checkpoint` of each
    /// of `log_dirs` (a missing file is empty; an unreadable one is reported and read as empty).
    pub fn new(
        log_dirs: &[PathBuf],
        logs: LogSource,
        failure_channel: Arc<LogDirFailureChannel>,
        clock: SharedClock,
    ) -> Self {
        let checkpoints =
            log_dirs.iter().map(|d| (d.clone(), read_checkpoint_or_empty(d, CLEANER_OFFSET_CHECKPOINT_FILE))).collect();
        let mut last_clean = HashMap::new();
        for dir in log_dirs {
            match read_last_cleans(dir) {
                Ok(cleans) => last_clean.extend(cleans),
                Err(e) => {
                    log::warn!("{e}: the last cleans it records are ignored and it is replaced at the next clean");
                }
            }
        }
        let state = State { checkpoints, last_clean, time_of_last_run: clock.milliseconds(), ..State::default() };
        LogCleanerManager { logs, failure_channel, clock, state: Mutex::new(state), changed: Condvar::new() }
    }

    /// The current logs.
    pub fn logs(&self) -> Vec<LogEntry> {
        (self.logs)()
    }

    /// The clock.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// The checkpointed first dirty offset of every partition, over all live log dirs (Kafka's
    /// `allCleanerCheckpoints`).
    pub fn all_cleaner_checkpoints(&self) -> HashMap<TopicPartition, i64> {
        let state = self.state.lock();
        state.checkpoints.values().flat_map(|m| m.iter().map(|(tp, o)| (tp.clone(), *o))).collect()
    }

    /// The cleaning state of `tp` (`None`: not being cleaned, not paused).
    pub fn cleaning_state(&self, tp: &TopicPartition) -> Option<LogCleaningState> {
        self.state.lock().in_progress.get(tp).copied()
    }

    /// Sets the cleaning state of `tp` (tests).
    pub fn set_cleaning_state(&self, tp: &TopicPartition, state: Option<LogCleaningState>) {
        let mut s = self.state.lock();
        match state {
            Some(st) => s.in_progress.insert(tp.clone(), st),
            None => s.in_progress.remove(tp),
        };
        self.changed.notify_all();
    }

    /// Blocks until `tp` is in `expected`, woken by each change of the cleaning states; false
    /// if `timeout` passes first (a hang guard for callers such as tests that wait for a
    /// cleaner thread to reach a state).
    pub fn wait_for_cleaning_state(&self, tp: &TopicPartition, expected: LogCleaningState, timeout: Duration) -> bool {
        let mut state = self.state.lock();
        !self.changed.wait_while_for(&mut state, |s| s.in_progress.get(tp) != Some(&expected), timeout).timed_out()
    }

    /// Blocks until `cond` holds over [`LogCleanerManager::all_cleaner_checkpoints`], woken by
    /// each checkpoint update; false if `timeout` passes first (a hang guard).
    pub fn wait_for_checkpoints(
        &self,
        timeout: Duration,
        cond: impl Fn(&HashMap<TopicPartition, i64>) -> bool,
    ) -> bool {
        let all = |s: &State| -> HashMap<TopicPartition, i64> {
            s.checkpoints.values().flat_map(|m| m.iter().map(|(tp, o)| (tp.clone(), *o))).collect()
        };
        let mut state = self.state.lock();
        !self.changed.wait_while_for(&mut state, |s| !cond(&all(s)), timeout).timed_out()
    }

    /// Whether `tp` is in `expected` (Kafka's `isCleaningInState`; `None` never matches).
    pub fn is_cleaning_in_state(&self, tp: &TopicPartition, expected: LogCleaningState) -> bool {
        self.state.lock().in_progress.get(tp) == Some(&expected)
    }

    /// Chooses the log to clean and marks it in progress (Kafka's `grabFilthiestCompactedLog`):
    /// among compacted logs that are neither being cleaned, paused nor uncleanable, and not
    /// empty, the one with the highest dirty ratio that is above its `min.cleanable.dirty.ratio`
    /// (strictly) or past its `max.compaction.lag.ms` with bytes to clean. A checkpoint outside
    /// its log is reset to the log start and rewritten even if that log is not chosen.
    pub fn grab_filthiest_compacted_log(&self, pre_clean: &mut PreCleanStats) -> Option<LogToClean> {
        let mut state = self.state.lock();
        let now = self.clock.milliseconds();
        state.time_of_last_run = now;
        let logs = self.logs();
        let mut dirty = Vec::new();
        for (tp, log) in &logs {
            if !log.config().compact()
                || state.in_progress.contains_key(tp)
                || Self::is_uncleanable_locked(&mut state, log, tp)
            {
                continue;
            }
            if let Some(ltc) = self.candidate(&mut state, tp, log, now, pre_clean) {
                if ltc.total_bytes > 0 {
                    dirty.push(ltc);
                }
            }
        }
        state.dirtiest_ratio = dirty.iter().map(|l| l.cleanable_ratio).fold(0.0, f64::max);
        let cleanable: Vec<LogToClean> = dirty
            .into_iter()
            .filter(|l| {
                (l.need_compaction_now && l.cleanable_bytes > 0)
                    || l.cleanable_ratio > l.log.config().min_cleanable_dirty_ratio
            })
            .collect();
        pre_clean.cleanable_partitions = cleanable.len() as u32;
        // The first of equal ratios wins, as Java's `Stream.max`.
        let filthiest =
            cleanable.into_iter().reduce(|a, b| if b.cleanable_ratio > a.cleanable_ratio { b } else { a })?;
        state.in_progress.insert(filthiest.log.topic_partition().clone(), LogCleaningState::InProgress);
        Some(filthiest)
    }

    /// The byte accounting of one candidate; a failure marks it uncleanable (Kafka's
    /// `LogCleaningException` from the stats) unless its dir is offline.
    fn candidate(
        &self,
        state: &mut State,
        tp: &TopicPartition,
        log: &Arc<UnifiedLog>,
        now: i64,
        pre_clean: &mut PreCleanStats,
    ) -> Option<LogToClean> {
        let result = (|| {
            let checkpoint = self.checkpoint_after_truncation(state, tp, log);
            let offsets = cleanable_offsets(log, checkpoint, now)?;
            if offsets.force_update_checkpoint {
                self.update_checkpoints_locked(state, log.log_dir(), Some((tp, offsets.first_dirty_offset)), None);
            }
            let delay = max_compaction_delay(log, offsets.first_dirty_offset, now)?;
            pre_clean.update_max_compaction_delay(delay);
            Ok(LogToClean::new(
                log.clone(),
                offsets.first_dirty_offset,
                offsets.first_uncleanable_dirty_offset,
                delay > 0,
            ))
        })();
        match result {
            Ok(ltc) => Some(ltc),
            Err(e @ (Error::KafkaStorage { .. } | Error::LogClosed { .. })) => {
                log::debug!("not cleaning {tp}: {e}");
                None
            }
            Err(e) => {
                let reason = format!("failed to calculate log cleaning stats for partition {tp}: {e}");
                log::warn!("{reason}; marking it uncleanable");
                self.mark_uncleanable_locked(state, log, reason);
                None
            }
        }
    }

    /// The partition's checkpoint, first lowered to the lowest offset its log was truncated to
    /// since the last look (Kafka's `maybeTruncateCheckpoint` after a truncation).
    fn checkpoint_after_truncation(&self, state: &mut State, tp: &TopicPartition, log: &UnifiedLog) -> Option<i64> {
        if let Some(offset) = log.take_truncation() {
            self.maybe_truncate_checkpoint_locked(state, log.log_dir(), tp, offset);
        }
        state.checkpoints.get(log.log_dir()).and_then(|m| m.get(tp)).copied()
    }

    /// The checkpoint of `log`'s partition after applying any truncation of the log.
    pub fn checkpoint_of(&self, log: &UnifiedLog) -> Option<i64> {
        let mut state = self.state.lock();
        self.checkpoint_after_truncation(&mut state, log.topic_partition(), log)
    }

    /// Pauses every non-compacted partition that nothing else holds and returns them, for a
    /// retention run (Kafka's `pauseCleaningForNonCompactedPartitions`); resume them after.
    pub fn pause_cleaning_for_non_compacted_partitions(&self) -> Vec<LogEntry> {
        let mut state = self.state.lock();
        let logs: Vec<LogEntry> = self
            .logs()
            .into_iter()
            .filter(|(tp, log)| !log.config().compact() && !state.in_progress.contains_key(tp))
            .collect();
        for (tp, _) in &logs {
            state.in_progress.insert(tp.clone(), LogCleaningState::Paused(1));
            state.pause_reasons.insert(tp.clone(), vec!["retention run".into()]);
        }
        logs
    }

    /// The compacted logs a cleaner thread runs retention on, marked in progress meanwhile
    /// (Kafka's `deletableLogs`): compacted (with or without `delete`), idle, not uncleanable.
    pub fn deletable_logs(&self) -> Vec<LogEntry> {
        let mut state = self.state.lock();
        let mut out = Vec::new();
        for (tp, log) in self.logs() {
            if log.config().compact()
                && !state.in_progress.contains_key(&tp)
                && !Self::is_uncleanable_locked(&mut state, &log, &tp)
            {
                state.in_progress.insert(tp.clone(), LogCleaningState::InProgress);
                out.push((tp, log));
            }
        }
        out
    }

    /// Aborts a running clean of `tp` and waits until it stopped; does not pause it (Kafka's
    /// `abortCleaning`: abort and pause, then resume).
    pub fn abort_cleaning(&self, tp: &TopicPartition) {
        let mut state = self.state.lock();
        self.abort_and_pause_locked(&mut state, tp, "abort_cleaning");
        if let Err(e) = Self::resume_locked(&mut state, tp) {
            log::error!("{e}");
        }
        self.changed.notify_all();
    }

    /// Aborts a running clean of `tp`, waits until it stopped, and pauses the partition (Kafka's
    /// `abortAndPauseCleaning`); each call needs its own `resume_cleaning`.
    pub fn abort_and_pause_cleaning(&self, tp: &TopicPartition) {
        self.abort_and_pause_cleaning_for(tp, "abort_and_pause_cleaning");
    }

    /// [`LogCleanerManager::abort_and_pause_cleaning`], noting `reason` as the pause's cause.
    pub fn abort_and_pause_cleaning_for(&self, tp: &TopicPartition, reason: &str) {
        let mut state = self.state.lock();
        self.abort_and_pause_locked(&mut state, tp, reason);
    }

    fn abort_and_pause_locked(&self, state: &mut MutexGuard<'_, State>, tp: &TopicPartition, reason: &str) {
        // Kafka refuses an abort while another one waits; here the second waits as well.
        while state.in_progress.get(tp) == Some(&LogCleaningState::Aborted) {
            self.changed.wait_for(state, Duration::from_millis(100));
        }
        match state.in_progress.get(tp).copied() {
            None => {
                state.in_progress.insert(tp.clone(), LogCleaningState::Paused(1));
            }
            Some(LogCleaningState::InProgress) => {
                state.in_progress.insert(tp.clone(), LogCleaningState::Aborted);
                self.changed.notify_all();
            }
            Some(LogCleaningState::Paused(n)) => {
                state.in_progress.insert(tp.clone(), LogCleaningState::Paused(n + 1));
            }
            Some(LogCleaningState::Aborted) => unreachable!("waited above"),
        }
        while !matches!(state.in_progress.get(tp), Some(LogCleaningState::Paused(_))) {
            self.changed.wait_for(state, Duration::from_millis(100));
        }
        state.pause_reasons.entry(tp.clone()).or_default().push(reason.to_string());
        log::info!("the cleaning for partition {tp} is aborted and paused ({reason})");
    }

    /// Undoes one pause of each of `tps` (Kafka's `resumeCleaning`). A partition that is not
    /// paused is an error naming it and its state; the others are still resumed.
    pub fn resume_cleaning(&self, tps: &[TopicPartition]) -> Result<()> {
        let mut state = self.state.lock();
        let mut first_error = None;
        for tp in tps {
            if let Err(e) = Self::resume_locked(&mut state, tp) {
                first_error.get_or_insert(e);
            }
        }
        self.changed.notify_all();
        first_error.map_or(Ok(()), Err)
    }

    fn resume_locked(state: &mut State, tp: &TopicPartition) -> Result<()> {
        match state.in_progress.get(tp).copied() {
            Some(LogCleaningState::Paused(1)) => {
                state.in_progress.remove(tp);
                state.pause_reasons.remove(tp);
            }
            Some(LogCleaningState::Paused(n)) => {
                state.in_progress.insert(tp.clone(), LogCleaningState::Paused(n - 1));
                if let Some(r) = state.pause_reasons.get_mut(tp) {
                    r.pop();
                }
            }
            other => {
                return Err(Error::illegal_state(format!(
                    "compaction for partition {tp} cannot be resumed since it is in state {}",
                    LogCleaningState::name(other)
                )))
            }
        }
        Ok(())
    }

    /// Why `tp` is paused (one entry per pause still to resume).
    pub fn pause_reasons(&self, tp: &TopicPartition) -> Vec<String> {
        self.state.lock().pause_reasons.get(tp).cloned().unwrap_or_default()
    }

    /// `Err(LogCleaningAborted)` when someone asked the clean of `tp` to stop (Kafka's
    /// `checkCleaningAborted`).
    pub fn check_cleaning_aborted(&self, tp: &TopicPartition) -> Result<()> {
        if self.is_cleaning_in_state(tp, LogCleaningState::Aborted) {
            return Err(Error::LogCleaningAborted { partition: tp.to_string() });
        }
        Ok(())
    }

    /// Marks `tp` in progress for an on-demand clean: waits while a cleaner thread holds it,
    /// fails when it is paused (naming why).
    pub fn begin_on_demand(&self, tp: &TopicPartition) -> Result<()> {
        let mut state = self.state.lock();
        loop {
            match state.in_progress.get(tp).copied() {
                None => {
                    state.in_progress.insert(tp.clone(), LogCleaningState::InProgress);
                    return Ok(());
                }
                Some(LogCleaningState::Paused(n)) => {
                    let why = state.pause_reasons.get(tp).map(|r| r.join(", ")).unwrap_or_default();
                    return Err(Error::illegal_state(format!(
                        "cannot compact {tp} now: its cleaning is paused({n}) by {why}; it resumes when that ends"
                    )));
                }
                Some(_) => {
                    self.changed.wait_for(&mut state, Duration::from_millis(100));
                }
            }
        }
    }

    /// Writes the dir's `cleaner-offset-checkpoint` with `add` set and `remove` dropped, keeping
    /// only partitions that still have a log (Kafka's `updateCheckpoints`). A dir that failed is
    /// skipped; a failed write reports the dir to the failure channel.
    pub fn update_checkpoints(&self, dir: &Path, add: Option<(&TopicPartition, i64)>, remove: Option<&TopicPartition>) {
        let mut state = self.state.lock();
        self.update_checkpoints_locked(&mut state, dir, add, remove);
    }

    fn update_checkpoints_locked(
        &self,
        state: &mut State,
        dir: &Path,
        add: Option<(&TopicPartition, i64)>,
        remove: Option<&TopicPartition>,
    ) {
        let Some(current) = state.checkpoints.get(dir) else { return };
        let live: std::collections::HashSet<TopicPartition> = self.logs().into_iter().map(|(tp, _)| tp).collect();
        let mut updated: HashMap<TopicPartition, i64> =
            current.iter().filter(|(tp, _)| live.contains(*tp)).map(|(tp, o)| (tp.clone(), *o)).collect();
        if let Some(tp) = remove {
            updated.remove(tp);
        }
        if let Some((tp, offset)) = add {
            updated.insert(tp.clone(), offset);
        }
        let entries: Vec<(TopicPartition, i64)> = updated.iter().map(|(tp, o)| (tp.clone(), *o)).collect();
        match write_checkpoint(dir, CLEANER_OFFSET_CHECKPOINT_FILE, &entries) {
            Ok(()) => {
                state.checkpoints.insert(dir.to_path_buf(), updated);
                self.changed.notify_all();
            }
            Err(e) => {
                let reason = format!("failed to write {CLEANER_OFFSET_CHECKPOINT_FILE} in {}: {e}", dir.display());
                log::error!("{reason}");
                self.failure_channel.maybe_add_offline_log_dir(dir, &reason);
            }
        }
    }

    /// Moves `tp`'s checkpoint and uncleanable mark from `source` to `dest` (Kafka's
    /// `alterCheckpointDir`, when a future replica replaces the current one).
    pub fn alter_checkpoint_dir(&self, tp: &TopicPartition, source: &Path, dest: &Path) {
        let mut state = self.state.lock();
        if let Some(offset) = state.checkpoints.get(source).and_then(|m| m.get(tp)).copied() {
            self.update_checkpoints_locked(&mut state, source, None, Some(tp));
            self.update_checkpoints_locked(&mut state, dest, Some((tp, offset)), None);
        }
        let moved = state.uncleanable.get_mut(source).and_then(|m| m.remove(tp));
        if let Some(u) = moved {
            state.uncleanable.entry(dest.to_path_buf()).or_default().insert(tp.clone(), u);
        }
    }

    /// Stops using the checkpoint of a failed log dir (Kafka's `handleLogDirFailure`).
    pub fn handle_log_dir_failure(&self, dir: &Path) {
        log::warn!("stopping cleaning logs in dir {}", dir.display());
        self.state.lock().checkpoints.remove(dir);
    }

    /// Lowers `tp`'s checkpoint in `dir` to `offset` if it is above (Kafka's
    /// `maybeTruncateCheckpoint`, after a truncation of the log).
    pub fn maybe_truncate_checkpoint(&self, dir: &Path, tp: &TopicPartition, offset: i64) {
        let mut state = self.state.lock();
        self.maybe_truncate_checkpoint_locked(&mut state, dir, tp, offset);
    }

    fn maybe_truncate_checkpoint_locked(&self, state: &mut State, dir: &Path, tp: &TopicPartition, offset: i64) {
        let current = state.checkpoints.get(dir).and_then(|m| m.get(tp)).copied();
        if current.is_some_and(|c| c > offset) {
            self.update_checkpoints_locked(state, dir, Some((tp, offset)), None);
        }
    }

    /// Ends a clean of `tp` (Kafka's `doneCleaning`): in progress -> the checkpoint becomes
    /// `end_offset` and the partition is free; aborted -> paused(1) and the aborter wakes.
    pub fn done_cleaning(&self, tp: &TopicPartition, dir: &Path, end_offset: i64) -> Result<()> {
        self.finish_cleaning(tp, dir, Some(end_offset))
    }

    /// [`LogCleanerManager::done_cleaning`] that leaves the checkpoint alone when `end_offset`
    /// is `None` (a clean that failed before it had a range).
    pub fn finish_cleaning(&self, tp: &TopicPartition, dir: &Path, end_offset: Option<i64>) -> Result<()> {
        let mut state = self.state.lock();
        let result = match state.in_progress.get(tp).copied() {
            Some(LogCleaningState::InProgress) => {
                if let Some(end) = end_offset {
                    self.update_checkpoints_locked(&mut state, dir, Some((tp, end)), None);
                }
                state.in_progress.remove(tp);
                Ok(())
            }
            Some(LogCleaningState::Aborted) => {
                state.in_progress.insert(tp.clone(), LogCleaningState::Paused(1));
                Ok(())
            }
            other => Err(Error::illegal_state(format!(
                "in-progress partition {tp} cannot be in state {}",
                LogCleaningState::name(other)
            ))),
        };
        self.changed.notify_all();
        result
    }

    /// Ends a cleaner thread's retention run on `tps` (Kafka's `doneDeleting`).
    pub fn done_deleting(&self, tps: &[TopicPartition]) -> Result<()> {
        let mut state = self.state.lock();
        let mut first_error = None;
        for tp in tps {
            match state.in_progress.get(tp).copied() {
                Some(LogCleaningState::InProgress) => {
                    state.in_progress.remove(tp);
                }
                Some(LogCleaningState::Aborted) => {
                    state.in_progress.insert(tp.clone(), LogCleaningState::Paused(1));
                }
                other => {
                    first_error.get_or_insert_with(|| {
                        Error::illegal_state(format!(
                            "in-progress partition {tp} cannot be in state {}",
                            LogCleaningState::name(other)
                        ))
                    });
                }
            }
        }
        self.changed.notify_all();
        first_error.map_or(Ok(()), Err)
    }

    /// Notes the last clean of `tp` for the status, and keeps it in `dir`'s
    /// `kafkalog-last-clean` with the last cleans of the dir's other partitions (a failed write
    /// is a warning: the file is informational, the clean and its checkpoint stand).
    pub fn record_clean(
        &self,
        tp: &TopicPartition,
        dir: &Path,
        first_dirty_offset: i64,
        end_offset: i64,
        stats: &CleanerStats,
    ) {
        let time_ms = self.clock.milliseconds();
        let last =
            LastClean { time_ms, first_dirty_offset, end_offset, by: CleanedBy::LogCleaner, stats: stats.clone() };
        let mut state = self.state.lock();
        state.last_clean.insert(tp.clone(), last);
        let in_dir: BTreeMap<TopicPartition, LastClean> = self
            .logs()
            .into_iter()
            .filter(|(_, log)| log.log_dir() == dir)
            .filter_map(|(tp, _)| state.last_clean.get(&tp).map(|c| (tp, c.clone())))
            .collect();
        if let Err(e) = write_last_cleans(dir, &in_dir) {
            log::warn!("the last clean of {tp} is not kept on disk: {e}");
        }
    }

    /// The last clean of `tp`.
    pub fn last_clean(&self, tp: &TopicPartition) -> Option<LastClean> {
        self.state.lock().last_clean.get(tp).cloned()
    }

    /// Marks `tp` of `log_dir` uncleanable for `reason` (Kafka's `markPartitionUncleanable`).
    pub fn mark_partition_uncleanable(&self, log_dir: &Path, tp: &TopicPartition, reason: &str) {
        let config = self.logs().into_iter().find(|(t, _)| t == tp).map(|(_, l)| l.config());
        let mut state = self.state.lock();
        let entry = UncleanablePartition { reason: reason.to_string(), since_ms: self.clock.milliseconds(), config };
        state.uncleanable.entry(log_dir.to_path_buf()).or_default().insert(tp.clone(), entry);
    }

    fn mark_uncleanable_locked(&self, state: &mut State, log: &UnifiedLog, reason: String) {
        let entry = UncleanablePartition { reason, since_ms: self.clock.milliseconds(), config: Some(log.config()) };
        state.uncleanable.entry(log.log_dir().to_path_buf()).or_default().insert(log.topic_partition().clone(), entry);
    }

    /// Whether `tp` is marked uncleanable in its log's dir. A mark made under another topic
    /// config is dropped here: the partition is retried.
    fn is_uncleanable_locked(state: &mut State, log: &UnifiedLog, tp: &TopicPartition) -> bool {
        let Some(marks) = state.uncleanable.get_mut(log.log_dir()) else { return false };
        let Some(mark) = marks.get(tp) else { return false };
        if mark.config.as_ref().is_some_and(|c| **c != *log.config()) {
            log::info!(
                "retrying uncleanable partition {tp} after a topic config change (it failed with: {})",
                mark.reason
            );
            marks.remove(tp);
            return false;
        }
        true
    }

    /// The uncleanable partitions of `log_dir` and why.
    pub fn uncleanable_partitions(&self, log_dir: &Path) -> BTreeMap<TopicPartition, UncleanablePartition> {
        self.state.lock().uncleanable.get(log_dir).cloned().unwrap_or_default()
    }

    /// Why `tp` is uncleanable, if it is (in any dir).
    pub fn uncleanable_reason(&self, tp: &TopicPartition) -> Option<UncleanablePartition> {
        self.state.lock().uncleanable.values().find_map(|m| m.get(tp).cloned())
    }

    /// Clears the uncleanable mark of `tp`, or of every partition when `None`; returns the
    /// partitions that will be retried.
    pub fn retry_uncleanable(&self, tp: Option<&TopicPartition>) -> Vec<TopicPartition> {
        self.retry_uncleanable_where(&|t| tp.is_none_or(|want| want == t))
    }

    /// Clears the uncleanable mark of every partition `select` accepts; returns them.
    pub fn retry_uncleanable_where(&self, select: &dyn Fn(&TopicPartition) -> bool) -> Vec<TopicPartition> {
        let mut state = self.state.lock();
        let mut retried = Vec::new();
        for marks in state.uncleanable.values_mut() {
            marks.retain(|t, _| {
                let hit = select(t);
                if hit {
                    retried.push(t.clone());
                }
                !hit
            });
        }
        state.uncleanable.retain(|_, m| !m.is_empty());
        for t in &retried {
            log::info!("partition {t} is no longer marked uncleanable and will be retried");
        }
        retried
    }

    /// Forgets uncleanable marks of partitions that no longer have a log (Kafka's
    /// `maintainUncleanablePartitions`).
    pub fn maintain_uncleanable_partitions(&self) {
        let mut state = self.state.lock();
        let live: std::collections::HashSet<TopicPartition> = self.logs().into_iter().map(|(tp, _)| tp).collect();
        for marks in state.uncleanable.values_mut() {
            marks.retain(|tp, _| live.contains(tp));
        }
        state.uncleanable.retain(|_, m| !m.is_empty());
    }

    /// Drops everything known about a deleted partition: state, pause reasons, uncleanable
    /// mark, last clean, and its line in `dir`'s checkpoint. Call after pausing it.
    pub fn forget_partition(&self, tp: &TopicPartition, dir: &Path) {
        let mut state = self.state.lock();
        state.in_progress.remove(tp);
        state.pause_reasons.remove(tp);
        state.last_clean.remove(tp);
        for marks in state.uncleanable.values_mut() {
            marks.remove(tp);
        }
        state.uncleanable.retain(|_, m| !m.is_empty());
        if state.checkpoints.get(dir).is_some_and(|m| m.contains_key(tp)) {
            self.update_checkpoints_locked(&mut state, dir, None, Some(tp));
        }
        self.changed.notify_all();
    }

    /// `max-dirty-percent`: the dirty ratio of the dirtiest log at the last choice, in percent.
    pub fn max_dirty_percent(&self) -> i32 {
        (100.0 * self.state.lock().dirtiest_ratio) as i32
    }

    /// `time-since-last-run-ms`: time since a cleaner last looked for a log to clean.
    pub fn time_since_last_run_ms(&self) -> i64 {
        self.clock.milliseconds() - self.state.lock().time_of_last_run
    }

    /// `uncleanable-partitions-count` and `uncleanable-bytes` of each live log dir: the
    /// uncleanable partitions, and the bytes they have waiting to be cleaned.
    pub fn uncleanable_metrics(&self) -> BTreeMap<PathBuf, (usize, u64)> {
        let mut state = self.state.lock();
        let now = self.clock.milliseconds();
        let logs: HashMap<TopicPartition, Arc<UnifiedLog>> = self.logs().into_iter().collect();
        let dirs: Vec<PathBuf> = state.checkpoints.keys().cloned().collect();
        let mut out = BTreeMap::new();
        for dir in dirs {
            let marked: Vec<TopicPartition> =
                state.uncleanable.get(&dir).map(|m| m.keys().cloned().collect()).unwrap_or_default();
            let mut bytes = 0u64;
            for tp in &marked {
                let Some(log) = logs.get(tp) else { continue };
                let checkpoint = self.checkpoint_after_truncation(&mut state, tp, log);
                if let Ok(o) = cleanable_offsets(log, checkpoint, now) {
                    bytes += calculate_cleanable_bytes(log, o.first_dirty_offset, o.first_uncleanable_dirty_offset).1;
                }
            }
            out.insert(dir, (marked.len(), bytes));
        }
        out
    }

    /// The live log dirs (those whose checkpoint is in use).
    pub fn log_dirs(&self) -> Vec<PathBuf> {
        self.state.lock().checkpoints.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names() {
        assert_eq!(LogCleaningState::name(None), "none");
        assert_eq!(LogCleaningState::name(Some(LogCleaningState::InProgress)), "in-progress");
        assert_eq!(LogCleaningState::name(Some(LogCleaningState::Aborted)), "aborted");
        assert_eq!(LogCleaningState::name(Some(LogCleaningState::Paused(3))), "paused(3)");
    }

    #[test]
    fn pre_clean_stats_count_delayed_partitions() {
        let mut s = PreCleanStats::default();
        s.update_max_compaction_delay(0);
        s.update_max_compaction_delay(50);
        s.update_max_compaction_delay(20);
        assert_eq!((s.max_compaction_delay_ms, s.delayed_partitions), (50, 2));
    }
}
